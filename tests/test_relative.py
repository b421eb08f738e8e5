"""The relative family: T5 parity with the PyTorch reference, ALiBi against its authors and BLOOM,
Shaw clipping, Toeplitz structure; native (every ISA) against the NumPy reference.

Integer outputs and every float output are compared for exact (bitwise) equality: each
value is one rounding of a float64 quantity (or a copy), so there is nothing to tolerate.

Tests taking ``isa`` check each function against something independent of posenc's two
executors (a published value, PyTorch, the definition written out with NumPy, another
public function they are defined by); they also run on the NumPy executor alone
(POSENC_BACKEND=reference). Tests taking ``native_isa`` compare the kernels with
``posenc.reference`` bit for bit. Argument errors live in the hostile-input table
(SPECS, at the end of this module).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, Tuple

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

import posenc
from posenc import reference as ref

from helpers import FLOAT_DTYPES, Peer, assert_close_to_float64, needs, rand, strided_view
from hostile import BIG, SIZE_ERRORS, Spec, byteswapped, empty_of, misaligned, negative_strides, stepped

torch = Peer("torch")
requires_torch = needs(torch)


def same_bits(a, b):
    """Exact equality, signed zeros included."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    if a.dtype.kind == "f" or a.dtype.itemsize == 2 and a.dtype.kind == "V":
        a, b = a.view(f"u{a.dtype.itemsize}"), b.view(f"u{b.dtype.itemsize}")
    if posenc._checks.is_bfloat16(a.dtype):
        a, b = a.view(np.uint16), b.view(np.uint16)
    np.testing.assert_array_equal(a, b)


def hf_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """Hugging Face T5Attention._relative_position_bucket (transformers when installed, else verbatim)."""
    try:
        from transformers.models.t5.modeling_t5 import T5Attention

        return T5Attention._relative_position_bucket(relative_position, bidirectional, num_buckets, max_distance)
    except ImportError:
        pass
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    relative_position_if_large = max_exact + (
        torch.log(relative_position.float() / max_exact)
        / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)
    ).to(torch.long)
    relative_position_if_large = torch.min(
        relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1)
    )
    relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
    return relative_buckets


def t5_grid():
    """(bidirectional, num_buckets, max_distance): tiny, odd, default and large, every boundary kind."""
    configs = []
    for bidirectional in (True, False):
        for nb in list(range(2, 67)) + [80, 96, 100, 127, 128, 200, 256, 320, 512]:
            me = (nb // 2 if bidirectional else nb) // 2
            if me < 1:
                continue
            mds = {me + 1, me + 2, me + 3, 2 * me, 2 * me + 1, 3 * me, 4 * me, 16, 27, 32, 64, 100, 128, 129,
                   160, 255, 256, 288, 300, 512, 1000, 1024, 2048, 5000}
            configs += [(bidirectional, nb, md) for md in sorted(mds) if md > me]
    return configs


# ---------------------------------------------------------------- T5 parity with the reference model

def exact_boundary(bidirectional, nb, md, n, bucket):
    """Whether distance magnitude n sits exactly on the start of log bucket ``bucket`` in exact arithmetic:
    log(n/me) / log(md/me) · (half - me) == bucket - me, i.e. (n/me)^(half-me) == (md/me)^(bucket-me)."""
    half = nb // 2 if bidirectional else nb
    me = half // 2
    k, c = half - me, (bucket % half) - me
    return 0 < c < k and n**k * me**c == md**c * me**k


def near_whole(bidirectional, nb, md, d, buckets):
    """Indices where |d| is within float rounding of the start of its log bucket: the only candidates
    for exact_boundary, whose big-integer test is too slow for every distance of a sweep."""
    half = nb // 2 if bidirectional else nb
    me = half // 2
    n, c = np.abs(d).astype(np.float64), buckets % half - me
    with np.errstate(divide="ignore"):
        gap = np.abs(np.log(n / me) * (half - me) - c * np.log(md / me))
    return np.nonzero((c > 0) & (c < half - me) & (gap < 1e-6))[0]


@pytest.mark.slow
@requires_torch
def test_t5_bucket_identical_to_torch_exhaustively(backend):
    """Every distance in [-2·max_distance-10, 2·max_distance+10] for ~3000 parameter sets, both backends.

    Identical everywhere except at distances where the formula's exact value is an integer
    (a bucket start hit exactly, e.g. num_buckets=96, max_distance=81, |d|=36: log(1.5)/log(3.375)·24 = 8).
    There the float32 result hinges on the last bit of the float32 log: a correctly rounded log
    gives the bucket below, MKL's log (PyTorch on some x86 CPUs) the exact one. posenc takes the
    exact bucket; a difference from PyTorch must be such a tie, with posenc on the exact side.
    """
    mismatches, tie_breaks, ties_seen, checked = [], [], 0, 0
    for bidirectional, nb, md in t5_grid():
        d = np.arange(-2 * md - 10, 2 * md + 11)
        expected = hf_bucket(torch.from_numpy(d), bidirectional, nb, md).numpy()
        got = posenc.t5_bucket(d, bidirectional=bidirectional, num_buckets=nb, max_distance=md)
        assert got.dtype == np.int32
        checked += d.size
        for i in np.nonzero(got != expected)[0]:
            n = abs(int(d[i]))
            entry = (bidirectional, nb, md, int(d[i]), int(expected[i]), int(got[i]))
            if int(got[i]) - int(expected[i]) == 1 and exact_boundary(bidirectional, nb, md, n, int(got[i])):
                tie_breaks.append(entry)
            else:
                mismatches.append(entry)
        ties_seen += sum(exact_boundary(bidirectional, nb, md, abs(int(d[i])), int(got[i]))
                         for i in near_whole(bidirectional, nb, md, d, got))
    assert not mismatches, mismatches[:10]
    assert ties_seen > 50  # the sweep does reach ties, and posenc gives each its exact bucket
    print(f"{len(tie_breaks)} of {ties_seen} exact ties differ from this PyTorch build's float32 log")


def t5_exact_bucket(bidirectional, nb, md, d):
    """The bucket in exact arithmetic where the formula's value is a whole number, else None (big integers)."""
    half = nb // 2 if bidirectional else nb
    me = half // 2
    n = abs(d) if bidirectional else max(-d, 0)
    direction = half if bidirectional and d > 0 else 0
    if n <= me or n >= md:  # exact buckets, or from max_distance on every bucket is clamped to half - 1
        return None
    c = round(math.log(n / me) / math.log(md / me) * (half - me))  # the only candidate; checked exactly
    return direction + me + c if 0 < c < half - me and exact_boundary(bidirectional, nb, md, n, direction + me + c) \
        else None


def test_t5_ties_are_the_whole_number_distances():
    """t5_ties lists exactly the magnitudes whose exact value is a whole number (checked with big integers)."""
    from posenc._plans.relative import t5_ties

    for bidirectional, nb, md in t5_grid()[::7]:
        half = nb // 2 if bidirectional else nb
        me = half // 2
        ties = t5_ties(half, me, md)
        listed = {int(n): int(b) for n, b in zip(ties.distances, ties.buckets) if n <= 4 * md}
        found = {n: t5_exact_bucket(bidirectional, nb, md, -n) for n in range(me + 1, 4 * md + 1)}
        assert listed == {n: b for n, b in found.items() if b is not None}, (bidirectional, nb, md)


# Ties whose float32 chain (correctly rounded log) and float64 port disagree, found by sweeping:
# (bidirectional, num_buckets, max_distance, distance, exact bucket, the other one). posenc must give
# the exact bucket (issue 15: t5_bucket([-36], num_buckets=96, max_distance=81) is 32).
EXACT_TIES = [
    (True, 18, 128, -64, 8, 7),
    (True, 20, 160, -80, 9, 8),
    (True, 34, 27, -12, 11, 10),
    (True, 34, 27, -18, 14, 13),
    (True, 38, 16, -12, 14, 13),
    (True, 38, 288, -144, 17, 16),
    (True, 72, 50, -30, 27, 26),
    (True, 96, 81, -36, 32, 31),
    (True, 96, 81, -54, 40, 39),
    (True, 96, 81, 54, 88, 87),
    (False, 48, 81, -54, 40, 39),
]


def float64_bucket(d, bidirectional, nb, md):
    """The same formula in float64: what a straightforward NumPy port computes."""
    ret = 0
    if bidirectional:
        nb //= 2
        ret = nb if d > 0 else 0
        n = abs(d)
    else:
        n = max(-d, 0)
    me = nb // 2
    if n < me:
        return ret + n
    return ret + min(me + int(math.log(n / me) / math.log(md / me) * (nb - me)), nb - 1)


def float32_chain_bucket(d, bidirectional, nb, md):
    """T5's float32 chain with a correctly rounded float32 log, without the exact-tie rule."""
    half = nb // 2 if bidirectional else nb
    me = half // 2
    n = abs(d) if bidirectional else max(-d, 0)
    direction = half if bidirectional and d > 0 else 0
    if n < me:
        return direction + n
    log_x = np.float32(math.log(float(np.float32(n) / np.float32(me))))
    v = log_x / np.float32(math.log(md / me)) * np.float32(half - me)
    return direction + min(me + int(v), half - 1)


@pytest.mark.parametrize("bidirectional,nb,md,d,exact,other", EXACT_TIES)
def test_t5_exact_ties(isa, bidirectional, nb, md, d, exact, other):
    assert t5_exact_bucket(bidirectional, nb, md, d) == exact
    assert other in (float64_bucket(d, bidirectional, nb, md), float32_chain_bucket(d, bidirectional, nb, md))
    kw = dict(bidirectional=bidirectional, num_buckets=nb, max_distance=md)
    assert int(posenc.t5_bucket(d, **kw)) == exact
    assert int(ref.t5_bucket(d, **kw)) == exact
    assert posenc.t5_buckets(1, 1, offset=-d, **kw)[0, 0] == exact


# The default (32 buckets, 128) boundaries every T5 port reproduces: 8 exact, then 12, 16, 23, 32, 46, 64, 91.
DEFAULT_STARTS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 23, 32, 46, 64, 91]


def default_bucket(d):
    """The default bidirectional bucket of each distance, from the published boundaries."""
    d = np.asarray(d, np.int64)
    return (np.searchsorted(DEFAULT_STARTS, np.abs(d), side="right") - 1 + 16 * (d > 0)).astype(np.int32)


def test_t5_published_default_buckets(isa):
    starts = DEFAULT_STARTS
    for bucket, first in enumerate(starts):
        last = starts[bucket + 1] - 1 if bucket + 1 < len(starts) else 10**6
        for d in {first, last}:
            assert posenc.t5_bucket(-d) == bucket
            assert posenc.t5_bucket(d) == (16 + bucket if d > 0 else 0)
    # Unidirectional: 16 exact buckets, then 16 log buckets up to 128.
    assert posenc.t5_bucket(-15, bidirectional=False) == 15 and posenc.t5_bucket(-128, bidirectional=False) == 31


@given(
    values=st.lists(st.integers(-(2**63), 2**63 - 1), max_size=60),
    dtype=st.sampled_from([np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64]),
    bidirectional=st.booleans(),
    nb=st.integers(2, 300),
    md=st.integers(1, 5000),
)
def test_t5_bucket_matches_reference(native_isa, values, dtype, bidirectional, nb, md):
    """The native boundary search against the reference's float32 chain: random values, and every
    distance out to 2·max_distance (each bucket's first and last distance among them)."""
    info = np.iinfo(dtype)
    every = range(max(-2 * md - 2, info.min), min(2 * md + 3, info.max + 1))
    d = np.array([min(max(v, info.min), info.max) for v in values] + list(every), dtype)
    kw = dict(bidirectional=bidirectional, num_buckets=nb, max_distance=md)
    try:
        expected = ref.t5_bucket(d, **kw)
    except ValueError:
        with pytest.raises(ValueError):
            posenc.t5_bucket(d, **kw)
        return
    got = posenc.t5_bucket(d, **kw)
    same_bits(got, expected)
    assert ((got >= 0) & (got < nb)).all()


def test_t5_bucket_shapes_and_extremes(isa):
    assert posenc.t5_bucket(5).shape == () and posenc.t5_bucket(5).dtype == np.int32
    x = np.arange(-130, 130, 13).reshape(4, 5)
    same_bits(posenc.t5_bucket(x), default_bucket(x))
    same_bits(posenc.t5_bucket(x[:, ::-2].T), default_bucket(x[:, ::-2].T))
    extremes = np.array([np.iinfo(np.int64).min, -(2**62) - 1, 2**62 + 1, np.iinfo(np.int64).max])
    same_bits(posenc.t5_bucket(extremes), np.array([15, 15, 31, 31], np.int32))
    same_bits(posenc.t5_bucket(np.array([2**64 - 1], np.uint64)), np.array([31], np.int32))
    # Huge max_distance: boundaries found by search, not by a table of max_distance entries.
    # (Each of these distances is far from a bucket boundary, where float32 and float64 agree.)
    d = [-(10**15), -(10**12), -(10**9), -1000, -20, 10**9, 10**13]
    got = posenc.t5_bucket(d, num_buckets=64, max_distance=10**12)
    assert got.tolist() == [float64_bucket(v, True, 64, 10**12) for v in d] == [31, 31, 27, 18, 16, 59, 63]
    assert len(posenc.t5_bucket([]).tolist()) == 0


@pytest.mark.parametrize("bidirectional,nb,md", [(b, nb, md) for b in (True, False)
                                                  for nb, md in [(32, 128), (7, 20), (64, 1000), (320, 5000)]]
                         + [(False, 3, 2), (True, 4, 2), (True, 5, 2)])
def test_t5_bucket_structure(isa, bidirectional, nb, md):
    """Independent of any reference: monotone in |d| per direction, exact below max_exact, symmetric halves."""
    half = nb // 2 if bidirectional else nb
    me = half // 2
    n = np.arange(0, 4 * md + 10)
    toward_past = posenc.t5_bucket(-n, bidirectional=bidirectional, num_buckets=nb, max_distance=md)
    assert (np.diff(toward_past) >= 0).all()
    np.testing.assert_array_equal(toward_past[:me], n[:me])
    assert toward_past[md:].min() == half - 1 and toward_past.max() == half - 1
    future = posenc.t5_bucket(n, bidirectional=bidirectional, num_buckets=nb, max_distance=md)
    if bidirectional:
        np.testing.assert_array_equal(future[1:], toward_past[1:] + half)
        assert future[0] == 0
    else:
        assert not future.any()


def assert_toeplitz(block):
    """block[..., i + 1, j + 1] == block[..., i, j]: a function of j - i only."""
    same_bits(block[..., 1:, 1:], block[..., :-1, :-1])


def distances(q, k, offset):
    """j - (offset + i) of a [q, k] block, written out."""
    i, j = np.meshgrid(np.arange(q), np.arange(k), indexing="ij")
    return j - (offset + i)


@given(q=st.integers(0, 70), k=st.integers(0, 70), offset=st.integers(-100, 300), bidirectional=st.booleans(),
       nb=st.sampled_from([2, 4, 5, 16, 32, 33, 64]), md=st.sampled_from([3, 20, 128, 129, 400]),
       use_out=st.booleans(), seed=st.integers(0, 2**31))
def test_t5_buckets_are_the_bucket_of_each_distance(isa, q, k, offset, bidirectional, nb, md, use_out, seed):
    """The block is t5_bucket of its distances (on native: the Toeplitz kernel against the elementwise path)."""
    max_exact = (nb // 2 if bidirectional else nb) // 2
    assume(max_exact >= 1 and md > max_exact)  # other parameters are refused (the hostile table)
    kw = dict(bidirectional=bidirectional, num_buckets=nb, max_distance=md)
    out = strided_view(np.full((q, k), 7, np.int32), np.random.default_rng(seed)) if use_out else None
    got = posenc.t5_buckets(q, k, offset=offset, out=out, **kw)
    if use_out:
        assert got is out
    assert_toeplitz(got)
    same_bits(got, posenc.t5_bucket(distances(q, k, offset), **kw))


def test_t5_buckets_kv_cache_step(isa):
    """A decoding step (q=1, offset=k-1) is the last row of the full block."""
    full = posenc.t5_buckets(300, 300, bidirectional=False)
    for q in (1, 5):
        step = posenc.t5_buckets(q, 300, offset=300 - q, bidirectional=False)
        same_bits(step, full[-q:])


@given(q=st.integers(0, 40), k=st.integers(0, 40), heads=st.integers(1, 5), nb=st.sampled_from([8, 32, 33]),
       dtype=st.sampled_from(FLOAT_DTYPES), offset=st.integers(-50, 50), bidirectional=st.booleans(),
       use_out=st.booleans(), seed=st.integers(0, 2**31))
def test_t5_bias_is_a_table_lookup(isa, q, k, heads, nb, dtype, offset, bidirectional, use_out, seed):
    """bias[h, i, j] = table[t5_buckets(...)[i, j], h], every value copied exactly."""
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((nb, heads)).astype(dtype)
    if rng.random() < 0.5:
        table = strided_view(table, rng)
    kw = dict(offset=offset, bidirectional=bidirectional, max_distance=40)
    out = strided_view(np.zeros((heads, q, k), dtype), rng) if use_out else None
    got = posenc.t5_bias(table, q, k, out=out, **kw)
    if use_out:
        assert got is out
    assert got.shape == (heads, q, k) and got.dtype == np.dtype(dtype)
    assert_toeplitz(got)
    buckets = posenc.t5_buckets(q, k, offset=offset, bidirectional=bidirectional, num_buckets=nb, max_distance=40)
    same_bits(got, np.moveaxis(np.asarray(table)[buckets], -1, 0))


@requires_torch
def test_t5_bias_matches_hugging_face_compute_bias(isa):
    """The bias T5Attention.compute_bias builds (embedding of HF buckets, permuted to [heads, q, k])."""
    table = torch.randn(32, 8)
    for q, k, bidirectional in [(1, 1, True), (37, 37, True), (20, 150, False), (200, 200, True)]:
        ctx = torch.arange(q)[:, None] + (k - q)
        mem = torch.arange(k)[None, :]
        hf = table[hf_bucket(mem - ctx, bidirectional, 32, 128)].permute(2, 0, 1).numpy()
        same_bits(posenc.t5_bias(table.numpy(), q, k, offset=k - q, bidirectional=bidirectional), hf)


# ---------------------------------------------------------------- adding into scores

ADD_MODES = ["new", "inplace", "strided", "strided-inplace", "out"]


def add_in_mode(add, scores, mode, rng, **kw):
    """``add(scores, **kw)`` into a new array, in place, from a strided view or into ``out``, as ``mode`` says.

    Checks what the call returns (``out`` itself) and that a new result leaves ``scores`` as it was.
    """
    if mode.startswith("strided"):
        scores = strided_view(scores, rng)
    if mode.endswith("inplace"):
        assert add(scores, out=scores, **kw) is scores
        return scores
    if mode == "out":
        out = np.zeros_like(scores)
        assert add(scores, out=out, **kw) is out
        return out
    before = scores.copy()
    got = add(scores, **kw)
    same_bits(scores, before)
    return got


@given(lead=st.lists(st.integers(0, 3), max_size=2), heads=st.integers(1, 4), q=st.integers(0, 40),
       k=st.integers(0, 70), dtype=st.sampled_from(FLOAT_DTYPES), table_dtype=st.sampled_from(FLOAT_DTYPES),
       offset=st.integers(-60, 60), mode=st.sampled_from(ADD_MODES), seed=st.integers(0, 2**31))
def test_add_t5_bias_matches_reference(native_isa, lead, heads, q, k, dtype, table_dtype, offset, mode, seed):
    rng = np.random.default_rng(seed)
    scores = (rng.standard_normal(tuple(lead) + (heads, q, k)) * 4).astype(dtype)
    table = rng.standard_normal((32, heads)).astype(table_dtype)
    expected = ref.add_t5_bias(scores, table, offset=offset)
    same_bits(add_in_mode(lambda s, **kw: posenc.add_t5_bias(s, table, **kw), scores, mode, rng, offset=offset),
              expected)


@pytest.mark.parametrize("mode", ADD_MODES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_add_t5_bias_is_numpys_sum(isa, dtype, mode):
    """Documented: exactly NumPy's ``scores + t5_bias(table)`` with the table rounded to the scores' dtype."""
    rng = np.random.default_rng(11)
    scores = (rng.standard_normal((2, 3, 7, 19)) * 4).astype(dtype)
    # A wider table is rounded once first (float64 to bfloat16 is not: NumPy goes through float32).
    wide = rng.standard_normal((32, 3)).astype(np.float32 if posenc._checks.is_bfloat16(dtype) else np.float64)
    for table in (wide.astype(dtype), wide):
        want = scores + posenc.t5_bias(table.astype(dtype), 7, 19, offset=5, bidirectional=False)
        got = add_in_mode(lambda s, **kw: posenc.add_t5_bias(s, table, **kw), scores.copy(), mode, rng, offset=5,
                          bidirectional=False)
        same_bits(got, want)


def alibi_closed_form(heads, q, k, offset=0, dtype=np.float32):
    """ALiBi's causal bias written out: the authors' slopes times j - (offset + i), rounded once (not bfloat16)."""
    slopes = np.array(authors_get_slopes(heads))
    return (slopes[:, None, None] * distances(q, k, offset)).astype(dtype)


def test_add_into_a_slice_of_a_larger_buffer(isa):
    """Strided scores (a slice of a bigger buffer) are updated in place, neighbours untouched."""
    buf = np.random.default_rng(5).standard_normal((2, 3, 4, 30, 50)).astype(np.float32)
    before = buf.copy()
    view = buf[:, 1, :, ::2, 1::2][..., ::-1]
    posenc.add_alibi(view, out=view, offset=3)
    same_bits(view, before[:, 1, :, ::2, 1::2][..., ::-1] + alibi_closed_form(4, 15, 25, offset=3))
    mask = np.ones(buf.shape, bool)
    mask[:, 1, :, ::2, 1::2] = False
    same_bits(buf[mask], before[mask])
    after_alibi = view.copy()
    table = np.random.default_rng(6).standard_normal((32, 4)).astype(np.float32)
    posenc.add_t5_bias(view, table, out=view, offset=3)
    same_bits(view, after_alibi + np.moveaxis(table[default_bucket(distances(15, 25, 3))], -1, 0))
    same_bits(buf[mask], before[mask])


def test_add_misaligned_and_byteswapped(isa):
    raw = np.zeros(4 * 2 * 9 * 11 + 1, np.uint8)
    x = np.frombuffer(raw.data, dtype=np.float32, count=2 * 9 * 11, offset=1).reshape(2, 9, 11)
    assert not x.flags.aligned
    expected = alibi_closed_form(2, 9, 11, offset=2)
    same_bits(posenc.add_alibi(x, offset=2), expected)
    same_bits(posenc.add_alibi(np.zeros((2, 9, 11), ">f4"), offset=2), expected)
    writable = np.frombuffer(bytearray(4 * 2 * 9 * 11 + 1), dtype=np.float32, count=2 * 9 * 11, offset=1).reshape(2, 9, 11)
    assert posenc.add_alibi(writable, offset=2, out=writable) is writable
    same_bits(writable, expected)


@requires_torch
def test_add_from_torch_in_place(isa):
    t = torch.zeros(2, 4, 6, 6)
    posenc.add_alibi(t.numpy(), out=t.numpy())
    same_bits(t.numpy(), np.broadcast_to(alibi_closed_form(4, 6, 6), (2, 4, 6, 6)))


# ---------------------------------------------------------------- ALiBi

def authors_get_slopes(n):
    """ofirpress/attention_with_linear_biases, fairseq/models/transformer.py, verbatim."""

    def get_slopes_power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        ratio = start
        return [start * ratio**i for i in range(n)]

    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 2 ** math.floor(math.log2(n))
    return get_slopes_power_of_2(closest_power_of_2) + authors_get_slopes(2 * closest_power_of_2)[0::2][: n - closest_power_of_2]


@pytest.mark.parametrize("heads", list(range(1, 70)) + [80, 96, 100, 128, 255, 256, 1000])
def test_alibi_slopes_are_the_authors(heads):
    expected = np.array(authors_get_slopes(heads), np.float64)
    same_bits(posenc.alibi_slopes(heads, np.float64), expected)
    same_bits(posenc.alibi_slopes(heads), expected.astype(np.float32))
    same_bits(posenc.alibi_slopes(heads, np.float16), expected.astype(np.float16))
    if math.log2(heads).is_integer():  # closed form 2^(-8(i+1)/n), within float64 rounding of the product
        closed = 2.0 ** (-8.0 * np.arange(1, heads + 1) / heads)
        np.testing.assert_allclose(posenc.alibi_slopes(heads, np.float64), closed, rtol=4e-16 * heads, atol=0)
        if heads <= 8:
            same_bits(posenc.alibi_slopes(heads, np.float64), closed)


def test_alibi_slopes_known_values():
    assert posenc.alibi_slopes(8).tolist() == [2.0**-k for k in range(1, 9)]
    assert posenc.alibi_slopes(4).tolist() == [2.0**-k for k in (2, 4, 6, 8)]
    # 12 heads: the 8 of 8, then 1st, 3rd, 5th, 7th of 16 (2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5).
    np.testing.assert_allclose(posenc.alibi_slopes(12, np.float64)[8:], 2.0 ** -np.array([0.5, 1.5, 2.5, 3.5]),
                               rtol=1e-15)


@requires_torch
def test_alibi_slopes_against_bloom():
    """BLOOM's float32 pow: equal for 1..10 heads, then within the documented relative bounds."""
    try:
        from transformers.models.bloom.modeling_bloom import _get_alibi_slopes
    except ImportError:
        pytest.skip("transformers not installed")
    worst = {64: 0.0, 128: 0.0, 256: 0.0}
    for heads in range(1, 257):
        bloom = _get_alibi_slopes(heads, "cpu").numpy()
        ours = posenc.alibi_slopes(heads)
        if heads <= 10:
            same_bits(ours, bloom)
        rel = float(np.max(np.abs(bloom.astype(np.float64) / posenc.alibi_slopes(heads, np.float64) - 1)))
        for bound in worst:
            if heads <= bound:
                worst[bound] = max(worst[bound], rel)
    assert worst[64] <= 4.8e-7 and worst[128] <= 6.8e-7 and worst[256] <= 2.3e-6, worst


@given(heads=st.integers(1, 9), q=st.integers(0, 40), k=st.integers(0, 70), offset=st.integers(-2**40, 2**40),
       symmetric=st.booleans(), dtype=st.sampled_from(FLOAT_DTYPES), custom=st.booleans(), use_out=st.booleans(),
       seed=st.integers(0, 2**31))
def test_alibi_bias_is_the_definition(isa, heads, q, k, offset, symmetric, dtype, custom, use_out, seed):
    """slope_h·(j - (offset + i)), or -slope_h·|...|, in float64, rounded once."""
    rng = np.random.default_rng(seed)
    slopes = rng.uniform(-3, 3, heads) if custom else None
    kw = dict(offset=offset, symmetric=symmetric, slopes=slopes, dtype=dtype)
    out = strided_view(np.zeros((heads, q, k), dtype), rng) if use_out else None
    got = posenc.alibi_bias(heads, q, k, out=out, **kw)
    if use_out:
        assert got is out
    assert_toeplitz(got)
    s = np.asarray(slopes if custom else authors_get_slopes(heads), np.float64)
    d = distances(q, k, offset)
    exact = s[:, None, None] * (-np.abs(d) if symmetric else d)
    if not posenc._checks.is_bfloat16(dtype):  # NumPy rounds float64 to these once
        with np.errstate(over="ignore"):  # float16 overflows to inf at large offsets, as posenc does
            same_bits(got, exact.astype(dtype))
    else:  # NumPy would round twice (through float32): within half an ulp instead
        assert_close_to_float64(got, exact)


def test_alibi_sign_convention_and_bloom_softmax(isa):
    """Causal: 0 on the diagonal, -slope per step back. BLOOM's slope·j gives the same softmax."""
    bias = posenc.alibi_bias(4, 5, 5, dtype=np.float64)
    slopes = posenc.alibi_slopes(4, np.float64)
    np.testing.assert_array_equal(np.diagonal(bias, axis1=1, axis2=2), 0.0)
    np.testing.assert_array_equal(bias[:, 3, 1], -2 * slopes)
    np.testing.assert_array_equal(bias[:, 1, 3], 2 * slopes)
    sym = posenc.alibi_bias(4, 5, 5, symmetric=True, dtype=np.float64)
    np.testing.assert_array_equal(sym, -np.abs(bias))
    scores = np.random.default_rng(9).standard_normal((4, 5, 5))
    causal = np.tril(np.ones((5, 5), bool))

    def softmax(x):
        x = np.where(causal, x, -np.inf)
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    bloom = slopes[:, None, None] * np.arange(5)[None, None, :]
    np.testing.assert_allclose(softmax(scores + bias), softmax(scores + bloom), rtol=1e-12, atol=1e-15)


@given(lead=st.lists(st.integers(0, 3), max_size=2), heads=st.integers(1, 6), q=st.integers(0, 30),
       k=st.integers(0, 60), dtype=st.sampled_from(FLOAT_DTYPES), offset=st.integers(-50, 50),
       symmetric=st.booleans(), mode=st.sampled_from(ADD_MODES), custom=st.booleans(), seed=st.integers(0, 2**31))
def test_add_alibi_matches_reference(native_isa, lead, heads, q, k, dtype, offset, symmetric, mode, custom, seed):
    rng = np.random.default_rng(seed)
    scores = (rng.standard_normal(tuple(lead) + (heads, q, k)) * 4).astype(dtype)
    slopes = rng.uniform(0, 1, heads).astype(np.float32) if custom else None
    kw = dict(offset=offset, symmetric=symmetric, slopes=slopes)
    expected = ref.add_alibi(scores, **kw)
    same_bits(add_in_mode(posenc.add_alibi, scores, mode, rng, **kw), expected)


@pytest.mark.parametrize("mode", ADD_MODES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("symmetric", [False, True])
def test_add_alibi_is_numpys_sum(isa, dtype, mode, symmetric):
    """Documented: exactly NumPy's ``scores + alibi_bias(...)`` with the bias in the scores' dtype."""
    rng = np.random.default_rng(12)
    scores = (rng.standard_normal((2, 3, 7, 19)) * 4).astype(dtype)
    for slopes in (None, rng.uniform(-1, 1, 3)):
        kw = dict(offset=5, symmetric=symmetric, slopes=slopes)
        want = scores + posenc.alibi_bias(3, 7, 19, dtype=dtype, **kw)
        same_bits(add_in_mode(posenc.add_alibi, scores.copy(), mode, rng, **kw), want)


@pytest.mark.parametrize("k", [1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 97])
def test_every_vector_tail(native_isa, k):
    for dtype in FLOAT_DTYPES:
        scores = np.random.default_rng(k).standard_normal((3, 5, k)).astype(dtype)
        same_bits(posenc.add_alibi(scores, offset=k - 5), ref.add_alibi(scores, offset=k - 5))
        same_bits(posenc.alibi_bias(3, 5, k, dtype=dtype), ref.alibi_bias(3, 5, k, dtype=dtype))


def test_alibi_add_binding_checks_what_it_is_given(isa):
    """native.alibi_add (bias rows built in C++, rounded once to the scores' dtype) refuses what would read
    or write out of bounds itself, the last line before the kernel."""
    native = posenc._backend.native
    scores = np.full((2, 3, 4), 7, np.float32)
    slopes = posenc.alibi_slopes(2, dtype=np.float64)
    with pytest.raises(ValueError, match="slopes"):
        native.alibi_add(scores, scores, slopes[:1], 0, False)
    with pytest.raises(ValueError, match="slopes"):
        native.alibi_add(scores, scores, slopes.astype(np.float32), 0, False)
    with pytest.raises(TypeError, match="float32, float64, float16 or bfloat16"):
        native.alibi_add(scores.astype(np.int16), scores.astype(np.int16), slopes, 0, False)
    with pytest.raises(TypeError, match="dtype of scores"):
        native.alibi_add(scores, scores.astype(np.float64), slopes, 0, False)
    with pytest.raises(ValueError, match=r"\[\.\.\., heads, q, k\]"):
        native.alibi_add(scores[0], scores[0], slopes, 0, False)
    with pytest.raises(ValueError, match="2\\*\\*53"):
        native.alibi_add(scores, scores, slopes, 2**53 + 1, False)
    with pytest.raises(ValueError, match="shape"):
        native.alibi_add(scores, scores[:, :2], slopes, 0, False)
    assert (scores == 7).all()
    native.alibi_add(scores, scores, slopes, 1, True)
    same_bits(scores, ref.add_alibi(np.full((2, 3, 4), 7, np.float32), offset=1, symmetric=True))
    # The rows alone (alibi_bias streams them): where they go, and what they refuse.
    lut = np.full((2, 6), 7, np.float32)
    native.alibi_rows(slopes, lut, -2, False)
    same_bits(lut, (slopes[:, None] * np.arange(-2, 4)).astype(np.float32))
    for bad in (np.empty(12, np.float32), np.empty((2, 12), np.float32)[:, ::2], np.empty((3, 6), np.float32)):
        with pytest.raises(ValueError, match="lut|slopes"):
            native.alibi_rows(slopes, bad, 0, False)
    readonly = np.empty((2, 6), np.float32)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        native.alibi_rows(slopes, readonly, 0, False)
    with pytest.raises(ValueError, match="2\\*\\*54"):
        native.alibi_rows(slopes, lut, -(2**54) - 1, False)
    # Half precision: the rows rounded once (slope·d lands between float16 values at these distances).
    for dtype in FLOAT_DTYPES:
        halves = np.full((2, 3, 40), 7, dtype)
        native.alibi_add(halves, halves, slopes * 0.7, 1000, False)
        same_bits(halves, ref.add_alibi(np.full((2, 3, 40), 7, dtype), offset=1000, slopes=slopes * 0.7))


def test_bucket_rows_binding_checks_what_it_is_given(isa):
    """native.bucket_rows (T5's lookup rows: table[buckets[m], h] as row h) gathers from any strides and
    refuses a bucket outside the table, which it would otherwise read out of bounds."""
    native = posenc._backend.native
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    buckets = np.array([3, 0, 0, 2, 1], np.int32)
    for t in (table, negative_strides(table), stepped(table), np.asfortranarray(table)):
        rows = native.bucket_rows(t, buckets)
        assert rows.flags.c_contiguous and rows.dtype == t.dtype
        same_bits(rows, table[buckets].T)
    for bad in (-1, 4, 2**31 - 1):
        with pytest.raises(ValueError, match="outside the table"):
            native.bucket_rows(table, np.array([0, bad], np.int32))
    with pytest.raises(TypeError, match="int32"):
        native.bucket_rows(table, buckets.astype(np.int64))
    with pytest.raises(TypeError, match="int32"):
        native.bucket_rows(table, np.stack([buckets, buckets]))
    with pytest.raises(ValueError, match=r"\[num_buckets, heads\]"):
        native.bucket_rows(table[0], buckets)
    with pytest.raises(ValueError, match="aligned"):
        native.bucket_rows(misaligned(table), buckets)
    same_bits(native.bucket_rows(table, buckets[:0]), np.zeros((3, 0), np.float32))


def test_t5_bias_reads_the_table_at_every_call(isa):
    """The executors keep lookup rows of buckets between calls, never the table's values: a table changed in
    place between two calls of the same shape is what the second call adds."""
    table = np.zeros((32, 2), np.float32)
    scores = np.zeros((2, 3, 5), np.float32)
    same_bits(posenc.add_t5_bias(scores, table, offset=2), scores)
    table[...] = np.arange(64, dtype=np.float32).reshape(32, 2)
    same_bits(posenc.add_t5_bias(scores, table, offset=2), ref.add_t5_bias(scores, table, offset=2))
    same_bits(posenc.t5_bias(table, 3, 5, offset=2), ref.t5_bias(table, 3, 5, offset=2))


# ---------------------------------------------------------------- positions and Shaw embeddings

@given(q=st.integers(0, 50), k=st.integers(0, 50), offset=st.integers(-2**40, 2**40),
       dtype=st.sampled_from([np.int64, np.int32, np.int16]), m=st.integers(0, 60), use_out=st.booleans(),
       seed=st.integers(0, 2**31))
def test_positions_are_the_distances(isa, q, k, offset, dtype, m, use_out, seed):
    """j - (offset + i), refused exactly when a value does not fit the dtype; Shaw's clip(., -m, m) + m."""
    rng = np.random.default_rng(seed)
    raw = distances(q, k, offset)
    info = np.iinfo(dtype)
    if q and k and (raw.min() < info.min or raw.max() > info.max):
        with pytest.raises(ValueError, match="fit"):
            posenc.relative_positions(q, k, offset=offset, dtype=dtype)
    else:
        out = strided_view(np.zeros((q, k), dtype), rng) if use_out else None
        got = posenc.relative_positions(q, k, offset=offset, dtype=dtype, out=out)
        if use_out:
            assert got is out
        same_bits(got, raw.astype(dtype))
    clipped = posenc.clipped_relative_positions(q, k, m, offset=offset, dtype=dtype)
    same_bits(clipped, (np.clip(raw, -m, m) + m).astype(dtype))


@given(q=st.integers(0, 30), k=st.integers(0, 30), d=st.integers(0, 20), m=st.integers(0, 12),
       offset=st.integers(-40, 40), dtype=st.sampled_from(FLOAT_DTYPES),
       out_mode=st.sampled_from(["none", "strided", "transposed"]), seed=st.integers(0, 2**31))
def test_relative_embeddings_are_table_rows(isa, q, k, d, m, offset, dtype, out_mode, seed):
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((2 * m + 1, d)).astype(dtype)
    if rng.random() < 0.3:
        table = strided_view(table, rng)
    out = None
    if out_mode == "strided":
        out = strided_view(np.zeros((q, k, d), dtype), rng)
    elif out_mode == "transposed":  # [k, d] axes that cannot merge
        out = np.zeros((d, k, q), dtype).T
    got = posenc.relative_embeddings(table, q, k, m, offset=offset, out=out)
    if out is not None:
        assert got is out
    assert got.shape == (q, k, d) and got.dtype == np.dtype(dtype)
    idx = np.clip(distances(q, k, offset), -m, m) + m  # Shaw et al. 2018, eq. (3)
    same_bits(got, np.asarray(table)[idx])


# ---------------------------------------------------------------- empty results

def test_empty_results(isa):
    assert posenc.t5_buckets(0, 5).shape == (0, 5)
    assert posenc.t5_buckets(5, 0).shape == (5, 0)
    assert posenc.t5_bias(np.zeros((32, 3), np.float32), 0, 0).shape == (3, 0, 0)
    assert posenc.alibi_bias(2, 0, 4).shape == (2, 0, 4)
    assert posenc.add_alibi(np.zeros((0, 2, 3, 4), np.float32)).shape == (0, 2, 3, 4)
    assert posenc.add_t5_bias(np.zeros((2, 0, 4), np.float32), np.zeros((32, 2), np.float32)).shape == (2, 0, 4)
    assert posenc.relative_embeddings(np.zeros((3, 0), np.float32), 2, 2, 1).shape == (2, 2, 0)
    assert posenc.relative_positions(0, 0).shape == (0, 0)


# ---------------------------------------------------------------- DeBERTa log buckets

def deberta_configs():
    """(bucket_size, max_position): tiny, odd, DeBERTa's (256, 512), and whole-number (tie) configurations."""
    configs = set()
    for bs in list(range(2, 41)) + [64, 127, 128, 255, 256, 257, 512, 1024]:
        mid = bs // 2
        for mp in (mid + 2, mid + 3, bs, bs + 1, 2 * bs, 3 * bs + 1, 512, 513, 4 * mid + 1, 16 * mid + 1, 2049):
            if mp - 1 > mid:
                configs.add((bs, mp))
    return sorted(configs)


def ulps_away(v, k):
    """The float32 k steps from v (k < 0: downward)."""
    for _ in range(abs(k)):
        v = np.nextafter(v, np.float32(np.inf if k > 0 else -np.inf), dtype=np.float32)
    return v


def deberta_scalar(d, bs, mp, log_ulps=(0, 0)):
    """Transformers' make_log_bucket_position for one distance, written out with NumPy float32 scalars.

    Independent of posenc's vectorised chain: Python's float64 log of the float32 argument,
    rounded once (the correctly rounded float32 log), every other step a float32 scalar operation.
    ``log_ulps`` moves the logs of |d|/mid and of (max_position - 1)/mid that many float32 steps,
    as a platform's float32 log that is not correctly rounded may.
    """
    mid = bs // 2
    if bs <= 0 or mp <= 0 or abs(d) <= mid:
        return d
    x = np.float32(abs(d)) / np.float32(mid)
    log_x = ulps_away(np.float32(math.log(float(x))), log_ulps[0])
    log_b = ulps_away(np.float32(math.log(float(np.float32((mp - 1) / mid)))), log_ulps[1])
    bucket = np.float32(np.ceil(log_x / log_b * np.float32(mid - 1))) + np.float32(mid)
    return int(bucket) * (1 if d > 0 else -1)


def hf_deberta_bucket(relative_position, bs, mp):
    from transformers.models.deberta_v2.modeling_deberta_v2 import make_log_bucket_position

    return make_log_bucket_position(relative_position, bs, mp).to(torch.long)


def test_deberta_bucket_float32_transcription(isa):
    """Every distance in [-3·max_position, 3·max_position] of ~400 configurations against the scalar chain."""
    for bs, mp in deberta_configs()[::4]:
        d = np.arange(-3 * mp, 3 * mp + 1)
        got = posenc.deberta_bucket(d, bucket_size=bs, max_position=mp)
        assert got.dtype == np.int64
        want = np.array([deberta_scalar(int(v), bs, mp) for v in d])
        np.testing.assert_array_equal(got, want, err_msg=f"bucket_size={bs}, max_position={mp}")


def test_deberta_float32_boundaries_differ_from_float64(isa):
    """The float32 chain matters: at DeBERTa's own (256, 512) some buckets differ from float64 arithmetic."""
    d = np.arange(129, 100_000)
    float64 = 128 + np.ceil(np.log(d / 128) / np.log(511 / 128) * 127).astype(np.int64)
    got = posenc.deberta_bucket(d)
    differ = np.nonzero(got != float64)[0]
    assert differ.size > 0
    assert np.all(np.abs(got[differ] - float64[differ]) == 1)
    np.testing.assert_array_equal(got[differ], [deberta_scalar(int(v), 256, 512) for v in d[differ]])


def test_deberta_ties_are_the_whole_number_distances():
    """deberta_ties lists exactly the distances whose exact value is an integer (checked with big integers)."""
    from posenc._plans.relative import deberta_ties

    for bs in range(4, 41):  # bucket_size 2, 3: mid - 1 = 0, every value is 0 exactly (times 0.0)
        mid = bs // 2
        for mp in range(mid + 2, 4 * bs + 3):
            listed = {n: b for n, b in deberta_ties(mid, mp) if n <= 20 * mp}
            found = {}
            for n in range(mid + 1, 20 * mp + 1):
                v = math.log(n / mid) / math.log((mp - 1) / mid) * (mid - 1)
                t = round(v)
                # (n / mid)^(mid - 1) == ((mp - 1) / mid)^t, in integers
                if abs(v - t) < 1e-6 and n ** (mid - 1) * mid**t == (mp - 1) ** t * mid ** (mid - 1):
                    found[n] = mid + t
            assert listed == found, (bs, mp)


@requires_torch
def test_deberta_bucket_identical_to_transformers(backend):
    """Transformers' own make_log_bucket_position: every distance in ±(4·max_position + 10) of the sweep,
    and every whole-number (tie) distance below 2**62 of each configuration, both signs.

    Identical except where the last bit of the platform's float32 log decides:
    - at ties, where the exact value is an integer: the float32 value lands just above or below it
      depending on that bit, and posenc takes the exact bucket (T5's rule);
    - where PyTorch's float32 log is not the correctly rounded one and the chain's value lies within
      its error of an integer: posenc keeps the correctly rounded log's bucket, and Transformers' must
      be the chain's with one of the two logs one float32 step away. (PyTorch 2.13's CPU build on an
      AMD EPYC gave six such distances, in configurations with max_position just above
      bucket_size / 2, where the base's log is near 0 and the quotient magnifies its last bit.)
    Any other difference fails.
    """
    pytest.importorskip("transformers")
    from posenc._plans.relative import deberta_ties

    torch.set_num_threads(2)
    mismatches, tie_breaks, log_breaks, ties_checked = [], 0, 0, 0
    steps = [(a, b) for a in (-1, 0, 1) for b in (-1, 0, 1) if (a, b) != (0, 0)]
    for bs, mp in deberta_configs():
        exact = dict(deberta_ties(bs // 2, mp))
        ties = np.array([n for n in exact if n < 2**62], np.int64)
        ties_checked += ties.size
        d = np.concatenate([np.arange(-4 * mp - 10, 4 * mp + 11), ties, -ties])
        want = hf_deberta_bucket(torch.from_numpy(d), bs, mp).numpy()
        got = posenc.deberta_bucket(d, bucket_size=bs, max_position=mp)
        for i in np.nonzero(got != want)[0]:
            n = abs(int(d[i]))
            if n in exact and int(got[i]) == int(np.sign(d[i])) * exact[n]:
                tie_breaks += 1
            elif int(got[i]) == deberta_scalar(int(d[i]), bs, mp) and any(
                    deberta_scalar(int(d[i]), bs, mp, ab) == int(want[i]) for ab in steps):
                log_breaks += 1
            else:
                mismatches.append((bs, mp, int(d[i]), int(want[i]), int(got[i])))
        for n, b in exact.items():  # posenc gives every tie its exact bucket, whatever Transformers does
            if n < 2**62:
                assert posenc.deberta_bucket(np.array([n, -n]), bucket_size=bs, max_position=mp).tolist() == [b, -b]
    assert ties_checked > 1000
    assert not mismatches, mismatches[:10]
    print(f"{tie_breaks} of {2 * ties_checked} tie distances differ from this PyTorch build's float32 log, "
          f"and {log_breaks} other distances where its log is one float32 step off")


@requires_torch
@pytest.mark.parametrize("q, k, bs, mp", [(0, 5, 256, 512), (7, 3, 256, 512), (300, 700, 256, 512),
                                          (64, 64, 8, 13), (50, 90, 0, 512), (20, 20, 16, -1)])
def test_deberta_buckets_identical_to_build_relative_position(isa, q, k, bs, mp):
    pytest.importorskip("transformers")
    from transformers.models.deberta_v2.modeling_deberta_v2 import build_relative_position

    want = build_relative_position(torch.zeros(q, 4), torch.zeros(k, 4), bucket_size=bs, max_position=mp)[0]
    same_bits(posenc.deberta_buckets(q, k, bucket_size=bs, max_position=mp), want.numpy())


@given(q=st.integers(0, 70), k=st.integers(0, 70), offset=st.integers(-100, 3000),
       cfg=st.sampled_from([(256, 512), (8, 13), (2, 3 + 2), (33, 100), (0, 512), (256, -1), (1024, 4096)]),
       use_out=st.booleans(), seed=st.integers(0, 2**31))
def test_deberta_buckets_are_the_bucket_of_each_offset(isa, q, k, offset, cfg, use_out, seed):
    """The block is deberta_bucket((offset + i) - j) (on native: the Toeplitz kernel against the elementwise path)."""
    kw = dict(bucket_size=cfg[0], max_position=cfg[1])
    out = strided_view(np.full((q, k), 7, np.int64), np.random.default_rng(seed)) if use_out else None
    got = posenc.deberta_buckets(q, k, offset=offset, out=out, **kw)
    if use_out:
        assert got is out
    assert got.dtype == np.int64 and got.shape == (q, k)
    assert_toeplitz(got)
    same_bits(got, posenc.deberta_bucket(-distances(q, k, offset), **kw))


def test_deberta_bucket_extremes(isa):
    """Far distances keep growing logarithmically with their sign; |INT64_MIN| is 2**63, no wrap-around."""
    big = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).min + 1, -2**62, 2**62, np.iinfo(np.int64).max])
    got = posenc.deberta_bucket(big)
    want = [deberta_scalar(int(v), 256, 512) for v in big]
    np.testing.assert_array_equal(got, want)
    assert got[0] < 0 and got[0] == -got[-1] and got[2] == -got[3] and 128 < got[3] < got[4]


def test_deberta_buckets_kv_cache_step(isa):
    """A decoding step (q new queries, offset k - q) is the last rows of the full block."""
    full = posenc.deberta_buckets(600, 600)
    for q in (1, 5):
        same_bits(posenc.deberta_buckets(q, 600, offset=600 - q), full[-q:])


# ---------------------------------------------------------------- relative_shift (Transformer-XL / Conformer)

def conformer_rel_shift(scores_bd):
    """Transformers' Wav2Vec2ConformerSelfAttention shift (Parakeet's is checked on its own below), q = k = T:
    pad a zero column on the left, view as [..., 2T, T], drop the first row, view back, keep T columns."""
    *lead, t, width = scores_bd.shape
    padded = np.concatenate([np.zeros((*lead, t, 1), scores_bd.dtype), scores_bd], axis=-1)
    padded = padded.reshape(*lead, width + 1, t)
    return padded[..., 1:, :].reshape(*lead, t, width)[..., : width // 2 + 1]


def transformer_xl_rel_shift(x):
    """Transformer-XL's original _rel_shift (kimiyoung/transformer-xl, pytorch/mem_transformer.py), on
    x [qlen, klen, ...] whose column c scores distance klen - 1 - c; valid where j <= klen - qlen + i."""
    zero_pad = np.zeros((x.shape[0], 1, *x.shape[2:]), x.dtype)
    x_padded = np.concatenate([zero_pad, x], axis=1)
    x_padded = x_padded.reshape(x.shape[1] + 1, x.shape[0], *x.shape[2:])
    return x_padded[1:].reshape(x.shape)


@given(lead=st.sampled_from([(), (3,), (2, 3)]), q=st.integers(0, 9), k=st.integers(0, 9),
       dtype=st.sampled_from(FLOAT_DTYPES), seed=st.integers(0, 2**31))
def test_relative_shift_is_the_definition(isa, lead, q, k, dtype, seed):
    """out[..., i, j] = bd[..., i, (q - 1) - i + j], any leading axes and strides; a read-only view."""
    assume(q + k >= 1)  # q = k = 0 has no width (-1): q = 0 with width w means k = w + 1
    rng = np.random.default_rng(seed)
    bd = strided_view(rng.standard_normal((*lead, q, q + k - 1)).astype(dtype), rng)
    got = posenc.relative_shift(bd)
    assert got.shape == (*lead, q, k) and got.dtype == bd.dtype and not got.flags.writeable
    i, j = np.meshgrid(np.arange(q), np.arange(k), indexing="ij")
    same_bits(got, bd[..., i, (q - 1) - i + j] if q and k else np.empty((*lead, q, k), bd.dtype))
    if got.size:
        assert np.shares_memory(got, bd)


@pytest.mark.parametrize("lead, t", [((), 1), ((), 5), ((2, 4), 7)])
def test_relative_shift_equals_the_conformer_trick(isa, lead, t):
    bd = np.random.default_rng(t).standard_normal((*lead, t, 2 * t - 1))
    same_bits(posenc.relative_shift(bd), conformer_rel_shift(bd))


@pytest.mark.parametrize("q, k", [(1, 1), (3, 3), (3, 8), (4, 10), (1, 6)])
def test_relative_shift_equals_transformer_xl_with_memory(isa, q, k):
    """Memory of k - q keys: Transformer-XL's shift of the table's first k columns, where it is valid."""
    rng = np.random.default_rng(q * 100 + k)
    bd = rng.standard_normal((q, q + k - 1, 2, 3))  # Transformer-XL's layout [qlen, rlen, batch, heads]
    want = transformer_xl_rel_shift(bd[:, :k])
    got = np.moveaxis(posenc.relative_shift(np.moveaxis(bd, (0, 1), (-2, -1))), (-2, -1), (0, 1))
    valid = np.arange(k)[None, :] <= (k - q) + np.arange(q)[:, None]  # causal: the rest is masked junk
    same_bits(got[valid], want[valid])


@requires_torch
@pytest.mark.parametrize("t", [1, 5, 12])
def test_relative_shift_equals_parakeets(isa, t):
    """Transformers' Parakeet encoder attention: ``_rel_shift`` (NeMo's pad-and-reshape) then the first
    ``t`` columns, on scores against positions t-1 .. -(t-1)."""
    parakeet = pytest.importorskip("transformers.models.parakeet.modeling_parakeet")
    bd = torch.randn(2, 3, t, 2 * t - 1)
    want = parakeet.ParakeetEncoderAttention._rel_shift(None, bd)[..., :t]
    same_bits(posenc.relative_shift(bd.numpy()), want.numpy())


@requires_torch
def test_relative_shift_of_a_torch_tensor_is_a_view(isa):
    bd = torch.randn(2, 3, 4, 9)
    got = posenc.relative_shift(bd)
    assert got.shape == (2, 3, 4, 6) and np.shares_memory(got, bd.numpy())


@requires_torch
@pytest.mark.parametrize("t", [1, 6, 40])
def test_conformer_recipe_matches_transformers(t):
    """Transformers' Wav2Vec2Conformer relative attention: its table is sinusoidal() of descending positions
    t-1 .. -(t-1) (interleaved), and its pad-and-reshape shift is relative_shift of the same scores.

    The table bound: Transformers computes p·ω in float32 (ω by a float32 exp): the angle is off by
    up to ~2 float32 ulps of p·ω (<= 2·t·2**-24 with ω <= 1), posenc's by one rounding of the result.
    """
    pytest.importorskip("transformers")
    from transformers import Wav2Vec2ConformerConfig
    from transformers.models.wav2vec2_conformer import modeling_wav2vec2_conformer as m

    torch.manual_seed(t)
    config = Wav2Vec2ConformerConfig(hidden_size=16, num_attention_heads=2, position_embeddings_type="relative",
                                     max_source_positions=64)
    hidden = torch.randn(2, t, 16)
    pe = m.Wav2Vec2ConformerRelPositionalEmbedding(config)(hidden)  # [1, 2t - 1, 16]
    table = posenc.sinusoidal(np.arange(t - 1, -t, -1), 16)
    err = np.abs(pe[0].numpy().astype(np.float64) - table.astype(np.float64)).max()
    assert err <= 4 * t * 2.0**-24 + 2.0**-23, err

    attn = m.Wav2Vec2ConformerSelfAttention(config)
    with torch.no_grad():
        attn.pos_bias_u.normal_()
        attn.pos_bias_v.normal_()
        query = torch.randn(2, 2, t, 8)
        _, position_bias = m._apply_relative_position_encoding(attn, query, query, pe)
        proj = attn.linear_pos(pe).view(1, 2 * t - 1, 2, 8).permute(0, 2, 3, 1)
        bd = torch.matmul(query + attn.pos_bias_v[None, :, None, :], proj)  # [2, heads, t, 2t - 1]
    shifted = posenc.relative_shift(bd.numpy())
    same_bits(shifted * np.float32(attn.scaling), position_bias.numpy())


# ---------------------------------------------------------------- shifting a rotated KV cache (docs recipe)

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scaling", [None, {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}])
@pytest.mark.parametrize("per_sequence", [False, True])
def test_shifting_a_rotated_kv_cache(isa, dtype, scaling, per_sequence):
    """Keys rotated at positions p, then rotated by Δ (attention_scaling=1.0: YaRN's scale was applied
    once already), equal keys rotated at p + Δ from scratch. Δ shared ([seq]) or per sequence ([batch, seq]).

    Bounds, for |x| <= 1: each rotation rounds once (float32: <= ~2 ulps of 1 per rotation, 4·2**-23
    for two); the three float64 angles p·ω, Δ·ω, (p + Δ)·ω each round to half an ulp of their size
    (ω <= 1), so the composition differs by up to ~1.5 ulp of the largest angle: 3·P·2**-53 with
    P the largest position, in either dtype.
    """
    rng = np.random.default_rng(7)
    k = rng.uniform(-1, 1, (2, 300, 4, 64)).astype(dtype)  # [batch, seq, heads, head_dim]
    p = rng.integers(0, 100_000, (2, 300))
    delta = (rng.integers(-5000, 5000, (2, 1)) if per_sequence else np.full((1, 1), -1234)) * np.ones((1, 300), int)
    shift = delta if per_sequence else delta[0]
    kw = {} if scaling is None else dict(scaling=scaling)
    cached = posenc.apply_rope(k, p, **kw)
    shifted = posenc.apply_rope(cached, shift, **kw, attention_scaling=1.0)
    scratch = posenc.apply_rope(k, p + delta, **kw)
    largest = int(np.abs(p + delta).max() + np.abs(p).max())
    bound = 3 * largest * 2.0**-53 + (4 * 2.0**-23 if dtype == np.float32 else 8 * 2.0**-53)
    err = np.abs(shifted.astype(np.float64) - scratch.astype(np.float64)).max()
    assert err <= bound, (err, bound)
    if scaling is not None:  # the scale applied twice is wrong by the factor: the test can tell
        twice = posenc.apply_rope(cached, shift, **kw)
        assert np.abs(twice.astype(np.float64) - scratch.astype(np.float64)).max() > 100 * bound


# ---------------------------------------------------------------- folded heads (BLOOM's [batch·heads, q, k])

@given(lead=st.sampled_from([(), (2,)]), batch=st.integers(1, 3), heads=st.integers(1, 4), q=st.integers(0, 6),
       k=st.integers(0, 7), dtype=st.sampled_from(FLOAT_DTYPES), offset=st.integers(-5, 5),
       mode=st.sampled_from(["new", "in-place", "out"]), seed=st.integers(0, 2**31))
def test_folded_heads_equal_unfolded(isa, lead, batch, heads, q, k, dtype, offset, mode, seed):
    """num_heads unfolds axis -3 as (batch, heads), head-minor: slope/bias of head h repeats per batch."""
    rng = np.random.default_rng(seed)
    scores = strided_view(rng.standard_normal((*lead, batch * heads, q, k)).astype(dtype), rng)
    table = rng.standard_normal((32, heads)).astype(np.float32)
    unfolded = np.ascontiguousarray(scores).reshape(*lead, batch, heads, q, k)
    want_alibi = posenc.add_alibi(unfolded, offset=offset).reshape(scores.shape)
    want_t5 = posenc.add_t5_bias(unfolded, table, offset=offset).reshape(scores.shape)
    for fn, args, want in [(posenc.add_alibi, (), want_alibi), (posenc.add_t5_bias, (table,), want_t5)]:
        x = scores.copy() if mode == "in-place" else scores
        out = x if mode == "in-place" else strided_view(np.zeros(scores.shape, dtype), rng) if mode == "out" else None
        got = fn(x, *args, offset=offset, num_heads=heads, out=out)
        if out is not None:
            assert got is out
        assert got.shape == scores.shape
        same_bits(got, want)


def test_folded_heads_bloom_layout(isa):
    """BLOOM's alibi [batch·heads, 1, k] added to scores [batch·heads, q, k]: the same softmax."""
    batch, heads, q, k = 2, 4, 3, 6
    scores = np.random.default_rng(0).standard_normal((batch * heads, q, k)).astype(np.float32)
    got = posenc.add_alibi(scores, num_heads=heads, offset=k - q)
    slopes = np.tile(posenc.alibi_slopes(heads), batch)  # head h of batch b at b·heads + h
    want = scores + slopes[:, None, None] * (np.arange(k)[None, None, :] - (k - q + np.arange(q))[None, :, None])
    np.testing.assert_allclose(got, want, rtol=0, atol=4e-7)
    wrong = posenc.add_alibi(scores)  # without num_heads: 8 heads, 8 different slopes
    assert not np.allclose(wrong, want, atol=1e-3)


# ================================================================ hostile-input specs
# The valid baseline call of each public function and the role of each argument: the hostile table
# (tests/test_arguments.py), the differential fuzzer and the PyTorch/JAX/unpickled-input cases are
# generated from SPECS.

F32 = np.float32


def _offset(s: Spec) -> None:
    """``offset``: an integer keeping the query positions offset + i within ±2**53."""
    s.integer("offset")
    s.raises("offset-integral-float", TypeError, "offset", offset=1.0)
    s.raises("offset-past-2**53", ValueError, "offset", offset=2**53 + 1)
    s.raises("offset-2**60", ValueError, "offset", offset=2**60)


def _grid_common(s: Spec, shape: Callable[[Any, Any], Any]) -> None:
    """q_len, k_len and offset; ``shape(q, k)`` is the result's shape (None: the baseline's)."""
    s.size("q_len", empty=empty_of(shape(0, None)))
    s.size("k_len", empty=empty_of(shape(None, 0)))
    s.raises("q_len-and-k_len-huge", ValueError, "bytes", q_len=2**40, k_len=2**40)
    _offset(s)


def spec_relative_positions() -> Spec:
    s = Spec("relative_positions", q_len=3, k_len=5)
    _grid_common(s, lambda q, k: (3 if q is None else q, 5 if k is None else k))
    s.raises("dtype-float", TypeError, "dtype", dtype=np.float32)
    s.raises("dtype-unsigned", TypeError, "dtype", dtype=np.uint32)
    s.raises("dtype-too-small", ValueError, "dtype", dtype=np.int8, k_len=300)
    s.same("dtype-int16", dtype=np.int16)
    s.raises("offset-wraps-int64", ValueError, "offset", offset=2**63 - 2)
    s.out((3, 5), np.int64)
    return s


def spec_clipped_relative_positions() -> Spec:
    s = Spec("clipped_relative_positions", q_len=3, k_len=5, max_relative_position=2)
    _grid_common(s, lambda q, k: (3 if q is None else q, 5 if k is None else k))
    s.size("max_relative_position", huge=False)
    s.raises("max_relative_position-huge", ValueError, "max_relative_position", max_relative_position=2**63)
    s.raises("max_relative_position-too-big-for-dtype", ValueError, "max_relative_position",
             max_relative_position=200, dtype=np.int8)
    s.same("max_relative_position-zero", max_relative_position=0)
    s.out((3, 5), np.int64)
    return s


def spec_relative_embeddings() -> Spec:
    table = rand(5, 4)
    s = Spec("relative_embeddings", table=table, q_len=3, k_len=4, max_relative_position=2)
    s.floats("table")
    s.raises("table-rows-mismatch", ValueError, "table", table=rand(4, 4))
    s.raises("table-1d", ValueError, "table", table=rand(5))
    _grid_common(s, lambda q, k: (3 if q is None else q, 4 if k is None else k, 4))
    s.size("max_relative_position", huge=False)
    s.out((3, 4, 4), F32)
    table_in, out = _overlapping(table, (3, 4, 4))
    s.raises("out-overlaps-table", ValueError, "out overlaps table", table=table_in, out=out)
    return s


def _overlapping(table: np.ndarray, out_shape: Tuple[int, ...]) -> Tuple[np.ndarray, np.ndarray]:
    """``table``'s values in one buffer, and an ``out`` of ``out_shape`` that overlaps them in part."""
    buf = np.full(table.size + int(np.prod(out_shape)), 7, table.dtype)
    inside = buf[: table.size].reshape(table.shape)
    inside[...] = table
    return inside, buf[table.size // 2 : table.size // 2 + int(np.prod(out_shape))].reshape(out_shape)


def _t5_params(s: Spec) -> None:
    s.flag("bidirectional")
    for id, v in [("zero", 0), ("one", 1), ("two", 2), ("negative", -32), ("odd-bidirectional", 3)]:
        s.raises(f"num_buckets-{id}", ValueError, "num_buckets", num_buckets=v)
    s.raises("num_buckets-float", TypeError, "num_buckets", num_buckets=32.0)
    s.raises("num_buckets-huge", ValueError, "num_buckets", num_buckets=2**63)
    s.raises("num_buckets-past-float32", ValueError, "num_buckets", num_buckets=2**24 + 2)
    for id, v in [("zero", 0), ("negative", -5), ("at-exact", 8)]:
        s.raises(f"max_distance-{id}", ValueError, "max_distance", max_distance=v)
    s.raises("max_distance-at-exact-causal", ValueError, "max_distance", bidirectional=False, num_buckets=3,
             max_distance=1)
    s.raises("max_distance-float", TypeError, "max_distance", max_distance=128.0)
    s.same("max_distance-huge", max_distance=2**62)


def _integer_array_layouts(s: Spec, rel: np.ndarray) -> None:
    """``relative_position``: non-integer kinds are a TypeError; every layout gives the clean result."""
    for id, v in [("float", rel.astype(np.float64)), ("float-integral", rel.astype(F32)), ("complex", rel + 0j),
                  ("object", rel.astype(object)), ("bool", rel > 0), ("str", rel.astype(str))]:
        s.raises(f"relative_position-{id}", TypeError, "relative_position", relative_position=v)
    for id, make in [("byteswapped", byteswapped), ("misaligned", misaligned), ("negative-strides", negative_strides),
                     ("stepped", stepped)]:
        s.same(f"relative_position-{id}", clean={"relative_position": rel.copy()}, relative_position=make(rel))


def spec_t5_bucket() -> Spec:
    rel = np.array([[-200, -9, -8, -1, 0], [1, 7, 8, 127, 128]])
    s = Spec("t5_bucket", relative_position=rel)
    _integer_array_layouts(s, rel)
    for dt in (np.int8, np.int16, np.int32, np.uint8, np.uint64):
        v = rel.astype(dt)
        s.same(f"relative_position-{np.dtype(dt).name}", clean={"relative_position": v.astype(np.int64)
                                                               if dt != np.uint64 else v},
               relative_position=v)
    s.same("relative_position-list", clean={"relative_position": rel.copy()}, relative_position=rel.tolist())
    s.same("relative_position-scalar", clean={"relative_position": np.int64(-7)}, relative_position=-7)
    s.check("relative_position-empty", empty_of((0, 3)), relative_position=np.zeros((0, 3), np.int64))
    extremes = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).min + 1, np.iinfo(np.int64).max])
    s.check("relative_position-int64-extremes", _t5_extremes(True), relative_position=extremes)
    s.check("relative_position-int64-extremes-causal", _t5_extremes(False), relative_position=extremes,
            bidirectional=False)
    s.check("relative_position-uint64-max", lambda r: _assert_eq(r, [31]),
            relative_position=np.array([2**64 - 1], np.uint64))
    _t5_params(s)
    return s


def _assert_eq(r: Any, want: Any) -> None:
    np.testing.assert_array_equal(np.asarray(r), np.asarray(want))


def _t5_extremes(bidirectional: bool) -> Callable[[Any], None]:
    """Far distances land in the last bucket of their direction (no |INT64_MIN| wrap-around)."""
    def check(r: Any) -> None:
        r = np.asarray(r)
        assert r.dtype == np.int32
        want = [15, 15, 31] if bidirectional else [31, 31, 0]
        np.testing.assert_array_equal(r, want)
    return check


def spec_t5_buckets() -> Spec:
    s = Spec("t5_buckets", q_len=3, k_len=5)
    _grid_common(s, lambda q, k: (3 if q is None else q, 5 if k is None else k))
    _t5_params(s)
    s.out((3, 5), np.int32)
    return s


def spec_t5_bias() -> Spec:
    table = rand(32, 2)
    s = Spec("t5_bias", table=table, q_len=3, k_len=5)
    s.floats("table")
    s.raises("table-1d", ValueError, "table", table=rand(32))
    s.raises("table-odd-buckets", ValueError, "num_buckets", table=rand(3, 2))
    s.raises("table-no-heads", ValueError, "head", table=rand(32, 0))
    _grid_common(s, lambda q, k: (2, 3 if q is None else q, 5 if k is None else k))
    s.flag("bidirectional")
    s.raises("max_distance-zero", ValueError, "max_distance", max_distance=0)
    s.out((2, 3, 5), F32)
    table_in, out = _overlapping(table, (2, 3, 5))
    s.raises("out-overlaps-table", ValueError, "out overlaps table", table=table_in, out=out)
    return s


def spec_add_t5_bias() -> Spec:
    scores, table = rand(2, 2, 3, 5), rand(32, 2)
    s = Spec("add_t5_bias", scores=scores, table=table)
    s.floats("scores")
    s.floats("table")
    s.raises("table-heads-mismatch", ValueError, "heads", table=rand(32, 3))
    s.raises("table-no-heads", ValueError, "head", table=rand(32, 0))
    s.raises("table-odd-buckets", ValueError, "num_buckets", table=rand(3, 2))
    s.raises("scores-2d", ValueError, "scores", scores=rand(3, 5))
    s.raises("scores-no-heads", ValueError, "scores", scores=rand(2, 0, 3, 5))
    s.check("scores-empty", empty_of((2, 2, 0, 5)), scores=rand(2, 2, 0, 5))
    _offset(s)
    s.flag("bidirectional")
    s.raises("max_distance-at-exact", ValueError, "max_distance", max_distance=8)
    s.out(scores.shape, F32, inputs=["scores"])
    s.raises("num_heads-not-a-divisor", ValueError, "num_heads", num_heads=5)
    s.raises("num_heads-zero", ValueError, "num_heads", num_heads=0)
    s.raises("num_heads-float", TypeError, "num_heads", num_heads=2.0)
    return s


def spec_alibi_slopes() -> Spec:
    s = Spec("alibi_slopes", num_heads=6)
    _heads(s, huge=False)
    s.raises("num_heads-huge", SIZE_ERRORS, "", num_heads=2**62)
    s.raises("dtype-int", TypeError, "dtype", dtype=np.int32)
    return s


def spec_alibi_bias() -> Spec:
    s = Spec("alibi_bias", num_heads=3, q_len=2, k_len=4)
    _heads(s, huge=True)
    _grid_common(s, lambda q, k: (3, 2 if q is None else q, 4 if k is None else k))
    s.flag("symmetric")
    _slopes(s, 3)
    s.raises("dtype-int", TypeError, "dtype", dtype=np.int32)
    s.out((3, 2, 4), F32)
    s.read("slopes", np.array([0.5, 0.25, 0.125]))
    return s


def _heads(s: Spec, huge: bool) -> None:
    """``num_heads``: a count >= 1 (0 is a ValueError naming it, not an empty result)."""
    s.size("num_heads", huge=huge)
    s.raises("num_heads-zero", ValueError, "num_heads", num_heads=0)


def _slopes(s: Spec, heads: int) -> None:
    good = np.array([0.5, 0.25, 0.125][:heads])
    s.same("slopes-given", slopes=good)
    s.same("slopes-float32", clean={"slopes": good}, slopes=good.astype(F32))
    s.same("slopes-list", clean={"slopes": good}, slopes=good.tolist())
    s.same("slopes-byteswapped", clean={"slopes": good}, slopes=byteswapped(good))
    s.same("slopes-negative-strides", clean={"slopes": good}, slopes=negative_strides(good))
    s.raises("slopes-wrong-length", ValueError, "slopes", slopes=np.ones(heads + 1))
    s.raises("slopes-2d", ValueError, "slopes", slopes=np.ones((1, heads)))
    s.raises("slopes-nan", ValueError, "slopes", slopes=np.full(heads, np.nan))
    s.raises("slopes-inf", ValueError, "slopes", slopes=np.full(heads, np.inf))
    s.raises("slopes-complex", TypeError, "slopes", slopes=np.ones(heads) + 0j)
    s.raises("slopes-object", TypeError, "slopes", slopes=np.ones(heads).astype(object))
    s.raises("slopes-str", TypeError, "slopes", slopes=np.ones(heads).astype(str))


def spec_add_alibi() -> Spec:
    scores = rand(2, 3, 2, 4)
    s = Spec("add_alibi", scores=scores)
    s.floats("scores")
    s.raises("scores-2d", ValueError, "scores", scores=rand(2, 4))
    s.check("scores-empty", empty_of((2, 3, 0, 4)), scores=rand(2, 3, 0, 4))
    s.raises("scores-no-heads", ValueError, "scores", scores=rand(2, 0, 2, 4))
    _offset(s)
    s.flag("symmetric")
    _slopes(s, 3)
    s.out(scores.shape, F32, inputs=["scores"])
    s.read("slopes", np.array([0.5, 0.25, 0.125]))
    s.raises("num_heads-not-a-divisor", ValueError, "num_heads", num_heads=2)
    s.raises("num_heads-zero", ValueError, "num_heads", num_heads=0)
    s.raises("num_heads-float", TypeError, "num_heads", num_heads=3.0)
    s.same("num_heads-all-heads", num_heads=3)
    return s


def _deberta_params(s: Spec) -> None:
    """bucket_size / max_position: plain differences when either is <= 0; Transformers' failures refused."""
    s.raises("bucket_size-float", TypeError, "bucket_size", bucket_size=256.0)
    s.raises("bucket_size-bool", TypeError, "bucket_size", bucket_size=True)
    s.raises("max_position-float", TypeError, "max_position", max_position=512.0)
    s.raises("bucket_size-one", ValueError, "bucket_size", bucket_size=1)
    s.raises("max_position-at-mid-plus-one", ValueError, "max_position", bucket_size=8, max_position=5)
    s.raises("max_position-below-mid", ValueError, "max_position", bucket_size=256, max_position=100)
    s.raises("bucket_size-huge", ValueError, "bucket_size", bucket_size=2**24 + 2, max_position=2**30)
    s.raises("max_position-huge", ValueError, "max_position", max_position=2**62 + 1)
    s.same("bucket_size-zero-plain", bucket_size=0)
    s.same("bucket_size-negative-plain", bucket_size=-1)
    s.same("max_position-negative-plain", max_position=-1)
    s.same("max_position-just-enough", bucket_size=8, max_position=6)


def spec_deberta_bucket() -> Spec:
    rel = np.array([[-600, -129, -128, -1, 0], [1, 127, 128, 129, 5000]])
    s = Spec("deberta_bucket", relative_position=rel)
    _integer_array_layouts(s, rel)
    for dt in (np.int16, np.int32, np.uint16, np.uint64):
        v = np.abs(rel).astype(dt) if np.dtype(dt).kind == "u" else rel.astype(dt)
        s.same(f"relative_position-{np.dtype(dt).name}", clean={"relative_position": v.astype(np.int64)},
               relative_position=v)
    s.same("relative_position-list", clean={"relative_position": rel.copy()}, relative_position=rel.tolist())
    s.check("relative_position-empty", empty_of((0, 3)), relative_position=np.zeros((0, 3), np.int64))
    s.raises("relative_position-uint64-past-int64", ValueError, "relative_position",
             relative_position=np.array([2**63], np.uint64))
    s.check("relative_position-int64-min", lambda r: _assert_eq(np.asarray(r) < 0, [True]),
            relative_position=np.array([np.iinfo(np.int64).min]))
    _deberta_params(s)
    return s


def spec_deberta_buckets() -> Spec:
    s = Spec("deberta_buckets", q_len=3, k_len=5)
    _grid_common(s, lambda q, k: (3 if q is None else q, 5 if k is None else k))
    _deberta_params(s)
    s.out((3, 5), np.int64)
    return s


def spec_relative_shift() -> Spec:
    s = Spec("relative_shift", bd=rand(2, 3, 6))
    s.floats("bd")
    s.raises("bd-1d", ValueError, "bd", bd=rand(6))
    s.raises("bd-too-narrow", ValueError, "bd", bd=rand(2, 5, 3))
    s.check("bd-k-zero", empty_of((2, 3, 0)), bd=rand(2, 3, 2))
    s.check("bd-q-zero", empty_of((2, 0, 7)), bd=rand(2, 0, 6))
    s.check("bd-no-batch", empty_of((0, 3, 4)), bd=rand(0, 3, 6))
    return s


SPECS: Dict[str, Callable[[], Spec]] = {
    "relative_shift": spec_relative_shift,
    "deberta_bucket": spec_deberta_bucket,
    "deberta_buckets": spec_deberta_buckets,
    "relative_positions": spec_relative_positions,
    "clipped_relative_positions": spec_clipped_relative_positions,
    "relative_embeddings": spec_relative_embeddings,
    "t5_bucket": spec_t5_bucket,
    "t5_buckets": spec_t5_buckets,
    "t5_bias": spec_t5_bias,
    "add_t5_bias": spec_add_t5_bias,
    "alibi_slopes": spec_alibi_slopes,
    "alibi_bias": spec_alibi_bias,
    "add_alibi": spec_add_alibi,
}


# One call per executor-backed function, big enough to go parallel: tests/test_invariants.py runs
# each (thread-count determinism, backend routing, concurrency); out=None means a new result.
LARGE: Dict[str, Callable[[Any], Any]] = {
    "relative_positions": lambda out: posenc.relative_positions(512, 700, offset=3, out=out),
    "clipped_relative_positions": lambda out: posenc.clipped_relative_positions(512, 700, 40, out=out),
    "relative_embeddings": lambda out: posenc.relative_embeddings(BIG.table[:81], 128, 160, 40, out=out),
    "t5_bucket": lambda out: posenc.t5_bucket(BIG.pos - 1000),
    "t5_buckets": lambda out: posenc.t5_buckets(512, 700, offset=3, out=out),
    "deberta_buckets": lambda out: posenc.deberta_buckets(512, 700, offset=3, out=out),
    "add_alibi": lambda out: posenc.add_alibi(BIG.scores, out=out),
    "alibi_bias": lambda out: posenc.alibi_bias(8, 256, 256, out=out),
    "t5_bias": lambda out: posenc.t5_bias(BIG.table[:32, :8], 256, 256, out=out),
    "add_t5_bias": lambda out: posenc.add_t5_bias(BIG.scores, BIG.table[:32, :8], out=out),
}
