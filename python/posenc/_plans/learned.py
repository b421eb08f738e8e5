"""Plans of the learned-table family, and its shared maths: positions, accumulator, resampling taps.

A lookup, add or gradient plan carries its positions as one contiguous,
aligned int64 vector, every value checked to lie in the table; the
gradient's accumulator type is fixed here for both executors. A resize plan
carries, per resampled axis, the source indices and float64 weights
(:func:`resample_taps`), so that the native and NumPy executors interpolate
with the very same numbers.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple, Optional, Tuple

import numpy as np

from .. import _checks
from .._checks import Out

RESIZE_1D_METHODS = ("linear", "cubic")
RESIZE_2D_METHODS = ("bilinear", "bicubic")
CUBIC_A = -0.75  # PyTorch's (and OpenCV's) bicubic kernel parameter (Keys 1981 with a = -0.75)


class EmbeddingLookup(NamedTuple):
    """``embedding_lookup``: ``table[positions]``."""

    table: np.ndarray  # [num_positions, dim], any strides
    positions: np.ndarray  # int64 [k], contiguous and aligned, each in [0, num_positions)
    shape: Tuple[int, ...]  # the result: the caller's positions.shape + (dim,)
    out: Optional[Out]


class EmbeddingAdd(NamedTuple):
    """``embedding_add``: ``x + table[positions]``, the positions repeated over x's leading rows."""

    x: np.ndarray  # [..., dim]
    table: np.ndarray  # [num_positions, dim], x's dtype
    positions: np.ndarray  # int64 [k], as in EmbeddingLookup; k divides x's row count
    positions_shape: Tuple[int, ...]  # the caller's positions.shape: a trailing part of x.shape[:-1]
    out: Optional[Out]


class EmbeddingGrad(NamedTuple):
    """``embedding_grad``: grad's rows scatter-added into a ``[num_positions, dim]`` table."""

    grad: np.ndarray  # [..., dim]
    positions: np.ndarray  # int64 [k], as in EmbeddingLookup; k divides grad's row count
    shape: Tuple[int, int]  # (num_positions, dim)


class ResampleAxis(NamedTuple):
    """One axis of a resize: ``out[..., i, ...] = Σ_t weights[i, t]·values[..., sources[i, t], ...]``."""

    axis: int
    sources: np.ndarray  # int64 [out_size, taps], C-contiguous, in [0, in_size)
    weights: np.ndarray  # float64 [out_size, taps], C-contiguous, each row summing to 1
    dtype: np.dtype  # what this step stores: float64 between axes, the table's dtype at the last


class TableResize(NamedTuple):
    """``resize_table`` / ``resize_table_2d``: the axes whose size changes, resampled one after the other."""

    table: np.ndarray  # [length, dim] or [height, width, dim]
    steps: Tuple[ResampleAxis, ...]  # empty: every size is unchanged (an exact copy)


# ---------------------------------------------------------------- argument parsing

def table_array(value: Any, name: str = "table", ndim: int = 2) -> np.ndarray:
    """A floating ``[num_positions, dim]`` table (``ndim=2``) or ``[height, width, dim]`` grid (``ndim=3``)."""
    arr = _checks.float_array(value, name)
    if arr.ndim != ndim:
        layout = "[num_positions, dim]" if ndim == 2 else "[height, width, dim]"
        raise ValueError(f"{name} must have shape {layout}, got shape {arr.shape}")
    return arr


def check_range(positions: np.ndarray, num_positions: int, name: str = "positions") -> None:
    """IndexError naming the first position (in C order) outside ``[0, num_positions)``.

    Negative positions are errors, never counted from the end.
    """
    if positions.size == 0:
        return
    if positions.min() >= 0 and positions.max() < num_positions:
        return
    first = int(np.flatnonzero((positions < 0) | (positions >= num_positions))[0])
    index = np.unravel_index(first, positions.shape)
    where = f"{name}[{', '.join(str(int(i)) for i in index)}]" if positions.ndim else name
    raise IndexError(f"{where} = {int(positions.reshape(-1)[first])} is outside the table's range [0, {num_positions})")


def trailing_positions(positions: np.ndarray, lead: Tuple[int, ...], operand: str) -> None:
    """positions.shape must equal ``lead`` (the operand's shape without its last axis) or a trailing part of it."""
    m = positions.ndim
    if m > len(lead) or tuple(positions.shape) != tuple(lead[len(lead) - m:]):
        raise ValueError(
            f"positions of shape {positions.shape} must equal {operand}.shape[:-1] = {lead} or a trailing part of it"
        )


def flat_positions(positions: np.ndarray) -> np.ndarray:
    """Validated positions as the contiguous int64 vector the kernels take."""
    flags = positions.flags
    if positions.dtype == np.int64 and flags.c_contiguous and flags.aligned:  # a list's array, arange...
        return positions.reshape(-1)
    # "A": aligned too. ascontiguousarray keeps a misaligned int64 view (np.frombuffer at an
    # odd offset) as it is, and the kernels then loaded int64 from a misaligned address (UBSan).
    return np.require(positions, np.int64, ["C", "A"]).reshape(-1)


def refuse_table_overlap(out: Optional[Out], table: np.ndarray) -> None:
    """``out`` may not share memory with the table it reads (not even as the same array)."""
    if out is not None and np.may_share_memory(out.array, table):
        _checks.disjoint(out.array, "out", table, "table")


def accumulator_dtype(dtype: np.dtype) -> np.dtype:
    """What embedding_grad sums in: float64 for float64 gradients, float32 for float32, float16 and bfloat16."""
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


# ---------------------------------------------------------------- resampling

def _cubic_weights(t: np.ndarray) -> np.ndarray:
    """The four cubic-convolution weights for taps at offsets -1, 0, 1, 2 from floor(src).

    Keys (1981), "Cubic convolution interpolation for digital image
    processing", with a = -0.75 as in PyTorch's ``upsample_bicubic2d``
    (``cubic_convolution1`` for |s| <= 1, ``cubic_convolution2`` for 1 < |s| < 2).
    """
    a = CUBIC_A

    def near(s: np.ndarray) -> np.ndarray:  # |s| <= 1
        w: np.ndarray = ((a + 2) * s - (a + 3)) * s * s + 1
        return w

    def far(s: np.ndarray) -> np.ndarray:  # 1 < |s| < 2
        w: np.ndarray = ((a * s - 5 * a) * s + 8 * a) * s - 4 * a
        return w

    return np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], axis=-1)


_CACHED_TAPS = 4096  # output sizes up to this have their taps cached (at most 256 KiB each)


def resample_taps(in_size: int, out_size: int, method: str) -> Tuple[np.ndarray, np.ndarray]:
    """Source indices (int64) and float64 weights, both ``[out_size, taps]``, of one resampled axis.

    Half-pixel centres, as ``torch.nn.functional.interpolate(..., align_corners=False)``
    with an output size: output i samples source ``(in/out)·(i + 0.5) - 0.5``.
    ``"linear"`` (2 taps) clamps that coordinate at 0 and the upper neighbour
    at the last index; ``"cubic"`` (4 taps) keeps it and clamps each of its
    taps into ``[0, in)`` (border replication), exactly as PyTorch does.
    Small axes' taps are cached and read-only (a model resizes the same grid
    again and again; computing them costs tens of microseconds of NumPy calls).
    """
    if out_size <= _CACHED_TAPS:
        return _cached_taps(in_size, out_size, method)
    return _taps(in_size, out_size, method)


@functools.lru_cache(maxsize=64)
def _cached_taps(in_size: int, out_size: int, method: str) -> Tuple[np.ndarray, np.ndarray]:
    sources, weights = _taps(in_size, out_size, method)
    sources.flags.writeable = weights.flags.writeable = False
    return sources, weights


def _taps(in_size: int, out_size: int, method: str) -> Tuple[np.ndarray, np.ndarray]:
    src = (in_size / out_size) * (np.arange(out_size, dtype=np.float64) + 0.5) - 0.5
    if method == "linear":
        src = np.maximum(src, 0.0)
        i0 = np.minimum(np.floor(src).astype(np.int64), in_size - 1)
        lam = src - i0
        index = np.stack([i0, np.minimum(i0 + 1, in_size - 1)], axis=-1)
        return index, np.stack([1.0 - lam, lam], axis=-1)
    i0 = np.floor(src).astype(np.int64)
    index = np.clip(i0[:, None] + np.arange(-1, 3), 0, in_size - 1)
    return np.ascontiguousarray(index), _cubic_weights(src - i0)


def resize_plan(table: np.ndarray, *, sizes: Tuple[int, ...], method: str) -> TableResize:
    """The plan resampling ``table``'s leading axes to ``sizes`` (validated) with ``"linear"`` or ``"cubic"`` taps.

    Axes whose size does not change are skipped; the steps between axes store
    float64, so the result is rounded once, at the last.
    """
    if sizes == table.shape[:len(sizes)]:
        return TableResize(table, ())
    axes = [axis for axis, size in enumerate(sizes) if size != table.shape[axis]]
    steps = []
    for k, axis in enumerate(axes):
        sources, weights = resample_taps(table.shape[axis], sizes[axis], method)
        dtype = table.dtype if k == len(axes) - 1 else np.dtype(np.float64)
        steps.append(ResampleAxis(axis=axis, sources=sources, weights=weights, dtype=dtype))
    return TableResize(table=table, steps=tuple(steps))


def run_steps(plan: TableResize, resample: Callable[[np.ndarray, ResampleAxis], np.ndarray]) -> np.ndarray:
    """The resized table: an executor's ``resample(values, step)`` over the plan's steps in order.

    With no step (every size unchanged) the result is an exact copy, never the table itself.
    """
    values = plan.table
    for step in plan.steps:
        values = resample(values, step)
    return values if plan.steps else values.copy()
