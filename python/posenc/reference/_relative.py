"""Relative positions in plain NumPy: T5 buckets and bias, ALiBi, Shaw-style clipped distances.

This is the specification the native kernels are checked against. Every
function builds its full ``[..., q, k]`` result by broadcasting, element by
element, exactly as the published models write it; the native backend
computes one lookup row per head instead and must agree bit for bit.

Convention (DESIGN.md): query row ``i`` sits at absolute position
``offset + i``, key column ``j`` at ``j``; the relative position is
``j - (offset + i)``. A KV-cache step with ``q_len`` new queries over
``k_len`` cached keys uses ``offset = k_len - q_len``.

The ``_plan_*`` functions validate and normalise arguments; the native
backend calls the same ones, so both backends accept and refuse exactly the
same input.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Iterator, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from .. import _checks

# |offset| and lengths stay below this so every distance, and its float64 value, is exact.
MAX_POSITION = 2**53
# The float32 chain cannot tell more buckets apart than float32 has integers.
MAX_BUCKETS = 2**24
# Distances are clipped to this magnitude before |d| (so |int64 min| cannot wrap);
# every distance past max_distance lands in the last bucket anyway.
_DISTANCE_CLIP = 2**62


# ---------------------------------------------------------------- shared helpers

# float64 -> dtype rounded once (bfloat16 through float32 rounded to odd): shared by every reference.
round_once = _checks.round_once


def _finish(values: np.ndarray, out: Optional[np.ndarray], result: Any) -> Any:
    """``values`` (already in the result dtype), written into ``out`` when given."""
    if out is None:
        return values
    out[...] = values
    return result


def _length(value: Any, name: str) -> int:
    n = _checks.integer(value, name, minimum=0)
    if n > MAX_POSITION:
        raise ValueError(f"{name} must be <= 2**53, got {n}")
    return n


def _offset(value: Any) -> int:
    offset = _checks.integer(value, "offset")
    if abs(offset) > MAX_POSITION:
        raise ValueError(f"offset must be within ±2**53, got {offset}")
    return offset


def _bool(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


def _int_dtype(value: Any, name: str = "dtype") -> np.dtype:
    try:
        dt: np.dtype = np.dtype(value)
    except (TypeError, ValueError, SyntaxError):  # np.dtype(",") raises SyntaxError (found by the fuzzer)
        raise TypeError(f"{name} must be a NumPy dtype, got {value!r}") from None
    if dt.kind != "i" or not dt.isnative:
        raise TypeError(f"{name} must be a signed integer dtype in native byte order, got {dt}")
    return dt


class Grid(NamedTuple):
    """A [q_len, k_len] block of distances: column j of row i is j - (offset + i)."""

    q_len: int
    k_len: int
    offset: int

    @property
    def first(self) -> int:
        """The smallest distance (row q_len - 1, column 0)."""
        return -(self.q_len - 1) - self.offset

    @property
    def length(self) -> int:
        """Distinct distances: the length of a lookup row."""
        return max(self.q_len + self.k_len - 1, 0)

    def distances(self) -> np.ndarray:
        """The full int64 [q, k] matrix (the reference materialises it; the kernels never do)."""
        i = np.arange(self.q_len, dtype=np.int64)[:, None]
        j = np.arange(self.k_len, dtype=np.int64)[None, :]
        return j - (self.offset + i)


def _grid(q_len: Any, k_len: Any, offset: Any) -> Grid:
    return Grid(_length(q_len, "q_len"), _length(k_len, "k_len"), _offset(offset))


def _fits(dt: np.dtype, lo: int, hi: int, what: str) -> None:
    info = np.iinfo(dt)
    if lo < info.min or hi > info.max:
        raise ValueError(f"{what} in [{lo}, {hi}] do not fit dtype {dt}")


# ---------------------------------------------------------------- relative positions

class PositionsPlan(NamedTuple):
    grid: Grid
    clip: Optional[int]  # max_relative_position, or None for raw distances
    dtype: np.dtype
    out: Optional[np.ndarray]


def _plan_positions(q_len: Any, k_len: Any, offset: Any, clip: Any, dtype: Any, out: Any) -> PositionsPlan:
    grid = _grid(q_len, k_len, offset)
    dt = _int_dtype(dtype)
    if clip is not None:
        clip = _checks.integer(clip, "max_relative_position", minimum=0)
        _fits(dt, 0, 2 * clip, f"max_relative_position = {clip}: clipped positions")
    elif grid.q_len and grid.k_len:
        _fits(dt, grid.first, grid.first + grid.length - 1, "relative positions")
    shape = (grid.q_len, grid.k_len)
    _checks.result_size(shape, dt, "the result")
    return PositionsPlan(grid, clip, dt, _checks.output(out, shape, dt))


def relative_positions(q_len: int, k_len: int, *, offset: int = 0, dtype: Any = np.int64, out: Any = None) -> Any:
    """Reference for :func:`posenc.relative_positions`."""
    plan = _plan_positions(q_len, k_len, offset, None, dtype, out)
    return _finish(plan.grid.distances().astype(plan.dtype), plan.out, out)


def clipped_relative_positions(
    q_len: int, k_len: int, max_relative_position: int, *, offset: int = 0, dtype: Any = np.int64, out: Any = None
) -> Any:
    """Reference for :func:`posenc.clipped_relative_positions`."""
    _checks.integer(max_relative_position, "max_relative_position", minimum=0)  # None means "no clip" inside
    plan = _plan_positions(q_len, k_len, offset, max_relative_position, dtype, out)
    m = plan.clip
    assert m is not None  # set whenever max_relative_position is given
    return _finish((np.clip(plan.grid.distances(), -m, m) + m).astype(plan.dtype), plan.out, out)


# ---------------------------------------------------------------- T5 buckets

class T5Params(NamedTuple):
    bidirectional: bool
    num_buckets: int
    max_distance: int
    half: int  # buckets per direction (num_buckets // 2 if bidirectional)
    max_exact: int  # distances below this get a bucket each


def _plan_t5(bidirectional: Any, num_buckets: Any, max_distance: Any) -> T5Params:
    bidirectional = _bool(bidirectional, "bidirectional")
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
    if max_distance > _DISTANCE_CLIP:
        raise ValueError(f"max_distance must be <= 2**62, got {max_distance}")
    return T5Params(bidirectional, num_buckets, max_distance, half, max_exact)


def t5_bucket_values(distance: np.ndarray, p: T5Params) -> np.ndarray:
    """int32 buckets of int64 distances: T5's formula, transcribed with its float32 arithmetic.

    Hugging Face ``T5Attention._relative_position_bucket`` (adapted from
    mesh-tensorflow's ``_relative_position_bucket``), step for step::

        large = max_exact + int(log(float32(n) / max_exact) / float32(log(max_distance / max_exact))
                                * (half - max_exact))

    every operation rounded to float32 as PyTorch does (the Python-float
    divisor becomes a float32 scalar), truncated toward zero, clamped to
    ``half - 1``. The float32 logarithm is the correctly rounded one (float64
    log of the float32 argument, rounded once): PyTorch's vectorised log is
    not always correctly rounded, but it agrees with this on every bucket the
    parity tests enumerate.
    """
    d = np.clip(distance.astype(np.int64, copy=False), -_DISTANCE_CLIP, _DISTANCE_CLIP)
    buckets = np.zeros(d.shape, np.int64)
    if p.bidirectional:
        buckets += (d > 0) * p.half
        n = np.abs(d)
    else:
        n = -np.minimum(d, 0)
    me = p.max_exact
    x = n.astype(np.float32) / np.float32(me)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_x = np.log(x.astype(np.float64)).astype(np.float32)
        scaled = log_x / np.float32(math.log(p.max_distance / me)) * np.float32(p.half - me)
        large = me + np.where(n < me, 0, scaled).astype(np.int64)
    large = np.minimum(large, p.half - 1)
    return (buckets + np.where(n < me, n, large)).astype(np.int32)


def _integer_array(value: Any, name: str) -> np.ndarray:
    arr = _checks.as_array(value, name)
    if arr.size == 0 and not isinstance(value, np.ndarray):  # [] is float64 to NumPy
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    if arr.dtype.kind == "u":  # anything past 2**62 is in the last bucket anyway
        arr = np.minimum(arr, np.uint64(_DISTANCE_CLIP)).astype(np.int64)
    return arr


def t5_bucket(relative_position: Any, *, bidirectional: bool = True, num_buckets: int = 32, max_distance: int = 128) -> Any:
    """Reference for :func:`posenc.t5_bucket`."""
    p = _plan_t5(bidirectional, num_buckets, max_distance)
    return t5_bucket_values(_integer_array(relative_position, "relative_position"), p)


class BucketsPlan(NamedTuple):
    grid: Grid
    t5: T5Params
    out: Optional[np.ndarray]


def _plan_buckets(q_len: Any, k_len: Any, offset: Any, bidirectional: Any, num_buckets: Any, max_distance: Any,
                  out: Any) -> BucketsPlan:
    grid = _grid(q_len, k_len, offset)
    t5 = _plan_t5(bidirectional, num_buckets, max_distance)
    shape = (grid.q_len, grid.k_len)
    _checks.result_size(shape, np.dtype(np.int32), "the result")
    return BucketsPlan(grid, t5, _checks.output(out, shape, np.dtype(np.int32)))


def t5_buckets(q_len: int, k_len: int, *, offset: int = 0, bidirectional: bool = True, num_buckets: int = 32,
               max_distance: int = 128, out: Any = None) -> Any:
    """Reference for :func:`posenc.t5_buckets`."""
    plan = _plan_buckets(q_len, k_len, offset, bidirectional, num_buckets, max_distance, out)
    return _finish(t5_bucket_values(plan.grid.distances(), plan.t5), plan.out, out)


class T5BiasPlan(NamedTuple):
    grid: Grid
    t5: T5Params
    table: np.ndarray  # [num_buckets, heads]
    out: Optional[np.ndarray]


def _table(table: Any) -> np.ndarray:
    t = _checks.float_array(table, "table")
    if t.ndim != 2:
        raise ValueError(f"table must have shape [num_buckets, heads], got shape {t.shape}")
    if t.shape[1] == 0:
        raise ValueError("table must have at least one head (table.shape[1] == 0)")
    return t


def _plan_t5_bias(table: Any, q_len: Any, k_len: Any, offset: Any, bidirectional: Any, max_distance: Any,
                  out: Any) -> T5BiasPlan:
    t = _table(table)
    grid = _grid(q_len, k_len, offset)
    t5 = _plan_t5(bidirectional, t.shape[0], max_distance)
    shape = (t.shape[1], grid.q_len, grid.k_len)
    _checks.result_size(shape, t.dtype, "the bias")
    return T5BiasPlan(grid, t5, t, _checks.output(out, shape, t.dtype, [(t, "table")]))


def t5_bias(table: Any, q_len: int, k_len: int, *, offset: int = 0, bidirectional: bool = True,
            max_distance: int = 128, out: Any = None) -> Any:
    """Reference for :func:`posenc.t5_bias`."""
    plan = _plan_t5_bias(table, q_len, k_len, offset, bidirectional, max_distance, out)
    buckets = t5_bucket_values(plan.grid.distances(), plan.t5)
    return _finish(np.ascontiguousarray(np.moveaxis(plan.table[buckets], -1, 0)), plan.out, out)


class AddPlan(NamedTuple):
    scores: np.ndarray  # [..., heads, q, k]
    grid: Grid
    heads: int
    out: Optional[np.ndarray]


def _plan_scores(scores: Any, offset: Any, heads: Optional[int], out: Any,
                 extra: Sequence[Tuple[np.ndarray, str]] = ()) -> AddPlan:
    s = _checks.float_array(scores, "scores")
    if s.ndim < 3:
        raise ValueError(f"scores must have shape [..., heads, q, k], got shape {s.shape}")
    if s.shape[-3] == 0:
        raise ValueError(f"scores must have at least one head (scores.shape[-3] == 0), got shape {s.shape}")
    if heads is not None and s.shape[-3] != heads:
        raise ValueError(f"scores has {s.shape[-3]} heads (scores.shape[-3]) but the bias has {heads}")
    grid = _grid(s.shape[-2], s.shape[-1], offset)
    target = _checks.output(out, s.shape, s.dtype, [(s, "scores")] + list(extra))
    return AddPlan(s, grid, s.shape[-3], target)


def _add(plan: AddPlan, bias: np.ndarray, result: Any) -> Any:
    """scores + bias with the bias already in the scores' dtype: the exact sum, rounded once."""
    total = plan.scores.astype(np.float64) + bias.astype(np.float64)
    return _finish(round_once(total, plan.scores.dtype), plan.out, result)


def add_t5_bias(scores: Any, table: Any, *, offset: int = 0, bidirectional: bool = True, max_distance: int = 128,
                out: Any = None) -> Any:
    """Reference for :func:`posenc.add_t5_bias`."""
    t = _table(table)
    t5 = _plan_t5(bidirectional, t.shape[0], max_distance)
    plan = _plan_scores(scores, offset, t.shape[1], out, [(t, "table")])
    buckets = t5_bucket_values(plan.grid.distances(), t5)
    bias = round_once(t.astype(np.float64), plan.scores.dtype)[buckets]  # [q, k, heads]
    return _add(plan, np.moveaxis(bias, -1, 0), out)


# ---------------------------------------------------------------- ALiBi

def alibi_slopes_float64(num_heads: int) -> np.ndarray:
    """The ALiBi authors' ``get_slopes`` (ofirpress/attention_with_linear_biases), as they evaluate it.

    Python floats (float64): ``start = 2**(-2**-(log2(n) - 3))`` and slope
    ``i`` is ``start * start**i`` for a power of two ``n`` (the closed form
    2^(-8(i+1)/n), rounded as their product rounds); otherwise the slopes of
    the power of two below ``n`` followed by every other slope of twice that
    power.
    """

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
    return np.fromiter(get_slopes(num_heads), dtype=np.float64, count=num_heads)


def alibi_slopes(num_heads: int, dtype: Any = np.float32) -> np.ndarray:
    """Reference for :func:`posenc.alibi_slopes`."""
    heads = _checks.integer(num_heads, "num_heads", minimum=1)
    dt = _checks.float_dtype(dtype)
    return round_once(alibi_slopes_float64(heads), dt)


def _slopes(slopes: Any, heads: int) -> np.ndarray:
    """float64 slopes: the authors' for ``heads``, or the caller's (finite, one per head)."""
    if slopes is None:
        return alibi_slopes_float64(heads)
    arr = _checks.as_array(slopes, "slopes")
    if arr.dtype.kind not in "iuf" and not _checks.is_bfloat16(arr.dtype):
        raise TypeError(f"slopes must be real numbers, got dtype {arr.dtype}")
    arr = np.require(arr, np.float64, ["C", "A"])  # aligned: the kernels load doubles
    if arr.ndim != 1:
        raise ValueError(f"slopes must be a 1-D array [heads], got shape {arr.shape}")
    if heads is not None and arr.shape[0] != heads:
        raise ValueError(f"slopes has {arr.shape[0]} entries but there are {heads} heads")
    if arr.shape[0] == 0:
        raise ValueError("slopes must not be empty")
    if not np.isfinite(arr).all():
        raise ValueError("slopes must be finite")
    return arr


def alibi_values(slopes: np.ndarray, distance: np.ndarray, symmetric: bool, dtype: np.dtype) -> np.ndarray:
    """[heads, ...] = slope_h · d (or -slope_h · |d|) in float64, rounded once to ``dtype``."""
    d = (-np.abs(distance) if symmetric else distance).astype(np.float64)  # -|0| stays +0.0
    return round_once(slopes.reshape((-1,) + (1,) * distance.ndim) * d, dtype)


class AlibiPlan(NamedTuple):
    slopes: np.ndarray  # float64 [heads]
    grid: Grid
    symmetric: bool
    dtype: np.dtype
    out: Optional[np.ndarray]


def _plan_alibi(num_heads: Any, q_len: Any, k_len: Any, offset: Any, symmetric: Any, slopes: Any, dtype: Any,
                out: Any) -> AlibiPlan:
    heads = _checks.integer(num_heads, "num_heads", minimum=1)
    grid = _grid(q_len, k_len, offset)
    symmetric = _bool(symmetric, "symmetric")
    s = _slopes(slopes, heads)
    dt = _checks.float_dtype(dtype)
    shape = (heads, grid.q_len, grid.k_len)
    _checks.result_size(shape, dt, "the bias")
    return AlibiPlan(s, grid, symmetric, dt, _checks.output(out, shape, dt))


def alibi_bias(num_heads: int, q_len: int, k_len: int, *, offset: int = 0, symmetric: bool = False,
               slopes: Any = None, dtype: Any = np.float32, out: Any = None) -> Any:
    """Reference for :func:`posenc.alibi_bias`."""
    plan = _plan_alibi(num_heads, q_len, k_len, offset, symmetric, slopes, dtype, out)
    return _finish(alibi_values(plan.slopes, plan.grid.distances(), plan.symmetric, plan.dtype), plan.out, out)


def _plan_add_alibi(scores: Any, offset: Any, symmetric: Any, slopes: Any, out: Any) -> Tuple[AddPlan, np.ndarray, bool]:
    symmetric = _bool(symmetric, "symmetric")
    plan = _plan_scores(scores, offset, None, out)
    return plan, _slopes(slopes, plan.heads), symmetric


def add_alibi(scores: Any, *, offset: int = 0, symmetric: bool = False, slopes: Any = None, out: Any = None) -> Any:
    """Reference for :func:`posenc.add_alibi`."""
    plan, s, symmetric = _plan_add_alibi(scores, offset, symmetric, slopes, out)
    return _add(plan, alibi_values(s, plan.grid.distances(), symmetric, plan.scores.dtype), out)


# ---------------------------------------------------------------- Shaw-style embeddings

class EmbeddingsPlan(NamedTuple):
    table: np.ndarray  # [2·max_relative_position + 1, d]
    grid: Grid
    clip: int
    out: Optional[np.ndarray]


def _plan_embeddings(table: Any, q_len: Any, k_len: Any, max_relative_position: Any, offset: Any,
                     out: Any) -> EmbeddingsPlan:
    t = _checks.float_array(table, "table")
    clip = _checks.integer(max_relative_position, "max_relative_position", minimum=0)
    if t.ndim != 2 or t.shape[0] != 2 * clip + 1:
        raise ValueError(
            f"table must have shape [2·max_relative_position + 1, d] = [{2 * clip + 1}, d], got shape {t.shape}"
        )
    grid = _grid(q_len, k_len, offset)
    shape = (grid.q_len, grid.k_len, t.shape[1])
    _checks.result_size(shape, t.dtype, "the result")
    return EmbeddingsPlan(t, grid, clip, _checks.output(out, shape, t.dtype, [(t, "table")]))


def relative_embeddings(table: Any, q_len: int, k_len: int, max_relative_position: int, *, offset: int = 0,
                        out: Any = None) -> Any:
    """Reference for :func:`posenc.relative_embeddings`."""
    plan = _plan_embeddings(table, q_len, k_len, max_relative_position, offset, out)
    m = plan.clip
    return _finish(plan.table[np.clip(plan.grid.distances(), -m, m) + m], plan.out, out)
