"""Native executors of the relative plans (kernels: cpp/src/relative.cpp): Toeplitz blocks from lookup rows.

Every output of the family depends on the distance ``j - (offset + i)``
only. Each executor builds one lookup row ("lut") per head holding the value
of each of the block's ``q_len + k_len - 1`` distances (NumPy, and the
binding ``bucket_rows`` for T5's biases; O(heads·(q+k)) work); the kernels
stream the ``[..., q, k]`` rows out of it, row ``i`` being the slice
``lut[q_len-1-i : q_len-1-i+k_len]`` (``toeplitz_copy``), or add them to
attention scores (``toeplitz_add``). No logarithm is evaluated per element
and no index matrix is built.

T5 buckets come from the bucket boundaries (the first distance of each log
bucket) that the kernel ``t5_thresholds`` finds once per parameter set by
evaluating T5's float32 chain; the NumPy executor evaluates that chain per
element instead, independently.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional

import numpy as np

from .. import _api
from .._backend import native
from .._checks import Out
from .._plans.relative import (AlibiAdd, AlibiBias, DebertaBucketBlock, DistanceGrid,
                               RelativeEmbeddings, RelativePositions, T5Bias, T5BiasAdd, T5BucketBlock, T5Bucketing,
                               T5BucketOf, deberta_values, t5_ties)
from ._rounded import rounded
from ._memory import aligned, write


# ---------------------------------------------------------------- lookup rows

def _distances(grid: DistanceGrid, clip: Optional[int] = None) -> np.ndarray:
    """The distance of every lookup-row entry (``lut[m]`` is at ``grid.first + m``), or its Shaw index.

    With ``clip`` m: ``clip(d, -m, m) + m``, the index into a table of 2m + 1
    rows (np.minimum/np.maximum: np.clip's Python layers cost more than the
    work on rows this short).
    """
    first = grid.first
    d = np.arange(first, first + grid.length, dtype=np.int64)
    return d if clip is None else np.minimum(np.maximum(d, -clip), clip) + clip


def _stream(out: Optional[Out], shape: Any, dtype: np.dtype, lut: np.ndarray, step: int = 1) -> Any:
    """Fill ``out`` (or a new array) of ``shape`` with the rows of ``lut`` [heads, length·step] and return it."""
    dest = write(out, shape, dtype, lambda d: native.toeplitz_copy(d, lut, step))
    return _api.returned(out, dest)


def _add(scores: np.ndarray, out: Optional[Out], lut: np.ndarray) -> Any:
    """``scores + lut`` rows (the lut already in the scores' dtype), into ``out`` or a new array."""
    x = aligned(scores)
    dest = write(out, x.shape, x.dtype, lambda d: native.toeplitz_add(x, d, lut))
    return _api.returned(out, dest)


@functools.lru_cache(maxsize=64)
def _t5_thresholds(kernel: Callable[[int, int, int], np.ndarray], half: int, max_exact: int,
                   max_distance: int) -> np.ndarray:
    """The first distance of each T5 log bucket: ``kernel(half, max_exact, max_distance)``, read-only.

    Computed once per parameter set (about 4 µs for the defaults, far more for
    large bucket counts) and per kernel: a kernel replaced at run time (a
    test's stand-in) is called, not bypassed by an earlier result.
    """
    thresholds = kernel(half, max_exact, max_distance)
    thresholds.flags.writeable = False
    return thresholds


def _buckets(distance: np.ndarray, t5: T5Bucketing) -> np.ndarray:
    """int32 buckets of int64 distances (within ±2**62): exact ones as they are, larger ones by a search
    (the exact bucket at whole-number ties)."""
    direction: Any  # an array of offsets, or 0
    if t5.bidirectional:
        n = np.abs(distance)
        direction = (distance > 0) * t5.half
    else:
        n = -np.minimum(distance, 0)
        direction = 0
    thresholds = _t5_thresholds(native.t5_thresholds, t5.half, t5.max_exact, t5.max_distance)
    large = t5_ties(t5.half, t5.max_exact, t5.max_distance).apply(
        n, t5.max_exact + np.searchsorted(thresholds, n, side="right"))
    buckets: np.ndarray = (np.where(n < t5.max_exact, n, large) + direction).astype(np.int32)
    return buckets


# Lookup rows of buckets up to this long are kept (at most 16 of them, 4 MiB): every layer of a T5 model
# asks for the same row, and rebuilding it cost ~80 µs a call right after a large add.
_CACHED_BUCKET_ROW = 2**16


def _bucket_row(grid: DistanceGrid, t5: T5Bucketing) -> np.ndarray:
    """int32 bucket of each lookup-row entry (read-only; kept for rows up to _CACHED_BUCKET_ROW long)."""
    return (_kept_bucket_row if grid.length <= _CACHED_BUCKET_ROW else _new_bucket_row)(grid, t5)


def _new_bucket_row(grid: DistanceGrid, t5: T5Bucketing) -> np.ndarray:
    row = _buckets(_distances(grid), t5)
    row.flags.writeable = False
    return row


_kept_bucket_row = functools.lru_cache(maxsize=16)(_new_bucket_row)


def _alibi_lut(slopes: np.ndarray, grid: DistanceGrid, symmetric: bool, dtype: np.dtype) -> np.ndarray:
    """[heads, length]: slope_h·d (or -slope_h·|d|) of each distance, in float64 rounded once to ``dtype``."""
    lut = np.empty((slopes.shape[0], grid.length), dtype)
    native.alibi_rows(slopes, lut, grid.first, symmetric)
    return lut


# ---------------------------------------------------------------- executors

@_api.native(RelativePositions)
def positions(plan: RelativePositions) -> Any:
    lut = _distances(plan.grid, plan.clip).astype(plan.dtype)[None, :]
    return _stream(plan.out, (plan.grid.q_len, plan.grid.k_len), plan.dtype, lut)


@_api.native(RelativeEmbeddings)
def embeddings(plan: RelativeEmbeddings) -> Any:
    q, k, features = plan.grid.q_len, plan.grid.k_len, plan.table.shape[1]
    shape = (q, k, features)
    if q * k * features == 0:
        return _api.returned(plan.out, _api.target(plan.out, shape, plan.table.dtype))
    # One embedding row per distance: [q + k - 1, features], flattened so that
    # row i of the result, as [k·features], is one contiguous slice of it.
    lut = np.ascontiguousarray(plan.table[_distances(plan.grid, plan.clip)]).reshape(1, -1)

    def fill(dest: np.ndarray) -> None:
        rows = _rows_of_embeddings(dest)
        if rows is None:  # an out whose [k, features] axes do not merge: fill a twin, copy once
            twin = np.empty(shape, dest.dtype)
            native.toeplitz_copy(_rows_of_embeddings(twin), lut, features)
            dest[...] = twin
        else:
            native.toeplitz_copy(rows, lut, features)

    return _api.returned(plan.out, write(plan.out, shape, plan.table.dtype, fill))


def _rows_of_embeddings(a: np.ndarray) -> Any:
    """``a[q, k, d]`` as a ``[q, k·d]`` view when its last two axes merge, else None."""
    q, k, d = a.shape
    if d == 1:
        col = a.strides[1]
    elif k == 1 or a.strides[1] == d * a.strides[2]:
        col = a.strides[2]
    else:
        return None
    return np.lib.stride_tricks.as_strided(a, (q, k * d), (a.strides[0], col))


@_api.native(T5BucketOf)
def t5_bucket(plan: T5BucketOf) -> Any:
    return _buckets(plan.distances, plan.t5)


@_api.native(T5BucketBlock)
def t5_buckets(plan: T5BucketBlock) -> Any:
    lut = _bucket_row(plan.grid, plan.t5)[None, :]
    return _stream(plan.out, (plan.grid.q_len, plan.grid.k_len), np.dtype(np.int32), lut)


@_api.native(T5Bias)
def t5_bias(plan: T5Bias) -> Any:
    lut = native.bucket_rows(aligned(plan.table), _bucket_row(plan.grid, plan.t5))
    return _stream(plan.out, (plan.table.shape[1], plan.grid.q_len, plan.grid.k_len), plan.table.dtype, lut)


@_api.native(T5BiasAdd)
def add_t5_bias(plan: T5BiasAdd) -> Any:
    table = plan.table  # the bias in the scores' dtype: rounded once unless it has it already
    if table.dtype != plan.scores.dtype:
        table = rounded(table, plan.scores.dtype)
    return _add(plan.scores, plan.out, native.bucket_rows(aligned(table), _bucket_row(plan.grid, plan.t5)))


@_api.native(AlibiBias)
def alibi_bias(plan: AlibiBias) -> Any:
    lut = _alibi_lut(plan.slopes, plan.grid, plan.symmetric, plan.dtype)
    return _stream(plan.out, (plan.slopes.shape[0], plan.grid.q_len, plan.grid.k_len), plan.dtype, lut)


@_api.native(AlibiAdd)
def add_alibi(plan: AlibiAdd) -> Any:
    x, grid, slopes, symmetric, out = plan
    # The binding builds the rows _alibi_lut does (alibi_rows) and adds them, in one call: a decode step's path.
    x = aligned(x)

    def kernel(d: np.ndarray) -> None:
        native.alibi_add(x, d, slopes, grid.offset, symmetric)

    if out is not None and out.array is x:  # in place on aligned scores: nothing to arrange
        kernel(x)
        return out.given
    return _api.returned(out, write(out, x.shape, x.dtype, kernel))




@_api.native(DebertaBucketBlock)
def deberta_buckets(plan: DebertaBucketBlock) -> Any:
    # DeBERTa's sign: query minus key, the negated distance of each lookup-row entry.
    lut = deberta_values(-_distances(plan.grid), plan.deberta)[None, :]
    return _stream(plan.out, (plan.grid.q_len, plan.grid.k_len), np.dtype(np.int64), lut)
