"""Benchmark fixtures: thread pinning, and throughput against a ceiling measured beside each case.

Threads are pinned before NumPy is imported (``POSENC_BENCH_THREADS``,
default 2) so NumPy's BLAS, PyTorch and posenc run on the same budget. The
cases are posenc's own (``posenc._bench.cases``); each posenc benchmark
records in ``extra_info`` the path (ISA) and thread count it ran with, its
bytes per second, and the matching memory ceiling measured in the same test
on the same buffer with the same threads (``fill``, ``rmw`` or ``alloc``,
see ``posenc._bench.timing.ceiling``).
"""

from __future__ import annotations

import os

_THREADS = os.environ.get("POSENC_BENCH_THREADS", "2")
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, _THREADS)

import functools  # noqa: E402

import pytest  # noqa: E402

import posenc  # noqa: E402
from posenc._bench import cases, timing  # noqa: E402

torch = timing.torch_module()
if torch is not None:
    torch.set_num_threads(int(_THREADS))


@functools.lru_cache(maxsize=1)
def family_cases(family: str, dtype: str, quick: bool):
    """The cases of one family at one dtype (the last one built is kept: they hold large arrays)."""
    factory = {f.__name__: f for f in cases.FAMILIES}[family]
    return factory(quick, cases.dtype_of(dtype), torch)


@pytest.fixture
def quick(request) -> bool:
    """Small sizes when timing is off (CI runs every benchmark once, untimed) or POSENC_BENCH_QUICK=1."""
    return bool(request.config.getoption("benchmark_disable")) or os.environ.get("POSENC_BENCH_QUICK") == "1"


@pytest.fixture
def record(benchmark):
    """``record(case)`` after timing posenc: the path, threads, GB/s and the share of the case's ceiling."""

    def done(case) -> None:
        info = posenc.info()
        benchmark.extra_info.update(isa=info["isa"], threads=posenc.get_num_threads(), dtype=case.dtype,
                                    ceiling=case.ceiling)
        if benchmark.stats is None or benchmark.disabled:
            return
        best = benchmark.stats.stats.min
        ceiling_s = timing.measure({"ceiling": timing.ceiling(case.ceiling, case.target)}, repeat=15,
                                   reset=case.reset())["ceiling"]
        benchmark.extra_info.update(gb_per_s=round(case.nbytes / best / 1e9, 2), ceiling_ms=round(ceiling_s * 1e3, 4),
                                    fraction_of_ceiling=round(ceiling_s / best, 3))

    return done


@pytest.fixture
def throughput(benchmark):
    """``throughput(kind, nbytes)`` after a benchmark that is not one of ``posenc bench``'s cases: GB/s
    beside the ``kind`` ceiling ("fill", "rmw", "alloc") on ``nbytes``, with posenc's threads."""
    import numpy as np

    def done(kind: str, nbytes: int) -> None:
        info = posenc.info()
        benchmark.extra_info.update(isa=info["isa"], threads=posenc.get_num_threads(), ceiling=kind)
        if benchmark.stats is None or benchmark.disabled:
            return
        best = benchmark.stats.stats.min
        target = nbytes if kind == "alloc" else np.ones(max(nbytes // 8, 1), np.uint64)
        ceiling_s = timing.measure({"ceiling": timing.ceiling(kind, target)}, repeat=15)["ceiling"]
        moved = 2 * nbytes if kind == "rmw" else nbytes
        benchmark.extra_info.update(gb_per_s=round(moved / best / 1e9, 2), ceiling_ms=round(ceiling_s * 1e3, 4),
                                    fraction_of_ceiling=round(ceiling_s / best, 3))

    return done
