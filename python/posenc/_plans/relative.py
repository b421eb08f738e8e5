"""Plans of the relative family, and its shared maths: the distance grid, T5's parameters, ALiBi's slopes.

Convention: query row ``i`` sits at absolute position ``offset + i`` and key
column ``j`` at ``j``; the relative position (distance) is
``j - (offset + i)``. A KV-cache step with ``q_len`` new queries over
``k_len`` cached keys uses ``offset = k_len - q_len``.

What is *not* here, on purpose: how a distance becomes a T5 bucket. The
NumPy executor transcribes T5's float32 chain element by element, the
native one looks distances up among bucket boundaries that a kernel
computes; the two are kept apart so that comparing them tests something.
"""

from __future__ import annotations

import fractions
import functools
import itertools
import math
from typing import Any, Iterator, NamedTuple, Optional, Tuple

import numpy as np

from .. import _checks
from .._checks import Out
from .._rounding import round_once

# The float32 chain cannot tell more buckets apart than float32 has integers.
MAX_BUCKETS = 2**24
# T5 distances are clipped to this magnitude before |d| (so |int64 min| cannot wrap);
# every distance past max_distance lands in the last bucket anyway.
DISTANCE_CLIP = 2**62


# ---------------------------------------------------------------- the distance grid

class DistanceGrid(NamedTuple):
    """A ``[q_len, k_len]`` block of distances: column j of row i is ``j - (offset + i)``."""

    q_len: int
    k_len: int
    offset: int

    @property
    def first(self) -> int:
        """The smallest distance (row q_len - 1, column 0)."""
        return -(self.q_len - 1) - self.offset

    @property
    def length(self) -> int:
        """How many distinct distances the block holds: ``q_len + k_len - 1`` (0 for an empty block)."""
        return max(self.q_len + self.k_len - 1, 0)

    def distances(self) -> np.ndarray:
        """The full int64 ``[q_len, k_len]`` matrix (the NumPy executor's; the kernels never build it)."""
        i = np.arange(self.q_len, dtype=np.int64)[:, None]
        j = np.arange(self.k_len, dtype=np.int64)[None, :]
        return j - (self.offset + i)


def distance_grid(q_len: Any, k_len: Any, *, offset: Any) -> DistanceGrid:
    """The grid of validated lengths (<= 2**53) and offset (query positions exact in float64)."""
    q = _checks.length(q_len, "q_len")
    return _new_grid((q, _checks.length(k_len, "k_len"), _checks.offset(offset, q)))


_new_grid = functools.partial(tuple.__new__, DistanceGrid)  # (q_len, k_len, offset), without keyword handling


# ---------------------------------------------------------------- T5

class T5Bucketing(NamedTuple):
    """T5's bucketing parameters, validated: ``half`` buckets per direction, the first ``max_exact`` exact."""

    bidirectional: bool
    num_buckets: int
    max_distance: int
    half: int  # buckets per direction (num_buckets // 2 if bidirectional)
    max_exact: int  # distances below this get a bucket each


def t5_bucketing(*, bidirectional: Any, num_buckets: Any, max_distance: Any) -> T5Bucketing:
    """Check T5's parameters: every one the reference formula can evaluate (no division by zero or log(1))."""
    bidirectional = _checks.boolean(bidirectional, "bidirectional")
    num_buckets = _checks.integer(num_buckets, "num_buckets", minimum=2)
    if num_buckets > MAX_BUCKETS:
        raise ValueError(f"num_buckets must be <= 2**24 (float32 resolves no more), got {num_buckets}")
    max_distance = _checks.integer(max_distance, "max_distance", minimum=1)
    half = num_buckets // 2 if bidirectional else num_buckets
    max_exact = half // 2
    if max_exact < 1:
        # The reference divides by max_exact: every distance would be log(d/0).
        need = 4 if bidirectional else 2
        raise ValueError(
            f"num_buckets={num_buckets} leaves no exact buckets (max_exact = 0; the T5 formula divides by it): "
            f"need num_buckets >= {need} with bidirectional={bidirectional}"
        )
    if max_distance <= max_exact:
        # log(max_distance / max_exact) <= 0: no room for log buckets (division by zero at equality).
        raise ValueError(
            f"max_distance={max_distance} must be > max_exact={max_exact} "
            f"(the distances num_buckets={num_buckets} already covers exactly)"
        )
    if max_distance > DISTANCE_CLIP:
        raise ValueError(f"max_distance must be <= 2**62, got {max_distance}")
    return T5Bucketing(bidirectional, num_buckets, max_distance, half, max_exact)


def t5_distances(value: Any, name: str = "relative_position") -> np.ndarray:
    """Integer distances of any shape and integer dtype as int64 within ±2**62 (the T5 bucket is the same)."""
    arr = _checks.integer_array(value, name)
    clipped: np.ndarray
    if arr.dtype.kind == "u":  # anything past 2**62 is in the last bucket anyway
        clipped = np.minimum(arr, np.uint64(DISTANCE_CLIP)).astype(np.int64)
    elif arr.size > 1024:  # one pass over the data
        clipped = np.clip(arr.astype(np.int64, copy=False), -DISTANCE_CLIP, DISTANCE_CLIP)
    else:  # two passes, but np.clip's Python layers cost more than that on small arrays
        clipped = np.minimum(np.maximum(arr.astype(np.int64, copy=False), -DISTANCE_CLIP), DISTANCE_CLIP)
    return clipped


class Ties(NamedTuple):
    """Distance magnitudes (sorted; int64, or uint64 for DeBERTa's up to 2**63) whose exact bucket is a whole
    number, and that bucket."""

    distances: np.ndarray
    buckets: np.ndarray

    def apply(self, magnitude: np.ndarray, buckets: np.ndarray) -> np.ndarray:
        """``buckets`` (of the same shape as ``magnitude``) with the exact bucket at every tie."""
        if not self.distances.size:
            return buckets
        i = np.minimum(np.searchsorted(self.distances, magnitude), self.distances.size - 1)
        return np.where(self.distances[i] == magnitude, self.buckets[i], buckets)


def _ties(pairs: Any, limit: int, dtype: Any = np.int64) -> Ties:
    kept = [(n, b) for n, b in pairs if n <= limit]
    ties = Ties(np.array([n for n, _ in kept], dtype), np.array([b for _, b in kept], np.int64))
    ties.distances.flags.writeable = ties.buckets.flags.writeable = False
    return ties


@functools.lru_cache(maxsize=256)
def t5_ties(half: int, max_exact: int, max_distance: int) -> Ties:
    """Magnitudes n (max_exact < n < max_distance) whose exact T5 value ``log(n / max_exact) / log(max_distance /
    max_exact) · (half - max_exact)`` is a whole number t, with their bucket ``max_exact + t`` before the
    direction offset (from ``max_distance`` on, every value is clamped to ``half - 1`` anyway).

    There the float32 chain hinges on the last bit of the float32 log (a
    correctly rounded log gives t - 1; MKL's, which PyTorch uses on some
    CPUs, gives t), so posenc takes the exact value (issue 15): the one
    answer that does not depend on the platform's log.
    """
    pairs = power_ties(max_exact, fractions.Fraction(max_distance, max_exact), half - max_exact)
    return _ties(((n, max_exact + t) for n, t in pairs), max_distance - 1)


# ---------------------------------------------------------------- DeBERTa

# DeBERTa's float32 chain resolves no more buckets than float32 has integers (mid - 1 and mid exact).
DEBERTA_MAX_BUCKET_SIZE = 2**24
DEBERTA_MAX_POSITION = 2**62


class DebertaBucketing(NamedTuple):
    """DeBERTa's log-bucket parameters, validated; ``mid`` 0 means plain differences (no bucketing)."""

    bucket_size: int
    max_position: int
    mid: int  # bucket_size // 2; 0: plain differences (bucket_size <= 0 or max_position <= 0)
    log_denominator: float  # float32(log(float32((max_position - 1) / mid))), correctly rounded


def deberta_bucketing(*, bucket_size: Any, max_position: Any) -> DebertaBucketing:
    """Check DeBERTa's parameters: plain differences when either is <= 0, else finite positive buckets."""
    size = _checks.integer(bucket_size, "bucket_size")
    maximum = _checks.integer(max_position, "max_position")
    if size <= 0 or maximum <= 0:  # Transformers' build_relative_position buckets only when both are > 0
        return DebertaBucketing(size, maximum, 0, 0.0)
    if size > DEBERTA_MAX_BUCKET_SIZE:
        raise ValueError(f"bucket_size must be <= 2**24 (float32 resolves no more), got {size}")
    if maximum > DEBERTA_MAX_POSITION:
        raise ValueError(f"max_position must be <= 2**62, got {maximum}")
    mid = size // 2
    if mid == 0:
        raise ValueError(f"bucket_size={size} gives bucket_size // 2 = 0 (DeBERTa divides by it): need >= 2")
    if maximum - 1 <= mid:
        raise ValueError(
            f"max_position={maximum} must be > bucket_size // 2 + 1 = {mid + 1}: DeBERTa's log buckets divide by "
            f"log((max_position - 1) / (bucket_size // 2)), and there it is <= 0 (negative or infinite buckets)"
        )
    ratio = np.float32((maximum - 1) / mid)  # a Python float made a float32 tensor, as Transformers does
    denominator = float(np.float32(math.log(float(ratio))))
    if not denominator > 0:  # cannot happen with mid <= 2**23: (mid + 1) / mid rounds above 1
        raise ValueError(f"max_position={maximum}: log((max_position - 1) / (bucket_size // 2)) rounds to 0")
    return DebertaBucketing(size, maximum, mid, denominator)


def _root(value: int, k: int) -> Optional[int]:
    """The integer k-th root of ``value`` when it is a perfect k-th power, else None."""
    r = round(float(value) ** (1.0 / k))
    for c in (r - 1, r, r + 1):
        if c >= 1 and pow(c, k) == value:
            return int(c)
    return None


def power_ties(unit: int, ratio: fractions.Fraction, scale: int) -> Tuple[Tuple[int, int], ...]:
    """Integers ``n > unit`` (up to 2**63) with ``log(n / unit) / log(ratio) · scale`` a whole number t, as (n, t).

    ``(n / unit)^scale = ratio^t`` holds only if ``n / unit`` and ``ratio`` (> 1) are
    powers of one rational ``g`` that is no perfect power itself: ``ratio = g^P``,
    ``n / unit = g^s``, ``t = s·scale / P``. ``g`` is ratio's largest exact root
    (numerator and denominator both perfect P-th powers; P <= 62 as the numerator
    is < 2**63). ``scale`` 0 (every value 0, exactly) lists nothing.
    """
    if scale == 0:
        return ()
    power, g = 1, ratio
    for k in range(62, 1, -1):
        num, den = _root(ratio.numerator, k), _root(ratio.denominator, k)
        if num is not None and den is not None:
            power, g = k, fractions.Fraction(num, den)
            break
    ties = []
    s = 1
    while True:
        n = unit * g**s
        if g.denominator > 1 and unit % g.denominator**s != 0:
            break  # g's denominator to the s-th power no longer divides unit: never an integer again
        if n > 2**63:
            break
        if n.denominator == 1 and (s * scale) % power == 0:
            ties.append((int(n), s * scale // power))
        s += 1
    return tuple(ties)


@functools.lru_cache(maxsize=256)
def deberta_ties(mid: int, max_position: int) -> Tuple[Tuple[int, int], ...]:
    """Magnitudes ``n`` (mid < n <= 2**63) whose exact DeBERTa log bucket is a whole number, with that bucket.

    The exact value ``log(n / mid) / log((max_position - 1) / mid) · (mid - 1)``
    (:func:`power_ties`); for ``mid = 1`` every value is ``· 0 = 0`` exactly (no
    tie to list). The bucket is ``mid + t``.
    """
    ties = power_ties(mid, fractions.Fraction(max_position - 1, mid), mid - 1)
    return tuple((n, mid + t) for n, t in ties)


@functools.lru_cache(maxsize=256)
def deberta_tie_table(mid: int, max_position: int) -> Ties:
    """:func:`deberta_ties` as arrays (uint64 magnitudes up to 2**63, as :func:`deberta_values` sees them)."""
    return _ties(deberta_ties(mid, max_position), 2**63, np.uint64)


def deberta_magnitude_buckets(magnitude: np.ndarray, p: DebertaBucketing) -> np.ndarray:
    """int64 log buckets ``mid + ceil(...)`` of uint64 magnitudes > mid: DeBERTa's float32 chain.

    Transformers' ``make_log_bucket_position``, step for step with PyTorch's
    float32 arithmetic::

        ceil(log(float32(n) / mid) / float32(log(float32((max_position - 1) / mid))) * (mid - 1)) + mid

    with the correctly rounded float32 logarithm (the float64 log of the
    float32 argument, rounded once). :func:`deberta_values` then puts the
    exact bucket at the whole-number distances (:func:`deberta_ties`).
    """
    x = magnitude.astype(np.float32) / np.float32(p.mid)
    log_x = np.log(x.astype(np.float64)).astype(np.float32)
    scaled = log_x / np.float32(p.log_denominator) * np.float32(p.mid - 1)
    buckets: np.ndarray = (np.ceil(scaled) + np.float32(p.mid)).astype(np.int64)
    return buckets


def deberta_values(relative_position: np.ndarray, p: DebertaBucketing) -> np.ndarray:
    """int64 DeBERTa buckets of int64 relative positions (query minus key), any shape.

    The float32 chain (:func:`deberta_magnitude_buckets`), except at the
    distances whose exact value is a whole number (:func:`deberta_ties`):
    there the chain's ``ceil`` hinges on the last bit of the float32 log (a
    correctly rounded log usually lands just above the integer and takes the
    next bucket) and posenc takes the exact bucket, as for T5.
    """
    d = relative_position.astype(np.int64, copy=True)
    if p.mid == 0:
        return d
    magnitude = np.abs(d).astype(np.uint64)  # |INT64_MIN| wraps to itself, which is 2**63 as uint64
    far = magnitude > p.mid
    if far.any():
        m = magnitude[far]
        buckets = deberta_tie_table(p.mid, p.max_position).apply(m, deberta_magnitude_buckets(m, p))
        d[far] = np.where(d[far] < 0, -buckets, buckets)
    return d


def deberta_positions(value: Any, name: str = "relative_position") -> np.ndarray:
    """Integer relative positions of any shape as int64; unsigned ones past 2**63 - 1 are a ValueError."""
    arr = _checks.integer_array(value, name)
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and arr.size and arr.max() > np.iinfo(np.int64).max:
        raise ValueError(f"{name} must fit int64 (the buckets keep the sign), got {int(arr.max())}")
    return arr.astype(np.int64, copy=False)


# ---------------------------------------------------------------- ALiBi

# Head counts up to this share one read-only slopes array per count (building it costs microseconds).
_CACHED_HEADS = 4096


def authors_slopes(num_heads: int) -> np.ndarray:
    """The ALiBi authors' ``get_slopes`` (ofirpress/attention_with_linear_biases) in float64, read-only.

    Evaluated as they do, in Python floats: ``start = 2**(-2**-(log2(n) - 3))``
    and slope ``i`` is ``start * start**i`` for a power of two ``n`` (the
    closed form 2^(-8(i+1)/n), rounded as their product rounds); otherwise
    the slopes of the power of two below ``n`` followed by every other slope
    of twice that power.
    """
    return _cached_slopes(num_heads) if num_heads <= _CACHED_HEADS else _slopes(num_heads)


@functools.lru_cache(maxsize=64)
def _cached_slopes(num_heads: int) -> np.ndarray:
    return _slopes(num_heads)


def _slopes(num_heads: int) -> np.ndarray:

    # Generators written into a preallocated array (np.fromiter with count),
    # the same float operations in the same order as the authors' lists: a
    # hostile head count (2**40) is a MemoryError at once instead of a Python
    # list growing until the OOM killer steps in.
    def power_of_2(n: int) -> Iterator[float]:
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        ratio = start
        return (start * ratio**i for i in range(n))

    def get_slopes(n: int) -> Iterator[float]:
        if math.log2(n).is_integer():
            return power_of_2(n)
        closest = 2 ** math.floor(math.log2(n))
        # get_slopes(2 * closest)[0::2][: n - closest]
        return itertools.chain(power_of_2(closest), itertools.islice(get_slopes(2 * closest), 0, 2 * (n - closest), 2))

    _checks.result_size((num_heads,), np.dtype(np.float64), "the slopes")
    slopes = np.fromiter(get_slopes(num_heads), dtype=np.float64, count=num_heads)
    slopes.flags.writeable = False
    return slopes


def alibi_slopes(num_heads: int, dtype: Any = np.float32) -> np.ndarray:
    """ALiBi's per-head slopes (Press, Smith & Lewis, "Train Short, Test Long", 2022), for any head count.

    Exactly the authors' ``get_slopes`` (ofirpress/attention_with_linear_biases),
    evaluated as they do in Python float64 and rounded once to ``dtype``: for
    ``n`` a power of two, ``start = 2^(-8/n)`` and slope ``i`` is
    ``start·start^i`` (the closed form ``2^(-8(i+1)/n)``); otherwise the
    ``2^floor(log2 n)`` slopes of that power followed by every other slope of
    twice that power (the interleaved extension).

    BLOOM (Hugging Face ``_get_alibi_slopes``) uses the same definition but
    evaluates ``base^k`` with a float32 base and float32 ``pow``: its slopes
    equal these (float32) for 1 to 10 heads; from 11 heads on some differ by
    a few float32 ulps (relative difference at most 4.8e-7 up to 64 heads,
    6.8e-7 up to 128, 2.3e-6 up to 256), growing with the exponent. To use
    BLOOM's own slopes, pass them as ``slopes=``.

    Parameters
    ----------
    num_heads : int
        >= 1.
    dtype : float32, float64, float16 or bfloat16

    Returns
    -------
    ndarray of shape [num_heads]

    Examples
    --------
    >>> import posenc
    >>> posenc.alibi_slopes(8).tolist()
    [0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625]
    >>> posenc.alibi_slopes(3, dtype="float64").tolist()
    [0.0625, 0.00390625, 0.25]
    """
    heads = _checks.integer(num_heads, "num_heads", minimum=1)
    dt = _checks.float_dtype(dtype)
    return round_once(authors_slopes(heads), dt)


def head_slopes(slopes: Any, *, heads: int) -> np.ndarray:
    """float64 slopes, one per head: the authors' (``slopes`` None) or the caller's (real, finite)."""
    if slopes is None:
        return authors_slopes(heads)
    arr = _checks.as_array(slopes, "slopes")
    if arr.dtype.kind not in "iuf" and not _checks.is_bfloat16(arr.dtype):
        raise TypeError(f"slopes must be real numbers, got dtype {arr.dtype}")
    arr = np.require(arr, np.float64, ["C", "A"])  # aligned: the kernels load doubles
    if arr.ndim != 1:
        raise ValueError(f"slopes must be a 1-D array [heads], got shape {arr.shape}")
    if arr.shape[0] != heads:
        raise ValueError(f"slopes has {arr.shape[0]} entries but there are {heads} heads")
    if not np.isfinite(arr).all():
        raise ValueError("slopes must be finite")
    return arr


# ---------------------------------------------------------------- plans

class RelativePositions(NamedTuple):
    """``relative_positions`` / ``clipped_relative_positions``: the grid's distances, Shaw-clipped or raw."""

    grid: DistanceGrid
    clip: Optional[int]  # max_relative_position m: clip(d, -m, m) + m; None: d itself
    dtype: np.dtype  # a signed integer dtype every value fits
    out: Optional[Out]


class RelativeEmbeddings(NamedTuple):
    """``relative_embeddings``: ``table[clip(d, -m, m) + m]`` → ``[q, k, d]``."""

    table: np.ndarray  # [2m + 1, features]
    grid: DistanceGrid
    clip: int
    out: Optional[Out]


class T5BucketOf(NamedTuple):
    """``t5_bucket``: the bucket of each distance of an array, any shape."""

    distances: np.ndarray  # int64 within ±DISTANCE_CLIP
    t5: T5Bucketing


class T5BucketBlock(NamedTuple):
    """``t5_buckets``: the int32 buckets of a grid."""

    grid: DistanceGrid
    t5: T5Bucketing
    out: Optional[Out]


class T5Bias(NamedTuple):
    """``t5_bias``: ``table[bucket(d), head]`` as ``[heads, q, k]``."""

    table: np.ndarray  # [num_buckets, heads]
    grid: DistanceGrid
    t5: T5Bucketing
    out: Optional[Out]


class T5BiasAdd(NamedTuple):
    """``add_t5_bias``: ``scores + table[bucket(d), head]``, the table rounded to the scores' dtype first."""

    scores: np.ndarray  # [..., heads, q, k]
    grid: DistanceGrid  # the scores' (q, k) and the offset
    table: np.ndarray  # [num_buckets, heads]
    t5: T5Bucketing
    out: Optional[Out]


class AlibiBias(NamedTuple):
    """``alibi_bias``: ``slope_h·d`` (or ``-slope_h·|d|``) as ``[heads, q, k]``."""

    slopes: np.ndarray  # float64 [heads]
    grid: DistanceGrid
    symmetric: bool
    dtype: np.dtype
    out: Optional[Out]


class AlibiAdd(NamedTuple):
    """``add_alibi``: ``scores + slope_h·d`` with the bias rounded to the scores' dtype first."""

    scores: np.ndarray  # [..., heads, q, k]
    grid: DistanceGrid
    slopes: np.ndarray  # float64 [heads]
    symmetric: bool
    out: Optional[Out]


new_alibi_add = functools.partial(tuple.__new__, AlibiAdd)  # every field, in order: a decode step builds one per call


class DebertaBucketBlock(NamedTuple):
    """``deberta_buckets``: the int64 buckets of ``(offset + i) - j`` over a grid."""

    grid: DistanceGrid
    deberta: DebertaBucketing
    out: Optional[Out]
