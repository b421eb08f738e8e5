"""Rotary embeddings: posenc in place vs the reference, NumPy formulas and PyTorch.

Baselines are what a NumPy or PyTorch pipeline writes today:
- "numpy rotate_half": Hugging Face's ``x·cos + rotate_half(x)·sin`` with a
  precomputed float32 cos/sin cache (``[max_pos, head_dim]``) indexed by position;
- "torch rotate_half": the same formula in PyTorch (2 threads);
- "torch complex": Meta's llama formulation, ``view_as_complex(x)·freqs_cis``
  with a precomputed polar table, the fastest PyTorch CPU form we know.
Ratios are read from one run: `pytest benchmarks/bench_rope.py --benchmark-group-by=group`.
"""

from __future__ import annotations

import numpy as np
import pytest

import posenc
from posenc import reference

from conftest import torch

BASE = 10000.0


def numpy_cache(max_pos, dim):
    inv = (1.0 / BASE ** (np.arange(0, dim, 2, dtype=np.float32) / dim)).astype(np.float32)
    freqs = np.arange(max_pos, dtype=np.float32)[:, None] * inv[None, :]
    emb = np.concatenate([freqs, freqs], -1)
    return np.cos(emb), np.sin(emb)


def numpy_rotate_half(x, cos, sin):
    """x [b, s, h, d], cos/sin [b or 1, s, 1, d]: out = x·cos + rotate_half(x)·sin (a new array)."""
    half = x.shape[-1] // 2
    rot = np.concatenate([-x[..., half:], x[..., :half]], -1)
    return x * cos + rot * sin


def torch_rotate_half(x, cos, sin):
    half = x.shape[-1] // 2
    rot = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rot * sin


def torch_complex(x, freqs_cis):
    """Meta llama `apply_rotary_emb`: interleaved pairs as complex numbers."""
    xc = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(xc * freqs_cis).flatten(-2)


CASES = {
    "[1, 4096, 32, 128]": ((1, 4096, 32, 128), -3, False),
    "[4, 2048, 32, 128]": ((4, 2048, 32, 128), -3, False),
    "[1, 32, 4096, 128] heads-first": ((1, 32, 4096, 128), -2, False),
    "[1, 4096, 32, 128] GPT-J": ((1, 4096, 32, 128), -3, True),
}
IMPLS = ["posenc in place", "posenc new", "reference", "numpy rotate_half", "torch rotate_half", "torch complex"]


def _inputs(shape):
    return np.random.default_rng(0).standard_normal(shape, dtype=np.float32)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("impl", IMPLS)
def test_apply_rope(benchmark, throughput, case, impl):
    shape, seq_axis, interleaved = CASES[case]
    benchmark.group = f"apply_rope {case} float32"
    x = _inputs(shape)
    seq = shape[seq_axis]
    bcast = (1, seq, 1, shape[-1]) if seq_axis == -3 else (1, 1, seq, shape[-1])
    if impl == "posenc in place":
        benchmark(posenc.apply_rope, x, seq_axis=seq_axis, interleaved=interleaved, out=x)
    elif impl == "posenc new":
        benchmark(posenc.apply_rope, x, seq_axis=seq_axis, interleaved=interleaved)
    elif impl == "reference":
        benchmark.pedantic(reference.apply_rope, (x,), dict(seq_axis=seq_axis, interleaved=interleaved, out=x),
                           rounds=2)
    elif impl == "numpy rotate_half":
        cos, sin = numpy_cache(seq, shape[-1])
        c, s = cos[:seq].reshape(bcast), sin[:seq].reshape(bcast)
        benchmark.pedantic(numpy_rotate_half, (x, c, s), rounds=3)
    else:
        if torch is None:
            pytest.skip("PyTorch not installed")
        t = torch.from_numpy(x)
        if impl == "torch rotate_half":
            cos, sin = numpy_cache(seq, shape[-1])
            c = torch.from_numpy(cos[:seq].reshape(bcast))
            s = torch.from_numpy(sin[:seq].reshape(bcast))
            benchmark.pedantic(torch_rotate_half, (t, c, s), rounds=5)
        else:
            inv = 1.0 / BASE ** (torch.arange(0, shape[-1], 2, dtype=torch.float32) / shape[-1])
            freqs = torch.outer(torch.arange(seq, dtype=torch.float32), inv)
            cis = torch.polar(torch.ones_like(freqs), freqs).reshape(*bcast[:-1], -1)
            benchmark.pedantic(torch_complex, (t, cis), rounds=5)
    throughput("rmw", x.nbytes)


@pytest.mark.parametrize("impl", ["posenc in place", "posenc apply_rope_qk", "numpy rotate_half", "torch rotate_half"])
def test_decode_step(benchmark, throughput, impl):
    """One generated token for 32 sequences at different positions: per-call overhead dominates."""
    benchmark.group = "apply_rope decode [32, 1, 32, 128] per-batch positions"
    x = _inputs((32, 1, 32, 128))
    k = _inputs((32, 1, 8, 128))
    pos = (np.arange(32) * 997 + 100)[:, None]  # [batch, 1]
    if impl == "posenc in place":
        benchmark(posenc.apply_rope, x, pos, out=x)
    elif impl == "posenc apply_rope_qk":
        benchmark(posenc.apply_rope_qk, x, k, pos, out_q=x, out_k=k)
    elif impl == "numpy rotate_half":
        cos, sin = numpy_cache(32 * 997 + 200, 128)

        def step():
            c, s = cos[pos][:, :, None, :], sin[pos][:, :, None, :]
            return numpy_rotate_half(x, c, s)

        benchmark(step)
    else:
        if torch is None:
            pytest.skip("PyTorch not installed")
        cos, sin = numpy_cache(32 * 997 + 200, 128)
        tc, ts, tp, t = torch.from_numpy(cos), torch.from_numpy(sin), torch.from_numpy(pos), torch.from_numpy(x)
        benchmark(lambda: torch_rotate_half(t, tc[tp][:, :, None, :], ts[tp][:, :, None, :]))
    throughput("rmw", x.nbytes)


@pytest.mark.parametrize("impl", ["posenc", "reference"])
def test_rope_cos_sin(benchmark, throughput, impl):
    benchmark.group = "rope_cos_sin [32768, 64] float32"
    fn = posenc.rope_cos_sin if impl == "posenc" else reference.rope_cos_sin
    benchmark.pedantic(fn, (32768, 128), rounds=5 if impl == "posenc" else 2)
    throughput("alloc", 2 * 32768 * 64 * 4)
