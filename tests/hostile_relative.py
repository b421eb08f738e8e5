"""Hostile-input specs of the relative family (run by tests/test_arguments.py).

Baselines are small: the table checks outcomes, the family tests check accuracy at scale.
Every offset past 2**53 (query positions no longer exact in float64) is a ValueError naming
it, for every function; so is a head count of 0.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Tuple

import numpy as np

from helpers import rand
from hostile import SIZE_ERRORS, Spec, byteswapped, empty_of, misaligned, negative_strides, stepped

F32 = np.float32


def _offset(s: Spec) -> None:
    """``offset``: an integer keeping the query positions offset + i within ±2**53."""
    s.integer("offset")
    s.raises("offset-integral-float", TypeError, "offset", offset=1.0)
    s.raises("offset-past-2**53", ValueError, "offset", offset=2**53 + 1)
    s.raises("offset-2**60", ValueError, "offset", offset=2**60)


def _grid_common(s: Spec, shape: Callable[[Any, Any], Any]) -> None:
    """q_len, k_len and offset; ``shape(q, k)`` is the result's shape (None: the baseline's)."""
    s.size("q_len", empty=empty_of(shape(0, None)))
    s.size("k_len", empty=empty_of(shape(None, 0)))
    s.raises("q_len-and-k_len-huge", ValueError, "bytes", q_len=2**40, k_len=2**40)
    _offset(s)


def spec_relative_positions() -> Spec:
    s = Spec("relative_positions", q_len=3, k_len=5)
    _grid_common(s, lambda q, k: (3 if q is None else q, 5 if k is None else k))
    s.raises("dtype-float", TypeError, "dtype", dtype=np.float32)
    s.raises("dtype-unsigned", TypeError, "dtype", dtype=np.uint32)
    s.raises("dtype-too-small", ValueError, "dtype", dtype=np.int8, k_len=300)
    s.same("dtype-int16", dtype=np.int16)
    s.raises("offset-wraps-int64", ValueError, "offset", offset=2**63 - 2)
    s.out((3, 5), np.int64)
    return s


def spec_clipped_relative_positions() -> Spec:
    s = Spec("clipped_relative_positions", q_len=3, k_len=5, max_relative_position=2)
    _grid_common(s, lambda q, k: (3 if q is None else q, 5 if k is None else k))
    s.size("max_relative_position", huge=False)
    s.raises("max_relative_position-huge", ValueError, "max_relative_position", max_relative_position=2**63)
    s.raises("max_relative_position-too-big-for-dtype", ValueError, "max_relative_position",
             max_relative_position=200, dtype=np.int8)
    s.same("max_relative_position-zero", max_relative_position=0)
    s.out((3, 5), np.int64)
    return s


def spec_relative_embeddings() -> Spec:
    table = rand(5, 4)
    s = Spec("relative_embeddings", table=table, q_len=3, k_len=4, max_relative_position=2)
    s.floats("table")
    s.raises("table-rows-mismatch", ValueError, "table", table=rand(4, 4))
    s.raises("table-1d", ValueError, "table", table=rand(5))
    _grid_common(s, lambda q, k: (3 if q is None else q, 4 if k is None else k, 4))
    s.size("max_relative_position", huge=False)
    s.out((3, 4, 4), F32)
    table_in, out = _overlapping(table, (3, 4, 4))
    s.raises("out-overlaps-table", ValueError, "out overlaps table", table=table_in, out=out)
    return s


def _overlapping(table: np.ndarray, out_shape: Tuple[int, ...]) -> Tuple[np.ndarray, np.ndarray]:
    """``table``'s values in one buffer, and an ``out`` of ``out_shape`` that overlaps them in part."""
    buf = np.full(table.size + int(np.prod(out_shape)), 7, table.dtype)
    inside = buf[: table.size].reshape(table.shape)
    inside[...] = table
    return inside, buf[table.size // 2 : table.size // 2 + int(np.prod(out_shape))].reshape(out_shape)


def _t5_params(s: Spec) -> None:
    s.flag("bidirectional")
    for id, v in [("zero", 0), ("one", 1), ("two", 2), ("negative", -32), ("odd-bidirectional", 3)]:
        s.raises(f"num_buckets-{id}", ValueError, "num_buckets", num_buckets=v)
    s.raises("num_buckets-float", TypeError, "num_buckets", num_buckets=32.0)
    s.raises("num_buckets-huge", ValueError, "num_buckets", num_buckets=2**63)
    s.raises("num_buckets-past-float32", ValueError, "num_buckets", num_buckets=2**24 + 2)
    for id, v in [("zero", 0), ("negative", -5), ("at-exact", 8)]:
        s.raises(f"max_distance-{id}", ValueError, "max_distance", max_distance=v)
    s.raises("max_distance-at-exact-causal", ValueError, "max_distance", bidirectional=False, num_buckets=3,
             max_distance=1)
    s.raises("max_distance-float", TypeError, "max_distance", max_distance=128.0)
    s.same("max_distance-huge", max_distance=2**62)


def _integer_array_layouts(s: Spec, rel: np.ndarray) -> None:
    """``relative_position``: non-integer kinds are a TypeError; every layout gives the clean result."""
    for id, v in [("float", rel.astype(np.float64)), ("float-integral", rel.astype(F32)), ("complex", rel + 0j),
                  ("object", rel.astype(object)), ("bool", rel > 0), ("str", rel.astype(str))]:
        s.raises(f"relative_position-{id}", TypeError, "relative_position", relative_position=v)
    for id, make in [("byteswapped", byteswapped), ("misaligned", misaligned), ("negative-strides", negative_strides),
                     ("stepped", stepped)]:
        s.same(f"relative_position-{id}", clean={"relative_position": rel.copy()}, relative_position=make(rel))


def spec_t5_bucket() -> Spec:
    rel = np.array([[-200, -9, -8, -1, 0], [1, 7, 8, 127, 128]])
    s = Spec("t5_bucket", relative_position=rel)
    _integer_array_layouts(s, rel)
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
    _grid_common(s, lambda q, k: (3 if q is None else q, 5 if k is None else k))
    _t5_params(s)
    s.out((3, 5), np.int32)
    return s


def spec_t5_bias() -> Spec:
    table = rand(32, 2)
    s = Spec("t5_bias", table=table, q_len=3, k_len=5)
    s.floats("table")
    s.raises("table-1d", ValueError, "table", table=rand(32))
    s.raises("table-odd-buckets", ValueError, "num_buckets", table=rand(3, 2))
    s.raises("table-no-heads", ValueError, "head", table=rand(32, 0))
    _grid_common(s, lambda q, k: (2, 3 if q is None else q, 5 if k is None else k))
    s.flag("bidirectional")
    s.raises("max_distance-zero", ValueError, "max_distance", max_distance=0)
    s.out((2, 3, 5), F32)
    table_in, out = _overlapping(table, (2, 3, 5))
    s.raises("out-overlaps-table", ValueError, "out overlaps table", table=table_in, out=out)
    return s


def spec_add_t5_bias() -> Spec:
    scores, table = rand(2, 2, 3, 5), rand(32, 2)
    s = Spec("add_t5_bias", scores=scores, table=table)
    s.floats("scores")
    s.floats("table")
    s.raises("table-heads-mismatch", ValueError, "heads", table=rand(32, 3))
    s.raises("table-no-heads", ValueError, "head", table=rand(32, 0))
    s.raises("table-odd-buckets", ValueError, "num_buckets", table=rand(3, 2))
    s.raises("scores-2d", ValueError, "scores", scores=rand(3, 5))
    s.raises("scores-no-heads", ValueError, "scores", scores=rand(2, 0, 3, 5))
    s.check("scores-empty", empty_of((2, 2, 0, 5)), scores=rand(2, 2, 0, 5))
    _offset(s)
    s.flag("bidirectional")
    s.raises("max_distance-at-exact", ValueError, "max_distance", max_distance=8)
    s.out(scores.shape, F32, inputs=["scores"])
    s.raises("num_heads-not-a-divisor", ValueError, "num_heads", num_heads=5)
    s.raises("num_heads-zero", ValueError, "num_heads", num_heads=0)
    s.raises("num_heads-float", TypeError, "num_heads", num_heads=2.0)
    return s


def spec_alibi_slopes() -> Spec:
    s = Spec("alibi_slopes", num_heads=6)
    _heads(s, huge=False)
    s.raises("num_heads-huge", SIZE_ERRORS, "", num_heads=2**62)
    s.raises("dtype-int", TypeError, "dtype", dtype=np.int32)
    return s


def spec_alibi_bias() -> Spec:
    s = Spec("alibi_bias", num_heads=3, q_len=2, k_len=4)
    _heads(s, huge=True)
    _grid_common(s, lambda q, k: (3, 2 if q is None else q, 4 if k is None else k))
    s.flag("symmetric")
    _slopes(s, 3)
    s.raises("dtype-int", TypeError, "dtype", dtype=np.int32)
    s.out((3, 2, 4), F32)
    return s


def _heads(s: Spec, huge: bool) -> None:
    """``num_heads``: a count >= 1 (0 is a ValueError naming it, not an empty result)."""
    s.size("num_heads", huge=huge)
    s.raises("num_heads-zero", ValueError, "num_heads", num_heads=0)


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
    s.raises("scores-no-heads", ValueError, "scores", scores=rand(2, 0, 2, 4))
    _offset(s)
    s.flag("symmetric")
    _slopes(s, 3)
    s.out(scores.shape, F32, inputs=["scores"])
    s.raises("num_heads-not-a-divisor", ValueError, "num_heads", num_heads=2)
    s.raises("num_heads-zero", ValueError, "num_heads", num_heads=0)
    s.raises("num_heads-float", TypeError, "num_heads", num_heads=3.0)
    s.same("num_heads-all-heads", num_heads=3)
    return s


def _deberta_params(s: Spec) -> None:
    """bucket_size / max_position: plain differences when either is <= 0; Transformers' failures refused."""
    s.raises("bucket_size-float", TypeError, "bucket_size", bucket_size=256.0)
    s.raises("bucket_size-bool", TypeError, "bucket_size", bucket_size=True)
    s.raises("max_position-float", TypeError, "max_position", max_position=512.0)
    s.raises("bucket_size-one", ValueError, "bucket_size", bucket_size=1)
    s.raises("max_position-at-mid-plus-one", ValueError, "max_position", bucket_size=8, max_position=5)
    s.raises("max_position-below-mid", ValueError, "max_position", bucket_size=256, max_position=100)
    s.raises("bucket_size-huge", ValueError, "bucket_size", bucket_size=2**24 + 2, max_position=2**30)
    s.raises("max_position-huge", ValueError, "max_position", max_position=2**62 + 1)
    s.same("bucket_size-zero-plain", bucket_size=0)
    s.same("bucket_size-negative-plain", bucket_size=-1)
    s.same("max_position-negative-plain", max_position=-1)
    s.same("max_position-just-enough", bucket_size=8, max_position=6)


def spec_deberta_bucket() -> Spec:
    rel = np.array([[-600, -129, -128, -1, 0], [1, 127, 128, 129, 5000]])
    s = Spec("deberta_bucket", relative_position=rel)
    _integer_array_layouts(s, rel)
    for dt in (np.int16, np.int32, np.uint16, np.uint64):
        v = np.abs(rel).astype(dt) if np.dtype(dt).kind == "u" else rel.astype(dt)
        s.same(f"relative_position-{np.dtype(dt).name}", clean={"relative_position": v.astype(np.int64)},
               relative_position=v)
    s.same("relative_position-list", clean={"relative_position": rel.copy()}, relative_position=rel.tolist())
    s.check("relative_position-empty", empty_of((0, 3)), relative_position=np.zeros((0, 3), np.int64))
    s.raises("relative_position-uint64-past-int64", ValueError, "relative_position",
             relative_position=np.array([2**63], np.uint64))
    s.check("relative_position-int64-min", lambda r: _assert_eq(np.asarray(r) < 0, [True]),
            relative_position=np.array([np.iinfo(np.int64).min]))
    _deberta_params(s)
    return s


def spec_deberta_buckets() -> Spec:
    s = Spec("deberta_buckets", q_len=3, k_len=5)
    _grid_common(s, lambda q, k: (3 if q is None else q, 5 if k is None else k))
    _deberta_params(s)
    s.out((3, 5), np.int64)
    return s


def spec_relative_shift() -> Spec:
    s = Spec("relative_shift", bd=rand(2, 3, 6))
    s.floats("bd")
    s.raises("bd-1d", ValueError, "bd", bd=rand(6))
    s.raises("bd-too-narrow", ValueError, "bd", bd=rand(2, 5, 3))
    s.check("bd-k-zero", empty_of((2, 3, 0)), bd=rand(2, 3, 2))
    s.check("bd-q-zero", empty_of((2, 0, 7)), bd=rand(2, 0, 6))
    s.check("bd-no-batch", empty_of((0, 3, 4)), bd=rand(0, 3, 6))
    return s


SPECS: Dict[str, Callable[[], Spec]] = {
    "relative_shift": spec_relative_shift,
    "deberta_bucket": spec_deberta_bucket,
    "deberta_buckets": spec_deberta_buckets,
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
