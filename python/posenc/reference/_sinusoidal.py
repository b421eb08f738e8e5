"""Sinusoidal plans computed with NumPy: the specification the native kernels are checked against.

Angles and trigonometry in float64 with ``np.sin``/``np.cos``, the result
rounded once to the plan's dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _api
from .._plans.sinusoidal import ConcatPositional, SinusoidalAdd, SinusoidalGrid, SinusoidalTable, concat_into
from .._rounding import round_once


def encode(angles: np.ndarray, interleaved: bool) -> np.ndarray:
    """[..., half] angles → [..., 2·half] rows of sines and cosines."""
    s, c = np.sin(angles), np.cos(angles)
    if interleaved:
        return np.stack([s, c], axis=-1).reshape(*angles.shape[:-1], 2 * angles.shape[-1])
    return np.concatenate([s, c], axis=-1)


@_api.reference(SinusoidalTable)
def table(plan: SinusoidalTable) -> Any:
    pos = np.arange(plan.n, dtype=np.float64) if plan.positions is None else plan.positions
    values = encode(np.multiply.outer(pos, plan.inv_freq), plan.interleaved)
    return _api.store(plan.out, round_once(values, plan.dtype))


@_api.reference(SinusoidalAdd)
def add(plan: SinusoidalAdd) -> Any:
    seq = plan.x.shape[-2]
    pos = plan.start + np.arange(seq, dtype=np.float64) if plan.positions is None else plan.positions
    pe = encode(np.multiply.outer(pos, plan.inv_freq), plan.interleaved)
    return _api.store(plan.out, round_once(plan.scale * plan.x.astype(np.float64) + pe, plan.x.dtype))


@_api.reference(SinusoidalGrid)
def grid(plan: SinusoidalGrid) -> Any:
    axes = len(plan.shape)
    parts = []
    for axis, size in enumerate(plan.shape):
        emb = encode(np.multiply.outer(np.arange(size, dtype=np.float64), plan.inv_freq), True)
        index = [np.newaxis] * axes + [slice(None)]
        index[axis] = slice(None)
        parts.append(np.broadcast_to(emb[tuple(index)], plan.shape + (plan.channels,)))
    values = np.concatenate(parts, axis=-1)[..., : plan.dim]
    return _api.store(plan.out, round_once(values, plan.dtype))


@_api.reference(ConcatPositional)
def concat(plan: ConcatPositional) -> Any:
    return _api.returned(plan.out, concat_into(_api.target(plan.out, plan.shape, plan.dtype), plan.x, plan.pe))
