"""The learned family: lookup/add/grad (every ISA) against closed forms and the native paths against the
reference, gradient determinism, resizing against PyTorch and exact identities, the module.
Argument errors are in the hostile-input table (tests/hostile_learned.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import posenc
from posenc import reference as ref

from helpers import FLOAT_DTYPES, assert_bitwise_equal, assert_close_to_float64, eps, strided_view

try:  # optional peer for resize parity
    import torch
except ImportError:  # pragma: no cover
    torch = None

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


def test_misaligned_byteswapped_and_torch(isa):
    raw = np.zeros(4 * 10 * 8 + 1, np.uint8)
    x = np.frombuffer(raw.data, dtype=np.float32, count=80, offset=1).reshape(10, 8)
    assert not x.flags.aligned
    table = np.arange(16 * 8, dtype=np.float32).reshape(16, 8)
    pos = np.arange(3, 13)
    np.testing.assert_array_equal(posenc.embedding_add(x, table, pos), table[pos])
    np.testing.assert_array_equal(posenc.embedding_lookup(table.astype(">f4"), pos), table[pos])
    np.testing.assert_array_equal(posenc.embedding_grad(table.astype(">f4")[:10], pos, 16)[3:13], table[:10])
    if torch is not None:
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


@pytest.mark.skipif(torch is None, reason="PyTorch not installed")
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
