"""Native executors of the sinusoidal plans (kernels: cpp/src/sinusoidal.cpp)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _api
from .._backend import native
from .._plans.sinusoidal import SinusoidalAdd, SinusoidalGrid, SinusoidalTable
from ._memory import aligned, write


@_api.native(SinusoidalTable)
def table(plan: SinusoidalTable) -> Any:
    shape = (plan.n, 2 * plan.inv_freq.shape[0])
    dest = write(plan.out, shape, plan.dtype,
                 lambda d: native.sinusoidal_table(d, plan.positions, 0.0, plan.inv_freq, plan.interleaved))
    return _api.returned(plan.out, dest)


@_api.native(SinusoidalAdd)
def add(plan: SinusoidalAdd) -> Any:
    x, positions, start, inv_freq, interleaved, scale, out = plan
    if out is not None and out.array is x and x.flags.aligned:  # in place (a decode step): nothing to arrange
        native.add_sinusoidal(x, x, positions, start, inv_freq, interleaved, scale)
        return out.given
    x = aligned(x)
    dest = write(out, x.shape, x.dtype,
                 lambda d: native.add_sinusoidal(x, d, positions, start, inv_freq, interleaved, scale))
    return _api.returned(out, dest)


@_api.native(SinusoidalGrid)
def grid(plan: SinusoidalGrid) -> Any:
    def fill(dest: np.ndarray) -> None:
        axes = len(plan.shape)
        for axis in range(axes):
            first = axis * plan.channels
            last = min(first + plan.channels, plan.dim)
            if first >= last:
                break
            # The axis' channels, as [other axes..., axis, channels]: the
            # kernel repeats each row over the leading (batch) axes.
            view = np.moveaxis(dest[..., first:last], axis, axes - 1)
            native.sinusoidal_table(view, None, 0.0, plan.inv_freq, True)

    dest = write(plan.out, plan.shape + (plan.dim,), plan.dtype, fill)
    return _api.returned(plan.out, dest)
