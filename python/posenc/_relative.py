"""Relative positions: T5 buckets and bias, ALiBi, Shaw-style clipped distances.

Convention (DESIGN.md): query row ``i`` sits at absolute position
``offset + i`` and key column ``j`` at ``j``; the relative position is
``j - (offset + i)``. A KV-cache step with ``q_len`` new queries over
``k_len`` keys uses ``offset = k_len - q_len``.

Every output here depends on ``j - i`` only (a Toeplitz matrix). The native
path builds one lookup row per head holding the value of each of the
``q_len + k_len - 1`` distances (NumPy, O(heads·(q+k)) work), and the C++
kernels stream the ``[..., q, k]`` rows out of it: row ``i`` is the slice
``lut[q_len-1-i : q_len-1-i+k_len]``. No logarithm is evaluated per element
and no index matrix is built.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from . import _backend, _checks
from .reference import _relative as ref

__all__ = ["add_alibi", "add_t5_bias", "alibi_bias", "alibi_slopes", "clipped_relative_positions", "relative_embeddings", "relative_positions", "t5_bias", "t5_bucket", "t5_buckets"]



def _shared_doc(func: Any) -> Any:
    """Fill the shared parameter descriptions into ``func``'s docstring."""
    func.__doc__ = func.__doc__.replace("__T5_PARAMETERS__", _T5_PARAMETERS).replace("__ALIBI_FORMS__", _ALIBI_FORMS)
    return func


# ---------------------------------------------------------------- lookup rows

def _distances(grid: ref.Grid) -> np.ndarray:
    """The distance of every lookup-row entry: lut[m] is at m - (q_len - 1) - offset."""
    return np.arange(grid.first, grid.first + grid.length, dtype=np.int64)


def _stream(target: np.ndarray, lut: np.ndarray, step: int = 1) -> None:
    """Fill ``target[..., q, k·step]`` with rows of ``lut`` (kernel: a copy per row)."""
    _backend.run_into(target, lambda dest: _backend.native.toeplitz_copy(dest, lut, step))


@functools.lru_cache(maxsize=64)
def _t5_thresholds(half: int, max_exact: int, max_distance: int) -> np.ndarray:
    """The first distance of each T5 log bucket (computed once per parameter set)."""
    thresholds = _backend.native.t5_thresholds(half, max_exact, max_distance)
    thresholds.flags.writeable = False
    return thresholds


def _t5_buckets_of(distance: np.ndarray, p: ref.T5Params) -> np.ndarray:
    """int32 buckets: exact distances as they are, larger ones by a search in the boundaries."""
    d = np.clip(distance.astype(np.int64, copy=False), -ref._DISTANCE_CLIP, ref._DISTANCE_CLIP)
    direction: Any  # an array of offsets, or 0
    if p.bidirectional:
        n = np.abs(d)
        direction = (d > 0) * p.half
    else:
        n = -np.minimum(d, 0)
        direction = 0
    large = p.max_exact + np.searchsorted(_t5_thresholds(p.half, p.max_exact, p.max_distance), n, side="right")
    buckets: np.ndarray = (np.where(n < p.max_exact, n, large) + direction).astype(np.int32)
    return buckets


# ---------------------------------------------------------------- relative positions

def relative_positions(q_len: int, k_len: int, *, offset: int = 0, dtype: Any = np.int64, out: Any = None) -> Any:
    """Relative positions ``j - (offset + i)`` of a ``[q_len, k_len]`` attention block.

    Parameters
    ----------
    q_len, k_len : int
        Queries and keys (>= 0).
    offset : int
        Absolute position of query 0 (``k_len - q_len`` for a KV-cache step).
    dtype : signed integer dtype
        Result dtype (int64 by default); every value must fit (else ``ValueError``).
    out : array of shape [q_len, k_len] and dtype ``dtype``, optional
        Written in place and returned.

    Returns
    -------
    ndarray of shape [q_len, k_len]

    Examples
    --------
    >>> import posenc
    >>> posenc.relative_positions(2, 4, offset=2)
    array([[-2, -1,  0,  1],
           [-3, -2, -1,  0]])
    """
    if not _backend.use_native():
        return ref.relative_positions(q_len, k_len, offset=offset, dtype=dtype, out=out)
    plan = ref._plan_positions(q_len, k_len, offset, None, dtype, out)
    target = _backend.kernel_target(plan.out, (plan.grid.q_len, plan.grid.k_len), plan.dtype)
    _stream(target, _distances(plan.grid).astype(plan.dtype)[None, :])
    return target if out is None else out


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
    dtype : signed integer dtype
        Result dtype (int64 by default).
    out : array of shape [q_len, k_len] and dtype ``dtype``, optional

    Returns
    -------
    ndarray of shape [q_len, k_len]

    Examples
    --------
    >>> import posenc
    >>> posenc.clipped_relative_positions(3, 5, 2)
    array([[2, 3, 4, 4, 4],
           [1, 2, 3, 4, 4],
           [0, 1, 2, 3, 4]])
    """
    if not _backend.use_native():
        return ref.clipped_relative_positions(q_len, k_len, max_relative_position, offset=offset, dtype=dtype, out=out)
    _checks.integer(max_relative_position, "max_relative_position", minimum=0)  # None means "no clip" inside
    plan = ref._plan_positions(q_len, k_len, offset, max_relative_position, dtype, out)
    target = _backend.kernel_target(plan.out, (plan.grid.q_len, plan.grid.k_len), plan.dtype)
    m = plan.clip
    assert m is not None  # set whenever max_relative_position is given
    _stream(target, (np.clip(_distances(plan.grid), -m, m) + m).astype(plan.dtype)[None, :])
    return target if out is None else out


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
    out : array of shape [q_len, k_len, d] and the table's dtype, optional

    Returns
    -------
    ndarray of shape [q_len, k_len, d] in the table's dtype (rows copied exactly).

    Examples
    --------
    >>> import numpy as np, posenc
    >>> table = np.arange(5, dtype=np.float32)[:, None] * [1, 10]
    >>> e = posenc.relative_embeddings(table.astype(np.float32), 2, 3, 2)
    >>> e.shape, e[1, 0].tolist(), e[0, 2].tolist()
    ((2, 3, 2), [1.0, 10.0], [4.0, 40.0])
    """
    if not _backend.use_native():
        return ref.relative_embeddings(table, q_len, k_len, max_relative_position, offset=offset, out=out)
    plan = ref._plan_embeddings(table, q_len, k_len, max_relative_position, offset, out)
    q, k, d = plan.grid.q_len, plan.grid.k_len, plan.table.shape[1]
    target = _backend.kernel_target(plan.out, (q, k, d), plan.table.dtype)
    if target.size == 0:
        return target if out is None else out
    m = plan.clip
    # One embedding row per distance: [q + k - 1, d], flattened so that row i of
    # the result, as [k·d], is one contiguous slice of it.
    lut = np.ascontiguousarray(plan.table[np.clip(_distances(plan.grid), -m, m) + m]).reshape(1, -1)
    flat = _rows_of_embeddings(target)
    if flat is None:  # an out whose [k, d] axes do not merge: fill a twin, copy once
        twin = np.empty((q, k, d), target.dtype)
        _stream(_rows_of_embeddings(twin), lut, d)
        target[...] = twin
    else:
        _stream(flat, lut, d)
    return target if out is None else out


def _rows_of_embeddings(a: np.ndarray) -> Any:
    """``a[q, k, d]`` as a ``[q, k·d]`` view when its last two axes merge, else None."""
    q, k, d = a.shape
    if d == 1:
        col = a.strides[1]
    elif k == 1 or a.strides[1] == d * a.strides[2]:
        col = a.strides[2]
    else:
        return None
    return np.lib.stride_tricks.as_strided(a, (q, k * d), (a.strides[0], col))


# ---------------------------------------------------------------- T5

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


@_shared_doc
def t5_bucket(relative_position: Any, *, bidirectional: bool = True, num_buckets: int = 32,
              max_distance: int = 128) -> Any:
    """T5's relative-position bucket of each distance, identical to the T5 reference.

    Elementwise on any integer array; the distance sign follows DESIGN
    (``key - query``, as T5's ``memory_position - context_position``). With
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

    One caveat, inherent to the reference: where the formula's *exact* value
    is an integer (a bucket start hit exactly, e.g. ``num_buckets=34,
    max_distance=27``, distance ±12, where log(1.5)/log(3.375)·9 = 3), the
    float32 result depends on the last bit of the float32 log, which differs
    between frameworks (PyTorch on x86 takes it from MKL, which is not
    correctly rounded; elsewhere from SLEEF; TensorFlow from Eigen). posenc
    uses the correctly rounded log there. Against PyTorch/MKL, an exhaustive
    comparison over ~3,000 parameter sets (every distance to beyond
    ``2·max_distance``) agrees everywhere except at such exact-boundary
    distances (a few dozen, one bucket apart); in every tested parameter set
    whose ``max_distance / max_exact`` is a power of two, the default
    ``(32, 128)`` among them, it agrees at every distance.

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
    if not _backend.use_native():
        return ref.t5_bucket(relative_position, bidirectional=bidirectional, num_buckets=num_buckets,
                             max_distance=max_distance)
    p = ref._plan_t5(bidirectional, num_buckets, max_distance)
    return _t5_buckets_of(ref._integer_array(relative_position, "relative_position"), p)


@_shared_doc
def t5_buckets(q_len: int, k_len: int, *, offset: int = 0, bidirectional: bool = True, num_buckets: int = 32,
               max_distance: int = 128, out: Any = None) -> Any:
    """T5 buckets of a ``[q_len, k_len]`` block: ``t5_bucket(j - (offset + i))``, streamed.

    Parameters
    ----------
    q_len, k_len : int
        Queries and keys (>= 0).
    offset : int
        Absolute position of query 0 (``k_len - q_len`` for a KV-cache step).
__T5_PARAMETERS__
    num_buckets : int
        As in :func:`t5_bucket`.
    out : int32 array of shape [q_len, k_len], optional

    Returns
    -------
    int32 ndarray of shape [q_len, k_len]

    Examples
    --------
    >>> import posenc
    >>> posenc.t5_buckets(2, 3, offset=1)
    array([[ 1,  0, 17],
           [ 2,  1,  0]], dtype=int32)
    """
    if not _backend.use_native():
        return ref.t5_buckets(q_len, k_len, offset=offset, bidirectional=bidirectional, num_buckets=num_buckets,
                              max_distance=max_distance, out=out)
    plan = ref._plan_buckets(q_len, k_len, offset, bidirectional, num_buckets, max_distance, out)
    target = _backend.kernel_target(plan.out, (plan.grid.q_len, plan.grid.k_len), np.dtype(np.int32))
    _stream(target, _t5_buckets_of(_distances(plan.grid), plan.t5)[None, :])
    return target if out is None else out


@_shared_doc
def t5_bias(table: Any, q_len: int, k_len: int, *, offset: int = 0, bidirectional: bool = True,
            max_distance: int = 128, out: Any = None) -> Any:
    """T5's relative attention bias ``[heads, q, k]``: ``table[bucket(j - (offset + i)), head]``.

    Parameters
    ----------
    table : array_like of shape [num_buckets, heads], floating
        The learned bias (Hugging Face ``relative_attention_bias.weight``);
        ``num_buckets`` is ``table.shape[0]``.
    q_len, k_len : int
        Queries and keys (>= 0).
    offset : int
        Absolute position of query 0.
__T5_PARAMETERS__
    out : array of shape [heads, q_len, k_len] and the table's dtype, optional

    Returns
    -------
    ndarray of shape [heads, q_len, k_len] in the table's dtype (values copied exactly).

    Examples
    --------
    >>> import numpy as np, posenc
    >>> table = np.arange(64, dtype=np.float32).reshape(32, 2)
    >>> bias = posenc.t5_bias(table, 2, 2)
    >>> bias.shape, bias[1].tolist()
    ((2, 2, 2), [[1.0, 35.0], [3.0, 1.0]])
    """
    if not _backend.use_native():
        return ref.t5_bias(table, q_len, k_len, offset=offset, bidirectional=bidirectional,
                           max_distance=max_distance, out=out)
    plan = ref._plan_t5_bias(table, q_len, k_len, offset, bidirectional, max_distance, out)
    target = _backend.kernel_target(plan.out, (plan.table.shape[1], plan.grid.q_len, plan.grid.k_len), plan.table.dtype)
    lut = np.ascontiguousarray(plan.table[_t5_buckets_of(_distances(plan.grid), plan.t5)].T)
    _stream(target, lut)
    return target if out is None else out


def _add_into(plan: ref.AddPlan, lut: np.ndarray) -> np.ndarray:
    scores = plan.scores if _checks.aligned(plan.scores) else plan.scores.copy()
    target = _backend.kernel_target(plan.out, scores.shape, scores.dtype)
    _backend.run_into(target, lambda dest: _backend.native.toeplitz_add(scores, dest, lut))
    return target


@_shared_doc
def add_t5_bias(scores: Any, table: Any, *, offset: int = 0, bidirectional: bool = True, max_distance: int = 128,
                out: Any = None) -> Any:
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
    out : array of the scores' shape and dtype, optional
        May be ``scores`` itself (in place). Any other overlap is refused.

    Returns
    -------
    ndarray of the scores' shape and dtype.

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
    if not _backend.use_native():
        return ref.add_t5_bias(scores, table, offset=offset, bidirectional=bidirectional,
                               max_distance=max_distance, out=out)
    t = ref._table(table)
    t5 = ref._plan_t5(bidirectional, t.shape[0], max_distance)
    plan = ref._plan_scores(scores, offset, t.shape[1], out, [(t, "table")])
    buckets = _t5_buckets_of(_distances(plan.grid), t5)
    lut = np.ascontiguousarray(ref.round_once(t.astype(np.float64), plan.scores.dtype)[buckets].T)
    target = _add_into(plan, lut)
    return target if out is None else out


# ---------------------------------------------------------------- ALiBi

def alibi_slopes(num_heads: int, dtype: Any = np.float32) -> np.ndarray:
    """ALiBi's per-head slopes (Press, Smith & Lewis, "Train Short, Test Long", 2022), for any head count.

    Exactly the authors' ``get_slopes`` (ofirpress/attention_with_linear_biases),
    evaluated as they do in Python float64 and rounded once to ``dtype``: for
    ``n`` a power of two, ``start = 2^(-8/n)`` and slope ``i`` is
    ``start·start^i`` (the closed form ``2^(-8(i+1)/n)``); otherwise the
    ``2^floor(log2 n)`` slopes of that power followed by every other slope of
    twice that power (the interleaved extension).

    BLOOM (Hugging Face ``_get_alibi_slopes``) uses the same definition but
    evaluates ``base^k`` with a float32 base and float32 ``pow``: its slopes
    equal these (float32) for 1 to 10 heads; from 11 heads on some differ by
    a few float32 ulps (relative difference at most 4.8e-7 up to 64 heads,
    6.8e-7 up to 128, 2.3e-6 up to 256), growing with the exponent. To use
    BLOOM's own slopes, pass them as ``slopes=``.

    Parameters
    ----------
    num_heads : int
        >= 1.
    dtype : float32, float64, float16 or bfloat16

    Returns
    -------
    ndarray of shape [num_heads]

    Examples
    --------
    >>> import posenc
    >>> posenc.alibi_slopes(8).tolist()
    [0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625]
    >>> posenc.alibi_slopes(3, dtype="float64").tolist()
    [0.0625, 0.00390625, 0.25]
    """
    return ref.alibi_slopes(num_heads, dtype)





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
    q_len, k_len : int
        Queries and keys (>= 0).
    offset : int
        Absolute position of query 0 (``k_len - q_len`` for a KV-cache step).
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
    if not _backend.use_native():
        return ref.alibi_bias(num_heads, q_len, k_len, offset=offset, symmetric=symmetric, slopes=slopes,
                              dtype=dtype, out=out)
    plan = ref._plan_alibi(num_heads, q_len, k_len, offset, symmetric, slopes, dtype, out)
    target = _backend.kernel_target(plan.out, (plan.slopes.shape[0], plan.grid.q_len, plan.grid.k_len), plan.dtype)
    _stream(target, ref.alibi_values(plan.slopes, _distances(plan.grid), plan.symmetric, plan.dtype))
    return target if out is None else out


@_shared_doc
def add_alibi(scores: Any, *, offset: int = 0, symmetric: bool = False, slopes: Any = None, out: Any = None) -> Any:
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
        Default: :func:`alibi_slopes` for ``scores.shape[-3]`` heads, in float64.
    out : array of the scores' shape and dtype, optional
        May be ``scores`` itself (in place). Any other overlap is refused.

    Returns
    -------
    ndarray of the scores' shape and dtype.

    Examples
    --------
    >>> import numpy as np, posenc
    >>> scores = np.zeros((2, 4, 1, 5), np.float32)
    >>> _ = posenc.add_alibi(scores, offset=4, out=scores)
    >>> scores[1, 0, 0].tolist()
    [-1.0, -0.75, -0.5, -0.25, 0.0]
    """
    if not _backend.use_native():
        return ref.add_alibi(scores, offset=offset, symmetric=symmetric, slopes=slopes, out=out)
    plan, s, symmetric = ref._plan_add_alibi(scores, offset, symmetric, slopes, out)
    lut = ref.alibi_values(s, _distances(plan.grid), symmetric, plan.scores.dtype)
    target = _add_into(plan, lut)
    return target if out is None else out
