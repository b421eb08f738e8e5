"""Benchmark fixtures: thread pinning, memory ceilings, and throughput in extra_info.

Threads are pinned before NumPy is imported (``POSENC_BENCH_THREADS``,
default 2) so NumPy, PyTorch and posenc run on the same budget. Every
benchmark records its bytes per second next to the matching ceiling measured
in the same run on the same number of bytes:

- ``fill``: writing an existing buffer (``ndarray.fill``);
- ``rmw``: in-place read-modify-write (``np.multiply(a, 1, out=a)``), bytes
  counted as read + written;
- ``alloc``: allocating and filling a new array (``np.full``), first-touch
  page faults included: the ceiling of any function that returns a new array.
"""

from __future__ import annotations

import os

_THREADS = os.environ.get("POSENC_BENCH_THREADS", "2")
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, _THREADS)

import time  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import posenc  # noqa: E402

try:  # optional peer
    import torch  # noqa: E402

    torch.set_num_threads(int(_THREADS))
except ImportError:  # pragma: no cover
    torch = None

_CEILINGS: dict = {}


def _best(fn, repeat=15):
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def ceiling(kind: str, nbytes: int) -> float:
    """Bytes per second of ``kind`` ("fill", "rmw", "alloc") on ``nbytes`` bytes (cached per run)."""
    key = (kind, nbytes)
    if key not in _CEILINGS:
        a = np.ones(max(nbytes // 4, 1), np.float32)
        if kind == "fill":
            _CEILINGS[key] = nbytes / _best(lambda: a.fill(1.0))
        elif kind == "rmw":
            _CEILINGS[key] = 2 * nbytes / _best(lambda: np.multiply(a, 1, out=a))
        elif kind == "alloc":
            _CEILINGS[key] = nbytes / _best(lambda: np.full(a.shape, 1.0, np.float32))
        else:
            raise ValueError(kind)
    return _CEILINGS[key]


@pytest.fixture
def throughput(benchmark):
    """``throughput(kind, nbytes)`` after ``benchmark(...)``: records GB/s and the share of the ceiling.

    ``nbytes`` is the operand size; for "rmw" the bytes moved are twice that.
    """

    def record(kind: str, nbytes: int) -> None:
        info = posenc.info()
        benchmark.extra_info.update(isa=info["isa"], threads=info["threads"], backend=info["backend"])
        if benchmark.stats is None or benchmark.disabled:
            return
        moved = 2 * nbytes if kind == "rmw" else nbytes
        rate = moved / benchmark.stats.stats.min
        ceil = ceiling(kind, nbytes)
        benchmark.extra_info.update(
            bytes_moved=moved, gb_per_s=round(rate / 1e9, 2), ceiling=kind,
            ceiling_gb_per_s=round(ceil / 1e9, 2), fraction_of_ceiling=round(rate / ceil, 3),
        )

    return record


def requires_torch():
    return pytest.mark.skipif(torch is None, reason="PyTorch not installed")
