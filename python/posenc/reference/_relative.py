"""Relative plans computed with NumPy: the specification the native kernels are checked against.

Every executor builds its full ``[..., q, k]`` result element by element
from the distance matrix ``j - (offset + i)``, exactly as the published
models write it (the native executor streams one lookup row per head
instead, and must agree bit for bit). Float results are computed in float64
and rounded once; integer results and table rows are exact.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from .. import _api
from .._checks import Out
from .._plans.relative import (AlibiAdd, AlibiBias, DebertaBucketBlock, RelativeEmbeddings,
                               RelativePositions, T5Bias, T5BiasAdd, T5BucketBlock, T5Bucketing, T5BucketOf,
                               deberta_values, t5_ties)
from .._rounding import round_once


def t5_bucket_values(distance: np.ndarray, p: T5Bucketing) -> np.ndarray:
    """int32 buckets of int64 distances (within ±2**62): T5's formula, transcribed with its float32 arithmetic.

    Hugging Face ``T5Attention._relative_position_bucket`` (adapted from
    mesh-tensorflow's ``_relative_position_bucket``), step for step::

        large = max_exact + int(log(float32(n) / max_exact) / float32(log(max_distance / max_exact))
                                * (half - max_exact))

    every operation rounded to float32 as PyTorch does (the Python-float
    divisor becomes a float32 scalar), truncated toward zero, clamped to
    ``half - 1``. The float32 logarithm is the correctly rounded one (float64
    log of the float32 argument, rounded once). At the distances whose exact
    value is a whole number (:func:`t5_ties`) the chain hinges on the log's
    last bit and the exact bucket is taken instead.
    """
    d = distance.astype(np.int64, copy=False)
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
    large = t5_ties(p.half, me, p.max_distance).apply(n, np.minimum(large, p.half - 1))
    return (buckets + np.where(n < me, n, large)).astype(np.int32)


def alibi_values(slopes: np.ndarray, distance: np.ndarray, symmetric: bool, dtype: np.dtype) -> np.ndarray:
    """[heads, q, k] = slope_h · d (or -slope_h · |d|) in float64, rounded once to ``dtype``."""
    d = (-np.abs(distance) if symmetric else distance).astype(np.float64)  # -|0| stays +0.0
    return round_once(slopes[:, None, None] * d[None], dtype)


def _add(scores: np.ndarray, bias: np.ndarray, out: Optional[Out]) -> Any:
    """scores + bias with the bias already in the scores' dtype: the exact sum, rounded once."""
    total = scores.astype(np.float64) + bias.astype(np.float64)
    return _api.store(out, round_once(total, scores.dtype))


@_api.reference(RelativePositions)
def positions(plan: RelativePositions) -> Any:
    d = plan.grid.distances()
    if plan.clip is not None:
        d = np.clip(d, -plan.clip, plan.clip) + plan.clip
    return _api.store(plan.out, d.astype(plan.dtype))


@_api.reference(RelativeEmbeddings)
def embeddings(plan: RelativeEmbeddings) -> Any:
    m = plan.clip
    return _api.store(plan.out, plan.table[np.clip(plan.grid.distances(), -m, m) + m])


@_api.reference(T5BucketOf)
def t5_bucket(plan: T5BucketOf) -> Any:
    return t5_bucket_values(plan.distances, plan.t5)


@_api.reference(T5BucketBlock)
def t5_buckets(plan: T5BucketBlock) -> Any:
    return _api.store(plan.out, t5_bucket_values(plan.grid.distances(), plan.t5))


@_api.reference(T5Bias)
def t5_bias(plan: T5Bias) -> Any:
    buckets = t5_bucket_values(plan.grid.distances(), plan.t5)
    return _api.store(plan.out, np.ascontiguousarray(np.moveaxis(plan.table[buckets], -1, 0)))


@_api.reference(T5BiasAdd)
def add_t5_bias(plan: T5BiasAdd) -> Any:
    buckets = t5_bucket_values(plan.grid.distances(), plan.t5)
    bias = round_once(plan.table.astype(np.float64), plan.scores.dtype)[buckets]  # [q, k, heads]
    return _add(plan.scores, np.moveaxis(bias, -1, 0), plan.out)


@_api.reference(AlibiBias)
def alibi_bias(plan: AlibiBias) -> Any:
    return _api.store(plan.out, alibi_values(plan.slopes, plan.grid.distances(), plan.symmetric, plan.dtype))


@_api.reference(AlibiAdd)
def add_alibi(plan: AlibiAdd) -> Any:
    bias = alibi_values(plan.slopes, plan.grid.distances(), plan.symmetric, plan.scores.dtype)
    return _add(plan.scores, bias, plan.out)



@_api.reference(DebertaBucketBlock)
def deberta_buckets(plan: DebertaBucketBlock) -> Any:
    return _api.store(plan.out, deberta_values(-plan.grid.distances(), plan.deberta))
