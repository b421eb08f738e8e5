"""Multi-axis rotary plans computed with NumPy: the specification the native kernels are checked against.

θ_j = Σ_a coords[..., a]·freqs[a, j] in float64, summed in axis order;
``np.cos``/``np.sin`` of it; each pair (u, v) rotated in float64
(``u·c − v·s``, ``v·c + u·s``, s negated for the inverse) and the result
rounded once to x's dtype.
"""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from .. import _api
from .._plans.rope_nd import RopeNdCosSin, RopeNdRotation
from .._rounding import round_once
from ._rope import rotate_pairs


def _angles(coords: np.ndarray, freqs: np.ndarray) -> np.ndarray:
    """coords [groups, seq, axes], freqs [heads, axes, pairs] → θ [groups, heads, seq, pairs], float64."""
    theta: np.ndarray = coords[:, None, :, 0, None] * freqs[None, :, None, 0, :]
    for a in range(1, coords.shape[-1]):
        theta = theta + coords[:, None, :, a, None] * freqs[None, :, None, a, :]
    return theta


def _broadcast(theta: np.ndarray, plan: RopeNdRotation) -> np.ndarray:
    """θ [groups, heads, seq, pairs] reshaped to broadcast against x[..., pairs]."""
    x = plan.x
    groups, heads, seq, pairs = theta.shape
    shape = [1] * x.ndim
    shape[plan.seq_axis] = seq
    shape[-1] = pairs
    if plan.per_head:
        if plan.seq_axis == -3:  # x [..., seq, heads, head_dim]
            theta = theta.transpose(0, 2, 1, 3)
            shape[-2] = heads
        else:  # x [..., heads, seq, head_dim]
            shape[-3] = heads
    if plan.grouped:
        shape[0] = groups
    result: np.ndarray = theta.reshape(shape)
    return result


def _rotated(plan: RopeNdRotation) -> np.ndarray:
    x = plan.x.astype(np.float64)
    theta = _broadcast(_angles(plan.coords, plan.freqs), plan)
    s = np.sin(theta)
    return rotate_pairs(x, np.cos(theta), -s if plan.inverse else s, 2 * plan.freqs.shape[-1], plan.interleaved)


@_api.reference(RopeNdRotation)
def rotate(plan: RopeNdRotation) -> Any:
    return _api.store(plan.out, round_once(_rotated(plan), plan.x.dtype))


@_api.reference(RopeNdCosSin)
def cos_sin(plan: RopeNdCosSin) -> Tuple[np.ndarray, np.ndarray]:
    theta = _angles(plan.coords, plan.freqs)  # [rows, heads, seq, pairs]
    theta = theta.reshape(plan.shape)  # heads axis of size 1 dropped when freqs are shared
    return round_once(np.cos(theta), plan.dtype), round_once(np.sin(theta), plan.dtype)
