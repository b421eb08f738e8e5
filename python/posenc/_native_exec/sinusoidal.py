"""Native executors of the sinusoidal plans (kernels: cpp/src/sinusoidal.cpp)."""

from __future__ import annotations

import math
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from .. import _api
from .._backend import native
from .._plans.sinusoidal import ConcatPositional, SinusoidalAdd, SinusoidalGrid, SinusoidalTable, concat_into
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


def grid_span(values: np.ndarray) -> Optional[Tuple[float, int]]:
    """(least value, span) when ``values`` are whole numbers spanning at most a quarter as many values
    as there are of them (a grid's coordinates along one axis), else None."""
    lo, hi = values.min(), values.max()
    if hi - lo >= values.shape[0] // 4 or not np.array_equal(values, np.floor(values)):
        return None
    return float(lo), int(hi - lo) + 1


def grid_parts(grid: Tuple[int, ...], tables: Sequence[Tuple[int, np.ndarray]]) -> List[Tuple[np.ndarray, np.ndarray]]:
    """lookup_parts' parts for the cells of ``grid`` in C order: for each (axis, table) the table (a row
    per index of the axis) and the axis index of every cell, ``repeat(arange(n), cells after it)``."""
    return [(table, np.repeat(np.arange(grid[axis], dtype=np.int64), math.prod(grid[axis + 1:])))
            for axis, table in tables]


@_api.native(SinusoidalGrid)
def grid(plan: SinusoidalGrid) -> Any:
    # Each axis' block of channels from a table of its own [size, channels] (the kernel's rows do not
    # depend on where they are written), then every cell's row written whole (lookup_parts). The
    # blocks written one after the other, each a pass over the cells, took 1.0-3.6x the time on a
    # Zen 4 (out=, four formats, 1 and 2 threads), 0.95x on float64 [32, 32, 1024] at 2 threads.
    tables = []
    for axis, size in enumerate(plan.shape):
        width = min(plan.channels, plan.dim - axis * plan.channels)
        if width <= 0:
            break
        table = np.empty((size, plan.channels), plan.dtype)
        native.sinusoidal_table(table, None, 0.0, plan.inv_freq, True)
        tables.append((axis, table[:, :width]))

    def fill(dest: np.ndarray) -> None:
        if dest.size:
            native.lookup_parts(grid_parts(plan.shape, tables), dest)

    dest = write(plan.out, plan.shape + (plan.dim,), plan.dtype, fill)
    return _api.returned(plan.out, dest)


def _repeating_rows(a: np.ndarray, lead: Tuple[int, ...]) -> Optional[np.ndarray]:
    """``a`` [..., cols] as a 2-D view [rows, cols] whose rows repeat, in C order, over the rows of the
    leading shape ``lead`` it broadcasts to; None when they do not (an axis of 1 broadcast between
    others) or the leading axes do not merge into one."""
    rows = a.shape[:-1]
    while rows and rows[0] == 1:
        rows = rows[1:]
    if lead[len(lead) - len(rows):] != rows:
        return None
    shape = (math.prod(rows), a.shape[-1])
    if a.flags.c_contiguous:
        return a.reshape(shape)
    view = a.view()
    try:
        view.shape = shape
    except AttributeError:  # leading axes whose strides do not merge
        return None
    return view


@_api.native(ConcatPositional)
def concat(plan: ConcatPositional) -> Any:
    """x's rows and pe's side by side through the learned family's row gather (lookup_parts)."""
    lead = plan.shape[:-1]
    x, pe = aligned(plan.x), aligned(plan.pe)
    copied = x.dtype == pe.dtype == plan.dtype and plan.dtype.itemsize in (1, 2, 4, 8)
    xr = _repeating_rows(x, lead) if copied else None
    pr = _repeating_rows(pe, lead) if copied else None
    if xr is None or pr is None:  # a conversion, or another broadcast: NumPy's assignment
        return _api.returned(plan.out, concat_into(_api.target(plan.out, plan.shape, plan.dtype), x, pe))
    parts = [(r, np.arange(r.shape[0], dtype=np.int64)) for r in (xr, pr)]

    def fill(dest: np.ndarray) -> None:
        native.lookup_parts(parts, dest)

    return _api.returned(plan.out, write(plan.out, plan.shape, plan.dtype, fill))
