"""Relative positions: T5 buckets and bias, ALiBi, Shaw-style clipped distances.

Convention: query row ``i`` sits at absolute position ``offset + i`` and key
column ``j`` at ``j``; the relative position is ``j - (offset + i)``. A
KV-cache step with ``q_len`` new queries over ``k_len`` keys uses
``offset = k_len - q_len``.

Each public function is its plan builder (see ``posenc._api``): it checks
every argument once and returns a plan of ``posenc._plans.relative``, which
the active backend's executor computes. Every output depends on
``j - (offset + i)`` only (a Toeplitz matrix): the native executor streams
it out of one lookup row per head, the NumPy one builds it element by
element.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from . import _checks
from ._api import entry
from ._checks import Out
from ._plans.relative import (AlibiBias, DebertaBucketBlock, DistanceGrid,
                              RelativeEmbeddings, RelativePositions, T5Bias, T5BiasAdd, T5BucketBlock, T5BucketOf,
                              alibi_slopes, deberta_bucketing, deberta_positions, deberta_values, distance_grid, head_slopes,
                              new_alibi_add, t5_bucketing, t5_distances)

__all__ = ["add_alibi", "add_t5_bias", "alibi_bias", "alibi_slopes", "clipped_relative_positions",
           "deberta_bucket", "deberta_buckets", "relative_embeddings", "relative_shift", "relative_positions", "t5_bias", "t5_bucket", "t5_buckets"]

_ALIBI_FORMS = """    The causal form is ``slope_h · (j - (offset + i))``: zero on the diagonal,
    negative for earlier keys (later keys, masked in a causal model, get
    positive values). ``symmetric=True`` gives ``-slope_h · |j - (offset + i)|``
    (bidirectional encoders). Forms that differ from these by a constant per
    row give the same softmax: BLOOM adds ``slope_h · j`` and MPT
    ``slope_h · (j - k_len + 1)``; these equal the causal form plus
    ``slope_h · (offset + i)`` (resp. plus a per-row constant), so attention
    weights agree, though the logits themselves differ."""

_T5_PARAMETERS = """    bidirectional : bool
        True (encoders): half the buckets for each sign, positive distances
        (keys after the query) in the upper half. False (decoders): positive
        distances share bucket 0.
    max_distance : int
        Distances at or beyond it share the last bucket (> max_exact)."""

_SCORES_OUT = """    num_heads : int, optional
        How the heads axis is found: by default axis -3 of ``scores`` is the
        heads axis. With ``num_heads``, axis -3 holds ``batch·num_heads``
        folded, head ``h`` of batch ``b`` at index ``b·num_heads + h`` (BLOOM's
        ``[batch·heads, q, k]`` layout): the scores are unfolded (a view, no
        copy) and each head's bias repeats for every batch. Axis -3 must be a
        multiple of it (``ValueError``).
    out : array of the scores' shape and dtype, optional
        May be ``scores`` itself (in place). Any other overlap is refused.

    Returns
    -------
    ndarray of the scores' shape and dtype."""

_GRID_PARAMETERS = """    q_len, k_len : int
        Queries and keys (>= 0).
    offset : int
        Absolute position of query 0 (``k_len - q_len`` for a KV-cache step)."""

_DEBERTA_PARAMETERS = """    bucket_size : int
        DeBERTa's ``position_buckets`` (256 in v2/v3 configs). With
        ``mid = bucket_size // 2``, positions with ``|d| <= mid`` are their
        own bucket; farther ones get ``sign(d) · (mid + ceil(log(|d| / mid) /
        log((max_position - 1) / mid) · (mid - 1)))``.
    max_position : int
        DeBERTa's ``max_relative_positions`` (512 by default). If either
        parameter is <= 0 the result is the plain difference, as in
        Transformers. Otherwise ``bucket_size // 2 >= 1`` and
        ``max_position - 1 > bucket_size // 2`` are required (there
        Transformers divides by zero or produces negative or infinite
        buckets): ``ValueError``. ``bucket_size <= 2**24``,
        ``max_position <= 2**62``."""

_POSITIONS_RESULT = """    dtype : signed integer dtype
        Result dtype (int64 by default); every value must fit (else ``ValueError``).
    out : array of shape [q_len, k_len] and dtype ``dtype``, optional
        Written in place and returned.

    Returns
    -------
    ndarray of shape [q_len, k_len]"""

_SHARED_DOCS = {"__DEBERTA_PARAMETERS__": _DEBERTA_PARAMETERS, "__T5_PARAMETERS__": _T5_PARAMETERS,
                "__ALIBI_FORMS__": _ALIBI_FORMS, "__SCORES_OUT__": _SCORES_OUT,
                "__GRID_PARAMETERS__": _GRID_PARAMETERS, "__POSITIONS_RESULT__": _POSITIONS_RESULT}

# Fragments with arguments: a line ``__NAME__ <arguments>``, the pattern's groups filling the text's {0}, {1}.
_SHARED_DOCS_WITH_ARGUMENTS = [
    # ``__BUCKET_BLOCK_RESULT__ int32``: a [q_len, k_len] block of integer buckets.
    (r"__BUCKET_BLOCK_RESULT__ (\w+)", """    out : {0} array of shape [q_len, k_len], optional

    Returns
    -------
    {0} ndarray of shape [q_len, k_len]"""),
    # ``__TABLE_RESULT__ [shape] (remark).``: entries of the learned ``table``, in its dtype.
    (r"__TABLE_RESULT__ (\[[^]]*\])(.*)", """    out : array of shape {0} and the table's dtype, optional

    Returns
    -------
    ndarray of shape {0} in the table's dtype{1}"""),
]


def _shared_doc(func: Any) -> Any:
    """Fill the shared parameter descriptions into ``func``'s docstring (none under ``python -OO``)."""
    if func.__doc__ is None:
        return func
    for placeholder, text in _SHARED_DOCS.items():
        func.__doc__ = func.__doc__.replace(placeholder, text)
    for pattern, text in _SHARED_DOCS_WITH_ARGUMENTS:
        func.__doc__ = re.sub(f"^{pattern}$", lambda m: text.format(*m.groups()), func.__doc__, flags=re.M)
    return func


# ---------------------------------------------------------------- argument parsing shared by several builders

def _fits(dtype: np.dtype, lo: int, hi: int, what: str) -> None:
    """Refuse an integer result dtype that cannot hold every value in [lo, hi]."""
    smallest, largest = _int_range(dtype)
    if lo < smallest or hi > largest:
        raise ValueError(f"{what} in [{lo}, {hi}] do not fit dtype {dtype}")


@functools.lru_cache(maxsize=None)
def _int_range(dtype: np.dtype) -> Tuple[int, int]:
    """The smallest and largest value of a signed integer dtype (np.iinfo costs more than the call's work)."""
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _positions(q_len: Any, k_len: Any, *, offset: Any, clip: Optional[int], dtype: Any, out: Any) -> RelativePositions:
    """The plan of relative_positions (``clip`` None) and clipped_relative_positions (``clip`` checked already)."""
    grid = distance_grid(q_len, k_len, offset=offset)
    dt = _checks.int_dtype(dtype)
    if clip is not None:
        _fits(dt, 0, 2 * clip, f"max_relative_position = {clip}: clipped positions")
    elif grid.q_len and grid.k_len:
        _fits(dt, grid.first, grid.first + grid.length - 1, "relative positions")
    return RelativePositions(grid, clip, dt, _block_target(grid, dt, out))


def _block_target(grid: DistanceGrid, dtype: np.dtype, out: Any) -> Optional[Out]:
    """Where a ``[q_len, k_len]`` block of ``dtype`` goes: ``out`` (checked), or None for a new array (its size
    checked)."""
    shape = (grid.q_len, grid.k_len)
    _checks.result_size(shape, dtype, "the result")
    return _checks.out_target(out, shape, dtype)


def _bias_table(table: Any) -> np.ndarray:
    """A T5 bias table ``[num_buckets, heads]``, floating, with at least one head."""
    t = _checks.float_array(table, "table")
    if t.ndim != 2:
        raise ValueError(f"table must have shape [num_buckets, heads], got shape {t.shape}")
    if t.shape[1] == 0:
        raise ValueError("table must have at least one head (table.shape[1] == 0)")
    return t


def _scores(scores: Any, *, offset: Any, heads: Optional[int], out: Any,
            inputs: Sequence[Tuple[Any, str]] = (),
            num_heads: Any = None) -> Tuple[np.ndarray, DistanceGrid, Optional[Out]]:
    """Attention scores ``[..., heads, q, k]`` (``heads`` of them if given), their grid and the ``out`` to write.

    With ``num_heads``, axis -3 is ``batch·num_heads`` folded (BLOOM's layout,
    index ``b·num_heads + h``): scores and out are unfolded into
    ``[..., batch, num_heads, q, k]`` views, and a new result is allocated folded
    (the executor writes its unfolded view; the folded array is returned).
    """
    s = _checks.float_array(scores, "scores")
    if s.ndim < 3:
        raise ValueError(f"scores must have shape [..., heads, q, k], got shape {s.shape}")
    if s.shape[-3] == 0:
        raise ValueError(f"scores must have at least one head (scores.shape[-3] == 0), got shape {s.shape}")
    folded = None
    if num_heads is not None:
        folded = _checks.integer(num_heads, "num_heads", minimum=1)
        if s.shape[-3] % folded:
            raise ValueError(f"scores.shape[-3] = {s.shape[-3]} (batch·heads folded) is not a multiple of "
                             f"num_heads = {folded}")
    count = s.shape[-3] if folded is None else folded
    if heads is not None and count != heads:
        where = "scores.shape[-3]" if folded is None else "num_heads"
        raise ValueError(f"scores has {count} heads ({where}) but the bias has {heads}")
    grid = distance_grid(s.shape[-2], s.shape[-1], offset=offset)
    target = _checks.out_like(out, s, "scores", others=inputs)
    if folded is None:
        return s, grid, target
    if target is None:
        _checks.result_size(s.shape, s.dtype, "the result")
        fresh = np.empty(s.shape, s.dtype)
        target = Out(fresh, fresh)
    return _unfold(s, folded), grid, Out(_unfold(target.array, folded), target.given)


def _unfold(a: np.ndarray, heads: int) -> np.ndarray:
    """``a[..., batch·heads, q, k]`` as the view ``[..., batch, heads, q, k]`` (splitting an axis never copies)."""
    *lead, bh, q, k = a.shape
    *lead_strides, step, row, col = a.strides
    shape = (*lead, bh // heads, heads, q, k)
    strides = (*lead_strides, step * heads, step, row, col)
    view: np.ndarray = np.lib.stride_tricks.as_strided(a, shape, strides, writeable=a.flags.writeable)
    return view


# ---------------------------------------------------------------- relative positions and Shaw embeddings

@entry
@_shared_doc
def relative_positions(q_len: int, k_len: int, *, offset: int = 0, dtype: Any = np.int64, out: Any = None) -> Any:
    """Relative positions ``j - (offset + i)`` of a ``[q_len, k_len]`` attention block.

    Parameters
    ----------
__GRID_PARAMETERS__
__POSITIONS_RESULT__

    Examples
    --------
    >>> import posenc
    >>> posenc.relative_positions(2, 4, offset=2)
    array([[-2, -1,  0,  1],
           [-3, -2, -1,  0]])
    """
    return _positions(q_len, k_len, offset=offset, clip=None, dtype=dtype, out=out)


@entry
@_shared_doc
def clipped_relative_positions(
    q_len: int, k_len: int, max_relative_position: int, *, offset: int = 0, dtype: Any = np.int64, out: Any = None
) -> Any:
    """Shaw-style clipped distances: ``clip(j - (offset + i), -m, m) + m`` in ``[0, 2m]``.

    The index into a table of ``2m + 1`` relative embeddings (Shaw, Uszkoreit
    & Vaswani, "Self-Attention with Relative Position Representations",
    2018; tensor2tensor's ``_generate_relative_positions_matrix``), with
    ``m = max_relative_position``.

    Parameters
    ----------
    q_len, k_len : int
        Queries and keys (>= 0).
    max_relative_position : int
        The clipping distance m (>= 0).
    offset : int
        Absolute position of query 0.
__POSITIONS_RESULT__

    Examples
    --------
    >>> import posenc
    >>> posenc.clipped_relative_positions(3, 5, 2)
    array([[2, 3, 4, 4, 4],
           [1, 2, 3, 4, 4],
           [0, 1, 2, 3, 4]])
    """
    m = _checks.integer(max_relative_position, "max_relative_position", minimum=0)
    return _positions(q_len, k_len, offset=offset, clip=m, dtype=dtype, out=out)


@entry
@_shared_doc
def relative_embeddings(table: Any, q_len: int, k_len: int, max_relative_position: int, *, offset: int = 0,
                        out: Any = None) -> Any:
    """Shaw-style relative embeddings ``table[clipped_relative_positions(...)]`` → ``[q, k, d]``.

    Parameters
    ----------
    table : array_like of shape [2·max_relative_position + 1, d], floating
        Row ``r`` embeds the clipped distance ``r - max_relative_position``.
    q_len, k_len : int
        Queries and keys (>= 0).
    max_relative_position : int
        The clipping distance (>= 0).
    offset : int
        Absolute position of query 0.
__TABLE_RESULT__ [q_len, k_len, d] (rows copied exactly).

    Examples
    --------
    >>> import numpy as np, posenc
    >>> table = np.arange(5, dtype=np.float32)[:, None] * [1, 10]
    >>> e = posenc.relative_embeddings(table.astype(np.float32), 2, 3, 2)
    >>> e.shape, e[1, 0].tolist(), e[0, 2].tolist()
    ((2, 3, 2), [1.0, 10.0], [4.0, 40.0])
    """
    t = _checks.float_array(table, "table")
    m = _checks.integer(max_relative_position, "max_relative_position", minimum=0)
    if t.ndim != 2 or t.shape[0] != 2 * m + 1:
        raise ValueError(
            f"table must have shape [2·max_relative_position + 1, d] = [{2 * m + 1}, d], got shape {t.shape}"
        )
    grid = distance_grid(q_len, k_len, offset=offset)
    shape = (grid.q_len, grid.k_len, t.shape[1])
    _checks.result_size(shape, t.dtype, "the result")
    return RelativeEmbeddings(t, grid, m, _checks.out_target(out, shape, t.dtype, [(t, "table")]))


# ---------------------------------------------------------------- T5

@entry
@_shared_doc
def t5_bucket(relative_position: Any, *, bidirectional: bool = True, num_buckets: int = 32,
              max_distance: int = 128) -> Any:
    """T5's relative-position bucket of each distance, identical to the T5 reference.

    Elementwise on any integer array; the distance is ``key - query``, as
    everywhere in posenc (T5's ``memory_position - context_position``). With
    ``half = num_buckets // 2`` if bidirectional else ``num_buckets`` and
    ``max_exact = half // 2``, a distance n (its magnitude, or ``-min(d, 0)``
    when not bidirectional) below ``max_exact`` is its own bucket, larger ones
    get ``max_exact + int(log(n / max_exact) / log(max_distance / max_exact)
    · (half - max_exact))`` clamped to ``half - 1``.

    Exactness: the reference (mesh-tensorflow and its PyTorch port,
    Hugging Face ``T5Attention._relative_position_bucket``) evaluates that
    logarithm chain in float32, and for some parameters boundary distances
    fall in a different bucket than float64 arithmetic gives: for example
    ``num_buckets=18, max_distance=128``, distance -64 is bucket 8 in float32
    but 7 in float64. posenc evaluates the reference's float32 chain
    operation for operation (float32 division by ``max_exact``, the
    Python-float divisor rounded to float32, truncation toward zero) with the
    correctly rounded float32 log, once per log bucket to find its first
    distance, then looks distances up among those boundaries: no logarithm
    per element, any ``max_distance``.

    One exception, where the reference itself is ambiguous: where the
    formula's *exact* value is an integer (a bucket start hit exactly, e.g.
    ``num_buckets=96, max_distance=81``, distance -36, where
    log(1.5)/log(3.375)·24 = 8), the float32 result depends on the last bit
    of the float32 log, which differs between platforms (PyTorch takes it
    from MKL, whose result depends on the CPU; elsewhere from SLEEF;
    TensorFlow from Eigen). posenc takes the exact bucket there (32 in the
    example). Against PyTorch 2.13 on this project's Intel test machine, an
    exhaustive comparison over ~3,000 parameter sets (every distance to
    beyond ``2·max_distance``) agrees everywhere except at 10 of those 609
    exact-boundary distances (one bucket apart); with the default
    ``(32, 128)`` it agrees at every distance.

    Parameters
    ----------
    relative_position : array_like of integers
        Any shape. Floats are a ``TypeError``.
__T5_PARAMETERS__
    num_buckets : int
        Total buckets. Needs ``max_exact >= 1`` (``num_buckets >= 4``
        bidirectional, ``>= 2`` otherwise: the reference divides by
        ``max_exact``) and ``max_distance > max_exact`` (else there is no room
        for log buckets and the reference divides by ``log(1) = 0``); both are
        a ``ValueError``. At most 2**24.

    Returns
    -------
    int32 ndarray of ``relative_position``'s shape, values in ``[0, num_buckets)``.

    Examples
    --------
    >>> import posenc
    >>> posenc.t5_bucket([-200, -20, -3, 0, 3, 20, 200])
    array([15, 10,  3,  0, 19, 26, 31], dtype=int32)
    >>> posenc.t5_bucket([-200, -20, 20], bidirectional=False)
    array([31, 17,  0], dtype=int32)
    """
    t5 = t5_bucketing(bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance)
    return T5BucketOf(t5_distances(relative_position), t5)


@entry
@_shared_doc
def t5_buckets(q_len: int, k_len: int, *, offset: int = 0, bidirectional: bool = True, num_buckets: int = 32,
               max_distance: int = 128, out: Any = None) -> Any:
    """T5 buckets of a ``[q_len, k_len]`` block: ``t5_bucket(j - (offset + i))``, streamed.

    Parameters
    ----------
__GRID_PARAMETERS__
__T5_PARAMETERS__
    num_buckets : int
        As in :func:`t5_bucket`.
__BUCKET_BLOCK_RESULT__ int32

    Examples
    --------
    >>> import posenc
    >>> posenc.t5_buckets(2, 3, offset=1)
    array([[ 1,  0, 17],
           [ 2,  1,  0]], dtype=int32)
    """
    grid = distance_grid(q_len, k_len, offset=offset)
    t5 = t5_bucketing(bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance)
    return T5BucketBlock(grid, t5, _block_target(grid, np.dtype(np.int32), out))


@entry
@_shared_doc
def t5_bias(table: Any, q_len: int, k_len: int, *, offset: int = 0, bidirectional: bool = True,
            max_distance: int = 128, out: Any = None) -> Any:
    """T5's relative attention bias ``[heads, q, k]``: ``table[bucket(j - (offset + i)), head]``.

    Parameters
    ----------
    table : array_like of shape [num_buckets, heads], floating
        The learned bias (Hugging Face ``relative_attention_bias.weight``);
        ``num_buckets`` is ``table.shape[0]``.
__GRID_PARAMETERS__
__T5_PARAMETERS__
__TABLE_RESULT__ [heads, q_len, k_len] (values copied exactly).

    Examples
    --------
    >>> import numpy as np, posenc
    >>> table = np.arange(64, dtype=np.float32).reshape(32, 2)
    >>> bias = posenc.t5_bias(table, 2, 2)
    >>> bias.shape, bias[1].tolist()
    ((2, 2, 2), [[1.0, 35.0], [3.0, 1.0]])
    """
    t = _bias_table(table)
    grid = distance_grid(q_len, k_len, offset=offset)
    t5 = t5_bucketing(bidirectional=bidirectional, num_buckets=t.shape[0], max_distance=max_distance)
    shape = (t.shape[1], grid.q_len, grid.k_len)
    _checks.result_size(shape, t.dtype, "the bias")
    return T5Bias(t, grid, t5, _checks.out_target(out, shape, t.dtype, [(t, "table")]))


@entry
@_shared_doc
def add_t5_bias(scores: Any, table: Any, *, offset: int = 0, bidirectional: bool = True, max_distance: int = 128,
                num_heads: Optional[int] = None, out: Any = None) -> Any:
    """``scores + t5_bias(table, q, k)`` for scores ``[..., heads, q, k]``, fused, no bias materialised.

    The bias is first converted to the scores' dtype (rounded once; exact
    when the table already has it, the usual case), then ``scores + bias``
    is rounded once: the float32 result is exactly NumPy's
    ``scores + bias.astype(float32)``.

    Parameters
    ----------
    scores : array_like of shape [..., heads, q, k], floating
        Attention logits; any strides. Leading axes (batch) broadcast.
    table : array_like of shape [num_buckets, heads], floating
    offset : int
        Absolute position of query 0 (``k - q`` for a KV-cache step).
__T5_PARAMETERS__
__SCORES_OUT__

    Examples
    --------
    >>> import numpy as np, posenc
    >>> scores = np.zeros((1, 2, 3, 3), np.float32)
    >>> table = np.arange(64, dtype=np.float32).reshape(32, 2)
    >>> posenc.add_t5_bias(scores, table, out=scores) is scores
    True
    >>> bool(np.array_equal(scores[0], posenc.t5_bias(table, 3, 3)))
    True
    """
    t = _bias_table(table)
    t5 = t5_bucketing(bidirectional=bidirectional, num_buckets=t.shape[0], max_distance=max_distance)
    s, grid, target = _scores(scores, offset=offset, heads=t.shape[1], out=out, inputs=[(t, "table")],
                              num_heads=num_heads)
    return T5BiasAdd(s, grid, t, t5, target)


# ---------------------------------------------------------------- DeBERTa

@_shared_doc
def deberta_bucket(relative_position: Any, *, bucket_size: int = 256, max_position: int = 512) -> Any:
    """DeBERTa v2/v3's log bucket of each relative position, identical to Transformers' ``make_log_bucket_position``.

    Elementwise on any integer array. The relative position is DeBERTa's,
    **query minus key** (the opposite of posenc's other functions); the
    result keeps its sign and is not clipped (DeBERTa clamps it to
    ``[0, 2·att_span)`` after adding ``att_span``, later).

    Exactness: Transformers evaluates the logarithm chain in float32 (the
    int64 distance divided by ``mid`` in float32, the divisor
    ``log((max_position - 1) / mid)`` a float32 tensor), and near bucket
    boundaries float32 and float64 disagree. posenc evaluates the same
    float32 chain operation for operation with the correctly rounded float32
    log, except where the chain's *exact* value is a whole number
    (``|d| / mid`` and ``(max_position - 1) / mid`` powers of one rational,
    e.g. ``bucket_size=16, max_position=13``, ``|d| = 27``: ``log 3.375 /
    log 1.5 · 7 = 21``): there the float32 value lands just above or below
    the integer depending on the last bit of the platform's float32 log, and
    posenc takes the exact bucket, as :func:`t5_bucket` does. Transformers
    follows its float32 chain there, so it can differ from posenc at those
    distances (on this project's Intel test machine at 310 of the 13,696 tie
    distances of its sweep); the tests enumerate them with integer
    arithmetic and check they are the only differences.

    Parameters
    ----------
    relative_position : array_like of integers
        Any shape, query minus key. Floats are a ``TypeError``; unsigned
        values past ``2**63 - 1`` a ``ValueError``.
__DEBERTA_PARAMETERS__

    Returns
    -------
    int64 ndarray of ``relative_position``'s shape.

    Examples
    --------
    >>> import posenc
    >>> posenc.deberta_bucket([-1000, -129, -128, 0, 5, 128, 129, 511, 4096])
    array([-317, -129, -128,    0,    5,  128,  129,  255,  446])
    >>> posenc.deberta_bucket([27], bucket_size=16, max_position=13)  # a tie: exactly 8 + 21 = 29
    array([29])
    >>> posenc.deberta_bucket([3, 300], bucket_size=0)
    array([  3, 300])
    """
    # No plan and no kernel: the work is one float32 logarithm per element, which NumPy vectorises
    # (like alibi_slopes, the same on every backend). deberta_buckets streams a block from one row.
    deberta = deberta_bucketing(bucket_size=bucket_size, max_position=max_position)
    return deberta_values(deberta_positions(relative_position), deberta)


@entry
@_shared_doc
def deberta_buckets(q_len: int, k_len: int, *, offset: int = 0, bucket_size: int = 256, max_position: int = 512,
                    out: Any = None) -> Any:
    """DeBERTa's bucketed relative positions of a ``[q_len, k_len]`` block: ``deberta_bucket((offset + i) - j)``.

    With ``offset=0`` identical to Transformers'
    ``build_relative_position(query, key, bucket_size, max_position)[0]``
    (DeBERTa v2/v3); ``offset`` places query 0 at that absolute position (a
    KV-cache step). Note DeBERTa's sign, **query minus key**. The logarithm
    runs once per distance (``q_len + k_len - 1`` of them), not per
    (query, key) pair; the block is streamed from that row.

    Parameters
    ----------
__GRID_PARAMETERS__
__DEBERTA_PARAMETERS__
__BUCKET_BLOCK_RESULT__ int64

    Examples
    --------
    >>> import posenc
    >>> posenc.deberta_buckets(2, 3, offset=1)
    array([[ 1,  0, -1],
           [ 2,  1,  0]])
    >>> posenc.deberta_buckets(1, 4, offset=3, bucket_size=4, max_position=8).tolist()
    [[3, 2, 1, 0]]
    """
    grid = distance_grid(q_len, k_len, offset=offset)
    deberta = deberta_bucketing(bucket_size=bucket_size, max_position=max_position)
    return DebertaBucketBlock(grid, deberta, _block_target(grid, np.dtype(np.int64), out))


# ---------------------------------------------------------------- Transformer-XL / Conformer shift

def relative_shift(bd: Any) -> np.ndarray:
    """Transformer-XL / Conformer "relative shift" of scores against a relative table, as a view (no copy).

    Relative attention in the Transformer-XL style (Dai et al., 2019;
    Conformer, Gulati et al., 2020) scores each query against a table of
    ``q + k - 1`` relative encodings, ``bd[..., i, c] = (q_i + v) · R_c``,
    where row ``c`` encodes the distance ``i - j = (q - 1) - c`` (descending
    positions: ``sinusoidal`` of ``np.arange(q - 1, -k, -1)``). The score of
    query ``i`` and key ``j`` is then ``bd[..., i, (q - 1) - i + j]``;
    implementations gather it with a pad-and-reshape trick that copies the
    scores twice. Here it is a strided view of ``bd``:
    ``out[..., i, j] = bd[..., i, (q - 1) - i + j]``.

    Parameters
    ----------
    bd : array_like of shape [..., q, q + k - 1], floating
        Any strides and leading axes (batch, heads); ``q != k`` allowed (a
        KV cache or Transformer-XL memory: keys ``0..k-1``, query ``i`` at
        absolute position ``k - q + i``; then the table rows encode
        ``(k - 1) - c`` relative to that, as in Transformer-XL with memory).
        Byte-swapped input is converted first (a copy).

    Returns
    -------
    ndarray of shape [..., q, k]
        A read-only view of ``bd`` (``np.shares_memory(out, bd)``); call
        ``np.ascontiguousarray`` on it for a compact copy.

    Examples
    --------
    >>> import numpy as np, posenc
    >>> q, k = 2, 3
    >>> bd = np.array([[10., 11., 12., 13.], [20., 21., 22., 23.]])  # columns: distance 1, 0, -1, -2
    >>> posenc.relative_shift(bd)
    array([[11., 12., 13.],
           [20., 21., 22.]])
    """
    x = _checks.float_array(bd, "bd")
    if x.ndim < 2:
        raise ValueError(f"bd must have shape [..., q, q + k - 1], got shape {x.shape}")
    q, width = x.shape[-2], x.shape[-1]
    k = width - q + 1
    if k < 0:
        raise ValueError(f"bd must have shape [..., q, q + k - 1] with k >= 0: q = {q} needs at least "
                         f"{q - 1} columns, got shape {x.shape}")
    shape = (*x.shape[:-2], q, k)
    if q == 0 or k == 0 or 0 in x.shape[:-2]:
        empty = np.empty(shape, x.dtype)
        empty.flags.writeable = False
        return empty
    row, col = x.strides[-2], x.strides[-1]
    start = x[..., :, q - 1:]  # element (…, 0, q - 1): query 0's score against key 0
    view: np.ndarray = np.lib.stride_tricks.as_strided(start, shape, (*x.strides[:-2], row - col, col),
                                                       writeable=False)
    return view


# ---------------------------------------------------------------- ALiBi

@entry
@_shared_doc
def alibi_bias(num_heads: int, q_len: int, k_len: int, *, offset: int = 0, symmetric: bool = False,
               slopes: Any = None, dtype: Any = np.float32, out: Any = None) -> Any:
    """ALiBi attention bias ``[heads, q, k]``.

__ALIBI_FORMS__

    Each value is computed in float64 (``slope · distance``, slopes in float64)
    and rounded once to ``dtype``.

    Parameters
    ----------
    num_heads : int
        >= 1.
__GRID_PARAMETERS__
    symmetric : bool
        The bidirectional form.
    slopes : array_like of shape [num_heads], optional
        Default: :func:`alibi_slopes` in float64.
    dtype : float32, float64, float16 or bfloat16
    out : array of shape [num_heads, q_len, k_len] and dtype ``dtype``, optional

    Returns
    -------
    ndarray of shape [num_heads, q_len, k_len]

    Examples
    --------
    >>> import posenc
    >>> posenc.alibi_bias(1, 2, 3, offset=1)[0].tolist()
    [[-0.00390625, 0.0, 0.00390625], [-0.0078125, -0.00390625, 0.0]]
    >>> posenc.alibi_bias(2, 1, 3, offset=2, symmetric=True)[1].tolist()
    [[-0.0078125, -0.00390625, 0.0]]
    """
    heads = _checks.integer(num_heads, "num_heads", minimum=1)
    grid = distance_grid(q_len, k_len, offset=offset)
    symmetric = _checks.boolean(symmetric, "symmetric")
    s = head_slopes(slopes, heads=heads)
    dt = _checks.float_dtype(dtype)
    shape = (heads, grid.q_len, grid.k_len)
    _checks.result_size(shape, dt, "the bias")
    return AlibiBias(s, grid, symmetric, dt, _checks.out_target(out, shape, dt, reads=[(slopes, "slopes")]))


@entry
@_shared_doc
def add_alibi(scores: Any, *, offset: int = 0, symmetric: bool = False, slopes: Any = None,
              num_heads: Optional[int] = None, out: Any = None) -> Any:
    """``scores + alibi_bias(heads, q, k)`` for scores ``[..., heads, q, k]``, fused, no bias materialised.

__ALIBI_FORMS__

    Rounding: the bias ``slope · distance`` is evaluated in float64 and
    rounded once to the scores' dtype, then ``scores + bias`` is rounded once:
    the float32 result is exactly NumPy's ``scores + bias.astype(float32)``.

    Parameters
    ----------
    scores : array_like of shape [..., heads, q, k], floating
        Any strides; leading axes (batch) broadcast.
    offset : int
        Absolute position of query 0 (``k - q`` for a KV-cache step).
    symmetric : bool
        The bidirectional form.
    slopes : array_like of shape [heads], optional
        Default: :func:`alibi_slopes` for ``scores.shape[-3]`` heads (``num_heads``
        when given), in float64.
__SCORES_OUT__

    Examples
    --------
    >>> import numpy as np, posenc
    >>> scores = np.zeros((2, 4, 1, 5), np.float32)
    >>> _ = posenc.add_alibi(scores, offset=4, out=scores)
    >>> scores[1, 0, 0].tolist()
    [-1.0, -0.75, -0.5, -0.25, 0.0]
    """
    symmetric = _checks.boolean(symmetric, "symmetric")
    s, grid, target = _scores(scores, offset=offset, heads=None, out=out, num_heads=num_heads,
                              inputs=[(slopes, "slopes")])
    return new_alibi_add((s, grid, head_slopes(slopes, heads=s.shape[-3]), symmetric, target))
