"""Sinusoidal absolute encodings: tables, the fused add, and 2-D/3-D grids."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _backend, _checks
from .reference import _sinusoidal as ref


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
    """Sinusoidal position encodings (Vaswani et al., 2017).

    Parameters
    ----------
    positions : int or array_like of shape [n]
        ``n`` means ``arange(n)``; otherwise integer or float positions (finite).
    dim : int
        Features per position; even and > 0.
    base : float
        The frequency base (> 0, not 1).
    interleaved : bool
        True: ``PE[p, 2i] = sin(p·ω_i)``, ``PE[p, 2i+1] = cos(p·ω_i)`` (Vaswani,
        the PyTorch tutorial). False: all sines then all cosines
        (Transformer-XL, MAE, Hugging Face Marian).
    freq_rule : {"vaswani", "t2t"}
        ``ω_i = base^(-2i/dim)``, or ``exp(-i·ln(base)/(dim/2 - 1))``
        (tensor2tensor, fairseq; needs dim >= 4).
    dtype : float32, float64, float16 or bfloat16
        Result dtype. Angles and trigonometry are evaluated in float64 and the
        result is rounded once.
    out : array of shape [n, dim] and dtype ``dtype``, optional
        Written in place and returned.

    Returns
    -------
    ndarray of shape [n, dim]

    Examples
    --------
    >>> import posenc
    >>> pe = posenc.sinusoidal(4, 6)
    >>> pe.shape, pe.dtype
    ((4, 6), dtype('float32'))
    >>> [float(v) for v in pe[0]]
    [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    """
    if not _backend.use_native():
        return ref.sinusoidal(positions, dim, base=base, interleaved=interleaved, freq_rule=freq_rule, dtype=dtype, out=out)
    plan = ref._plan_table(positions, dim, base, interleaved, freq_rule, dtype, out)
    target = _backend.kernel_target(plan.out, (plan.n, 2 * plan.inv_freq.shape[0]), plan.dtype)
    _backend.run_into(
        target,
        lambda dest: _backend.native.sinusoidal_table(dest, plan.positions, 0.0, plan.inv_freq, bool(interleaved)),
    )
    return target if out is None else out


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
    """``scale·x + PE`` for ``x`` of shape ``[..., seq, dim]``, fused: no table is built.

    Parameters
    ----------
    x : array_like of shape [..., seq, dim], floating
        Any strides (views of larger buffers are read in place).
    offset : int
        Row ``s`` gets position ``offset + s`` (when ``positions`` is None).
    positions : int or array_like of shape [seq], optional
        Explicit positions (integer or float).
    base, interleaved
        As in :func:`sinusoidal` (frequencies by the "vaswani" rule).
    scale : float
        Multiplies ``x`` first (``sqrt(dim)`` in the original Transformer).
    out : array of x's shape and dtype, optional
        May be ``x`` itself (in place). Any other overlap with ``x`` is refused.

    Returns
    -------
    ndarray of x's shape and dtype, computed in float64 and rounded once.

    Examples
    --------
    >>> import numpy as np, posenc
    >>> x = np.zeros((2, 3, 4), np.float32)
    >>> y = posenc.add_sinusoidal(x, out=x)
    >>> y is x, bool(np.array_equal(x[1], posenc.sinusoidal(3, 4)))
    (True, True)
    """
    if not _backend.use_native():
        return ref.add_sinusoidal(x, offset=offset, positions=positions, base=base, interleaved=interleaved, scale=scale, out=out)
    plan = ref._plan_add(x, offset, positions, base, interleaved, scale, out)
    xa = plan.x if _checks.aligned(plan.x) else plan.x.copy()
    target = _backend.kernel_target(plan.out, xa.shape, xa.dtype)
    _backend.run_into(
        target,
        lambda dest: _backend.native.add_sinusoidal(
            xa, dest, plan.positions, plan.start, plan.inv_freq, bool(interleaved), plan.scale
        ),
    )
    return target if out is None else out


def _grid(plan: ref.GridPlan) -> np.ndarray:
    target = _backend.kernel_target(plan.out, plan.shape + (plan.dim,), plan.dtype)

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
            _backend.native.sinusoidal_table(view, None, 0.0, plan.inv_freq, True)

    _backend.run_into(target, fill)
    return target


def sinusoidal_2d(height: int, width: int, dim: int, *, base: float = 10000.0, dtype: Any = np.float32, out: Any = None) -> Any:
    """2-D sinusoidal encodings for a ``height × width`` grid (images).

    Channel layout identical to ``positional_encodings.PositionalEncoding2D``:
    c = 2·ceil(dim/4) channels per axis of interleaved sin/cos with
    ω_i = base^(-2i/c), the row (height) axis first, then the column axis,
    the concatenation cut to ``dim`` (any dim >= 1).

    Parameters
    ----------
    height, width : int
        Grid size (>= 0).
    dim : int
        Channels per cell (>= 1).
    base : float
        The frequency base (> 0, not 1).
    dtype : float32, float64, float16 or bfloat16
        Result dtype; computed in float64, rounded once.
    out : array of shape [height, width, dim] and dtype ``dtype``, optional
        Written in place and returned.

    Returns
    -------
    ndarray of shape [height, width, dim]

    Examples
    --------
    >>> import posenc
    >>> pe = posenc.sinusoidal_2d(2, 3, 5)
    >>> pe.shape
    (2, 3, 5)
    >>> [float(v) for v in pe[0, 0]]
    [0.0, 1.0, 0.0, 1.0, 0.0]
    """
    if not _backend.use_native():
        return ref.sinusoidal_2d(height, width, dim, base=base, dtype=dtype, out=out)
    plan = ref._plan_grid((height, width), dim, base, dtype, out)
    target = _grid(plan)
    return target if out is None else out


def sinusoidal_3d(
    depth: int, height: int, width: int, dim: int, *, base: float = 10000.0, dtype: Any = np.float32, out: Any = None
) -> Any:
    """3-D sinusoidal encodings for a ``depth × height × width`` grid (video, volumes).

    Channel layout identical to ``positional_encodings.PositionalEncoding3D``:
    c = 2·ceil(dim/6) channels per axis (depth, height, width in that order),
    interleaved sin/cos with ω_i = base^(-2i/c), cut to ``dim``.

    Parameters
    ----------
    depth, height, width : int
        Grid size (>= 0).
    dim : int
        Channels per cell (>= 1).
    base : float
        The frequency base (> 0, not 1).
    dtype : float32, float64, float16 or bfloat16
        Result dtype; computed in float64, rounded once.
    out : array of shape [depth, height, width, dim] and dtype ``dtype``, optional
        Written in place and returned.

    Returns
    -------
    ndarray of shape [depth, height, width, dim]

    Examples
    --------
    >>> import posenc
    >>> posenc.sinusoidal_3d(2, 2, 2, 7).shape
    (2, 2, 2, 7)
    """
    if not _backend.use_native():
        return ref.sinusoidal_3d(depth, height, width, dim, base=base, dtype=dtype, out=out)
    plan = ref._plan_grid((depth, height, width), dim, base, dtype, out)
    target = _grid(plan)
    return target if out is None else out


def concat_positional(x: Any, pe: Any, *, out: Any = None) -> Any:
    """Concatenate features and encodings: ``[..., seq, dim]``, ``[..., seq, pe_dim]`` → ``[..., seq, dim + pe_dim]``.

    ``pe`` broadcasts over x's leading axes (a ``[seq, pe_dim]`` table serves
    every batch). The result dtype is ``np.result_type(x, pe)``.

    Parameters
    ----------
    x : array_like of shape [..., seq, dim]
    pe : array_like of shape [seq, pe_dim] or [..., seq, pe_dim]
    out : array of shape [..., seq, dim + pe_dim], optional

    Returns
    -------
    ndarray of shape [..., seq, dim + pe_dim]

    Examples
    --------
    >>> import numpy as np, posenc
    >>> posenc.concat_positional(np.ones((2, 3, 4), np.float32), posenc.sinusoidal(3, 2)).shape
    (2, 3, 6)
    """
    return ref.concat_positional(x, pe, out=out)
