"""Sinusoidal encodings in plain NumPy: the specification the native kernels are checked against.

Everything is computed in float64 and rounded once to the result dtype. The
``_plan_*`` functions validate and normalise arguments; the native backend
uses the same ones, so both backends accept and refuse exactly the same input.
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple, Optional, Tuple

import numpy as np

from .. import _checks

FREQ_RULES = ("vaswani", "t2t")


def sinusoidal_frequencies(dim: int, base: float = 10000.0, freq_rule: str = "vaswani") -> np.ndarray:
    """The ``dim // 2`` angular frequencies ω_i of a sinusoidal encoding, float64.

    ``"vaswani"``: ω_i = base^(-2i/dim) (Vaswani et al. 2017, the PyTorch
    tutorial). ``"t2t"``: ω_i = exp(-i·ln(base)/(dim/2 - 1)) (tensor2tensor's
    ``get_timing_signal_1d`` and fairseq's ``SinusoidalPositionalEmbedding``),
    whose last frequency is exactly 1/base; it needs dim >= 4.

    Examples
    --------
    >>> import posenc
    >>> [float(w) for w in posenc.sinusoidal_frequencies(8)]
    [1.0, 0.1, 0.01, 0.001]
    """
    dim = _checks.even_dim(dim)
    rule = _checks.choice(freq_rule, "freq_rule", FREQ_RULES)
    return _frequencies(dim, _checks.base(base), rule).copy()


@functools.lru_cache(maxsize=64)
def _frequencies(dim: int, base: float, freq_rule: str) -> np.ndarray:
    """sinusoidal_frequencies on validated arguments; cached, read-only (calls share it)."""
    half = dim // 2
    i = np.arange(half, dtype=np.float64)
    if freq_rule == "vaswani":
        w = base ** (-2.0 * i / dim)
    else:
        if half < 2:
            raise ValueError(f"freq_rule='t2t' needs dim >= 4 (it divides by dim/2 - 1), got dim={dim}")
        w = np.exp(-i * (math.log(base) / (half - 1)))
    w.flags.writeable = False
    return w


def axis_frequencies(dim: int, axes: int, base: float) -> Tuple[np.ndarray, int]:
    """Per-axis frequencies and channel count of the 2-D/3-D layouts.

    As in the ``positional-encodings`` package (PositionalEncoding2D/3D): each
    axis gets c = 2·ceil(dim / (2·axes)) channels of interleaved sin/cos with
    ω_i = base^(-2i/c).
    """
    dim = _checks.integer(dim, "dim", minimum=1)
    base = _checks.base(base)
    channels = 2 * math.ceil(dim / (2 * axes))
    return base ** (-np.arange(0, channels, 2, dtype=np.float64) / channels), channels


def _encode(angles: np.ndarray, interleaved: bool) -> np.ndarray:
    """[..., half] angles → [..., 2·half] rows of sines and cosines."""
    s, c = np.sin(angles), np.cos(angles)
    if interleaved:
        return np.stack([s, c], axis=-1).reshape(*angles.shape[:-1], 2 * angles.shape[-1])
    return np.concatenate([s, c], axis=-1)


def _finish(values: np.ndarray, dtype: np.dtype, out: Optional[np.ndarray], result: Any) -> Any:
    """Round float64 ``values`` once to ``dtype``, into ``out`` when given."""
    if out is None:
        return _checks.round_once(values, dtype)
    out[...] = _checks.round_once(values, dtype)
    return result


class TablePlan(NamedTuple):
    positions: Optional[np.ndarray]  # float64 [n], or None for arange(n)
    n: int
    inv_freq: np.ndarray
    dtype: np.dtype
    out: Optional[np.ndarray]


def _plan_table(positions: Any, dim: Any, base: Any, interleaved: Any, freq_rule: Any, dtype: Any, out: Any) -> TablePlan:
    if not isinstance(interleaved, (bool, np.bool_)):
        raise TypeError(f"interleaved must be a bool, got {type(interleaved).__name__}")
    dim = _checks.even_dim(dim)
    pos, n = _checks.positions(positions)
    dt = _checks.float_dtype(dtype)
    shape = (n, dim)
    _checks.result_size(shape, dt, "the table")
    inv_freq = _frequencies(dim, _checks.base(base), _checks.choice(freq_rule, "freq_rule", FREQ_RULES))
    return TablePlan(pos, n, inv_freq, dt, _checks.output(out, shape, dt))


def sinusoidal(
    positions: Any,
    dim: int,
    *,
    base: float = 10000.0,
    interleaved: bool = True,
    freq_rule: str = "vaswani",
    dtype: Any = np.float32,
    out: Any = None,
) -> Any:
    """Reference for :func:`posenc.sinusoidal`."""
    plan = _plan_table(positions, dim, base, interleaved, freq_rule, dtype, out)
    pos = np.arange(plan.n, dtype=np.float64) if plan.positions is None else plan.positions
    table = _encode(np.multiply.outer(pos, plan.inv_freq), bool(interleaved))
    return _finish(table, plan.dtype, plan.out, out)


class AddPlan(NamedTuple):
    x: np.ndarray
    positions: Optional[np.ndarray]
    start: float
    inv_freq: np.ndarray
    scale: float
    out: Optional[np.ndarray]


def _plan_add(x: Any, offset: Any, positions: Any, base: Any, interleaved: Any, scale: Any, out: Any) -> AddPlan:
    if not isinstance(interleaved, (bool, np.bool_)):
        raise TypeError(f"interleaved must be a bool, got {type(interleaved).__name__}")
    xa = _checks.float_array(x, "x")
    if xa.ndim < 2:
        raise ValueError(f"x must have shape [..., seq, dim], got shape {xa.shape}")
    seq, dim = xa.shape[-2], xa.shape[-1]
    inv_freq = _frequencies(_checks.even_dim(dim, "x.shape[-1]"), _checks.base(base), "vaswani")
    offset = _checks.offset(offset, seq)
    pos = None
    if positions is not None:
        if offset != 0:
            raise ValueError("give either positions or offset, not both")
        pos, n = _checks.positions(positions)
        if pos is None:
            pos = np.arange(n, dtype=np.float64)
        if n != seq:
            raise ValueError(f"positions has {n} entries but x has seq length {seq}")
    scale = _checks.real(scale, "scale")
    return AddPlan(xa, pos, float(offset), inv_freq, scale, _checks.output(out, xa.shape, xa.dtype, [(xa, "x")]))


def add_sinusoidal(
    x: Any,
    *,
    offset: int = 0,
    positions: Any = None,
    base: float = 10000.0,
    interleaved: bool = True,
    scale: float = 1.0,
    out: Any = None,
) -> Any:
    """Reference for :func:`posenc.add_sinusoidal`."""
    plan = _plan_add(x, offset, positions, base, interleaved, scale, out)
    seq = plan.x.shape[-2]
    pos = plan.start + np.arange(seq, dtype=np.float64) if plan.positions is None else plan.positions
    pe = _encode(np.multiply.outer(pos, plan.inv_freq), bool(interleaved))
    return _finish(plan.scale * plan.x.astype(np.float64) + pe, plan.x.dtype, plan.out, out)


class GridPlan(NamedTuple):
    shape: Tuple[int, ...]  # the grid, without the channel axis
    dim: int
    inv_freq: np.ndarray
    channels: int  # per axis, before the cut to dim
    dtype: np.dtype
    out: Optional[np.ndarray]


def _plan_grid(sizes: Tuple[Any, ...], dim: Any, base: Any, dtype: Any, out: Any) -> GridPlan:
    names = ("depth", "height", "width")[-len(sizes):]
    grid = tuple(_checks.integer(s, n, minimum=0) for s, n in zip(sizes, names))
    dim = _checks.integer(dim, "dim", minimum=1)
    dt = _checks.float_dtype(dtype)
    shape = grid + (dim,)
    _checks.result_size(shape, dt, "the encoding")
    inv_freq, channels = axis_frequencies(dim, len(sizes), base)
    return GridPlan(grid, dim, inv_freq, channels, dt, _checks.output(out, shape, dt))


def _grid(plan: GridPlan, result: Any) -> Any:
    axes = len(plan.shape)
    parts = []
    for axis, size in enumerate(plan.shape):
        emb = _encode(np.multiply.outer(np.arange(size, dtype=np.float64), plan.inv_freq), True)
        index = [np.newaxis] * axes + [slice(None)]
        index[axis] = slice(None)
        parts.append(np.broadcast_to(emb[tuple(index)], plan.shape + (plan.channels,)))
    return _finish(np.concatenate(parts, axis=-1)[..., : plan.dim], plan.dtype, plan.out, result)


def sinusoidal_2d(height: int, width: int, dim: int, *, base: float = 10000.0, dtype: Any = np.float32, out: Any = None) -> Any:
    """Reference for :func:`posenc.sinusoidal_2d`."""
    return _grid(_plan_grid((height, width), dim, base, dtype, out), out)


def sinusoidal_3d(
    depth: int, height: int, width: int, dim: int, *, base: float = 10000.0, dtype: Any = np.float32, out: Any = None
) -> Any:
    """Reference for :func:`posenc.sinusoidal_3d`."""
    return _grid(_plan_grid((depth, height, width), dim, base, dtype, out), out)


def concat_positional(x: Any, pe: Any, *, out: Any = None) -> Any:
    """``[..., seq, dim]`` and ``[..., seq, pe_dim]`` (broadcast) → ``[..., seq, dim + pe_dim]``.

    Shared by both backends: a pure copy that NumPy already does at memory speed.
    """
    xa = _checks.float_array(x, "x")
    pa = _checks.float_array(pe, "pe")
    if xa.ndim < 2 or pa.ndim < 2:
        raise ValueError(f"x and pe must have shape [..., seq, features], got {xa.shape} and {pa.shape}")
    if xa.shape[-2] != pa.shape[-2]:
        raise ValueError(f"x has seq length {xa.shape[-2]} but pe has {pa.shape[-2]}")
    try:
        lead = np.broadcast_shapes(xa.shape[:-1], pa.shape[:-1])
    except ValueError:
        raise ValueError(f"pe of shape {pa.shape} does not broadcast against x of shape {xa.shape}") from None
    dt = np.result_type(xa.dtype, pa.dtype)
    shape = lead + (xa.shape[-1] + pa.shape[-1],)
    _checks.result_size(shape, dt, "the result")
    target = _checks.output(out, shape, dt, [(xa, "x"), (pa, "pe")])
    result = np.empty(shape, dt) if target is None else target
    result[..., : xa.shape[-1]] = xa
    result[..., xa.shape[-1] :] = pa
    return result if out is None else out
