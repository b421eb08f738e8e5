"""Learned positional embeddings: lookup, the fused add, the deterministic gradient, resizing.

Each public function is its plan builder (see ``posenc._api``): it checks
every argument once and returns a plan of ``posenc._plans.learned``, which
the active backend's executor computes. :class:`LearnedPositionalEmbedding`
holds a table and calls these functions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _checks
from ._api import entry
from ._plans.learned import (RESIZE_1D_METHODS, RESIZE_2D_METHODS, EmbeddingAdd, EmbeddingGrad, EmbeddingLookup,
                             check_range, flat_positions, refuse_table_overlap, resize_plan, table_array,
                             trailing_positions)
from ._sinusoidal import sinusoidal

__all__ = ["LearnedPositionalEmbedding", "embedding_add", "embedding_grad", "embedding_lookup", "resize_table",
           "resize_table_2d"]


@entry
def embedding_lookup(table: Any, positions: Any, *, out: Any = None) -> Any:
    """Rows of a position table: ``table[positions]``.

    Parameters
    ----------
    table : array_like of shape [num_positions, dim], floating
        float32, float64, float16 or bfloat16; any strides.
    positions : array_like of integers, any shape
        Any integer dtype (floats and bools are a ``TypeError``). Every value
        must lie in ``[0, num_positions)``: anything else is an ``IndexError``
        naming the first bad entry, raised before anything is written.
        Negative values are errors, never counted from the end.
    out : array of shape ``positions.shape + (dim,)`` and the table's dtype, optional
        Written in place and returned. It must not overlap ``table``.

    Returns
    -------
    ndarray of shape ``positions.shape + (dim,)`` in the table's dtype (an exact copy of the rows).

    Examples
    --------
    >>> import numpy as np, posenc
    >>> table = np.arange(12, dtype=np.float32).reshape(4, 3)
    >>> posenc.embedding_lookup(table, [[3, 0]]).tolist()
    [[[9.0, 10.0, 11.0], [0.0, 1.0, 2.0]]]
    """
    tab = table_array(table)
    pos = _checks.integer_array(positions, "positions")
    check_range(pos, tab.shape[0])
    shape = tuple(pos.shape) + (tab.shape[1],)
    _checks.result_size(shape, tab.dtype, "the result")
    target = _checks.out_target(out, shape, tab.dtype, reads=[(pos, "positions")])
    refuse_table_overlap(target, tab)
    return EmbeddingLookup(tab, flat_positions(pos), shape, target)


@entry
def embedding_add(x: Any, table: Any, positions: Any, *, out: Any = None) -> Any:
    """``x + table[positions]``, fused: the looked-up rows are never materialised.

    Parameters
    ----------
    x : array_like of shape [..., dim], floating
        Any strides (a slice of a larger buffer is read in place).
    table : array_like of shape [num_positions, dim]
        Same dtype as ``x`` (a mismatch is a ``TypeError``: cast one of them
        first, so that the rounding is yours to choose).
    positions : array_like of integers
        Its shape must equal ``x.shape[:-1]`` or a trailing part of it, and
        it broadcasts over the remaining leading axes: ``[seq]`` serves every
        batch of ``x[batch, seq, dim]``, ``[batch, seq]`` gives each batch its
        own positions. Any integer dtype; values in ``[0, num_positions)``
        (``IndexError`` naming the first bad entry otherwise, before any write).
    out : array of x's shape and dtype, optional
        May be ``x`` itself (in place). Any other overlap with ``x``, and any
        overlap with ``table``, is refused.

    Returns
    -------
    ndarray of x's shape and dtype. Each element is ``x + t`` computed exactly
    (in float64) and rounded once: for every supported dtype this equals the
    correctly rounded sum in that dtype.

    Examples
    --------
    >>> import numpy as np, posenc
    >>> table = np.array([[0, 0], [10, 20], [30, 40]], np.float32)
    >>> x = np.ones((2, 2, 2), np.float32)
    >>> posenc.embedding_add(x, table, [2, 1], out=x) is x
    True
    >>> x[1].tolist()
    [[31.0, 41.0], [11.0, 21.0]]
    """
    xa = _checks.float_array(x, "x")
    if xa.ndim < 1:
        raise ValueError("x must have shape [..., dim], got a scalar")
    tab = table_array(table)
    if tab.dtype != xa.dtype:
        raise TypeError(f"table and x must have the same dtype, got table {tab.dtype} and x {xa.dtype}")
    if tab.shape[1] != xa.shape[-1]:
        raise ValueError(f"x has {xa.shape[-1]} features but table rows have {tab.shape[1]}")
    pos = _checks.integer_array(positions, "positions")
    trailing_positions(pos, tuple(xa.shape[:-1]), "x")
    check_range(pos, tab.shape[0])
    target = _checks.out_target(out, xa.shape, xa.dtype, [(xa, "x")], reads=[(pos, "positions")])
    refuse_table_overlap(target, tab)
    return EmbeddingAdd(xa, tab, flat_positions(pos), tuple(pos.shape), target)


@entry
def embedding_grad(grad: Any, positions: Any, num_positions: int) -> Any:
    """The gradient of a position table: scatter-add of ``grad``'s rows into their positions.

    ``result[p] = Σ grad[k]`` over the rows ``k`` whose position is ``p``
    (zero for positions no row uses): the backward pass of
    :func:`embedding_lookup` and :func:`embedding_add`.

    Parameters
    ----------
    grad : array_like of shape [..., dim], floating
        The gradient of the looked-up rows; any strides.
    positions : array_like of integers
        The positions the forward pass used: shape ``grad.shape[:-1]`` or a
        trailing part of it (repeated over the remaining leading axes, as in
        :func:`embedding_add`). Values in ``[0, num_positions)``.
    num_positions : int
        Rows of the table (>= 0).

    Returns
    -------
    ndarray of shape [num_positions, dim] in grad's dtype.

    Notes
    -----
    Deterministic: the rows of ``grad`` are taken in C order (the order of
    ``grad.reshape(-1, dim)``) and each position's rows are summed one after
    the other in that order, starting from zero. Sums accumulate in float32
    for float32, float16 and bfloat16 gradients (the 16-bit results are
    rounded once at the end) and in float64 for float64. The native kernel
    sorts rows by position (a stable counting sort) and gives each thread a
    disjoint range of positions, so the result is bit-for-bit the same for
    every thread count, every run, and the reference backend (which uses
    ``np.add.at`` in the same order).

    Examples
    --------
    >>> import numpy as np, posenc
    >>> g = np.ones((2, 3, 2), np.float32)
    >>> posenc.embedding_grad(g, [0, 2, 0], 4).tolist()
    [[4.0, 4.0], [0.0, 0.0], [2.0, 2.0], [0.0, 0.0]]
    """
    ga = _checks.float_array(grad, "grad")
    if ga.ndim < 1:
        raise ValueError("grad must have shape [..., dim], got a scalar")
    n = _checks.integer(num_positions, "num_positions", minimum=0)
    pos = _checks.integer_array(positions, "positions")
    trailing_positions(pos, tuple(ga.shape[:-1]), "grad")
    check_range(pos, n)
    shape = (n, ga.shape[-1])
    _checks.result_size(shape, ga.dtype, "the gradient")
    return EmbeddingGrad(ga, flat_positions(pos), shape)


@entry
def resize_table(table: Any, new_length: int, method: str = "linear") -> Any:
    """Resample a ``[length, dim]`` position table to ``new_length`` rows.

    Half-pixel centres (``align_corners=False``), as
    ``torch.nn.functional.interpolate(table.T[None], size=new_length, mode="linear",
    align_corners=False)`` does and as ViT-family code resamples position
    tables: output row ``i`` samples source coordinate
    ``(length / new_length)·(i + 0.5) − 0.5``, clamped at the borders.

    Parameters
    ----------
    table : array_like of shape [length, dim], floating (length >= 1)
    new_length : int
        >= 1.
    method : {"linear", "cubic"}
        "cubic" is the one-axis version of PyTorch's bicubic (Keys' kernel,
        a = −0.75, border taps clamped).

    Returns
    -------
    ndarray of shape [new_length, dim] in the table's dtype, computed in
    float64 and rounded once. ``new_length == length`` returns an exact copy.
    The sum is written around the tap at floor(coordinate), so constants, and
    samples that land exactly on a source row, are reproduced exactly.

    Examples
    --------
    >>> import numpy as np, posenc
    >>> posenc.resize_table(np.array([[0.0], [4.0]]), 4).ravel().tolist()
    [0.0, 1.0, 3.0, 4.0]
    """
    tab = table_array(table)
    n = _checks.integer(new_length, "new_length", minimum=1)
    method = _checks.choice(method, "method", RESIZE_1D_METHODS)
    if tab.shape[0] == 0:
        raise ValueError("table has no rows to resample")
    _checks.result_size((n, tab.shape[1]), tab.dtype, "the resized table")
    return resize_plan(tab, sizes=(n,), method=method)


@entry
def resize_table_2d(grid: Any, new_height: int, new_width: int, method: str = "bicubic") -> Any:
    """Resample a ``[height, width, dim]`` grid of position embeddings (a ViT at a new resolution).

    Matches ``torch.nn.functional.interpolate(grid.permute(2, 0, 1)[None],
    size=(new_height, new_width), mode=method, align_corners=False, antialias=False)``:
    half-pixel centres; "bilinear" clamps the source coordinate at the
    borders, "bicubic" uses Keys' kernel with a = −0.75 and clamps each tap
    into the grid (border replication). The two axes are resampled one after
    the other (the kernels are separable).

    Parameters
    ----------
    grid : array_like of shape [height, width, dim], floating (height, width >= 1)
    new_height, new_width : int
        >= 1.
    method : {"bilinear", "bicubic"}

    Returns
    -------
    ndarray of shape [new_height, new_width, dim] in the grid's dtype,
    computed in float64 (the intermediate after the height axis stays in
    float64) and rounded once. An axis whose size does not change is copied
    exactly.

    Examples
    --------
    >>> import numpy as np, posenc
    >>> grid = np.ones((14, 14, 8), np.float32)
    >>> out = posenc.resize_table_2d(grid, 16, 16)
    >>> out.shape, bool((out == 1).all())
    ((16, 16, 8), True)
    """
    g = table_array(grid, "grid", ndim=3)
    h = _checks.integer(new_height, "new_height", minimum=1)
    w = _checks.integer(new_width, "new_width", minimum=1)
    method = _checks.choice(method, "method", RESIZE_2D_METHODS)
    if g.shape[0] == 0 or g.shape[1] == 0:
        raise ValueError(f"grid of shape {g.shape} has no cells to resample")
    _checks.result_size((h, w, g.shape[2]), g.dtype, "the resized grid")
    return resize_plan(g, sizes=(h, w), method=method[2:])  # "bilinear" -> "linear", "bicubic" -> "cubic"


class LearnedPositionalEmbedding:
    """A learned absolute position table with its forward and backward passes.

    Parameters
    ----------
    num_positions : int
        Rows of the table (the longest sequence it can encode), >= 1.
    dim : int
        Features per position, >= 1 (even for ``init="sinusoidal"``).
    init : {"normal", "zeros", "sinusoidal"}
        "normal": ``std · N(0, 1)`` drawn in float64 from
        ``numpy.random.default_rng(seed)`` and rounded once to ``dtype`` (the
        same seed gives the same table); "zeros"; "sinusoidal": the fixed
        encoding :func:`posenc.sinusoidal` ``(num_positions, dim)`` as a starting point.
    std : float
        Standard deviation of the "normal" initialisation (>= 0; 0.02 as in
        BERT and GPT-2).
    seed : int, numpy.random.Generator or None
        Passed to ``numpy.random.default_rng``.
    dtype : float32, float64, float16 or bfloat16

    Attributes
    ----------
    weight : ndarray of shape [num_positions, dim]
        The table; update it in place (``weight -= lr * g``) or assign a new one.

    Examples
    --------
    >>> import numpy as np, posenc
    >>> emb = posenc.LearnedPositionalEmbedding(16, 4, seed=0)
    >>> x = np.zeros((2, 5, 4), np.float32)
    >>> y = emb.add(x, offset=3)
    >>> bool(np.array_equal(y[1], emb.weight[3:8]))
    True
    >>> emb.grad(np.ones((2, 5, 4), np.float32), np.arange(3, 8))[3].tolist()
    [2.0, 2.0, 2.0, 2.0]
    """

    INITS = ("normal", "zeros", "sinusoidal")

    def __init__(
        self,
        num_positions: int,
        dim: int,
        *,
        init: str = "normal",
        std: float = 0.02,
        seed: Any = None,
        dtype: Any = np.float32,
    ) -> None:
        n = _checks.integer(num_positions, "num_positions", minimum=1)
        d = _checks.integer(dim, "dim", minimum=1)
        init = _checks.choice(init, "init", self.INITS)
        std = _checks.real(std, "std")
        if std < 0:
            raise ValueError(f"std must be >= 0, got {std}")
        dt = _checks.float_dtype(dtype)
        _checks.result_size((n, d), dt, "the table")
        if init == "normal":
            weight = (np.random.default_rng(seed).standard_normal((n, d)) * std).astype(dt)
        elif init == "zeros":
            weight = np.zeros((n, d), dt)
        else:
            weight = sinusoidal(n, d, dtype=dt)
        self.weight: np.ndarray = weight

    @property
    def num_positions(self) -> int:
        return int(self.weight.shape[0])

    @property
    def dim(self) -> int:
        return int(self.weight.shape[1])

    @property
    def dtype(self) -> np.dtype:
        return self.weight.dtype

    def lookup(self, positions: Any, *, out: Any = None) -> Any:
        """``weight[positions]``: see :func:`embedding_lookup`."""
        return embedding_lookup(self.weight, positions, out=out)

    def add(self, x: Any, positions: Any = None, offset: int = 0, *, out: Any = None) -> Any:
        """``x + weight[positions]`` for ``x`` of shape ``[..., seq, dim]``: see :func:`embedding_add`.

        ``positions`` defaults to ``offset + arange(seq)`` (a KV cache
        continuing at ``offset``); give either ``positions`` or ``offset``.
        """
        offset = _checks.integer(offset, "offset")
        if positions is None:
            xa = _checks.as_array(x, "x")
            if xa.ndim < 2:
                raise ValueError(f"x must have shape [..., seq, dim] when positions is None, got shape {xa.shape}")
            seq = xa.shape[-2]
            # Checked here, by name: np.arange(2**63, ...) raised OverflowError, and a bad
            # offset was reported as a bad positions[0].
            if seq and not 0 <= offset <= self.num_positions - seq:
                i = 0 if offset < 0 or offset >= self.num_positions else self.num_positions - offset
                raise IndexError(f"offset = {offset}: positions[{i}] = {offset + i} is outside the table's "
                                 f"range [0, {self.num_positions})")
            positions = np.arange(offset, offset + seq, dtype=np.int64)
        elif offset != 0:
            raise ValueError("give either positions or offset, not both")
        return embedding_add(x, self.weight, positions, out=out)

    def grad(self, grad: Any, positions: Any) -> Any:
        """The gradient of ``weight``: see :func:`embedding_grad`."""
        return embedding_grad(grad, positions, self.num_positions)

    def resize(self, new_length: int, method: str = "linear") -> "LearnedPositionalEmbedding":
        """A new embedding whose table is :func:`resize_table` of this one."""
        resized = LearnedPositionalEmbedding.__new__(LearnedPositionalEmbedding)
        resized.weight = resize_table(self.weight, new_length, method)
        return resized

    def __repr__(self) -> str:
        return f"LearnedPositionalEmbedding(num_positions={self.num_positions}, dim={self.dim}, dtype={self.dtype})"
