"""Vision and detection: Swin's bias added into window scores, DETR's sine embedding, MAE's 2-D sincos.

posenc against what a user writes instead: Transformers' own modules in
PyTorch (the usual code for Swin and DETR), their NumPy formulation, and the
NumPy reference. Ratios are read from one run:
``pytest benchmarks/bench_vision.py --benchmark-group-by=group``.

Targets (issue 14), 2 threads: add_swin_bias in place on [256, 4, 144, 144]
(a batch of 4 at Swin-B stage 1, window 12; 84 MiB) >= 0.8 of the 2-thread
read-modify-write ceiling (``torch mul_`` on the same buffer, measured here as
its own row) and >= 1.5x PyTorch's gather-and-add; detr_sine on [8, 100, 150]
with a ragged mask >= 5x the Transformers module, every dtype, half precision
no slower than float32.
"""

from __future__ import annotations

import numpy as np
import pytest

import posenc
from posenc import reference
from posenc._checks import BFLOAT16

from conftest import torch

SWIN = (256, 4, 144, 144)
WINDOW = 12
DETR = (8, 100, 150)
DTYPES = {"float32": np.float32, "float16": np.float16, "float64": np.float64}
if BFLOAT16 is not None:
    DTYPES["bfloat16"] = BFLOAT16


def _torch_dtype(name):
    return getattr(torch, name)


def _swin_inputs(dtype):
    rng = np.random.default_rng(0)
    scores = rng.standard_normal(SWIN).astype(dtype)
    table = rng.standard_normal(((2 * WINDOW - 1) ** 2, SWIN[1])).astype(dtype)
    return scores, table


@pytest.mark.benchmark(group="add_swin_bias [256, 4, 144, 144] float32 in place")
@pytest.mark.parametrize("impl", ["posenc in place", "ceiling: torch mul_ (2 threads)", "reference",
                                  "numpy gather-and-add", "torch gather-and-add (Transformers)"])
def test_add_swin_bias(benchmark, throughput, impl):
    scores, table = _swin_inputs(np.float32)
    index = posenc.swin_relative_position_index(WINDOW)
    if impl == "posenc in place":
        benchmark(posenc.add_swin_bias, scores, table, WINDOW, out=scores)
    elif impl == "reference":
        benchmark.pedantic(reference.add_swin_bias, (scores, table, WINDOW), dict(out=scores), rounds=1)
    elif impl == "numpy gather-and-add":
        benchmark.pedantic(lambda: np.add(scores, np.moveaxis(table[index], -1, 0), out=scores), rounds=3)
    else:
        if torch is None:
            pytest.skip("PyTorch not installed")
        t = torch.from_numpy(scores)
        if impl.startswith("ceiling"):
            benchmark(t.mul_, 1.0)
        else:
            emb = torch.from_numpy(table)
            flat = torch.from_numpy(index.reshape(-1))
            n = WINDOW * WINDOW

            def run():  # SwinRelativePositionBias.forward, then the add of SwinSelfAttention
                bias = emb[flat].view(n, n, -1).permute(2, 0, 1).contiguous().unsqueeze(0)
                return t.add_(bias)

            benchmark(run)
    throughput("rmw", scores.nbytes)


@pytest.mark.benchmark(group="add_swin_bias [256, 4, 144, 144] in place, by dtype")
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_add_swin_bias_dtypes(benchmark, throughput, dtype):
    scores, table = _swin_inputs(DTYPES[dtype])
    benchmark(posenc.add_swin_bias, scores, table, WINDOW, out=scores)
    throughput("rmw", scores.nbytes)


def _ragged_mask():
    rng = np.random.default_rng(0)
    valid = np.zeros(DETR, bool)
    for b in range(DETR[0]):
        valid[b, : rng.integers(DETR[1] // 2, DETR[1] + 1), : rng.integers(DETR[2] // 2, DETR[2] + 1)] = True
    return valid


@pytest.mark.benchmark(group="detr_sine [8, 100, 150] ragged mask, 128 features")
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("impl", ["posenc new", "posenc out=", "torch (Transformers module)"])
def test_detr_sine(benchmark, throughput, impl, dtype):
    valid = _ragged_mask()
    dt = DTYPES[dtype]
    nbytes = int(np.prod(DETR)) * 128 * np.dtype(dt).itemsize
    if impl == "posenc new":
        benchmark(posenc.detr_sine, valid, normalize=True, dtype=dt)
        throughput("alloc", nbytes)
    elif impl == "posenc out=":
        out = np.empty(DETR + (128,), dt)
        benchmark(posenc.detr_sine, valid, normalize=True, dtype=dt, out=out)
        throughput("fill", nbytes)
    else:
        if torch is None:
            pytest.skip("PyTorch not installed")
        try:
            from transformers.models.detr.modeling_detr import DetrSinePositionEmbedding
        except ImportError:
            pytest.skip("transformers not installed")
        module = DetrSinePositionEmbedding(64, normalize=True)
        build = DetrSinePositionEmbedding.build_sine_position_embedding
        build = getattr(build, "__wrapped__", build)  # its lru_cache would time a dictionary hit
        mask = torch.from_numpy(valid.astype(np.int64))
        shape = torch.Size((DETR[0], 256) + DETR[1:])
        benchmark(build, shape, "cpu", _torch_dtype(dtype), 64, True, module.scale, 10000, mask)
        throughput("alloc", nbytes)


@pytest.mark.benchmark(group="sincos_2d(1152, 64) float32 (DiT-XL/2 at 512 px)")
@pytest.mark.parametrize("impl", ["posenc", "reference", "diffusers"])
def test_sincos_2d(benchmark, throughput, impl):
    if impl == "posenc":
        benchmark(posenc.sincos_2d, 1152, 64, base_size=32)
    elif impl == "reference":
        benchmark(reference.sincos_2d, 1152, 64, base_size=32)
    else:
        try:
            from diffusers.models.embeddings import get_2d_sincos_pos_embed
        except ImportError:
            pytest.skip("diffusers not installed")
        benchmark(lambda: get_2d_sincos_pos_embed(1152, 64, base_size=32).float())
    throughput("alloc", 64 * 64 * 1152 * 4)
