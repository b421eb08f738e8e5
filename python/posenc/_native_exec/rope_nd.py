"""Native executors of the multi-axis rotary plans (kernels: cpp/src/rope.cpp, its coords·freqs angle source; learned.cpp's lookup_parts for grid tables).

One kernel call: with shared frequencies each (batch, token)'s cos/sin are
computed once and serve every head; per-head frequencies (which share
nothing between heads) get a table per (token block, head) in the same pass.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy as np

from .. import _api
from .._backend import native
from .._plans.rope_nd import RopeNdCosSin, RopeNdRotation
from ._memory import aligned, write
from .sinusoidal import grid_span


def _rotate_into(plan: RopeNdRotation, x: np.ndarray, dest: np.ndarray) -> None:
    if x.size == 0:
        return
    # Per-head freqs [heads, axes, pairs]: the kernel's units end with x's heads axis, unit u takes head u mod heads.
    freqs = plan.freqs if plan.per_head else plan.freqs[0]
    native.apply_rope_nd(x, dest, x.ndim + plan.seq_axis, plan.grouped, plan.coords, freqs, plan.interleaved,
                         plan.inverse)


@_api.native(RopeNdRotation)
def rotate(plan: RopeNdRotation) -> Any:
    x = aligned(plan.x)
    dest = write(plan.out, x.shape, x.dtype, lambda d: _rotate_into(plan, x, d))
    return _api.returned(plan.out, dest)


def _axial_parts(coords: np.ndarray, freqs: np.ndarray, dtype: np.dtype) -> Optional[Tuple[List[Any], List[Any]]]:
    """lookup_parts' cos and sin parts for axial frequencies on grid coordinates, or None.

    Axial frequencies give each pair one axis (its only nonzero frequency), so θ_j = c_a·f_aj exactly
    (the other terms are zeros) and a pair's cos/sin depend on one coordinate. Where each run of pairs
    of one axis (at most four runs) has whole-number coordinates spanning at most a quarter as many
    values as there are rows, the kernel evaluates that span once, with the other coordinates 0 (the
    same angles, so the same bits) and every row is gathered from the tables.
    """
    axes = coords.shape[1]
    nonzero = freqs != 0
    if not (nonzero.sum(axis=0) == 1).all():
        return None
    owner = nonzero.argmax(axis=0)
    starts = [0] + [j for j in range(1, owner.shape[0]) if owner[j] != owner[j - 1]]
    if len(starts) > 4:
        return None
    cos_parts: List[Any] = []
    sin_parts: List[Any] = []
    for j0, j1 in zip(starts, starts[1:] + [owner.shape[0]]):
        a = int(owner[j0])
        c = coords[:, a]
        whole = grid_span(c)
        if whole is None:
            return None
        lo, count = whole
        span = np.zeros((count, axes))
        span[:, a] = lo + np.arange(count)
        ct, st = np.empty((span.shape[0], j1 - j0), dtype), np.empty((span.shape[0], j1 - j0), dtype)
        native.rope_nd_cos_sin(ct, st, span, np.ascontiguousarray(freqs[:, j0:j1]))
        index = (c - lo).astype(np.int64)
        cos_parts.append((ct, index))
        sin_parts.append((st, index))
    return cos_parts, sin_parts


@_api.native(RopeNdCosSin)
def cos_sin(plan: RopeNdCosSin) -> Tuple[np.ndarray, np.ndarray]:
    cos, sin = np.empty(plan.shape, plan.dtype), np.empty(plan.shape, plan.dtype)
    heads, _, pairs = plan.freqs.shape
    rows, seq, axes = plan.coords.shape
    if cos.size == 0:
        return cos, sin
    # The tables as [rows, heads, seq, pairs] (heads of size 1 when freqs are shared): C-contiguous blocks.
    c4, s4 = cos.reshape(rows, heads, seq, pairs), sin.reshape(rows, heads, seq, pairs)
    if heads == 1:
        flat = plan.coords.reshape(rows * seq, axes)
        # A grid's axial angles from a table per run of one axis' pairs: on an AMD EPYC Zen 4 FLUX's
        # [4096, 64] took 0.48-0.96x the per-element kernel's time, [65536, 64] 0.38-0.72x; under 2^17
        # values the set-up costs more (Qwen-VL's [1024, 32]: 1.10-1.17x).
        parts = _axial_parts(flat, plan.freqs[0], plan.dtype) if cos.size >= 1 << 17 else None
        if parts is not None:
            native.lookup_parts(parts[0], c4.reshape(rows * seq, pairs))
            native.lookup_parts(parts[1], s4.reshape(rows * seq, pairs))
            return cos, sin
        native.rope_nd_cos_sin(c4.reshape(rows * seq, pairs), s4.reshape(rows * seq, pairs), flat, plan.freqs[0])
        return cos, sin
    for r in range(rows):  # per-head frequencies: one call per (row, head) block
        for h in range(heads):
            native.rope_nd_cos_sin(c4[r, h], s4[r, h], plan.coords[r], plan.freqs[h])
    return cos, sin
