"""Rotary embeddings on several axes: apply_rope_nd on a FLUX-sized image, shared and per-head frequencies.

posenc against what a user writes instead: diffusers' FLUX code in PyTorch
(``FluxPosEmbed`` + ``apply_rotary_emb(use_real=True, use_real_unbind_dim=-1)``,
its tables cached or rebuilt as one forward does), the fastest NumPy
formulation (cached cos/sin, in-place ufuncs), and the read-modify-write
ceiling (``torch mul_`` in place on the same buffer, same threads). Ratios
are read from one run: ``pytest benchmarks/bench_rope_nd.py --benchmark-group-by=group``.

Targets (issue 13), 2 threads: [1, 4096, 24, 128] in place (4096 image
tokens, 3 axes, ``rope_axial_freqs((16, 56, 56))``) >= 0.8 of the ceiling,
float32 and bfloat16 alike, and >= 10x diffusers' formulation.
The same case is a row of ``posenc bench`` (``apply_rope_nd FLUX``).
"""

from __future__ import annotations

import numpy as np
import pytest

import posenc
from posenc._bench.cases import _numpy_rope, _Torch, diffusers_flux_rope, flux_ids
from posenc._checks import BFLOAT16

from conftest import torch

DTYPES = {"float32": np.float32}
if BFLOAT16 is not None:
    DTYPES["bfloat16"] = BFLOAT16
IMPLS = ["posenc in place", "posenc per-head freqs", "ceiling: torch mul_", "numpy cached tables",
         "diffusers cached tables", "diffusers with FluxPosEmbed"]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_flux(benchmark, throughput, quick, dtype, impl):
    side = 32 if quick else 64
    dt = np.dtype(DTYPES[dtype])
    x = np.random.default_rng(0).standard_normal((1, side * side, 24, 128), dtype=np.float32).astype(dt)
    benchmark.group = f"apply_rope_nd FLUX {list(x.shape)} {dtype}"
    ids, freqs = flux_ids(side, side), posenc.rope_axial_freqs((16, 56, 56))
    if impl == "posenc in place":
        benchmark(posenc.apply_rope_nd, x, ids, freqs, interleaved=True, out=x)
        throughput("rmw", x.nbytes)
    elif impl == "posenc per-head freqs":  # RoPE-Mixed's layout: no trig shared between heads
        per_head = np.stack([freqs * (1 + h / 24) for h in range(24)])
        benchmark(posenc.apply_rope_nd, x, ids, per_head, interleaved=True, out=x)
        throughput("rmw", x.nbytes)
    elif impl == "numpy cached tables":
        if dt != np.float32:
            pytest.skip("NumPy has no bfloat16 arithmetic speed path")
        angles = ids @ freqs
        run = _numpy_rope(x, np.cos(angles)[:, None, :].astype(dt), np.sin(angles)[:, None, :].astype(dt), True)
        benchmark.pedantic(run, rounds=5)
    else:
        if torch is None:
            pytest.skip("PyTorch not installed")
        x_t = _Torch(torch)(x)
        if impl == "ceiling: torch mul_":
            benchmark(x_t.mul_, 1.0)
            return
        embed, apply = diffusers_flux_rope(torch)
        ids_t = torch.from_numpy(ids)
        x_t = x_t.transpose(1, 2)  # [B, H, S, D], the view FluxAttnProcessor passes
        cos, sin = embed(ids_t)
        if impl == "diffusers cached tables":
            benchmark.pedantic(apply, (x_t, cos, sin), rounds=5)
        else:
            benchmark.pedantic(lambda: apply(x_t, *embed(ids_t)), rounds=5)


@pytest.mark.parametrize("impl", ["posenc", "numpy"])
def test_cos_sin(benchmark, quick, impl):
    """rope_nd_cos_sin of a FLUX grid against NumPy's float64 formula rounded to float32."""
    side = 32 if quick else 64
    ids, freqs = flux_ids(side, side), posenc.rope_axial_freqs((16, 56, 56))
    benchmark.group = f"rope_nd_cos_sin [{side * side}, 3] -> [{side * side}, 64] float32"
    if impl == "posenc":
        benchmark(posenc.rope_nd_cos_sin, ids, freqs)
    else:
        benchmark(lambda: (np.cos(ids @ freqs).astype(np.float32), np.sin(ids @ freqs).astype(np.float32)))
