"""What ``posenc bench`` times: every kernel beside what users write instead.

A baseline is the fastest formulation a NumPy or PyTorch user would write
for the same result, never one that rebuilds a cached table inside the timed
call:

- sinusoidal tables: the NumPy / PyTorch tutorial formula (float32 angles);
- add_sinusoidal: ``np.add(x, pe, out=x)`` / ``x.add_(pe)`` with ``pe`` cached;
- apply_rope: NumPy in place with cached cos/sin tables; PyTorch with cached
  cos/sin (``rotate_half``, NeoX) or Meta's complex multiply with a cached
  ``freqs_cis`` (GPT-J pairs); "HF" is Hugging Face's code as a model runs it
  (cos/sin from ``inv_freq`` on every forward, then ``rotate_half`` /
  ``rotate_every_two``); one case is in Hugging Face's own layout, ``[batch,
  heads, seq, head_dim]`` (``seq_axis=-2``);
- apply_rope_nd (FLUX): NumPy in place with cached cos/sin tables; "torch" is
  diffusers' ``apply_rotary_emb(use_real=True, use_real_unbind_dim=-1)`` with
  the ``FluxPosEmbed`` tables cached, "HF" the same with the tables rebuilt
  (once per forward, as the pipeline does);
- add_alibi: BLOOM's cached ``[heads, 1, k]`` broadcast (``slope·j``, which
  softmax treats as ``slope·(j − i)``); on Swin-sized windows "HF" is Swin's
  gather of its bias table and the add;
- add_t5_bias: a cached ``[heads, q, k]`` bias added in place; "HF" is
  ``T5Attention.compute_bias`` on every call, then the add;
- learned tables: the slice ``table[p0:p0 + seq]`` added in place, "HF" the
  gather of ``nn.Embedding``; ``np.add.at`` / ``index_add_`` for the gradient.

Families are functions ``(quick, dtype, torch) -> [Case, ...]`` in FAMILIES.
"""

from __future__ import annotations

import importlib
import math
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

import numpy as np

from .timing import Timed

# Baseline columns, in print order.
BASELINES = ("numpy", "torch", "HF")


class Case(NamedTuple):
    """One timed operation: posenc, the memory ceiling it is held to, and the baselines."""

    kernel: str  # the row of the ISA table ("apply_rope GPT-J")
    shape: str  # "[1, 2048, 32, 128] in place"
    dtype: str
    ceiling: str  # "fill", "rmw", "alloc" or "read+alloc" (see timing.ceiling)
    # fill/rmw: the very buffer posenc writes; alloc: the bytes of the array posenc returns;
    # read+alloc: (the array posenc reads, those bytes)
    target: Any
    nbytes: int  # bytes posenc moves (read + written), for GB/s
    posenc: Timed
    baselines: Dict[str, Timed]  # keys from BASELINES

    @property
    def name(self) -> str:
        return f"{self.kernel} {self.shape}"

    def reset(self) -> Optional[Timed]:
        """For in-place cases: restores the operand to its first values (run, untimed, before each timed call)."""
        if self.ceiling != "rmw":
            return None
        pristine = self.target.copy()
        return lambda: np.copyto(self.target, pristine)


def dtype_of(name: str) -> np.dtype:
    """float32, float64, float16, or bfloat16 (ml_dtypes)."""
    if name == "bfloat16":
        import ml_dtypes

        bf16: np.dtype = np.dtype(ml_dtypes.bfloat16)
        return bf16
    return np.dtype(name)


def _random(shape: Any, dtype: np.dtype, seed: int = 0) -> np.ndarray:
    a: np.ndarray = np.random.default_rng(seed).standard_normal(shape, dtype=np.float32).astype(dtype)
    return a


def _numpy_ok(dtype: np.dtype) -> bool:
    """NumPy computes in float32, float64 and float16 itself; bfloat16 arithmetic (ml_dtypes) is no speed path."""
    return dtype in (np.float32, np.float64, np.float16)


class _Torch:
    """NumPy arrays as PyTorch tensors sharing their memory (bfloat16 included)."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch

    def __call__(self, a: np.ndarray) -> Any:
        if a.dtype.itemsize == 2 and a.dtype != np.float16:  # ml_dtypes.bfloat16: same bits
            return self.torch.from_numpy(a.view(np.int16)).view(self.torch.bfloat16)
        return self.torch.from_numpy(a)


def _sized(quick: bool, full: Any, small: Any) -> Any:
    return small if quick else full


# ---------------------------------------------------------------- sinusoidal

def sinusoidal(quick: bool, dtype: np.dtype, torch: Any) -> List[Case]:
    import posenc

    n, dim = _sized(quick, (8192, 1024), (2048, 512))
    batch, seq = _sized(quick, (4, 2048), (4, 512))
    table = np.empty((n, dim), dtype)
    x = _random((batch, seq, dim), dtype)
    pe = posenc.sinusoidal(seq, dim, dtype=dtype)  # what a user caches once
    table_base: Dict[str, Timed] = {}
    add_base: Dict[str, Timed] = {}

    def numpy_table() -> object:  # the tutorial formula, float32 angles, written into the table
        pos = np.arange(n, dtype=np.float32)[:, None]
        div = np.exp(np.arange(0, dim, 2, dtype=np.float32) * np.float32(-math.log(10000.0) / dim))
        table[:, 0::2] = np.sin(pos * div)
        table[:, 1::2] = np.cos(pos * div)
        return table

    if _numpy_ok(dtype):
        table_base["numpy"] = numpy_table
        add_base["numpy"] = lambda: np.add(x, pe, out=x)
    if torch is not None:
        t = _Torch(torch)
        table_t, x_t, pe_t = t(table), t(x), t(pe)

        def torch_table() -> object:
            pos = torch.arange(n, dtype=torch.float32)[:, None]
            div = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
            table_t[:, 0::2] = torch.sin(pos * div)
            table_t[:, 1::2] = torch.cos(pos * div)
            return table_t

        table_base["torch"] = torch_table
        add_base["torch"] = lambda: x_t.add_(pe_t)
    name = dtype.name
    return [
        Case("sinusoidal", f"[{n}, {dim}] out=", name, "fill", table, table.nbytes,
             lambda: posenc.sinusoidal(n, dim, dtype=dtype, out=table), table_base),
        Case("add_sinusoidal", f"{list(x.shape)} in place", name, "rmw", x, 2 * x.nbytes,
             lambda: posenc.add_sinusoidal(x, out=x), add_base),
    ]


# ---------------------------------------------------------------- rotary

def _numpy_rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, interleaved: bool) -> Timed:
    """In-place rotation with cached cos/sin ``[seq, 1, half]`` and two preallocated temporaries."""
    half = cos.shape[-1]
    u, v = (x[..., 0::2], x[..., 1::2]) if interleaved else (x[..., :half], x[..., half:])
    us, vs = np.empty(u.shape, x.dtype), np.empty(u.shape, x.dtype)

    def run() -> object:
        np.multiply(u, sin, out=us)
        np.multiply(v, sin, out=vs)
        np.multiply(u, cos, out=u)
        np.subtract(u, vs, out=u)
        np.multiply(v, cos, out=v)
        np.add(v, us, out=v)
        return x

    return run


def _torch_rope(torch: Any, interleaved: bool, cos: Any, sin: Any) -> Callable[[Any], Any]:
    """``x·cos + turn(x)·sin`` with cos/sin of head_dim columns broadcast over heads (Hugging Face's form)."""

    def run(x: Any) -> Any:
        if interleaved:  # GPT-J's rotate_every_two
            turned = torch.stack((-x[..., 1::2], x[..., 0::2]), -1).flatten(-2)
        else:  # rotate_half
            half = x.shape[-1] // 2
            turned = torch.cat((-x[..., half:], x[..., :half]), -1)
        return x * cos + turned * sin

    return run


def _rope_case(kernel: str, x: np.ndarray, interleaved: bool, rotary_dim: Optional[int], torch: Any,
               seq_axis: int = -3) -> Case:
    """In-place rotation of x [1, seq, heads, head_dim] (seq_axis=-3) or [1, heads, seq, head_dim] (-2; Hugging
    Face's q and k) in its first rotary_dim features, beside the baselines."""
    import posenc

    seq, rd = x.shape[seq_axis], rotary_dim or x.shape[-1]

    def per_row(a: Any) -> Any:  # [seq, n] to broadcast against x's [..., n]
        return a[:, None, :] if seq_axis == -3 else a

    inv64 = posenc.rope_inv_freq(rd)[0]
    angles = np.arange(seq)[:, None] * inv64
    cos = per_row(np.cos(angles)).astype(x.dtype)  # cached once by a user
    sin = per_row(np.sin(angles)).astype(x.dtype)
    base: Dict[str, Timed] = {}
    if _numpy_ok(x.dtype):
        base["numpy"] = _numpy_rope(x[..., :rd], cos, sin, interleaved)
    if torch is not None:
        x_t = _Torch(torch)(x)[..., :rd]
        if interleaved:  # Meta's llama: complex multiply with a cached freqs_cis (complex needs float32+)
            wide = torch.float64 if x.dtype == np.float64 else torch.float32
            cis = torch.polar(torch.ones(seq, rd // 2, dtype=torch.float64), torch.from_numpy(angles))
            cis = per_row(cis.to(torch.complex128 if wide == torch.float64 else torch.complex64))

            def meta() -> object:
                xc = torch.view_as_complex(x_t.to(wide).reshape(*x_t.shape[:-1], -1, 2))
                return torch.view_as_real(xc * cis).flatten(-2).to(x_t.dtype)

            base["torch"] = meta
        else:  # Hugging Face's rotate_half with a cached cos/sin
            t = _Torch(torch)
            cached = _torch_rope(torch, False, t(np.concatenate([cos, cos], -1)), t(np.concatenate([sin, sin], -1)))
            base["torch"] = lambda: cached(x_t)
        inv_t, pos_t = torch.from_numpy(inv64).float(), torch.arange(seq)

        def hf() -> object:
            freqs = pos_t.float()[:, None] * inv_t  # LlamaRotaryEmbedding.forward, float32
            emb = freqs.repeat_interleave(2, -1) if interleaved else torch.cat((freqs, freqs), -1)
            cos_t, sin_t = per_row(emb.cos().to(x_t.dtype)), per_row(emb.sin().to(x_t.dtype))
            return _torch_rope(torch, interleaved, cos_t, sin_t)(x_t)

        base["HF"] = hf
    return Case(kernel, f"{list(x.shape)} in place", x.dtype.name, "rmw", x, 2 * x.nbytes,
                lambda: posenc.apply_rope(x, interleaved=interleaved, rotary_dim=rotary_dim, seq_axis=seq_axis, out=x),
                base)


def rope(quick: bool, dtype: np.dtype, torch: Any) -> List[Case]:
    import posenc

    seq = _sized(quick, 2048, 512)
    heads, head_dim = 32, 128
    x = _random((1, seq, heads, head_dim), dtype)
    cases = [_rope_case("apply_rope", x, False, None, torch), _rope_case("apply_rope GPT-J", x, True, None, torch),
             _rope_case("apply_rope rotary_dim=96", x, False, 96, torch),
             _rope_case("apply_rope seq_axis=-2", _random((1, heads, seq, head_dim), dtype, seed=2), False, None, torch,
                        seq_axis=-2)]
    inv64 = posenc.rope_inv_freq(head_dim)[0]

    # A decode step: one new token for each of 32 sequences, at different positions.
    d = _random((32, 1, heads, head_dim), dtype, seed=1)
    pos = (np.arange(32) * 997 + 100)[:, None]
    angles = pos[..., None] * inv64  # [32, 1, 64]
    base = {}
    if _numpy_ok(dtype):
        rows_cos, rows_sin = np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)  # gathered from a cache

        def numpy_decode() -> object:
            return _numpy_rope(d, rows_cos[:, :, None, :], rows_sin[:, :, None, :], False)()

        base["numpy"] = numpy_decode
    if torch is not None:
        t = _Torch(torch)
        d_t = t(d)
        cache_cos = t(np.cos(np.arange(32 * 997 + 200)[:, None] * np.concatenate([inv64, inv64])).astype(dtype))
        cache_sin = t(np.sin(np.arange(32 * 997 + 200)[:, None] * np.concatenate([inv64, inv64])).astype(dtype))
        pos_t = torch.from_numpy(pos)
        base["torch"] = lambda: _torch_rope(torch, False, cache_cos[pos_t][:, :, None, :],
                                            cache_sin[pos_t][:, :, None, :])(d_t)
    cases.append(Case("apply_rope decode", "[32, 1, 32, 128] per-batch positions", dtype.name, "rmw", d,
                      2 * d.nbytes, lambda: posenc.apply_rope(d, pos, out=d), base))
    return cases


# ---------------------------------------------------------------- rotary on several axes


def flux_ids(h: int, w: int) -> np.ndarray:
    """FLUX's image ids for an h×w latent grid: (0, row, column) per token, row-major, float64 [h·w, 3]."""
    ids = np.zeros((h, w, 3))
    ids[..., 1] = np.arange(h)[:, None]
    ids[..., 2] = np.arange(w)[None, :]
    return ids.reshape(h * w, 3)


def diffusers_flux_rope(torch: Any) -> Tuple[Callable[[Any], Any], Callable[..., Any]]:
    """diffusers' ``FluxPosEmbed(10000, (16, 56, 56))`` and ``apply_rotary_emb(use_real=True,
    use_real_unbind_dim=-1)``: the library's own functions when diffusers is installed, else the same
    code written out (diffusers 0.3x: float32 ids, float64 angles on CPU, float32 cos/sin)."""
    try:
        # By module name: diffusers is an optional peer, which a type checker may not have.
        embeddings = importlib.import_module("diffusers.models.embeddings")
        transformer_flux = importlib.import_module("diffusers.models.transformers.transformer_flux")
        flux: Callable[[Any], Any] = transformer_flux.FluxPosEmbed(10000, [16, 56, 56])
        rotary: Callable[..., Any] = embeddings.apply_rotary_emb
        return flux, lambda x, cos, sin: rotary(x, (cos, sin), use_real=True, use_real_unbind_dim=-1)
    except Exception:  # noqa: BLE001 - diffusers absent or changed: its formulation, written out
        def embed(ids: Any) -> Any:
            pos, cos, sin = ids.float(), [], []
            for a, d in enumerate((16, 56, 56)):
                freqs = 1.0 / (10000 ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
                angles = torch.outer(pos[:, a], freqs)
                cos.append(angles.cos().repeat_interleave(2, 1).float())
                sin.append(angles.sin().repeat_interleave(2, 1).float())
            return torch.cat(cos, -1), torch.cat(sin, -1)

        def apply(x: Any, cos: Any, sin: Any) -> Any:
            x_real, x_imag = x.reshape(*x.shape[:-1], -1, 2).unbind(-1)
            rotated = torch.stack([-x_imag, x_real], dim=-1).flatten(3)
            return (x.float() * cos[None, None] + rotated.float() * sin[None, None]).to(x.dtype)

        return embed, apply


def rope_nd(quick: bool, dtype: np.dtype, torch: Any) -> List[Case]:
    """FLUX-like: 4096 image tokens (a 64×64 latent grid), 24 heads of 128, 3 axes (16, 56, 56), in place."""
    import posenc

    side = _sized(quick, 64, 32)
    x = _random((1, side * side, 24, 128), dtype, seed=2)
    ids = flux_ids(side, side)
    freqs = posenc.rope_axial_freqs((16, 56, 56))
    base: Dict[str, Timed] = {}
    if _numpy_ok(dtype):  # cached [seq, 1, pairs] tables, in-place ufuncs on the GPT-J pairs
        angles = ids @ freqs
        base["numpy"] = _numpy_rope(x, np.cos(angles)[:, None, :].astype(dtype), np.sin(angles)[:, None, :].astype(dtype),
                                    True)
    if torch is not None:
        embed, apply = diffusers_flux_rope(torch)
        ids_t = torch.from_numpy(ids)
        x_t = _Torch(torch)(x).transpose(1, 2)  # [B, H, S, D], as FluxAttnProcessor hands it over (a view)
        cos_t, sin_t = embed(ids_t)  # computed once per forward, applied in every block: cached here
        base["torch"] = lambda: apply(x_t, cos_t, sin_t)
        base["HF"] = lambda: apply(x_t, *embed(ids_t))  # the embedding too, as one forward does it
    return [Case("apply_rope_nd FLUX", f"{list(x.shape)} 3 axes in place", dtype.name, "rmw", x, 2 * x.nbytes,
                 lambda: posenc.apply_rope_nd(x, ids, freqs, interleaved=True, out=x), base)]


# ---------------------------------------------------------------- relative

def _hf_t5_bucket(torch: Any, rel: Any, num_buckets: int = 32, max_distance: int = 128) -> Any:
    """Hugging Face's ``T5Attention._relative_position_bucket`` (bidirectional), as compute_bias calls it."""
    num_buckets //= 2
    out = (rel > 0).long() * num_buckets
    rel = rel.abs()
    max_exact = num_buckets // 2
    large = max_exact + (torch.log(rel.float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).long()
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return out + torch.where(rel < max_exact, rel, large)


def relative(quick: bool, dtype: np.dtype, torch: Any) -> List[Case]:
    import posenc

    heads, q = _sized(quick, (16, 1024), (8, 512))
    scores = _random((1, heads, q, q), dtype)
    table = _random((32, heads), dtype, seed=1)
    slopes = posenc.alibi_slopes(heads, dtype=np.float64)
    bloom = (slopes[:, None, None] * np.arange(q)[None, None, :]).astype(dtype)  # [heads, 1, k]
    t5 = posenc.t5_bias(table, q, q)  # [heads, q, k], cached for every layer
    alibi_base: Dict[str, Timed] = {}
    t5_base: Dict[str, Timed] = {}
    if _numpy_ok(dtype):
        alibi_base["numpy"] = lambda: np.add(scores, bloom, out=scores)
        t5_base["numpy"] = lambda: np.add(scores, t5, out=scores)
    if torch is not None:
        t = _Torch(torch)
        scores_t, bloom_t, t5_t, table_t = t(scores), t(bloom), t(t5), t(table)
        alibi_base["torch"] = lambda: scores_t.add_(bloom_t)
        t5_base["torch"] = lambda: scores_t.add_(t5_t)

        def compute_bias() -> object:  # T5Attention.compute_bias, then the add
            rel = torch.arange(q)[None, :] - torch.arange(q)[:, None]
            return scores_t.add_(table_t[_hf_t5_bucket(torch, rel)].permute(2, 0, 1))

        t5_base["HF"] = compute_bias

    # Attention inside Swin-sized windows: short rows, many of them.
    windows, wheads, side = _sized(quick, (256, 4, 12), (64, 4, 12))
    n = side * side
    win = _random((windows, wheads, n, n), dtype, seed=2)
    win_bias = posenc.alibi_bias(wheads, n, n, dtype=dtype)
    win_base: Dict[str, Timed] = {}
    if _numpy_ok(dtype):
        win_base["numpy"] = lambda: np.add(win, win_bias, out=win)
    if torch is not None:
        t = _Torch(torch)
        win_t, win_bias_t = t(win), t(win_bias)
        win_base["torch"] = lambda: win_t.add_(win_bias_t)
        swin_table = t(_random(((2 * side - 1) ** 2, wheads), dtype, seed=3))
        index = torch.from_numpy(posenc.swin_relative_position_index(side).reshape(-1)) if hasattr(
            posenc, "swin_relative_position_index") else None
        if index is not None:
            def swin() -> object:  # SwinSelfAttention: gather the bias table, permute, add
                bias = swin_table[index].view(n, n, -1).permute(2, 0, 1).contiguous()
                return win_t.add_(bias.unsqueeze(0))

            win_base["HF"] = swin

    name = dtype.name
    return [
        Case("add_alibi", f"{list(scores.shape)} in place", name, "rmw", scores, 2 * scores.nbytes,
             lambda: posenc.add_alibi(scores, out=scores), alibi_base),
        Case("add_alibi windows", f"{list(win.shape)} in place", name, "rmw", win, 2 * win.nbytes,
             lambda: posenc.add_alibi(win, out=win), win_base),
        Case("add_t5_bias", f"{list(scores.shape)} in place", name, "rmw", scores, 2 * scores.nbytes,
             lambda: posenc.add_t5_bias(scores, table, out=scores), t5_base),
    ]


def t5_buckets(quick: bool, dtype: np.dtype, torch: Any) -> List[Case]:
    """Integer output: run once, for the float32 pass of the dtype axis."""
    import posenc

    if dtype != np.float32:
        return []
    n = _sized(quick, 4096, 1024)

    def numpy_formula() -> object:  # the T5 formula over the full matrix, float32 log
        rel = np.arange(n)[None, :] - np.arange(n)[:, None]
        ret = (rel > 0) * 16
        a = np.abs(rel)
        large = 8 + (np.log(np.maximum(a, 1).astype(np.float32) / 8) / np.float32(math.log(16)) * 8).astype(np.int64)
        return (ret + np.where(a < 8, a, np.minimum(large, 15))).astype(np.int32)

    base: Dict[str, Timed] = {"numpy": numpy_formula}
    if torch is not None:
        base["HF"] = lambda: _hf_t5_bucket(torch, torch.arange(n)[None, :] - torch.arange(n)[:, None])
    deberta_base: Dict[str, Timed] = {}
    if torch is not None:
        try:
            from transformers.models.deberta_v2.modeling_deberta_v2 import (  # type: ignore[import-not-found, unused-ignore]
                build_relative_position,
            )
        except Exception:  # absent, or installed but broken (a torchvision built for another torch raises
            pass           # RuntimeError when transformers imports it): no HF column, the bench goes on
        else:
            rows = torch.zeros(n, 1)
            deberta_base["HF"] = lambda: build_relative_position(rows, rows, bucket_size=256, max_position=512)
    cases = [Case("t5_buckets", f"({n}, {n}) new int32", "int32", "alloc", n * n * 4, n * n * 4,
                  lambda: posenc.t5_buckets(n, n), base)]
    if hasattr(posenc, "deberta_buckets"):  # (absent from builds before it was added: bench them too)
        cases.append(Case("deberta_buckets", f"({n}, {n}) new int64", "int64", "alloc", n * n * 8, n * n * 8,
                          lambda: posenc.deberta_buckets(n, n), deberta_base))
    return cases


# ---------------------------------------------------------------- learned

def learned(quick: bool, dtype: np.dtype, torch: Any) -> List[Case]:
    import posenc

    n, dim = _sized(quick, (8192, 1024), (2048, 512))
    batch, seq = _sized(quick, (4, 2048), (4, 512))
    table = _random((n, dim), dtype)
    x = _random((batch, seq, dim), dtype, seed=1)
    first = 17
    pos = np.arange(first, first + seq)
    # BERT-base's positions added to a batch of 32 (many batches: learned.cpp's run_in_memory_order).
    bert_batch, bert_seq = _sized(quick, (32, 512), (16, 128))
    bert_table = _random((512, 768), dtype, seed=4)
    bert_x = _random((bert_batch, bert_seq, 768), dtype, seed=5)
    bert_pos = np.arange(bert_seq)
    grad = _random((2 * n, dim), dtype, seed=2)
    gpos = np.random.default_rng(3).integers(0, n, 2 * n)
    add_base: Dict[str, Timed] = {}
    grad_base: Dict[str, Timed] = {}
    resize_base: Dict[str, Timed] = {}
    bert_base: Dict[str, Timed] = {}
    if _numpy_ok(dtype):
        add_base["numpy"] = lambda: np.add(x, table[first:first + seq], out=x)
        bert_base["numpy"] = lambda: np.add(bert_x, bert_table[:bert_seq], out=bert_x)

        def add_at() -> object:
            out = np.zeros((n, dim), dtype)
            np.add.at(out, gpos, grad)
            return out

        grad_base["numpy"] = add_at
    if torch is not None:
        t = _Torch(torch)
        x_t, table_t, pos_t, grad_t, gpos_t = t(x), t(table), torch.from_numpy(pos), t(grad), torch.from_numpy(gpos)
        add_base["torch"] = lambda: x_t.add_(table_t[first:first + seq])
        add_base["HF"] = lambda: x_t.add_(table_t[pos_t])  # nn.Embedding's gather
        bert_x_t, bert_table_t, bert_pos_t = t(bert_x), t(bert_table), torch.from_numpy(bert_pos)
        bert_base["torch"] = lambda: bert_x_t.add_(bert_table_t[:bert_seq])
        bert_base["HF"] = lambda: bert_x_t.add_(bert_table_t[bert_pos_t])
        grad_base["torch"] = lambda: torch.zeros(n, dim, dtype=grad_t.dtype).index_add_(0, gpos_t, grad_t)
        if dtype != np.float16:  # PyTorch's CPU linear interpolation has no float16 kernel
            resize_base["torch"] = lambda: torch.nn.functional.interpolate(
                table_t.T[None], size=2 * n, mode="linear", align_corners=False)[0].T.contiguous()
    name = dtype.name
    item = dtype.itemsize
    return [
        Case("embedding_add", f"{list(x.shape)} in place", name, "rmw", x, 2 * x.nbytes,
             lambda: posenc.embedding_add(x, table, pos, out=x), add_base),
        Case("embedding_add", f"{list(bert_x.shape)} in place", name, "rmw", bert_x, 2 * bert_x.nbytes,
             lambda: posenc.embedding_add(bert_x, bert_table, bert_pos, out=bert_x), bert_base),
        Case("embedding_grad", f"{2 * n} rows -> [{n}, {dim}]", name, "read+alloc", (grad, n * dim * item),
             grad.nbytes + n * dim * item, lambda: posenc.embedding_grad(grad, gpos, n), grad_base),
        Case("resize_table", f"[{n}, {dim}] -> {2 * n} linear", name, "read+alloc", (table, 2 * table.nbytes),
             3 * table.nbytes, lambda: posenc.resize_table(table, 2 * n), resize_base),
    ]


FAMILIES: List[Callable[[bool, np.dtype, Any], List[Case]]] = [sinusoidal, rope, rope_nd, relative, t5_buckets,
                                                                learned]
