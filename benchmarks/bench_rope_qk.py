"""The 1-D rotary API of issue 13: caller cos/sin tables and xPos, beside the code users run instead.

- ``apply_rope_qk(q, k, cos=, sin=)`` in place on Llama-like q [1, 2048, 32, 128] and k [1, 2048, 8, 128]
  with the tables a Transformers model hands its attention layers ([1, seq, head_dim], halves repeated,
  in q's dtype), against Transformers' ``apply_rotary_pos_emb`` (its own function when installed, the
  same formula otherwise) on the same tensors, and the read-modify-write ceiling of q and k.
- xPos: ``apply_rope_qk(..., xpos_scale_base=512)`` against rotary-embedding-torch's
  ``rotate_queries_and_keys`` (its ``use_xpos``) on [1, 32, 2048, 128].

Threads: POSENC_BENCH_THREADS (default 2) for every library (benchmarks/conftest.py). Ratios from one run:
``pytest benchmarks/bench_rope_qk.py --benchmark-group-by=group --benchmark-columns=min,median``.
"""

from __future__ import annotations

import numpy as np
import pytest

import posenc
from posenc._checks import BFLOAT16

from conftest import torch

SEQ, HEADS, KV_HEADS, DIM = 2048, 32, 8, 128
DTYPES = ["float32"] + (["bfloat16"] if BFLOAT16 is not None else [])


def _qk(dtype):
    rng = np.random.default_rng(0)
    q = torch.from_numpy(rng.standard_normal((1, SEQ, HEADS, DIM), np.float32)).to(getattr(torch, dtype))
    k = torch.from_numpy(rng.standard_normal((1, SEQ, KV_HEADS, DIM), np.float32)).to(getattr(torch, dtype))
    c, s = posenc.rope_cos_sin(SEQ, DIM, base=500000.0, dtype=np.float64)
    cos = torch.from_numpy(np.concatenate([c, c], -1)[None]).to(q.dtype)  # what LlamaRotaryEmbedding returns
    sin = torch.from_numpy(np.concatenate([s, s], -1)[None]).to(q.dtype)
    return q, k, cos, sin


def _transformers_apply():
    try:
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb
        return apply_rotary_pos_emb
    except ImportError:  # the same formula
        def rotate_half(x):
            return torch.cat((-x[..., DIM // 2:], x[..., :DIM // 2]), -1)

        def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
            cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
            return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        return apply_rotary_pos_emb


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("impl", ["posenc apply_rope_qk(cos=, sin=) in place", "Transformers apply_rotary_pos_emb",
                                  "ceiling: torch mul_ on q and k"])
def test_tables_qk(benchmark, throughput, impl, dtype):
    if torch is None:
        pytest.skip("PyTorch not installed")
    benchmark.group = f"apply_rope_qk cos/sin [1, {SEQ}, {HEADS}+{KV_HEADS}, {DIM}] {dtype}"
    q, k, cos, sin = _qk(dtype)
    if impl.startswith("posenc"):
        benchmark.pedantic(lambda: posenc.apply_rope_qk(q, k, cos=cos, sin=sin, out_q=q, out_k=k), rounds=15,
                           warmup_rounds=1)
        throughput("rmw", q.numel() * q.element_size() + k.numel() * k.element_size())
    elif impl.startswith("Transformers"):
        apply = _transformers_apply()
        benchmark.pedantic(lambda: apply(q, k, cos, sin, unsqueeze_dim=2), rounds=5, warmup_rounds=1)
    else:
        benchmark.pedantic(lambda: (q.mul_(1.0), k.mul_(1.0)), rounds=15, warmup_rounds=1)


@pytest.mark.parametrize("impl", ["posenc apply_rope_qk xPos", "rotary-embedding-torch use_xpos"])
def test_xpos(benchmark, impl):
    if torch is None:
        pytest.skip("PyTorch not installed")
    benchmark.group = f"xPos q, k [1, {HEADS}, {SEQ}, {DIM}] float32"
    rng = np.random.default_rng(1)
    q = torch.from_numpy(rng.standard_normal((1, HEADS, SEQ, DIM), np.float32))
    k = torch.from_numpy(rng.standard_normal((1, HEADS, SEQ, DIM), np.float32))
    if impl.startswith("posenc"):
        benchmark.pedantic(lambda: posenc.apply_rope_qk(q, k, interleaved=True, seq_axis=-2, xpos_scale_base=512,
                                                        xpos_center=SEQ // 2), rounds=10, warmup_rounds=1)
    else:
        ret = pytest.importorskip("rotary_embedding_torch")
        rot = ret.RotaryEmbedding(dim=DIM, use_xpos=True, cache_if_possible=False)
        benchmark.pedantic(lambda: rot.rotate_queries_and_keys(q, k), rounds=5, warmup_rounds=1)
