"""Learned position tables in plain NumPy: the specification the native kernels are checked against.

Lookup copies table rows exactly; the add is computed in float64 and rounded
once; the gradient sums, for each position, its rows in the order they appear
in the flattened input, in the same accumulator type as the kernel (float32
for float32/float16/bfloat16, float64 for float64), so that native and
reference agree bit for bit. The ``_plan_*`` functions validate and normalise
arguments for both backends. Resizing computes the same taps for both
backends (``resample_taps``); the reference sums them with NumPy in blocks.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional, Tuple

import numpy as np

from .. import _checks

RESIZE_1D_METHODS = ("linear", "cubic")
RESIZE_2D_METHODS = ("bilinear", "bicubic")
CUBIC_A = -0.75  # PyTorch's (and OpenCV's) bicubic kernel parameter (Keys 1981 with a = -0.75)


# ---------------------------------------------------------------- validation

def integer_positions(value: Any, name: str = "positions") -> np.ndarray:
    """Integer positions of any shape and integer dtype; floats and bools are a TypeError."""
    arr = _checks.as_array(value, name)
    if arr.dtype.kind not in "iu":
        if arr.size == 0 and not isinstance(value, np.ndarray) and arr.dtype.kind == "f":
            return arr.astype(np.int64)  # an empty list: NumPy guesses float64
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
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


def flat_positions(positions: np.ndarray) -> np.ndarray:
    """Validated positions as the contiguous int64 vector the kernels take."""
    # "A": aligned too. ascontiguousarray keeps a misaligned int64 view (np.frombuffer at an
    # odd offset) as it is, and the kernels then loaded int64 from a misaligned address (UBSan).
    return np.require(positions, np.int64, ["C", "A"]).reshape(-1)


def table_array(value: Any, name: str = "table", ndim: int = 2) -> np.ndarray:
    arr = _checks.float_array(value, name)
    if arr.ndim != ndim:
        layout = "[num_positions, dim]" if ndim == 2 else "[height, width, dim]"
        raise ValueError(f"{name} must have shape {layout}, got shape {arr.shape}")
    return arr


def trailing_positions(positions: np.ndarray, lead: Tuple[int, ...], operand: str) -> None:
    """positions.shape must equal ``lead`` (the operand's shape without its last axis) or a trailing part of it."""
    m = positions.ndim
    if m > len(lead) or tuple(positions.shape) != tuple(lead[len(lead) - m:]):
        raise ValueError(
            f"positions of shape {positions.shape} must equal {operand}.shape[:-1] = {lead} or a trailing part of it"
        )


def _refuse_overlap(out: Optional[np.ndarray], table: np.ndarray) -> None:
    if out is not None and np.may_share_memory(out, table) and _checks._overlap(out, table):
        raise ValueError("out overlaps table")


class LookupPlan(NamedTuple):
    table: np.ndarray
    positions: np.ndarray  # int64, flat, in range
    shape: Tuple[int, ...]  # positions.shape + (dim,)
    out: Optional[np.ndarray]


def _plan_lookup(table: Any, positions: Any, out: Any) -> LookupPlan:
    tab = table_array(table)
    pos = integer_positions(positions)
    check_range(pos, tab.shape[0])
    shape = tuple(pos.shape) + (tab.shape[1],)
    _checks.result_size(shape, tab.dtype, "the result")
    target = _checks.output(out, shape, tab.dtype)
    _refuse_overlap(target, tab)
    return LookupPlan(tab, flat_positions(pos), shape, target)


class AddPlan(NamedTuple):
    x: np.ndarray
    table: np.ndarray
    positions: np.ndarray  # int64, flat, in range; repeats over x's leading rows
    positions_shape: Tuple[int, ...]
    out: Optional[np.ndarray]


def _plan_add(x: Any, table: Any, positions: Any, out: Any) -> AddPlan:
    xa = _checks.float_array(x, "x")
    if xa.ndim < 1:
        raise ValueError("x must have shape [..., dim], got a scalar")
    tab = table_array(table)
    if tab.dtype != xa.dtype:
        raise TypeError(f"table and x must have the same dtype, got table {tab.dtype} and x {xa.dtype}")
    if tab.shape[1] != xa.shape[-1]:
        raise ValueError(f"x has {xa.shape[-1]} features but table rows have {tab.shape[1]}")
    pos = integer_positions(positions)
    trailing_positions(pos, tuple(xa.shape[:-1]), "x")
    check_range(pos, tab.shape[0])
    target = _checks.output(out, xa.shape, xa.dtype, [(xa, "x")])
    _refuse_overlap(target, tab)
    return AddPlan(xa, tab, flat_positions(pos), tuple(pos.shape), target)


class GradPlan(NamedTuple):
    grad: np.ndarray
    positions: np.ndarray  # int64, flat, in range; repeats over grad's leading rows
    num_positions: int
    shape: Tuple[int, int]


def _plan_grad(grad: Any, positions: Any, num_positions: Any) -> GradPlan:
    ga = _checks.float_array(grad, "grad")
    if ga.ndim < 1:
        raise ValueError("grad must have shape [..., dim], got a scalar")
    n = _checks.integer(num_positions, "num_positions", minimum=0)
    pos = integer_positions(positions)
    trailing_positions(pos, tuple(ga.shape[:-1]), "grad")
    check_range(pos, n)
    shape = (n, ga.shape[-1])
    _checks.result_size(shape, ga.dtype, "the gradient")
    return GradPlan(ga, flat_positions(pos), n, shape)


def accumulator_dtype(dtype: np.dtype) -> np.dtype:
    """float64 for float64 gradients, float32 for float32, float16 and bfloat16."""
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


# ---------------------------------------------------------------- lookup, add, grad

def _finish(values: np.ndarray, out: Optional[np.ndarray]) -> np.ndarray:
    if out is None:
        return values
    out[...] = values
    return out


def embedding_lookup(table: Any, positions: Any, *, out: Any = None) -> Any:
    """Reference for :func:`posenc.embedding_lookup`."""
    plan = _plan_lookup(table, positions, out)
    rows = plan.table[plan.positions].reshape(plan.shape)
    _finish(rows, plan.out)
    return rows if out is None else out


def embedding_add(x: Any, table: Any, positions: Any, *, out: Any = None) -> Any:
    """Reference for :func:`posenc.embedding_add`."""
    plan = _plan_add(x, table, positions, out)
    rows = plan.table[plan.positions].reshape(plan.positions_shape + (plan.x.shape[-1],))
    result = _checks.round_once(plan.x.astype(np.float64) + rows.astype(np.float64), plan.x.dtype)
    _finish(result, plan.out)
    return result if out is None else out


def embedding_grad(grad: Any, positions: Any, num_positions: int) -> Any:
    """Reference for :func:`posenc.embedding_grad`: ``np.add.at`` sums rows in order of appearance."""
    plan = _plan_grad(grad, positions, num_positions)
    acc = np.zeros(plan.shape, accumulator_dtype(plan.grad.dtype))
    rows = plan.grad.reshape(int(np.prod(plan.grad.shape[:-1])), plan.shape[1]).astype(acc.dtype)
    if rows.shape[0]:
        repeats = rows.shape[0] // plan.positions.size
        np.add.at(acc, np.tile(plan.positions, repeats), rows)
    return _checks.round_once(acc, plan.grad.dtype)


# ---------------------------------------------------------------- resizing

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


def resample_taps(in_size: int, out_size: int, method: str) -> Tuple[np.ndarray, np.ndarray]:
    """Source indices and float64 weights ``[out_size, taps]`` of one resampled axis.

    Half-pixel centres, as ``torch.nn.functional.interpolate(..., align_corners=False)``
    with an output size: output i samples source ``(in/out)·(i + 0.5) - 0.5``.
    Linear clamps that coordinate at 0 and the upper neighbour at the last
    index; cubic keeps it and clamps each of its four taps into ``[0, in)``
    (border replication), exactly as PyTorch does.
    """
    src = (in_size / out_size) * (np.arange(out_size, dtype=np.float64) + 0.5) - 0.5
    if method in ("linear", "bilinear"):  # "cubic" and "bicubic" take the other branch
        src = np.maximum(src, 0.0)
        i0 = np.minimum(np.floor(src).astype(np.int64), in_size - 1)
        lam = src - i0
        index = np.stack([i0, np.minimum(i0 + 1, in_size - 1)], axis=-1)
        return index, np.stack([1.0 - lam, lam], axis=-1)
    i0 = np.floor(src).astype(np.int64)
    index = np.clip(i0[:, None] + np.arange(-1, 3), 0, in_size - 1)
    return index, _cubic_weights(src - i0)


_BLOCK_BYTES = 1 << 22  # float64 temporaries per block: cache-sized, never table-sized


def _resample_axis(values: np.ndarray, axis: int, out_size: int, method: str, dtype: Any = np.float64) -> np.ndarray:
    """Resample ``values`` (any float dtype) along ``axis`` to ``out_size``; computed in float64, stored as ``dtype``.

    Written as ``v_a + Σ_k w_k·(v_k − v_a)`` around the tap ``a`` at floor(src)
    (the weights sum to 1): the same value as ``Σ_k w_k·v_k`` to float64
    rounding, but a constant comes out exactly and a sample that lands on a
    source row (weight 1 there, 0 elsewhere) is copied exactly. Output indices
    are processed in blocks so that the float64 temporaries stay small: a
    large table is neither copied to float64 whole nor paged in several times.
    """
    index, weights = resample_taps(values.shape[axis], out_size, method)
    anchor = 0 if index.shape[1] == 2 else 1
    result = np.empty(values.shape[:axis] + (out_size,) + values.shape[axis + 1:], dtype)
    per_index = 8 * (result.size // out_size if out_size else 0)
    block = max(1, _BLOCK_BYTES // max(per_index, 1))
    for lo in range(0, out_size, block):
        hi = min(lo + block, out_size)
        idx, w = index[lo:hi], weights[lo:hi]
        shape = [1] * values.ndim
        shape[axis] = hi - lo
        base = np.take(values, idx[:, anchor], axis=axis).astype(np.float64)
        delta = np.zeros_like(base)
        for k in range(index.shape[1]):
            if k != anchor:
                delta += w[:, k].reshape(shape) * (np.take(values, idx[:, k], axis=axis).astype(np.float64) - base)
        result[(slice(None),) * axis + (slice(lo, hi),)] = _checks.round_once(base + delta, result.dtype)
    return result


def _new_size(value: Any, name: str) -> int:
    return _checks.integer(value, name, minimum=1)


def _plan_resize_1d(table: Any, new_length: Any, method: Any) -> Tuple[np.ndarray, int, str]:
    tab = table_array(table)
    n = _new_size(new_length, "new_length")
    method = _checks.choice(method, "method", RESIZE_1D_METHODS)
    if tab.shape[0] == 0:
        raise ValueError("table has no rows to resample")
    _checks.result_size((n, tab.shape[1]), tab.dtype, "the resized table")
    return tab, n, method


def _plan_resize_2d(grid: Any, new_height: Any, new_width: Any, method: Any) -> Tuple[np.ndarray, int, int, str]:
    g = table_array(grid, "grid", ndim=3)
    h = _new_size(new_height, "new_height")
    w = _new_size(new_width, "new_width")
    method = _checks.choice(method, "method", RESIZE_2D_METHODS)
    if g.shape[0] == 0 or g.shape[1] == 0:
        raise ValueError(f"grid of shape {g.shape} has no cells to resample")
    _checks.result_size((h, w, g.shape[2]), g.dtype, "the resized grid")
    return g, h, w, method


def resize_table(table: Any, new_length: int, method: str = "linear") -> np.ndarray:
    """Reference for :func:`posenc.resize_table`."""
    tab, n, method = _plan_resize_1d(table, new_length, method)
    if n == tab.shape[0]:
        return tab.copy()
    return _resample_axis(tab, 0, n, method, tab.dtype)


def resize_table_2d(grid: Any, new_height: int, new_width: int, method: str = "bicubic") -> np.ndarray:
    """Reference for :func:`posenc.resize_table_2d`."""
    g, h, w, method = _plan_resize_2d(grid, new_height, new_width, method)
    if h == g.shape[0] and w == g.shape[1]:
        return g.copy()
    if h == g.shape[0]:
        return _resample_axis(g, 1, w, method, g.dtype)
    # Height first into float64 (rounded once, at the end), then width.
    rows = _resample_axis(g, 0, h, method)
    return _checks.round_once(rows, g.dtype) if w == g.shape[1] else _resample_axis(rows, 1, w, method, g.dtype)
