"""posenc.dask: every function equals the in-memory call, bit for bit, for any chunking, on both schedulers.

Skipped (with the reason) when Dask is not installed; CI installs it (.ci/peers.txt) and runs these with
POSENC_REQUIRE_PEERS=1, where a missing Dask fails instead. Arrays are small: the point is chunk
boundaries (every axis, sequence chunks that start off the kernels' anchor rows), not size.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import posenc

da = pytest.importorskip("dask.array", reason="posenc.dask needs Dask (pip install 'posenc[dask]')")

import posenc.dask as pdask  # noqa: E402

from helpers import FLOAT_DTYPES  # noqa: E402

FAST = settings(max_examples=25, deadline=None)


def threaded(arr):
    return arr.compute(scheduler="threads", num_workers=2)


def chunking(shape, draw):
    """Random chunk sizes, one per axis: one axis (drawn) finely chunked, the others in at most 3 blocks,
    so that a graph stays at a few hundred tasks (test time) while every axis gets split somewhere."""
    fine = draw(st.integers(0, len(shape) - 1))
    return tuple(draw(st.integers(max(1, -(-n // (25 if a == fine else 3))), max(n, 1))) for a, n in enumerate(shape))


def dtypes():
    return st.sampled_from(FLOAT_DTYPES)


def same(actual, expected):
    """Bit-identical: same dtype, shape and bytes (NaN-free inputs, so array_equal on the bits)."""
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert np.array_equal(actual.view(np.uint8 if actual.itemsize == 1 else f"u{actual.itemsize}"),
                          expected.view(np.uint8 if expected.itemsize == 1 else f"u{expected.itemsize}"))


def data(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------- bit identity for random chunkings

@FAST
@given(st.data(), dtypes(), st.integers(-70, 10**6), st.floats(0.25, 4.0), st.booleans())
def test_add_sinusoidal_any_chunking(draw, dtype, offset, scale, interleaved):
    shape = (draw.draw(st.integers(1, 3)), draw.draw(st.integers(1, 140)), 2 * draw.draw(st.integers(1, 9)))
    x = data(shape, dtype)
    offset = max(offset, 0) if draw.draw(st.booleans()) else offset
    y = pdask.add_sinusoidal(da.from_array(x, chunks=chunking(shape, draw.draw)), offset=offset, scale=scale,
                             interleaved=interleaved)
    same(threaded(y), posenc.add_sinusoidal(x, offset=offset, scale=scale, interleaved=interleaved))


@FAST
@given(st.data(), dtypes())
def test_add_sinusoidal_positions_any_chunking(draw, dtype):
    seq = draw.draw(st.integers(1, 120))
    x = data((2, seq, 8), dtype)
    # consecutive runs (the kernels' recurrence) broken at random places
    positions = np.cumsum(np.where(np.random.default_rng(seq).random(seq) < 0.1, 7, 1)) + 1000
    y = pdask.add_sinusoidal(da.from_array(x, chunks=chunking(x.shape, draw.draw)), positions=positions)
    same(threaded(y), posenc.add_sinusoidal(x, positions=positions))


@FAST
@given(st.data(), dtypes(), st.booleans())
def test_sinusoidal_table_any_chunking(draw, dtype, interleaved):
    n, dim = draw.draw(st.integers(0, 150)), 2 * draw.draw(st.integers(1, 8))
    rows = draw.draw(st.integers(1, max(n, 1)))
    table = pdask.sinusoidal(n, dim, chunks=rows, dtype=dtype, interleaved=interleaved)
    assert table.chunks[1] == (dim,)
    same(threaded(table), posenc.sinusoidal(n, dim, dtype=dtype, interleaved=interleaved))
    positions = np.linspace(-5.0, 3000.0, n)
    same(threaded(pdask.sinusoidal(positions, dim, chunks=rows, dtype=dtype, freq_rule="t2t" if dim >= 4 else
                                   "vaswani")),
         posenc.sinusoidal(positions, dim, dtype=dtype, freq_rule="t2t" if dim >= 4 else "vaswani"))


def rope_case(draw, dtype, seq_axis):
    batch, seq, heads = draw(st.integers(1, 3)), draw(st.integers(1, 100)), draw(st.integers(1, 3))
    head_dim = 2 * draw(st.integers(1, 8))
    shape = (batch, seq, heads, head_dim) if seq_axis == -3 else (batch, heads, seq, head_dim)
    return data(shape, dtype), batch, seq


@FAST
@given(st.data(), dtypes(), st.sampled_from([-3, -2]), st.booleans(), st.booleans(), st.integers(0, 5000))
def test_apply_rope_offset_any_chunking(draw, dtype, seq_axis, interleaved, inverse, offset):
    x, _, _ = rope_case(draw.draw, dtype, seq_axis)
    rotary = 2 * draw.draw(st.integers(1, x.shape[-1] // 2))
    kw = dict(seq_axis=seq_axis, interleaved=interleaved, inverse=inverse, offset=offset, rotary_dim=rotary)
    y = pdask.apply_rope(da.from_array(x, chunks=chunking(x.shape, draw.draw)), **kw)
    same(threaded(y), posenc.apply_rope(x, **kw))


@FAST
@given(st.data(), dtypes(), st.sampled_from([-3, -2]), st.sampled_from(["shared", "batch", "batch-dask", "mrope"]))
def test_apply_rope_positions_any_chunking(draw, dtype, seq_axis, kind):
    x, batch, seq = rope_case(draw.draw, dtype, seq_axis)
    rng = np.random.default_rng(seq)
    # per-batch positions: consecutive runs with random starts and breaks (KV-cache shifts, packing)
    runs = np.cumsum(np.where(rng.random((batch, seq)) < 0.08, rng.integers(-20, 20, (batch, seq)), 1), axis=1)
    positions = runs + rng.integers(0, 10**5, (batch, 1))
    kw = dict(seq_axis=seq_axis, scaling={"type": "linear", "factor": 2.0})
    chunks = chunking(x.shape, draw.draw)
    seq_ax = x.ndim + seq_axis
    if kind == "shared":
        positions = positions[0]
        given_positions = positions
    elif kind == "batch":
        given_positions = positions
    elif kind == "batch-dask":  # chunked with the data, or not (then rechunked to it)
        aligned = draw.draw(st.booleans())
        pchunks = (chunks[0], chunks[seq_ax]) if aligned else (1, draw.draw(st.integers(1, seq)))
        given_positions = da.from_array(positions, chunks=pchunks)
    else:
        kw.update(mrope_section=(1, 1, x.shape[-1] // 2 - 2)) if x.shape[-1] >= 6 else kw.update(
            mrope_section=(x.shape[-1] // 2, 0, 0))
        kw.pop("scaling")
        positions = np.stack([positions, positions // 3, positions % 7])
        given_positions = positions
    y = pdask.apply_rope(da.from_array(x, chunks=chunks), given_positions, **kw)
    same(threaded(y), posenc.apply_rope(x, positions, **kw))


@FAST
@given(st.data(), dtypes(), st.sampled_from(["full", "trailing", "dask"]))
def test_embedding_add_any_chunking(draw, dtype, kind):
    shape = (draw.draw(st.integers(1, 3)), draw.draw(st.integers(1, 40)), draw.draw(st.integers(1, 9)))
    x, table = data(shape, dtype), data((50, shape[-1]), dtype, seed=1)
    positions = np.random.default_rng(shape[1]).integers(0, 50, shape[:-1])
    chunks = chunking(shape, draw.draw)
    given_positions = positions
    if kind == "trailing":
        positions = given_positions = positions[0]
    elif kind == "dask":
        given_positions = da.from_array(positions, chunks=chunking(positions.shape, draw.draw))
    y = pdask.embedding_add(da.from_array(x, chunks=chunks), table, given_positions)
    assert y.chunks[-1] == (shape[-1],)  # a chunked feature axis is rechunked to one chunk
    same(threaded(y), posenc.embedding_add(x, table, positions))


def scores_case(draw, dtype):
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 6)), draw(st.integers(1, 40)), draw(st.integers(1, 40)))
    return data(shape, dtype)


@FAST
@given(st.data(), dtypes(), st.integers(-60, 60), st.booleans(), st.booleans())
def test_add_alibi_any_chunking(draw, dtype, offset, symmetric, own_slopes):
    s = scores_case(draw.draw, dtype)
    slopes = np.linspace(0.01, 1.0, s.shape[-3]) if own_slopes else None  # default: depend on the head count
    y = pdask.add_alibi(da.from_array(s, chunks=chunking(s.shape, draw.draw)), offset=offset, symmetric=symmetric,
                        slopes=slopes)
    same(threaded(y), posenc.add_alibi(s, offset=offset, symmetric=symmetric, slopes=slopes))


@FAST
@given(st.data(), dtypes(), st.integers(-60, 60), st.booleans(), st.integers(20, 40))
def test_add_t5_bias_any_chunking(draw, dtype, offset, bidirectional, max_distance):
    s = scores_case(draw.draw, dtype)
    table = data((16, s.shape[-3]), dtype, seed=2)
    kw = dict(offset=offset, bidirectional=bidirectional, max_distance=max_distance)
    y = pdask.add_t5_bias(da.from_array(s, chunks=chunking(s.shape, draw.draw)), table, **kw)
    same(threaded(y), posenc.add_t5_bias(s, table, **kw))


def test_sequence_blocks_off_the_anchor_rows_need_the_scratch():
    """Why blocks start their recurrence at the whole call's anchor rows: a naive per-block call with
    only the offset differs in float64 (so the test above would catch a block computed that way)."""
    x = data((1, 200, 64), np.float64)
    naive = np.concatenate([posenc.add_sinusoidal(x[:, i:i + 37], offset=1000 + i) for i in range(0, 200, 37)],
                           axis=1)
    whole = posenc.add_sinusoidal(x, offset=1000)
    if posenc.get_backend() == "native":  # the NumPy reference evaluates every row directly
        assert not np.array_equal(naive, whole)
    same(threaded(pdask.add_sinusoidal(da.from_array(x, chunks=(1, 37, 64)), offset=1000)), whole)
    same(threaded(pdask.add_sinusoidal(da.from_array(x, chunks=(1, 1, 64)), offset=1000)), whole)  # one row each
    same(threaded(pdask.apply_rope(da.from_array(x.reshape(1, 200, 4, 16), chunks=(1, 1, 4, 16)), offset=1000)),
         posenc.apply_rope(x.reshape(1, 200, 4, 16), offset=1000))


# ---------------------------------------------------------------- laziness, inputs, chunked last axis

def exploding(shape, dtype, chunks):
    """A dask array whose blocks raise when computed: proof that a call computed nothing."""
    def boom(block_info=None):
        raise AssertionError("a block was computed while the graph was built")
    return da.map_blocks(boom, chunks=da.core.normalize_chunks(chunks, shape), dtype=dtype,
                         meta=np.empty((0,) * len(shape), dtype))


def test_calls_are_lazy():
    x = exploding((4, 64, 8), np.float32, (2, 20, 8))
    s = exploding((2, 4, 16, 16), np.float32, (1, 2, 8, 8))
    pos = exploding((4, 64), np.int64, (2, 20))
    results = [
        pdask.add_sinusoidal(x, offset=3),
        pdask.apply_rope(x.reshape(4, 64, 2, 4), offset=3),
        pdask.apply_rope(x.reshape(4, 64, 2, 4), pos),
        pdask.embedding_add(x, data((70, 8), np.float32), pos),
        pdask.add_alibi(s),
        pdask.add_t5_bias(s, data((32, 4), np.float32)),
        pdask.sinusoidal(10**9, 64, chunks=10**6),  # 256 GB, never computed
    ]
    for r in results:
        assert isinstance(r, da.Array)


def test_block_tasks_do_not_carry_the_whole_input():
    """dask.distributed serialises each task on its own: a block's task holds what its block needs, never the
    whole 1 MiB input, which a closure over all of the call's arguments would drag along."""
    cloudpickle = pytest.importorskip("cloudpickle", reason="comes with Dask")
    x = da.from_array(np.zeros((4, 256, 256), np.float32), chunks=(1, 128, 256))  # 1 MiB, 8 blocks
    s = da.from_array(np.zeros((2, 4, 128, 256), np.float32), chunks=(1, 4, 64, 256))
    pos = da.from_array(np.arange(4 * 256).reshape(4, 256), chunks=(1, 128))
    table = np.zeros((300, 256), np.float32)  # 300 kB: the embedding table rides beside every task
    rows = np.arange(16 * 1024)  # 128 kB: so do the table's positions (each block slices its own)
    small = 64 << 10
    results = [
        (pdask.add_sinusoidal(x, offset=3), small),
        (pdask.add_sinusoidal(x, positions=np.arange(256)), small),
        (pdask.apply_rope(x.reshape(4, 256, 4, 64), offset=3), small),
        (pdask.apply_rope(x.reshape(4, 256, 4, 64), pos), small),
        (pdask.embedding_add(x, table, pos), table.nbytes + small),
        (pdask.embedding_add(x, table, np.arange(256)), table.nbytes + small),
        (pdask.add_alibi(s, offset=2), small),
        (pdask.add_t5_bias(s, np.zeros((32, 4), np.float32), offset=2), small),
        (pdask.sinusoidal(da.from_array(rows, chunks=1024), 8, chunks=2048), rows.nbytes + small),
    ]
    for r, allowed in results:
        tasks = dict(r.__dask_graph__().layers[r.name])
        assert max(len(cloudpickle.dumps(t)) for t in tasks.values()) < allowed, r.name


def test_numpy_inputs_and_chunked_last_axis():
    x = data((3, 50, 12), np.float32)
    y = pdask.add_sinusoidal(x)  # a NumPy array is wrapped
    assert isinstance(y, da.Array)
    same(y.compute(), posenc.add_sinusoidal(x))
    chunked = da.from_array(x, chunks=(1, 10, 4))
    for fn in (lambda a: pdask.add_sinusoidal(a), lambda a: pdask.apply_rope(a.reshape(3, 50, 2, 6))):
        r = fn(chunked)
        assert r.chunks[-1] == (r.shape[-1],)  # rechunked, not refused
    same(pdask.apply_rope(chunked.reshape(3, 50, 2, 6)).compute(), posenc.apply_rope(x.reshape(3, 50, 2, 6)))


def test_writes_back_to_zarr_and_npy_stack(tmp_path):
    x = data((4, 70, 16), np.float32)
    y = pdask.add_sinusoidal(da.from_array(x, chunks=(1, 33, 16)), offset=11)
    da.to_npy_stack(str(tmp_path / "stack"), y, axis=0)
    same(da.from_npy_stack(str(tmp_path / "stack")).compute(), posenc.add_sinusoidal(x, offset=11))
    zarr = pytest.importorskip("zarr", reason="optional: Zarr output")
    y.to_zarr(str(tmp_path / "out.zarr"))
    same(np.asarray(zarr.open(str(tmp_path / "out.zarr"), mode="r")[...]), posenc.add_sinusoidal(x, offset=11))


def test_memory_mapped_input_is_not_modified(tmp_path):
    path = tmp_path / "x.npy"
    x = data((3, 40, 8), np.float32)
    np.save(path, x)
    mm = np.load(path, mmap_mode="r")  # read-only: a kernel writing into its block would raise
    y = pdask.add_sinusoidal(da.from_array(mm, chunks=(1, 15, 8))).compute()
    same(y, posenc.add_sinusoidal(x))
    same(np.load(path), x)


def test_unpickled_positions():
    """int64 arrays that crossed a process boundary (a dask.distributed worker's view of the graph) work:
    an unpickled int64 dtype is not NumPy's own object (the bindings once compared dtypes by identity)."""
    import pickle

    x, table = data((6, 7, 2), np.float32), data((50, 2), np.float32, seed=1)
    positions = np.arange(42).reshape(6, 7)
    moved = pickle.loads(pickle.dumps(positions))
    want = posenc.embedding_add(x, table, positions)
    same(threaded(pdask.embedding_add(da.from_array(x, chunks=(2, 3, 2)), table, moved)), want)
    same(threaded(pdask.embedding_add(da.from_array(x, chunks=(2, 3, 2)), table,
                                      da.from_array(moved, chunks=(4, 4)))), want)


# ---------------------------------------------------------------- threads: Dask's, not Dask's × posenc's

def test_kernels_run_on_the_task_thread_only(monkeypatch):
    seen = []
    original = posenc.add_sinusoidal

    def spy(*args, **kwargs):
        seen.append(posenc.get_num_threads())
        return original(*args, **kwargs)

    monkeypatch.setattr(posenc, "add_sinusoidal", spy)
    x = da.from_array(data((4, 64, 8), np.float32), chunks=(1, 32, 8))
    lazy = pdask.add_sinusoidal(x)
    seen.clear()  # the call's own argument check ran on this thread
    threaded(lazy)
    assert seen and set(seen) == {1}
    # ... only inside posenc.dask's tasks: other threads keep their default, and so does this one
    outside = []
    threaded(da.map_blocks(lambda b: outside.append(posenc.get_num_threads()) or b, x))
    default = posenc.get_num_threads()
    assert set(outside) == {default}
    t = threading.Thread(target=lambda: outside.append(posenc.get_num_threads()))
    t.start()
    t.join()
    assert outside[-1] == default


# ---------------------------------------------------------------- arguments checked when the graph is built

HOSTILE = [
    # (name, dask call, in-memory twin on NumPy arrays or None, exception)
    ("odd dim", lambda X: pdask.add_sinusoidal(X((2, 9, 5))), lambda N: posenc.add_sinusoidal(N((2, 9, 5))),
     ValueError),
    ("int x", lambda X: pdask.add_sinusoidal(X((2, 9, 4), np.int32)),
     lambda N: posenc.add_sinusoidal(N((2, 9, 4), np.int32)), TypeError),
    ("1-D x", lambda X: pdask.add_sinusoidal(X((8,))), lambda N: posenc.add_sinusoidal(N((8,))), ValueError),
    ("float offset", lambda X: pdask.add_sinusoidal(X((2, 9, 4)), offset=1.5),
     lambda N: posenc.add_sinusoidal(N((2, 9, 4)), offset=1.5), TypeError),
    ("offset past 2**53", lambda X: pdask.add_sinusoidal(X((2, 9, 4)), offset=2**53 - 3),
     lambda N: posenc.add_sinusoidal(N((2, 9, 4)), offset=2**53 - 3), ValueError),
    ("offset and positions", lambda X: pdask.add_sinusoidal(X((2, 9, 4)), offset=1, positions=np.arange(9)),
     lambda N: posenc.add_sinusoidal(N((2, 9, 4)), offset=1, positions=np.arange(9)), ValueError),
    ("positions length", lambda X: pdask.add_sinusoidal(X((2, 9, 4)), positions=np.arange(8)),
     lambda N: posenc.add_sinusoidal(N((2, 9, 4)), positions=np.arange(8)), ValueError),
    ("positions nan", lambda X: pdask.add_sinusoidal(X((2, 2, 4)), positions=[0.0, np.nan]),
     lambda N: posenc.add_sinusoidal(N((2, 2, 4)), positions=[0.0, np.nan]), ValueError),
    ("base 1", lambda X: pdask.add_sinusoidal(X((2, 9, 4)), base=1.0),
     lambda N: posenc.add_sinusoidal(N((2, 9, 4)), base=1.0), ValueError),
    ("scale inf", lambda X: pdask.add_sinusoidal(X((2, 9, 4)), scale=np.inf),
     lambda N: posenc.add_sinusoidal(N((2, 9, 4)), scale=np.inf), ValueError),
    ("interleaved str", lambda X: pdask.add_sinusoidal(X((2, 9, 4)), interleaved="yes"),
     lambda N: posenc.add_sinusoidal(N((2, 9, 4)), interleaved="yes"), TypeError),
    ("out", lambda X: pdask.add_sinusoidal(X((2, 9, 4)), out=np.empty((2, 9, 4), np.float32)), None, TypeError),
    ("table odd dim", lambda X: pdask.sinusoidal(10, 5), lambda N: posenc.sinusoidal(10, 5), ValueError),
    ("table int dtype", lambda X: pdask.sinusoidal(10, 4, dtype=np.int32),
     lambda N: posenc.sinusoidal(10, 4, dtype=np.int32), TypeError),
    ("table freq_rule", lambda X: pdask.sinusoidal(10, 4, freq_rule="nope"),
     lambda N: posenc.sinusoidal(10, 4, freq_rule="nope"), ValueError),
    ("table negative n", lambda X: pdask.sinusoidal(-1, 4), lambda N: posenc.sinusoidal(-1, 4), ValueError),
    ("table bad chunks", lambda X: pdask.sinusoidal(10, 4, chunks=-3), None, ValueError),
    ("rope seq_axis", lambda X: pdask.apply_rope(X((2, 9, 2, 8)), seq_axis=-1),
     lambda N: posenc.apply_rope(N((2, 9, 2, 8)), seq_axis=-1), ValueError),
    ("rope odd head_dim", lambda X: pdask.apply_rope(X((2, 9, 2, 7))),
     lambda N: posenc.apply_rope(N((2, 9, 2, 7))), ValueError),
    ("rope rotary_dim", lambda X: pdask.apply_rope(X((2, 9, 2, 8)), rotary_dim=10),
     lambda N: posenc.apply_rope(N((2, 9, 2, 8)), rotary_dim=10), ValueError),
    ("rope scaling", lambda X: pdask.apply_rope(X((2, 9, 2, 8)), scaling={"type": "nope"}),
     lambda N: posenc.apply_rope(N((2, 9, 2, 8)), scaling={"type": "nope"}), ValueError),
    ("rope 2-D x", lambda X: pdask.apply_rope(X((9, 8))), lambda N: posenc.apply_rope(N((9, 8))), ValueError),
    ("rope positions length", lambda X: pdask.apply_rope(X((2, 9, 2, 8)), np.arange(8)),
     lambda N: posenc.apply_rope(N((2, 9, 2, 8)), np.arange(8)), ValueError),
    ("rope positions batch", lambda X: pdask.apply_rope(X((2, 9, 2, 8)), np.zeros((3, 9))),
     lambda N: posenc.apply_rope(N((2, 9, 2, 8)), np.zeros((3, 9))), ValueError),
    ("rope positions list 3-D", lambda X: pdask.apply_rope(X((2, 9, 2, 8)), [[[0] * 9]]),
     lambda N: posenc.apply_rope(N((2, 9, 2, 8)), [[[0] * 9]]), ValueError),
    ("rope positions list batch", lambda X: pdask.apply_rope(X((2, 9, 2, 8)), [[0] * 9] * 3),
     lambda N: posenc.apply_rope(N((2, 9, 2, 8)), [[0] * 9] * 3), ValueError),
    ("rope dask positions batch", lambda X: pdask.apply_rope(X((2, 9, 2, 8)), da.zeros((3, 9), chunks=2)),
     lambda N: posenc.apply_rope(N((2, 9, 2, 8)), np.zeros((3, 9))), ValueError),
    ("rope dask positions length", lambda X: pdask.apply_rope(X((2, 9, 2, 8)), da.zeros((2, 8), chunks=2)),
     lambda N: posenc.apply_rope(N((2, 9, 2, 8)), np.zeros((2, 8))), ValueError),
    ("rope dask positions bool", lambda X: pdask.apply_rope(X((2, 9, 2, 8)), da.zeros((2, 9), dtype=bool, chunks=2)),
     None, TypeError),
    ("rope positions inf", lambda X: pdask.apply_rope(X((2, 2, 2, 8)), [0.0, np.inf]),
     lambda N: posenc.apply_rope(N((2, 2, 2, 8)), [0.0, np.inf]), ValueError),
    ("rope offset and positions", lambda X: pdask.apply_rope(X((2, 9, 2, 8)), np.arange(9), offset=2),
     lambda N: posenc.apply_rope(N((2, 9, 2, 8)), np.arange(9), offset=2), ValueError),
    ("rope mrope section", lambda X: pdask.apply_rope(X((2, 9, 2, 8)), np.zeros((3, 9)), mrope_section=(1, 1, 1)),
     lambda N: posenc.apply_rope(N((2, 9, 2, 8)), np.zeros((3, 9)), mrope_section=(1, 1, 1)), ValueError),
    ("emb dtype", lambda X: pdask.embedding_add(X((2, 9, 4)), np.zeros((10, 4)), np.arange(9)),
     lambda N: posenc.embedding_add(N((2, 9, 4)), np.zeros((10, 4)), np.arange(9)), TypeError),
    ("emb dim", lambda X: pdask.embedding_add(X((2, 9, 4)), np.zeros((10, 3), np.float32), np.arange(9)),
     lambda N: posenc.embedding_add(N((2, 9, 4)), np.zeros((10, 3), np.float32), np.arange(9)), ValueError),
    ("emb range", lambda X: pdask.embedding_add(X((2, 9, 4)), np.zeros((5, 4), np.float32), np.arange(9)),
     lambda N: posenc.embedding_add(N((2, 9, 4)), np.zeros((5, 4), np.float32), np.arange(9)), IndexError),
    ("emb shape", lambda X: pdask.embedding_add(X((2, 9, 4)), np.zeros((10, 4), np.float32), np.arange(8)),
     lambda N: posenc.embedding_add(N((2, 9, 4)), np.zeros((10, 4), np.float32), np.arange(8)), ValueError),
    ("emb float positions", lambda X: pdask.embedding_add(X((2, 9, 4)), np.zeros((10, 4), np.float32),
                                                         np.arange(9.0)),
     lambda N: posenc.embedding_add(N((2, 9, 4)), np.zeros((10, 4), np.float32), np.arange(9.0)), TypeError),
    ("emb dask positions shape", lambda X: pdask.embedding_add(X((2, 9, 4)), np.zeros((10, 4), np.float32),
                                                              da.zeros((3, 9), dtype=np.int64, chunks=2)), None, ValueError),
    ("emb dask positions float", lambda X: pdask.embedding_add(X((2, 9, 4)), np.zeros((10, 4), np.float32),
                                                              da.zeros((9,), chunks=2)), None, TypeError),
    ("emb dask table", lambda X: pdask.embedding_add(X((2, 9, 4)), da.zeros((10, 4), dtype=np.float32), np.arange(9)),
     None, TypeError),
    ("alibi 2-D", lambda X: pdask.add_alibi(X((4, 4))), lambda N: posenc.add_alibi(N((4, 4))), ValueError),
    ("alibi no heads", lambda X: pdask.add_alibi(X((0, 4, 4))), lambda N: posenc.add_alibi(N((0, 4, 4))),
     ValueError),
    ("alibi slopes", lambda X: pdask.add_alibi(X((3, 4, 4)), slopes=[1.0, 2.0]),
     lambda N: posenc.add_alibi(N((3, 4, 4)), slopes=[1.0, 2.0]), ValueError),
    ("alibi offset bool", lambda X: pdask.add_alibi(X((3, 4, 4)), offset=True),
     lambda N: posenc.add_alibi(N((3, 4, 4)), offset=True), TypeError),
    ("alibi int scores", lambda X: pdask.add_alibi(X((3, 4, 4), np.int64)),
     lambda N: posenc.add_alibi(N((3, 4, 4), np.int64)), TypeError),
    ("t5 heads", lambda X: pdask.add_t5_bias(X((3, 4, 4)), np.zeros((32, 2), np.float32)),
     lambda N: posenc.add_t5_bias(N((3, 4, 4)), np.zeros((32, 2), np.float32)), ValueError),
    ("t5 buckets", lambda X: pdask.add_t5_bias(X((3, 4, 4)), np.zeros((2, 3), np.float32)),
     lambda N: posenc.add_t5_bias(N((3, 4, 4)), np.zeros((2, 3), np.float32)), ValueError),
    ("t5 max_distance", lambda X: pdask.add_t5_bias(X((3, 4, 4)), np.zeros((32, 3), np.float32), max_distance=4),
     lambda N: posenc.add_t5_bias(N((3, 4, 4)), np.zeros((32, 3), np.float32), max_distance=4), ValueError),
]


@pytest.mark.parametrize("name, call, twin, error", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_bad_arguments_raise_when_the_graph_is_built(name, call, twin, error):
    """Each bad argument raises from the posenc.dask call itself (the input's blocks are never computed),
    with the in-memory function's exception type and message."""
    def lazy(shape, dtype=np.float32):
        return exploding(shape, dtype, tuple(max(1, n // 2) for n in shape))

    with pytest.raises(error) as caught:
        call(lazy)
    if twin is not None:
        with pytest.raises(error) as expected:
            twin(lambda shape, dtype=np.float32: np.zeros(shape, dtype))
        assert str(caught.value) == str(expected.value)


def test_lazy_positions_are_checked_when_computed():
    """Values of a dask positions array are only known on the workers: the same errors, raised there."""
    x = da.zeros((2, 9, 4), dtype=np.float32, chunks=(1, 4, 4))
    bad = da.from_array(np.full((2, 9), 10), chunks=(1, 4))
    with pytest.raises(IndexError, match="outside the table's range"):
        threaded(pdask.embedding_add(x, np.zeros((5, 4), np.float32), bad))
    nan = da.from_array(np.full((2, 9), np.nan), chunks=(1, 4))
    with pytest.raises(ValueError, match="positions"):
        threaded(pdask.apply_rope(x.reshape(2, 9, 1, 4), nan))


# ---------------------------------------------------------------- dask.distributed with worker processes

@pytest.fixture(scope="module")
def cluster_client():
    distributed = pytest.importorskip("distributed", reason="the cluster test needs dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        yield client


@pytest.mark.slow
def test_distributed_worker_processes(cluster_client):
    rng = np.random.default_rng(7)
    x = data((3, 77, 4, 8), np.float32)
    positions = np.cumsum(rng.integers(1, 3, (3, 77)), axis=1)
    s = data((2, 5, 33, 41), np.float64)
    table = data((32, 5), np.float64)
    xd = da.from_array(x, chunks=(2, 30, 3, 8))
    results = cluster_client.compute([
        pdask.add_sinusoidal(xd.reshape(3, 77, 32), offset=5),
        pdask.apply_rope(xd, da.from_array(positions, chunks=(2, 30))),
        pdask.embedding_add(xd.reshape(3, 77, 32), data((200, 32), np.float32), positions),
        pdask.add_alibi(da.from_array(s, chunks=(1, 2, 10, 17)), offset=8),
        pdask.add_t5_bias(da.from_array(s, chunks=(1, 2, 10, 17)), table, offset=8),
        pdask.sinusoidal(300, 16, chunks=70),
    ], sync=True)
    expected = [
        posenc.add_sinusoidal(x.reshape(3, 77, 32), offset=5),
        posenc.apply_rope(x, positions),
        posenc.embedding_add(x.reshape(3, 77, 32), data((200, 32), np.float32), positions),
        posenc.add_alibi(s, offset=8),
        posenc.add_t5_bias(s, table, offset=8),
        posenc.sinusoidal(300, 16),
    ]
    for got, want in zip(results, expected):
        same(got, want)
    # the workers are other processes, each running posenc on one thread per Dask thread
    pids = cluster_client.run(lambda: __import__("os").getpid())
    assert len(set(pids.values())) == 2 and __import__("os").getpid() not in pids.values()
    threads = cluster_client.run(lambda: __import__("posenc").get_num_threads())
    assert set(threads.values()) == {1}


@pytest.mark.parametrize("name", pdask.__all__)
def test_signatures_are_the_in_memory_ones(name):
    """Each lazy function takes the in-memory function's parameters, with its defaults, less the few it does not
    support and plus sinusoidal's chunks; its docstring names every one; a call that does not fit raises Python's
    own TypeError; Sphinx reads the defaults' spelling from its source."""
    import inspect

    lazy, memory = getattr(pdask, name), getattr(posenc, name)
    unsupported = {"apply_rope": {"cos", "sin"}, "add_alibi": {"num_heads"}, "add_t5_bias": {"num_heads"}}
    expected = [p for p in inspect.signature(memory).parameters.values() if p.name not in unsupported.get(name, ())]
    if name == "sinusoidal":
        expected.insert(-1, inspect.Parameter("chunks", inspect.Parameter.KEYWORD_ONLY, default="auto",
                                              annotation="Any"))
    assert list(inspect.signature(lazy).parameters.values()) == expected
    parameters = lazy.__doc__.split("Parameters\n    ----------\n")[1].split("Returns\n")[0]
    for p in expected:
        assert p.name in parameters
    with pytest.raises(TypeError, match=rf"^{name}\(\) got an unexpected keyword argument 'nope'$"):
        lazy(None, nope=1)
    assert inspect.getsource(lazy).startswith(f"def {name}(")


def test_without_dask_import_fails_with_the_extra_named():
    from helpers import run_python

    result = run_python("""
        import sys
        sys.modules['dask'] = None; sys.modules['dask.array'] = None   # as if Dask were not installed
        import posenc
        try:
            import posenc.dask
        except ImportError as e:
            print('ImportError:', e)
    """)
    assert "pip install 'posenc[dask]'" in result.stdout, result.stderr
