"""Rotary position embeddings (RoPE) in plain NumPy: the specification the native kernels are checked against.

Frequencies and the attention scaling of every scaling scheme are computed
here, once, in Python float64; the native backend uses the very same
``rope_inv_freq`` (it only does the rotation). Rotations are evaluated in
float64 and rounded once to x's dtype. The ``_plan_*`` functions validate and
normalise arguments for both backends, so both accept and refuse exactly the
same input.

Rotation of feature pair (u, v) by angle θ = position·ω_j, scaled by the
scheme's attention scaling a (Su et al. 2021, "RoFormer", eq. 34):
    u' = a·(u·cos θ − v·sin θ),   v' = a·(v·cos θ + u·sin θ)
Pairs are (j, j + rotary_dim/2) (GPT-NeoX / Llama "rotate_half") or
(2j, 2j + 1) (GPT-J, the RoFormer paper, Meta's llama reference code).
"""

from __future__ import annotations

import functools
import math
from typing import Any, Dict, FrozenSet, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from .. import _checks

ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "llama3", "longrope")
# Names model configs use for the same schemes: Phi-3's first 128k configs
# said "su" (LongRoPE); Qwen2-VL's say "mrope" (default frequencies, the
# sections are apply_rope's mrope_section).
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
}
_COMMON_KEYS = frozenset({"type", "rope_type", "rope_theta"})
# Keys model configs carry next to the scaling that are not frequency parameters.
_MISPLACED = {
    "partial_rotary_factor": "pass dim=int(head_dim * partial_rotary_factor) (apply_rope: rotary_dim=)",
    "mrope_section": "pass mrope_section= to apply_rope",
    "mrope_interleaved": "pass mrope_interleaved= to apply_rope",
}


def _scaling_type(scaling: Dict[str, Any]) -> str:
    names = [scaling[k] for k in ("type", "rope_type") if scaling.get(k) is not None]
    if len(names) == 2 and names[0] != names[1]:
        raise ValueError(f"scaling['type'] = {names[0]!r} and scaling['rope_type'] = {names[1]!r} disagree")
    name = names[0] if names else "default"
    if not isinstance(name, str):
        raise ValueError(f"scaling['rope_type'] must be a string, got {name!r}")
    name = _TYPE_ALIASES.get(name, name)
    if name not in ROPE_TYPES:
        raise ValueError(f"scaling['rope_type'] must be one of {', '.join(map(repr, ROPE_TYPES))}, got {name!r}")
    return name


def _number(params: Dict[str, Any], key: str, *, minimum_exclusive: Optional[float] = 0.0,
            minimum: Optional[float] = None) -> float:
    value = params[key]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"scaling[{key!r}] must be a real number, got {value!r}")
    result = float(value)
    if not math.isfinite(result):
        raise ValueError(f"scaling[{key!r}] must be finite, got {result}")
    if minimum_exclusive is not None and not result > minimum_exclusive:
        raise ValueError(f"scaling[{key!r}] must be > {minimum_exclusive:g}, got {result}")
    if minimum is not None and result < minimum:
        raise ValueError(f"scaling[{key!r}] must be >= {minimum:g}, got {result}")
    return result


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
    except TypeError as exc:  # every bad scaling value is a ValueError naming the key
        raise ValueError(str(exc)) from None


def _normalise_scaling(scaling: Any, base: float) -> Tuple[str, Dict[str, Any]]:
    """The scheme's name and its parameters (None values dropped), every key checked."""
    if scaling is None:
        return "default", {}
    if not isinstance(scaling, dict):
        raise TypeError(f"scaling must be None or a dict, got {type(scaling).__name__}")
    kind = _scaling_type(scaling)
    required, optional = _KEYS[kind]
    for key in scaling:
        if key in _MISPLACED:
            raise ValueError(f"scaling[{key!r}] is not a frequency parameter: {_MISPLACED[key]}")
        if key not in required | optional | _COMMON_KEYS:
            allowed = ", ".join(sorted(required | optional)) or "none"
            raise ValueError(f"scaling[{key!r}] is not a parameter of rope_type {kind!r} (its keys: {allowed})")
    params = {k: v for k, v in scaling.items() if v is not None and k not in _COMMON_KEYS}
    missing = sorted(required - params.keys())
    if missing:
        raise ValueError(f"rope_type {kind!r} needs scaling[{missing[0]!r}]")
    theta = scaling.get("rope_theta")
    if theta is not None and float(theta) != base:
        raise ValueError(f"scaling['rope_theta'] = {theta} disagrees with base = {base}: pass base={theta}")
    return kind, params


def _default_inv_freq(dim: int, base: float) -> np.ndarray:
    # ω_j = 1 / base^(2j/dim), in the form every reference implementation
    # writes it (RoFormer, GPT-NeoX, transformers' default rope), here in float64.
    return 1.0 / base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)


@functools.lru_cache(maxsize=64)
def _default_inv_freq_cached(dim: int, base: float) -> np.ndarray:
    """Read-only default frequencies: a decode step should not recompute them per call."""
    w = _default_inv_freq(dim, base)
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
    truncate = p.get("truncate", True)
    if not isinstance(truncate, (bool, np.bool_)):
        raise ValueError(f"scaling['truncate'] must be a bool, got {truncate!r}")
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


def rope_inv_freq(dim: int, *, base: float = 10000.0, scaling: Any = None) -> Tuple[np.ndarray, float]:
    """Reference for :func:`posenc.rope_inv_freq`: ``(inv_freq float64 [dim/2], attention_scaling)``."""
    dim = _checks.even_dim(dim)
    base = _checks.base(base)
    kind, p = _normalise_scaling(scaling, base)
    if kind == "default":
        return _default_inv_freq(dim, base), 1.0
    if kind == "linear":
        # Position interpolation (Chen et al. 2023; kaiokendev): θ = (p/s)·ω.
        return _default_inv_freq(dim, base) / _number(p, "factor"), 1.0
    if kind == "dynamic":
        # Dynamic NTK-aware scaling (bloc97, emozilla; transformers'
        # `_compute_dynamic_ntk_parameters`): the base grows with the sequence,
        # base' = base·(s·L/L_orig − (s − 1))^(dim/(dim−2)), L = max(seq_len, L_orig).
        factor = _number(p, "factor")
        original = _number(p, "original_max_position_embeddings")
        length = max(float(_seq_len(p) or 0), original)
        if dim > 2:  # with one pair, ω_0 = base'^0 = 1 whatever the base
            base = base * ((factor * length / original) - (factor - 1)) ** (dim / (dim - 2))
        return _default_inv_freq(dim, base), 1.0
    if kind == "yarn":
        return _yarn(dim, base, p)
    if kind == "llama3":
        return _llama3(dim, base, p)
    return _longrope(dim, base, p)


# ---------------------------------------------------------------- cos/sin tables


class CosSinPlan(NamedTuple):
    positions: Optional[np.ndarray]
    n: int
    inv_freq: np.ndarray
    scale: float
    dtype: np.dtype


def _plan_cos_sin(positions: Any, dim: Any, base: Any, scaling: Any, dtype: Any) -> CosSinPlan:
    pos, n = _checks.positions(positions)
    dt = _checks.float_dtype(dtype)
    inv_freq, scale = rope_inv_freq(dim, base=base, scaling=scaling)
    _checks.result_size((n, inv_freq.shape[0]), dt, "the table")
    return CosSinPlan(pos, n, inv_freq, scale, dt)


def rope_cos_sin(positions: Any, dim: int, *, base: float = 10000.0, scaling: Any = None,
                 dtype: Any = np.float32) -> Tuple[np.ndarray, np.ndarray]:
    """Reference for :func:`posenc.rope_cos_sin`."""
    plan = _plan_cos_sin(positions, dim, base, scaling, dtype)
    pos = np.arange(plan.n, dtype=np.float64) if plan.positions is None else plan.positions
    angles = np.multiply.outer(pos, plan.inv_freq)
    return (_checks.round_once(plan.scale * np.cos(angles), plan.dtype),
            _checks.round_once(plan.scale * np.sin(angles), plan.dtype))


# ---------------------------------------------------------------- application


class ApplyPlan(NamedTuple):
    x: np.ndarray
    seq_axis: int  # non-negative axis index of the sequence
    grouped: bool  # positions differ along x's axis 0 (the batch)
    # float64 [axes, groups, seq] (axes = 1, or len(mrope_section)); None: start + arange(seq)
    positions: Optional[np.ndarray]
    start: float
    inv_freq: np.ndarray  # float64 [rotary_dim / 2]
    scale: float  # attention scaling (negative sin for inverse is applied by the kernels)
    pair_axis: Optional[np.ndarray]  # int64 [rotary_dim / 2]: positions axis of each pair (M-RoPE)
    rotary_dim: int
    interleaved: bool
    inverse: bool
    out: Optional[np.ndarray]


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


def mrope_pair_axes(section: Sequence[int], interleaved: bool) -> np.ndarray:
    """Which positions axis each frequency pair takes its angle from (M-RoPE).

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


def _plan_mrope(mrope_section: Any, mrope_interleaved: Any, half: int) -> Optional[np.ndarray]:
    interleaved = _flag(mrope_interleaved, "mrope_interleaved")
    if mrope_section is None:
        if interleaved:
            raise ValueError("mrope_interleaved=True needs mrope_section")
        return None
    if isinstance(mrope_section, (str, bytes)) or not hasattr(mrope_section, "__len__"):
        raise TypeError(f"mrope_section must be a sequence of integers, got {type(mrope_section).__name__}")
    section = [_checks.integer(s, "mrope_section", minimum=0) for s in mrope_section]
    if len(section) != 3:
        raise ValueError(f"mrope_section must hold 3 sections (t, h, w), got {len(section)}")
    if sum(section) != half:
        raise ValueError(f"mrope_section must sum to rotary_dim/2 = {half}, got {sum(section)} ({tuple(section)})")
    return mrope_pair_axes(section, interleaved)


def _plan_positions(positions: Any, offset: int, x: np.ndarray, seq_axis: int, axes: int
                    ) -> Tuple[Optional[np.ndarray], bool]:
    """float64 [axes, groups, seq] (or None) and whether groups follow x's axis 0."""
    seq = x.shape[seq_axis]
    if positions is None:
        return None, False
    if offset != 0:
        raise ValueError("give either positions or offset, not both")
    arr = _checks.as_array(positions, "positions")
    values = _checks.position_values(arr, "positions")
    lead = (axes,) if axes > 1 else ()
    expected = f"[{'axes, ' if axes > 1 else ''}seq] or [{'axes, ' if axes > 1 else ''}batch, seq]"
    if values.ndim == len(lead) + 1 and values.shape[:len(lead)] == lead:
        values = values.reshape(lead + (1,) + values.shape[-1:])
    if values.ndim != len(lead) + 2 or values.shape[:len(lead)] != lead:
        raise ValueError(f"positions must have shape {expected}, got {arr.shape}")
    if values.shape[-1] != seq:
        raise ValueError(f"positions has {values.shape[-1]} entries per row but x has seq length {seq}")
    groups = values.shape[-2]
    values = values.reshape(axes, groups, seq)
    if groups == 1:
        return np.ascontiguousarray(values), False
    if seq_axis == 0 or groups != x.shape[0]:
        raise ValueError(f"positions of shape {arr.shape} need x's axis 0 to be a batch of {groups}, "
                         f"x has shape {x.shape} with the sequence on axis {seq_axis}")
    return np.ascontiguousarray(values), True


def _plan_apply(x: Any, positions: Any, base: Any, scaling: Any, inv_freq: Any, attention_scaling: Any,
                rotary_dim: Any, interleaved: Any, seq_axis: Any, offset: Any, inverse: Any,
                mrope_section: Any, mrope_interleaved: Any, out: Any, name: str = "x",
                out_name: str = "out") -> ApplyPlan:
    interleaved = _flag(interleaved, "interleaved")
    inverse = _flag(inverse, "inverse")
    xa = _checks.float_array(x, name)
    # -3.0 == -3, so a float passed the value test and failed later as an index (a TypeError
    # that did not name seq_axis): integers only.
    if isinstance(seq_axis, (bool, np.bool_)) or not isinstance(seq_axis, (int, np.integer)) or seq_axis not in (-3, -2):
        raise ValueError(f"seq_axis must be -3 ([..., seq, heads, dim]) or -2 ([..., heads, seq, dim]), got {seq_axis!r}")
    needed = 3 if seq_axis == -3 else 2
    if xa.ndim < needed:
        layout = "[..., seq, heads, head_dim]" if seq_axis == -3 else "[..., seq, head_dim]"
        raise ValueError(f"{name} must have shape {layout} (at least {needed} axes), got shape {xa.shape}")
    head_dim = xa.shape[-1]
    if rotary_dim is None:
        if head_dim % 2:
            raise ValueError(f"{name}.shape[-1] (head_dim) must be even, got {head_dim}")
        rdim = head_dim
    else:
        rdim = _checks.even_dim(rotary_dim, "rotary_dim")
        if rdim > head_dim:
            raise ValueError(f"rotary_dim must be <= head_dim = {head_dim}, got {rdim}")
    if rdim == 0:
        raise ValueError(f"{name}.shape[-1] (head_dim) must be > 0")
    if inv_freq is not None:
        if scaling is not None:
            raise ValueError("give either inv_freq or scaling, not both")
        freqs = np.asarray(_checks.as_array(inv_freq, "inv_freq"))
        if freqs.dtype.kind not in "fiu" or freqs.shape != (rdim // 2,):
            raise ValueError(f"inv_freq must be a real vector of rotary_dim/2 = {rdim // 2} entries, got "
                             f"shape {freqs.shape} and dtype {freqs.dtype}")
        freqs = np.require(freqs, np.float64, ["C", "A"])  # aligned: the kernels load doubles
        if not np.isfinite(freqs).all():
            raise ValueError("inv_freq must be finite")
        _checks.base(base)
        scale = 1.0
    elif scaling is None:
        freqs, scale = _default_inv_freq_cached(rdim, _checks.base(base)), 1.0
    else:
        freqs, scale = rope_inv_freq(rdim, base=base, scaling=scaling)
    if attention_scaling is not None:
        scale = _checks.real(attention_scaling, "attention_scaling")
    offset = _checks.offset(offset, xa.shape[xa.ndim + seq_axis])  # positions exact in float64
    pair_axis = _plan_mrope(mrope_section, mrope_interleaved, rdim // 2)
    axes = 1 if pair_axis is None else 3
    seq_ax = xa.ndim + seq_axis
    pos, grouped = _plan_positions(positions, offset, xa, seq_ax, axes)
    if out is not None and out is xa and xa.flags.writeable:
        target = xa  # in place on x itself (the common case): nothing else to check
    else:
        target = _checks.output(out, xa.shape, xa.dtype, [(xa, name)], name=out_name)
    return ApplyPlan(xa, seq_ax, grouped, pos, float(offset), freqs, scale, pair_axis, rdim, interleaved,
                     inverse, target)


def _angles(plan: ApplyPlan) -> np.ndarray:
    """float64 angles broadcastable to x[..., rotary_dim/2] with seq on plan.seq_axis."""
    x = plan.x
    seq, half = x.shape[plan.seq_axis], plan.inv_freq.shape[0]
    if plan.positions is None:
        pos = (plan.start + np.arange(seq, dtype=np.float64))[None, None, :]
    else:
        pos = plan.positions  # [axes, groups, seq]
    if plan.pair_axis is None:
        theta = pos[0][:, :, None] * plan.inv_freq  # [groups, seq, half]
    else:
        axis = np.minimum(plan.pair_axis, pos.shape[0] - 1)
        theta = np.take(pos, axis, axis=0).transpose(1, 2, 0) * plan.inv_freq
    # Place groups on axis 0, seq on seq_axis, half last; size-1 elsewhere.
    shape = [1] * x.ndim
    shape[plan.seq_axis] = seq
    shape[-1] = half
    if plan.grouped:
        shape[0] = theta.shape[0]
    result: np.ndarray = theta.reshape(shape)
    return result


def _rotate(plan: ApplyPlan) -> np.ndarray:
    """The rotated x in float64."""
    x = plan.x.astype(np.float64)
    theta = _angles(plan)
    c = plan.scale * np.cos(theta)
    s = plan.scale * np.sin(theta)
    if plan.inverse:
        s = -s
    rd, half = plan.rotary_dim, plan.rotary_dim // 2
    if plan.interleaved:
        u, v = x[..., 0:rd:2], x[..., 1:rd:2]
    else:
        u, v = x[..., :half], x[..., half:rd]
    y = x.copy()
    if plan.interleaved:
        y[..., 0:rd:2], y[..., 1:rd:2] = u * c - v * s, v * c + u * s
    else:
        y[..., :half], y[..., half:rd] = u * c - v * s, v * c + u * s
    return y


def apply_rope(x: Any, positions: Any = None, *, base: float = 10000.0, scaling: Any = None, inv_freq: Any = None,
               attention_scaling: Any = None, rotary_dim: Any = None, interleaved: bool = False, seq_axis: int = -3,
               offset: int = 0, inverse: bool = False, mrope_section: Any = None, mrope_interleaved: bool = False,
               out: Any = None) -> Any:
    """Reference for :func:`posenc.apply_rope`."""
    plan = _plan_apply(x, positions, base, scaling, inv_freq, attention_scaling, rotary_dim, interleaved, seq_axis,
                       offset, inverse, mrope_section, mrope_interleaved, out)
    y = _checks.round_once(_rotate(plan), plan.x.dtype)
    if plan.out is None:
        return y
    plan.out[...] = y
    return out


def _plan_qk(q: Any, k: Any, positions: Any, kw: Dict[str, Any], out_q: Any, out_k: Any
             ) -> Tuple[ApplyPlan, ApplyPlan]:
    """Both plans; every argument of both checked before anything is written."""
    pq = _plan_apply(q, positions, out=out_q, name="q", out_name="out_q", **kw)
    pk = _plan_apply(k, positions, out=out_k, name="k", out_name="out_k", **kw)
    if pq.x.shape[pq.seq_axis] != pk.x.shape[pk.seq_axis]:
        raise ValueError(f"q and k must have the same seq length, got {pq.x.shape} and {pk.x.shape}")
    for a, an, b, bn in ((pq.out, "out_q", pk.x, "k"), (pk.out, "out_k", pq.x, "q"), (pq.out, "out_q", pk.out, "out_k")):
        if a is not None and b is not None and _checks._overlap(a, b):
            raise ValueError(f"{an} overlaps {bn}")
    return pq, pk


def _qk_kwargs(base: Any, scaling: Any, inv_freq: Any, attention_scaling: Any, rotary_dim: Any, interleaved: Any,
               seq_axis: Any, offset: Any, inverse: Any, mrope_section: Any, mrope_interleaved: Any) -> Dict[str, Any]:
    return dict(base=base, scaling=scaling, inv_freq=inv_freq, attention_scaling=attention_scaling,
                rotary_dim=rotary_dim, interleaved=interleaved, seq_axis=seq_axis, offset=offset, inverse=inverse,
                mrope_section=mrope_section, mrope_interleaved=mrope_interleaved)


def apply_rope_qk(q: Any, k: Any, positions: Any = None, *, base: float = 10000.0, scaling: Any = None,
                  inv_freq: Any = None, attention_scaling: Any = None, rotary_dim: Any = None,
                  interleaved: bool = False, seq_axis: int = -3, offset: int = 0, inverse: bool = False,
                  mrope_section: Any = None, mrope_interleaved: bool = False, out_q: Any = None,
                  out_k: Any = None) -> Tuple[Any, Any]:
    """Reference for :func:`posenc.apply_rope_qk`."""
    kw = _qk_kwargs(base, scaling, inv_freq, attention_scaling, rotary_dim, interleaved, seq_axis, offset, inverse,
                    mrope_section, mrope_interleaved)
    pq, pk = _plan_qk(q, k, positions, kw, out_q, out_k)
    yq, yk = _checks.round_once(_rotate(pq), pq.x.dtype), _checks.round_once(_rotate(pk), pk.x.dtype)
    if pq.out is not None:
        pq.out[...] = yq
        yq = out_q
    if pk.out is not None:
        pk.out[...] = yk
        yk = out_k
    return yq, yk


def positions_from_cu_seqlens(cu_seqlens: Any) -> np.ndarray:
    """Positions of the tokens of a packed batch: ``[0..n0), [0..n1), ...`` concatenated, int64.

    ``cu_seqlens`` is ``[0, n0, n0 + n1, ...]`` (flash-attention's varlen
    convention): 1-D, integer, starting at 0, non-decreasing.
    """
    arr = _checks.as_array(cu_seqlens, "cu_seqlens")
    if arr.ndim != 1 or arr.shape[0] < 1:
        raise ValueError(f"cu_seqlens must be a non-empty 1-D array, got shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise TypeError(f"cu_seqlens must hold integers, got dtype {arr.dtype}")
    cu = arr.astype(np.int64)
    if cu[0] != 0:
        raise ValueError(f"cu_seqlens must start at 0, got {int(cu[0])}")
    lengths = np.diff(cu)
    if (lengths < 0).any():
        raise ValueError("cu_seqlens must be non-decreasing")
    total = int(cu[-1])
    return np.arange(total, dtype=np.int64) - np.repeat(cu[:-1], lengths)
