"""posenc.dask.add_sinusoidal out of core: a memory-mapped [N, 512, 1024] float32 file, encoded into another.

What is compared, on the same bytes (read from one .npy memory map, written into another):

- ``in-memory``: ``posenc.add_sinusoidal(src, out=dst)`` on the two memory maps, one call, posenc's
  own OpenMP threads (POSENC_BENCH_THREADS, default 2): the ceiling posenc.dask can approach;
- ``dask threads=k``: the threaded scheduler with k threads (one posenc thread per Dask thread);
- ``distributed workers=k``: ``LocalCluster(n_workers=k, threads_per_worker=1, processes=True)``,
  each worker opening the memory maps itself (no array bytes travel between processes).

The file is POSENC_BENCH_DASK_GIB GiB (default 4; a few MiB when benchmarks run with
``--benchmark-disable``, as in CI). ``extra_info`` records GB/s counting read + written bytes.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import posenc

da = pytest.importorskip("dask.array", reason="posenc.dask needs Dask (pip install 'posenc[dask]')")
import posenc.dask  # noqa: E402

SEQ, DIM, ROWS = 512, 1024, 8  # 2 MiB per sequence, 16 MiB blocks (see docs/dask.md on block sizes)


@pytest.fixture(scope="module")
def files(request, tmp_path_factory):
    disabled = request.config.getoption("benchmark_disable", False)
    gib = 1 / 64 if disabled else float(os.environ.get("POSENC_BENCH_DASK_GIB", "4"))
    n = max(ROWS, int(gib * 2**30) // (SEQ * DIM * 4) // ROWS * ROWS)
    work = tmp_path_factory.mktemp("bench_dask")
    src, dst = str(work / "x.npy"), str(work / "y.npy")
    x = np.lib.format.open_memmap(src, mode="w+", dtype=np.float32, shape=(n, SEQ, DIM))
    for i in range(0, n, ROWS):
        x[i:i + ROWS] = np.random.default_rng(i).standard_normal((ROWS, SEQ, DIM), np.float32)
    x.flush()
    del x
    np.lib.format.open_memmap(dst, mode="w+", dtype=np.float32, shape=(n, SEQ, DIM)).flush()
    yield src, dst, n
    os.remove(src)
    os.remove(dst)


def _load(src, block_info=None):
    (a, b), _, _ = block_info[None]["array-location"]
    return np.load(src, mmap_mode="r")[a:b]


def _store(yb, dst, block_info=None):
    (a, b), _, _ = block_info[0]["array-location"]
    out = np.load(dst, mmap_mode="r+")
    out[a:b] = yb  # into the shared page cache, as the in-memory call writes (no msync per block)
    return np.zeros((1, 1, 1), np.uint8)


def graph(src, dst, n):
    """Read blocks from the source map, encode them, write them into the destination map."""
    x = da.map_blocks(_load, src, chunks=((ROWS,) * (n // ROWS), (SEQ,), (DIM,)), dtype=np.float32,
                      meta=np.empty((0, 0, 0), np.float32))
    y = posenc.dask.add_sinusoidal(x, scale=DIM ** 0.5)
    return y.map_blocks(_store, dst, chunks=((1,) * (n // ROWS), (1,), (1,)), dtype=np.uint8)


def record(benchmark, n, **info):
    nbytes = n * SEQ * DIM * 4
    benchmark.extra_info.update(posenc.info() | info, gib=round(nbytes / 2**30, 3))
    if benchmark.stats is not None and not benchmark.disabled:
        benchmark.extra_info["gb_per_s"] = round(2 * nbytes / benchmark.stats.stats.min / 1e9, 3)


def check(dst, src, n):
    rows = slice(n // 2, n // 2 + 2)
    y = np.load(dst, mmap_mode="r")[rows]
    assert np.array_equal(y, posenc.add_sinusoidal(np.load(src, mmap_mode="r")[rows], scale=DIM ** 0.5))


@pytest.mark.benchmark(group="add_sinusoidal, memory-mapped [N, 512, 1024] float32")
def test_in_memory(benchmark, files):
    src, dst, n = files
    x, out = np.load(src, mmap_mode="r"), np.load(dst, mmap_mode="r+")
    benchmark.pedantic(posenc.add_sinusoidal, (x,), dict(scale=DIM ** 0.5, out=out), rounds=3)
    record(benchmark, n, scheduler="in-memory")
    check(dst, src, n)


@pytest.mark.benchmark(group="add_sinusoidal, memory-mapped [N, 512, 1024] float32")
@pytest.mark.parametrize("threads", [1, 2])
def test_dask_threads(benchmark, files, threads):
    src, dst, n = files
    work = graph(src, dst, n)
    benchmark.pedantic(lambda: work.compute(scheduler="threads", num_workers=threads), rounds=3)
    record(benchmark, n, scheduler="threads", dask_threads=threads)
    check(dst, src, n)


@pytest.mark.benchmark(group="add_sinusoidal, memory-mapped [N, 512, 1024] float32")
@pytest.mark.parametrize("workers", [1, 2])
def test_distributed_workers(benchmark, files, workers):
    distributed = pytest.importorskip("distributed", reason="needs dask.distributed")
    src, dst, n = files
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        work = graph(src, dst, n)
        client.compute(work, sync=True)  # workers import posenc and map the files once
        benchmark.pedantic(lambda: client.compute(work, sync=True), rounds=3)
    record(benchmark, n, scheduler="distributed", workers=workers, threads_per_worker=1)
    check(dst, src, n)
