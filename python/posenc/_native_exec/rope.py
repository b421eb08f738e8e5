"""Native executors of the rotary plans (kernels: cpp/src/rope.cpp)."""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from .. import _api
from .._backend import native
from .._plans.rope import RopeCosSin, RopeRotation, RopeRotationQK
from .._rounding import round_once
from ._memory import aligned, write


def _rotate_by_tables(plan: RopeRotation) -> Any:
    """x rotated by the caller's float64 tables, in NumPy: float64, rounded once (until the kernel has
    a table angle source)."""
    x, p = plan.x, plan.params
    assert p.tables is not None
    shape = [1] * x.ndim
    shape[x.ndim + p.seq_axis], shape[-1] = p.tables[0].shape[1:]
    if p.grouped:
        shape[0] = p.tables[0].shape[0]
    c, s = (p.scale * t.reshape(shape) for t in p.tables)
    if p.inverse:
        s = -s
    rd, half = p.rotary_dim, p.rotary_dim // 2
    first, second = (slice(0, rd, 2), slice(1, rd, 2)) if p.interleaved else (slice(0, half), slice(half, rd))
    y = x.astype(np.float64)
    u, v = y[..., first], y[..., second]
    y[..., first], y[..., second] = u * c - v * s, v * c + u * s
    return _api.store(plan.out, round_once(y, x.dtype))


@_api.native(RopeRotation)
def rotate(plan: RopeRotation) -> Any:
    if plan.params.tables is not None:
        return _rotate_by_tables(plan)
    x, p = aligned(plan.x), plan.params
    dest = write(plan.out, x.shape, x.dtype,
                 lambda d: native.apply_rope(x, d, x.ndim + p.seq_axis, p.grouped, p.positions, p.start, p.inv_freq,
                                             p.pair_axis, p.scale, p.interleaved, p.inverse))
    return _api.returned(plan.out, dest)


def _one_pass(q: RopeRotation, k: RopeRotation) -> bool:
    """Whether one kernel call can rotate both: one dtype, one rank, every operand aligned."""
    return (q.x.dtype == k.x.dtype and q.x.ndim == k.x.ndim
            and all(a.flags.aligned for a in (q.x, k.x) + tuple(p.out.array for p in (q, k) if p.out is not None)))


@_api.native(RopeRotationQK)
def rotate_qk(plan: RopeRotationQK) -> Tuple[Any, Any]:
    q, k = plan
    if q.params.tables is not None or not _one_pass(q, k):
        return rotate(q), rotate(k)  # the same result in two calls
    p = q.params
    yq = _api.target(q.out, q.x.shape, q.x.dtype)
    yk = _api.target(k.out, k.x.shape, k.x.dtype)
    # Each row's cos/sin computed once, for the heads of both.
    native.apply_rope_qk(q.x, yq, k.x, yk, q.x.ndim + p.seq_axis, p.grouped, p.positions, p.start, p.inv_freq,
                         p.pair_axis, p.scale, p.interleaved, p.inverse)
    return _api.returned(q.out, yq), _api.returned(k.out, yk)


@_api.native(RopeCosSin)
def cos_sin(plan: RopeCosSin) -> Tuple[np.ndarray, np.ndarray]:
    shape = (plan.n, plan.inv_freq.shape[0])
    cos, sin = np.empty(shape, plan.dtype), np.empty(shape, plan.dtype)
    native.rope_cos_sin(cos, sin, plan.positions, 0.0, plan.inv_freq, plan.scale)
    return cos, sin
