"""Learned-table plans computed with NumPy: the specification the native kernels are checked against.

Lookup copies table rows exactly; the add is computed in float64 and rounded
once; the gradient sums, for each position, its rows in the order they appear
in the flattened input, in the plan's accumulator type (float32 for
float32/float16/bfloat16, float64 for float64), as the kernel does, so that
native and reference agree bit for bit. Resizing sums the plan's taps in
float64, in blocks of output indices.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _api
from .._plans.learned import (EmbeddingAdd, EmbeddingGrad, EmbeddingLookup, ResampleAxis, TableResize,
                              accumulator_dtype, run_steps)
from .._rounding import round_once


@_api.reference(EmbeddingLookup)
def lookup(plan: EmbeddingLookup) -> Any:
    return _api.store(plan.out, plan.table[plan.positions].reshape(plan.shape))


@_api.reference(EmbeddingAdd)
def add(plan: EmbeddingAdd) -> Any:
    rows = plan.table[plan.positions].reshape(plan.positions_shape + (plan.x.shape[-1],))
    return _api.store(plan.out, round_once(plan.x.astype(np.float64) + rows.astype(np.float64), plan.x.dtype))


@_api.reference(EmbeddingGrad)
def grad(plan: EmbeddingGrad) -> Any:
    """``np.add.at`` adds the rows one after the other, in order of appearance."""
    acc = np.zeros(plan.shape, accumulator_dtype(plan.grad.dtype))
    rows = plan.grad.reshape(int(np.prod(plan.grad.shape[:-1])), plan.shape[1]).astype(acc.dtype)
    if rows.shape[0]:
        repeats = rows.shape[0] // plan.positions.size
        np.add.at(acc, np.tile(plan.positions, repeats), rows)
    return round_once(acc, plan.grad.dtype)


_BLOCK_BYTES = 1 << 22  # float64 temporaries per block: cache-sized, never table-sized


def resample(values: np.ndarray, step: ResampleAxis) -> np.ndarray:
    """``values`` (any float dtype) resampled along ``step.axis``: computed in float64, stored as ``step.dtype``.

    Written as ``v_a + Σ_k w_k·(v_k − v_a)`` around the tap ``a`` at floor(src)
    (the weights sum to 1): the same value as ``Σ_k w_k·v_k`` to float64
    rounding, but a constant comes out exactly and a sample that lands on a
    source row (weight 1 there, 0 elsewhere) is copied exactly. Output indices
    are processed in blocks so that the float64 temporaries stay small: a
    large table is neither copied to float64 whole nor paged in several times.
    """
    axis, sources, weights = step.axis, step.sources, step.weights
    out_size, taps = sources.shape
    anchor = 0 if taps == 2 else 1
    result = np.empty(values.shape[:axis] + (out_size,) + values.shape[axis + 1:], step.dtype)
    per_index = 8 * (result.size // out_size if out_size else 0)
    block = max(1, _BLOCK_BYTES // max(per_index, 1))
    for lo in range(0, out_size, block):
        hi = min(lo + block, out_size)
        idx, w = sources[lo:hi], weights[lo:hi]
        shape = [1] * values.ndim
        shape[axis] = hi - lo
        base = np.take(values, idx[:, anchor], axis=axis).astype(np.float64)
        delta = np.zeros_like(base)
        for k in range(taps):
            if k != anchor:
                delta += w[:, k].reshape(shape) * (np.take(values, idx[:, k], axis=axis).astype(np.float64) - base)
        result[(slice(None),) * axis + (slice(lo, hi),)] = round_once(base + delta, result.dtype)
    return result


@_api.reference(TableResize)
def resize(plan: TableResize) -> Any:
    return run_steps(plan, resample)
