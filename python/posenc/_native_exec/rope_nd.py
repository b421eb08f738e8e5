"""Native executors of the multi-axis rotary plans (kernel: cpp/src/rope.cpp, its coords·freqs angle source).

One kernel call: with shared frequencies each (batch, token)'s cos/sin are
computed once and serve every head; per-head frequencies (which share
nothing between heads) get a table per (token block, head) in the same pass.
"""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from .. import _api
from .._backend import native
from .._plans.rope_nd import RopeNdCosSin, RopeNdRotation
from ._memory import aligned, write


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
        native.rope_nd_cos_sin(c4.reshape(rows * seq, pairs), s4.reshape(rows * seq, pairs),
                               plan.coords.reshape(rows * seq, axes), plan.freqs[0])
        return cos, sin
    for r in range(rows):  # per-head frequencies: one call per (row, head) block
        for h in range(heads):
            native.rope_nd_cos_sin(c4[r, h], s4[r, h], plan.coords[r], plan.freqs[h])
    return cos, sin
