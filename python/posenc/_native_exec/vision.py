"""Native executors of the vision plans (kernels: cpp/src/sinusoidal.cpp, relative.cpp, vision.cpp, learned.cpp)."""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

import numpy as np

from .. import _api
from .._backend import native
from .._plans.vision import DetrSine, SinusoidalGridRows, SinusoidalRows, SwinBias, detr_encode, detr_positions, encode
from ._rounded import rounded
from ._memory import aligned, write
from .sinusoidal import grid_parts, grid_span


def _as_rows(dest: np.ndarray, rows: int, cols: int, fill: Callable[[np.ndarray], None]) -> None:
    """Run ``fill`` on ``dest`` seen as [rows, cols]; through a contiguous twin when no such view exists."""
    view = dest.view()
    try:
        view.shape = (rows, cols)
    except AttributeError:  # the leading axes of a strided out do not merge without a copy
        twin = np.empty((rows, cols), dest.dtype)
        fill(twin)
        dest[...] = twin.reshape(dest.shape)
        return
    fill(view)


def _span_table(coords: np.ndarray, freqs: np.ndarray, plan: SinusoidalRows) -> Optional[Tuple[np.ndarray, np.ndarray]]:
    """A grid axis' block as lookup_parts takes it: the sinusoidal rows of every whole number from the
    coordinates' least to their greatest, and each row's entry; None unless the coordinates are whole
    numbers spanning at most a quarter as many values as there are rows."""
    span = grid_span(coords)
    if span is None:
        return None
    lo, count = span
    table = np.empty((count, 2 * freqs.shape[0]), plan.dtype)
    native.sinusoidal_table(table, None, lo, freqs, plan.interleaved)
    return table, (coords - lo).astype(np.int64)


@_api.native(SinusoidalRows)
def rows(plan: SinusoidalRows) -> Any:
    n, dim = plan.coords.shape[0], plan.shape[-1]
    # A grid's coordinates (patch indices) take few values per axis: each axis' rows then come from a
    # table of those values, and every row is written whole (lookup_parts) instead of a pass per axis
    # evaluating every row's sines. Not for small results, where the tables' set-up costs more than
    # it saves (an 8 x 8 grid of 128 features took 1.3x the time).
    parts: List[Tuple[np.ndarray, np.ndarray]] = []
    for a, w in enumerate(plan.freqs if n * dim >= 1 << 14 and len(plan.freqs) <= 4 else ()):
        part = _span_table(plan.coords[:, a], w, plan)
        if part is None:
            parts = []
            break
        parts.append(part)

    def fill(dest: np.ndarray) -> None:
        if parts:
            native.lookup_parts(parts, dest)
            return
        first = 0
        for a, w in enumerate(plan.freqs):
            last = first + 2 * w.shape[0]
            # Axis a's column block: the table kernel walks the row stride of the whole row.
            native.sinusoidal_table(dest[:, first:last], np.ascontiguousarray(plan.coords[:, a]), 0.0, w,
                                    plan.interleaved)
            first = last

    def run(dest: np.ndarray) -> None:
        if n and dim:
            _as_rows(dest, n, dim, fill)

    return _api.returned(plan.out, write(plan.out, plan.shape, plan.dtype, run))


@_api.native(SinusoidalGridRows)
def grid_rows(plan: SinusoidalGridRows) -> Any:
    # Each block's rows, one per index of its axis, rounded once (a square grid's two blocks share
    # theirs: NumPy's sines are most of the call); then every cell's row written whole
    # (lookup_parts), as the 2-D/3-D grids are.
    tables: List[Tuple[int, np.ndarray]] = []
    for block in plan.blocks:
        same = [t for b, (_, t) in zip(plan.blocks, tables)
                if b.freqs is block.freqs and np.array_equal(b.positions, block.positions)]
        table = same[0] if same else rounded(encode(np.multiply.outer(block.positions, block.freqs),
                                                     plan.interleaved), plan.dtype)
        tables.append((block.axis, table))

    def fill(dest: np.ndarray) -> None:
        dest[: plan.zero_rows] = 0
        cells = dest[plan.zero_rows :]
        if cells.size:
            native.lookup_parts(grid_parts(plan.grid, tables), cells)

    return _api.returned(plan.out, write(plan.out, plan.shape, plan.dtype, fill))


@_api.native(SwinBias)
def swin_bias(plan: SwinBias) -> Any:
    wh, ww = plan.window
    table = aligned(plan.table)  # the binding builds the lookup rows from it (cpp/bindings/vision.cpp)
    x = None if plan.scores is None else aligned(plan.scores)
    dest = write(plan.out, plan.shape, plan.dtype, lambda d: native.swin_bias(x, d, table, wh, ww))
    return _api.returned(plan.out, dest)


def _detr_block(counts: Any, n: int, along: int, plan: DetrSine) -> Tuple[np.ndarray, np.ndarray]:
    """The distinct rows of one DETR block and the row of each pixel: (table [K, F] in the dtype, int64 index).

    ``counts``: int64 [batch, h, w] cumulative counts along axis ``along`` (1: y,
    2: x), or None for no mask (then pixel k along the axis has count k + 1 and
    the index repeats with a period: the lookup kernel reuses it). A position
    is a function of (count, the axis' last count), both small integers, so
    the sines are evaluated once per pair that occurs, not once per pixel.
    """
    batch, h, w, _ = plan.shape
    if counts is None:
        values = detr_positions(np.arange(1, n + 1), np.full(n, n), plan.normalize, plan.scale)
        index = np.arange(n, dtype=np.int64)
        if along == 1:  # y: pixel (b, i, j) reads row i: period h·w
            index = np.repeat(index, w)
    elif not plan.normalize:
        values = detr_positions(np.arange(n + 1), np.zeros(1), False, plan.scale)
        index = counts.reshape(-1)
    else:
        # Rows for the counts 0..L of each distinct last count L (a count never
        # passes its axis' last): a padded column or row, L = 0, takes one row,
        # not n + 1 whose huge angles (count / 1e-6) cost libm's slow reduction.
        last = counts[:, -1:, :] if along == 1 else counts[:, :, -1:]
        lasts, which = np.unique(last, return_inverse=True)
        sizes = lasts + 1
        starts = np.cumsum(sizes) - sizes
        row_counts = np.arange(int(sizes.sum())) - np.repeat(starts, sizes)
        values = detr_positions(row_counts, np.repeat(lasts, sizes), True, plan.scale)
        index = (starts[which.reshape(last.shape)] + counts).reshape(-1)
    table = rounded(detr_encode(values, plan.dim_t), plan.dtype)
    return table, np.ascontiguousarray(index, dtype=np.int64)


@_api.native(DetrSine)
def detr_sine(plan: DetrSine) -> Any:
    batch, h, w, _ = plan.shape

    def fill(dest: np.ndarray) -> None:
        if dest.size == 0:
            return
        y_table, y_index = _detr_block(plan.y_count, h, 1, plan)
        x_table, x_index = _detr_block(plan.x_count, w, 2, plan)
        native.lookup_parts([(y_table, y_index), (x_table, x_index)], dest)

    return _api.returned(plan.out, write(plan.out, plan.shape, plan.dtype, fill))
