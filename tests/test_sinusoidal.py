"""The sinusoidal family: native (every ISA) against the reference, closed forms, exactness, layouts."""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

import posenc
from posenc import reference as ref

from helpers import FLOAT_DTYPES, assert_bitwise_equal, assert_close_to_float64, rand, strided_view
from hostile import BIG, SIZE_ERRORS, Spec, empty_of, finite_or_refused


def angle_slack(max_angle: float) -> float:
    """Float64 error budget: the reference rounds p·ω once; the kernel's anchored recurrence adds < 1e-14."""
    return 1e-13 + 4 * np.finfo(np.float64).eps * max_angle


def exact_table(pos: np.ndarray, inv_freq: np.ndarray, interleaved: bool) -> np.ndarray:
    """float64 evaluation written independently of posenc.reference."""
    angles = pos[:, None] * inv_freq[None, :]
    out = np.empty((len(pos), 2 * len(inv_freq)))
    if interleaved:
        out[:, 0::2], out[:, 1::2] = np.sin(angles), np.cos(angles)
    else:
        half = len(inv_freq)
        out[:, :half], out[:, half:] = np.sin(angles), np.cos(angles)
    return out


positions_strategy = st.one_of(
    st.integers(0, 100),
    st.lists(st.integers(-(2**24), 2**24), min_size=0, max_size=70).map(lambda v: np.array(v, np.int64)),
    st.lists(st.floats(-1e6, 1e6), min_size=0, max_size=70).map(lambda v: np.array(v, np.float64)),
    st.tuples(st.integers(0, 2**24), st.integers(0, 80)).map(lambda t: np.arange(t[0], t[0] + t[1])),
    # Packed sequences: runs of consecutive positions, each starting anywhere (kernels step through runs).
    st.lists(st.tuples(st.integers(-1000, 2**20), st.integers(1, 40)), min_size=1, max_size=6).map(
        lambda runs: np.concatenate([np.arange(start, start + n) for start, n in runs])),
)


@given(
    positions=positions_strategy,
    half=st.integers(1, 40),
    dtype=st.sampled_from(FLOAT_DTYPES),
    interleaved=st.booleans(),
    freq_rule=st.sampled_from(["vaswani", "t2t"]),
    base=st.sampled_from([10000.0, 500.0, 1e6, 0.5]),
    use_out=st.booleans(),
)
def test_table_matches_reference(isa, positions, half, dtype, interleaved, freq_rule, base, use_out):
    dim = 2 * half
    if freq_rule == "t2t" and half < 2:
        dim = 4
    kw = dict(base=base, interleaved=interleaved, freq_rule=freq_rule, dtype=dtype)
    n = positions if isinstance(positions, int) else len(positions)
    out = np.full((n, dim), 7, dtype) if use_out else None
    got = posenc.sinusoidal(positions, dim, out=out, **kw)
    if use_out:
        assert got is out
    assert got.shape == (n, dim) and got.dtype == np.dtype(dtype)
    pos = np.arange(n, dtype=np.float64) if isinstance(positions, int) else positions.astype(np.float64)
    inv_freq = ref.sinusoidal_frequencies(dim, base, freq_rule)
    exact = exact_table(pos, inv_freq, interleaved)
    max_angle = float(np.abs(pos).max(initial=0) * inv_freq.max())
    assert_close_to_float64(got, exact, angle_slack(max_angle))
    expected = ref.sinusoidal(positions, dim, **kw)
    assert_close_to_float64(expected, exact, 0.0)


def _at_byte_offset(shape, dtype, offset: int) -> np.ndarray:
    """An uninitialised C-contiguous array whose data start `offset` bytes past a 64-byte boundary."""
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.empty(nbytes + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    return raw[start:start + nbytes].view(dtype).reshape(shape)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("rows, dim", [(70, 1024), (9, 30), (33, 6), (5, 2)])
def test_table_bits_do_not_depend_on_where_out_starts(isa, dtype, rows, dim):
    """Rows starting anywhere in a cache line (NumPy puts large arrays 16 bytes past one) get the
    same bits: float32 tables store their first pairs one at a time up to the line boundary."""
    item = np.dtype(dtype).itemsize
    bits = np.dtype(f"u{item}")
    results = []
    for offset in range(0, 64, item):
        out = _at_byte_offset((rows, dim), dtype, offset)
        posenc.sinusoidal(rows, dim, dtype=dtype, out=out)
        results.append(out.view(bits).copy())
    expected = posenc.sinusoidal(rows, dim, dtype=dtype).view(bits)
    for offset, got in zip(range(0, 64, item), results):
        np.testing.assert_array_equal(got, expected, err_msg=f"out {offset} bytes past a line")


@pytest.mark.parametrize("n", [1, 2, 3, 31, 32, 33, 63, 64, 65, 97])
@pytest.mark.parametrize("half", [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33])
def test_every_vector_tail(isa, n, half):
    """Sizes around every SIMD width and anchor block: float16 results equal NumPy's rounding exactly."""
    for interleaved in (True, False):
        got = posenc.sinusoidal(n, 2 * half, interleaved=interleaved, dtype=np.float64)
        exact = exact_table(np.arange(n, dtype=np.float64), ref.sinusoidal_frequencies(2 * half), interleaved)
        np.testing.assert_allclose(got, exact, rtol=0, atol=angle_slack(n))


def test_pythagoras_and_shift_property(isa):
    """sin²+cos² = 1 per pair and PE(p+k) = R_k·PE(p), independent of any reference."""
    dim, n, k = 64, 300, 37
    pe = posenc.sinusoidal(n + k, dim, dtype=np.float64)
    s, c = pe[:, 0::2], pe[:, 1::2]
    np.testing.assert_allclose(s**2 + c**2, 1.0, rtol=0, atol=1e-14)
    w = posenc.sinusoidal_frequencies(dim)
    ck, sk = np.cos(k * w), np.sin(k * w)
    np.testing.assert_allclose(s[k:], s[:n] * ck + c[:n] * sk, rtol=0, atol=1e-12)
    np.testing.assert_allclose(c[k:], c[:n] * ck - s[:n] * sk, rtol=0, atol=1e-12)


def test_known_values(isa):
    pe = posenc.sinusoidal(3, 8, dtype=np.float64)
    np.testing.assert_array_equal(pe[0], [0, 1, 0, 1, 0, 1, 0, 1])
    # Frequency 0 is 1 rad per position; frequency 1 of dim 8 is 10000^(-1/4) = 0.1.
    np.testing.assert_allclose(pe[2, :4], [math.sin(2), math.cos(2), math.sin(0.2), math.cos(0.2)], rtol=0, atol=1e-15)
    # t2t: the last frequency is exactly 1/base.
    t2t = posenc.sinusoidal([5], 16, freq_rule="t2t", interleaved=False, dtype=np.float64)
    assert t2t[0, 7] == pytest.approx(math.sin(5 / 10000), abs=1e-17)
    # The PyTorch tutorial's own formula (exp/log form) agrees to float64 rounding.
    d = 32
    div = np.exp(np.arange(0, d, 2) * (-math.log(10000.0) / d))
    tut = np.zeros((50, d))
    tut[:, 0::2], tut[:, 1::2] = np.sin(np.arange(50)[:, None] * div), np.cos(np.arange(50)[:, None] * div)
    np.testing.assert_allclose(posenc.sinusoidal(50, d, dtype=np.float64), tut, rtol=0, atol=1e-13)


@pytest.mark.parametrize("dtype,atol", [(np.float32, 1.2e-7), (np.float64, 1e-8)])
def test_exact_at_large_positions(isa, dtype, atol):
    """Up to 2^24 the result is within 1.2e-7 (float32) / 1e-8 (float64) of a float64 evaluation."""
    rng = np.random.default_rng(1)
    scattered = rng.integers(0, 2**24, 500)
    for pos in (scattered, np.arange(2**24 - 100, 2**24)):
        got = posenc.sinusoidal(pos, 128, dtype=dtype)
        exact = exact_table(pos.astype(np.float64), ref.sinusoidal_frequencies(128), True)
        assert np.abs(got.astype(np.float64) - exact).max() <= atol


def test_trig_core_against_libm(isa):
    """dim=2 has ω = 1, so the table is sin/cos of the positions themselves: the vector sincos over its whole range."""
    rng = np.random.default_rng(2)
    x = np.concatenate([
        rng.uniform(-10, 10, 2000), rng.uniform(-2**25, 2**25, 2000),
        rng.uniform(-1e15, 1e15, 200), np.arange(-200, 200) * (math.pi / 4),
    ])
    got = posenc.sinusoidal(x, 2, dtype=np.float64)
    np.testing.assert_allclose(got[:, 0], np.sin(x), rtol=0, atol=1e-15)
    np.testing.assert_allclose(got[:, 1], np.cos(x), rtol=0, atol=1e-15)


# ---------------------------------------------------------------- add_sinusoidal

@given(
    lead=st.lists(st.integers(0, 3), min_size=0, max_size=2),
    seq=st.integers(0, 70),
    half=st.integers(1, 20),
    dtype=st.sampled_from(FLOAT_DTYPES),
    interleaved=st.booleans(),
    offset=st.integers(-5, 2**20),
    scale=st.sampled_from([1.0, 0.5, 8.0, -3.0]),
    mode=st.sampled_from(["new", "inplace", "strided", "positions"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_add_matches_reference(isa, lead, seq, half, dtype, interleaved, offset, scale, mode, seed):
    rng = np.random.default_rng(seed)
    shape = tuple(lead) + (seq, 2 * half)
    x = rng.standard_normal(shape).astype(dtype)
    kw = dict(interleaved=interleaved, scale=scale)
    if mode == "positions":
        kw["positions"] = rng.integers(-1000, 2**20, seq)
    else:
        kw["offset"] = offset
    expected = ref.add_sinusoidal(x, **kw)
    pos = kw["positions"] if "positions" in kw else offset + np.arange(seq)
    exact = scale * x.astype(np.float64) + exact_table(np.asarray(pos, np.float64),
                                                       ref.sinusoidal_frequencies(2 * half), interleaved)
    if mode == "strided":
        x = strided_view(x, rng)
    if mode == "inplace":
        got = posenc.add_sinusoidal(x, out=x, **kw)
        assert got is x
    else:
        got = posenc.add_sinusoidal(x, **kw)
    slack = angle_slack(float(np.abs(pos).max(initial=0))) * 2
    assert_close_to_float64(got, exact, slack)
    assert_close_to_float64(expected, exact, slack)


def test_add_cached_frequencies_check_every_base():
    """add_sinusoidal's cached frequencies (keyed by a float or int base) never let another type of base
    through an equal key, and x.shape[-1] is checked before the base whatever its type."""
    from fractions import Fraction

    x = np.zeros((1, 1, 8), np.float32)
    posenc.add_sinusoidal(x, base=10000)  # caches the entry of (8, 10000)
    posenc.add_sinusoidal(x, base=1.0 + 1e-9)
    for bad, error in [(Fraction(10000), TypeError), (True, TypeError), (np.bool_(True), TypeError), ("1e4", TypeError),
                       (1, ValueError), (1.0, ValueError), (-5, ValueError), (float("nan"), ValueError),
                       (np.float64("inf"), ValueError)]:
        with pytest.raises(error, match="base"):
            posenc.add_sinusoidal(x, base=bad)
    odd = np.zeros((1, 1, 7), np.float32)
    for base in (10000.0, 1.0, Fraction(10000), "1e4"):
        with pytest.raises(ValueError, match=r"x\.shape\[-1\] must be even"):
            posenc.add_sinusoidal(odd, base=base)
    assert not posenc._plans.sinusoidal.x_frequencies(8, 10000.0).flags.writeable


@pytest.mark.parametrize("where", ["offset", "runs", "half-steps"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("batches", [1, 2, 4, 5, 9])
@pytest.mark.parametrize("dim", [2, 16, 30, 34, 96, 1026])
def test_add_interleaved_in_registers_or_in_memory(native_isa, batches, dim, dtype, where):
    """The float32/float64 sum of an interleaved row on the AVX-512 path interleaves each row's sines and cosines in
    registers, its first batch stepping the angles (where the CPU calls for it, up to 4 batches a row), or once in
    memory: the same bits either way, within one rounding of float64 truth, at every vector tail and batch count, in
    place and into a new array; consecutive positions, runs of them broken by jumps and a repeat (each break
    evaluated afresh, not stepped), and float positions a step apart."""
    from posenc import _backend

    native = _backend.native
    rng = np.random.default_rng(dim * 10 + batches)
    seq, offset, scale = 70, 1000, 0.75
    x = rng.standard_normal((batches, seq, dim)).astype(dtype)
    pos = {"offset": offset + np.arange(seq, dtype=np.float64),
           "runs": np.r_[5:30, 1000:1020, 1019, 40:64].astype(np.float64),
           "half-steps": 0.5 + np.arange(seq, dtype=np.float64)}[where]
    kw = dict(offset=offset) if where == "offset" else dict(positions=pos)
    exact = scale * x.astype(np.float64) + exact_table(pos, ref.sinusoidal_frequencies(dim), True)
    previous = native.sum_interleaves_in_registers()
    results = []
    try:
        for on in (True, False):
            native.use_sum_interleaves_in_registers(on)
            got = posenc.add_sinusoidal(x, scale=scale, **kw)
            inplace = x.copy()
            assert posenc.add_sinusoidal(inplace, scale=scale, out=inplace, **kw) is inplace
            assert_bitwise_equal(inplace, got)
            results.append(got)
    finally:
        native.use_sum_interleaves_in_registers(previous)
    assert native.sum_interleaves_in_registers() == previous
    assert_bitwise_equal(results[0], results[1])
    assert_close_to_float64(results[0], exact, angle_slack(float(pos.max())))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("interleaved", [True, False])
@pytest.mark.parametrize("most", [1, 4, 2**63 - 1])  # batches per work item: one, the Zen 4's limit, all
def test_add_over_many_batches_at_every_thread_count(native_isa, dtype, interleaved, most):
    """Many batches (which float32/float64 sums cut into groups of at most `most`, each computing its rows'
    angles again: sinusoidal.cpp's run): every batch gets the same bits as that batch summed alone, at 1, 2 and 3 threads,
    in place, into a new array and on a strided view; those are the reference's in float32, and within the
    anchored recurrence's budget of float64 truth in float64."""
    from posenc import _backend

    previous = _backend.native.sum_batches_per_item()
    rng = np.random.default_rng(11)
    x0 = (rng.standard_normal((13, 100, 96)) * 3).astype(dtype)
    kw = dict(offset=37, scale=0.5, interleaved=interleaved)
    expected = np.stack([posenc.add_sinusoidal(x0[b:b + 1], **kw)[0] for b in range(len(x0))])
    _backend.native.use_sum_batches_per_item(most)
    if dtype == np.float32:
        assert_bitwise_equal(expected, ref.add_sinusoidal(x0, **kw))
    else:
        pos = 37 + np.arange(100, dtype=np.float64)
        exact = 0.5 * x0 + exact_table(pos, ref.sinusoidal_frequencies(96), interleaved)
        assert_close_to_float64(expected, exact, angle_slack(float(pos.max())))
    try:
        for threads in (1, 2, 3):
            posenc.set_num_threads(threads)
            assert_bitwise_equal(posenc.add_sinusoidal(x0, **kw), expected)
            x = x0.copy()
            assert posenc.add_sinusoidal(x, out=x, **kw) is x
            assert_bitwise_equal(x, expected)
            view = strided_view(x0, rng)
            assert_bitwise_equal(posenc.add_sinusoidal(view, out=view, **kw), expected)
    finally:
        posenc.set_num_threads(None)
        _backend.native.use_sum_batches_per_item(previous)


def test_add_strided_views_of_a_fused_buffer(isa):
    """A slice of a larger buffer is updated in place and its neighbours are untouched."""
    buf = np.random.default_rng(4).standard_normal((2, 50, 3, 64)).astype(np.float32)
    before = buf.copy()
    view = buf[:, :, 1, :]
    posenc.add_sinusoidal(view, out=view, offset=3)
    np.testing.assert_array_equal(buf[:, :, 0], before[:, :, 0])
    np.testing.assert_array_equal(buf[:, :, 2], before[:, :, 2])
    np.testing.assert_array_equal(buf[:, :, 1], ref.add_sinusoidal(before[:, :, 1], offset=3))


def test_add_misaligned_and_byteswapped(isa):
    raw = np.zeros(4 * 10 * 8 + 1, np.uint8)
    x = np.frombuffer(raw.data, dtype=np.float32, count=80, offset=1).reshape(10, 8)
    assert not x.flags.aligned
    exact = exact_table(np.arange(10.0), ref.sinusoidal_frequencies(8), True)
    assert_close_to_float64(posenc.add_sinusoidal(x), exact, angle_slack(10))
    assert_close_to_float64(posenc.add_sinusoidal(np.zeros((10, 8), ">f4")), exact, angle_slack(10))
    out = np.frombuffer(np.zeros(4 * 80 + 1, np.uint8).data, dtype=np.float32, count=80, offset=1).reshape(10, 8)
    assert posenc.add_sinusoidal(x, out=out) is out
    assert_close_to_float64(out, exact, angle_slack(10))


# ---------------------------------------------------------------- grids

def pe_package_2d(h, w, dim, base=10000.0):
    """positional_encodings.PositionalEncoding2D, transcribed in float64."""
    c = int(np.ceil(dim / 4) * 2)
    inv = 1.0 / (base ** (np.arange(0, c, 2) / c))

    def emb(pos):
        a = np.outer(pos, inv)
        return np.stack([np.sin(a), np.cos(a)], -1).reshape(len(pos), 2 * len(inv))

    out = np.zeros((h, w, 2 * c))
    out[:, :, :c] = emb(np.arange(h))[:, None, :]
    out[:, :, c:] = emb(np.arange(w))[None, :, :]
    return out[:, :, :dim]


def pe_package_3d(d, h, w, dim, base=10000.0):
    c = int(np.ceil(dim / 6) * 2)
    inv = 1.0 / (base ** (np.arange(0, c, 2) / c))

    def emb(pos):
        a = np.outer(pos, inv)
        return np.stack([np.sin(a), np.cos(a)], -1).reshape(len(pos), 2 * len(inv))

    out = np.zeros((d, h, w, 3 * c))
    out[..., :c] = emb(np.arange(d))[:, None, None, :]
    out[..., c:2 * c] = emb(np.arange(h))[None, :, None, :]
    out[..., 2 * c:] = emb(np.arange(w))[None, None, :, :]
    return out[..., :dim]


@given(h=st.integers(0, 9), w=st.integers(0, 9), dim=st.integers(1, 40), dtype=st.sampled_from(FLOAT_DTYPES))
def test_2d_layout(isa, h, w, dim, dtype):
    got = posenc.sinusoidal_2d(h, w, dim, dtype=dtype)
    assert got.shape == (h, w, dim)
    assert_close_to_float64(got, pe_package_2d(h, w, dim), 1e-14)
    assert_close_to_float64(ref.sinusoidal_2d(h, w, dim, dtype=dtype), pe_package_2d(h, w, dim), 1e-14)


@given(d=st.integers(0, 5), h=st.integers(0, 5), w=st.integers(0, 6), dim=st.integers(1, 40),
       dtype=st.sampled_from(FLOAT_DTYPES))
def test_3d_layout(isa, d, h, w, dim, dtype):
    got = posenc.sinusoidal_3d(d, h, w, dim, dtype=dtype)
    assert got.shape == (d, h, w, dim)
    assert_close_to_float64(got, pe_package_3d(d, h, w, dim), 1e-14)
    assert_close_to_float64(ref.sinusoidal_3d(d, h, w, dim, dtype=dtype), pe_package_3d(d, h, w, dim), 1e-14)


def test_grid_into_strided_out(isa):
    big = np.zeros((6, 2, 5, 11), np.float32)
    out = big[::-1, 0, :, :]
    assert posenc.sinusoidal_2d(6, 5, 11, out=out) is out
    assert_close_to_float64(out, pe_package_2d(6, 5, 11), 1e-14)
    assert not big[:, 1].any()


def test_against_positional_encodings_package(isa):
    torch = pytest.importorskip("torch")
    pe_mod = pytest.importorskip("positional_encodings.torch_encodings")
    for dim in (1, 5, 8, 13, 64):
        t = pe_mod.PositionalEncoding2D(dim)(torch.zeros(1, 7, 9, dim))[0].numpy()
        np.testing.assert_allclose(posenc.sinusoidal_2d(7, 9, dim), t, rtol=0, atol=2e-6)
        t3 = pe_mod.PositionalEncoding3D(dim)(torch.zeros(1, 3, 4, 5, dim))[0].numpy()
        np.testing.assert_allclose(posenc.sinusoidal_3d(3, 4, 5, dim), t3, rtol=0, atol=2e-6)


def test_negative_zero_is_position_zero(backend):
    """−0 is position 0: +0 sines on both executors (NumPy's sin(−0·ω) would be −0, the kernels' +0)."""
    pos = np.array([-0.0, 0.0, 3.0, -0.0])
    for got in (posenc.sinusoidal(pos, 6), posenc.sinusoidal_nd(np.stack([pos, -pos], -1), (4, 2)),
                posenc.rope_cos_sin(pos, 8)[1]):
        assert_bitwise_equal(got[0], got[1])
        assert not np.signbit(got[[0, 1, 3]]).any()


# ---------------------------------------------------------------- concat

def test_concat_positional():
    x = np.ones((2, 3, 4), np.float32)
    pe = posenc.sinusoidal(3, 2)
    got = posenc.concat_positional(x, pe)
    assert got.shape == (2, 3, 6)
    np.testing.assert_array_equal(got[..., :4], 1)
    np.testing.assert_array_equal(got[1, :, 4:], pe)
    out = np.empty((2, 3, 6), np.float32)
    assert posenc.concat_positional(x, pe, out=out) is out
    with pytest.raises(ValueError, match="seq"):
        posenc.concat_positional(x, posenc.sinusoidal(4, 2))
    with pytest.raises(ValueError, match="overlaps"):
        posenc.concat_positional(x, pe, out=_overlapping(x))


@settings(max_examples=60, deadline=None)
@given(batch=st.sampled_from([(), (1,), (3,), (2, 3)]), seq=st.integers(0, 9), dim=st.integers(0, 12),
       pe_dim=st.integers(0, 12), broadcast=st.sampled_from(["pe", "pe1", "full", "x", "pe-seq-1", "pe-per-batch"]),
       dtypes=st.sampled_from([(t, t) for t in FLOAT_DTYPES] + [(np.float16, np.float32), (np.float32, np.float64)]),
       strided=st.booleans(), seed=st.integers(0, 2**16))
@example(batch=(2, 3), seq=4, dim=3, pe_dim=5, broadcast="pe-per-batch", dtypes=(np.float32, np.float32),
         strided=False, seed=0)
@example(batch=(2, 3), seq=4, dim=3, pe_dim=5, broadcast="x", dtypes=(np.float16, np.float16), strided=True, seed=1)
def test_concat_positional_is_concatenate(native_isa, batch, seq, dim, pe_dim, broadcast, dtypes, strided, seed):
    """Every broadcast, dtype pair and stride against np.concatenate of the broadcast operands: the same
    bits (a copy), the one-pass kernel where x and pe share the result dtype, NumPy's assignment elsewhere."""
    rng = np.random.default_rng(seed)
    lead = batch + (seq,)
    x_shape, pe_shape = {"pe": (lead, (seq,)), "pe1": (lead, (1, seq)), "full": (lead, lead),
                         "x": ((seq,), lead), "pe-seq-1": (batch + (1,), (1,)),
                         # (2, 3) batches: pe's rows do not repeat over the result's (NumPy's copy)
                         "pe-per-batch": (lead, batch[:1] + (1,) * (len(batch) - 1) + (seq,))}[broadcast]
    lead = np.broadcast_shapes(x_shape, pe_shape)
    x = rng.standard_normal(x_shape + (dim,)).astype(dtypes[0])
    pe = rng.standard_normal(pe_shape + (pe_dim,)).astype(dtypes[1])
    if strided:
        x, pe = strided_view(x, rng), strided_view(pe, rng)
    dt = np.result_type(x.dtype, pe.dtype)
    expected = np.concatenate([np.broadcast_to(x, lead + (dim,)).astype(dt),
                               np.broadcast_to(pe, lead + (pe_dim,)).astype(dt)], axis=-1)
    assert_bitwise_equal(posenc.concat_positional(x, pe), expected)
    out = strided_view(np.full(lead + (dim + pe_dim,), 7, dt), rng) if strided else np.full(expected.shape, 7, dt)
    assert posenc.concat_positional(x, pe, out=out) is out
    assert_bitwise_equal(out, expected)


def _overlapping(x):
    """An out of the right shape whose memory overlaps x without being x.

    Its strides keep every element inside x's buffer (the largest offset is
    24·1 + 8·2 + 4·5 = 60 < 96 bytes): a view reaching past the buffer read
    out of bounds when pytest printed it (AddressSanitizer caught it)."""
    assert x.dtype == np.float32 and x.shape == (2, 3, 4) and x.flags.c_contiguous
    return np.lib.stride_tricks.as_strided(x, shape=(2, 3, 6), strides=(24, 8, 4))


def test_empty_results(isa):
    assert posenc.sinusoidal(0, 8).shape == (0, 8)
    assert posenc.sinusoidal(np.array([], np.int64), 8).shape == (0, 8)
    assert posenc.add_sinusoidal(np.zeros((0, 5, 8), np.float32)).shape == (0, 5, 8)
    assert posenc.sinusoidal_2d(0, 5, 8).shape == (0, 5, 8)


# ================================================================ hostile-input specs
# The valid baseline call of each public function and the role of each argument: the hostile table
# (tests/test_arguments.py), the differential fuzzer and the PyTorch/JAX/unpickled-input cases are
# generated from SPECS.

F32 = np.float32


def spec_sinusoidal() -> Spec:
    s = Spec("sinusoidal", positions=np.array([0, 3, 1, 7, 2]), dim=6, dtype=F32)
    s.positions("positions", any_length=True)
    s.size("positions", empty=empty_of((0, 6)), baseline=5, float_exc=ValueError, id="n")
    s.dim("dim")
    s.base("base")
    s.flag("interleaved")
    s.raises("freq_rule-unknown", ValueError, "freq_rule", freq_rule="Vaswani")
    s.raises("freq_rule-t2t-dim2", ValueError, "dim", freq_rule="t2t", dim=2)
    s.raises("dtype-int", TypeError, "dtype", dtype=np.int32)
    s.raises("dtype-complex", TypeError, "dtype", dtype=np.complex64)
    s.raises("dtype-garbage", TypeError, "dtype", dtype="float33")
    s.raises("dtype-byteswapped", TypeError, "dtype", dtype=np.dtype(">f8" if np.little_endian else "<f8"))
    s.out((5, 6), F32)
    return s


def spec_add_sinusoidal() -> Spec:
    x = rand(2, 5, 6)
    s = Spec("add_sinusoidal", x=x)
    s.floats("x")
    s.raises("x-1d", ValueError, "x", x=rand(6))
    s.raises("x-odd-dim", ValueError, "x.shape", x=rand(2, 5, 7))
    s.check("x-empty-batch", empty_of((0, 5, 6)), x=rand(0, 5, 6))
    s.check("x-empty-seq", empty_of((2, 0, 6)), x=rand(2, 0, 6))
    s.raises("x-empty-dim", ValueError, "x.shape", x=rand(2, 5, 0))
    s.integer("offset", huge=finite_or_refused)
    s.same("positions-float", clean={"positions": np.arange(5.0) * 0.5}, positions=(np.arange(5) * 0.5).astype(F32))
    s.raises("positions-wrong-length", ValueError, "positions", positions=np.arange(4))
    s.raises("positions-nan", ValueError, "positions", positions=np.array([0, 1, np.nan, 3, 4]))
    s.raises("positions-complex", TypeError, "positions", positions=np.arange(5) + 0j)
    s.raises("positions-and-offset", ValueError, "offset", positions=np.arange(5), offset=1)
    s.base("base")
    s.flag("interleaved")
    for id, v, exc in [("nan", float("nan"), ValueError), ("inf", float("inf"), ValueError),
                       ("str", "1", TypeError), ("complex", 1j, TypeError)]:
        s.raises(f"scale-{id}", exc, "scale", scale=v)
    s.out(x.shape, F32, inputs=["x"])
    s.read("positions", np.arange(5.0))
    return s


def spec_grid(name: str, sizes: List[str]) -> Callable[[], Spec]:
    def build() -> Spec:
        s = Spec(name, **{k: 3 for k in sizes}, dim=5)
        for k in sizes:
            s.size(k, empty=empty_of(tuple(0 if j == k else 3 for j in sizes) + (5,)))
        s.dim("dim", even=False)
        s.base("base")
        s.raises("dtype-int", TypeError, "dtype", dtype=np.int64)
        s.out((3,) * len(sizes) + (5,), F32)
        return s
    return build


def spec_concat_positional() -> Spec:
    x, pe = rand(2, 4, 3), rand(4, 2)
    s = Spec("concat_positional", x=x, pe=pe)
    s.floats("x")
    s.floats("pe")
    s.raises("pe-seq-mismatch", ValueError, "seq", pe=rand(5, 2))
    s.raises("pe-not-broadcastable", ValueError, "pe", pe=rand(3, 4, 2))
    s.raises("x-1d", ValueError, "x", x=rand(3))
    s.check("x-empty", empty_of((0, 4, 5)), x=rand(0, 4, 3))
    s.out((2, 4, 5), F32, inputs=[])
    buf = np.zeros((2, 4, 5), F32)
    s.raises("out-overlaps-x", ValueError, "out", x=buf[:, :, 1:4], out=buf)
    return s


def spec_sinusoidal_frequencies() -> Spec:
    s = Spec("sinusoidal_frequencies", dim=8)
    s.dim("dim", huge=False)
    s.raises("dim-huge", SIZE_ERRORS, "", dim=2**62)
    s.base("base")
    s.raises("freq_rule-unknown", ValueError, "freq_rule", freq_rule="t5")
    return s


SPECS: Dict[str, Callable[[], Spec]] = {
    "sinusoidal": spec_sinusoidal,
    "add_sinusoidal": spec_add_sinusoidal,
    "sinusoidal_2d": spec_grid("sinusoidal_2d", ["height", "width"]),
    "sinusoidal_3d": spec_grid("sinusoidal_3d", ["depth", "height", "width"]),
    "concat_positional": spec_concat_positional,
    "sinusoidal_frequencies": spec_sinusoidal_frequencies,
}


# One call per executor-backed function, big enough to go parallel: tests/test_invariants.py runs
# each (thread-count determinism, backend routing, concurrency); out=None means a new result.
LARGE: Dict[str, Callable[[Any], Any]] = {
    "sinusoidal": lambda out: posenc.sinusoidal(BIG.pos[0], 256, out=out),
    "add_sinusoidal": lambda out: posenc.add_sinusoidal(BIG.x3, offset=3, out=out),
    "sinusoidal_2d": lambda out: posenc.sinusoidal_2d(64, 96, 130, out=out),
    "sinusoidal_3d": lambda out: posenc.sinusoidal_3d(8, 32, 48, 90, out=out),
    "concat_positional": lambda out: posenc.concat_positional(BIG.x3, BIG.table[:512], out=out),
}
