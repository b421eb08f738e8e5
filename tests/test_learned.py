"""The learned family: lookup/add/grad (every ISA) against closed forms and the native paths against the
reference, gradient determinism, resizing against PyTorch and exact identities, the module.
Argument errors are in the hostile-input table (SPECS, at the end of this module)."""

from __future__ import annotations

from typing import Any, Callable, Dict

import numpy as np
import pytest
from hypothesis import given, strategies as st

import posenc
from posenc import reference as ref

from helpers import FLOAT_DTYPES, Peer, assert_bitwise_equal, assert_close_to_float64, eps, have_peer, needs, rand, strided_view
from conftest import requires_native
from hostile import (BIG, HUGE, SIZE_ERRORS, Check, Raises, Spec, byteswapped, empty_of, misaligned, negative_strides,
                     stepped)

torch = Peer("torch")  # for resize parity and tensors

INT_DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


def random_table(rng, n, dim, dtype):
    return rng.standard_normal((n, dim)).astype(dtype)


# ---------------------------------------------------------------- lookup

@given(
    n=st.integers(1, 70),
    dim=st.integers(0, 40),
    pos_shape=st.lists(st.integers(0, 5), min_size=0, max_size=3),
    int_dtype=st.sampled_from(INT_DTYPES),
    dtype=st.sampled_from(FLOAT_DTYPES),
    mode=st.sampled_from(["new", "out", "strided"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_lookup_is_fancy_indexing(isa, n, dim, pos_shape, int_dtype, dtype, mode, seed):
    rng = np.random.default_rng(seed)
    table = random_table(rng, n, dim, dtype)
    hi = min(n, int(np.iinfo(int_dtype).max) + 1)
    positions = rng.integers(0, hi, tuple(pos_shape)).astype(int_dtype)
    expected = table[positions.astype(np.int64)]  # closed form: NumPy fancy indexing
    if mode == "strided":
        table = strided_view(table, rng)
    if mode == "new":
        got = posenc.embedding_lookup(table, positions)
    else:
        out = strided_view(np.zeros(tuple(pos_shape) + (dim,), dtype), rng) if mode == "strided" else None
        out = np.zeros(tuple(pos_shape) + (dim,), dtype) if out is None else out
        got = posenc.embedding_lookup(table, positions, out=out)
        assert got is out
    assert_bitwise_equal(np.asarray(got), expected)


# ---------------------------------------------------------------- add

@given(
    lead=st.lists(st.integers(0, 4), min_size=0, max_size=3),
    trailing=st.integers(0, 3),
    n=st.integers(1, 50),
    dim=st.integers(1, 40),
    int_dtype=st.sampled_from([np.int32, np.int64, np.uint16, np.uint64]),
    dtype=st.sampled_from(FLOAT_DTYPES),
    mode=st.sampled_from(["new", "inplace", "strided", "strided-inplace"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_add_is_one_rounded_sum_in_the_dtype(isa, lead, trailing, n, dim, int_dtype, dtype, mode, seed):
    rng = np.random.default_rng(seed)
    shape = tuple(lead) + (dim,)
    pos_shape = tuple(lead)[len(lead) - min(trailing, len(lead)):]
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    table = random_table(rng, n, dim, dtype)
    positions = rng.integers(0, n, pos_shape).astype(int_dtype)
    # Independent closed form: one correctly rounded addition in the dtype itself (NumPy/ml_dtypes
    # add the 16-bit types through float32, where the sum is exact before the one rounding).
    expected = (x + table[positions.astype(np.int64)]).astype(dtype)
    if mode.startswith("strided"):
        x = strided_view(x, rng)
        table = strided_view(table, rng)
    if mode.endswith("inplace"):
        got = posenc.embedding_add(x, table, positions, out=x)
        assert got is x
    else:
        got = posenc.embedding_add(x, table, positions)
    assert_bitwise_equal(np.asarray(got), expected)


@pytest.mark.parametrize("dim", list(range(1, 34)) + [63, 64, 65, 127, 129])
def test_every_vector_tail(native_isa, dim):
    rng = np.random.default_rng(dim)
    for dtype in FLOAT_DTYPES:
        table = random_table(rng, 9, dim, dtype)
        x = rng.standard_normal((3, 7, dim)).astype(dtype)
        positions = rng.integers(0, 9, 7)
        assert_bitwise_equal(posenc.embedding_add(x, table, positions), ref.embedding_add(x, table, positions))
        assert_bitwise_equal(posenc.embedding_lookup(table, positions), table[positions])
        g = rng.standard_normal((3, 7, dim)).astype(dtype)
        assert_bitwise_equal(posenc.embedding_grad(g, positions, 9), ref.embedding_grad(g, positions, 9))


def test_add_broadcast_semantics(isa):
    """[seq] positions serve every batch; [batch, seq] positions give each batch its own."""
    table = np.arange(40, dtype=np.float64).reshape(10, 4)
    x = np.zeros((2, 3, 4))
    np.testing.assert_array_equal(posenc.embedding_add(x, table, [4, 0, 9]), np.broadcast_to(table[[4, 0, 9]], x.shape))
    per_batch = np.array([[1, 2, 3], [7, 7, 0]])
    np.testing.assert_array_equal(posenc.embedding_add(x, table, per_batch), table[per_batch])
    # A single row, a single position.
    np.testing.assert_array_equal(posenc.embedding_add(np.ones(4), table, 2), 1 + table[2])
    # [heads] positions under x[seq, heads, dim]: trailing part of x.shape[:-1].
    np.testing.assert_array_equal(posenc.embedding_add(np.zeros((5, 2, 4)), table, [3, 8])[4], table[[3, 8]])


def test_add_strided_view_of_a_fused_buffer(isa):
    buf = np.random.default_rng(4).standard_normal((2, 50, 3, 64)).astype(np.float32)
    table = np.random.default_rng(5).standard_normal((60, 64)).astype(np.float32)
    before = buf.copy()
    view = buf[:, :, 1, :]
    posenc.embedding_add(view, table, np.arange(5, 55), out=view)
    np.testing.assert_array_equal(buf[:, :, 0], before[:, :, 0])
    np.testing.assert_array_equal(buf[:, :, 2], before[:, :, 2])
    np.testing.assert_array_equal(buf[:, :, 1], before[:, :, 1] + table[5:55])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "strided x", "strided table", "new array"])
@pytest.mark.parametrize("streams", [0, 8, 2**63 - 1])  # always in memory order, the Zen 4's limit, never
def test_add_over_many_batches_at_every_thread_count(isa, dtype, layout, streams):
    """Many batches sharing [seq] positions (rows in memory order past `streams` rows far apart in flight,
    position by position below it: learned.cpp): every row gets its own position's row, at 1, 2 and 3
    threads, blocks of rows split across threads and across batches, in place or not."""
    from posenc import _backend

    if _backend.native is None:
        pytest.skip("needs the native core")
    previous = _backend.native.learned_position_streams()
    _backend.native.use_learned_position_streams(streams)
    rng = np.random.default_rng(7)
    batches, seq, dim = 12, 300, 96  # 1.3 MiB of float32: blocks of 1 MiB cut a batch
    table = random_table(rng, 400, dim, dtype)
    positions = rng.permutation(400)[:seq]
    x0 = (rng.standard_normal((batches, seq, dim)) * 4).astype(dtype)
    expected = (x0 + table[positions]).astype(dtype)
    try:
        for threads in (1, 2, 3):
            posenc.set_num_threads(threads)
            x = x0.copy()
            t = strided_view(table, rng) if layout == "strided table" else table
            if layout == "strided x":
                x = strided_view(x, rng)
            got = posenc.embedding_add(x, t, positions) if layout == "new array" else posenc.embedding_add(x, t, positions, out=x)
            assert_bitwise_equal(np.asarray(got), expected)
    finally:
        posenc.set_num_threads(None)
        _backend.native.use_learned_position_streams(previous)


def test_misaligned_byteswapped_and_torch(isa):
    raw = np.zeros(4 * 10 * 8 + 1, np.uint8)
    x = np.frombuffer(raw.data, dtype=np.float32, count=80, offset=1).reshape(10, 8)
    assert not x.flags.aligned
    table = np.arange(16 * 8, dtype=np.float32).reshape(16, 8)
    pos = np.arange(3, 13)
    np.testing.assert_array_equal(posenc.embedding_add(x, table, pos), table[pos])
    np.testing.assert_array_equal(posenc.embedding_lookup(table.astype(">f4"), pos), table[pos])
    np.testing.assert_array_equal(posenc.embedding_grad(table.astype(">f4")[:10], pos, 16)[3:13], table[:10])
    if have_peer(torch):
        t = torch.zeros(10, 8)
        assert posenc.embedding_add(t, table, pos, out=t) is t
        np.testing.assert_array_equal(t.numpy(), table[pos])


# ---------------------------------------------------------------- grad

@given(
    lead=st.lists(st.integers(0, 6), min_size=1, max_size=3),
    trailing=st.integers(1, 3),
    n=st.integers(0, 30),
    dim=st.integers(0, 36),
    dtype=st.sampled_from(FLOAT_DTYPES),
    strided=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_grad_matches_reference_bit_for_bit(native_isa, lead, trailing, n, dim, dtype, strided, seed):
    rng = np.random.default_rng(seed)
    if n == 0:  # no row can map into an empty table: positions (all of grad's leading axes) are empty
        lead = [0] + lead
        pos_shape = tuple(lead)
    else:
        pos_shape = tuple(lead)[len(lead) - min(trailing, len(lead)):]
    positions = rng.integers(0, max(1, n // 3 + 1), pos_shape)  # many repeats
    grad = (rng.standard_normal(tuple(lead) + (dim,)) * 10 ** rng.uniform(-3, 3, tuple(lead) + (dim,))).astype(dtype)
    expected = ref.embedding_grad(grad, positions, n)
    if strided:
        grad = strided_view(grad, rng)
    got = posenc.embedding_grad(grad, positions, n)
    assert_bitwise_equal(got, expected)


def test_grad_closed_form_and_summation_order(isa):
    """Each position's rows summed in order of appearance, float32 accumulation, written as a plain loop."""
    rng = np.random.default_rng(8)
    for dtype in FLOAT_DTYPES:
        acc_dtype = np.float64 if dtype == np.float64 else np.float32
        grad = (rng.standard_normal((3, 40, 5)) * 10 ** rng.uniform(-4, 4, (3, 40, 5))).astype(dtype)
        positions = rng.integers(0, 6, (3, 40))
        expected = np.zeros((7, 5), acc_dtype)
        for k, p in enumerate(positions.reshape(-1)):
            expected[p] += grad.reshape(-1, 5)[k].astype(acc_dtype)
        assert_bitwise_equal(posenc.embedding_grad(grad, positions, 7), expected.astype(dtype))


def test_grad_sums_start_from_positive_zero(isa):
    """np.add.at adds into zeros: rows of -0.0 sum to +0.0, one row or several (0 + -0 is +0), and an
    empty position stays +0.0; in rows wide and narrow, contiguous and strided, in every format."""
    for dtype in FLOAT_DTYPES:
        for dim in (3, 16, 100):
            grad = np.full((2, 5, dim), -0.0, dtype)
            grad[1, 4, 1] = 2.0  # position 3: -0.0 then 2.0
            positions = [[0, 1, 1, 3, 3], [1, 1, 0, 0, 3]]
            expected = ref.embedding_grad(grad, positions, 5)
            assert not np.signbit(expected[[0, 1, 2]]).any()
            assert_bitwise_equal(posenc.embedding_grad(grad, positions, 5), expected)
            assert_bitwise_equal(posenc.embedding_grad(np.repeat(grad, 2, axis=-1)[..., ::2], positions, 5), expected)


def test_grad_finite_differences(isa):
    """d/dT Σ w·(x + T[pos]) is embedding_grad(w, pos): central differences in float64."""
    rng = np.random.default_rng(9)
    n, dim = 6, 5
    table = rng.standard_normal((n, dim))
    x = rng.standard_normal((2, 9, dim))
    w = rng.standard_normal((2, 9, dim))
    pos = rng.integers(0, n - 1, (2, 9))  # the last position is unused: its gradient is 0

    def loss(t):
        return float((w * posenc.embedding_add(x, t, pos)).sum())

    g = posenc.embedding_grad(w, pos, n)
    h = 1e-6
    numeric = np.zeros_like(table)
    for i in range(n):
        for j in range(dim):
            e = np.zeros_like(table)
            e[i, j] = h
            numeric[i, j] = (loss(table + e) - loss(table - e)) / (2 * h)
    np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-8)
    assert (g[n - 1] == 0).all()
    # The gradient of a lookup is the same scatter-add.
    np.testing.assert_allclose((w * posenc.embedding_lookup(table, pos)).sum(), (g * table).sum(), rtol=1e-12)


@pytest.mark.parametrize("layout", ["uniform", "skewed", "one position", "sorted"])
def test_grad_deterministic_across_threads_and_runs(native_isa, layout):
    rng = np.random.default_rng(10)
    rows, n, dim = 20000, 700, 64
    grad = (rng.standard_normal((rows, dim)) * 10 ** rng.uniform(-3, 3, (rows, dim))).astype(np.float32)
    positions = {
        "uniform": rng.integers(0, n, rows),
        "skewed": np.minimum(rng.geometric(0.02, rows), n - 1),
        "one position": np.full(rows, 5),
        "sorted": np.sort(rng.integers(0, n, rows)),
    }[layout]
    expected = ref.embedding_grad(grad, positions, n)
    try:
        for threads in (1, 2, 3, 1, 2):
            posenc.set_num_threads(threads)
            assert_bitwise_equal(posenc.embedding_grad(grad, positions, n), expected)
    finally:
        posenc.set_num_threads(None)


def test_grad_accumulates_in_float32_for_16_bit(isa):
    """2048 float16 ones at one position: float16 accumulation would stop at 2048's spacing; float32 does not."""
    g = np.full((4097, 1), 1.0, np.float16)
    got = posenc.embedding_grad(g, np.zeros(4097, np.int64), 1)
    assert got.dtype == np.float16 and float(got[0, 0]) == float(np.float16(4097.0))
    g32 = np.full((3, 1), [[1.0], [2.0**-24], [2.0**-24]], np.float32)
    # In order: (1 + 2^-24) + 2^-24 = 1 twice rounded (ties to even), not 1 + 2^-23.
    assert posenc.embedding_grad(g32, [0, 0, 0], 1)[0, 0] == np.float32(1.0)


# ---------------------------------------------------------------- bounds and bad input

@requires_native
def test_lookup_parts_binding_refuses_before_writing():
    """The row gather's binding (DETR, concat_positional, the grids) checks every table, index and
    repeat and the columns before its kernel runs: a clear exception and nothing written."""
    from posenc._backend import native

    a, b = np.arange(12, dtype=np.float32).reshape(4, 3), np.arange(10, dtype=np.float32).reshape(5, 2)
    out = np.full((2, 3, 5), 7, np.float32)
    ia, ib = np.arange(4, dtype=np.int64), np.array([0, 4, 1], np.int64)
    native.lookup_parts([(a, np.array([3, 0, 1, 2, 0, 1], np.int64)), (b, ib)], out)
    np.testing.assert_array_equal(out[1, 0], [6, 7, 8, 0, 1])  # row 3: a's row 2, b's row 0
    np.testing.assert_array_equal(out[0, 1], [0, 1, 2, 8, 9])  # row 1: a's row 0, b's row 4
    out[...] = 7
    for parts, error, match in [
        ([(a, np.array([0, 4, 1], np.int64)), (b, ib)], IndexError, r"part 0's index\[1\] = 4 is outside the table's \[0, 4\)"),
        ([(a, ia[:3]), (b, np.array([-1, 0, 1], np.int64))], IndexError, r"part 1's index\[0\] = -1"),
        ([(a, ia), (b, ib)], ValueError, "part 0's index must repeat a whole number of times"),
        ([(a, ia[:3]), (a, ia[:3])], ValueError, "the parts' columns, in order"),
        ([(a, ia[:3].astype(np.int32)), (b, ib)], ValueError, "part 0's index must be an aligned, contiguous int64"),
        ([(a.astype(np.float64), ia[:3]), (b, ib)], ValueError, "part 0 must be a .* of out's dtype"),
        ([], ValueError, "1 to 4 parts"),
        ([(b[:, :1], ib)] * 5, ValueError, "1 to 4 parts"),
    ]:
        with pytest.raises(error, match=match):
            native.lookup_parts(parts, out)
        assert (out == 7).all()


def test_out_of_range_names_first_bad_entry_and_writes_nothing(backend):
    table = np.zeros((8, 4), np.float32)
    x = np.full((2, 3, 4), 7, np.float32)
    with pytest.raises(IndexError, match=r"positions\[1, 2\] = 8 is outside .*\[0, 8\)"):
        posenc.embedding_add(x, table, [[0, 1, 2], [3, 4, 8]], out=x)
    assert (x == 7).all()
    with pytest.raises(IndexError, match=r"positions\[1\] = -1 "):
        posenc.embedding_add(x, table, [0, -1, 9], out=x)  # never wraps around
    assert (x == 7).all()
    out = np.full((3, 4), 7, np.float32)
    with pytest.raises(IndexError, match=r"positions\[0\] = 18446744073709551615"):
        posenc.embedding_lookup(table, np.array([2**64 - 1, 0, 0], np.uint64), out=out)
    assert (out == 7).all()
    with pytest.raises(IndexError, match=r"positions = 8 "):
        posenc.embedding_lookup(table, np.int16(8))
    with pytest.raises(IndexError, match=r"positions\[2\] = 5 .*\[0, 5\)"):
        posenc.embedding_grad(np.zeros((3, 4)), [0, 4, 5], 5)
    with pytest.raises(IndexError):
        posenc.embedding_grad(np.zeros((1, 4)), [0], 0)


def test_empty_inputs(backend):
    table = np.ones((4, 3), np.float32)
    assert posenc.embedding_lookup(table, []).shape == (0, 3)
    assert posenc.embedding_lookup(table, np.zeros((2, 0), np.int8)).shape == (2, 0, 3)
    assert posenc.embedding_add(np.zeros((0, 5, 3), np.float32), table, [0, 1, 2, 3, 0]).shape == (0, 5, 3)
    g = posenc.embedding_grad(np.zeros((0, 3), np.float32), np.zeros(0, np.int64), 4)
    assert g.shape == (4, 3) and (g == 0).all()
    assert posenc.embedding_grad(np.zeros((2, 0)), [0, 1], 2).shape == (2, 0)
    assert posenc.embedding_grad(np.zeros((0, 3)), [], 0).shape == (0, 3)


# ---------------------------------------------------------------- resize

def torch_resize_loop(values: np.ndarray, out_size: int, method: str) -> np.ndarray:
    """PyTorch's CPU upsample_linear1d / bicubic source-index rules, one output at a time (float64)."""
    in_size = values.shape[0]
    scale = in_size / out_size
    out = np.zeros((out_size,) + values.shape[1:])
    for i in range(out_size):
        src = scale * (i + 0.5) - 0.5
        if method == "linear":
            src = max(src, 0.0)
            i0 = min(int(np.floor(src)), in_size - 1)
            lam = src - i0
            i1 = i0 + 1 if i0 < in_size - 1 else i0
            out[i] = (1 - lam) * values[i0] + lam * values[i1]
        else:
            i0 = int(np.floor(src))
            t = src - i0
            a = -0.75
            c1 = lambda s: ((a + 2) * s - (a + 3)) * s * s + 1  # noqa: E731
            c2 = lambda s: ((a * s - 5 * a) * s + 8 * a) * s - 4 * a  # noqa: E731
            for k, wgt in zip(range(-1, 3), (c2(t + 1), c1(t), c1(1 - t), c2(2 - t))):
                out[i] += wgt * values[min(max(i0 + k, 0), in_size - 1)]
    return out


@pytest.mark.parametrize("old,new", [(1, 5), (2, 4), (7, 3), (14, 16), (16, 14), (10, 10), (5, 23), (24, 7)])
def test_resize_closed_form(backend, old, new):
    rng = np.random.default_rng(old * 100 + new)
    table = rng.standard_normal((old, 6))
    np.testing.assert_allclose(posenc.resize_table(table, new), torch_resize_loop(table, new, "linear"), rtol=0, atol=1e-14)
    np.testing.assert_allclose(posenc.resize_table(table, new, "cubic"), torch_resize_loop(table, new, "cubic"), rtol=0, atol=1e-13)
    grid = rng.standard_normal((old, old + 1, 3))
    for method, one_axis in (("bilinear", "linear"), ("bicubic", "cubic")):
        expected = torch_resize_loop(grid, new, one_axis)
        expected = np.swapaxes(torch_resize_loop(np.swapaxes(expected, 0, 1), new + 2, one_axis), 0, 1)
        np.testing.assert_allclose(posenc.resize_table_2d(grid, new, new + 2, method), expected, rtol=0, atol=1e-13)
    assert posenc.resize_table(np.array([[0.0], [4.0]]), 4).ravel().tolist() == [0.0, 1.0, 3.0, 4.0]


def test_resize_beyond_the_taps_cache(backend):
    """Output sizes above the taps cache (4096 rows) compute their taps on each call, by the same rule."""
    table = np.random.default_rng(12).standard_normal((7, 3))
    for method in ("linear", "cubic"):
        expected = torch_resize_loop(table, 5000, method)
        np.testing.assert_allclose(posenc.resize_table(table, 5000, method), expected, rtol=0, atol=1e-13)


@needs(torch)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("old,new", [((14, 14), (16, 16)), ((16, 16), (14, 14)), ((7, 9), (24, 5)), ((1, 3), (4, 4)), ((32, 32), (37, 20))])
def test_resize_matches_torch_interpolate(backend, dtype, old, new):
    """float64: the same algorithm to rounding. float32: PyTorch computes the source coordinate
    (in/out)·(i + 0.5) − 0.5 in float32, off by up to ~2 ulp of the coordinate (in·eps), which moves
    an interpolated value by that much times the difference between neighbours (≤ 2·max|v|, and up to
    1.5× that through the cubic weights); posenc computes it in float64. The tolerance is that budget."""
    import torch.nn.functional as F

    rng = np.random.default_rng(sum(old) + sum(new))
    grid = rng.standard_normal(old + (8,)).astype(dtype)
    largest = max(old[0] * old[1], *new) * 3
    atol = 1e-12 if dtype == np.float64 else float(np.finfo(np.float32).eps) * (8 + 6 * largest) * float(np.abs(grid).max())
    t = torch.from_numpy(grid).permute(2, 0, 1)[None]
    for method in ("bilinear", "bicubic"):
        expected = F.interpolate(t, size=new, mode=method, align_corners=False, antialias=False)[0].permute(1, 2, 0).numpy()
        np.testing.assert_allclose(posenc.resize_table_2d(grid, *new, method=method), expected, rtol=0, atol=atol)
    table = grid.reshape(-1, 8)
    expected = F.interpolate(torch.from_numpy(table).T[None], size=new[0] * 3, mode="linear", align_corners=False)[0].T.numpy()
    np.testing.assert_allclose(posenc.resize_table(table, new[0] * 3), expected, rtol=0, atol=atol)
    # One-axis cubic is the bicubic of a width-1 grid.
    expected = F.interpolate(torch.from_numpy(table).T[None, :, :, None], size=(new[1], 1), mode="bicubic", align_corners=False)
    np.testing.assert_allclose(posenc.resize_table(table, new[1], "cubic"), expected[0, :, :, 0].T.numpy(), rtol=0, atol=atol)


@given(
    old=st.tuples(st.integers(1, 12), st.integers(1, 12)),
    new=st.tuples(st.integers(1, 30), st.integers(1, 30)),
    dim=st.integers(1, 37),
    dtype=st.sampled_from(FLOAT_DTYPES),
    cubic=st.booleans(),
    strided=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_resize_native_matches_reference(native_isa, old, new, dim, dtype, cubic, strided, seed):
    """Same taps, same formula; the kernel may fuse multiply-adds, so float64 sums may differ in the
    last bits: within one ulp of the result dtype (and 16 float64 ulps of the largest input for float64)."""
    rng = np.random.default_rng(seed)
    grid = rng.standard_normal(old + (dim,)).astype(dtype)
    table = grid.reshape(-1, dim)
    if strided:
        grid, table = strided_view(grid, rng), strided_view(table, rng)
    pairs = [
        (posenc.resize_table(table, new[0], "cubic" if cubic else "linear"),
         ref.resize_table(table, new[0], "cubic" if cubic else "linear")),
        (posenc.resize_table_2d(grid, *new, method="bicubic" if cubic else "bilinear"),
         ref.resize_table_2d(grid, *new, method="bicubic" if cubic else "bilinear")),
    ]
    scale = float(np.abs(grid.astype(np.float64)).max())
    for got, expected in pairs:
        assert got.dtype == expected.dtype and got.shape == expected.shape
        g64, e64 = got.astype(np.float64), expected.astype(np.float64)
        if np.dtype(dtype) == np.float64:
            tol = 16 * np.finfo(np.float64).eps * scale
        else:
            subnormal = 2.0**-24 if np.dtype(dtype) == np.float16 else 0.0
            tol = eps(dtype) * np.abs(e64) + 16 * np.finfo(np.float64).eps * scale + subnormal
        assert (np.abs(g64 - e64) <= tol).all()


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_resize_identities(backend, dtype):
    rng = np.random.default_rng(11)
    table = rng.standard_normal((12, 5)).astype(dtype)
    grid = rng.standard_normal((6, 7, 5)).astype(dtype)
    # Same size: an exact copy (NaN and infinities too), never the same object.
    table[0, 0] = np.nan
    same = posenc.resize_table(table, 12)
    assert same is not table
    assert_bitwise_equal(same, table)
    assert_bitwise_equal(posenc.resize_table_2d(grid, 6, 7, "bilinear"), grid)
    assert_bitwise_equal(posenc.resize_table_2d(grid, 6, 7, "bicubic"), grid)
    # Constants stay exact through any resize (the weights sum to 1).
    const = np.full((12, 5), 0.3, dtype)
    for n in (1, 5, 12, 29, 100):
        for method in ("linear", "cubic"):
            assert (posenc.resize_table(const, n, method) == const[0, 0]).all()
    cgrid = np.full((6, 7, 5), -2.5, dtype)
    for method in ("bilinear", "bicubic"):
        assert (posenc.resize_table_2d(cgrid, 13, 4, method) == -2.5).all()
    # Up by an odd factor then down by it: the original exactly (every third sample lands on a source row).
    for method in ("linear", "cubic"):
        up = posenc.resize_table(table[1:], 33, method)
        assert_bitwise_equal(posenc.resize_table(up, 11, method), table[1:])
    for method in ("bilinear", "bicubic"):
        up = posenc.resize_table_2d(grid, 18, 35, method)
        assert_bitwise_equal(posenc.resize_table_2d(up, 6, 7, method), grid)


def test_resize_keeps_linear_ramps(backend):
    """Linear resampling reproduces a ramp exactly wherever no border sample is clamped; any method
    returns it exactly after up-then-down by an odd factor. (Keys' cubic with a = -0.75, PyTorch's
    choice, reproduces constants but not ramps: only a = -0.5 does, so it is not checked mid-way.)"""
    slope = np.array([1.0, -0.5, 3.0])
    ramp = np.arange(16, dtype=np.float64)[:, None] * slope + 2.0
    up = posenc.resize_table(ramp, 32)
    x = (np.arange(32) + 0.5) / 2 - 0.5  # source coordinates of the upsampled rows
    np.testing.assert_allclose(up[1:-1], 2.0 + x[1:-1, None] * slope, rtol=0, atol=1e-13)
    np.testing.assert_allclose(posenc.resize_table(up, 16)[1:-1], ramp[1:-1], rtol=0, atol=1e-13)
    for method in ("linear", "cubic"):
        back = posenc.resize_table(posenc.resize_table(ramp, 48, method), 16, method)
        np.testing.assert_allclose(back, ramp, rtol=0, atol=1e-13)
    grid = np.add.outer(np.arange(8.0) * 0.25, np.arange(9.0) * -1.5)[..., None]
    for method in ("bilinear", "bicubic"):
        back = posenc.resize_table_2d(posenc.resize_table_2d(grid, 24, 27, method), 8, 9, method)
        np.testing.assert_allclose(back, grid, rtol=0, atol=1e-13)
    up = posenc.resize_table_2d(grid, 16, 18, "bilinear")
    ys, xs = (np.arange(16) + 0.5) / 2 - 0.5, (np.arange(18) + 0.5) / 2 - 0.5
    np.testing.assert_allclose(up[1:-1, 1:-1, 0], np.add.outer(ys[1:-1] * 0.25, xs[1:-1] * -1.5), rtol=0, atol=1e-13)


# ---------------------------------------------------------------- the module

def test_module_init_and_seed(backend):
    a = posenc.LearnedPositionalEmbedding(64, 16, seed=123)
    b = posenc.LearnedPositionalEmbedding(64, 16, seed=123)
    c = posenc.LearnedPositionalEmbedding(64, 16, seed=124)
    assert_bitwise_equal(a.weight, b.weight)
    assert not np.array_equal(a.weight, c.weight)
    assert a.weight.dtype == np.float32 and a.weight.shape == (64, 16)
    expected = (np.random.default_rng(123).standard_normal((64, 16)) * 0.02).astype(np.float32)
    assert_bitwise_equal(a.weight, expected)
    assert abs(float(a.weight.std()) - 0.02) < 0.003
    wide = posenc.LearnedPositionalEmbedding(8, 4, std=1.5, seed=1, dtype=np.float64)
    np.testing.assert_array_equal(wide.weight, np.random.default_rng(1).standard_normal((8, 4)) * 1.5)
    assert (posenc.LearnedPositionalEmbedding(5, 3, init="zeros").weight == 0).all()
    for dtype in FLOAT_DTYPES:
        s = posenc.LearnedPositionalEmbedding(10, 8, init="sinusoidal", dtype=dtype)
        assert_bitwise_equal(s.weight, posenc.sinusoidal(10, 8, dtype=dtype))
    assert (a.num_positions, a.dim, a.dtype) == (64, 16, np.float32)
    assert "num_positions=64" in repr(a)


def test_module_forward_backward(backend):
    emb = posenc.LearnedPositionalEmbedding(32, 8, seed=0)
    x = np.random.default_rng(1).standard_normal((2, 5, 8)).astype(np.float32)
    np.testing.assert_array_equal(emb.add(x), x + emb.weight[:5])
    np.testing.assert_array_equal(emb.add(x, offset=27), x + emb.weight[27:32])
    np.testing.assert_array_equal(emb.add(x, positions=[[1, 2, 3, 4, 5], [0, 0, 0, 0, 0]]), x + emb.weight[[[1, 2, 3, 4, 5], [0] * 5]])
    y = x.copy()
    assert emb.add(y, offset=2, out=y) is y
    np.testing.assert_array_equal(emb.lookup([3, 4]), emb.weight[[3, 4]])
    g = emb.grad(np.ones((2, 5, 8), np.float32), np.arange(5))
    assert g.shape == (32, 8) and (g[:5] == 2).all() and (g[5:] == 0).all()
    # resize: a new embedding whose table is resampled (half-pixel centres, as PyTorch), in float32.
    for n, method in ((64, "linear"), (20, "cubic")):
        resized = emb.resize(n, method)
        assert type(resized) is posenc.LearnedPositionalEmbedding and resized.dtype == np.float32
        assert_close_to_float64(resized.weight, torch_resize_loop(emb.weight.astype(np.float64), n, method),
                                atol_f64=1e-12)


def test_bindings_check_what_they_are_given(isa):
    """The compiled functions refuse bad shapes and positions themselves (the last line before a kernel)."""
    native = posenc._backend.native
    table = np.zeros((4, 3), np.float32)
    out = np.full((2, 3), 7, np.float32)
    with pytest.raises(IndexError, match=r"positions\[1\] = 4"):
        native.embedding_lookup(table, np.array([0, 4]), out)
    with pytest.raises(IndexError, match=r"positions\[0\] = -1"):
        native.embedding_add(out, table, np.array([-1, 0]), out)
    with pytest.raises(ValueError, match="whole number"):
        native.embedding_add(np.zeros((3, 3), np.float32), table, np.array([0, 1]), np.zeros((3, 3), np.float32))
    with pytest.raises(ValueError, match="int64"):
        native.embedding_lookup(table, np.array([0, 1], np.int32), out)
    with pytest.raises(ValueError, match="dim"):
        native.embedding_lookup(np.zeros((4, 5), np.float32), np.array([0, 1]), out)
    with pytest.raises(TypeError, match="same dtype"):
        native.embedding_lookup(table.astype(np.float64), np.array([0, 1]), out)
    with pytest.raises(ValueError, match="C-contiguous"):
        native.embedding_grad(out, np.array([0, 1]), np.zeros((4, 6), np.float32)[:, ::2])
    assert (out == 7).all()
    src = np.ones((1, 4, 3), np.float32)
    dst = np.full((1, 2, 3), 7, np.float32)
    w = np.full((2, 2), 0.5)
    with pytest.raises(IndexError, match="resample index"):
        native.resample(src, dst, np.array([[0, 1], [3, 4]]), w)
    with pytest.raises(ValueError, match="index"):
        native.resample(src, dst, np.zeros((2, 3), np.int64), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="weights"):
        native.resample(src, dst, np.zeros((2, 2), np.int64), np.zeros((2, 4)))
    with pytest.raises(TypeError, match="float64"):
        native.resample(src, dst.astype(np.float16), np.zeros((2, 2), np.int64), w)
    assert (dst == 7).all()


# ================================================================ hostile-input specs
# The valid baseline call of each public function and the role of each argument: the hostile table
# (tests/test_arguments.py), the differential fuzzer and the PyTorch/JAX/unpickled-input cases are
# generated from SPECS.

F32 = np.float32


def _table_positions(s: Spec, arg: str) -> None:
    """Integer positions into the baseline's table: floats refused, out-of-range an IndexError naming the entry."""
    good = np.asarray(s.baseline[arg])
    n = s.baseline["num_positions"] if "num_positions" in s.baseline else np.asarray(s.baseline["table"]).shape[0]
    for id, v in [("float", good.astype(np.float64)), ("float-integral", good.astype(F32)), ("complex", good + 0j),
                  ("object", good.astype(object)), ("bool", good % 2 == 0), ("str", good.astype(str))]:
        s.raises(f"{arg}-{id}", TypeError, f"{arg} must hold integers", **{arg: v})
    # The last entry is the bad one: the message names it, with its value.
    last = f"{arg}[{', '.join(str(int(i)) for i in np.unravel_index(good.size - 1, good.shape))}]"
    for id, v in [("at-end", n), ("negative", -1), ("int64-min", np.iinfo(np.int64).min),
                  ("int64-max", np.iinfo(np.int64).max), ("uint64-max", 2**64 - 1)]:
        bad = good.astype(np.uint64 if v == 2**64 - 1 else np.int64)
        bad.flat[-1] = v
        s.raises(f"{arg}-{id}", IndexError, f"{last} = {v} is outside", **{arg: bad})
    for id, make in [("byteswapped", byteswapped), ("misaligned", misaligned), ("negative-strides", negative_strides),
                     ("stepped", stepped)]:
        s.same(f"{arg}-{id}", clean={arg: good.copy()}, **{arg: make(good)})
    for dt in (np.int8, np.uint16, np.int32, np.uint64):
        s.same(f"{arg}-{np.dtype(dt).name}", clean={arg: good.copy()}, **{arg: good.astype(dt)})
    s.same(f"{arg}-list", clean={arg: good.copy()}, **{arg: good.tolist()})


def _view_of(table: np.ndarray, shape: tuple) -> np.ndarray:
    """An array of ``shape`` over the first elements of ``table``'s (contiguous) memory."""
    return table.reshape(-1)[: int(np.prod(shape))].reshape(shape)


def _zeros(shape: tuple) -> Callable[[Any], None]:
    """A gradient no row contributes to: zeros of ``shape`` (not whatever the allocation held)."""
    def check(result: Any) -> None:
        np.testing.assert_array_equal(result, np.zeros(shape, F32))
        assert result.dtype == F32
    return check


def spec_embedding_lookup() -> Spec:
    table, pos = rand(7, 4), np.array([[0, 6, 2], [3, 3, 1]])
    s = Spec("embedding_lookup", table=table, positions=pos)
    s.floats("table")
    s.raises("table-1d", ValueError, "table must have shape", table=rand(7))
    _table_positions(s, "positions")
    s.check("positions-empty", empty_of((0, 4)), positions=np.zeros(0, np.int64))
    s.raises("positions-into-empty-table", IndexError, "positions", table=rand(0, 4))
    s.out((2, 3, 4), F32)
    shared = rand(7, 4)
    s.raises("out-overlaps-table", ValueError, "overlaps table", table=shared, out=_view_of(shared, (2, 3, 4)))
    square = rand(4, 4)  # lookup(t, arange(4)) could be written over t itself: refused all the same
    s.raises("out-is-table", ValueError, "overlaps table", table=square, positions=np.arange(4), out=square)
    return s


def spec_embedding_add() -> Spec:
    x, table, pos = rand(2, 3, 4), rand(7, 4), np.array([0, 6, 2])
    s = Spec("embedding_add", x=x, table=table, positions=pos)
    s.floats("x", list_dtype_must_match=True)
    s.floats("table", list_dtype_must_match=True)
    s.raises("table-other-dtype", TypeError, "same dtype", table=rand(7, 4, dtype=np.float64))
    s.raises("table-dim-mismatch", ValueError, "features", table=rand(7, 5))
    s.raises("positions-wrong-length", ValueError, "trailing part", positions=np.array([0, 1]))
    s.raises("positions-wrong-batch", ValueError, "trailing part", positions=np.zeros((3, 3), np.int64))
    s.raises("positions-too-many-axes", ValueError, "trailing part", positions=np.zeros((1, 2, 3), np.int64))
    _table_positions(s, "positions")
    s.same("positions-per-batch", positions=np.array([[0, 6, 2], [5, 5, 1]]))
    s.check("x-empty", empty_of((0, 3, 4)), x=rand(0, 3, 4))
    s.out(x.shape, F32, inputs=["x", "table"])
    shared = rand(7, 4)
    s.raises("out-overlaps-table", ValueError, "overlaps table", table=shared, out=_view_of(shared, x.shape))
    return s


def spec_embedding_grad() -> Spec:
    grad, pos = rand(2, 3, 4), np.array([[0, 6, 2], [2, 2, 1]])
    s = Spec("embedding_grad", grad=grad, positions=pos, num_positions=7)
    s.floats("grad")
    _table_positions(s, "positions")
    s.size("num_positions", empty=None, huge=False)
    s.raises("num_positions-huge", SIZE_ERRORS, "", num_positions=2**62)
    s.raises("positions-shape-mismatch", ValueError, "trailing part", positions=np.zeros((2, 4), np.int64))
    s.raises("positions-wrong-length", ValueError, "trailing part", positions=np.array([0, 1]))
    s.same("positions-shared-by-batches", positions=np.array([0, 6, 0]))
    s.same("grad-single-row", grad=rand(4), positions=np.array(3))
    s.check("grad-no-rows", _zeros((7, 4)), grad=rand(0, 3, 4), positions=np.zeros((0, 3), np.int64))
    return s


def spec_resize_table() -> Spec:
    s = Spec("resize_table", table=rand(5, 3), new_length=8)
    s.floats("table")
    s.raises("table-1d", ValueError, "table must have shape", table=rand(5))
    s.raises("table-empty", ValueError, "table has no rows", table=rand(0, 3))
    s.size("new_length", minimum=1, huge=False)
    s.raises("new_length-huge", SIZE_ERRORS, "", new_length=2**62)
    s.raises("method-unknown", ValueError, "method", method="cubic-ish")
    s.raises("method-2d-name", ValueError, "method", method="bicubic")
    s.raises("method-none", (TypeError, ValueError), "method", method=None)
    s.same("method-cubic", method="cubic")
    return s


def spec_resize_table_2d() -> Spec:
    s = Spec("resize_table_2d", grid=rand(3, 4, 2), new_height=5, new_width=6)
    s.floats("grid")
    s.raises("grid-2d", ValueError, "grid must have shape", grid=rand(3, 4))
    s.raises("grid-no-rows", ValueError, "no cells", grid=rand(0, 4, 2))
    s.raises("grid-no-columns", ValueError, "no cells", grid=rand(3, 0, 2))
    s.size("new_height", minimum=1, huge=False)
    s.size("new_width", minimum=1, huge=False)
    s.raises("new_height-huge", SIZE_ERRORS, "", new_height=2**40, new_width=2**40)
    s.raises("method-unknown", ValueError, "method", method="nearest")
    s.raises("method-1d-name", ValueError, "method", method="linear")
    s.same("method-bilinear", method="bilinear")
    s.same("height-unchanged", new_height=3)
    s.same("width-unchanged", new_width=4)
    return s


def _embedding(api: Any) -> Any:
    """The embedding every method case starts from (seeded: the same table on every backend)."""
    return api.LearnedPositionalEmbedding(8, 4, seed=0)


def _weight() -> np.ndarray:
    import posenc
    return _embedding(posenc).weight


def _equals(expected: Callable[[], np.ndarray]) -> Check:
    """The result is an array holding exactly ``expected()``: a lookup copies rows, and a float32 add
    (NumPy's ``x + w`` included) is one correctly rounded sum."""
    def check(result: Any) -> None:
        want = expected()
        assert isinstance(result, np.ndarray) and result.dtype == want.dtype, f"got {type(result)}"
        np.testing.assert_array_equal(result, want)
    return Check(check)


def _written(out: np.ndarray, expected: Callable[[], np.ndarray]) -> Check:
    """``out=`` is returned as passed, holding exactly ``expected()``."""
    def check(result: Any) -> None:
        assert result is out, "out= must be returned as passed"
        np.testing.assert_array_equal(out, expected())
    return Check(check)


def _resized(new_length: int, method: str) -> Check:
    """Of ``(emb, emb.resize(...))``: a new embedding whose table is ``resize_table`` of the old one."""
    def check(result: Any) -> None:
        import posenc
        old, new = result
        assert type(new) is posenc.LearnedPositionalEmbedding
        assert new.weight.shape == (new_length, 4) and new.weight.dtype == old.weight.dtype
        assert not np.may_share_memory(new.weight, old.weight), "the resized table must be a new array"
        np.testing.assert_array_equal(new.weight, posenc.resize_table(old.weight, new_length, method))
        if new_length == old.num_positions:
            np.testing.assert_array_equal(new.weight, old.weight)
        elif method == "linear":  # independently: half-pixel centres, clamped at the borders as np.interp does
            src = (old.num_positions / new_length) * (np.arange(new_length) + 0.5) - 0.5
            w = old.weight.astype(np.float64)
            exact = np.stack([np.interp(src, np.arange(old.num_positions), w[:, j]) for j in range(4)], axis=1)
            assert_close_to_float64(new.weight, exact, atol_f64=1e-12)
    return Check(check)


def _resize(new_length: Any, *method: Any) -> Callable[[Any], Any]:
    def call(api: Any) -> Any:
        e = _embedding(api)
        return e, e.resize(new_length, *method)
    return call


def spec_learned_positional_embedding() -> Spec:
    s = Spec("LearnedPositionalEmbedding", num_positions=8, dim=4, seed=0)
    s.size("num_positions", minimum=1, huge=False)
    s.dim("dim", even=False, huge=False)
    s.raises("size-huge", SIZE_ERRORS, "", num_positions=2**40, dim=2**40)
    s.raises("init-unknown", ValueError, "init", init="xavier-ish")
    s.raises("init-sinusoidal-odd-dim", ValueError, "dim must be even", init="sinusoidal", dim=5)
    for id, v, exc in [("negative", -1.0, ValueError), ("nan", float("nan"), ValueError), ("str", "1", TypeError)]:
        s.raises(f"std-{id}", exc, "std", std=v)
    s.raises("dtype-int", TypeError, "dtype", dtype=np.int32)
    s.raises("seed-float", TypeError, "seed", seed=1.5)
    s.same("init-zeros", init="zeros")
    s.same("init-sinusoidal", init="sinusoidal", dtype=np.float64)
    emb = _embedding
    x = rand(2, 5, 4)
    plus = _equals(lambda: x + _weight()[2:7])  # x + weight[offset:offset + seq], offset 2
    # lookup
    s.custom("lookup-rows", lambda api: emb(api).lookup(np.array([[7, 0], [3, 3]])),
             _equals(lambda: _weight()[[[7, 0], [3, 3]]]))
    out = np.full((2, 4), 7, F32)
    s.custom("lookup-out", lambda api: emb(api).lookup(np.array([5, 1]), out=out),
             _written(out, lambda: _weight()[[5, 1]]))
    s.custom("lookup-out-of-range", lambda api: emb(api).lookup(np.array([0, 8])),
             Raises(IndexError, "positions[1] = 8"))
    s.custom("lookup-negative", lambda api: emb(api).lookup(np.array([-1])), Raises(IndexError, "positions[0] = -1"))
    s.custom("lookup-float", lambda api: emb(api).lookup(np.array([1.0])), Raises(TypeError, "positions"))
    s.custom("lookup-out-wrong-dtype", lambda api: emb(api).lookup(np.array([5, 1]), out=np.zeros((2, 4))),
             Raises(TypeError, "out"))
    # add
    s.custom("add-offset", lambda api: emb(api).add(x, offset=2), plus)
    s.custom("add-misaligned", lambda api: emb(api).add(misaligned(x), offset=2), plus)
    s.custom("add-negative-strides", lambda api: emb(api).add(negative_strides(x), offset=2), plus)
    y = x.copy()
    s.custom("add-out", lambda api: emb(api).add(y, offset=2, out=y), _written(y, lambda: x + _weight()[2:7]))
    per_batch = np.array([[7, 6, 5, 4, 3], [0, 0, 0, 0, 0]])
    s.custom("add-positions", lambda api: emb(api).add(x, positions=per_batch),
             _equals(lambda: x + _weight()[per_batch]))
    s.custom("add-too-long", lambda api: emb(api).add(rand(1, 9, 4)), Raises(IndexError, "positions[8] = 8"))
    s.custom("add-offset-past-end", lambda api: emb(api).add(rand(1, 3, 4), offset=6),
             Raises(IndexError, "offset = 6: positions[2] = 8"))
    s.custom("add-offset-huge", lambda api: emb(api).add(rand(1, 3, 4), offset=HUGE),
             Raises(IndexError, f"offset = {HUGE}: positions[0]"))
    s.custom("add-offset-negative", lambda api: emb(api).add(rand(1, 3, 4), offset=-1),
             Raises(IndexError, "offset = -1: positions[0] = -1"))
    s.custom("add-offset-float", lambda api: emb(api).add(rand(1, 3, 4), offset=1.0), Raises(TypeError, "offset"))
    s.custom("add-positions-and-offset", lambda api: emb(api).add(rand(1, 3, 4), positions=np.arange(3), offset=1),
             Raises(ValueError, "either positions or offset"))
    s.custom("add-x-1d", lambda api: emb(api).add(rand(4)), Raises(ValueError, "x must have shape"))
    s.custom("add-int-x", lambda api: emb(api).add(np.ones((1, 3, 4), np.int32)), Raises(TypeError, "x"))
    s.custom("add-dim-mismatch", lambda api: emb(api).add(rand(1, 3, 5)), Raises(ValueError, "features"))
    # grad
    s.custom("grad-sums", lambda api: emb(api).grad(np.ones((2, 3, 4), F32), np.array([0, 2, 0])),
             _equals(lambda: np.array([[4] * 4, [0] * 4, [2] * 4] + [[0] * 4] * 5, F32)))
    s.custom("grad-float-positions", lambda api: emb(api).grad(rand(3, 4), np.array([0.0, 1.0, 2.0])),
             Raises(TypeError, "positions"))
    s.custom("grad-out-of-range", lambda api: emb(api).grad(rand(3, 4), np.array([0, 1, 8])),
             Raises(IndexError, "positions[2] = 8"))
    s.custom("grad-shape-mismatch", lambda api: emb(api).grad(rand(3, 4), np.array([0, 1])),
             Raises(ValueError, "trailing part"))
    s.custom("grad-int", lambda api: emb(api).grad(np.ones((3, 4), np.int64), np.array([0, 1, 2])),
             Raises(TypeError, "grad"))
    # resize
    s.custom("resize-longer", _resize(13), _resized(13, "linear"))
    s.custom("resize-shorter", _resize(5, "linear"), _resized(5, "linear"))
    s.custom("resize-cubic", _resize(11, "cubic"), _resized(11, "cubic"))
    s.custom("resize-same-length", _resize(8), _resized(8, "linear"))
    s.custom("resize-zero", lambda api: emb(api).resize(0), Raises(ValueError, "new_length"))
    s.custom("resize-float", lambda api: emb(api).resize(16.0), Raises(TypeError, "new_length"))
    s.custom("resize-huge", lambda api: emb(api).resize(2**62), Raises(SIZE_ERRORS, ""))
    s.custom("resize-method-unknown", lambda api: emb(api).resize(16, "nearest"), Raises(ValueError, "method"))
    s.custom("resize-method-2d-name", lambda api: emb(api).resize(16, "bilinear"), Raises(ValueError, "method"))
    return s


SPECS: Dict[str, Callable[[], Spec]] = {
    "embedding_lookup": spec_embedding_lookup,
    "embedding_add": spec_embedding_add,
    "embedding_grad": spec_embedding_grad,
    "resize_table": spec_resize_table,
    "resize_table_2d": spec_resize_table_2d,
    "LearnedPositionalEmbedding": spec_learned_positional_embedding,
}


# One call per executor-backed function, big enough to go parallel: tests/test_invariants.py runs
# each (thread-count determinism, backend routing, concurrency); out=None means a new result.
LARGE: Dict[str, Callable[[Any], Any]] = {
    "embedding_lookup": lambda out: posenc.embedding_lookup(BIG.table, BIG.pos, out=out),
    "embedding_add": lambda out: posenc.embedding_add(BIG.x3[..., :64], BIG.table, BIG.pos[0], out=out),
    "embedding_grad": lambda out: posenc.embedding_grad(BIG.x3[..., :64], BIG.pos, 2048),
    "resize_table": lambda out: posenc.resize_table(BIG.table, 3000),
    "resize_table_2d": lambda out: posenc.resize_table_2d(BIG.grid.transpose(1, 2, 0), 90, 100),
}
