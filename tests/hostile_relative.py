"""Hostile-input specs of the relative family (run by tests/test_arguments.py).

Baselines are small: the table checks outcomes, the family tests check accuracy at scale.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

import numpy as np

from helpers import rand
from hostile import (SIZE_ERRORS, Check, Spec, byteswapped, empty_of, finite_or_refused,
                     misaligned, negative_strides, stepped)

F32 = np.float32


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


SPECS: Dict[str, Callable[[], Spec]] = {
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
}
