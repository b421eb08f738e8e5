"""Hostile-input specs of the rotary family (run by tests/test_arguments.py).

Baselines are small: the table checks outcomes, the family tests check accuracy at scale.
Every refused call of apply_rope and apply_rope_qk is made a second time in place
(``-in-place`` rows, ``out=x``): a refused call must leave its operands untouched.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

import numpy as np

from helpers import rand
from hostile import (HUGE, SIZE_ERRORS, Case, Check, Raises, Same, Spec, byteswapped, empty_of, finite_or_refused,
                     misaligned, negative_strides, stepped)

F32 = np.float32
VE, TE = ValueError, TypeError

LLAMA3 = {"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 8192}
YARN = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}
LONGROPE = {"type": "longrope", "short_factor": [1.0] * 3, "long_factor": [4.0, 2.0, 1.5],
            "original_max_position_embeddings": 16, "factor": 2.0}
DYNAMIC = {"type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 16}

# A RoPE scaling dict (a model config's rope_scaling; dim 6, three frequency pairs): every bad value
# is a ValueError naming its key (a TypeError for a scaling that is not a dict at all).
BAD_SCALINGS = [
    ("not-a-dict", "linear", TE, "scaling"),
    ("list", [("type", "linear")], TE, "scaling"),
    ("unknown-type", {"type": "quadratic", "factor": 2.0}, VE, "rope_type"),
    ("type-not-str", {"type": 3, "factor": 2.0}, VE, "rope_type"),
    ("types-disagree", {"type": "linear", "rope_type": "yarn", "factor": 2.0}, VE, "disagree"),
    ("unknown-key", {"type": "linear", "factor": 2.0, "fctor": 3.0}, VE, "'fctor'"),
    ("rope_theta-one", {"type": "linear", "factor": 2.0, "rope_theta": 1.0}, VE, "rope_theta"),
    ("rope_theta-nan", {"type": "linear", "factor": 2.0, "rope_theta": float("nan")}, VE, "rope_theta"),
    ("rope_theta-negative", {"type": "linear", "factor": 2.0, "rope_theta": -10.0}, VE, "rope_theta"),
    ("rope_theta-str", {"type": "linear", "factor": 2.0, "rope_theta": "1e4"}, VE, "rope_theta"),
    # int(6 * 0.5) = 3 rotated features: odd.
    ("partial_rotary_factor-odd", {"type": "linear", "factor": 2.0, "partial_rotary_factor": 0.5}, VE,
     "partial_rotary_factor"),
    ("partial_rotary_factor-zero", {"type": "default", "partial_rotary_factor": 0.0}, VE, "partial_rotary_factor"),
    ("partial_rotary_factor-tiny", {"type": "default", "partial_rotary_factor": 0.1}, VE, "partial_rotary_factor"),
    ("partial_rotary_factor-above-1", {"type": "default", "partial_rotary_factor": 1.5}, VE, "partial_rotary_factor"),
    ("partial_rotary_factor-str", {"type": "default", "partial_rotary_factor": "0.5"}, VE, "partial_rotary_factor"),
    ("proportional-factor-zero", {"rope_type": "proportional", "factor": 0.0}, VE, "'factor'"),
    ("proportional-partial-nan", {"rope_type": "proportional", "partial_rotary_factor": float("nan")}, VE,
     "partial_rotary_factor"),
    ("proportional-unknown-key", {"rope_type": "proportional", "low_freq_factor": 1.0}, VE, "low_freq_factor"),
    ("mrope_section-inside-wrong-sum", {"type": "mrope", "mrope_section": [1, 1, 2]}, VE, "mrope_section"),
    ("mrope_section-inside-two", {"type": "mrope", "mrope_section": [1, 2]}, VE, "mrope_section"),
    ("mrope_interleaved-inside-str", {"mrope_section": [1, 1, 1], "mrope_interleaved": "yes"}, VE,
     "mrope_interleaved"),
    ("mrope-and-other-type-disagree", {"type": "mrope", "rope_type": "quadratic"}, VE, "rope_type"),
    ("per-layer-type-dict", {"sliding_attention": {"rope_type": "default"},
                             "full_attention": {"rope_type": "linear", "factor": 8.0}}, VE, "per-layer-type"),
    ("missing-factor", {"type": "linear"}, VE, "'factor'"),
    ("factor-nan", {"type": "linear", "factor": float("nan")}, VE, "'factor'"),
    ("factor-inf", {"type": "linear", "factor": float("inf")}, VE, "'factor'"),
    ("factor-zero", {"type": "linear", "factor": 0.0}, VE, "'factor'"),
    ("factor-negative", {"type": "linear", "factor": -2.0}, VE, "'factor'"),
    ("factor-str", {"type": "linear", "factor": "2"}, VE, "'factor'"),
    ("factor-bool", {"type": "linear", "factor": True}, VE, "'factor'"),
    ("factor-complex", {"type": "linear", "factor": 2j}, VE, "'factor'"),
    ("dynamic-missing-original", {"type": "dynamic", "factor": 2.0}, VE, "original_max_position_embeddings"),
    ("dynamic-seq-negative", {**DYNAMIC, "seq_len": -1}, VE, "seq_len"),
    ("dynamic-seq-float", {**DYNAMIC, "seq_len": 1.5}, VE, "seq_len"),
    ("yarn-missing-original", {"type": "yarn", "factor": 4.0}, VE, "original_max_position_embeddings"),
    ("yarn-orig-zero", {**YARN, "original_max_position_embeddings": 0}, VE, "original_max_position_embeddings"),
    ("yarn-orig-str", {**YARN, "original_max_position_embeddings": "4096"}, VE, "original_max_position_embeddings"),
    ("yarn-beta_fast-zero", {**YARN, "beta_fast": 0}, VE, "'beta_fast'"),
    ("yarn-betas-swapped", {**YARN, "beta_fast": 1, "beta_slow": 2}, VE, "beta_fast"),
    ("yarn-truncate-str", {**YARN, "truncate": "no"}, VE, "truncate"),
    ("yarn-mscale-negative", {**YARN, "mscale": -1}, VE, "mscale"),
    ("llama3-equal-factors", {**LLAMA3, "high_freq_factor": 1.0}, VE, "low_freq_factor"),
    ("llama3-factors-swapped", {**LLAMA3, "low_freq_factor": 4.0, "high_freq_factor": 0.5}, VE, "low_freq_factor"),
    ("llama3-missing-high", {k: v for k, v in LLAMA3.items() if k != "high_freq_factor"}, VE, "high_freq_factor"),
    ("longrope-short-wrong-length", {**LONGROPE, "short_factor": [1.0]}, VE, "short_factor"),
    ("longrope-long-wrong-length", {**LONGROPE, "long_factor": [1.0] * 4}, VE, "long_factor"),
    ("longrope-nan", {**LONGROPE, "short_factor": [float("nan")] * 3}, VE, "short_factor"),
    ("longrope-zero", {**LONGROPE, "short_factor": [1.0, 1.0, 0.0]}, VE, "short_factor"),
    ("longrope-missing-short", {k: v for k, v in LONGROPE.items() if k != "short_factor"}, VE, "short_factor"),
    ("longrope-no-factor", {k: v for k, v in LONGROPE.items() if k != "factor"}, VE, "factor"),
]


def scaling_cases(s: Spec, arg: str = "scaling") -> None:
    """A RoPE scaling dict: unknown types and keys, bad or missing values are refused, naming the key."""
    for id, value, exc, match in BAD_SCALINGS:
        s.raises(f"{arg}-{id}", exc, match, **{arg: value})
    s.same(f"{arg}-rope_type-alias", clean={arg: {"type": "linear", "factor": 2.0}},
           **{arg: {"rope_type": "linear", "factor": 2.0}})
    s.same(f"{arg}-numpy-factor", clean={arg: {"type": "linear", "factor": 2.0}},
           **{arg: {"type": "linear", "factor": np.float32(2.0)}})
    # Transformers v5 rope_parameters: rope_theta sets the base unless base is passed (then they must agree).
    s.raises(f"{arg}-rope_theta-disagrees", VE, "rope_theta", base=10000.0,
             **{arg: {"type": "linear", "factor": 2.0, "rope_theta": 500000.0}})
    s.same(f"{arg}-rope_theta-sets-base", clean={arg: {"type": "linear", "factor": 2.0}, "base": 500000.0},
           **{arg: {"rope_type": "linear", "factor": 2.0, "rope_theta": 500000.0}})
    s.same(f"{arg}-rope_theta-agrees", clean={arg: {"type": "linear", "factor": 2.0}, "base": 500000.0},
           base=500000.0, **{arg: {"rope_type": "linear", "factor": 2.0, "rope_theta": 500000.0}})
    s.same(f"{arg}-proportional-full", clean={arg: {"type": "default"}},
           **{arg: {"rope_type": "proportional", "partial_rotary_factor": 1.0, "factor": 1.0}})
    s.same(f"{arg}-qwen2-vl-raw-no-section", clean={arg: None, "base": 1e6},
           **{arg: {"type": "mrope", "rope_type": "default", "rope_theta": 1e6}})


def in_place_variants(s: Spec, pairs: Dict[str, str]) -> None:
    """Each refused call again with ``out=`` each baseline operand itself (``pairs``: operand -> its out)
    where no out is given: a bad k must leave q untouched too."""
    rows: List[Case] = []
    for case in s.cases:
        if isinstance(case.expect, Raises):
            outs = {o: case.kwargs[x] for x, o in pairs.items() if o not in case.kwargs and case.kwargs[x] is s.baseline[x]}
            if outs:
                rows.append(Case(f"{case.id}-in-place", case.func, {**case.kwargs, **outs}, case.expect))
    s.cases.extend(rows)


# ------------------------------------------------------------------ rotary

OFFSETS = np.array([3, 100])  # one first position per batch row of a [2, 4, ...] baseline
OFFSET_ROWS = OFFSETS[:, None] + np.arange(4)


def _tables(positions: np.ndarray, dim: int = 6) -> Any:
    """float64 cos and sin [..., seq, dim/2] of positions at the default base (written out, not posenc's)."""
    theta = positions[..., None] * 10000.0 ** (-np.arange(0, dim, 2) / dim)
    return np.cos(theta), np.sin(theta)


COS, SIN = _tables(np.arange(4.0))


def table_cases(s: Spec) -> None:
    """``cos=``/``sin=``: the caller's tables [seq, W] / [batch, seq, W], W = pairs or Transformers' 2·pairs."""
    no = {"cos": None, "sin": None}
    s.same("cos-sin-pairs", clean=no, cos=COS, sin=SIN)
    s.same("cos-sin-transformers", clean=no, cos=np.concatenate([COS, COS], -1)[None],
           sin=np.concatenate([SIN, SIN], -1)[None])
    s.same("cos-sin-transformers-interleaved", clean={**no, "interleaved": True}, interleaved=True,
           cos=np.repeat(COS, 2, -1), sin=np.repeat(SIN, 2, -1))
    rows = np.array([[0, 1, 2, 3], [7, 5, 3, 1]])
    bc, bs = _tables(rows.astype(float))
    s.same("cos-sin-batch", clean={**no, "positions": rows}, cos=bc, sin=bs)
    s.same("cos-sin-batch-one", clean=no, cos=COS[None], sin=SIN[None])
    s.same("cos-sin-inverse", clean={**no, "inverse": True}, cos=COS, sin=SIN, inverse=True)
    pc, ps = _tables(np.arange(4.0), 4)
    s.same("cos-sin-partial", clean={**no, "rotary_dim": 4}, cos=pc, sin=ps, rotary_dim=4)
    s.same("cos-sin-partial-transformers", clean={**no, "rotary_dim": 4}, cos=np.concatenate([pc, pc], -1),
           sin=np.concatenate([ps, ps], -1), rotary_dim=4)
    s.same("cos-sin-float32", clean={"cos": COS.astype(F32).astype(float), "sin": SIN.astype(F32).astype(float)},
           cos=COS.astype(F32), sin=SIN.astype(F32))
    s.same("cos-sin-float16", clean={"cos": COS.astype(np.float16).astype(float)}, cos=COS.astype(np.float16),
           sin=SIN)
    for id, make in [("byteswapped", byteswapped), ("misaligned", misaligned), ("negative-strides", negative_strides),
                     ("stepped", stepped)]:
        s.same(f"cos-sin-{id}", clean={"cos": COS, "sin": SIN}, cos=make(COS), sin=make(SIN))
    s.same("cos-sin-lists", clean={"cos": COS, "sin": SIN}, cos=COS.tolist(), sin=SIN.tolist())
    for id, kw, exc, match in [
        ("cos-alone", dict(cos=COS), VE, "sin"), ("sin-alone", dict(sin=SIN), VE, "cos"),
        ("cos-int", dict(cos=COS.astype(np.int64), sin=SIN), TE, "cos"),
        ("sin-complex", dict(cos=COS, sin=SIN + 0j), TE, "sin"),
        ("cos-str", dict(cos=COS.astype(str), sin=SIN), TE, "cos"),
        ("cos-object", dict(cos=COS.astype(object), sin=SIN), TE, "cos"),
        ("cos-1d", dict(cos=COS[0], sin=SIN[0]), VE, "cos"),
        ("cos-4d", dict(cos=COS[None, None], sin=SIN[None, None]), VE, "cos"),
        ("sin-other-shape", dict(cos=COS, sin=SIN[None]), VE, "sin"),
        ("cos-wrong-seq", dict(cos=COS[:3], sin=SIN[:3]), VE, "cos"),
        ("cos-wrong-width", dict(cos=COS[:, :2], sin=SIN[:, :2]), VE, "cos"),
        ("cos-halves-differ", dict(cos=np.concatenate([COS, COS + 1e-9], -1), sin=np.concatenate([SIN, SIN], -1)),
         VE, "cos"),
        ("sin-halves-differ", dict(cos=np.concatenate([COS, COS], -1), sin=np.concatenate([SIN, -SIN], -1)),
         VE, "sin"),
        ("cos-neox-halves-interleaved", dict(cos=np.concatenate([COS, COS], -1), sin=np.concatenate([SIN, SIN], -1),
                                             interleaved=True), VE, "cos"),
        ("cos-nan", dict(cos=np.where(COS > 0.9, np.nan, COS), sin=SIN), VE, "cos"),
        ("sin-inf", dict(cos=COS, sin=np.where(SIN > 0.5, np.inf, SIN)), VE, "sin"),
        ("cos-batch-mismatch", dict(cos=np.stack([COS] * 3), sin=np.stack([SIN] * 3)), VE, "cos"),
        ("cos-and-positions", dict(cos=COS, sin=SIN, positions=np.arange(4)), VE, "positions"),
        ("cos-and-offset", dict(cos=COS, sin=SIN, offset=2), VE, "offset"),
        ("cos-and-offset-array", dict(cos=COS, sin=SIN, offset=OFFSETS), VE, "offset"),
        ("cos-and-base", dict(cos=COS, sin=SIN, base=500.0), VE, "base"),
        ("cos-and-scaling", dict(cos=COS, sin=SIN, scaling={"type": "linear", "factor": 2.0}), VE, "scaling"),
        ("cos-and-inv_freq", dict(cos=COS, sin=SIN, inv_freq=np.ones(3)), VE, "inv_freq"),
        ("cos-and-attention_scaling", dict(cos=COS, sin=SIN, attention_scaling=1.0), VE, "attention_scaling"),
        ("cos-and-mrope_section", dict(cos=COS, sin=SIN, mrope_section=(1, 1, 1)), VE, "mrope_section"),
    ]:
        s.raises(f"tables-{id}", exc, match, **kw)
    s.same("cos-and-zero-offset", clean=no, cos=COS, sin=SIN, offset=np.int64(0))


def offset_array_cases(s: Spec) -> None:
    """``offset`` as an array [batch]: row b at ``offset[b] + arange(seq)``; validated like positions."""
    s.same("offset-array", clean={"offset": 0, "positions": OFFSET_ROWS}, offset=OFFSETS)
    s.same("offset-array-list", clean={"offset": 0, "positions": OFFSET_ROWS}, offset=OFFSETS.tolist())
    for id, v in [("int32", OFFSETS.astype(np.int32)), ("uint64", OFFSETS.astype(np.uint64)),
                  ("byteswapped", byteswapped(OFFSETS)), ("misaligned", misaligned(OFFSETS)),
                  ("negative-strides", negative_strides(OFFSETS))]:
        s.same(f"offset-array-{id}", clean={"offset": 0, "positions": OFFSET_ROWS}, offset=v)
    s.same("offset-array-negative", clean={"offset": 0, "positions": OFFSET_ROWS - 200}, offset=OFFSETS - 200)
    s.check("offset-array-near-limit", finite_or_refused, offset=OFFSETS - 103 + 2**53 - 3)
    s.same("offset-array-mrope", clean={"offset": 0, "positions": np.stack([OFFSET_ROWS] * 3)}, offset=OFFSETS,
           mrope_section=(1, 1, 1))
    for id, v, exc in [("wrong-batch", np.array([1, 2, 3]), VE), ("empty", np.array([], np.int64), VE),
                       ("2d", OFFSETS[None], VE), ("float", OFFSETS.astype(float), TE), ("bool", OFFSETS > 5, TE),
                       ("object", OFFSETS.astype(object), TE), ("complex", OFFSETS + 0j, TE),
                       ("str", OFFSETS.astype(str), TE), ("ragged", [[1], [1, 2]], (TE, VE)),
                       ("beyond-2-53", np.array([0, 2**53 - 2]), VE), ("minus-huge", np.array([-2**63, 0]), VE),
                       ("uint64-huge", np.array([0, 2**64 - 1], np.uint64), VE)]:
        s.raises(f"offset-array-{id}", exc, "offset", offset=v)
    s.raises("offset-array-and-positions", VE, "offset", offset=OFFSETS, positions=np.arange(4))
    s.raises("offset-array-and-zero-positions", VE, "offset", offset=np.zeros(2, np.int64), positions=np.arange(4))


def spec_rope_inv_freq() -> Spec:
    s = Spec("rope_inv_freq", dim=6)
    s.dim("dim", huge=False)
    s.raises("dim-huge", SIZE_ERRORS, "", dim=2**62)
    s.base("base")
    scaling_cases(s)
    return s


def spec_rope_cos_sin() -> Spec:
    s = Spec("rope_cos_sin", positions=np.array([0, 5, 2, 9]), dim=6)
    s.positions("positions", any_length=True)
    s.size("positions", baseline=4, float_exc=ValueError, id="n", empty=empty_of((0, 3)))
    s.dim("dim")
    s.base("base")
    s.raises("dtype-int", TypeError, "dtype", dtype=np.int16)
    s.raises("dtype-garbage", TypeError, "dtype", dtype="float33")
    scaling_cases(s)
    return s


def _rope_common(s: Spec, x: str) -> None:
    s.base("base")
    s.flag("interleaved")
    s.flag("inverse")
    for id, v in [("zero", 0), ("odd", 3), ("too-big", 10), ("negative", -2)]:
        s.raises(f"rotary_dim-{id}", ValueError, "rotary_dim", rotary_dim=v)
    s.raises("rotary_dim-float", TypeError, "rotary_dim", rotary_dim=4.0)
    s.same("rotary_dim-partial", rotary_dim=4)
    for id, v in [("minus-1", -1), ("zero", 0), ("one", 1), ("minus-4", -4)]:
        s.raises(f"seq_axis-{id}", ValueError, "seq_axis", seq_axis=v)
    s.raises("seq_axis-float", ValueError, "seq_axis", seq_axis=-3.0)
    s.raises("seq_axis-bool", ValueError, "seq_axis", seq_axis=True)
    s.same("seq_axis-numpy-int", clean={"seq_axis": -3}, seq_axis=np.int64(-3))
    s.integer("offset", huge=finite_or_refused)
    s.raises("positions-and-offset", ValueError, "offset", positions=np.arange(4), offset=1)
    offset_array_cases(s)
    table_cases(s)
    s.same("positions-per-batch", positions=np.array([[0, 1, 2, 3], [7, 5, 3, 1]]))
    s.same("positions-one-row", clean={"positions": np.array([0, 3, 1, 2])}, positions=np.array([[0, 3, 1, 2]]))
    s.raises("positions-batch-mismatch", ValueError, "positions", positions=np.zeros((3, 4), np.int64))
    s.raises("positions-wrong-length", ValueError, "positions", positions=np.arange(5))
    s.raises("positions-3d", ValueError, "positions", positions=np.zeros((1, 2, 4)))
    s.raises("positions-0d", ValueError, "positions", positions=np.int64(3))
    for id, v in [("nan", np.nan), ("inf", np.inf)]:
        p = np.arange(4.0)
        p[2] = v
        s.raises(f"positions-{id}", ValueError, "positions", positions=p)
    s.raises("positions-complex", TypeError, "positions", positions=np.arange(4) + 0j)
    s.raises("positions-object", TypeError, "positions", positions=np.arange(4).astype(object))
    s.raises("positions-bool", TypeError, "positions", positions=np.ones(4, bool))
    s.raises("positions-str", TypeError, "positions", positions=np.array(["a"] * 4))
    for id, make in [("byteswapped", byteswapped), ("misaligned", misaligned), ("negative-strides", negative_strides)]:
        s.same(f"positions-{id}", clean={"positions": np.arange(4) * 3}, positions=make(np.arange(4) * 3))
    s.same("positions-float32", clean={"positions": np.arange(4) * 0.5}, positions=(np.arange(4) * 0.5).astype(F32))
    for id, v in [("nan", [np.nan, 1.0, 0.1]), ("zero-length", [1.0, 1.0]), ("2d", [[1.0, 1.0, 1.0]])]:
        s.raises(f"inv_freq-{id}", ValueError, "inv_freq", inv_freq=np.array(v))
    s.raises("inv_freq-complex", ValueError, "inv_freq", inv_freq=np.ones(3) + 0j)
    s.same("inv_freq-float32", clean={"inv_freq": np.array([1.0, 0.5, 0.25])}, inv_freq=np.array([1, .5, .25], F32))
    s.raises("inv_freq-and-scaling", ValueError, "inv_freq", inv_freq=np.ones(3),
             scaling={"type": "linear", "factor": 2.0})
    for id, v, exc in [("nan", float("nan"), ValueError), ("inf", float("inf"), ValueError),
                       ("str", "1", TypeError), ("bool", True, TypeError), ("array", np.ones(2), TypeError)]:
        s.raises(f"attention_scaling-{id}", exc, "attention_scaling", attention_scaling=v)
    s.same("attention_scaling-int", clean={"attention_scaling": 2.0}, attention_scaling=2)
    scaling_cases(s)
    s.raises("mrope_section-wrong-sum", ValueError, "mrope_section", mrope_section=(1, 1, 2),
             positions=np.zeros((3, 2, 4), np.int64))
    s.raises("mrope_section-two", ValueError, "mrope_section", mrope_section=(1, 2),
             positions=np.zeros((3, 2, 4), np.int64))
    s.raises("mrope_section-float", TypeError, "mrope_section", mrope_section=(1.0, 1.0, 1.0),
             positions=np.zeros((3, 2, 4), np.int64))
    s.raises("mrope_section-negative", ValueError, "mrope_section", mrope_section=(4, -1, 0),
             positions=np.zeros((3, 2, 4), np.int64))
    s.raises("mrope_section-str", TypeError, "mrope_section", mrope_section="111")
    s.raises("mrope_interleaved-alone", ValueError, "mrope", mrope_interleaved=True)
    s.raises("mrope_interleaved-str", TypeError, "mrope_interleaved", mrope_section=(1, 1, 1), mrope_interleaved="1")
    s.raises("mrope-positions-two-axes", ValueError, "positions", mrope_section=(1, 1, 1),
             positions=np.zeros((2, 2, 4), np.int64))
    s.raises("mrope-positions-two-axes-2d", ValueError, "positions", mrope_section=(1, 1, 1),
             positions=np.zeros((2, 4), np.int64))
    s.same("mrope-positions", mrope_section=(1, 1, 1), positions=np.arange(24).reshape(3, 2, 4) % 5)
    s.same("mrope-positions-interleaved", mrope_section=(1, 1, 1), mrope_interleaved=True,
           positions=np.arange(24).reshape(3, 2, 4) % 7)


def spec_apply_rope() -> Spec:
    x = rand(2, 4, 3, 6)  # [batch, seq, heads, head_dim]
    s = Spec("apply_rope", x=x)
    s.floats("x")
    s.raises("x-odd-head_dim", ValueError, "x", x=rand(2, 4, 3, 5))
    s.raises("x-empty-head_dim", ValueError, "x", x=rand(2, 4, 3, 0))
    s.raises("x-2d", ValueError, "x", x=rand(4, 6))
    s.raises("x-1d-seq_axis-minus-2", ValueError, "x", x=rand(6), seq_axis=-2)
    s.check("x-empty-seq", empty_of((2, 0, 3, 6)), x=rand(2, 0, 3, 6))
    s.check("x-empty-batch", empty_of((0, 4, 3, 6)), x=rand(0, 4, 3, 6))
    s.same("seq_axis-minus-2", seq_axis=-2, x=rand(2, 3, 4, 6))
    s.same("seq_axis-minus-2-no-heads", seq_axis=-2, x=rand(2, 4, 6))
    s.raises("offset-array-no-batch-axis", ValueError, "offset", seq_axis=-2, x=rand(4, 6), offset=np.arange(4))
    xh = rand(2, 3, 4, 6)  # [batch, heads, seq, head_dim]
    s.same("offset-array-seq_axis-minus-2", clean={"x": xh, "offset": 0, "positions": OFFSET_ROWS, "seq_axis": -2}, x=xh,
           seq_axis=-2, offset=OFFSETS)
    _rope_common(s, "x")
    s.out(x.shape, F32, inputs=["x"])
    in_place_variants(s, {"x": "out"})
    return s


def spec_apply_rope_qk() -> Spec:
    q, k = rand(2, 4, 3, 6), rand(2, 4, 1, 6)
    s = Spec("apply_rope_qk", q=q, k=k)
    s.floats("q")
    s.floats("k")
    s.raises("k-seq-mismatch", ValueError, "seq", k=rand(2, 5, 1, 6))
    s.raises("k-batch-mismatch", ValueError, "k", k=rand(3, 4, 1, 6), positions=np.arange(8).reshape(2, 4))
    s.raises("k-rank-mismatch", ValueError, "k", k=rand(4, 6))
    s.raises("k-odd-head_dim", ValueError, "k", k=rand(2, 4, 1, 5))
    s.raises("k-head_dim-mismatch", ValueError, "rotary_dim", k=rand(2, 4, 1, 4))
    s.raises("k-head_dim-below-rotary_dim", ValueError, "rotary_dim", k=rand(2, 4, 1, 4), rotary_dim=6)
    s.same("k-head_dim-mismatch-rotary_dim", k=rand(2, 4, 1, 8), rotary_dim=4)
    # Mixed dtypes are documented: each operand rotated in its own dtype (as two apply_rope calls).
    s.same("k-float64", k=rand(2, 4, 1, 6, dtype=np.float64))
    q2, k16 = q.copy(), k.astype(np.float16)
    s.same("k-float16-in-place", clean={"q": q.copy(), "k": k16.copy()}, q=q2, k=k16, out_q=q2, out_k=k16)
    s.same("k-rank-3-seq_axis-minus-2", seq_axis=-2, q=rand(2, 3, 4, 6), k=rand(2, 4, 6))
    s.check("empty-seq", empty_of((2, 0, 3, 6)), q=rand(2, 0, 3, 6), k=rand(2, 0, 1, 6))
    _rope_common(s, "q")
    s.out(q.shape, F32, inputs=["q"], arg="out_q")
    s.out(k.shape, F32, inputs=["k"], arg="out_k")
    buf = np.zeros(2 * 4 * 3 * 6, F32)
    s.raises("out_q-is-out_k", ValueError, "out", q=rand(2, 4, 3, 6), k=rand(2, 4, 3, 6),
             out_q=buf.reshape(2, 4, 3, 6), out_k=buf.reshape(2, 4, 3, 6))
    same = rand(2, 4, 3, 6)
    s.raises("k-is-q-in-place", ValueError, "overlaps", q=same, k=same, out_q=same)
    s.raises("out_k-is-q", ValueError, "overlaps", q=same, k=rand(2, 4, 3, 6), out_k=same)
    xpos_cases(s)
    in_place_variants(s, {"q": "out_q", "k": "out_k"})
    return s


def xpos_cases(s: Spec) -> None:
    """apply_rope_qk's xPos arguments."""
    for id, v, exc in [("zero", 0.0, VE), ("negative", -512.0, VE), ("nan", float("nan"), VE), ("inf", float("inf"), VE),
                       ("str", "512", TE), ("bool", True, TE), ("array", np.ones(2), TE)]:
        s.raises(f"xpos_scale_base-{id}", exc, "xpos_scale_base", xpos_scale_base=v)
    for id, v, exc in [("nan", float("nan"), VE), ("inf", float("inf"), VE), ("str", "2", TE), ("none", None, TE)]:
        s.raises(f"xpos_center-{id}", exc, "xpos_center", xpos_scale_base=512.0, xpos_center=v)
    s.raises("xpos_center-without-xpos", VE, "xpos_center", xpos_center=2)
    s.raises("xpos-and-cos-sin", VE, "xpos_scale_base", xpos_scale_base=512.0, cos=COS, sin=SIN)
    s.raises("xpos-and-mrope", VE, "xpos_scale_base", xpos_scale_base=512.0, mrope_section=(1, 1, 1))
    s.raises("xpos-overflow", VE, "xpos_center", xpos_scale_base=1.0, offset=10**6)
    s.same("xpos-int-base", clean={"xpos_scale_base": 512.0}, xpos_scale_base=512, xpos_center=0)
    s.same("xpos-numpy", clean={"xpos_scale_base": 8.0, "xpos_center": 2.0}, xpos_scale_base=np.float32(8),
           xpos_center=np.int64(2))
    s.same("xpos-offset-array", clean={"offset": 0, "positions": OFFSET_ROWS}, xpos_scale_base=8.0, xpos_center=50,
           offset=OFFSETS)
    s.same("xpos-mixed-dtypes", k=rand(2, 4, 1, 6).astype(np.float16), xpos_scale_base=8.0, xpos_center=1.5)
    q2, k2 = rand(2, 4, 3, 6), rand(2, 4, 1, 6)
    s.same("xpos-in-place", clean={"q": q2.copy(), "k": k2.copy()}, q=q2, k=k2, out_q=q2, out_k=k2,
           xpos_scale_base=8.0, xpos_center=1.5)


def spec_positions_from_cu_seqlens() -> Spec:
    s = Spec("positions_from_cu_seqlens", cu_seqlens=np.array([0, 3, 3, 7]))
    s.raises("cu_seqlens-decreasing", ValueError, "cu_seqlens", cu_seqlens=np.array([0, 5, 3]))
    s.raises("cu_seqlens-not-from-zero", ValueError, "cu_seqlens", cu_seqlens=np.array([1, 5]))
    s.raises("cu_seqlens-empty", ValueError, "cu_seqlens", cu_seqlens=np.array([], np.int64))
    s.raises("cu_seqlens-empty-list", ValueError, "cu_seqlens", cu_seqlens=[])
    s.raises("cu_seqlens-2d", ValueError, "cu_seqlens", cu_seqlens=np.zeros((2, 2), np.int64))
    s.raises("cu_seqlens-float", TypeError, "cu_seqlens", cu_seqlens=np.array([0.0, 3.0]))
    s.raises("cu_seqlens-bool", TypeError, "cu_seqlens", cu_seqlens=np.array([False, True]))
    s.raises("cu_seqlens-object", TypeError, "cu_seqlens", cu_seqlens=np.array([0, 3], dtype=object))
    s.raises("cu_seqlens-huge", SIZE_ERRORS, "", cu_seqlens=np.array([0, 2**62], np.int64))
    s.raises("cu_seqlens-wrapping", (ValueError, MemoryError), "", cu_seqlens=np.array([0, 2**62, 2**63 - 1], np.int64))
    s.raises("cu_seqlens-uint64-huge", (ValueError, MemoryError), "",
             cu_seqlens=np.array([0, 2**64 - 1], np.uint64))
    s.check("cu_seqlens-only-zero", empty_of((0,)), cu_seqlens=np.array([0]))
    for id, make in [("byteswapped", byteswapped), ("misaligned", misaligned), ("negative-strides", negative_strides),
                     ("stepped", stepped)]:
        s.same(f"cu_seqlens-{id}", clean={"cu_seqlens": np.array([0, 3, 3, 7])}, cu_seqlens=make(np.array([0, 3, 3, 7])))
    s.same("cu_seqlens-list", clean={"cu_seqlens": np.array([0, 3, 3, 7])}, cu_seqlens=[0, 3, 3, 7])
    s.same("cu_seqlens-int32", clean={"cu_seqlens": np.array([0, 3, 3, 7])}, cu_seqlens=np.array([0, 3, 3, 7], np.int32))
    return s


# ------------------------------------------------------------------ RotaryEmbedding and its methods

def spec_rotary_embedding() -> Spec:
    s = Spec("RotaryEmbedding", dim=6)
    s.dim("dim", huge=False)
    s.base("base")
    s.flag("interleaved")
    for id, v in [("odd", 3), ("too-big", 8), ("zero", 0)]:
        s.raises(f"rotary_dim-{id}", ValueError, "rotary_dim", rotary_dim=v)
    s.raises("dim-odd-without-rotary_dim", ValueError, "dim", dim=7)
    s.same("dim-odd-rotary_dim", dim=7, rotary_dim=4)
    s.raises("max_positions-negative", ValueError, "max_positions", max_positions=-1)
    s.raises("max_positions-float", TypeError, "max_positions", max_positions=2.5)
    for id, v, exc in [("zero", 0.0, VE), ("nan", float("nan"), VE), ("str", "512", TE), ("bool", True, TE)]:
        s.raises(f"xpos_scale_base-{id}", exc, "xpos_scale_base", xpos_scale_base=v)
    scaling_cases(s)
    _call_cases(s)
    _cos_sin_cases(s)
    _from_config_cases(s)
    return s


def _call_cases(s: Spec) -> None:
    """``RotaryEmbedding(6, ...)(q, k, ...)``: refused as apply_rope_qk refuses; results as apply_rope_qk's."""
    q, k = rand(2, 4, 2, 6), rand(2, 4, 1, 6)

    def call(ctor: Optional[Dict[str, Any]] = None, q: np.ndarray = q, k: np.ndarray = k,
             **kw: Any) -> Callable[[Any], Any]:
        return lambda api: api.RotaryEmbedding(6, **(ctor or {}))(q, k, **kw)

    for id, kw, exc, match in [
        ("positions-nan", dict(positions=np.array([0, 1, np.nan, 3])), VE, "positions"),
        ("positions-wrong-length", dict(positions=np.arange(5)), VE, "positions"),
        ("positions-and-offset", dict(positions=np.arange(4), offset=1), VE, "offset"),
        ("q-int", dict(q=q.astype(np.int32)), TE, "q"),
        ("k-complex", dict(k=k.astype(np.complex64)), TE, "k"),
        ("k-seq-mismatch", dict(k=rand(2, 5, 1, 6)), VE, "seq"),
        ("offset-float", dict(offset=1.5), TE, "offset"),
        ("offset-array-wrong-batch", dict(offset=np.array([1, 2, 3])), VE, "offset"),
        ("offset-array-float", dict(offset=np.array([1.0, 2.0])), TE, "offset"),
        ("offset-array-and-positions", dict(offset=np.array([1, 2]), positions=np.arange(4)), VE, "offset"),
        ("seq_axis-minus-1", dict(seq_axis=-1), VE, "seq_axis"),
        ("inverse-str", dict(inverse="yes"), TE, "inverse"),
        ("out_q-wrong-shape", dict(out_q=np.zeros((2, 4, 1, 6), F32)), VE, "out_q"),
        ("out_k-wrong-dtype", dict(out_k=np.zeros((2, 4, 1, 6))), TE, "out_k"),
    ]:
        s.custom(f"call-{id}", call(**kw), Raises(exc, match))
    s.custom("call-head_dim-below-dim", lambda api: api.RotaryEmbedding(8)(q, k), Raises(VE, "rotary_dim"))
    s.custom("call-huge-offset", call({"max_positions": 16}, offset=HUGE), Raises(VE, "offset"))
    s.custom("call-empty", lambda api: api.RotaryEmbedding(6)(rand(1, 0, 2, 6), rand(1, 0, 1, 6)),
             Check(empty_of((1, 0, 2, 6))))
    # Results: apply_rope_qk's with the same frequencies (reference twin on clean copies).
    plain = dict(q=q, k=k, rotary_dim=4, offset=3)
    for id, make in [("misaligned", misaligned), ("negative-strides", negative_strides), ("stepped", stepped),
                     ("byteswapped", byteswapped)]:
        s.custom(f"call-{id}", lambda api, m=make: api.RotaryEmbedding(6, rotary_dim=4)(m(q), m(k), offset=3),
                 Same(plain, name="apply_rope_qk"))
    s.custom("call-positions-per-batch",
             lambda api: api.RotaryEmbedding(6, interleaved=True)(q, k, np.array([[0, 9, 2, 3], [5, 1, 0, 7]])),
             Same(dict(q=q, k=k, positions=np.array([[0, 9, 2, 3], [5, 1, 0, 7]]), interleaved=True),
                  name="apply_rope_qk"))
    qh, kh = rand(2, 2, 4, 6), rand(2, 1, 4, 6)  # [batch, heads, seq, head_dim]
    s.custom("call-seq_axis-minus-2-inverse",
             lambda api: api.RotaryEmbedding(6)(qh, kh, seq_axis=-2, inverse=True),
             Same(dict(q=qh, k=kh, seq_axis=-2, inverse=True), name="apply_rope_qk"))
    s.custom("call-offset-array", lambda api: api.RotaryEmbedding(6)(q, k, offset=OFFSETS),
             Same(dict(q=q, k=k, positions=OFFSET_ROWS), name="apply_rope_qk"))
    s.custom("call-dynamic-offset-array", lambda api: api.RotaryEmbedding(6, scaling=DYNAMIC)(q, k, offset=OFFSETS),
             Same(dict(q=q, k=k, scaling={**DYNAMIC, "seq_len": 104}, positions=OFFSET_ROWS), name="apply_rope_qk"))
    s.custom("call-xpos_center-without-xpos", lambda api: api.RotaryEmbedding(6)(q, k, xpos_center=1),
             Raises(VE, "xpos_center"))
    s.custom("call-xpos_center-nan", lambda api: api.RotaryEmbedding(6, xpos_scale_base=8)(q, k, xpos_center=np.nan),
             Raises(VE, "xpos_center"))
    s.custom("call-xpos", lambda api: api.RotaryEmbedding(6, xpos_scale_base=8)(q, k, offset=3, xpos_center=4),
             Same(dict(q=q, k=k, offset=3, xpos_scale_base=8.0, xpos_center=4), name="apply_rope_qk"))
    s.custom("call-xpos-yarn", lambda api: api.RotaryEmbedding(6, scaling=YARN, xpos_scale_base=8)(q, k, offset=5),
             Same(dict(q=q, k=k, scaling=YARN, offset=5, xpos_scale_base=8.0), name="apply_rope_qk"))
    s.custom("call-yarn", lambda api: api.RotaryEmbedding(6, scaling=YARN)(q, k, offset=5),
             Same(dict(q=q, k=k, scaling=YARN, offset=5), name="apply_rope_qk"))
    s.custom("call-dynamic-long", lambda api: api.RotaryEmbedding(6, scaling=DYNAMIC)(q, k, offset=30),
             Same(dict(q=q, k=k, scaling={**DYNAMIC, "seq_len": 34}, offset=30), name="apply_rope_qk"))

    def in_place(api: Any) -> Any:
        qq, kk = q.copy(), k.copy()
        got = api.RotaryEmbedding(6)(qq, kk, offset=2, out_q=qq, out_k=kk)
        assert got[0] is qq and got[1] is kk, "out_q/out_k must be returned as passed"
        return got

    s.custom("call-in-place", in_place, Same(dict(q=q, k=k, offset=2), name="apply_rope_qk"))


def _cos_sin_cases(s: Spec) -> None:
    """``RotaryEmbedding(6, ...).cos_sin(positions, dtype)``: refused as rope_cos_sin refuses; its values."""
    pos = np.array([0, 5, 2, 9])

    def cos_sin(ctor: Optional[Dict[str, Any]] = None, **kw: Any) -> Callable[[Any], Any]:
        return lambda api: api.RotaryEmbedding(6, **(ctor or {})).cos_sin(**kw)

    cached = {"max_positions": 16}
    for id, kw, exc, match in [
        ("positions-nan", dict(positions=np.array([0.0, np.nan])), VE, "positions"),
        ("positions-inf", dict(positions=np.array([0.0, np.inf])), VE, "positions"),
        ("positions-2d", dict(positions=pos.reshape(2, 2)), VE, "positions"),
        ("positions-negative-count", dict(positions=-1), VE, "positions"),
        ("positions-float-scalar", dict(positions=2.5), VE, "positions"),
        ("positions-none", dict(positions=None), VE, "positions"),
        ("positions-complex", dict(positions=pos + 0j), TE, "positions"),
        ("positions-str", dict(positions=pos.astype(str)), TE, "positions"),
        ("positions-bool", dict(positions=pos > 2), TE, "positions"),
        ("positions-object", dict(positions=pos.astype(object)), TE, "positions"),
        ("dtype-int", dict(positions=pos, dtype=np.int32), TE, "dtype"),
        ("dtype-garbage", dict(positions=pos, dtype="float33"), TE, "dtype"),
    ]:
        s.custom(f"cos_sin-{id}", cos_sin(**kw), Raises(exc, match))
        s.custom(f"cos_sin-{id}-cached", cos_sin(cached, **kw), Raises(exc, match))
    for h in (2**40, 2**62):
        s.custom(f"cos_sin-huge-{h.bit_length() - 1}", cos_sin(positions=h), Raises(SIZE_ERRORS, ""))
        s.custom(f"cos_sin-huge-{h.bit_length() - 1}-cached", cos_sin(cached, positions=h), Raises(SIZE_ERRORS, ""))
    s.custom("cos_sin-empty", cos_sin(positions=0), Check(empty_of((0, 3))))
    s.custom("cos_sin-empty-cached", cos_sin(cached, positions=np.array([], np.int64)), Check(empty_of((0, 3))))
    # Values: rope_cos_sin's with the same frequencies, from the cache or not, in any layout.
    for id, ctor, kw, clean in [
        ("positions", {}, dict(positions=pos), dict(positions=pos)),
        ("count", {}, dict(positions=4), dict(positions=4)),
        ("count-cached", cached, dict(positions=4), dict(positions=4)),
        ("cached", cached, dict(positions=pos), dict(positions=pos)),
        ("cached-beyond", cached, dict(positions=np.array([3, 15, 16, 40])), dict(positions=np.array([3, 15, 16, 40]))),
        ("cached-negative", cached, dict(positions=np.array([-3, 2])), dict(positions=np.array([-3, 2]))),
        ("cached-float", cached, dict(positions=np.array([0.5, 2.0])), dict(positions=np.array([0.5, 2.0]))),
        ("cached-float64", cached, dict(positions=pos, dtype=np.float64), dict(positions=pos, dtype=np.float64)),
        ("float16", {}, dict(positions=pos, dtype=np.float16), dict(positions=pos, dtype=np.float16)),
        ("list", cached, dict(positions=pos.tolist()), dict(positions=pos)),
        ("float32-positions", {}, dict(positions=(pos * 0.5).astype(F32)), dict(positions=pos * 0.5)),
        ("byteswapped", cached, dict(positions=byteswapped(pos)), dict(positions=pos)),
        ("misaligned", cached, dict(positions=misaligned(pos)), dict(positions=pos)),
        ("negative-strides", {}, dict(positions=negative_strides(pos)), dict(positions=pos)),
        ("numpy-int", cached, dict(positions=np.int64(5)), dict(positions=5)),
        ("llama3", {"scaling": LLAMA3}, dict(positions=pos), dict(positions=pos, scaling=LLAMA3)),
        ("dynamic", {"scaling": DYNAMIC}, dict(positions=np.array([3, 40])),
         dict(positions=np.array([3, 40]), scaling={**DYNAMIC, "seq_len": 41})),
        ("longrope-long", {"scaling": LONGROPE}, dict(positions=np.array([3, 40])),
         dict(positions=np.array([3, 40]), scaling={**LONGROPE, "seq_len": 41})),
    ]:
        s.custom(f"cos_sin-{id}", cos_sin(ctor, **kw), Same({"dim": 6, **clean}, name="rope_cos_sin"))


class _NotADictConfig:
    def to_dict(self) -> List[Any]:
        return [("head_dim", 6)]


def _from_config_cases(s: Spec) -> None:
    """``RotaryEmbedding.from_config(config, layer_type=, max_positions=)``: bad configs are named errors;
    good ones rotate as apply_rope_qk with the arguments the config stands for."""
    theta = {"rope_theta": 1e4}
    per_layer = {"head_dim": 6, "layer_types": ["sliding_attention", "full_attention"],
                 "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
                                     "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6}}}
    for id, config, kw, exc, match in [
        ("str", "llama", {}, TE, "config"),
        ("int", 3, {}, TE, "config"),
        ("to_dict-not-a-dict", _NotADictConfig(), {}, TE, "to_dict"),
        ("no-rope", {"hidden_size": 12, "num_attention_heads": 2}, {}, VE, "rotary"),
        ("no-head_dim", theta, {}, VE, "head_dim"),
        ("head_dim-zero", {"head_dim": 0, **theta}, {}, VE, "head_dim"),
        ("head_dim-str", {"head_dim": "6", **theta}, {}, VE, "head_dim"),
        ("head_dim-float", {"head_dim": 6.0, **theta}, {}, VE, "head_dim"),
        ("head_dim-odd", {"head_dim": 5, **theta}, {}, VE, "dim"),
        ("num_attention_heads-zero", {"hidden_size": 12, "num_attention_heads": 0, **theta}, {}, VE,
         "num_attention_heads"),
        ("rope_parameters-list", {"head_dim": 6, "rope_parameters": [("rope_type", "default")]}, {}, VE,
         "rope_parameters"),
        ("rope_theta-nan", {"head_dim": 6, "rope_theta": float("nan")}, {}, VE, "rope_theta"),
        ("rope_theta-one", {"head_dim": 6, "rope_parameters": {"rope_type": "default", "rope_theta": 1}}, {}, VE,
         "rope_theta"),
        ("rope_type-unknown", {"head_dim": 6, "rope_parameters": {"rope_type": "quadratic"}}, {}, VE, "rope_type"),
        ("rope_key-unknown", {"head_dim": 6, "rope_parameters": {"rope_type": "linear", "factor": 2, "fctor": 3}},
         {}, VE, "fctor"),
        ("per-layer-without-layer_type", per_layer, {}, VE, "layer_type"),
        ("per-layer-unknown-layer_type", per_layer, {"layer_type": "global"}, VE, "layer_type"),
        ("layer_type-not-in-layer_types", {"head_dim": 6, "layer_types": ["full_attention"], **theta},
         {"layer_type": "sliding_attention"}, VE, "layer_type"),
        ("nope-layer", {**per_layer, "rope_parameters": {**per_layer["rope_parameters"], "full_attention": None}},
         {"layer_type": "full_attention"}, VE, "no rotary"),
        ("dynamic-without-max_position_embeddings",
         {"head_dim": 6, "rope_parameters": {"rope_type": "dynamic", "factor": 2.0}}, {}, VE,
         "max_position_embeddings"),
        ("yarn-without-lengths", {"head_dim": 6, "rope_parameters": {"rope_type": "yarn", "factor": 2.0}}, {}, VE,
         "original_max_position_embeddings"),
        ("mrope-section-wrong-sum", {"model_type": "qwen2_vl", "head_dim": 6, **theta}, {}, VE, "mrope_section"),
        ("partial-odd", {"head_dim": 6, "partial_rotary_factor": 0.5, **theta}, {}, VE, "partial_rotary_factor"),
        ("rotary_dim-too-big", {"model_type": "gptj", "n_embd": 12, "n_head": 2, "rotary_dim": 8}, {}, VE,
         "rotary_dim"),
        ("max_positions-negative", {"head_dim": 6, **theta}, {"max_positions": -1}, VE, "max_positions"),
    ]:
        s.custom(f"from_config-{id}", lambda api, c=config, k=kw: api.RotaryEmbedding.from_config(c, **k),
                 Raises(exc, match))
    q, k = rand(2, 4, 2, 6), rand(2, 4, 1, 6)
    pos3 = np.arange(24).reshape(3, 2, 4) % 5
    for id, config, kw, call, plain in [
        ("rope_parameters", {"head_dim": 6, "rope_parameters": {"rope_type": "linear", "factor": 2.0,
                                                                "rope_theta": 5e5}}, {}, dict(offset=3),
         dict(base=5e5, scaling={"type": "linear", "factor": 2.0}, offset=3)),
        ("raw-rope_scaling", {"hidden_size": 12, "num_attention_heads": 2, "rope_theta": 5e5,
                              "rope_scaling": {"type": "linear", "factor": 2.0}}, {}, dict(offset=3),
         dict(base=5e5, scaling={"type": "linear", "factor": 2.0}, offset=3)),
        ("gptj", {"model_type": "gptj", "n_embd": 12, "n_head": 2, "rotary_dim": 4}, {}, dict(offset=1),
         dict(rotary_dim=4, interleaved=True, offset=1)),
        ("dynamic", {"head_dim": 6, "max_position_embeddings": 16, "rope_parameters": {"rope_type": "dynamic",
                                                                                     "factor": 2.0}}, {},
         dict(offset=30), dict(scaling={**DYNAMIC, "seq_len": 34}, offset=30)),
        ("per-layer", per_layer, {"layer_type": "full_attention"}, dict(offset=2),
         dict(base=1e6, scaling={"type": "linear", "factor": 8.0}, offset=2)),
        ("qwen2-vl", {"model_type": "qwen2_vl", "head_dim": 6,
                      "rope_parameters": {"type": "mrope", "mrope_section": [1, 1, 1], "rope_theta": 1e6,
                                          "rope_type": "default"}}, {}, dict(positions=pos3),
         dict(base=1e6, mrope_section=(1, 1, 1), positions=pos3)),
        ("qwen3-vl", {"model_type": "qwen3_vl_text", "head_dim": 6,
                      "rope_parameters": {"rope_type": "default", "mrope_section": [1, 1, 1]}}, {},
         dict(positions=pos3), dict(mrope_section=(1, 1, 1), mrope_interleaved=True, positions=pos3)),
        ("max_positions", {"head_dim": 6, **theta}, {"max_positions": 8}, dict(offset=2), dict(offset=2)),
    ]:
        s.custom(f"from_config-{id}",
                 lambda api, c=config, kk=kw, cl=call: api.RotaryEmbedding.from_config(c, **kk)(q, k, **cl),
                 Same(dict(q=q, k=k, **plain), name="apply_rope_qk"))


SPECS: Dict[str, Callable[[], Spec]] = {
    "rope_inv_freq": spec_rope_inv_freq,
    "rope_cos_sin": spec_rope_cos_sin,
    "apply_rope": spec_apply_rope,
    "apply_rope_qk": spec_apply_rope_qk,
    "positions_from_cu_seqlens": spec_positions_from_cu_seqlens,
    "RotaryEmbedding": spec_rotary_embedding,
}
