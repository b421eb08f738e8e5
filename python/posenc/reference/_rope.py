"""Rotary plans computed with NumPy: the specification the native kernels are checked against.

Angles and trigonometry in float64 with ``np.sin``/``np.cos``; each pair
(u, v) is rotated in float64 (``u·c − v·s``, ``v·c + u·s``, with c and s
already times the attention scaling, s negated for the inverse) and the
result rounded once to the operand's dtype. The frequencies, pairing and
positions come from the plan (``posenc._plans.rope``).
"""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from .. import _api
from .._plans.rope import RopeCosSin, RopeRotation, RopeRotationQK
from .._rounding import round_once


def _angles(plan: RopeRotation) -> np.ndarray:
    """float64 angles broadcastable to x[..., rotary_dim/2], the sequence on its axis."""
    x, p = plan.x, plan.params
    seq_axis = x.ndim + p.seq_axis
    seq, half = x.shape[seq_axis], p.inv_freq.shape[0]
    if p.positions is None:
        pos = (p.start + np.arange(seq, dtype=np.float64))[None, None, :]
    else:
        pos = p.positions  # [axes, groups, seq]
    if p.pair_axis is None:
        theta = pos[0][:, :, None] * p.inv_freq  # [groups, seq, half]
    else:
        axis = np.minimum(p.pair_axis, pos.shape[0] - 1)
        theta = np.take(pos, axis, axis=0).transpose(1, 2, 0) * p.inv_freq
    # Groups on axis 0, seq on its axis, half last; size 1 elsewhere.
    shape = [1] * x.ndim
    shape[seq_axis] = seq
    shape[-1] = half
    if p.grouped:
        shape[0] = theta.shape[0]
    result: np.ndarray = theta.reshape(shape)
    return result


def _tables(plan: RopeRotation) -> Tuple[np.ndarray, np.ndarray]:
    """The caller's float64 cos/sin [groups, seq, half], broadcastable to x[..., rotary_dim/2] as ``_angles``."""
    x, p = plan.x, plan.params
    assert p.tables is not None
    shape = [1] * x.ndim
    shape[x.ndim + p.seq_axis] = p.tables[0].shape[1]
    shape[-1] = p.tables[0].shape[2]
    if p.grouped:
        shape[0] = p.tables[0].shape[0]
    return p.tables[0].reshape(shape), p.tables[1].reshape(shape)


def _rotated(plan: RopeRotation) -> np.ndarray:
    """The rotated x in float64."""
    p = plan.params
    x = plan.x.astype(np.float64)
    if p.tables is not None:
        c, s = _tables(plan)
        c, s = p.scale * c, p.scale * s
    else:
        theta = _angles(plan)
        c = p.scale * np.cos(theta)
        s = p.scale * np.sin(theta)
    return rotate_pairs(x, c, -s if p.inverse else s, p.rotary_dim, p.interleaved)


def rotate_pairs(x: np.ndarray, c: np.ndarray, s: np.ndarray, rotary_dim: int, interleaved: bool) -> np.ndarray:
    """float64 ``x`` with each pair of its first ``rotary_dim`` features rotated by (c, s) [..., rotary_dim / 2]
    (pairs (2j, 2j+1) when interleaved, else (j, j + rotary_dim/2)); the other features as they are."""
    rd, half = rotary_dim, rotary_dim // 2
    first, second = (slice(0, rd, 2), slice(1, rd, 2)) if interleaved else (slice(0, half), slice(half, rd))
    u, v = x[..., first], x[..., second]
    y = x.copy()
    y[..., first], y[..., second] = u * c - v * s, v * c + u * s
    return y


@_api.reference(RopeRotation)
def rotate(plan: RopeRotation) -> Any:
    return _api.store(plan.out, round_once(_rotated(plan), plan.x.dtype))


@_api.reference(RopeRotationQK)
def rotate_qk(plan: RopeRotationQK) -> Tuple[Any, Any]:
    return rotate(plan.q), rotate(plan.k)


@_api.reference(RopeCosSin)
def cos_sin(plan: RopeCosSin) -> Tuple[np.ndarray, np.ndarray]:
    pos = np.arange(plan.n, dtype=np.float64) if plan.positions is None else plan.positions
    angles = np.multiply.outer(pos, plan.inv_freq)
    return round_once(plan.scale * np.cos(angles), plan.dtype), round_once(plan.scale * np.sin(angles), plan.dtype)
