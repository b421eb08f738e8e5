"""Learned tables: the fused add, lookup and the deterministic gradient, against the reference,
plain NumPy and PyTorch.

Targets (issue): embedding_add in place on x [4, 4096, 1024] float32 with a [8192, 1024]
table at >= 70% of the read-modify-write ceiling of x; embedding_grad of 16k rows into an
[8192, 1024] table at >= 3x ``np.add.at``. Ratios are read from one run:
`pytest benchmarks/bench_learned.py --benchmark-group-by=group`.
"""

from __future__ import annotations

import numpy as np
import pytest

import posenc
from posenc import reference

from conftest import torch

N, DIM = 8192, 1024
X_SHAPE = (4, 4096, 1024)
GRAD_ROWS = 16384


def data():
    rng = np.random.default_rng(0)
    table = rng.standard_normal((N, DIM), dtype=np.float32)
    return rng, table


@pytest.mark.benchmark(group="embedding_add [4, 4096, 1024] float32, table [8192, 1024]")
@pytest.mark.parametrize("impl", ["posenc in place [seq]", "posenc in place [batch, seq]", "reference",
                                  "numpy x += table[pos]", "torch x.add_(table[pos])"])
def test_embedding_add(benchmark, throughput, impl):
    rng, table = data()
    x = rng.standard_normal(X_SHAPE, dtype=np.float32)
    pos = np.arange(X_SHAPE[1]) + 17
    if impl == "posenc in place [seq]":
        benchmark(posenc.embedding_add, x, table, pos, out=x)
    elif impl == "posenc in place [batch, seq]":
        per_batch = rng.integers(0, N, X_SHAPE[:2])
        benchmark(posenc.embedding_add, x, table, per_batch, out=x)
    elif impl == "reference":
        benchmark.pedantic(reference.embedding_add, (x, table, pos), dict(out=x), rounds=3)
    elif impl == "numpy x += table[pos]":
        benchmark.pedantic(lambda: np.add(x, table[pos], out=x), rounds=5)
    else:
        if torch is None:
            pytest.skip("PyTorch not installed")
        t, tt, tp = torch.from_numpy(x), torch.from_numpy(table), torch.from_numpy(pos)
        benchmark.pedantic(lambda: t.add_(tt[tp]), rounds=5)
    throughput("rmw", x.nbytes)


@pytest.mark.benchmark(group="embedding_lookup [4, 4096] of [8192, 1024] float32")
@pytest.mark.parametrize("impl", ["posenc out=", "posenc new", "numpy table[pos]", "torch table[pos]"])
def test_embedding_lookup(benchmark, throughput, impl):
    rng, table = data()
    pos = rng.integers(0, N, X_SHAPE[:2])
    out = np.empty(X_SHAPE, np.float32)
    if impl == "posenc out=":
        benchmark(posenc.embedding_lookup, table, pos, out=out)
        throughput("fill", out.nbytes)
        return
    if impl == "posenc new":
        benchmark(posenc.embedding_lookup, table, pos)
    elif impl == "numpy table[pos]":
        benchmark.pedantic(lambda: table[pos], rounds=5)
    else:
        if torch is None:
            pytest.skip("PyTorch not installed")
        tt, tp = torch.from_numpy(table), torch.from_numpy(pos)
        benchmark.pedantic(lambda: tt[tp], rounds=5)
    throughput("alloc", out.nbytes)


@pytest.mark.benchmark(group="embedding_grad 16384 rows into [8192, 1024] float32")
@pytest.mark.parametrize("impl", ["posenc", "reference", "numpy zeros + np.add.at", "torch index_add_"])
def test_embedding_grad(benchmark, throughput, impl):
    rng, _ = data()
    grad = rng.standard_normal((GRAD_ROWS, DIM), dtype=np.float32)
    pos = rng.integers(0, N, GRAD_ROWS)
    if impl == "posenc":
        benchmark(posenc.embedding_grad, grad, pos, N)
    elif impl == "reference":
        benchmark.pedantic(reference.embedding_grad, (grad, pos, N), rounds=3)
    elif impl == "numpy zeros + np.add.at":
        def add_at():
            out = np.zeros((N, DIM), np.float32)
            np.add.at(out, pos, grad)
            return out
        benchmark.pedantic(add_at, rounds=3)
    else:
        if torch is None:
            pytest.skip("PyTorch not installed")
        tg, tp = torch.from_numpy(grad), torch.from_numpy(pos)
        benchmark.pedantic(lambda: torch.zeros(N, DIM).index_add_(0, tp, tg), rounds=5)
    # Bytes: grad read once plus the new table written (first touch included).
    throughput("alloc", grad.nbytes + N * DIM * 4)


@pytest.mark.benchmark(group="resize_table [8192, 1024] -> [16384, 1024] float32, linear")
@pytest.mark.parametrize("impl", ["posenc", "reference", "torch interpolate"])
def test_resize_table(benchmark, throughput, impl):
    _, table = data()
    if impl == "posenc":
        benchmark(posenc.resize_table, table, 2 * N)
    elif impl == "reference":
        benchmark.pedantic(reference.resize_table, (table, 2 * N), rounds=3)
    else:
        if torch is None:
            pytest.skip("PyTorch not installed")
        t = torch.from_numpy(table).T[None]
        benchmark.pedantic(lambda: torch.nn.functional.interpolate(t, size=2 * N, mode="linear", align_corners=False),
                           rounds=3)
    throughput("alloc", 2 * table.nbytes)


@pytest.mark.benchmark(group="resize_table_2d [24, 24, 1024] -> [48, 48, 1024] float32, bicubic")
@pytest.mark.parametrize("impl", ["posenc", "reference", "torch interpolate"])
def test_resize_table_2d(benchmark, throughput, impl):
    grid = np.random.default_rng(0).standard_normal((24, 24, DIM), dtype=np.float32)
    if impl == "posenc":
        benchmark(posenc.resize_table_2d, grid, 48, 48)
    elif impl == "reference":
        benchmark.pedantic(reference.resize_table_2d, (grid, 48, 48), rounds=3)
    else:
        if torch is None:
            pytest.skip("PyTorch not installed")
        t = torch.from_numpy(grid).permute(2, 0, 1)[None]
        benchmark.pedantic(lambda: torch.nn.functional.interpolate(t, size=(48, 48), mode="bicubic", align_corners=False),
                           rounds=3)
    throughput("alloc", 48 * 48 * DIM * 4)
