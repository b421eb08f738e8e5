"""Rotary position embeddings (RoPE): cos/sin tables, the fused rotation of x or of q and k, M-RoPE.

Each public function is its plan builder (see ``posenc._api``): it checks
every argument once with the shared steps of ``posenc._plans.rope``
(``rope_params``, then ``rotation`` per operand) and returns a plan, which
the active backend's executor computes. :class:`RotaryEmbedding` builds the
same plans from its cached frequencies. The frequencies of every scaling
scheme (``rope_inv_freq``) and packed-batch positions
(``positions_from_cu_seqlens``) are maths without a kernel, shared as they
are by both backends.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Callable, Dict, Optional, Tuple, TypeVar

import numpy as np

from . import _checks
from ._api import entry
from ._plans.rope import (DEFAULT_BASE, SEQ_DEPENDENT, RopeCosSin, RopeParams, RopeRotationQK, _pair_axes,
                          caller_arrays, config_rotary, cos_sin, parse_scaling, positions_from_cu_seqlens,
                          rope_inv_freq, rope_params, rotation, rotation_qk, scheme_frequencies, xpos_args,
                          xpos_rotations)

__all__ = ["RotaryEmbedding", "apply_rope", "apply_rope_qk", "positions_from_cu_seqlens", "rope_cos_sin",
           "rope_inv_freq"]


F = TypeVar("F", bound=Callable[..., Any])

_ROTATED_X = """    out : array of x's shape and dtype, optional
        May be x itself (in place). Any other overlap with {} is refused.

    Returns
    -------
    ndarray of x's shape and dtype (``out`` when given)."""


def rotated_x_doc(func: F) -> F:
    """Fill the docstring's ``__ROTATED_X__ <inputs>`` line: the ``out`` and ``Returns`` of a rotation of ``x``
    (:func:`apply_rope`, :func:`apply_rope_nd`), ``out`` refused where it overlaps one of the inputs named."""
    func.__doc__ = re.sub(r"^__ROTATED_X__ (.*)$", lambda m: _ROTATED_X.format(m.group(1)), func.__doc__ or "",
                          flags=re.M)
    return func


@entry
def rope_cos_sin(positions: Any, dim: int, *, base: float = DEFAULT_BASE, scaling: Any = None,
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
    pos, n = _checks.positions(positions)
    dt = _checks.float_dtype(dtype)
    inv_freq, scale = rope_inv_freq(dim, base=base, scaling=scaling)
    return cos_sin(pos, n, inv_freq=inv_freq, scale=scale, dtype=dt)  # type: ignore[return-value]


@entry
@rotated_x_doc
def apply_rope(x: Any, positions: Any = None, *, base: float = DEFAULT_BASE, scaling: Any = None, inv_freq: Any = None,
               attention_scaling: Any = None, rotary_dim: Any = None, interleaved: bool = False, seq_axis: int = -3,
               offset: int = 0, inverse: bool = False, mrope_section: Any = None, mrope_interleaved: bool = False,
               cos: Any = None, sin: Any = None, out: Any = None) -> Any:
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
        Overrides the scheme's attention scaling (1.0 with ``inv_freq``), so
        that cached frequencies of any scheme can be passed back in.
    rotary_dim : int, optional
        Even, <= head_dim: only the leading rotary_dim features rotate (GPT-J,
        GPT-NeoX, Phi-2 partial rotary); the rest pass through. Default head_dim.
    interleaved : bool
        False: pairs (j, j + rotary_dim/2) (GPT-NeoX, Llama, Qwen, Mistral:
        ``rotate_half``). True: pairs (2j, 2j+1) (GPT-J, RoFormer, Meta's
        llama reference code with complex numbers).
    seq_axis : {-3, -2}
    offset : int or array_like of int, shape [batch]
        First position when ``positions`` is None (a KV-cache step). An
        array gives each batch row its own: row b sits at positions
        ``offset[b] + arange(seq)`` (decode steps of sequences of different
        lengths); ``[batch]`` must match axis 0 of x, which must not be the
        sequence axis. Not with ``positions``.
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
    cos, sin : array_like, floating, of shape [seq, W] or [batch, seq, W], optional
        Precomputed tables (both or neither) that replace the angles: pair j of
        row s rotates by ``cos[..., s, j]`` and ``sin[..., s, j]`` as given
        (any attention scaling already inside), so posenc drops into code
        that receives cos/sin. W = rotary_dim/2 (one column per pair, as
        :func:`rope_cos_sin` returns them) or W = rotary_dim (one column per
        rotated feature, each pair's value twice: what Transformers'
        ``LlamaRotaryEmbedding`` returns and ``apply_rotary_pos_emb`` receives,
        ``cat((c, c), -1)``; with ``interleaved=True``,
        ``repeat_interleave(c, 2, -1)``; the two copies must agree). rotary_dim
        defaults to head_dim: pass it for a partial rotation (Phi, GPT-NeoX).
        ``[batch, seq, W]`` follows axis 0 of x; ``[1, seq, W]`` broadcasts.
        Any float dtype; read in float64, finite. Not with positions, offset,
        base, scaling, inv_freq, attention_scaling or mrope_section.
__ROTATED_X__ x

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
    >>> # A decode step: the next token of two cached sequences of lengths 7 and 12.
    >>> step = np.ones((2, 1, 2, 8), np.float32)
    >>> y = posenc.apply_rope(step, offset=np.array([7, 12]))
    >>> bool(np.array_equal(y[1], posenc.apply_rope(step[1:], offset=12)[0]))
    True
    >>> # Tables computed elsewhere (here Transformers' layout: [batch, seq, head_dim], halves repeated).
    >>> c, s = posenc.rope_cos_sin(4, 8, dtype="float64")
    >>> hf_cos, hf_sin = np.concatenate([c, c], -1)[None], np.concatenate([s, s], -1)[None]
    >>> bool(np.allclose(posenc.apply_rope(x, cos=hf_cos, sin=hf_sin), posenc.apply_rope(x), atol=1e-6))
    True
    """
    xa = _checks.float_array(x, "x")
    params = rope_params(((xa, "x"),), positions=positions, offset=offset, base=base, scaling=scaling,
                         inv_freq=inv_freq, attention_scaling=attention_scaling, rotary_dim=rotary_dim,
                         interleaved=interleaved, seq_axis=seq_axis, inverse=inverse, mrope_section=mrope_section,
                         mrope_interleaved=mrope_interleaved, cos=cos, sin=sin)
    return rotation(xa, out, params, reads=caller_arrays(positions=positions, offset=offset, inv_freq=inv_freq,
                                                         cos=cos, sin=sin))


@entry
def apply_rope_qk(q: Any, k: Any, positions: Any = None, *, base: float = DEFAULT_BASE, scaling: Any = None,
                  inv_freq: Any = None, attention_scaling: Any = None, rotary_dim: Any = None,
                  interleaved: bool = False, seq_axis: int = -3, offset: int = 0, inverse: bool = False,
                  mrope_section: Any = None, mrope_interleaved: bool = False, cos: Any = None, sin: Any = None,
                  xpos_scale_base: Any = None, xpos_center: Any = 0, out_q: Any = None,
                  out_k: Any = None) -> Tuple[Any, Any]:
    """Rotate queries and keys in one pass: each row's cos/sin are computed once for both.

    Arguments as in :func:`apply_rope`; q and k share the layout, batch and
    seq length, not the head count (grouped-query attention). Their head_dim
    may differ when ``rotary_dim`` is given (it must fit both); without it
    both rotate their whole, common head_dim. q and k may have different
    dtypes: each is rotated in its own, exactly as :func:`apply_rope` would
    (then in two passes). ``out_q=q, out_k=k`` rotates in place. Every
    argument of both is checked before anything is written.

    Parameters
    ----------
    q : array_like, floating, of shape [..., seq, heads_q, head_dim_q] (seq_axis=-3) or [..., heads_q, seq, head_dim_q]
    k : array_like, floating, of shape [..., seq, heads_k, head_dim_k] (seq_axis=-3) or [..., heads_k, seq, head_dim_k]
    positions, base, scaling, inv_freq, attention_scaling, rotary_dim, interleaved, seq_axis, offset, inverse, \
mrope_section, mrope_interleaved, cos, sin
        As in :func:`apply_rope`, shared by q and k (``[batch, seq]`` positions, offset arrays and
        ``[batch, seq, W]`` tables follow axis 0 of both). With ``cos``/``sin`` this is Transformers'
        ``apply_rotary_pos_emb(q, k, cos, sin)`` (q and k ``[batch, heads, seq, head_dim]``: ``seq_axis=-2``).
    xpos_scale_base : float, optional
        xPos (Sun et al. 2022, "A Length-Extrapolatable Transformer"): when
        given (> 0; 512 in torchscale and rotary-embedding-torch), pair j of
        q at position n is also multiplied by ``ζ_j^((n − c)/xpos_scale_base)``
        and of k by ``ζ_j^(−(n − c)/xpos_scale_base)``,
        ``ζ_j = (2j + 0.4·rotary_dim)/(1.4·rotary_dim)``, so that scores decay
        as ``ζ_j^((m − n)/xpos_scale_base)`` with the distance. Angles and
        scales in float64, rounded once. Not with cos/sin or mrope_section.
    xpos_center : float
        The centre c (scores do not depend on it; it keeps the scales finite:
        ``|n − c|`` beyond ~567·xpos_scale_base overflows float64, a ValueError,
        and float32 results overflow far earlier). rotary-embedding-torch's
        ``rotate_queries_and_keys`` uses ``seq_len // 2``, torchscale's ``XPOS``
        ``ceil(seq_len / 2)`` (its decoding step: the cached length + 1).
    out_q, out_k : arrays of q's and k's shapes and dtypes, optional
        Each may be its own input (in place), not the other operand nor the other out.

    Returns
    -------
    (q', k') : ndarrays of q's and k's shapes and dtypes (``out_q``/``out_k`` when given).

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
    >>> # xPos: the same, times ζ_j^((m - n)/scale_base) whatever the centre (one pair: ζ_0 = 0.4/1.4)
    >>> q = k = np.ones((1, 5, 1, 2))
    >>> xq, xk = posenc.apply_rope_qk(q, k, xpos_scale_base=512, xpos_center=2)
    >>> rq, rk = posenc.apply_rope_qk(q, k)
    >>> ratio = (xq[0, 3, 0] @ xk[0, 1, 0]) / (rq[0, 3, 0] @ rk[0, 1, 0])   # query 2 positions after the key
    >>> bool(np.isclose(ratio, (0.4 / 1.4) ** (2 / 512)))
    True
    """
    qa, ka = _checks.float_array(q, "q"), _checks.float_array(k, "k")
    params = rope_params(((qa, "q"), (ka, "k")), positions=positions, offset=offset, base=base, scaling=scaling,
                         inv_freq=inv_freq, attention_scaling=attention_scaling, rotary_dim=rotary_dim,
                         interleaved=interleaved, seq_axis=seq_axis, inverse=inverse, mrope_section=mrope_section,
                         mrope_interleaved=mrope_interleaved, cos=cos, sin=sin)
    xpos = xpos_args(xpos_scale_base, xpos_center)
    reads = caller_arrays(positions=positions, offset=offset, inv_freq=inv_freq, cos=cos, sin=sin)
    if xpos is None:
        return rotation_qk(qa, ka, params, out_q=out_q, out_k=out_k, reads=reads)
    pq, pk = xpos_rotations(params, qa.shape[params.seq_axis], *xpos)
    return rotation_qk(qa, ka, pq, params_k=pk, out_q=out_q, out_k=out_k, reads=reads)


@entry
def _execute(plan: Any) -> Any:
    """Run a plan built from :class:`RotaryEmbedding`'s cached state on the active backend."""
    return plan


class RotaryEmbedding:
    """A model's rotary embedding: frequencies of a scheme computed once, applied to q and k.

    Parameters
    ----------
    dim : int
        head_dim of q and k.
    base, scaling
        As in :func:`rope_inv_freq` (``rope_theta`` and ``rope_scaling`` of a
        model config, or a Transformers v5 ``rope_parameters`` dict as it is, whose
        ``rope_theta`` sets the base, ``partial_rotary_factor`` the rotary_dim and
        ``mrope_section``/``mrope_interleaved`` the M-RoPE layout; see
        :meth:`from_config` for a whole config). ``"dynamic"`` and ``"longrope"`` frequencies follow the
        sequence length of each call (the largest position + 1, as Hugging
        Face's ``dynamic_rope_update``): recomputed when it changes, so the
        result never depends on earlier calls.
    rotary_dim : int, optional
        Rotated leading features (partial rotary); default ``dim``.
    interleaved : bool
        GPT-J pairing (see :func:`apply_rope`).
    xpos_scale_base : float, optional
        xPos (see :func:`apply_rope_qk`): q and k are also scaled by
        ``ζ_j^(±(n − c)/xpos_scale_base)``, c the call's ``xpos_center``.
    max_positions : int, optional
        If given, :meth:`cos_sin` serves integer positions below it from
        cached float32 tables ``cos_cached``/``sin_cached`` [max_positions,
        rotary_dim/2] (built on first use); positions beyond are computed,
        never clipped. ``__call__`` never reads the tables: the fused kernel
        computes a row's trig at a cost below that of reading it from memory.
    mrope_section, mrope_interleaved
        M-RoPE as in :func:`apply_rope` (Qwen2/2.5/3-VL): ``__call__`` then takes
        positions ``[3, seq]`` or ``[3, batch, seq]``; :meth:`cos_sin` serves
        1-D positions (text tokens, equal on every axis).

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

    def __init__(self, dim: int, *, base: float = DEFAULT_BASE, scaling: Any = None, rotary_dim: Any = None,
                 interleaved: bool = False, max_positions: Any = None,
                 mrope_section: Any = None, mrope_interleaved: bool = False, xpos_scale_base: Any = None) -> None:
        self.dim = _checks.integer(dim, "dim", minimum=1)
        self.rotary_dim = self.dim if rotary_dim is None else _checks.even_dim(rotary_dim, "rotary_dim")
        if self.rotary_dim % 2:
            raise ValueError(f"dim must be even when rotary_dim is not given, got {self.dim}")
        if self.rotary_dim > self.dim:
            raise ValueError(f"rotary_dim must be <= dim = {self.dim}, got {self.rotary_dim}")
        self.interleaved = _checks.boolean(interleaved, "interleaved")
        self.max_positions = None if max_positions is None else _checks.integer(max_positions, "max_positions", minimum=0)
        if scaling is not None and not isinstance(scaling, Mapping):  # dict("linear") raised an unnamed ValueError
            raise TypeError(f"scaling must be None or a dict, got {type(scaling).__name__}")
        self.scaling: Optional[Dict[str, Any]] = None if scaling is None else dict(scaling)
        parsed = parse_scaling(self.scaling, base)
        self.base, self._kind, self._params = parsed.base, parsed.kind, parsed.params
        if parsed.partial is not None and parsed.kind != "proportional":
            partial = parsed.rotary_dim(self.dim)
            if rotary_dim is not None and partial != self.rotary_dim:
                raise ValueError(f"rotary_dim = {self.rotary_dim} and scaling['partial_rotary_factor'] = "
                                 f"{parsed.partial} (int({self.dim} * {parsed.partial}) = {partial}) disagree: "
                                 "give one of them")
            self.rotary_dim = partial
        section = parsed.mrope_section if mrope_section is None else mrope_section
        if mrope_section is not None and parsed.mrope_section is not None and \
                [int(v) for v in mrope_section] != [int(v) for v in parsed.mrope_section]:
            raise ValueError(f"mrope_section = {tuple(mrope_section)} disagrees with scaling['mrope_section'] = "
                             f"{tuple(parsed.mrope_section)}")
        mrope_interleaved = _checks.boolean(mrope_interleaved, "mrope_interleaved") or bool(parsed.mrope_interleaved)
        _pair_axes(section, mrope_interleaved, self.rotary_dim // 2)  # checked once, here
        self.mrope_section: Optional[Tuple[int, ...]] = None if section is None else tuple(int(v) for v in section)
        self.mrope_interleaved = mrope_interleaved
        self._seq_len: Optional[int] = None
        self.inv_freq, self.attention_scaling = scheme_frequencies(self.rotary_dim, self.base, self._kind, self._params)
        self._tables: Optional[Tuple[np.ndarray, np.ndarray]] = None
        self.xpos_scale_base = None if xpos_scale_base is None else _checks.real(xpos_scale_base, "xpos_scale_base",
                                                                                  positive=True)
        if self.xpos_scale_base is not None and self.mrope_section is not None:
            raise ValueError("xpos_scale_base does not combine with mrope_section (which position would scale?)")

    @classmethod
    def from_config(cls, config: Any, *, layer_type: Any = None, max_positions: Any = None) -> "RotaryEmbedding":
        """The rotary embedding of a Hugging Face transformers model, read from its config.

        Parameters
        ----------
        config : transformers config or dict
            A ``PreTrainedConfig`` (read through ``config.to_dict()``), its dict, or a
            checkpoint's ``config.json`` (older names too: ``rope_scaling``, ``n_embd``,
            ``n_head``, ``rotary_pct``, ``rotary_emb_base``). A vision-language config is
            read through its ``text_config``. Read:

            - head dim: ``qk_rope_head_dim`` (DeepSeek's MLA), else ``head_dim``, else
              ``hidden_size // num_attention_heads``;
            - ``rope_parameters`` (or ``rope_scaling``) as :func:`rope_inv_freq`'s
              ``scaling``, ``rope_theta`` (in it or beside it; default 10000),
              ``partial_rotary_factor`` (in it or beside it) → ``rotary_dim``, GPT-J's
              ``rotary_dim``;
            - ``max_position_embeddings``: dynamic NTK's original length (as
              transformers reads it), and ``original_max_position_embeddings`` of
              llama3/yarn/longrope when absent (Phi-3's top-level value first), and
              ``factor`` of yarn/longrope when absent (their ratio);
            - M-RoPE: ``mrope_section`` (Qwen2/2.5-VL default (16, 24, 24); Qwen3-VL
              (24, 20, 20), interleaved), ``mrope_interleaved``;
            - GPT-J pairing (``interleaved=True``) for GPT-J, CodeGen, Cohere and configs
              with ``rope_interleave`` (DeepSeek-V3: its ``apply_rotary_pos_emb_interleave``
              returns the rotated pairs de-interleaved, first members then second members;
              posenc leaves each pair in place, so ``q·k`` is the same).
        layer_type : str, optional
            Which entry of a per-layer-type ``rope_parameters`` (Gemma 3/4:
            ``"sliding_attention"``, ``"full_attention"``); required there. Gemma 4's
            per-layer head dims (``per_layer_config``) are honoured.
        max_positions : int, optional
            As in the constructor.

        Returns
        -------
        RotaryEmbedding

        Raises
        ------
        TypeError
            ``config`` neither a config nor a dict.
        ValueError
            A config without rotary parameters or head dim, a per-layer-type config without
            ``layer_type`` (or an unknown one), and every bad value the constructor refuses
            (naming its key).

        Notes
        -----
        Transformers' dynamic NTK keeps the frequencies of the longest sequence seen
        until a call shorter than ``max_position_embeddings``; posenc's follow each
        call's own length (the same for a fresh model and any single call).

        Examples
        --------
        >>> import numpy as np, posenc
        >>> config = {"model_type": "phi", "hidden_size": 256, "num_attention_heads": 4,
        ...           "max_position_embeddings": 2048, "rope_parameters": {"rope_type": "default",
        ...           "rope_theta": 10000.0, "partial_rotary_factor": 0.5}}
        >>> rope = posenc.RotaryEmbedding.from_config(config)
        >>> rope.dim, rope.rotary_dim, rope.base
        (64, 32, 10000.0)
        >>> gemma = {"hidden_size": 64, "num_attention_heads": 2, "head_dim": 32,
        ...          "layer_types": ["sliding_attention", "full_attention"],
        ...          "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        ...                              "full_attention": {"rope_type": "linear", "factor": 8.0,
        ...                                                 "rope_theta": 1000000.0}}}
        >>> posenc.RotaryEmbedding.from_config(gemma, layer_type="full_attention").base
        1000000.0
        """
        return cls(**config_rotary(config, layer_type), max_positions=max_positions)

    def _at_length(self, seq_len: int) -> None:
        """Frequencies of a sequence-dependent scheme at ``seq_len`` (recomputed when it changes)."""
        if self._kind in SEQ_DEPENDENT and seq_len != self._seq_len:
            params = {**self._params, "seq_len": seq_len}
            self.inv_freq, self.attention_scaling = scheme_frequencies(self.rotary_dim, self.base, self._kind, params)
            self._seq_len = seq_len

    def __call__(self, q: Any, k: Any, positions: Any = None, offset: int = 0, *, seq_axis: int = -3,
                 inverse: bool = False, xpos_center: Any = 0, out_q: Any = None, out_k: Any = None
                 ) -> Tuple[Any, Any]:
        """Rotate q and k by this embedding's frequencies, in one pass (see :func:`apply_rope_qk`).

        Parameters
        ----------
        q, k : array_like of shape [..., seq, heads, dim] (seq_axis=-3) or [..., heads, seq, dim] (-2)
            Floating; any strides. The head counts may differ, dtypes too.
        positions : array_like of shape [seq] or [batch, seq], optional
            None: ``offset + arange(seq)``.
        offset : int or array_like of int, shape [batch]
            First position when ``positions`` is None (a KV-cache step); an
            array gives each batch row (axis 0) its own (see :func:`apply_rope`).
        seq_axis : {-3, -2}
        inverse : bool
            Rotate by −θ (the backward pass).
        xpos_center : float
            xPos's centre c (with ``xpos_scale_base``; see :func:`apply_rope_qk`).
            rotary-embedding-torch's ``rotate_queries_and_keys`` is ``seq_len // 2``.
        out_q, out_k : arrays of q's and k's shapes and dtypes, optional
            ``out_q=q, out_k=k`` rotates in place.

        Returns
        -------
        (q', k') : ndarrays of q's and k's shapes and dtypes (``out_q``/``out_k`` when given).
        """
        if (self._kind not in SEQ_DEPENDENT and self.mrope_section is None and self.mrope_interleaved is False
                and self.xpos_scale_base is None and type(xpos_center) is int and xpos_center == 0):
            # The same call as apply_rope_qk's with these frequencies, which a decode step's arguments take
            # through its small-call lane on the native backend (1.6-2 µs, where this path took ~20).
            return apply_rope_qk(q, k, positions, base=self.base, inv_freq=self.inv_freq,
                                 attention_scaling=self.attention_scaling, rotary_dim=self.rotary_dim,
                                 interleaved=self.interleaved, seq_axis=seq_axis, offset=offset, inverse=inverse,
                                 out_q=out_q, out_k=out_k)
        qa, ka = _checks.float_array(q, "q"), _checks.float_array(k, "k")
        params = rope_params(((qa, "q"), (ka, "k")), positions=positions, offset=offset, base=self.base, scaling=None,
                             inv_freq=self.inv_freq, attention_scaling=self.attention_scaling,
                             rotary_dim=self.rotary_dim, interleaved=self.interleaved, seq_axis=seq_axis,
                             inverse=inverse, mrope_section=self.mrope_section,
                             mrope_interleaved=self.mrope_interleaved)
        if self._kind in SEQ_DEPENDENT:
            self._at_length(_last_position(params, qa.shape[seq_axis]) + 1)
            params = params._replace(inv_freq=self.inv_freq, scale=self.attention_scaling)
        xpos = None if self.xpos_scale_base is None and type(xpos_center) is int and xpos_center == 0 else (
            xpos_args(self.xpos_scale_base, xpos_center))
        reads = caller_arrays(positions=positions, offset=offset)
        if xpos is None:
            plan: RopeRotationQK = rotation_qk(qa, ka, params, out_q=out_q, out_k=out_k, reads=reads)
        else:
            pq, pk = xpos_rotations(params, qa.shape[params.seq_axis], *xpos)
            plan = rotation_qk(qa, ka, pq, params_k=pk, out_q=out_q, out_k=out_k, reads=reads)
        return _execute(plan)  # type: ignore[no-any-return]

    def cos_sin(self, positions: Any, dtype: Any = np.float32) -> Tuple[np.ndarray, np.ndarray]:
        """The cos and sin tables of this embedding: ``a·cos(p·ω_j)`` and ``a·sin(p·ω_j)``.

        Parameters
        ----------
        positions : int or array_like of shape [n]
            ``n`` means ``arange(n)``; otherwise integer or float positions (finite).
        dtype : float32, float64, float16 or bfloat16
            Computed in float64, rounded once. float32 tables of integer
            positions below ``max_positions`` are read from the cache.

        Returns
        -------
        cos, sin : ndarrays of shape [n, rotary_dim/2]
            As :func:`rope_cos_sin` with this embedding's frequencies (for
            ``"dynamic"``/``"longrope"``, at the sequence length largest position + 1).

        Examples
        --------
        >>> import posenc
        >>> c, s = posenc.RotaryEmbedding(4, max_positions=8).cos_sin(3)
        >>> c.shape, s.dtype
        ((3, 2), dtype('float32'))
        """
        pos, n = _checks.positions(positions)
        dt = _checks.float_dtype(dtype)
        if self._kind in SEQ_DEPENDENT:
            self._at_length(n if pos is None else int(np.floor(pos.max(initial=-1.0))) + 1)
        elif self.max_positions and dt == np.float32 and n and (
                n <= self.max_positions if pos is None else
                pos.min() >= 0 and pos.max() < self.max_positions and (pos == np.floor(pos)).all()):
            if self._tables is None:
                self._tables = _execute(cos_sin(None, self.max_positions, inv_freq=self.inv_freq,
                                                scale=self.attention_scaling, dtype=dt))
            rows = np.arange(n) if pos is None else pos.astype(np.intp)
            return self._tables[0][rows], self._tables[1][rows]
        plan: RopeCosSin = cos_sin(pos, n, inv_freq=self.inv_freq, scale=self.attention_scaling, dtype=dt)
        return _execute(plan)  # type: ignore[no-any-return]

    @property
    def cos_cached(self) -> Optional[np.ndarray]:
        return None if self._tables is None else self._tables[0]

    @property
    def sin_cached(self) -> Optional[np.ndarray]:
        return None if self._tables is None else self._tables[1]

    def __repr__(self) -> str:
        xpos = "" if self.xpos_scale_base is None else f", xpos_scale_base={self.xpos_scale_base}"
        return (f"RotaryEmbedding(dim={self.dim}, base={self.base}, scaling={self.scaling!r}, "
                f"rotary_dim={self.rotary_dim}, interleaved={self.interleaved}, max_positions={self.max_positions}"
                f"{xpos})")


def _last_position(params: RopeParams, seq: int) -> int:
    """The largest position of a call of ``seq`` rows (−1 when there are none)."""
    if params.positions is None:
        return int(params.start) + seq - 1
    return int(np.floor(params.positions.max(initial=-1.0)))
