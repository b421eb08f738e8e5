"""Hostile-input specs of the rotary family (run by tests/test_arguments.py).

Baselines are small: the table checks outcomes, the family tests check accuracy at scale.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

import numpy as np

from helpers import rand
from hostile import (HUGE, SIZE_ERRORS, Check, Raises, Spec, byteswapped, empty_of, finite_or_refused,
                     misaligned, negative_strides, stepped)

F32 = np.float32


def scaling_cases(s: Spec, arg: str = "scaling") -> None:
    """A RoPE scaling dict: unknown types and keys, non-finite or non-positive factors are refused."""
    VE, TE = ValueError, TypeError
    bad = [
        ("not-a-dict", "linear", (TE, VE)),
        ("list", [("type", "linear")], (TE, VE)),
        ("unknown-type", {"type": "quadratic", "factor": 2.0}, VE),
        ("type-not-str", {"type": 3, "factor": 2.0}, (TE, VE)),
        ("unknown-key", {"type": "linear", "factor": 2.0, "fctor": 3.0}, VE),
        ("missing-factor", {"type": "linear"}, VE),
        ("factor-nan", {"type": "linear", "factor": float("nan")}, VE),
        ("factor-inf", {"type": "linear", "factor": float("inf")}, VE),
        ("factor-zero", {"type": "linear", "factor": 0.0}, VE),
        ("factor-negative", {"type": "linear", "factor": -2.0}, VE),
        ("factor-str", {"type": "linear", "factor": "2"}, (TE, VE)),
        ("factor-complex", {"type": "linear", "factor": 2j}, (TE, VE)),
        ("yarn-orig-zero", {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 0}, VE),
        ("yarn-orig-str", {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": "4096"}, (TE, VE)),
        ("llama3-equal-factors", {"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 1.0,
                                  "original_max_position_embeddings": 8192}, VE),
        ("longrope-short-wrong-length", {"type": "longrope", "short_factor": [1.0], "long_factor": [1.0],
                                         "original_max_position_embeddings": 16, "factor": 2.0}, VE),
        ("longrope-nan", {"type": "longrope", "short_factor": [float("nan")] * 3, "long_factor": [1.0] * 3,
                          "original_max_position_embeddings": 16, "factor": 2.0}, VE),
        ("dynamic-seq-negative", {"type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 16,
                                  "seq_len": -1}, VE),
    ]
    for id, value, exc in bad:
        s.raises(f"{arg}-{id}", exc, "scaling", **{arg: value})
    s.same(f"{arg}-rope_type-alias", clean={arg: {"type": "linear", "factor": 2.0}},
           **{arg: {"rope_type": "linear", "factor": 2.0}})
    s.same(f"{arg}-numpy-factor", clean={arg: {"type": "linear", "factor": 2.0}},
           **{arg: {"type": "linear", "factor": np.float32(2.0)}})


# ------------------------------------------------------------------ rotary

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
    s.raises("seq_axis-float", (TypeError, ValueError), "seq_axis", seq_axis=-3.0)
    s.integer("offset", huge=finite_or_refused)
    s.raises("positions-and-offset", ValueError, "offset", positions=np.arange(4), offset=1)
    s.same("positions-per-batch", positions=np.array([[0, 1, 2, 3], [7, 5, 3, 1]]))
    s.raises("positions-batch-mismatch", ValueError, "positions", positions=np.zeros((3, 4), np.int64))
    s.raises("positions-wrong-length", ValueError, "positions", positions=np.arange(5))
    s.raises("positions-3d", ValueError, "positions", positions=np.zeros((1, 2, 4)))
    for id, v in [("nan", np.nan), ("inf", np.inf)]:
        p = np.arange(4.0)
        p[2] = v
        s.raises(f"positions-{id}", ValueError, "positions", positions=p)
    s.raises("positions-complex", TypeError, "positions", positions=np.arange(4) + 0j)
    s.raises("positions-object", TypeError, "positions", positions=np.arange(4).astype(object))
    s.raises("positions-bool", TypeError, "positions", positions=np.ones(4, bool))
    for id, make in [("byteswapped", byteswapped), ("misaligned", misaligned), ("negative-strides", negative_strides)]:
        s.same(f"positions-{id}", clean={"positions": np.arange(4) * 3}, positions=make(np.arange(4) * 3))
    s.same("positions-float32", clean={"positions": np.arange(4) * 0.5}, positions=(np.arange(4) * 0.5).astype(F32))
    for id, v in [("nan", [np.nan, 1.0, 0.1]), ("zero-length", [1.0, 1.0]), ("2d", [[1.0, 1.0, 1.0]])]:
        s.raises(f"inv_freq-{id}", ValueError, "inv_freq", inv_freq=np.array(v))
    s.raises("inv_freq-complex", (TypeError, ValueError), "inv_freq", inv_freq=np.ones(3) + 0j)
    s.same("inv_freq-float32", clean={"inv_freq": np.array([1.0, 0.5, 0.25])}, inv_freq=np.array([1, .5, .25], F32))
    s.raises("inv_freq-and-scaling", ValueError, "inv_freq", inv_freq=np.ones(3),
             scaling={"type": "linear", "factor": 2.0})
    scaling_cases(s)
    s.raises("mrope_section-wrong-sum", ValueError, "mrope_section", mrope_section=(1, 1, 2),
             positions=np.zeros((3, 2, 4), np.int64))
    s.raises("mrope_section-two", ValueError, "mrope_section", mrope_section=(1, 2),
             positions=np.zeros((3, 2, 4), np.int64))
    s.raises("mrope_section-float", (TypeError, ValueError), "mrope_section", mrope_section=(1.0, 1.0, 1.0),
             positions=np.zeros((3, 2, 4), np.int64))
    s.raises("mrope_section-negative", ValueError, "mrope_section", mrope_section=(4, -1, 0),
             positions=np.zeros((3, 2, 4), np.int64))
    s.raises("mrope_interleaved-alone", ValueError, "mrope", mrope_interleaved=True)
    s.same("mrope-positions", mrope_section=(1, 1, 1), positions=np.arange(24).reshape(3, 2, 4) % 5)


def spec_apply_rope() -> Spec:
    x = rand(2, 4, 3, 6)  # [batch, seq, heads, head_dim]
    s = Spec("apply_rope", x=x)
    s.floats("x")
    s.raises("x-odd-head_dim", ValueError, "x", x=rand(2, 4, 3, 5))
    s.raises("x-2d", ValueError, "x", x=rand(4, 6))
    s.check("x-empty-seq", empty_of((2, 0, 3, 6)), x=rand(2, 0, 3, 6))
    s.check("x-empty-batch", empty_of((0, 4, 3, 6)), x=rand(0, 4, 3, 6))
    s.same("seq_axis-minus-2", seq_axis=-2, x=rand(2, 3, 4, 6))
    _rope_common(s, "x")
    s.out(x.shape, F32, inputs=["x"])
    return s


def spec_apply_rope_qk() -> Spec:
    q, k = rand(2, 4, 3, 6), rand(2, 4, 1, 6)
    s = Spec("apply_rope_qk", q=q, k=k)
    s.floats("q")
    s.floats("k")
    s.raises("k-seq-mismatch", ValueError, "seq", k=rand(2, 5, 1, 6))
    s.add("k-dtype-mismatch", Check(lambda r: None, (TypeError, ValueError), "dtype"), k=rand(2, 4, 1, 6, dtype=np.float64))
    s.check("empty-seq", empty_of((2, 0, 3, 6)), q=rand(2, 0, 3, 6), k=rand(2, 0, 1, 6))
    _rope_common(s, "q")
    s.out(q.shape, F32, inputs=["q"], arg="out_q")
    s.out(k.shape, F32, inputs=["k"], arg="out_k")
    buf = np.zeros(2 * 4 * 3 * 6, F32)
    s.raises("out_q-is-out_k", ValueError, "out", q=rand(2, 4, 3, 6), k=rand(2, 4, 3, 6),
             out_q=buf.reshape(2, 4, 3, 6), out_k=buf.reshape(2, 4, 3, 6))
    return s


def spec_positions_from_cu_seqlens() -> Spec:
    s = Spec("positions_from_cu_seqlens", cu_seqlens=np.array([0, 3, 3, 7]))
    s.raises("cu_seqlens-decreasing", ValueError, "cu_seqlens", cu_seqlens=np.array([0, 5, 3]))
    s.raises("cu_seqlens-not-from-zero", ValueError, "cu_seqlens", cu_seqlens=np.array([1, 5]))
    s.raises("cu_seqlens-empty", ValueError, "cu_seqlens", cu_seqlens=np.array([], np.int64))
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


def spec_rotary_embedding() -> Spec:
    s = Spec("RotaryEmbedding", dim=6)
    s.dim("dim", huge=False)
    s.base("base")
    s.flag("interleaved")
    for id, v in [("odd", 3), ("too-big", 8), ("zero", 0)]:
        s.raises(f"rotary_dim-{id}", ValueError, "rotary_dim", rotary_dim=v)
    s.raises("max_positions-negative", ValueError, "max_positions", max_positions=-1)
    s.raises("max_positions-float", TypeError, "max_positions", max_positions=2.5)
    scaling_cases(s)
    q, k = rand(1, 4, 2, 6), rand(1, 4, 1, 6)
    s.custom("call-nan-positions", lambda api: api.RotaryEmbedding(6)(q, k, positions=np.array([0, 1, np.nan, 3])),
             Raises(ValueError, "positions"))
    s.custom("call-float-q", lambda api: api.RotaryEmbedding(6)(q.astype(np.int32), k), Raises(TypeError, "q"))
    s.custom("call-wrong-dim", lambda api: api.RotaryEmbedding(8)(q, k), Raises(ValueError, ""))
    s.custom("call-offset-float", lambda api: api.RotaryEmbedding(6)(q, k, offset=1.5), Raises(TypeError, "offset"))
    s.custom("call-huge-offset", lambda api: api.RotaryEmbedding(6, max_positions=16)(q, k, offset=HUGE),
             Check(finite_or_refused, (ValueError,), "offset"))
    s.custom("call-empty", lambda api: api.RotaryEmbedding(6)(rand(1, 0, 2, 6), rand(1, 0, 1, 6)),
             Check(empty_of((1, 0, 2, 6))))
    s.custom("call-misaligned", lambda api: _rotary_same(api, misaligned), Check(lambda r: None))
    s.custom("call-negative-strides", lambda api: _rotary_same(api, negative_strides), Check(lambda r: None))
    return s


def _rotary_same(api: Any, make: Callable[[np.ndarray], np.ndarray]) -> None:
    import posenc
    q, k = rand(2, 5, 2, 6), rand(2, 5, 1, 6)
    rope = api.RotaryEmbedding(6, rotary_dim=4)
    got = rope(make(q), make(k), offset=3)
    want = posenc.reference.apply_rope_qk(q, k, rotary_dim=4, offset=3)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=2e-6)


SPECS: Dict[str, Callable[[], Spec]] = {
    "rope_inv_freq": spec_rope_inv_freq,
    "rope_cos_sin": spec_rope_cos_sin,
    "apply_rope": spec_apply_rope,
    "apply_rope_qk": spec_apply_rope_qk,
    "positions_from_cu_seqlens": spec_positions_from_cu_seqlens,
    "RotaryEmbedding": spec_rotary_embedding,
}
