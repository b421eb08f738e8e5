"""Hostile-input specs of the rotary, relative and learned families (see tests/test_arguments.py).

Each entry is dormant until its name is exported by ``posenc``; then every
case runs on both backends. Baselines are small: the table checks outcomes,
the family tests check accuracy at scale.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

import numpy as np

from hostile import (HUGE, SIZE_ERRORS, Check, Raises, Spec, byteswapped, empty_of, finite_or_refused,
                     misaligned, negative_strides, stepped)

F32 = np.float32
_rng = np.random.default_rng(4321)


def rand(*shape: int, dtype: Any = F32) -> np.ndarray:
    return _rng.standard_normal(shape).astype(dtype)


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


# ------------------------------------------------------------------ relative

def _grid_common(s: Spec, shape: Any, int_result: bool = True, offset_huge: Any = ValueError) -> None:
    s.size("q_len", empty=empty_of(shape(0, None)))
    s.size("k_len", empty=empty_of(shape(None, 0)))
    s.integer("offset", huge=offset_huge)


def spec_relative_positions() -> Spec:
    s = Spec("relative_positions", q_len=3, k_len=5)
    _grid_common(s, lambda q, k: (3 if q is None else q, 5 if k is None else k))
    s.raises("dtype-float", TypeError, "dtype", dtype=np.float32)
    s.raises("dtype-unsigned", (TypeError, ValueError), "dtype", dtype=np.uint32)
    s.raises("dtype-too-small", ValueError, "dtype", dtype=np.int8, k_len=300)
    s.same("dtype-int16", dtype=np.int16)
    s.raises("offset-wraps-int64", ValueError, "offset", offset=2**63 - 2)
    s.out((3, 5), np.int64)
    return s


def spec_clipped_relative_positions() -> Spec:
    s = Spec("clipped_relative_positions", q_len=3, k_len=5, max_relative_position=2)
    _grid_common(s, lambda q, k: (3 if q is None else q, 5 if k is None else k), offset_huge=finite_or_refused)
    s.size("max_relative_position", huge=False)
    s.raises("max_relative_position-huge", (ValueError,), "max_relative_position", max_relative_position=2**63)
    s.same("max_relative_position-zero", max_relative_position=0)
    s.out((3, 5), np.int64)
    return s


def spec_relative_embeddings() -> Spec:
    table = rand(5, 4)
    s = Spec("relative_embeddings", table=table, q_len=3, k_len=4, max_relative_position=2)
    s.floats("table")
    s.raises("table-rows-mismatch", ValueError, "table", table=rand(4, 4))
    s.raises("table-1d", ValueError, "table", table=rand(5))
    s.size("q_len", empty=empty_of((0, 4, 4)))
    s.size("k_len", empty=empty_of((3, 0, 4)))
    s.size("max_relative_position", huge=False)
    s.integer("offset", huge=finite_or_refused)
    return s


def _t5_params(s: Spec) -> None:
    s.flag("bidirectional")
    for id, v in [("zero", 0), ("one", 1), ("two", 2), ("negative", -32), ("odd-bidirectional", 3)]:
        s.raises(f"num_buckets-{id}", ValueError, "num_buckets", num_buckets=v)
    s.raises("num_buckets-float", TypeError, "num_buckets", num_buckets=32.0)
    s.raises("num_buckets-huge", (ValueError, MemoryError), "num_buckets", num_buckets=2**63)
    for id, v in [("zero", 0), ("negative", -5), ("at-exact", 8)]:
        s.raises(f"max_distance-{id}", ValueError, "max_distance", max_distance=v)
    s.raises("max_distance-float", TypeError, "max_distance", max_distance=128.0)
    s.same("max_distance-huge", max_distance=2**62)


def spec_t5_bucket() -> Spec:
    rel = np.array([[-200, -9, -8, -1, 0], [1, 7, 8, 127, 128]])
    s = Spec("t5_bucket", relative_position=rel)
    for id, v in [("float", rel.astype(np.float64)), ("float-integral", rel.astype(F32)), ("complex", rel + 0j),
                  ("object", rel.astype(object)), ("bool", rel > 0), ("str", rel.astype(str))]:
        s.raises(f"relative_position-{id}", TypeError, "relative_position", relative_position=v)
    for id, make in [("byteswapped", byteswapped), ("misaligned", misaligned), ("negative-strides", negative_strides),
                     ("stepped", stepped)]:
        s.same(f"relative_position-{id}", clean={"relative_position": rel.copy()}, relative_position=make(rel))
    for dt in (np.int8, np.int16, np.int32, np.uint8, np.uint64):
        v = rel.astype(dt)
        s.same(f"relative_position-{np.dtype(dt).name}", clean={"relative_position": v.astype(np.int64)
                                                               if dt != np.uint64 else v},
               relative_position=v)
    s.same("relative_position-list", clean={"relative_position": rel.copy()}, relative_position=rel.tolist())
    s.same("relative_position-scalar", clean={"relative_position": np.int64(-7)}, relative_position=-7)
    s.check("relative_position-empty", empty_of((0, 3)), relative_position=np.zeros((0, 3), np.int64))
    extremes = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).min + 1, np.iinfo(np.int64).max])
    s.check("relative_position-int64-extremes", _t5_extremes(True), relative_position=extremes)
    s.check("relative_position-int64-extremes-causal", _t5_extremes(False), relative_position=extremes,
            bidirectional=False)
    s.check("relative_position-uint64-max", lambda r: _assert_eq(r, [31]),
            relative_position=np.array([2**64 - 1], np.uint64))
    _t5_params(s)
    return s


def _assert_eq(r: Any, want: Any) -> None:
    np.testing.assert_array_equal(np.asarray(r), np.asarray(want))


def _t5_extremes(bidirectional: bool) -> Callable[[Any], None]:
    """Far distances land in the last bucket of their direction (no |INT64_MIN| wrap-around)."""
    def check(r: Any) -> None:
        r = np.asarray(r)
        assert r.dtype == np.int32
        want = [15, 15, 31] if bidirectional else [31, 31, 0]
        np.testing.assert_array_equal(r, want)
    return check


def spec_t5_buckets() -> Spec:
    s = Spec("t5_buckets", q_len=3, k_len=5)
    _grid_common(s, lambda q, k: (3 if q is None else q, 5 if k is None else k), offset_huge=finite_or_refused)
    _t5_params(s)
    return s


def spec_t5_bias() -> Spec:
    table = rand(32, 2)
    s = Spec("t5_bias", table=table, q_len=3, k_len=5)
    s.floats("table")
    s.raises("table-1d", ValueError, "table", table=rand(32))
    s.raises("table-odd-buckets", ValueError, "", table=rand(3, 2))
    s.size("q_len", empty=empty_of((2, 0, 5)))
    s.size("k_len", empty=empty_of((2, 3, 0)))
    s.integer("offset", huge=finite_or_refused)
    s.flag("bidirectional")
    s.raises("max_distance-zero", ValueError, "max_distance", max_distance=0)
    s.out((2, 3, 5), F32)
    return s


def spec_add_t5_bias() -> Spec:
    scores, table = rand(2, 2, 3, 5), rand(32, 2)
    s = Spec("add_t5_bias", scores=scores, table=table)
    s.floats("scores")
    s.floats("table")
    s.raises("table-heads-mismatch", ValueError, "", table=rand(32, 3))
    s.raises("scores-2d", ValueError, "scores", scores=rand(3, 5))
    s.check("scores-empty", empty_of((2, 2, 0, 5)), scores=rand(2, 2, 0, 5))
    s.integer("offset", huge=finite_or_refused)
    s.flag("bidirectional")
    s.out(scores.shape, F32, inputs=["scores"])
    return s


def spec_alibi_slopes() -> Spec:
    s = Spec("alibi_slopes", num_heads=6)
    s.size("num_heads", empty=empty_of((0,)), huge=False, zero_may_be_refused=True)
    s.raises("num_heads-huge", SIZE_ERRORS, "", num_heads=2**62)
    s.raises("dtype-int", TypeError, "dtype", dtype=np.int32)
    return s


def spec_alibi_bias() -> Spec:
    s = Spec("alibi_bias", num_heads=3, q_len=2, k_len=4)
    s.size("num_heads", empty=empty_of((0, 2, 4)), zero_may_be_refused=True)
    s.size("q_len", empty=empty_of((3, 0, 4)))
    s.size("k_len", empty=empty_of((3, 2, 0)))
    s.integer("offset", huge=finite_or_refused)
    s.flag("symmetric")
    _slopes(s, 3)
    s.raises("dtype-int", TypeError, "dtype", dtype=np.int32)
    s.out((3, 2, 4), F32)
    return s


def _slopes(s: Spec, heads: int) -> None:
    good = np.array([0.5, 0.25, 0.125][:heads])
    s.same("slopes-given", slopes=good)
    s.same("slopes-float32", clean={"slopes": good}, slopes=good.astype(F32))
    s.same("slopes-list", clean={"slopes": good}, slopes=good.tolist())
    s.same("slopes-byteswapped", clean={"slopes": good}, slopes=byteswapped(good))
    s.same("slopes-negative-strides", clean={"slopes": good}, slopes=negative_strides(good))
    s.raises("slopes-wrong-length", ValueError, "slopes", slopes=np.ones(heads + 1))
    s.raises("slopes-2d", ValueError, "slopes", slopes=np.ones((1, heads)))
    s.raises("slopes-nan", ValueError, "slopes", slopes=np.full(heads, np.nan))
    s.raises("slopes-inf", ValueError, "slopes", slopes=np.full(heads, np.inf))
    s.raises("slopes-complex", TypeError, "slopes", slopes=np.ones(heads) + 0j)
    s.raises("slopes-object", TypeError, "slopes", slopes=np.ones(heads).astype(object))
    s.raises("slopes-str", TypeError, "slopes", slopes=np.ones(heads).astype(str))


def spec_add_alibi() -> Spec:
    scores = rand(2, 3, 2, 4)
    s = Spec("add_alibi", scores=scores)
    s.floats("scores")
    s.raises("scores-2d", ValueError, "scores", scores=rand(2, 4))
    s.check("scores-empty", empty_of((2, 3, 0, 4)), scores=rand(2, 3, 0, 4))
    s.add("scores-no-heads", Check(empty_of((2, 0, 2, 4)), (ValueError,), "scores"), scores=rand(2, 0, 2, 4))
    s.integer("offset", huge=finite_or_refused)
    s.flag("symmetric")
    _slopes(s, 3)
    s.out(scores.shape, F32, inputs=["scores"])
    return s


# ------------------------------------------------------------------ learned

def _table_positions(s: Spec, arg: str, n: int, shape_of: Callable[[np.ndarray], Any]) -> None:
    """Integer positions into a table of n rows: floats refused, out-of-range an IndexError."""
    good = np.asarray(s.baseline[arg])
    for id, v in [("float", good.astype(np.float64)), ("float-integral", good.astype(F32)), ("complex", good + 0j),
                  ("object", good.astype(object)), ("bool", good % 2 == 0), ("str", good.astype(str))]:
        s.raises(f"{arg}-{id}", TypeError, arg, **{arg: v})
    for id, v in [("at-end", n), ("negative", -1), ("int64-min", np.iinfo(np.int64).min),
                  ("int64-max", np.iinfo(np.int64).max), ("uint64-max", 2**64 - 1)]:
        bad = good.astype(np.uint64 if v == 2**64 - 1 else np.int64)
        bad.flat[-1] = v
        s.raises(f"{arg}-{id}", IndexError, arg, **{arg: bad})
    for id, make in [("byteswapped", byteswapped), ("misaligned", misaligned), ("negative-strides", negative_strides),
                     ("stepped", stepped)]:
        s.same(f"{arg}-{id}", clean={arg: good.copy()}, **{arg: make(good)})
    for dt in (np.int8, np.uint16, np.int32, np.uint64):
        s.same(f"{arg}-{np.dtype(dt).name}", clean={arg: good.copy()}, **{arg: good.astype(dt)})
    s.same(f"{arg}-list", clean={arg: good.copy()}, **{arg: good.tolist()})


def spec_embedding_lookup() -> Spec:
    table, pos = rand(7, 4), np.array([[0, 6, 2], [3, 3, 1]])
    s = Spec("embedding_lookup", table=table, positions=pos)
    s.floats("table")
    s.raises("table-1d", ValueError, "table", table=rand(7))
    _table_positions(s, "positions", 7, None)
    s.check("positions-empty", empty_of((0, 4)), positions=np.zeros(0, np.int64))
    s.raises("positions-into-empty-table", IndexError, "positions", table=rand(0, 4))
    s.out((2, 3, 4), F32)
    return s


def spec_embedding_add() -> Spec:
    x, table, pos = rand(2, 3, 4), rand(7, 4), np.array([0, 6, 2])
    s = Spec("embedding_add", x=x, table=table, positions=pos)
    s.floats("x", list_dtype_must_match=True)
    s.floats("table", list_dtype_must_match=True)
    s.raises("table-dim-mismatch", ValueError, "", table=rand(7, 5))
    s.raises("positions-wrong-length", ValueError, "positions", positions=np.array([0, 1]))
    _table_positions(s, "positions", 7, None)
    s.check("x-empty", empty_of((0, 3, 4)), x=rand(0, 3, 4))
    s.out(x.shape, F32, inputs=["x", "table"])
    return s


def spec_embedding_grad() -> Spec:
    grad, pos = rand(2, 3, 4), np.array([[0, 6, 2], [2, 2, 1]])
    s = Spec("embedding_grad", grad=grad, positions=pos, num_positions=7)
    s.floats("grad")
    _table_positions(s, "positions", 7, None)
    s.size("num_positions", empty=None, huge=False)
    s.raises("num_positions-huge", SIZE_ERRORS, "", num_positions=2**62)
    s.raises("positions-shape-mismatch", ValueError, "", positions=np.zeros((2, 4), np.int64))
    s.check("grad-empty", empty_of((7, 4)), grad=rand(0, 3, 4), positions=np.zeros((0, 3), np.int64))
    return s


def spec_resize_table() -> Spec:
    s = Spec("resize_table", table=rand(5, 3), new_length=8)
    s.floats("table")
    s.size("new_length", minimum=1, huge=False)
    s.raises("new_length-huge", SIZE_ERRORS, "", new_length=2**62)
    s.raises("method-unknown", ValueError, "method", method="cubic-ish")
    s.raises("method-none", (TypeError, ValueError), "method", method=None)
    s.raises("table-empty", ValueError, "table", table=rand(0, 3))
    return s


def spec_resize_table_2d() -> Spec:
    s = Spec("resize_table_2d", grid=rand(3, 4, 2), new_height=5, new_width=6)
    s.floats("grid")
    s.size("new_height", minimum=1, huge=False)
    s.size("new_width", minimum=1, huge=False)
    s.raises("new_height-huge", SIZE_ERRORS, "", new_height=2**40, new_width=2**40)
    s.raises("method-unknown", ValueError, "method", method="linear")
    s.raises("grid-2d", ValueError, "grid", grid=rand(3, 4))
    return s


def spec_learned_positional_embedding() -> Spec:
    s = Spec("LearnedPositionalEmbedding", num_positions=8, dim=4, seed=0)
    s.size("num_positions", minimum=1, huge=False)
    s.dim("dim", even=False, huge=False)
    s.raises("size-huge", SIZE_ERRORS, "", num_positions=2**40, dim=2**40)
    s.raises("init-unknown", ValueError, "init", init="xavier-ish")
    for id, v, exc in [("negative", -1.0, ValueError), ("nan", float("nan"), ValueError), ("str", "1", TypeError)]:
        s.raises(f"std-{id}", exc, "std", std=v)
    s.raises("dtype-int", TypeError, "dtype", dtype=np.int32)
    s.raises("seed-float", TypeError, "seed", seed=1.5)
    emb = lambda api: api.LearnedPositionalEmbedding(8, 4, seed=0)  # noqa: E731
    s.custom("lookup-out-of-range", lambda api: emb(api).lookup(np.array([8])), Raises(IndexError, "positions"))
    s.custom("lookup-float", lambda api: emb(api).lookup(np.array([1.0])), Raises(TypeError, "positions"))
    s.custom("add-too-long", lambda api: emb(api).add(rand(1, 9, 4)), Raises(IndexError, ""))
    s.custom("add-offset-past-end", lambda api: emb(api).add(rand(1, 3, 4), offset=6), Raises(IndexError, ""))
    s.custom("add-offset-huge", lambda api: emb(api).add(rand(1, 3, 4), offset=HUGE), Raises((IndexError, ValueError), ""))
    s.custom("add-offset-negative", lambda api: emb(api).add(rand(1, 3, 4), offset=-1), Raises((IndexError, ValueError), "offset"))
    s.custom("add-int-x", lambda api: emb(api).add(np.ones((1, 3, 4), np.int32)), Raises(TypeError, "x"))
    s.custom("add-misaligned", lambda api: _learned_same(api, misaligned), Check(lambda r: None))
    s.custom("add-negative-strides", lambda api: _learned_same(api, negative_strides), Check(lambda r: None))
    s.custom("grad-float-positions", lambda api: emb(api).grad(rand(3, 4), np.array([0.0, 1.0, 2.0])),
             Raises(TypeError, "positions"))
    return s


def _learned_same(api: Any, make: Callable[[np.ndarray], np.ndarray]) -> None:
    import posenc
    e = api.LearnedPositionalEmbedding(8, 4, seed=0)
    x = rand(2, 5, 4)
    got = e.add(make(x), offset=2)
    want = posenc.reference.embedding_add(x, e.weight, np.arange(2, 7))
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)


FAMILY_SPECS: Dict[str, Callable[[], Spec]] = {
    "rope_inv_freq": spec_rope_inv_freq,
    "rope_cos_sin": spec_rope_cos_sin,
    "apply_rope": spec_apply_rope,
    "apply_rope_qk": spec_apply_rope_qk,
    "positions_from_cu_seqlens": spec_positions_from_cu_seqlens,
    "RotaryEmbedding": spec_rotary_embedding,
    "relative_positions": spec_relative_positions,
    "clipped_relative_positions": spec_clipped_relative_positions,
    "relative_embeddings": spec_relative_embeddings,
    "t5_bucket": spec_t5_bucket,
    "t5_buckets": spec_t5_buckets,
    "t5_bias": spec_t5_bias,
    "add_t5_bias": spec_add_t5_bias,
    "alibi_slopes": spec_alibi_slopes,
    "alibi_bias": spec_alibi_bias,
    "add_alibi": spec_add_alibi,
    "embedding_lookup": spec_embedding_lookup,
    "embedding_add": spec_embedding_add,
    "embedding_grad": spec_embedding_grad,
    "resize_table": spec_resize_table,
    "resize_table_2d": spec_resize_table_2d,
    "LearnedPositionalEmbedding": spec_learned_positional_embedding,
}
