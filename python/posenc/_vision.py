"""Vision and detection encodings: N-D sinusoidal rows, MAE/DiT/SD3 2-D sincos, DETR's sine, Swin's relative bias.

Each public function is its plan builder (see ``posenc._api``): it checks
every argument once and returns a plan of ``posenc._plans.vision``, which
the active backend's executor computes.
"""

from __future__ import annotations

import math
from typing import Any, List, Optional, Tuple

import numpy as np

from . import _checks
from ._api import entry
from ._plans.sinusoidal import frequencies
from ._plans.vision import (DetrSine, GridBlock, SinusoidalGridRows, SinusoidalRows, SwinBias, detr_dim_t,
                            mae_frequencies, swin_index)
from ._rounding import round_once

__all__ = ["add_swin_bias", "detr_sine", "sincos_2d", "sinusoidal_nd", "swin_bias", "swin_relative_position_index",
           "swinv2_coords_table"]


_axes_dims = _checks.axes_dims  # (moved to _checks: rope_axial_freqs takes the same argument)


@entry
def sinusoidal_nd(
    coords: Any,
    axes_dims: Any,
    *,
    base: float = 10000.0,
    interleaved: bool = True,
    dtype: Any = np.float32,
    out: Any = None,
) -> Any:
    """Sinusoidal rows of N-D coordinates: per axis ``sinusoidal(coords[..., a], axes_dims[a])``, concatenated.

    The primitive of the vision recipes (:func:`sincos_2d` is one): the row
    of a coordinate ``(c_0, ..., c_{A-1})`` is the concatenation over axes of
    the :func:`sinusoidal` row of ``c_a`` with ``axes_dims[a]`` features and
    frequencies ``ω_i = base^(-2i/axes_dims[a])``.

    Parameters
    ----------
    coords : array_like of shape [..., axes], integer or float
        Finite coordinates (patch indices, normalised or fractional positions).
    axes_dims : sequence of int
        Features of each axis (``len(axes_dims) == axes``), each even and > 0.
    base : float
        The frequency base (> 0, not 1).
    interleaved : bool
        Each axis' block as in :func:`sinusoidal`: True ``[s0 c0 s1 c1 ...]``,
        False all sines then all cosines.
    dtype : float32, float64, float16 or bfloat16
        Result dtype; angles and trigonometry in float64, rounded once.
    out : array of shape [..., sum(axes_dims)] and dtype ``dtype``, optional
        Written in place and returned.

    Returns
    -------
    ndarray of shape [..., sum(axes_dims)]

    Examples
    --------
    >>> import numpy as np, posenc
    >>> coords = np.array([[0, 0], [1, 2], [2.5, 3]])
    >>> pe = posenc.sinusoidal_nd(coords, (4, 2))
    >>> pe.shape
    (3, 6)
    >>> bool(np.array_equal(pe[:, 4:], posenc.sinusoidal(coords[:, 1], 2)))
    True
    """
    interleaved = _checks.boolean(interleaved, "interleaved")
    dims = _axes_dims(axes_dims)
    b = _checks.base(base)
    arr = _checks.as_array(coords, "coords")
    if arr.ndim < 1:
        raise ValueError("coords must have shape [..., axes], got a scalar")
    if arr.shape[-1] != len(dims):
        raise ValueError(f"coords must have shape [..., {len(dims)}] (one column per entry of axes_dims), "
                         f"got shape {arr.shape}")
    dt = _checks.float_dtype(dtype)
    shape = arr.shape[:-1] + (sum(dims),)
    _checks.result_size(shape, dt, "the encoding")
    values = _checks.position_values(arr, "coords").reshape(-1, len(dims))
    freqs = tuple(frequencies(d, b, "vaswani") for d in dims)
    target = _checks.out_target(out, shape, dt, reads=[(arr, "coords")])
    return SinusoidalRows(values, freqs, interleaved, shape, dt, target)


def _grid_size(value: Any, name: str) -> Tuple[int, int]:
    """An int n (an n × n grid) or a pair (h, w), each >= 1."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError(f"{name} must be an int or a pair (h, w), got {len(value)} entries")
        h, w = value
        return (_checks.integer(h, f"{name}[0]", minimum=1), _checks.integer(w, f"{name}[1]", minimum=1))
    n = _checks.integer(value, name, minimum=1)
    return n, n


@entry
def sincos_2d(
    embed_dim: int,
    grid_size: Any,
    *,
    extra_tokens: int = 0,
    base_size: Optional[float] = None,
    interpolation_scale: float = 1.0,
    dtype: Any = np.float32,
    out: Any = None,
) -> Any:
    """2-D sin-cos position embedding of a patch grid: MAE's, DiT's and diffusers' ``get_2d_sincos_pos_embed``.

    Row ``extra_tokens + i·w + j`` holds the embedding of patch ``(i, j)``:
    its first ``embed_dim/2`` features encode the column ``j`` and the last
    ``embed_dim/2`` the row ``i`` (the column-first ``np.meshgrid(grid_w,
    grid_h)`` of MAE), each as all sines then all cosines of
    ``p·ω_k``, ``ω_k = 1 / 10000^(k / (embed_dim/4))``. Positions are
    ``k / (n / base_size) / interpolation_scale`` for grid index ``k`` on an
    axis of ``n`` patches (``base_size=None``: ``k / interpolation_scale``,
    MAE's plain indices).

    Differences from the peers, on purpose: MAE's ``cls_token=True`` is
    ``extra_tokens=1``; diffusers' ``extra_tokens`` rows appear only with
    ``cls_token=True`` there, here ``extra_tokens`` alone decides. diffusers
    evaluates the positions in float32 (``np.arange(n, dtype=np.float32) /
    (n / base_size) / interpolation_scale``); posenc keeps them in float64, so
    results are identical to the last bit where diffusers' float32 positions
    are exact (``n == base_size`` and a power-of-two scale, say) and more
    accurate elsewhere. diffusers' default ``base_size`` is 16: pass it.
    The frequencies and sines are evaluated as MAE's NumPy function does
    (``1 / 10000**(k / (D/4))``, ``np.sin``), so the float64 result equals
    MAE's to the last bit on both backends; diffusers now evaluates them with
    torch, whose float64 pow and sin differ in the last bit (a few ulp of the
    angle), so against diffusers float32 rows are identical and float64 rows
    agree within that.

    Parameters
    ----------
    embed_dim : int
        Features per row; a multiple of 4 (> 0).
    grid_size : int or (int, int)
        ``n`` for an ``n × n`` grid, or ``(h, w)``; each >= 1.
    extra_tokens : int
        Leading zero rows (class and register tokens), >= 0.
    base_size : float, optional
        The grid size the positions are scaled to (> 0); None: no rescale.
    interpolation_scale : float
        Divides every position (> 0).
    dtype : float32, float64, float16 or bfloat16
        Result dtype; computed in float64, rounded once.
    out : array of shape [extra_tokens + h·w, embed_dim] and dtype ``dtype``, optional
        Written in place and returned.

    Returns
    -------
    ndarray of shape [extra_tokens + h·w, embed_dim]

    Examples
    --------
    >>> import numpy as np, posenc
    >>> pe = posenc.sincos_2d(8, (2, 3), extra_tokens=1)
    >>> pe.shape
    (7, 8)
    >>> [float(v) for v in pe[0]]  # the extra token's row
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    >>> [round(float(v), 4) for v in pe[1 + 1 * 3 + 2]]  # patch (1, 2): column 2 first, then row 1
    [0.9093, 0.02, -0.4161, 0.9998, 0.8415, 0.01, 0.5403, 0.9999]
    """
    dim = _checks.integer(embed_dim, "embed_dim", minimum=1)
    if dim % 4:
        raise ValueError(f"embed_dim must be a multiple of 4 (two axes of sin/cos pairs), got {dim}")
    h, w = _grid_size(grid_size, "grid_size")
    extra = _checks.integer(extra_tokens, "extra_tokens", minimum=0)
    scale = _checks.real(interpolation_scale, "interpolation_scale", positive=True)
    size = None if base_size is None else _checks.real(base_size, "base_size", positive=True)
    dt = _checks.float_dtype(dtype)
    shape = (extra + h * w, dim)
    _checks.result_size((extra, dim), dt, "the embedding")
    _checks.result_size((h, w, dim), dt, "the embedding")
    _checks.result_size(shape, dt, "the embedding")
    freqs = mae_frequencies(dim // 2, 10000.0)

    def positions(n: int) -> np.ndarray:
        p = np.arange(n, dtype=np.float64)
        with np.errstate(over="ignore"):
            if size is not None:
                p = p / (n / size)
            p = p / scale
        if n and not np.isfinite(p[-1]):  # the largest: the angles would be NaN
            raise ValueError(f"interpolation_scale = {scale!r} and base_size = {size!r} put grid positions beyond "
                             "float64's range")
        return p

    blocks: List[GridBlock] = [GridBlock(1, positions(w), freqs), GridBlock(0, positions(h), freqs)]
    return SinusoidalGridRows((h, w), tuple(blocks), False, extra, dt, _checks.out_target(out, shape, dt))


# ---------------------------------------------------------------- Swin

def _window(value: Any, name: str = "window", minimum: int = 1) -> Tuple[int, int]:
    """An int n (an n × n window) or a pair (wh, ww), each >= ``minimum``."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError(f"{name} must be an int or a pair (wh, ww), got {len(value)} entries")
        return (_checks.integer(value[0], f"{name}[0]", minimum=minimum),
                _checks.integer(value[1], f"{name}[1]", minimum=minimum))
    n = _checks.integer(value, name, minimum=minimum)
    return n, n


def _window_tokens(wh: int, ww: int, name: str = "window") -> int:
    """N = wh·ww, refused when [N, N] could not be addressed."""
    if wh * ww > 2**31:
        raise ValueError(f"{name} ({wh}, {ww}) has {wh * ww} tokens: [N, N] would not fit in memory")
    return wh * ww


def swin_relative_position_index(window: Any) -> np.ndarray:
    """Swin's ``relative_position_index``: int64 [N, N] rows of its bias table, ``N = wh·ww``.

    For tokens ``n = i·ww + j`` of a ``wh × ww`` window,
    ``index[n1, n2] = (i1 − i2 + wh − 1)·(2ww − 1) + (j1 − j2 + ww − 1)``,
    value for value the buffer of Swin (and of Transformers' Swin, Swin V2,
    Donut, MaskFormer-Swin), non-square windows included. Both backends run
    this NumPy code (integer arithmetic, no kernel); :func:`swin_bias` and
    :func:`add_swin_bias` never build it.

    Parameters
    ----------
    window : int or (int, int)
        The window ``(wh, ww)`` (an int: square); each side >= 1.

    Returns
    -------
    ndarray of int64, shape [N, N], values in ``[0, (2wh − 1)(2ww − 1))``

    Examples
    --------
    >>> import posenc
    >>> posenc.swin_relative_position_index(2).tolist()
    [[4, 3, 1, 0], [5, 4, 2, 1], [7, 6, 4, 3], [8, 7, 5, 4]]
    """
    wh, ww = _window(window)
    n = _window_tokens(wh, ww)
    _checks.result_size((n, n), np.dtype(np.int64), "the index")
    return swin_index(wh, ww)


def swinv2_coords_table(window: Any, *, pretrained_window: Any = None, dtype: Any = np.float32) -> np.ndarray:
    """Swin V2's log-spaced relative coordinates: ``[2wh − 1, 2ww − 1, 2]``, the input of its continuous bias MLP.

    Entry ``[a, b]`` holds the relative coordinates ``(a − (wh − 1), b − (ww − 1))``,
    each divided by ``P − 1`` for the side ``P`` of ``pretrained_window``
    (None: of ``window``), times 8, then mapped to
    ``sign(x)·log2(|x| + 1) / log2(8)``: Transformers' ``Swinv2SelfAttention``
    ``relative_coords_table`` (and Microsoft's Swin V2). Evaluated in float64
    and rounded once, so it is within one float32 ulp of Transformers'
    float32 buffer, whose every step rounds. Both backends run this NumPy
    code ((2wh − 1)(2ww − 1) logarithms, no kernel).

    Parameters
    ----------
    window : int or (int, int)
        The window ``(wh, ww)``; each side >= 2 (a side of 1 divides by zero
        in Swin V2), or >= 1 when ``pretrained_window`` is given.
    pretrained_window : int or (int, int), optional
        The window the model was pretrained with (each side >= 2): fine-tuning
        at a larger window keeps its coordinates' scale.
    dtype : float32, float64, float16 or bfloat16
        Result dtype.

    Returns
    -------
    ndarray of shape [2wh − 1, 2ww − 1, 2]

    Examples
    --------
    >>> import posenc
    >>> t = posenc.swinv2_coords_table((2, 3), dtype="float64")
    >>> t.shape
    (3, 5, 2)
    >>> [float(v) for v in t[0, 4]]  # (-1, +2) of a 2 × 3 window: ±8 → ±log2(9)/3
    [-1.0566416671474375, 1.0566416671474375]
    """
    if pretrained_window is None:
        wh, ww = _window(window, minimum=2)
        ph, pw = wh, ww
    else:
        wh, ww = _window(window)
        ph, pw = _window(pretrained_window, "pretrained_window", minimum=2)
    dt = _checks.float_dtype(dtype)
    _checks.result_size((2 * wh - 1, 2 * ww - 1, 2), dt, "the table")
    ch = np.arange(-(wh - 1), wh, dtype=np.float64) / (ph - 1) * 8
    cw = np.arange(-(ww - 1), ww, dtype=np.float64) / (pw - 1) * 8
    table = np.stack(np.meshgrid(ch, cw, indexing="ij"), axis=-1)
    values = np.sign(table) * np.log2(np.abs(table) + 1.0) / 3.0  # log2(8) = 3 exactly
    return round_once(values, dt)


def _swin_table(table: Any, wh: int, ww: int) -> np.ndarray:
    """A float table of one row per relative offset of the window: [(2wh − 1)(2ww − 1), heads]."""
    t = _checks.float_array(table, "table")
    rows = (2 * wh - 1) * (2 * ww - 1)
    if t.ndim != 2 or t.shape[0] != rows:
        raise ValueError(f"table must have shape [(2wh-1)(2ww-1), heads] = [{rows}, heads] for the window "
                         f"({wh}, {ww}), got shape {t.shape}")
    return t


@entry
def swin_bias(table: Any, window: Any, *, out: Any = None) -> Any:
    """Swin's relative position bias: ``[heads, N, N]`` gathered from its table, ``N = wh·ww``.

    ``bias[h, n1, n2] = table[index[n1, n2], h]`` with Swin's
    :func:`swin_relative_position_index`, value for value Transformers'
    ``relative_position_bias_table[relative_position_index].permute(2, 0, 1)``,
    but streamed: the block is Toeplitz-block-Toeplitz, so each row is copied
    as ``wh`` runs of ``ww`` from one lookup row per head and row offset; no
    ``[N, N]`` index is built.

    Parameters
    ----------
    table : array_like of shape [(2wh − 1)(2ww − 1), heads], floating
        Swin's ``relative_position_bias_table`` (any strides).
    window : int or (int, int)
        The window ``(wh, ww)``; each side >= 1.
    out : array of shape [heads, N, N] and the table's dtype, optional
        Written in place and returned.

    Returns
    -------
    ndarray of shape [heads, N, N], the table's dtype

    Examples
    --------
    >>> import numpy as np, posenc
    >>> table = np.arange(9 * 2, dtype=np.float32).reshape(9, 2)  # window 2: 3·3 offsets, 2 heads
    >>> bias = posenc.swin_bias(table, 2)
    >>> bias.shape
    (2, 4, 4)
    >>> bool(np.array_equal(bias[1], table[posenc.swin_relative_position_index(2), 1]))
    True
    """
    wh, ww = _window(window)
    n = _window_tokens(wh, ww)
    t = _swin_table(table, wh, ww)
    shape = (t.shape[1], n, n)
    _checks.result_size(shape, t.dtype, "the bias")
    return SwinBias(None, t, (wh, ww), shape, t.dtype, _checks.out_target(out, shape, t.dtype, [(t, "table")]))


@entry
def add_swin_bias(scores: Any, table: Any, window: Any, *, out: Any = None) -> Any:
    """``scores + bias`` for Swin's relative position bias, streamed, in place through ``out=scores``.

    ``out[..., h, n1, n2] = scores[..., h, n1, n2] + table[index[n1, n2], h]``
    (:func:`swin_bias`), Transformers' Swin attention step
    ``attention_scores + relative_position_bias.unsqueeze(0)``, without the
    ``[heads, N, N]`` bias or the ``[N, N]`` index: each row of ``N`` is added
    as ``wh`` runs of ``ww`` from one lookup row per head and row offset. The
    sum is exact and rounded once; a table of another dtype is rounded to the
    scores' dtype first (``table.to(scores.dtype)``).

    Parameters
    ----------
    scores : array_like of shape [..., heads, N, N], floating
        Attention scores of windows (``N = wh·ww``); any strides.
    table : array_like of shape [(2wh − 1)(2ww − 1), heads], floating
    window : int or (int, int)
        The window ``(wh, ww)``; each side >= 1.
    out : array of scores' shape and dtype, optional
        May be ``scores`` itself (in place). Any other overlap is refused.

    Returns
    -------
    ndarray of scores' shape and dtype

    Examples
    --------
    >>> import numpy as np, posenc
    >>> table = np.random.default_rng(0).standard_normal((3 * 5, 4)).astype(np.float32)  # window (2, 3)
    >>> scores = np.zeros((8, 4, 6, 6), np.float32)  # 8 windows, 4 heads
    >>> _ = posenc.add_swin_bias(scores, table, (2, 3), out=scores)
    >>> bool(np.array_equal(scores[5], posenc.swin_bias(table, (2, 3))))
    True
    """
    x = _checks.float_array(scores, "scores")
    wh, ww = _window(window)
    n = _window_tokens(wh, ww)
    t = _swin_table(table, wh, ww)
    if x.ndim < 3 or x.shape[-2:] != (n, n) or x.shape[-3] != t.shape[1]:
        raise ValueError(f"scores must have shape [..., heads, N, N] = [..., {t.shape[1]}, {n}, {n}] for the window "
                         f"({wh}, {ww}) and a table of {t.shape[1]} heads, got shape {x.shape}")
    if t.dtype != x.dtype:
        t = round_once(t.astype(np.float64), x.dtype)
    target = _checks.out_target(out, x.shape, x.dtype, [(x, "scores"), (t, "table")])
    return SwinBias(x, t, (wh, ww), x.shape, x.dtype, target)


# ---------------------------------------------------------------- DETR

@entry
def detr_sine(
    valid: Any = None,
    *,
    shape: Any = None,
    num_pos_feats: int = 64,
    temperature: float = 10000,
    normalize: bool = False,
    scale: Optional[float] = None,
    dtype: Any = np.float32,
    out: Any = None,
) -> Any:
    """DETR's sine position embedding of a padded image batch, channels last: ``[batch, h, w, 2·num_pos_feats]``.

    Value for value Transformers' ``DetrSinePositionEmbedding`` (DETR,
    Conditional/Deformable DETR, DINO, RT-DETR and the rest of the family),
    with its ``[batch, 2F, h, w]`` result moved to channels last. For a pixel
    ``(b, i, j)``: ``y`` is the number of valid pixels at or above it in
    column ``j`` (the cumulative sum of the mask along the height), ``x`` the
    number at or left of it in row ``i``; with ``normalize``,
    ``y ← y / (y_last + 1e-6) · scale`` where ``y_last`` is the column's
    count (and likewise x). Features ``[0, F)`` encode y and ``[F, 2F)`` x:
    feature ``k`` is ``sin(v / T^(2·floor(k/2)/F))`` for even k and ``cos`` of
    the same angle for odd k (``F = num_pos_feats``, ``T = temperature``).
    Transformers evaluates all this in the result dtype (float32); posenc in
    float64, rounding once, so float32 results agree within the rounding of
    its float32 steps.

    The sines are evaluated once per distinct (count, column or row count)
    pair, not per pixel; the native backend then writes every pixel's
    features with the table-lookup kernel.

    Parameters
    ----------
    valid : array_like of shape [batch, h, w], bool or integer 0/1, optional
        True/1 for a real pixel, False/0 for padding (Transformers'
        ``pixel_mask``). None: every pixel valid; then give ``shape``.
    shape : (int, int, int), optional
        ``(batch, h, w)`` when ``valid`` is None (and only then).
    num_pos_feats : int
        Features per axis, F; even and > 0.
    temperature : float
        T (> 0).
    normalize : bool
        Scale the counts to ``[0, scale]`` by the column's/row's count.
    scale : float, optional
        Only with ``normalize=True`` (a ValueError otherwise, as in DETR);
        default ``2π``.
    dtype : float32, float64, float16 or bfloat16
        Result dtype.
    out : array of shape [batch, h, w, 2·num_pos_feats] and dtype ``dtype``, optional
        Written in place and returned.

    Returns
    -------
    ndarray of shape [batch, h, w, 2·num_pos_feats]

    Examples
    --------
    >>> import numpy as np, posenc
    >>> valid = np.ones((1, 2, 3), bool)
    >>> valid[0, :, 2] = False  # the last column is padding
    >>> pe = posenc.detr_sine(valid, num_pos_feats=4)
    >>> pe.shape
    (1, 2, 3, 8)
    >>> [round(float(v), 4) for v in pe[0, 1, 1]]  # y = 2 (features 0-3), x = 2 (features 4-7)
    [0.9093, -0.4161, 0.02, 0.9998, 0.9093, -0.4161, 0.02, 0.9998]
    >>> pe.transpose(0, 3, 1, 2).shape  # Transformers' [batch, 2F, h, w]
    (1, 8, 2, 3)
    """
    feats = _checks.even_dim(num_pos_feats, "num_pos_feats")
    temp = _checks.real(temperature, "temperature", positive=True)
    normalize = _checks.boolean(normalize, "normalize")
    if scale is not None and not normalize:
        raise ValueError("scale is only used with normalize=True (as in DETR: 'normalize should be True if scale is passed')")
    factor = 2 * math.pi if scale is None else _checks.real(scale, "scale")
    dt = _checks.float_dtype(dtype)
    y_count = x_count = None
    if valid is None:
        if shape is None:
            raise ValueError("give valid (a [batch, h, w] mask) or shape=(batch, h, w)")
        if not isinstance(shape, (tuple, list)) or len(shape) != 3:
            raise ValueError(f"shape must be (batch, h, w), got {shape!r}")
        b, h, w = (_checks.integer(v, f"shape[{k}]", minimum=0) for k, v in enumerate(shape))
    else:
        if shape is not None:
            raise ValueError("shape is only for valid=None (the mask has a shape)")
        mask = _checks.as_array(valid, "valid")
        if mask.dtype.kind not in "biu":
            raise TypeError(f"valid must hold booleans or integers 0/1, got dtype {mask.dtype}")
        if mask.ndim != 3:
            raise ValueError(f"valid must have shape [batch, h, w], got shape {mask.shape}")
        if mask.dtype.kind != "b" and mask.size and not ((mask == 0) | (mask == 1)).all():
            raise ValueError("valid must hold only 0 and 1 (or booleans)")
        b, h, w = mask.shape
    result = (b, h, w, 2 * feats)
    _checks.result_size(result, dt, "the embedding")
    if valid is not None:
        m = mask.astype(np.int64)
        y_count, x_count = np.cumsum(m, axis=1), np.cumsum(m, axis=2)
    return DetrSine(y_count, x_count, result, detr_dim_t(feats, temp), normalize, factor, dt,
                    _checks.out_target(out, result, dt, reads=[(valid, "valid")]))
