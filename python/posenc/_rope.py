"""Rotary position embeddings (RoPE): frequencies and scaling schemes, fused in-place rotation, M-RoPE."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Dict, Optional, Tuple

import numpy as np

from . import _backend, _checks
from .reference import _rope as ref

__all__ = ["RotaryEmbedding", "apply_rope", "apply_rope_qk", "positions_from_cu_seqlens", "rope_cos_sin",
           "rope_inv_freq"]


def rope_inv_freq(dim: int, *, base: float = 10000.0, scaling: Any = None) -> Tuple[np.ndarray, float]:
    """RoPE frequencies ω_j and attention scaling of a scaling scheme, in float64.

    Parameters
    ----------
    dim : int
        Rotary dimension (even, > 0; ``int(head_dim * partial_rotary_factor)``).
    base : float
        ``rope_theta`` (> 0, not 1).
    scaling : dict, optional
        A model config's ``rope_scaling`` / ``rope_parameters``. ``"type"`` or
        ``"rope_type"`` (they must agree) is one of:

        - ``"default"`` (or absent; ``"mrope"`` too): ω_j = base^(-2j/dim).
        - ``"linear"``: ``factor``; ω_j / factor (position interpolation).
        - ``"dynamic"``: ``factor``, ``original_max_position_embeddings``
          (the config's ``max_position_embeddings``, which transformers uses
          here), ``seq_len`` (default: the original length). NTK-aware base
          base·(factor·L/L_orig − factor + 1)^(dim/(dim−2)), L = max(seq_len, L_orig).
        - ``"yarn"``: ``factor``, ``original_max_position_embeddings``,
          ``beta_fast`` = 32, ``beta_slow`` = 1, ``truncate`` = True,
          ``attention_factor`` (default (0.1·mscale·ln f + 1)/(0.1·mscale_all_dim·ln f + 1),
          ``mscale`` = 1, ``mscale_all_dim`` = 0: 0.1·ln f + 1 for plain YaRN,
          the DeepSeek-V2/V3 ratio when both are given).
        - ``"llama3"``: ``factor``, ``low_freq_factor``, ``high_freq_factor``,
          ``original_max_position_embeddings`` (all required).
        - ``"longrope"`` (alias ``"su"``): ``short_factor``, ``long_factor``
          (dim/2 numbers each), ``original_max_position_embeddings``, ``factor``
          (max/original length; needed unless ``attention_factor`` is given),
          ``attention_factor`` (default sqrt(1 + ln f / ln L_orig)), ``seq_len``
          (long factors when seq_len > L_orig).

        ``rope_theta`` may appear and must equal ``base``. Values of None count
        as absent. ``factor`` is required where transformers would fall back
        to ``max_position_embeddings / original_max_position_embeddings``
        (yarn; longrope without ``attention_factor``): pass that ratio. Unknown types or keys, missing required keys and invalid
        values raise ValueError naming the key.

    Returns
    -------
    inv_freq : ndarray float64 [dim/2]
    attention_scaling : float
        Multiplies cos and sin (YaRN's mscale, LongRoPE's scaling factor; 1 otherwise).

    Notes
    -----
    Each scheme follows its authors' code and Hugging Face transformers'
    ``modeling_rope_utils`` parameter for parameter, evaluated in float64
    (transformers rounds ω to float32; the difference is below 1e-7 relative).
    The formulas and their sources are in ``posenc/reference/_rope.py``.

    Examples
    --------
    >>> import posenc
    >>> w, a = posenc.rope_inv_freq(8, base=10000.0)
    >>> [float(v) for v in w], a
    ([1.0, 0.1, 0.01, 0.001], 1.0)
    >>> w, a = posenc.rope_inv_freq(128, scaling={"rope_type": "yarn", "factor": 4.0,
    ...                                           "original_max_position_embeddings": 32768})
    >>> round(a, 6)                                   # 0.1·ln 4 + 1
    1.138629
    """
    return ref.rope_inv_freq(dim, base=base, scaling=scaling)


def positions_from_cu_seqlens(cu_seqlens: Any) -> np.ndarray:
    """Positions of every token of a packed batch, restarting at 0 at each sequence start.

    Parameters
    ----------
    cu_seqlens : array_like of int, shape [n_seqs + 1]
        Cumulative lengths ``[0, n0, n0 + n1, ...]`` (flash-attention's varlen
        convention): starts at 0, non-decreasing.

    Returns
    -------
    ndarray int64 of shape [cu_seqlens[-1]]; feed it to :func:`apply_rope` as positions.

    Examples
    --------
    >>> import posenc
    >>> posenc.positions_from_cu_seqlens([0, 3, 5, 5, 7]).tolist()
    [0, 1, 2, 0, 1, 0, 1]
    """
    return ref.positions_from_cu_seqlens(cu_seqlens)


def rope_cos_sin(positions: Any, dim: int, *, base: float = 10000.0, scaling: Any = None,
                 dtype: Any = np.float32) -> Tuple[Any, Any]:
    """The cos and sin tables of RoPE, times the scheme's attention scaling.

    Parameters
    ----------
    positions : int or array_like of shape [n]
        ``n`` means ``arange(n)``; otherwise integer or float positions (finite).
    dim : int
        Rotary dimension (even, > 0): the tables have ``dim // 2`` columns.
    base, scaling
        As in :func:`rope_inv_freq`.
    dtype : float32, float64, float16 or bfloat16
        Angles and trigonometry in float64, rounded once.

    Returns
    -------
    cos, sin : ndarrays of shape [n, dim/2]
        ``a·cos(p·ω_j)`` and ``a·sin(p·ω_j)``, a = attention scaling. (Hugging
        Face's ``cos``/``sin`` of shape [n, dim] are ``concatenate([c, c], -1)``.)

    Examples
    --------
    >>> import posenc
    >>> c, s = posenc.rope_cos_sin(3, 4, dtype="float64")
    >>> c.shape, round(float(c[2, 0]), 6), round(float(s[1, 1]), 6)
    ((3, 2), -0.416147, 0.01)
    """
    if not _backend.use_native():
        return ref.rope_cos_sin(positions, dim, base=base, scaling=scaling, dtype=dtype)
    plan = ref._plan_cos_sin(positions, dim, base, scaling, dtype)
    half = plan.inv_freq.shape[0]
    cos, sin = np.empty((plan.n, half), plan.dtype), np.empty((plan.n, half), plan.dtype)
    _backend.native.rope_cos_sin(cos, sin, plan.positions, 0.0, plan.inv_freq, plan.scale)
    return cos, sin


def _aligned(arr: Optional[np.ndarray]) -> bool:
    return arr is None or _checks.aligned(arr)


def _native_apply(plan: ref.ApplyPlan) -> np.ndarray:
    xa = plan.x if _checks.aligned(plan.x) else plan.x.copy()
    target = np.empty(xa.shape, xa.dtype) if plan.out is None else plan.out
    dest = target if _checks.aligned(target) else np.empty(target.shape, target.dtype)
    _backend.native.apply_rope(xa, dest, plan.seq_axis, plan.grouped, plan.positions, plan.start, plan.inv_freq,
                               plan.pair_axis, plan.scale, plan.interleaved, plan.inverse)
    if dest is not target:  # a misaligned out (np.frombuffer at an odd offset): copied once
        target[...] = dest
    return target


def apply_rope(x: Any, positions: Any = None, *, base: float = 10000.0, scaling: Any = None, inv_freq: Any = None,
               attention_scaling: Any = None, rotary_dim: Any = None, interleaved: bool = False, seq_axis: int = -3,
               offset: int = 0, inverse: bool = False, mrope_section: Any = None, mrope_interleaved: bool = False,
               out: Any = None) -> Any:
    """Rotate the feature pairs of ``x`` by position·frequency (rotary position embedding, RoPE).

    For each pair (u, v) and angle θ = position·ω_j:
    ``u' = a·(u·cos θ − v·sin θ)``, ``v' = a·(v·cos θ + u·sin θ)``, a = the
    scheme's attention scaling. Angles and trigonometry are evaluated in
    float64 (exact at any position); float32 data rotate in float32 with
    cos/sin rounded once (error ≲ 2e-7 for ``|x| ≤ 1``), other dtypes in float64,
    rounded once.

    Parameters
    ----------
    x : array_like, floating, of shape [..., seq, heads, head_dim] (seq_axis=-3) or [..., heads, seq, head_dim] (-2)
        Any strides, negative too: a slice of a fused QKV buffer is rotated in
        place (``out=x``) without a copy. For seq_axis=-2 the heads axis may be
        absent (``[..., seq, head_dim]``).
    positions : array_like, optional
        None: ``offset + arange(seq)``. ``[seq]``: shared by the batch.
        ``[batch, seq]``: per batch (axis 0 of x); ``[1, seq]`` broadcasts.
        Integers or floats, finite. With ``mrope_section``: ``[axes, batch, seq]``
        or ``[axes, seq]``.
    base : float
        RoPE base θ (``rope_theta`` in model configs: 10000 Llama 2, 500000 Llama 3,
        1000000 Qwen2).
    scaling : dict, optional
        A scaling scheme, as in :func:`rope_inv_freq` (a model config's
        ``rope_scaling``).
    inv_freq : array_like of shape [rotary_dim/2], optional
        Frequencies to use as given, instead of ``base``/``scaling``.
    attention_scaling : float, optional
        Overrides the scheme's attention scaling (1.0 with ``inv_freq``).
        (An addition to DESIGN.md's signature, so cached frequencies of any
        scheme can be passed back in: :class:`RotaryEmbedding` does.)
    rotary_dim : int, optional
        Even, <= head_dim: only the leading rotary_dim features rotate (GPT-J,
        GPT-NeoX, Phi-2 partial rotary); the rest pass through. Default head_dim.
    interleaved : bool
        False: pairs (j, j + rotary_dim/2) (GPT-NeoX, Llama, Qwen, Mistral:
        ``rotate_half``). True: pairs (2j, 2j+1) (GPT-J, RoFormer, Meta's
        llama reference code with complex numbers).
    seq_axis : {-3, -2}
    offset : int
        First position when ``positions`` is None (a KV-cache step).
    inverse : bool
        Rotate by −θ: ``a·R(−θ)``, the transpose — the backward pass; the
        inverse of the rotation when a = 1.
    mrope_section : sequence of int, optional
        M-RoPE (Qwen2-VL): pair j takes its angle from positions axis k where
        the first section[0] pairs use axis 0, the next section[1] axis 1, ...;
        must sum to rotary_dim/2.
    mrope_interleaved : bool
        Qwen3-VL's layout: pair j takes axis j mod 3 while j < 3·section[j mod 3],
        otherwise axis 0.
    out : array of x's shape and dtype, optional
        May be x itself (in place). Any other overlap with x is refused.

    Returns
    -------
    ndarray of x's shape and dtype (``out`` when given).

    Examples
    --------
    >>> import numpy as np, posenc
    >>> x = np.ones((1, 4, 2, 8), np.float32)           # [batch, seq, heads, head_dim]
    >>> y = posenc.apply_rope(x, out=x)                  # in place
    >>> y is x, bool(np.allclose(x[0, 0], 1))            # position 0 is not rotated
    (True, True)
    >>> back = posenc.apply_rope(x, inverse=True)
    >>> bool(np.allclose(back, 1, atol=1e-6))
    True
    """
    if not _backend.use_native():
        return ref.apply_rope(x, positions, base=base, scaling=scaling, inv_freq=inv_freq,
                              attention_scaling=attention_scaling, rotary_dim=rotary_dim, interleaved=interleaved,
                              seq_axis=seq_axis, offset=offset, inverse=inverse, mrope_section=mrope_section,
                              mrope_interleaved=mrope_interleaved, out=out)
    plan = ref._plan_apply(x, positions, base, scaling, inv_freq, attention_scaling, rotary_dim, interleaved,
                           seq_axis, offset, inverse, mrope_section, mrope_interleaved, out)
    target = _native_apply(plan)
    return target if out is None else out


def apply_rope_qk(q: Any, k: Any, positions: Any = None, *, base: float = 10000.0, scaling: Any = None,
                  inv_freq: Any = None, attention_scaling: Any = None, rotary_dim: Any = None,
                  interleaved: bool = False, seq_axis: int = -3, offset: int = 0, inverse: bool = False,
                  mrope_section: Any = None, mrope_interleaved: bool = False, out_q: Any = None,
                  out_k: Any = None) -> Tuple[Any, Any]:
    """Rotate queries and keys in one pass: each row's cos/sin are computed once for both.

    Arguments as in :func:`apply_rope`; q and k share the layout, batch and
    seq length, not the head count (grouped-query attention) nor head_dim
    (only rotary_dim must fit both). ``out_q=q, out_k=k`` rotates in place.
    Every argument of both is checked before anything is written.

    Returns
    -------
    (q', k') : ndarrays of q's and k's shapes and dtype.

    Examples
    --------
    >>> import numpy as np, posenc
    >>> q, k = np.ones((2, 5, 8, 64), np.float32), np.ones((2, 5, 2, 64), np.float32)
    >>> q2, k2 = posenc.apply_rope_qk(q, k, out_q=q, out_k=k)
    >>> q2 is q, k2 is k
    (True, True)
    >>> # <R_m q, R_n k> depends on n - m only:
    >>> bool(np.isclose(q[0, 1, 0] @ k[0, 3, 0], q[0, 2, 0] @ k[0, 4, 0], rtol=1e-5))
    True
    """
    if not _backend.use_native():
        return ref.apply_rope_qk(q, k, positions, base=base, scaling=scaling, inv_freq=inv_freq,
                                 attention_scaling=attention_scaling, rotary_dim=rotary_dim, interleaved=interleaved,
                                 seq_axis=seq_axis, offset=offset, inverse=inverse, mrope_section=mrope_section,
                                 mrope_interleaved=mrope_interleaved, out_q=out_q, out_k=out_k)
    kw = ref._qk_kwargs(base, scaling, inv_freq, attention_scaling, rotary_dim, interleaved, seq_axis, offset,
                        inverse, mrope_section, mrope_interleaved)
    pq, pk = ref._plan_qk(q, k, positions, kw, out_q, out_k)
    if (pq.x.dtype != pk.x.dtype or pq.x.ndim != pk.x.ndim or pq.grouped != pk.grouped
            or not all(map(_aligned, (pq.x, pk.x, pq.out, pk.out)))):
        # Mixed dtypes, ranks or misaligned memory: two calls (same result).
        yq, yk = _native_apply(pq), _native_apply(pk)
    else:
        yq = np.empty(pq.x.shape, pq.x.dtype) if pq.out is None else pq.out
        yk = np.empty(pk.x.shape, pk.x.dtype) if pk.out is None else pk.out
        _backend.native.apply_rope_qk(pq.x, yq, pk.x, yk, pq.seq_axis, pq.grouped, pq.positions, pq.start,
                                      pq.inv_freq, pq.pair_axis, pq.scale, pq.interleaved, pq.inverse)
    return (yq if out_q is None else out_q), (yk if out_k is None else out_k)


class RotaryEmbedding:
    """A model's rotary embedding: frequencies of a scheme computed once, applied to q and k.

    Parameters
    ----------
    dim : int
        head_dim of q and k.
    base, scaling
        As in :func:`rope_inv_freq` (``rope_theta`` and ``rope_scaling`` of a
        model config). ``"dynamic"`` and ``"longrope"`` frequencies follow the
        sequence length of each call (the largest position + 1, as Hugging
        Face's ``dynamic_rope_update``): recomputed when it changes, so the
        result never depends on earlier calls.
    rotary_dim : int, optional
        Rotated leading features (partial rotary); default ``dim``.
    interleaved : bool
        GPT-J pairing (see :func:`apply_rope`).
    max_positions : int, optional
        If given, :meth:`cos_sin` serves integer positions below it from
        cached float32 tables ``cos_cached``/``sin_cached`` [max_positions,
        rotary_dim/2] (built on first use); positions beyond are computed,
        never clipped. ``__call__`` never reads the tables: the fused kernel
        computes a row's trig at a cost below that of reading it from memory.

    Attributes
    ----------
    inv_freq : ndarray float64 [rotary_dim/2]
        Frequencies at the last sequence length used.
    attention_scaling : float

    Examples
    --------
    >>> import numpy as np, posenc
    >>> rope = posenc.RotaryEmbedding(64, base=500000.0, scaling={"rope_type": "llama3", "factor": 8.0,
    ...     "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})
    >>> q, k = np.ones((1, 3, 4, 64), np.float32), np.ones((1, 3, 1, 64), np.float32)
    >>> q2, k2 = rope(q, k, offset=10)
    >>> q2.shape, k2.shape
    ((1, 3, 4, 64), (1, 3, 1, 64))
    """

    def __init__(self, dim: int, *, base: float = 10000.0, scaling: Any = None, rotary_dim: Any = None,
                 interleaved: bool = False, max_positions: Any = None) -> None:
        self.dim = _checks.integer(dim, "dim", minimum=1)
        self.rotary_dim = self.dim if rotary_dim is None else _checks.even_dim(rotary_dim, "rotary_dim")
        if self.rotary_dim % 2:
            raise ValueError(f"dim must be even when rotary_dim is not given, got {self.dim}")
        if self.rotary_dim > self.dim:
            raise ValueError(f"rotary_dim must be <= dim = {self.dim}, got {self.rotary_dim}")
        self.base = _checks.base(base)
        if not isinstance(interleaved, (bool, np.bool_)):
            raise TypeError(f"interleaved must be a bool, got {type(interleaved).__name__}")
        self.interleaved = bool(interleaved)
        self.max_positions = None if max_positions is None else _checks.integer(max_positions, "max_positions", minimum=0)
        if scaling is not None and not isinstance(scaling, Mapping):  # dict("linear") raised an unnamed ValueError
            raise TypeError(f"scaling must be None or a dict, got {type(scaling).__name__}")
        self.scaling: Optional[Dict[str, Any]] = None if scaling is None else dict(scaling)
        kind, _ = ref._normalise_scaling(self.scaling, self.base)
        self._seq_dependent = kind in ("dynamic", "longrope")
        self._seq_len: Optional[int] = None
        self.inv_freq, self.attention_scaling = rope_inv_freq(self.rotary_dim, base=self.base, scaling=self.scaling)
        self._tables: Optional[Tuple[np.ndarray, np.ndarray]] = None

    def _frequencies(self, seq_len: int) -> Tuple[np.ndarray, float]:
        if self._seq_dependent and seq_len != self._seq_len:
            scaling = dict(self.scaling or {})
            scaling["seq_len"] = seq_len
            self.inv_freq, self.attention_scaling = rope_inv_freq(self.rotary_dim, base=self.base, scaling=scaling)
            self._seq_len = seq_len
        return self.inv_freq, self.attention_scaling

    def _seq_len_of(self, positions: Any, offset: int, seq: int) -> int:
        if positions is None:
            return offset + seq
        values = _checks.position_values(_checks.as_array(positions, "positions"))
        return int(np.floor(values.max(initial=-1.0))) + 1

    def __call__(self, q: Any, k: Any, positions: Any = None, offset: int = 0, *, seq_axis: int = -3,
                 inverse: bool = False, out_q: Any = None, out_k: Any = None) -> Tuple[Any, Any]:
        """Rotate q and k ([..., seq, heads, dim], or [..., heads, seq, dim] with seq_axis=-2); see :func:`apply_rope_qk`."""
        inv_freq, scale = self.inv_freq, self.attention_scaling
        if self._seq_dependent:
            qa = _checks.as_array(q, "q")
            seq = qa.shape[seq_axis] if qa.ndim >= 2 and seq_axis in (-3, -2) and qa.ndim >= -seq_axis else 0
            inv_freq, scale = self._frequencies(self._seq_len_of(positions, _checks.integer(offset, "offset"), seq))
        return apply_rope_qk(q, k, positions, base=self.base, inv_freq=inv_freq, attention_scaling=scale,
                             rotary_dim=self.rotary_dim, interleaved=self.interleaved, seq_axis=seq_axis,
                             offset=offset, inverse=inverse, out_q=out_q, out_k=out_k)

    def cos_sin(self, positions: Any, dtype: Any = np.float32) -> Tuple[np.ndarray, np.ndarray]:
        """``a·cos``, ``a·sin`` of positions [n] → [n, rotary_dim/2] (from the cache when it covers them)."""
        pos, n = _checks.positions(positions)
        dt = _checks.float_dtype(dtype)
        if self._seq_dependent:
            length = n if pos is None else int(np.floor(pos.max(initial=-1.0))) + 1
            inv_freq, scale = self._frequencies(length)
            angles = np.multiply.outer(np.arange(n, dtype=np.float64) if pos is None else pos, inv_freq)
            return (scale * np.cos(angles)).astype(dt), (scale * np.sin(angles)).astype(dt)
        index = np.arange(n) if pos is None else pos
        m = self.max_positions
        if m and dt == np.float32 and n and index.min() >= 0 and index.max() < m and (index == np.floor(index)).all():
            if self._tables is None:
                self._tables = rope_cos_sin(m, self.rotary_dim, base=self.base, scaling=self.scaling)
            rows = index.astype(np.intp)
            return self._tables[0][rows], self._tables[1][rows]
        return rope_cos_sin(n if pos is None else pos, self.rotary_dim, base=self.base, scaling=self.scaling, dtype=dt)

    @property
    def cos_cached(self) -> Optional[np.ndarray]:
        return None if self._tables is None else self._tables[0]

    @property
    def sin_cached(self) -> Optional[np.ndarray]:
        return None if self._tables is None else self._tables[1]

    def __repr__(self) -> str:
        return (f"RotaryEmbedding(dim={self.dim}, base={self.base}, scaling={self.scaling!r}, "
                f"rotary_dim={self.rotary_dim}, interleaved={self.interleaved}, max_positions={self.max_positions})")
