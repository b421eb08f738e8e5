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

import functools
import itertools
import math
from typing import Any, Iterator, NamedTuple, Optional

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
    return DistanceGrid(q, _checks.length(k_len, "k_len"), _checks.offset(offset, q))


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
