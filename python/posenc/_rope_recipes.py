"""Multi-axis rotary recipes: the coordinates of patch grids, in the token order each model uses.

:func:`posenc.apply_rope_nd` rotates each token by angles taken from its
coordinates (``[seq, axes]``); the models differ in how they number their
patches (row-major, Qwen2-VL's spatial-merge blocks), in what a coordinate
is (a patch index, an index rescaled to the pretraining grid as in EVA-02,
a centred coordinate in ``[-1, 1]`` as in DINOv3) and in the frequencies
they give each axis. :func:`rope_grid_coords` builds the coordinates; the
recipes of docs/rotary_nd.md combine it with :func:`posenc.rope_axial_freqs`
(or ``freqs`` built by hand) and :func:`posenc.apply_rope_nd`.

The work is a few integer or float64 operations per token, done by NumPy
on both backends (like :func:`posenc.swin_relative_position_index`): there
is no plan, no kernel and no separate reference twin.
"""

from __future__ import annotations

import math
from typing import Any, List, Optional, Tuple, Union

import numpy as np

from . import _checks

__all__ = ["rope_grid_coords"]

_NORMALIZE = ("separate", "min", "max")


def _sides(value: Any, name: str) -> Tuple[int, ...]:
    """An int (one axis) or a non-empty sequence of ints >= 0."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be an int or a sequence of ints, got {type(value).__name__}")
    if isinstance(value, np.ndarray):
        if value.ndim > 1:
            raise ValueError(f"{name} must be an int or a 1-D sequence of ints, got an array of shape {value.shape}")
        if value.ndim == 0:
            value = value[()]
    if not hasattr(value, "__len__"):
        return (_checks.integer(value, name, minimum=0),)
    sides = tuple(_checks.integer(v, f"{name}[{a}]", minimum=0) for a, v in enumerate(value))
    if not sides:
        raise ValueError(f"{name} must name at least one axis")
    return sides


def _per_axis(value: Any, axes: int, name: str) -> Tuple[Union[int, float], ...]:
    """A real number for every axis, or one sequence of ``axes`` of them; ints stay ints."""
    if isinstance(value, np.ndarray):
        if value.ndim > 1:
            raise ValueError(f"{name} must be a number or a 1-D sequence of {axes}, got an array of shape {value.shape}")
        if value.ndim == 0:
            value = value[()]
    items = tuple(value) if isinstance(value, (tuple, list, np.ndarray)) else (value,) * axes
    if len(items) != axes:
        raise ValueError(f"{name} must be a number or one per axis ({axes}), got {len(items)}")
    result: List[Union[int, float]] = []
    for a, v in enumerate(items):
        label = name if len(items) == 1 else f"{name}[{a}]"
        if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
            result.append(_checks.integer(v, label))
        else:
            result.append(_checks.real(v, label))
    return tuple(result)


def rope_grid_coords(shape: Any, *, spatial_merge: int = 1, offset: Any = 0, ref_shape: Any = None,
                     normalize: Optional[str] = None) -> np.ndarray:
    """The coordinates ``[N, axes]`` of every patch of a grid, in a model's token order, for :func:`apply_rope_nd`.

    Token ``n`` of a grid of sides ``shape = (s_0, …, s_{A-1})`` has the
    integer index ``(i_0, …, i_{A-1})``; tokens run in row-major order (the
    last axis fastest: ``x.reshape(-1, …)`` of a ``[t, h, w, …]`` or
    ``[h, w, …]`` feature map, ``flatten(2)`` of a channels-first one),
    except that with ``spatial_merge=m`` the last two axes are walked in
    ``m × m`` blocks, each block row-major, blocks row-major (the token order
    of the Qwen2-VL/2.5-VL/3-VL vision towers, whose patch merger fuses each
    block into one token; Transformers' ``get_vision_position_ids``). Each
    index is then mapped to the coordinate the model rotates by:

    - default: ``i + offset`` (patch indices: FLUX's image ids, Qwen2-VL,
      Pixtral, EVA-02 at its pretraining size, RoPE-Mixed);
    - ``ref_shape=r``: ``(i + offset)·r_a / s_a``, the grid stretched onto
      the pretraining grid (EVA-02 and timm's ``ref_feat_shape`` when a model
      runs at another resolution);
    - ``normalize``: ``2·(i + 0.5 + offset) / d_a − 1``, patch centres
      mapped into ``[−1, 1]`` (DINOv3 and timm's ``grid_type='centered'``),
      ``d_a`` the axis' own side (``"separate"``), the smallest side
      (``"min"``) or the largest (``"max"``).

    Everything is evaluated in float64 (integer coordinates stay int64), so
    float coordinates are correctly rounded where the models' own float32
    grids are not (a difference of one float32 ulp of the coordinate).

    Parameters
    ----------
    shape : int or sequence of int
        The grid's sides, each >= 0 (an int: one axis). Video: ``(t, h, w)``.
    spatial_merge : int >= 1
        The side ``m`` of the merge blocks of the last two axes (Qwen2-VL:
        ``config.vision_config.spatial_merge_size``, 2); both last sides must
        be multiples of it (``ValueError``), the grid must have two axes or
        more. 1: plain row-major order.
    offset : number or sequence of one number per axis
        Added to the indices (FLUX Kontext's reference image sits at time 1:
        ``offset=(1, 0, 0)``; timm's ``grid_offset``). Non-integer offsets give
        float coordinates.
    ref_shape : sequence of one positive number per axis, optional
        The grid the model was trained at (EVA-02 at 448 px: ``(16, 16)``, the
        224 px grid): coordinates are rescaled to span it.
    normalize : {None, "separate", "min", "max"}
        Centred coordinates in ``[−1, 1]`` (DINOv3). Not with ``ref_shape``
        (``ValueError``: no model combines them).

    Returns
    -------
    ndarray of shape ``[prod(shape), len(shape)]``
        int64 for integer indices and offsets, else float64. Column ``a``
        holds the coordinate on axis ``a`` (``(t, h, w)`` order, rows before
        columns); reverse the columns for models that put ``x`` first.

    Raises
    ------
    TypeError
        A side, ``spatial_merge`` or offset of the wrong kind (a float side, a bool).
    ValueError
        Negative sides, sides not divisible by ``spatial_merge``, an offset or
        ``ref_shape`` of the wrong length, non-finite values, a ``ref_shape``
        that is not positive, integer coordinates beyond ±2**53, float
        coordinates beyond float64's range, an unknown ``normalize``, or a
        result too large to address.

    See Also
    --------
    apply_rope_nd, rope_axial_freqs

    Examples
    --------
    >>> import posenc
    >>> posenc.rope_grid_coords((2, 3)).tolist()
    [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]

    Qwen2-VL's vision tower numbers a 4 × 4 grid in 2 × 2 blocks:

    >>> posenc.rope_grid_coords((4, 4), spatial_merge=2)[:8].tolist()
    [[0, 0], [0, 1], [1, 0], [1, 1], [0, 2], [0, 3], [1, 2], [1, 3]]

    FLUX's image ids ``(0, row, column)`` after text ids of zeros:

    >>> import numpy as np
    >>> ids = np.concatenate([np.zeros((2, 3)), posenc.rope_grid_coords((1, 2, 2))])
    >>> ids.tolist()
    [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [0.0, 1.0, 1.0]]

    DINOv3's centred coordinates and EVA-02's rescaled ones:

    >>> posenc.rope_grid_coords((1, 4), normalize="separate")[:, 1].tolist()
    [-0.75, -0.25, 0.25, 0.75]
    >>> posenc.rope_grid_coords((1, 4), ref_shape=(1, 2))[:, 1].tolist()
    [0.0, 0.5, 1.0, 1.5]
    """
    sides = _sides(shape, "shape")
    axes = len(sides)
    merge = _checks.integer(spatial_merge, "spatial_merge", minimum=1)
    if merge > 1:
        if axes < 2:
            raise ValueError(f"spatial_merge={merge} needs a grid of two axes or more, got shape {sides}")
        if sides[-2] % merge or sides[-1] % merge:
            raise ValueError(f"spatial_merge={merge} must divide the last two sides of shape {sides}")
    offsets = _per_axis(offset, axes, "offset")
    refs = None if ref_shape is None else _per_axis(ref_shape, axes, "ref_shape")
    if refs is not None and min(refs) <= 0:
        raise ValueError(f"ref_shape must be positive, got {refs}")
    norm = None if normalize is None else _checks.choice(normalize, "normalize", _NORMALIZE)
    if norm is not None and refs is not None:
        raise ValueError("ref_shape and normalize do not combine (no model rescales centred coordinates)")
    is_int = refs is None and norm is None and all(isinstance(o, int) for o in offsets)
    if is_int:
        for o, s in zip(offsets, sides):
            if max(abs(o), abs(o + max(s - 1, 0))) > _checks.MAX_EXACT_POSITION:
                raise ValueError(f"offset must keep coordinates within +-2**53, got {o} for a side of {s}")
    dtype = np.dtype(np.int64 if is_int else np.float64)
    n = math.prod(sides)
    _checks.result_size((n, axes), dtype, "the coordinates")

    index = np.indices(sides, dtype=np.int64).reshape(axes, n).T  # row-major: [n, axes]
    if merge > 1:
        lead = math.prod(sides[:-2])
        h, w = sides[-2:]
        order = np.arange(n).reshape(lead, h // merge, merge, w // merge, merge).transpose(0, 1, 3, 2, 4).ravel()
        index = index[order]
    if is_int:
        return np.ascontiguousarray(index + np.array(offsets, np.int64))
    coords: np.ndarray = index + np.array(offsets, np.float64)
    # A side of 0 has no tokens (0 / 0 divides nothing); offsets or ref_shape near the float64
    # limit overflow, which the check below turns into a ValueError instead of inf coordinates.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if refs is not None:
            coords = coords * np.array(refs, np.float64) / np.array(sides, np.float64)
        elif norm is not None:
            d = {"separate": sides, "min": (min(sides),) * axes, "max": (max(sides),) * axes}[norm]
            coords = 2.0 * (coords + 0.5) / np.array(d, np.float64) - 1.0
    if not np.isfinite(coords).all():
        raise ValueError(f"offset={offset!r} and ref_shape={ref_shape!r} give coordinates beyond float64's range")
    return np.ascontiguousarray(coords)
