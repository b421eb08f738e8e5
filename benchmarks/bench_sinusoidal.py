"""Sinusoidal tables and the fused add: posenc vs the reference, NumPy formulas and PyTorch.

The NumPy float32 formula is what a NumPy pipeline writes today (float32
angles, so it drifts at large positions); the float64 formula has posenc's
accuracy. Ratios are read from one run: `pytest benchmarks --benchmark-group-by=group`.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import posenc
from posenc import reference

from conftest import torch

N, DIM = 8192, 1024
X_SHAPE = (4, 4096, 1024)


def numpy_table(n, dim, dtype):
    pos = np.arange(n, dtype=dtype)[:, None]
    div = np.exp(np.arange(0, dim, 2, dtype=dtype) * dtype(-math.log(10000.0) / dim))
    pe = np.empty((n, dim), np.float32)
    pe[:, 0::2] = np.sin(pos * div)
    pe[:, 1::2] = np.cos(pos * div)
    return pe


def torch_table(n, dim):
    pos = torch.arange(n, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    pe = torch.empty(n, dim)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe


@pytest.mark.benchmark(group="sinusoidal [8192, 1024] float32")
@pytest.mark.parametrize("impl", ["posenc out=", "posenc new", "reference", "numpy float32", "numpy float64", "torch"])
def test_sinusoidal_table(benchmark, throughput, impl):
    out = np.empty((N, DIM), np.float32)
    if impl == "posenc out=":
        benchmark(posenc.sinusoidal, N, DIM, out=out)
        throughput("fill", out.nbytes)
    elif impl == "posenc new":
        benchmark(posenc.sinusoidal, N, DIM)
        throughput("alloc", out.nbytes)
    elif impl == "reference":
        benchmark.pedantic(reference.sinusoidal, (N, DIM), rounds=3)
        throughput("alloc", out.nbytes)
    elif impl == "numpy float32":
        benchmark.pedantic(numpy_table, (N, DIM, np.float32), rounds=5)
        throughput("alloc", out.nbytes)
    elif impl == "numpy float64":
        benchmark.pedantic(numpy_table, (N, DIM, np.float64), rounds=3)
        throughput("alloc", out.nbytes)
    else:
        if torch is None:
            pytest.skip("PyTorch not installed")
        benchmark.pedantic(torch_table, (N, DIM), rounds=5)
        throughput("alloc", out.nbytes)


@pytest.mark.benchmark(group="add_sinusoidal [4, 4096, 1024] float32")
@pytest.mark.parametrize("impl", ["posenc in place", "reference", "numpy float32 table + add", "torch"])
def test_add_sinusoidal(benchmark, throughput, impl):
    x = np.random.default_rng(0).standard_normal(X_SHAPE, dtype=np.float32)
    if impl == "posenc in place":
        benchmark(posenc.add_sinusoidal, x, out=x)
    elif impl == "reference":
        benchmark.pedantic(reference.add_sinusoidal, (x,), dict(out=x), rounds=3)
    elif impl == "numpy float32 table + add":
        benchmark.pedantic(lambda: np.add(x, numpy_table(X_SHAPE[1], X_SHAPE[2], np.float32), out=x), rounds=3)
    else:
        if torch is None:
            pytest.skip("PyTorch not installed")
        t = torch.from_numpy(x)
        benchmark.pedantic(lambda: t.add_(torch_table(X_SHAPE[1], X_SHAPE[2])), rounds=5)
    throughput("rmw", x.nbytes)
