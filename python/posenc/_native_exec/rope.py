"""Native executors of the rotary plans (kernels: cpp/src/rope.cpp)."""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from .. import _api
from .._backend import native
from .._plans.rope import RopeCosSin, RopeParams, RopeRotation, RopeRotationQK
from ._memory import aligned, write


def _kernel(p: RopeParams, x: np.ndarray, dest: np.ndarray, k: Optional[np.ndarray] = None,
            dest_k: Optional[np.ndarray] = None) -> None:
    """Rotate x into dest (and k into dest_k, in the same pass) by p: one kernel call."""
    if p.tables is not None:  # the caller's cos/sin (float64 [groups, seq, half])
        native.apply_rope_tables(x, dest, x.ndim + p.seq_axis, p.grouped, p.tables[0], p.tables[1], p.scale,
                                 p.interleaved, p.inverse, k, dest_k)
        return
    seq_axis, _, inv_freq, scale, pair_axis, interleaved, inverse, positions, start, grouped, _ = p
    native.apply_rope(x, dest, x.ndim + seq_axis, grouped, positions, start, inv_freq, pair_axis, scale,
                      interleaved, inverse, k, dest_k)


@_api.native(RopeRotation)
def rotate(plan: RopeRotation) -> Any:
    x, p, out = aligned(plan.x), plan.params, plan.out
    if out is not None and (out.array is x or out.array.flags.aligned):  # straight into the caller's array
        _kernel(p, x, out.array)  # (a decode step's path; x itself was just aligned)
        return out.given
    return _api.returned(out, write(out, x.shape, x.dtype, lambda d: _kernel(p, x, d)))


def _direct(r: RopeRotation) -> bool:
    """Whether r's out (if any) can be written straight: its operand (in place, checked by the caller) or aligned."""
    return r.out is None or r.out.array is r.x or r.out.array.flags.aligned


def _one_pass(q: RopeRotation, k: RopeRotation) -> bool:
    """Whether one kernel call can rotate both: one dtype, one rank, every operand aligned."""
    if q.x.dtype != k.x.dtype or q.x.ndim != k.x.ndim or not (q.x.flags.aligned and k.x.flags.aligned):
        return False
    return _direct(q) and _direct(k)  # (two calls, not a generator: a decode step's path)


@_api.native(RopeRotationQK)
def rotate_qk(plan: RopeRotationQK) -> Tuple[Any, Any]:
    q, k = plan
    if q.params is not k.params or not _one_pass(q, k):
        return rotate(q), rotate(k)  # the same result in two calls (or each operand its own rotation)
    yq = _api.target(q.out, q.x.shape, q.x.dtype)
    yk = _api.target(k.out, k.x.shape, k.x.dtype)
    _kernel(q.params, q.x, yq, k.x, yk)  # each row's cos/sin computed once, for the heads of both
    return _api.returned(q.out, yq), _api.returned(k.out, yk)


@_api.native(RopeCosSin)
def cos_sin(plan: RopeCosSin) -> Tuple[np.ndarray, np.ndarray]:
    shape = (plan.n, plan.inv_freq.shape[0])
    cos, sin = np.empty(shape, plan.dtype), np.empty(shape, plan.dtype)
    native.rope_cos_sin(cos, sin, plan.positions, 0.0, plan.inv_freq, plan.scale)
    return cos, sin
