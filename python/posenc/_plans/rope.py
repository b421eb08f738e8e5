"""Plans of the rotary family (RoPE), and its shared maths: the frequencies and attention scaling of every
scaling scheme, M-RoPE's pair axes, the positions of a packed batch.

Rotation of feature pair (u, v) by angle θ = position·ω_j, scaled by the
scheme's attention scaling a (Su et al. 2021, "RoFormer", eq. 34):
    u' = a·(u·cos θ − v·sin θ),   v' = a·(v·cos θ + u·sin θ)
Pairs are (j, j + rotary_dim/2) (GPT-NeoX / Llama "rotate_half") or
(2j, 2j + 1) (GPT-J, the RoFormer paper, Meta's llama reference code).

The frequencies ω_j and the scaling a are computed here, once, in float64;
both executors rotate with these very numbers. A call's arguments are
checked in two steps that every entry point (``apply_rope``,
``apply_rope_qk``, ``RotaryEmbedding``) shares: :func:`rope_params` (what
the operands share: pairing, frequencies, scaling, M-RoPE, the position of
every row) and :func:`rotation` (one operand and its ``out``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any, Dict, FrozenSet, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from .. import _checks
from .._checks import Out

ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "llama3", "longrope", "proportional")
# Names model configs use for the same schemes: Phi-3's first 128k configs
# said "su" (LongRoPE). Qwen2-VL's say "type": "mrope" next to their
# "rope_type" (M-RoPE: default frequencies unless rope_type says otherwise;
# the sections are apply_rope's mrope_section).
_TYPE_ALIASES = {"su": "longrope", "mrope": "default"}

# (required keys, optional keys) per scheme, as transformers' config
# validation (RotaryEmbeddingConfigMixin._validate_*_rope_parameters) lists
# them, plus the `seq_len` the dynamic schemes are evaluated at.
_KEYS: Dict[str, Tuple[FrozenSet[str], FrozenSet[str]]] = {
    "default": (frozenset(), frozenset()),
    "linear": (frozenset({"factor"}), frozenset()),
    "dynamic": (frozenset({"factor", "original_max_position_embeddings"}), frozenset({"seq_len"})),
    "yarn": (
        frozenset({"factor", "original_max_position_embeddings"}),
        frozenset({"beta_fast", "beta_slow", "attention_factor", "mscale", "mscale_all_dim", "truncate"}),
    ),
    "llama3": (
        frozenset({"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}),
        frozenset(),
    ),
    "longrope": (
        frozenset({"short_factor", "long_factor", "original_max_position_embeddings"}),
        frozenset({"factor", "attention_factor", "seq_len"}),
    ),
    # Gemma's p-RoPE (transformers' `_compute_proportional_rope_parameters`).
    "proportional": (frozenset(), frozenset({"factor", "partial_rotary_factor"})),
}
# Keys of every Transformers v5 `rope_parameters` dict, read by parse_scaling itself.
_COMMON_KEYS = frozenset({"type", "rope_type", "rope_theta", "partial_rotary_factor", "mrope_section",
                          "mrope_interleaved"})
# Schemes whose frequencies follow the sequence length (scaling['seq_len']).
SEQ_DEPENDENT = ("dynamic", "longrope")


# ------------------------------------------------------------------ plans


class RopeParams(NamedTuple):
    """The rotation every operand of one call undergoes (q and k share it), and the position of every row."""

    seq_axis: int  # -3 ([..., seq, heads, head_dim]) or -2 ([..., heads, seq, head_dim])
    rotary_dim: int
    inv_freq: np.ndarray  # float64 [rotary_dim / 2]
    scale: float  # attention scaling (the kernels negate sin for inverse)
    pair_axis: Optional[np.ndarray]  # int64 [rotary_dim / 2]: positions axis of each pair (M-RoPE)
    interleaved: bool
    inverse: bool
    positions: Optional[np.ndarray]  # float64 [axes, groups, seq], C order; None: start + arange(seq)
    start: float
    grouped: bool  # the groups of positions follow the operands' axis 0 (the batch)
    # The caller's cos and sin (apply_rope(cos=, sin=)), float64 [groups, seq, rotary_dim / 2], C order, which
    # replace the angles (positions, start, inv_freq unused).
    tables: Optional[Tuple[np.ndarray, np.ndarray]] = None


class RopeRotation(NamedTuple):
    """``apply_rope``: ``x`` rotated into ``out`` (or a new array)."""

    x: np.ndarray
    params: RopeParams
    out: Optional[Out]


class RopeRotationQK(NamedTuple):
    """``apply_rope_qk`` and ``RotaryEmbedding.__call__``: q and k by the same rotation, in one pass."""

    q: RopeRotation
    k: RopeRotation


class RopeCosSin(NamedTuple):
    """``rope_cos_sin``: ``a·cos(p·ω)`` and ``a·sin(p·ω)``, each ``[n, len(inv_freq)]``."""

    positions: Optional[np.ndarray]  # float64 [n]; None: arange(n)
    n: int
    inv_freq: np.ndarray
    scale: float
    dtype: np.dtype


# ------------------------------------------------------------------ scaling schemes


class _DefaultBase(float):
    """The default ``base`` (10000.0): a value of its own, so that a ``rope_theta`` in ``scaling`` may replace it."""

    def __repr__(self) -> str:
        return "10000.0"


DEFAULT_BASE: float = _DefaultBase(10000.0)


class Scaling(NamedTuple):
    """A checked ``scaling`` dict: the frequency scheme and what else a Transformers config puts in it."""

    kind: str
    params: Dict[str, Any]  # the scheme's frequency parameters (None values dropped)
    base: float  # ``base``, or ``rope_theta`` when ``base`` was not passed
    partial: Optional[float]  # partial_rotary_factor
    mrope_section: Optional[Any]
    mrope_interleaved: Optional[bool]

    def rotary_dim(self, dim: int) -> int:
        """The rotated features of a head of ``dim``: ``int(dim·partial_rotary_factor)`` as Transformers
        computes it, except for p-RoPE, whose zero frequencies rotate nothing (all of ``dim``)."""
        if self.partial is None or self.kind == "proportional":
            return dim
        rdim = int(dim * self.partial)
        if rdim < 2 or rdim % 2:
            raise ValueError(f"scaling['partial_rotary_factor'] = {self.partial} gives int({dim} * "
                             f"{self.partial}) = {rdim} rotated features: must be even and > 0")
        return rdim


def _scaling_type(scaling: Dict[str, Any]) -> str:
    names = [scaling[k] for k in ("type", "rope_type") if scaling.get(k) is not None]
    if len(names) == 2 and names[0] == "mrope":  # Qwen2-VL: "type" marks M-RoPE, "rope_type" is the scheme
        names = names[1:]
    for name in names:
        if not isinstance(name, str):
            raise ValueError(f"scaling['rope_type'] must be a string, got {name!r}")
    if len(names) == 2 and _TYPE_ALIASES.get(names[0], names[0]) != _TYPE_ALIASES.get(names[1], names[1]):
        raise ValueError(f"scaling['type'] = {names[0]!r} and scaling['rope_type'] = {names[1]!r} disagree")
    name = names[-1] if names else "default"
    name = _TYPE_ALIASES.get(name, name)
    if name not in ROPE_TYPES:
        raise ValueError(f"scaling['rope_type'] must be one of {', '.join(map(repr, ROPE_TYPES))}, got {name!r}")
    return name


def parse_scaling(scaling: Any, base: Any) -> Scaling:
    """Check a ``scaling`` dict (a Transformers ``rope_parameters`` as it is) and resolve the base:
    ``rope_theta`` sets it when ``base`` was not passed (is :data:`DEFAULT_BASE`); both given must agree."""
    if scaling is None:
        return Scaling("default", {}, _checks.base(base), None, None, None)
    if not isinstance(scaling, dict):
        raise TypeError(f"scaling must be None or a dict, got {type(scaling).__name__}")
    if scaling and all(isinstance(v, dict) or v is None for v in scaling.values()):
        keys = ", ".join(map(repr, scaling))
        raise ValueError(f"scaling is a per-layer-type dict ({keys}): pass one entry, e.g. scaling[{next(iter(scaling))!r}], "
                         "or build RotaryEmbedding.from_config(config, layer_type=...)")
    kind = _scaling_type(scaling)
    required, optional = _KEYS[kind]
    for key in scaling:
        if key not in required | optional | _COMMON_KEYS:
            allowed = ", ".join(sorted(required | optional)) or "none"
            raise ValueError(f"scaling[{key!r}] is not a parameter of rope_type {kind!r} (its keys: {allowed})")
    params = {k: v for k, v in scaling.items() if v is not None and k not in _COMMON_KEYS}
    missing = sorted(required - params.keys())
    if missing:
        hint = (" (Transformers uses the config's max_position_embeddings: add it, or build "
                "RotaryEmbedding.from_config(config))" if missing[0] == "original_max_position_embeddings" else "")
        raise ValueError(f"rope_type {kind!r} needs scaling[{missing[0]!r}]{hint}")
    theta = scaling.get("rope_theta")
    if theta is not None:
        theta = _number({"rope_theta": theta}, "rope_theta")
        if theta == 1.0:
            raise ValueError("scaling['rope_theta'] must not be 1 (every frequency would be equal)")
    if base is DEFAULT_BASE:
        base = DEFAULT_BASE if theta is None else theta
    base = _checks.base(base)
    if theta is not None and theta != base:
        raise ValueError(f"scaling['rope_theta'] = {theta} disagrees with base = {base}: pass one of them")
    partial = None
    if scaling.get("partial_rotary_factor") is not None:
        partial = _number(scaling, "partial_rotary_factor")
        if partial > 1.0:
            raise ValueError(f"scaling['partial_rotary_factor'] must be in (0, 1], got {partial}")
        if kind == "proportional":
            params["partial_rotary_factor"] = partial
    interleaved = scaling.get("mrope_interleaved")
    if interleaved is not None:
        interleaved = _flag(scaling, "mrope_interleaved", False)
    return Scaling(kind, params, base, partial, scaling.get("mrope_section"), interleaved)


def normalise_scaling(scaling: Any, base: float) -> Tuple[str, Dict[str, Any]]:
    """The scheme's name and its frequency parameters (:func:`parse_scaling` without the rest)."""
    parsed = parse_scaling(scaling, base)
    return parsed.kind, parsed.params


# Every bad value in a scaling dict is a ValueError naming its key (a config is data, not a call's argument).

def _number(params: Dict[str, Any], key: str, *, minimum_exclusive: Optional[float] = 0.0,
            minimum: Optional[float] = None) -> float:
    value = params[key]
    try:
        result = _checks.real(value, "")
    except TypeError:
        raise ValueError(f"scaling[{key!r}] must be a real number, got {value!r}") from None
    except ValueError:  # not finite
        raise ValueError(f"scaling[{key!r}] must be finite, got {float(value)}") from None
    if minimum_exclusive is not None and not result > minimum_exclusive:
        raise ValueError(f"scaling[{key!r}] must be > {minimum_exclusive:g}, got {result}")
    if minimum is not None and result < minimum:
        raise ValueError(f"scaling[{key!r}] must be >= {minimum:g}, got {result}")
    return result


def _flag(params: Dict[str, Any], key: str, default: bool) -> bool:
    value = params.get(key, default)
    try:
        return _checks.boolean(value, f"scaling[{key!r}]")
    except TypeError:
        raise ValueError(f"scaling[{key!r}] must be a bool, got {value!r}") from None


def _factor_list(params: Dict[str, Any], key: str, half: int) -> np.ndarray:
    value = params[key]
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"scaling[{key!r}] must be a list of numbers, got {type(value).__name__}") from None
    if arr.ndim != 1 or arr.shape[0] != half:
        raise ValueError(f"scaling[{key!r}] must hold dim/2 = {half} numbers, got shape {arr.shape}")
    if not (np.isfinite(arr).all() and (arr > 0).all()):
        raise ValueError(f"scaling[{key!r}] must hold finite numbers > 0")
    return arr


def _seq_len(params: Dict[str, Any]) -> Optional[int]:
    if "seq_len" not in params:
        return None
    try:
        return _checks.integer(params["seq_len"], "scaling['seq_len']", minimum=0)
    except TypeError as exc:
        raise ValueError(str(exc)) from None


def _default_inv_freq(dim: int, base: float) -> np.ndarray:
    # ω_j = 1 / base^(2j/dim), in the form every reference implementation
    # writes it (RoFormer, GPT-NeoX, transformers' default rope), here in float64.
    return 1.0 / base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)


@functools.lru_cache(maxsize=64)
def default_frequencies(dim: int, base: Any) -> np.ndarray:
    """Read-only default frequencies of a validated ``dim`` and a ``base`` checked here (a ValueError or
    TypeError naming it), cached: a decode step neither recomputes nor rechecks them.

    Only for a ``base`` of type float or int (hashable, and equal only to numbers equally valid).
    """
    w = _default_inv_freq(dim, _checks.base(base))
    w.flags.writeable = False
    return w


def _yarn_mscale(factor: float, mscale: float = 1.0) -> float:
    # YaRN's attention temperature sqrt(1/t) = 0.1·ln(s) + 1 (Peng et al. 2023,
    # eq. 22), with DeepSeek-V2's multiplier on ln(s) (`yarn_get_mscale`).
    return 1.0 if factor <= 1 else 0.1 * mscale * math.log(factor) + 1.0


def _yarn(dim: int, base: float, p: Dict[str, Any]) -> Tuple[np.ndarray, float]:
    """YaRN (Peng et al. 2023, arXiv:2309.00071), as in transformers' `_compute_yarn_parameters`
    and DeepSeek-V2/V3's `DeepseekV3YarnRotaryEmbedding`."""
    factor = _number(p, "factor")
    original = _number(p, "original_max_position_embeddings")
    beta_fast = _number(p, "beta_fast") if "beta_fast" in p else 32.0
    beta_slow = _number(p, "beta_slow") if "beta_slow" in p else 1.0
    if beta_fast < beta_slow:
        raise ValueError(f"scaling['beta_fast'] ({beta_fast}) must be >= scaling['beta_slow'] ({beta_slow})")
    truncate = _flag(p, "truncate", True)
    if "attention_factor" in p:
        attention = _number(p, "attention_factor")
    else:
        # DeepSeek's definition: mscale (default 1) over mscale_all_dim
        # (default 0, i.e. a denominator of 1). It equals transformers'
        # whenever both or neither key is given (every published config);
        # transformers ignores a lone mscale or mscale_all_dim.
        mscale = _number(p, "mscale", minimum_exclusive=None, minimum=0.0) if "mscale" in p else 1.0
        mscale_all = _number(p, "mscale_all_dim", minimum_exclusive=None, minimum=0.0) if "mscale_all_dim" in p else 0.0
        attention = _yarn_mscale(factor, mscale) / _yarn_mscale(factor, mscale_all)

    def correction_dim(rotations: float) -> float:
        # The feature index whose wavelength fits `rotations` times into the
        # original context (YaRN eq. 15-17; `find_correction_dim`).
        return dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # as the reference implementations: avoid 0/0 in the ramp
    ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
    pos_freqs = base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    extrapolation, interpolation = 1.0 / pos_freqs, 1.0 / (factor * pos_freqs)
    # ramp 0 (high frequencies): keep; ramp 1 (low frequencies): interpolate by `factor`.
    return interpolation * ramp + extrapolation * (1.0 - ramp), attention


def _llama3(dim: int, base: float, p: Dict[str, Any]) -> Tuple[np.ndarray, float]:
    """Llama 3.1's frequency-dependent interpolation (Meta's `apply_scaling` in
    llama-models' reference `model.py`; transformers' `_compute_llama3_parameters`)."""
    factor = _number(p, "factor")
    low_ff = _number(p, "low_freq_factor")
    high_ff = _number(p, "high_freq_factor")
    original = _number(p, "original_max_position_embeddings")
    if not low_ff < high_ff:
        raise ValueError(f"scaling['low_freq_factor'] ({low_ff}) must be < scaling['high_freq_factor'] ({high_ff})")
    inv_freq = _default_inv_freq(dim, base)
    low_wavelen, high_wavelen = original / low_ff, original / high_ff
    wavelen = 2 * math.pi / inv_freq
    # Short wavelengths stay, long ones are divided by factor, and in between
    # the two are blended linearly in original/wavelen.
    scaled = np.where(wavelen > low_wavelen, inv_freq / factor, inv_freq)
    smooth = (original / wavelen - low_ff) / (high_ff - low_ff)
    blended = (1 - smooth) * scaled / factor + smooth * scaled
    medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
    return np.where(medium, blended, scaled), 1.0


def _longrope(dim: int, base: float, p: Dict[str, Any]) -> Tuple[np.ndarray, float]:
    """LongRoPE (Ding et al. 2024, arXiv:2402.13753) as Phi-3/Phi-3.5/Phi-4-mini use it
    (transformers' `_compute_longrope_parameters`, Phi-3's `Phi3LongRoPEScaledRotaryEmbedding`)."""
    half = dim // 2
    short = _factor_list(p, "short_factor", half)
    long = _factor_list(p, "long_factor", half)
    original = _number(p, "original_max_position_embeddings", minimum_exclusive=1.0)
    seq_len = _seq_len(p)
    if "attention_factor" in p:
        attention = _number(p, "attention_factor")
    elif "factor" in p:
        factor = _number(p, "factor")
        # sqrt(1 + ln(s)/ln(L_original)) (LongRoPE; Phi-3's `scaling_factor`).
        attention = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))
    else:
        raise ValueError("rope_type 'longrope' needs scaling['factor'] (max_position_embeddings / "
                         "original_max_position_embeddings) or scaling['attention_factor']")
    # The long factors serve sequences longer than the original context.
    ext = long if seq_len is not None and seq_len > original else short
    return 1.0 / (ext * base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)), attention


def _proportional(dim: int, base: float, p: Dict[str, Any]) -> Tuple[np.ndarray, float]:
    """Gemma's p-RoPE (transformers' `_compute_proportional_rope_parameters`): the first
    int(partial_rotary_factor·dim/2) pairs get base^(−2i/dim) (the whole head's dim), the others
    frequency 0 (they pass through), all divided by ``factor``."""
    partial = p.get("partial_rotary_factor", 1.0)
    factor = _number(p, "factor") if "factor" in p else 1.0
    angles = int(partial * dim // 2)  # as transformers writes it
    inv_freq = np.zeros(dim // 2)
    inv_freq[:angles] = 1.0 / base ** (np.arange(0, 2 * angles, 2, dtype=np.float64) / dim)
    return inv_freq / factor, 1.0


def scheme_frequencies(dim: int, base: float, kind: str, params: Dict[str, Any]) -> Tuple[np.ndarray, float]:
    """``(inv_freq, attention_scaling)`` of a normalised scheme (:func:`normalise_scaling`), validated ``dim``/``base``.

    Each parameter's value is checked here, where the scheme reads it.
    """
    if kind == "default":
        return _default_inv_freq(dim, base), 1.0
    if kind == "linear":
        # Position interpolation (Chen et al. 2023; kaiokendev): θ = (p/s)·ω.
        return _default_inv_freq(dim, base) / _number(params, "factor"), 1.0
    if kind == "dynamic":
        # Dynamic NTK-aware scaling (bloc97, emozilla; transformers'
        # `_compute_dynamic_ntk_parameters`): the base grows with the sequence,
        # base' = base·(s·L/L_orig − (s − 1))^(dim/(dim−2)), L = max(seq_len, L_orig).
        factor = _number(params, "factor")
        original = _number(params, "original_max_position_embeddings")
        length = max(float(_seq_len(params) or 0), original)
        if dim > 2:  # with one pair, ω_0 = base'^0 = 1 whatever the base
            base = base * ((factor * length / original) - (factor - 1)) ** (dim / (dim - 2))
        return _default_inv_freq(dim, base), 1.0
    if kind == "yarn":
        return _yarn(dim, base, params)
    if kind == "llama3":
        return _llama3(dim, base, params)
    if kind == "proportional":
        return _proportional(dim, base, params)
    return _longrope(dim, base, params)


def rope_inv_freq(dim: int, *, base: float = DEFAULT_BASE, scaling: Any = None) -> Tuple[np.ndarray, float]:
    """RoPE frequencies ω_j and attention scaling of a scaling scheme, in float64.

    Parameters
    ----------
    dim : int
        Rotary dimension (even, > 0): the head_dim, or ``int(head_dim * partial_rotary_factor)``
        when ``scaling`` does not carry ``partial_rotary_factor`` itself.
    base : float
        ``rope_theta`` (> 0, not 1). Default 10000.0, or ``scaling["rope_theta"]`` when present.
    scaling : dict, optional
        A model config's ``rope_scaling``, or a Transformers v5 ``rope_parameters``
        dict as it is (one entry of a per-layer-type dict: ``config.rope_parameters["full_attention"]``).
        ``"type"`` or ``"rope_type"`` (they must agree; ``"type": "mrope"`` marks
        M-RoPE and agrees with any ``rope_type``) is one of:

        - ``"default"`` (or absent; ``"mrope"`` too): ω_j = base^(-2j/dim).
        - ``"linear"``: ``factor``; ω_j / factor (position interpolation).
        - ``"dynamic"``: ``factor``, ``original_max_position_embeddings``
          (the config's ``max_position_embeddings``, which transformers uses
          here: :meth:`RotaryEmbedding.from_config` adds it), ``seq_len`` (default:
          the original length). NTK-aware base
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
        - ``"proportional"`` (Gemma's p-RoPE): ``partial_rotary_factor`` p (default 1),
          ``factor`` (default 1): the first int(p·dim/2) pairs get base^(-2j/dim),
          the others frequency 0 (unrotated), all divided by ``factor``.

        Keys every type may carry, as Transformers v5 configs do:
        ``rope_theta`` sets the base when ``base`` is not passed (both given
        must agree); ``partial_rotary_factor`` p (0 < p ≤ 1) rotates the first
        int(dim·p) features (even) as Transformers computes them: the frequencies
        are those of dimension int(dim·p), and ``int(dim·p)/2`` are returned
        (p-RoPE: see above); ``mrope_section`` and ``mrope_interleaved`` are
        :func:`apply_rope`'s M-RoPE (checked here against the frequency count).
        A whole per-layer-type dict is refused (pass one entry). Values of
        None count as absent. ``factor`` is required where transformers would fall back
        to ``max_position_embeddings / original_max_position_embeddings``
        (yarn; longrope without ``attention_factor``): pass that ratio, or use
        :meth:`RotaryEmbedding.from_config`. Unknown types or keys, missing
        required keys and invalid values raise ValueError naming the key.

    Returns
    -------
    inv_freq : ndarray float64 [dim/2] (``[int(dim·partial_rotary_factor)/2]`` with that key)
    attention_scaling : float
        Multiplies cos and sin (YaRN's mscale, LongRoPE's scaling factor; 1 otherwise).

    Notes
    -----
    Each scheme follows its authors' code and Hugging Face transformers'
    ``modeling_rope_utils`` parameter for parameter, evaluated in float64
    (transformers rounds ω to float32; the difference is below 1e-7 relative).
    The formulas and their sources are in ``posenc/_plans/rope.py``. Both
    backends use these frequencies (this function is the same in
    :mod:`posenc.reference`).

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
    >>> # A Transformers v5 rope_parameters as it is (Phi-2): base from rope_theta, half the features.
    >>> w, a = posenc.rope_inv_freq(8, scaling={"rope_type": "default", "rope_theta": 100.0,
    ...                                         "partial_rotary_factor": 0.5})
    >>> [float(v) for v in w]                        # 100^(-2i/4)
    [1.0, 0.1]
    """
    dim = _checks.even_dim(dim)
    parsed = parse_scaling(scaling, base)
    rdim = parsed.rotary_dim(dim)
    if parsed.mrope_section is not None or parsed.mrope_interleaved:
        _pair_axes(parsed.mrope_section, bool(parsed.mrope_interleaved), rdim // 2, "scaling['mrope_section']")
    return scheme_frequencies(rdim, parsed.base, parsed.kind, parsed.params)


# ------------------------------------------------------------------ M-RoPE and packed batches


def mrope_pair_axes(section: Sequence[int], interleaved: bool) -> np.ndarray:
    """Which positions axis each frequency pair takes its angle from (M-RoPE), int64 [sum(section)].

    Contiguous (Qwen2-VL, Qwen2.5-VL ``apply_multimodal_rotary_pos_emb``): the
    first section[0] pairs take axis 0 (time), the next section[1] axis 1
    (height), the last section[2] axis 2 (width).
    Interleaved (Qwen3-VL ``apply_interleaved_mrope``): pair j takes axis
    j mod 3 while j < 3·section[j mod 3], otherwise axis 0.
    """
    if interleaved:
        half = int(sum(section))
        j = np.arange(half)
        sec = np.asarray(section)[j % 3]
        return np.where(j < 3 * sec, j % 3, 0).astype(np.int64)
    return np.repeat(np.arange(len(section), dtype=np.int64), section)


def _pair_axes(mrope_section: Any, mrope_interleaved: Any, half: int, name: str = "mrope_section"
               ) -> Optional[np.ndarray]:
    interleaved = _checks.boolean(mrope_interleaved, "mrope_interleaved")
    if mrope_section is None:
        if interleaved:
            raise ValueError("mrope_interleaved=True needs mrope_section")
        return None
    if isinstance(mrope_section, (str, bytes)) or not hasattr(mrope_section, "__len__"):
        raise TypeError(f"{name} must be a sequence of integers, got {type(mrope_section).__name__}")
    section = [_checks.integer(s, name, minimum=0) for s in mrope_section]
    if len(section) != 3:
        raise ValueError(f"{name} must hold 3 sections (t, h, w), got {len(section)}")
    if sum(section) != half:
        raise ValueError(f"{name} must sum to rotary_dim/2 = {half}, got {sum(section)} ({tuple(section)})")
    return mrope_pair_axes(section, interleaved)


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
    arr = _checks.as_array(cu_seqlens, "cu_seqlens")
    if arr.ndim != 1 or arr.shape[0] < 1:
        raise ValueError(f"cu_seqlens must be a non-empty 1-D array, got shape {arr.shape}")
    cu = _checks.integer_array(arr, "cu_seqlens").astype(np.int64)
    if cu[0] != 0:
        raise ValueError(f"cu_seqlens must start at 0, got {int(cu[0])}")
    lengths = np.diff(cu)
    if (lengths < 0).any():
        raise ValueError("cu_seqlens must be non-decreasing")
    total = int(cu[-1])
    return np.arange(total, dtype=np.int64) - np.repeat(cu[:-1], lengths)


# ------------------------------------------------------------------ the three steps of a rotation's plan


def _given_frequencies(inv_freq: Any, half: int) -> np.ndarray:
    freqs = np.asarray(_checks.as_array(inv_freq, "inv_freq"))
    if freqs.dtype.kind not in "fiu" or freqs.shape != (half,):
        raise ValueError(f"inv_freq must be a real vector of rotary_dim/2 = {half} entries, got "
                         f"shape {freqs.shape} and dtype {freqs.dtype}")
    freqs = np.require(freqs, np.float64, ["C", "A"])  # aligned: the kernels load doubles
    if not np.isfinite(freqs).all():
        raise ValueError("inv_freq must be finite")
    return freqs


def rope_params(operands: Sequence[Tuple[np.ndarray, str]], *, positions: Any, offset: Any, base: Any,
                scaling: Any, inv_freq: Any, attention_scaling: Any, rotary_dim: Any, interleaved: Any,
                seq_axis: Any, inverse: Any, mrope_section: Any, mrope_interleaved: Any, cos: Any = None,
                sin: Any = None) -> RopeParams:
    """Check the arguments every operand shares against the operands (floating arrays with their names), once.

    ``operands``: x alone, or q and k, which share the layout, the batch, the
    sequence and the rotated features (rotary_dim, by default their common
    head_dim, which must then be even and > 0).
    """
    if (scaling is None and inv_freq is None and cos is None and sin is None
            and rotary_dim is None and attention_scaling is None and mrope_section is None
            and mrope_interleaved is False and type(offset) is int and type(base) in _PLAIN_BASES
            and type(interleaved) is bool and type(inverse) is bool and type(seq_axis) is int):
        common = _common_case(operands, positions, offset, base, seq_axis, interleaved, inverse)
        if common is not None:
            return common
    interleaved = _checks.boolean(interleaved, "interleaved")
    inverse = _checks.boolean(inverse, "inverse")
    # -3.0 == -3, so a float passed the value test and failed later as an index (a TypeError
    # that did not name seq_axis): integers only.
    if type(seq_axis) is not int and (isinstance(seq_axis, (bool, np.bool_)) or not isinstance(seq_axis, np.integer)) \
            or seq_axis not in (-3, -2):
        raise ValueError(f"seq_axis must be -3 ([..., seq, heads, dim]) or -2 ([..., heads, seq, dim]), got {seq_axis!r}")
    seq_axis = int(seq_axis)
    first, first_name = operands[0]
    rdim = None if rotary_dim is None else _checks.even_dim(rotary_dim, "rotary_dim")
    for x, name in operands:
        if x.ndim < -seq_axis:
            layout = "[..., seq, heads, head_dim]" if seq_axis == -3 else "[..., seq, head_dim]"
            raise ValueError(f"{name} must have shape {layout} (at least {-seq_axis} axes), got shape {x.shape}")
        if rdim is not None:
            if rdim > x.shape[-1]:
                raise ValueError(f"rotary_dim must be <= head_dim = {x.shape[-1]}, got {rdim}")
        elif x.shape[-1] % 2:
            raise ValueError(f"{name}.shape[-1] (head_dim) must be even, got {x.shape[-1]}")
        elif x.shape[-1] != first.shape[-1]:
            raise ValueError(f"{first_name} and {name} have head_dim {first.shape[-1]} and {x.shape[-1]}: pass "
                             "rotary_dim (<= both) to rotate the same features of each")
        if x.shape[seq_axis] != first.shape[seq_axis]:
            raise ValueError(f"{first_name} and {name} must have the same seq length, got {first.shape} and {x.shape}")
    if rdim is None:
        rdim = int(first.shape[-1])
    if rdim == 0:
        raise ValueError(f"{first_name}.shape[-1] (head_dim) must be > 0")
    if cos is not None or sin is not None:
        _alone_with_tables(positions=positions, offset=offset, base=base, scaling=scaling, inv_freq=inv_freq,
                           attention_scaling=attention_scaling, mrope_section=mrope_section,
                           mrope_interleaved=mrope_interleaved)
        c, s = caller_tables(cos, sin, operands, seq_axis, rdim, interleaved)
        return RopeParams(seq_axis, rdim, _no_frequencies(rdim // 2), 1.0, None, interleaved, inverse, None, 0.0,
                          c.shape[0] != 1, (c, s))
    if inv_freq is not None:
        if scaling is not None:
            raise ValueError("give either inv_freq or scaling, not both")
        freqs = _given_frequencies(inv_freq, rdim // 2)
        _checks.base(base)
        scale = 1.0
    elif scaling is None:
        freqs = default_frequencies(rdim, base if type(base) in (float, int) else 10000.0 if base is DEFAULT_BASE
                                    else _checks.base(base))
        scale = 1.0
    else:
        rdim, freqs, scale, mrope_section, mrope_interleaved = _scaled(
            scaling, base, int(first.shape[-1]), rdim, rotary_dim is not None, mrope_section, mrope_interleaved)
    if attention_scaling is not None:
        scale = _checks.real(attention_scaling, "attention_scaling")
    pair_axis = None if mrope_section is None and mrope_interleaved is False else (
        _pair_axes(mrope_section, mrope_interleaved, rdim // 2))
    axes = 1 if pair_axis is None else 3
    if _per_row(offset):  # one first position per batch row
        if positions is not None:
            raise ValueError("give either positions or offset, not both")
        values = _offset_rows(offset, operands, seq_axis, axes)
        return RopeParams(seq_axis, rdim, freqs, scale, pair_axis, interleaved, inverse, values, 0.0,
                          values.shape[1] != 1)
    start = _checks.offset(offset, first.shape[seq_axis])  # positions exact in float64
    if positions is None:
        return RopeParams(seq_axis, rdim, freqs, scale, pair_axis, interleaved, inverse, None, float(start), False)
    values, grouped = _rows(positions, start, operands, seq_axis, axes)
    return RopeParams(seq_axis, rdim, freqs, scale, pair_axis, interleaved, inverse, values, 0.0, grouped)


_PLAIN_BASES = (float, int, type(DEFAULT_BASE))


def _common_case(operands: Sequence[Tuple[np.ndarray, str]], positions: Any, offset: int, base: Any,
                 seq_axis: int, interleaved: bool, inverse: bool) -> Optional[RopeParams]:
    """:func:`rope_params` of a decode step's arguments (default frequencies, every feature rotated,
    consecutive positions from an int offset or an integer array of positions shared by the batch, all
    of plain types), or None when anything needs the full checks (which then raise the errors). The same
    result as the full path, in a fraction of its time."""
    if seq_axis != -3 and seq_axis != -2:
        return None
    first = operands[0][0].shape
    if len(first) < -seq_axis:
        return None
    dim, seq = first[-1], first[seq_axis]
    if dim == 0 or dim % 2:
        return None
    for x, _ in operands[1:]:
        if x.ndim < -seq_axis or x.shape[-1] != dim or x.shape[seq_axis] != seq:
            return None
    if positions is None:
        if offset and (abs(offset) > _checks.MAX_EXACT_POSITION or
                       abs(offset + max(seq - 1, 0)) > _checks.MAX_EXACT_POSITION):
            return None
        values = None
    else:
        # What _rows makes of an integer ndarray [seq] or [1, seq] (integers are finite; one group, so no
        # batch to check): float64 [1, 1, seq], C order. Anything else takes the full checks.
        if offset or type(positions) is not np.ndarray or positions.dtype.kind not in "iu" or \
                positions.shape not in ((seq,), (1, seq)):
            return None
        values = positions.astype(np.float64, order="C").reshape(1, 1, seq)
    freqs = default_frequencies(dim, 10000.0 if base is DEFAULT_BASE else base)
    return _new_params((seq_axis, dim, freqs, 1.0, None, interleaved, inverse, values, float(offset), False, None))


# RopeParams without NamedTuple's keyword handling (every field, in order): the fast lane builds one per call.
_new_params = functools.partial(tuple.__new__, RopeParams)


def _same_section(a: Any, b: Any) -> bool:
    try:
        return [int(v) for v in a] == [int(v) for v in b]
    except (TypeError, ValueError):
        return False


def _scaled(scaling: Any, base: Any, head_dim: int, rdim: int, rdim_given: bool, mrope_section: Any,
            mrope_interleaved: Any) -> Tuple[int, np.ndarray, float, Any, Any]:
    """A ``scaling`` dict's frequencies for a head of ``rdim`` features (``rotary_dim`` when given), its
    partial_rotary_factor's rotary dim and its M-RoPE keys merged with the call's."""
    parsed = parse_scaling(scaling, base)
    if parsed.partial is not None and parsed.kind != "proportional":
        partial = parsed.rotary_dim(head_dim)
        if rdim_given and partial != rdim:  # rotary_dim = int(head_dim·partial_rotary_factor) is fine
            raise ValueError(f"rotary_dim = {rdim} and scaling['partial_rotary_factor'] = {parsed.partial} "
                             f"(int({head_dim} * {parsed.partial}) = {partial}) disagree: give one of them")
        rdim = partial
    if parsed.mrope_section is not None:
        if mrope_section is not None and not _same_section(mrope_section, parsed.mrope_section):
            raise ValueError(f"mrope_section = {tuple(mrope_section)} disagrees with scaling['mrope_section'] = "
                             f"{tuple(parsed.mrope_section)}")
        mrope_section = parsed.mrope_section
    if parsed.mrope_interleaved is not None:
        if mrope_interleaved is True and not parsed.mrope_interleaved:
            raise ValueError("mrope_interleaved=True disagrees with scaling['mrope_interleaved'] = False")
        mrope_interleaved = mrope_interleaved or parsed.mrope_interleaved
    freqs, scale = scheme_frequencies(rdim, parsed.base, parsed.kind, parsed.params)
    return rdim, freqs, scale, mrope_section, mrope_interleaved


def _rows(positions: Any, start: int, operands: Sequence[Tuple[np.ndarray, str]], seq_axis: int, axes: int
          ) -> Tuple[np.ndarray, bool]:
    """``positions`` [seq] / [batch, seq] ([axes, ...] with M-RoPE) as float64 [axes, groups, seq], and
    whether the groups follow the operands' axis 0 (the batch)."""
    if start != 0:
        raise ValueError("give either positions or offset, not both")
    (first, first_name) = operands[0]
    seq = first.shape[seq_axis]
    arr = _checks.as_array(positions, "positions")
    values = _checks.position_values(arr, "positions")
    lead = (axes,) if axes > 1 else ()
    if values.ndim == len(lead) + 1 and values.shape[:len(lead)] == lead:
        values = values.reshape(lead + (1,) + values.shape[-1:])
    if values.ndim != len(lead) + 2 or values.shape[:len(lead)] != lead:
        expected = f"[{'axes, ' if axes > 1 else ''}seq] or [{'axes, ' if axes > 1 else ''}batch, seq]"
        raise ValueError(f"positions must have shape {expected}, got {arr.shape}")
    if values.shape[-1] != seq:
        raise ValueError(f"positions has {values.shape[-1]} entries per row but {first_name} has seq length {seq}")
    groups = values.shape[-2]
    values = np.ascontiguousarray(values.reshape(axes, groups, seq))
    if groups == 1:
        return values, False
    for x, name in operands:
        if x.ndim + seq_axis == 0 or x.shape[0] != groups:
            raise ValueError(f"positions of shape {arr.shape} need {name}'s axis 0 to be a batch of {groups}, "
                             f"{name} has shape {x.shape} with the sequence on axis {x.ndim + seq_axis}")
    return values, True


@functools.lru_cache(maxsize=64)
def _no_frequencies(half: int) -> np.ndarray:
    """The (unused) frequencies of a plan whose angles come from the caller's tables: read-only zeros."""
    w = np.zeros(half)
    w.flags.writeable = False
    return w


def _alone_with_tables(**given: Any) -> None:
    """cos/sin replace every source of angles: each other one given is a ValueError naming it."""
    for name, value in given.items():
        if name == "offset":
            unset = not _per_row(value) and isinstance(value, (int, np.integer)) and not isinstance(value, bool) \
                and value == 0
        elif name == "base":
            unset = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) \
                and value == 10000.0
        elif name == "mrope_interleaved":
            unset = value is False or value is np.False_
        else:
            unset = value is None
        if not unset:
            raise ValueError(f"give either {name} or cos and sin, not both (the tables replace the positions, "
                             "frequencies and scaling)")


def caller_tables(cos: Any, sin: Any, operands: Sequence[Tuple[np.ndarray, str]], seq_axis: int, rotary_dim: int,
                  interleaved: bool) -> Tuple[np.ndarray, np.ndarray]:
    """The caller's cos/sin as float64 [groups, seq, rotary_dim / 2], C order, checked against the operands.

    Accepted: ``[seq, W]`` or ``[batch, seq, W]`` (``[1, seq, W]`` broadcasts over the batch) of any
    float dtype, with W = rotary_dim / 2 (one column per pair: :func:`posenc.rope_cos_sin`) or W =
    rotary_dim (one column per rotated feature, each pair's value twice: Transformers' ``cos``/``sin``,
    ``cat((c, c), -1)``, or ``repeat_interleave(c, 2, -1)`` with interleaved pairs).
    """
    if cos is None or sin is None:
        raise ValueError(f"give both cos and sin (got only {'cos' if sin is None else 'sin'})")
    tables = []
    for value, name in ((cos, "cos"), (sin, "sin")):
        t = _checks.float_array(value, name)
        if t.ndim not in (2, 3):
            raise ValueError(f"{name} must have shape [seq, pairs] or [batch, seq, pairs], got {t.shape}")
        tables.append((t, name))
    (c, _), (s, _) = tables
    if s.shape != c.shape:
        raise ValueError(f"sin must have cos's shape {c.shape}, got {s.shape}")
    first, first_name = operands[0]
    seq, half = first.shape[seq_axis], rotary_dim // 2
    if c.shape[-2] != seq:
        raise ValueError(f"cos has {c.shape[-2]} rows (cos.shape[-2]) but {first_name} has seq length {seq}")
    width = c.shape[-1]
    if width not in (half, rotary_dim):
        raise ValueError(f"cos must have rotary_dim/2 = {half} columns (one per pair) or rotary_dim = {rotary_dim} "
                         f"(Transformers' cos, each pair's value twice), got {width}; pass rotary_dim for a "
                         "partial rotation")
    groups = c.shape[0] if c.ndim == 3 else 1
    if groups != 1:
        for x, name in operands:
            if x.ndim + seq_axis == 0 or x.shape[0] != groups:
                raise ValueError(f"cos of shape {c.shape} needs {name}'s axis 0 to be a batch of {groups}, "
                                 f"{name} has shape {x.shape} with the sequence on axis {x.ndim + seq_axis}")
    result = []
    for t, name in tables:
        t3 = t.reshape(groups, seq, width)
        if width != half:  # each pair's value twice: keep one, after checking the copies agree bit for bit
            one, two = (t3[..., 0::2], t3[..., 1::2]) if interleaved else (t3[..., :half], t3[..., half:])
            bits = np.dtype(f"u{t.itemsize}")  # exact copies; integer compares are fast for every float dtype
            if not np.array_equal(one.view(bits), two.view(bits)):
                dup = "repeat_interleave(c, 2, -1)" if interleaved else "cat((c, c), -1)"
                raise ValueError(f"{name} has rotary_dim = {rotary_dim} columns but its two values of a pair differ "
                                 f"(expected {dup}, the {'interleaved' if interleaved else 'NeoX'} pairing)")
            t3 = one
        t64 = np.array(t3, dtype=np.float64, order="C")  # a copy: never the caller's memory (out may alias it)
        if t64.size and not np.isfinite(t64).all():
            raise ValueError(f"{name} must be finite (found NaN or infinity)")
        result.append(t64)
    return result[0], result[1]


def _per_row(offset: Any) -> bool:
    """Whether ``offset`` is an array (one first position per batch row) rather than one integer."""
    if type(offset) is int:
        return False
    try:
        return bool(np.ndim(offset) > 0)
    except Exception:  # noqa: BLE001 - a ragged list: as_array names the argument
        return True


def _offset_rows(offset: Any, operands: Sequence[Tuple[np.ndarray, str]], seq_axis: int, axes: int) -> np.ndarray:
    """An ``offset`` array [batch] as the float64 positions [axes, batch, seq] ``offset[b] + arange(seq)``
    (every M-RoPE axis alike, as for text tokens), batch checked against the operands' axis 0."""
    first = operands[0][0]
    seq = first.shape[seq_axis]
    starts = _checks.offsets(offset, seq)
    for x, name in operands:
        if x.ndim + seq_axis == 0 or x.shape[0] != starts.shape[0]:
            raise ValueError(f"offset of shape {starts.shape} needs {name}'s axis 0 to be a batch of "
                             f"{starts.shape[0]}, {name} has shape {x.shape} with the sequence on axis "
                             f"{x.ndim + seq_axis}")
    rows = (starts[:, None] + np.arange(seq, dtype=np.int64)).astype(np.float64)  # exact: |values| <= 2**53
    return np.ascontiguousarray(np.broadcast_to(rows, (axes,) + rows.shape))


def rotation(x: np.ndarray, out: Any, params: RopeParams, name: str = "x", out_name: str = "out",
             reads: Sequence[Tuple[Any, str]] = ()) -> RopeRotation:
    """One operand's plan: ``x`` (checked by :func:`rope_params`) and its ``out``, which must not overlap
    ``reads``: the caller's other arguments as given (positions, tables...)."""
    return _new_rotation((x, params, _checks.out_like(out, x, name, out_name, reads)))


def caller_arrays(**given: Any) -> List[Tuple[Any, str]]:
    """The caller's arguments (``name=value``) as the ``(value, name)`` pairs ``reads`` takes."""
    return [(value, name) for name, value in given.items()]


_new_rotation = functools.partial(tuple.__new__, RopeRotation)  # (x, params, out), as _new_params
_new_rotation_qk = functools.partial(tuple.__new__, RopeRotationQK)  # (q, k)


def rotation_qk(q: np.ndarray, k: np.ndarray, params: RopeParams, *, out_q: Any, out_k: Any,
                params_k: Optional[RopeParams] = None, reads: Sequence[Tuple[Any, str]] = ()) -> RopeRotationQK:
    """Both operands' plans (k by ``params_k`` when given: xPos); every argument of both checked before
    anything is written."""
    pq = rotation(q, out_q, params, "q", "out_q", reads)
    pk = rotation(k, out_k, params if params_k is None else params_k, "k", "out_k", reads)
    # Each out may be its own input, not the other operand nor the other out (one pass writes both).
    oq = None if pq.out is None else pq.out.array
    ok = None if pk.out is None else pk.out.array
    checks: Tuple[Tuple[Optional[np.ndarray], str, Optional[np.ndarray], str], ...] = (
        (oq, "out_q", k, "k"), (ok, "out_k", q, "q"), (oq, "out_q", ok, "out_k"))
    if oq is q and ok is k:  # in place: all three ask whether q and k overlap (overlap is symmetric)
        checks = checks[:1]
    for a, a_name, b, b_name in checks:
        if a is not None and b is not None:
            _checks.disjoint(a, a_name, b, b_name)
    return _new_rotation_qk((pq, pk))


def cos_sin(positions: Optional[np.ndarray], n: int, *, inv_freq: np.ndarray, scale: float, dtype: np.dtype
            ) -> RopeCosSin:
    """The plan of cos/sin tables of checked positions (:func:`posenc._checks.positions`) and frequencies."""
    _checks.result_size((n, inv_freq.shape[0]), dtype, "the table")
    return RopeCosSin(positions, n, inv_freq, scale, dtype)


# ------------------------------------------------------------------ Transformers configs (RotaryEmbedding.from_config)

# Models whose attention pairs features (2i, 2i + 1) (rotate_every_two / Cohere's rotate_half);
# DeepSeek-V3 and its kin say so with `rope_interleave`.
_INTERLEAVED_MODELS = frozenset({"gptj", "codegen", "cohere", "cohere2"})
# M-RoPE models and the section their rotary class falls back on (`rope_parameters.get("mrope_section", ...)`);
# Qwen3-VL's interleaves the sections whatever its config says.
_MROPE_DEFAULTS = {"qwen2_vl": ((16, 24, 24), False), "qwen2_5_vl": ((16, 24, 24), False),
                   "qwen3_vl": ((24, 20, 20), True), "qwen3_vl_moe": ((24, 20, 20), True)}
# Older names of config attributes (a transformers config's `attribute_map`, raw checkpoint files).
_ALIASES = {"hidden_size": ("hidden_size", "n_embd", "d_model"),
            "num_attention_heads": ("num_attention_heads", "n_head", "num_heads"),
            "max_position_embeddings": ("max_position_embeddings", "n_positions", "max_seq_len")}


def _config_dict(config: Any) -> Dict[str, Any]:
    """A transformers config object or its dict (``config.to_dict()``, a ``config.json``), as a dict of
    the language model's attributes (a vision-language config's ``text_config``)."""
    if isinstance(config, Mapping):
        d = dict(config)
    elif callable(getattr(config, "to_dict", None)):
        d = config.to_dict()
        if not isinstance(d, Mapping):
            raise TypeError(f"config.to_dict() must return a dict, got {type(d).__name__}")
        d = dict(d)
    else:
        raise TypeError(f"config must be a transformers config or its dict, got {type(config).__name__}")
    text = d.get("text_config")
    if isinstance(text, Mapping) and not any(k in d for k in _ALIASES["num_attention_heads"]):
        d = {**dict(text), "model_type": d.get("model_type", text.get("model_type"))}
    return d


def _get(d: Dict[str, Any], key: str) -> Any:
    for name in _ALIASES.get(key, (key,)):
        if d.get(name) is not None:
            return d[name]
    return None


def _config_int(value: Any, name: str) -> int:
    try:
        return _checks.integer(value, f"config[{name!r}]", minimum=1)
    except TypeError as exc:
        raise ValueError(str(exc)) from None


def config_rotary(config: Any, layer_type: Any) -> Dict[str, Any]:
    """The ``RotaryEmbedding`` arguments of a transformers config (see ``RotaryEmbedding.from_config``)."""
    d = _config_dict(config)
    model_type = str(d.get("model_type") or "")
    params = d.get("rope_parameters") or d.get("rope_scaling") or {}
    if not isinstance(params, Mapping):
        raise ValueError(f"config['rope_parameters'] must be a dict, got {type(params).__name__}")
    params = dict(params)
    layer_types = d.get("layer_types") or ()
    nested = [k for k, v in params.items() if isinstance(v, Mapping) or (v is None and k in layer_types)]
    if nested and len(nested) == len(params):  # per layer type (Gemma 3/4): pick one
        if layer_type is None:
            raise ValueError(f"config['rope_parameters'] differs per layer type ({', '.join(map(repr, nested))}): "
                             "pass layer_type=")
        if layer_type not in params:
            raise ValueError(f"layer_type must be one of {', '.join(map(repr, nested))}, got {layer_type!r}")
        if params[layer_type] is None:
            raise ValueError(f"layer_type {layer_type!r} has no rotary embedding (rope_parameters is None)")
        params = dict(params[layer_type])
    elif layer_type is not None and layer_types and layer_type not in layer_types:
        raise ValueError(f"layer_type must be one of {', '.join(map(repr, sorted(set(layer_types))))}, "
                         f"got {layer_type!r}")
    # Attributes of the layer: a heterogeneous config (Gemma 4) overrides some per layer index.
    layer = dict(d)
    overrides = d.get("per_layer_config")
    if layer_type is not None and isinstance(overrides, Mapping) and layer_types:
        index = list(layer_types).index(layer_type)
        over = overrides.get(index, overrides.get(str(index)))
        if isinstance(over, Mapping):
            layer.update(over)
    # Transformers' priority: the rope dict, then the config's attributes (old names too), then defaults.
    theta = params.get("rope_theta", _get(layer, "rope_theta") or layer.get("rotary_emb_base"))
    if theta is None and not params and model_type not in _INTERLEAVED_MODELS and layer.get("rotary_dim") is None:
        raise ValueError(f"config (model_type {model_type!r}) has no rope_parameters, rope_scaling or rope_theta: "
                         "not a rotary model")
    params["rope_theta"] = 10000.0 if theta is None else theta
    partial = params.get("partial_rotary_factor", _get(layer, "partial_rotary_factor") or layer.get("rotary_pct"))
    if partial is not None:
        params["partial_rotary_factor"] = partial
    head_dim = _get(layer, "qk_rope_head_dim") or _get(layer, "head_dim")
    if head_dim is None:
        hidden, heads = _get(layer, "hidden_size"), _get(layer, "num_attention_heads")
        if hidden is None or heads is None:
            raise ValueError("config needs head_dim, or hidden_size and num_attention_heads")
        head_dim = _config_int(hidden, "hidden_size") // _config_int(heads, "num_attention_heads")
    head_dim = _config_int(head_dim, "head_dim")
    max_pos = _get(layer, "max_position_embeddings")
    kind = _scaling_type(params)
    if kind == "dynamic":  # transformers' dynamic NTK: the config's length is the original one
        if max_pos is None:
            raise ValueError("rope_type 'dynamic' needs config['max_position_embeddings']")
        params["original_max_position_embeddings"] = max_pos
    elif kind in ("llama3", "yarn", "longrope"):
        if layer.get("original_max_position_embeddings") is not None:  # Phi-3 keeps it outside the dict
            params["original_max_position_embeddings"] = layer["original_max_position_embeddings"]
        elif params.get("original_max_position_embeddings") is None and max_pos is not None:
            params["original_max_position_embeddings"] = max_pos
        if kind != "llama3" and params.get("factor") is None and max_pos is not None and \
                params.get("original_max_position_embeddings") and not (kind == "longrope" and
                                                                        params.get("attention_factor") is not None):
            params["factor"] = max_pos / _number(params, "original_max_position_embeddings")
    section, mrope_interleaved = None, False
    family = next((f for f in _MROPE_DEFAULTS if model_type in (f, f + "_text")), None)
    if family is not None:
        default_section, mrope_interleaved = _MROPE_DEFAULTS[family]
        section = params.get("mrope_section") or default_section
        params["mrope_section"] = list(section)
    interleaved = model_type in _INTERLEAVED_MODELS or bool(layer.get("rope_interleave"))
    rotary_dim = layer.get("rotary_dim")
    if rotary_dim is not None:  # GPT-J, CodeGen: rotated features counted directly
        rotary_dim = _config_int(rotary_dim, "rotary_dim")
    return dict(dim=head_dim, scaling=params, rotary_dim=rotary_dim, interleaved=interleaved,
                mrope_interleaved=mrope_interleaved)


# ------------------------------------------------------------------ xPos


def xpos_zeta(rotary_dim: int) -> np.ndarray:
    """xPos's per-pair base ζ_j = (2j + 0.4·rotary_dim) / (1.4·rotary_dim), float64 [rotary_dim / 2]
    (Sun et al. 2022, "A Length-Extrapolatable Transformer"; torchscale's ``XPOS.scale``)."""
    return (np.arange(0, rotary_dim, 2, dtype=np.float64) + 0.4 * rotary_dim) / (1.4 * rotary_dim)


def xpos_args(scale_base: Any, center: Any) -> Optional[Tuple[float, float]]:
    """``(scale_base, center)`` checked, or None when xPos is off (then ``center`` must be left at 0)."""
    if scale_base is None:
        if not (isinstance(center, (int, float, np.integer, np.floating)) and not isinstance(center, bool)
                and center == 0):
            raise ValueError(f"xpos_center needs xpos_scale_base (xPos is off), got xpos_center={center!r}")
        return None
    return _checks.real(scale_base, "xpos_scale_base", positive=True), _checks.real(center, "xpos_center")


def xpos_rotations(params: RopeParams, seq: int, scale_base: float, center: float) -> Tuple[RopeParams, RopeParams]:
    """q's and k's rotations under xPos: tables ``cos θ·ζ^e``, ``sin θ·ζ^e`` for q and ``ζ^−e`` for k,
    e = (n − center)/scale_base at position n, θ = n·ω; angles and scales in float64 (rounded once by the
    rotation). <R q_m ζ^(m−c), R k_n ζ^−(n−c)> then decays as ζ^((m − n)/scale_base), whatever c."""
    if params.tables is not None:
        raise ValueError("give either xpos_scale_base or cos and sin, not both (xPos needs the positions)")
    if params.pair_axis is not None:
        raise ValueError("xpos_scale_base does not combine with mrope_section (which position would scale?)")
    if params.positions is None:
        n = (params.start + np.arange(seq, dtype=np.float64))[None]  # [1, seq]
    else:
        n = params.positions[0]  # [groups, seq]
    theta = n[..., None] * params.inv_freq  # [groups, seq, half]
    log_zeta = np.log(xpos_zeta(params.rotary_dim))
    with np.errstate(over="ignore", under="ignore"):  # refused below
        up = np.exp((n[..., None] - center) / scale_base * log_zeta)  # ζ_j^((n − c)/scale_base)
        down = np.exp(-(n[..., None] - center) / scale_base * log_zeta)
    if up.size and not (np.isfinite(up).all() and np.isfinite(down).all() and (up > 0).all() and (down > 0).all()):
        far = float(np.abs(n - center).max())
        raise ValueError(f"xpos_center: positions {far:g} away from the centre {center:g} make ζ^((n − c)/xpos_scale_base) "
                         f"overflow float64 (scale base {scale_base:g}); centre the positions")
    c, s = np.cos(theta), np.sin(theta)
    grouped = n.shape[0] != 1
    common = dict(positions=None, start=0.0, grouped=grouped)
    q = params._replace(tables=(np.ascontiguousarray(c * up), np.ascontiguousarray(s * up)), **common)
    k = params._replace(tables=(np.ascontiguousarray(c * down), np.ascontiguousarray(s * down)), **common)
    return q, k
