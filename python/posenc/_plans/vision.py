"""Plans of the vision and detection family, and its shared maths.

- :class:`SinusoidalRows`: ``sinusoidal_nd`` on arbitrary coordinates, the
  concatenation over axes of sinusoidal rows of ``coords[..., a]``.
- :class:`SinusoidalGridRows`: the same encoding on a product grid (MAE's,
  DiT's and diffusers' ``get_2d_sincos_pos_embed``): each channel block
  encodes one grid axis, so positions are 1-D per axis and rows repeat.
- :class:`SwinBias`: Swin's relative position bias, alone or added to scores.

Both executors take the frequencies from here, in float64, so they
evaluate the same angles p·ω.
"""

from __future__ import annotations

import functools
from typing import NamedTuple, Optional, Tuple

import numpy as np

from .._checks import Out


class SinusoidalRows(NamedTuple):
    """``sinusoidal_nd``: row r holds, per axis a, the ``len(freqs[a])`` sin/cos pairs of ``coords[r, a]``."""

    coords: np.ndarray  # float64 [rows, axes], C-contiguous
    freqs: Tuple[np.ndarray, ...]  # per axis, float64 [axes_dims[a] / 2], read-only
    interleaved: bool
    shape: Tuple[int, ...]  # the result: coords' leading shape + (Σ axes_dims,)
    dtype: np.dtype
    out: Optional[Out]


class GridBlock(NamedTuple):
    """One channel block of a grid encoding: the positions of one grid axis."""

    axis: int  # the grid axis whose index selects the position
    positions: np.ndarray  # float64 [grid[axis]], C-contiguous
    freqs: np.ndarray  # float64 [channels / 2], read-only


class SinusoidalGridRows(NamedTuple):
    """``sincos_2d``: ``zero_rows`` zero rows, then the grid cells in C order, each the blocks' rows side by side."""

    grid: Tuple[int, ...]
    blocks: Tuple[GridBlock, ...]  # in channel order
    interleaved: bool
    zero_rows: int
    dtype: np.dtype
    out: Optional[Out]

    @property
    def shape(self) -> Tuple[int, int]:
        cells = 1
        for n in self.grid:
            cells *= n
        return (self.zero_rows + cells, sum(2 * b.freqs.shape[0] for b in self.blocks))


def encode(angles: np.ndarray, interleaved: bool) -> np.ndarray:
    """[..., half] float64 angles → [..., 2·half] rows of ``np.sin``/``np.cos``, interleaved or split.

    The per-axis rows of a grid encoding are small (one row per index of one
    axis); both executors evaluate them here with NumPy's float64 sin/cos,
    which is what MAE and diffusers call, and only broadcast them differently.
    """
    s, c = np.sin(angles), np.cos(angles)
    if interleaved:
        return np.stack([s, c], axis=-1).reshape(*angles.shape[:-1], 2 * angles.shape[-1])
    return np.concatenate([s, c], axis=-1)


@functools.lru_cache(maxsize=64)
def mae_frequencies(dim: int, base: float) -> np.ndarray:
    """ω_i of MAE's ``get_1d_sincos_pos_embed_from_grid`` for ``dim`` channels (even), float64, read-only.

    Evaluated as MAE writes it, ``1 / base**(i / (dim/2))``, which is not
    always the same double as ``base**(-2i/dim)``: the last bit of ω must
    match for the rows to match MAE's to the last bit.
    """
    omega = np.arange(dim // 2, dtype=np.float64)
    omega /= dim / 2.0
    omega = 1.0 / base**omega
    omega.flags.writeable = False
    return omega


class SwinBias(NamedTuple):
    """``swin_bias`` (``scores`` None) / ``add_swin_bias``: Swin's relative position bias of a window."""

    scores: Optional[np.ndarray]  # [..., heads, N, N], or None for the bias alone
    table: np.ndarray  # [(2wh − 1)(2ww − 1), heads] in the result dtype (rounded once from the caller's)
    window: Tuple[int, int]
    shape: Tuple[int, ...]
    dtype: np.dtype
    out: Optional[Out]


def swin_index(wh: int, ww: int) -> np.ndarray:
    """Swin's ``relative_position_index`` of a wh × ww window: int64 [N, N].

    ``index[n1, n2] = (i1 − i2 + wh − 1)·(2ww − 1) + (j1 − j2 + ww − 1)`` for
    tokens ``n = i·ww + j``: the relative coordinates of the window's tokens,
    shifted to start at 0, row offset first.
    """
    n = np.arange(wh * ww, dtype=np.int64)
    i, j = n // ww, n % ww
    index: np.ndarray = (i[:, None] - i[None, :] + (wh - 1)) * (2 * ww - 1) + (j[:, None] - j[None, :] + (ww - 1))
    return index


# ---------------------------------------------------------------- DETR

DETR_EPS = 1e-6  # DETR's eps in the normalisation y / (y_last + eps) · scale


class DetrSine(NamedTuple):
    """``detr_sine``: per pixel, DETR's sine features of its y then x cumulative counts."""

    y_count: Optional[np.ndarray]  # int64 [batch, h, w], the valid pixels at or above; None: no mask (h + 1)
    x_count: Optional[np.ndarray]  # int64 [batch, h, w], at or left of; None: no mask (w + 1)
    shape: Tuple[int, int, int, int]  # [batch, h, w, 2·num_pos_feats]
    dim_t: np.ndarray  # float64 [num_pos_feats], read-only
    normalize: bool
    scale: float
    dtype: np.dtype
    out: Optional[Out]


@functools.lru_cache(maxsize=64)
def detr_dim_t(num_pos_feats: int, temperature: float) -> np.ndarray:
    """DETR's divisors ``temperature ** (2·floor(i/2) / num_pos_feats)``, float64 [num_pos_feats], read-only."""
    i = np.arange(num_pos_feats, dtype=np.float64)
    dim_t = temperature ** (2 * np.floor(i / 2) / num_pos_feats)
    dim_t.flags.writeable = False
    return dim_t


def detr_positions(count: np.ndarray, last: np.ndarray, normalize: bool, scale: float) -> np.ndarray:
    """The position DETR encodes for a cumulative count (float64): the count, or ``count / (last + eps) · scale``."""
    count = count.astype(np.float64)
    if not normalize:
        return count
    return count / (last.astype(np.float64) + DETR_EPS) * scale


def detr_encode(values: np.ndarray, dim_t: np.ndarray) -> np.ndarray:
    """[...] float64 positions → [..., F]: ``sin(v / dim_t[i])`` at even i, ``cos`` at odd i (DETR's interleave).

    ``dim_t`` as ``detr_dim_t`` makes it, whose entries 2i and 2i + 1 are the
    same number: each pair's angle is divided once, and its sine and cosine
    are written in place.
    """
    angles = values[..., None] / dim_t[0::2]
    out = np.empty(values.shape + dim_t.shape)
    np.sin(angles, out=out[..., 0::2])
    np.cos(angles, out=out[..., 1::2])
    return out
