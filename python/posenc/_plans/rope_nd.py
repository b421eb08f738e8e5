"""Plans of rotary embeddings on several axes (vision, video and diffusion transformers), and their shared maths.

Pair j of a token rotates by θ_j = Σ_a coords[a]·freqs[a, j]: each axis a
(time, row, column) contributes its coordinate times its own frequency for
that pair. Axial schemes (FLUX, Qwen2-VL's vision tower, Wan, HunyuanVideo)
give each axis a block of pairs and zero elsewhere
(:func:`rope_axial_freqs`); dense learned frequencies (RoPE-Mixed, Heo et
al. 2024) mix every axis into every pair, possibly per head. The rotation of
a pair is apply_rope's (``posenc._plans.rope``), with attention scaling 1.

Both executors take the float64 coordinates and frequencies of the plan as
they are; the angles are summed in axis order, in float64.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from .. import _checks
from .._checks import Out


class RopeNdRotation(NamedTuple):
    """``apply_rope_nd``: ``x`` rotated into ``out`` (or a new array)."""

    x: np.ndarray
    coords: np.ndarray  # float64 [groups, seq, axes], C order
    freqs: np.ndarray  # float64 [heads or 1, axes, pairs], C order
    per_head: bool  # freqs[h] rotates head h (the heads axis of x); else freqs[0] rotates every head
    grouped: bool  # the groups of coords follow x's axis 0 (the batch)
    seq_axis: int  # -3 ([..., seq, heads, head_dim]) or -2 ([..., heads, seq, head_dim])
    interleaved: bool
    inverse: bool
    out: Optional[Out]


class RopeNdCosSin(NamedTuple):
    """``rope_nd_cos_sin``: cos and sin of θ for coords ``[lead..., seq, axes]``, each ``shape``."""

    coords: np.ndarray  # float64 [rows, seq, axes], C order (rows: the leading axes flattened)
    freqs: np.ndarray  # float64 [heads or 1, axes, pairs], C order
    shape: Tuple[int, ...]  # lead + ([heads] if per-head) + [seq, pairs]
    dtype: np.dtype


# ------------------------------------------------------------------ frequencies


def rope_axial_freqs(axes_dims: Sequence[int], *, base: float = 10000.0) -> np.ndarray:
    """Axial multi-axis RoPE frequencies: each axis rotates its own block of pairs.

    Axis a owns ``axes_dims[a] / 2`` consecutive pairs (after the pairs of
    the axes before it) with ``ω_i = base^(−2i / axes_dims[a])``, written as
    ``1 / base**(2i / axes_dims[a])`` as FLUX's and the other models' code
    evaluates it, in float64; its other entries are zero. Pass the result as
    ``freqs`` to :func:`apply_rope_nd` or :func:`rope_nd_cos_sin`.

    Parameters
    ----------
    axes_dims : sequence of int
        The features of each axis (even, > 0): FLUX's ``axes_dim`` (16, 56, 56);
        Qwen2-VL's vision tower rotates rows and columns with
        ``(head_dim / 2, head_dim / 2)``.
    base : float
        ``theta`` (> 0, not 1).

    Returns
    -------
    ndarray float64 [len(axes_dims), sum(axes_dims) / 2]

    Examples
    --------
    >>> import posenc
    >>> f = posenc.rope_axial_freqs((4, 2), base=100.0)
    >>> f.shape
    (2, 3)
    >>> f.tolist()
    [[1.0, 0.1, 0.0], [0.0, 0.0, 1.0]]
    """
    dims = _checks.axes_dims(axes_dims)
    base = _checks.base(base)
    half = sum(dims) // 2
    _checks.result_size((len(dims), half), np.dtype(np.float64), "rope_axial_freqs' result")
    freqs = np.zeros((len(dims), half))
    start = 0
    for a, d in enumerate(dims):
        freqs[a, start:start + d // 2] = 1.0 / base ** (np.arange(0, d, 2, dtype=np.float64) / d)
        start += d // 2
    return freqs


# ------------------------------------------------------------------ argument checks


def _seq_axis(value: Any) -> int:
    if type(value) is not int and (isinstance(value, (bool, np.bool_)) or not isinstance(value, np.integer)) \
            or value not in (-3, -2):
        raise ValueError(f"seq_axis must be -3 ([..., seq, heads, dim]) or -2 ([..., heads, seq, dim]), got {value!r}")
    return int(value)


def nd_freqs(freqs: Any) -> Tuple[np.ndarray, np.ndarray, bool]:
    """``freqs`` [axes, pairs] or [heads, axes, pairs] as (the array given, float64 [heads or 1, axes, pairs], per-head)."""
    given = _checks.as_array(freqs, "freqs")
    if given.dtype.kind not in "iu" and not _checks.is_float_dtype(given.dtype):
        raise TypeError(f"freqs must hold real numbers (a float or integer dtype), got dtype {given.dtype}")
    if given.ndim not in (2, 3):
        raise ValueError(f"freqs must have shape [axes, pairs] or [heads, axes, pairs], got shape {given.shape}")
    if given.shape[-2] < 1 or given.shape[-1] < 1:
        raise ValueError(f"freqs must have at least one axis and one pair, got shape {given.shape}")
    values = np.require(given, np.float64, ["C", "A"])
    if not np.isfinite(values).all():
        raise ValueError("freqs must be finite (found NaN or infinity)")
    per_head = values.ndim == 3
    return given, values if per_head else values[None], per_head


def nd_coords(coords: Any, axes: int) -> Tuple[np.ndarray, np.ndarray]:
    """``coords`` [..., seq, axes] (integers or floats, finite) as (the array given, float64 C order)."""
    given = _checks.as_array(coords, "coords")
    values = _checks.position_values(given, "coords")
    if values.ndim < 2:
        raise ValueError(f"coords must have shape [seq, axes] or [batch, seq, axes], got shape {given.shape}")
    if values.shape[-1] != axes:
        raise ValueError(f"coords must have one column per axis of freqs ({axes}), got shape {given.shape}")
    return given, values


def _angles_bounded(coords: np.ndarray, freqs: np.ndarray) -> None:
    """Refuse coordinates and frequencies whose angles could overflow float64 (a NaN rotation)."""
    if coords.size == 0:
        return
    per_axis = np.abs(freqs).max(axis=(0, 2))  # [axes]
    with np.errstate(over="ignore"):
        # One reach for every axis first (a whole-array reduction: ~20x faster than one per axis); only
        # when that loose bound overflows, the exact one (the largest |coord| of each axis).
        if np.isfinite(np.abs(coords).max() * per_axis.sum()):
            return
        reach = np.abs(coords).reshape(-1, coords.shape[-1]).max(axis=0)  # [axes]
        bound = (reach * per_axis).sum()
    if not np.isfinite(bound):
        raise ValueError("coords·freqs overflows float64: the angles would not be finite")


def rotation_nd(x: np.ndarray, coords: Any, freqs: Any, *, interleaved: Any, seq_axis: Any, inverse: Any,
                out: Any) -> RopeNdRotation:
    """Check every argument of ``apply_rope_nd`` against ``x`` (a checked floating array), once."""
    interleaved = _checks.boolean(interleaved, "interleaved")
    inverse = _checks.boolean(inverse, "inverse")
    seq_axis = _seq_axis(seq_axis)
    if x.ndim < -seq_axis:
        layout = "[..., seq, heads, head_dim]" if seq_axis == -3 else "[..., seq, head_dim]"
        raise ValueError(f"x must have shape {layout} (at least {-seq_axis} axes), got shape {x.shape}")
    freqs_given, f, per_head = nd_freqs(freqs)
    heads, axes, pairs = f.shape
    if 2 * pairs > x.shape[-1]:
        raise ValueError(f"freqs has {pairs} pairs: 2·pairs must be <= head_dim = {x.shape[-1]} (x.shape[-1])")
    if per_head:
        heads_axis = -2 if seq_axis == -3 else -3
        if x.ndim < -heads_axis:
            raise ValueError(f"per-head freqs need x of shape [..., heads, seq, head_dim] (seq_axis=-2), got shape {x.shape}")
        if x.shape[heads_axis] != heads:
            raise ValueError(f"freqs has {heads} heads but x has {x.shape[heads_axis]} (axis {x.ndim + heads_axis} of "
                             f"shape {x.shape})")
    coords_given, c = nd_coords(coords, axes)
    seq = x.shape[seq_axis]
    if c.ndim > 3:
        raise ValueError(f"coords must have shape [seq, axes] or [batch, seq, axes], got shape {coords_given.shape}")
    if c.shape[-2] != seq:
        raise ValueError(f"coords has {c.shape[-2]} rows (coords.shape[-2]) but x has seq length {seq}")
    c = np.ascontiguousarray(c.reshape(int(np.prod(c.shape[:-2])), seq, axes))
    groups = c.shape[0]
    grouped = groups != 1  # a batch of 0 follows x's empty batch
    if grouped:
        # Axis 0 of x must be a batch axis in front of seq (and of heads, when freqs are per head).
        lead = x.ndim - 3 if per_head else x.ndim + seq_axis  # the first of the seq (and heads) axes
        if lead == 0 or x.shape[0] != groups:
            raise ValueError(f"coords of shape {coords_given.shape} need x's axis 0 to be a batch of {groups} in "
                             f"front of the sequence{' and heads' if per_head else ''}, x has shape {x.shape}")
    _angles_bounded(c, f)
    target = _checks.out_target(out, x.shape, x.dtype, [(x, "x"), (coords_given, "coords"), (freqs_given, "freqs")])
    return RopeNdRotation(x, c, np.ascontiguousarray(f), per_head, grouped, seq_axis, interleaved, inverse, target)


def cos_sin_nd(coords: Any, freqs: Any, dtype: Any) -> RopeNdCosSin:
    """Check ``rope_nd_cos_sin``'s arguments into its plan."""
    _, f, per_head = nd_freqs(freqs)
    heads, axes, pairs = f.shape
    given, c = nd_coords(coords, axes)
    dt = _checks.float_dtype(dtype)
    lead, seq = c.shape[:-2], c.shape[-2]
    shape = lead + ((heads,) if per_head else ()) + (seq, pairs)
    _checks.result_size(shape, dt, "the tables")
    _angles_bounded(c, f)
    return RopeNdCosSin(np.ascontiguousarray(c.reshape(int(np.prod(lead)), seq, axes)), np.ascontiguousarray(f), shape, dt)
