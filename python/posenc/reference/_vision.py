"""Vision plans computed with NumPy: the specification the native kernels are checked against.

Angles and trigonometry in float64 with ``np.sin``/``np.cos``, the result
rounded once to the plan's dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _api
from .._plans.vision import (DetrSine, SinusoidalGridRows, SinusoidalRows, SwinBias, detr_encode, detr_positions,
                             encode, swin_index)
from .._rounding import round_once


@_api.reference(SinusoidalRows)
def rows(plan: SinusoidalRows) -> Any:
    parts = [encode(np.multiply.outer(plan.coords[:, a], w), plan.interleaved) for a, w in enumerate(plan.freqs)]
    values = np.concatenate(parts, axis=-1).reshape(plan.shape)
    return _api.store(plan.out, round_once(values, plan.dtype))


@_api.reference(SinusoidalGridRows)
def grid_rows(plan: SinusoidalGridRows) -> Any:
    axes = len(plan.grid)
    parts = []
    for block in plan.blocks:
        emb = encode(np.multiply.outer(block.positions, block.freqs), plan.interleaved)
        index = [np.newaxis] * axes + [slice(None)]
        index[block.axis] = slice(None)
        parts.append(np.broadcast_to(emb[tuple(index)], plan.grid + (emb.shape[-1],)))
    cells = np.concatenate(parts, axis=-1).reshape(-1, plan.shape[1])
    values = np.concatenate([np.zeros((plan.zero_rows, plan.shape[1])), cells])
    return _api.store(plan.out, round_once(values, plan.dtype))


@_api.reference(SwinBias)
def swin_bias(plan: SwinBias) -> Any:
    wh, ww = plan.window
    bias = np.moveaxis(plan.table.astype(np.float64)[swin_index(wh, ww)], -1, 0)  # [heads, N, N]
    values = bias if plan.scores is None else plan.scores.astype(np.float64) + bias
    return _api.store(plan.out, round_once(values, plan.dtype))


@_api.reference(DetrSine)
def detr_sine(plan: DetrSine) -> Any:
    batch, h, w, _ = plan.shape
    if plan.y_count is None or plan.x_count is None:  # no mask: every pixel valid
        y_count = np.broadcast_to(np.arange(1, h + 1)[None, :, None], (batch, h, w))
        x_count = np.broadcast_to(np.arange(1, w + 1)[None, None, :], (batch, h, w))
    else:
        y_count, x_count = plan.y_count, plan.x_count
    y = detr_positions(y_count, y_count[:, -1:, :], plan.normalize, plan.scale)
    x = detr_positions(x_count, x_count[:, :, -1:], plan.normalize, plan.scale)
    values = np.concatenate([detr_encode(y, plan.dim_t), detr_encode(x, plan.dim_t)], axis=-1)
    return _api.store(plan.out, round_once(values, plan.dtype))
