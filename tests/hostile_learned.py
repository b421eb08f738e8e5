"""Hostile-input specs of the learned family (run by tests/test_arguments.py).

Baselines are small: the table checks outcomes, the family tests check accuracy at scale.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

import numpy as np

from helpers import assert_close_to_float64, rand
from hostile import (HUGE, SIZE_ERRORS, Check, Raises, Spec, byteswapped, empty_of,
                     misaligned, negative_strides, stepped)

F32 = np.float32


def _table_positions(s: Spec, arg: str) -> None:
    """Integer positions into the baseline's table: floats refused, out-of-range an IndexError naming the entry."""
    good = np.asarray(s.baseline[arg])
    n = s.baseline["num_positions"] if "num_positions" in s.baseline else np.asarray(s.baseline["table"]).shape[0]
    for id, v in [("float", good.astype(np.float64)), ("float-integral", good.astype(F32)), ("complex", good + 0j),
                  ("object", good.astype(object)), ("bool", good % 2 == 0), ("str", good.astype(str))]:
        s.raises(f"{arg}-{id}", TypeError, f"{arg} must hold integers", **{arg: v})
    # The last entry is the bad one: the message names it, with its value.
    last = f"{arg}[{', '.join(str(int(i)) for i in np.unravel_index(good.size - 1, good.shape))}]"
    for id, v in [("at-end", n), ("negative", -1), ("int64-min", np.iinfo(np.int64).min),
                  ("int64-max", np.iinfo(np.int64).max), ("uint64-max", 2**64 - 1)]:
        bad = good.astype(np.uint64 if v == 2**64 - 1 else np.int64)
        bad.flat[-1] = v
        s.raises(f"{arg}-{id}", IndexError, f"{last} = {v} is outside", **{arg: bad})
    for id, make in [("byteswapped", byteswapped), ("misaligned", misaligned), ("negative-strides", negative_strides),
                     ("stepped", stepped)]:
        s.same(f"{arg}-{id}", clean={arg: good.copy()}, **{arg: make(good)})
    for dt in (np.int8, np.uint16, np.int32, np.uint64):
        s.same(f"{arg}-{np.dtype(dt).name}", clean={arg: good.copy()}, **{arg: good.astype(dt)})
    s.same(f"{arg}-list", clean={arg: good.copy()}, **{arg: good.tolist()})


def _view_of(table: np.ndarray, shape: tuple) -> np.ndarray:
    """An array of ``shape`` over the first elements of ``table``'s (contiguous) memory."""
    return table.reshape(-1)[: int(np.prod(shape))].reshape(shape)


def _zeros(shape: tuple) -> Callable[[Any], None]:
    """A gradient no row contributes to: zeros of ``shape`` (not whatever the allocation held)."""
    def check(result: Any) -> None:
        np.testing.assert_array_equal(result, np.zeros(shape, F32))
        assert result.dtype == F32
    return check


def spec_embedding_lookup() -> Spec:
    table, pos = rand(7, 4), np.array([[0, 6, 2], [3, 3, 1]])
    s = Spec("embedding_lookup", table=table, positions=pos)
    s.floats("table")
    s.raises("table-1d", ValueError, "table must have shape", table=rand(7))
    _table_positions(s, "positions")
    s.check("positions-empty", empty_of((0, 4)), positions=np.zeros(0, np.int64))
    s.raises("positions-into-empty-table", IndexError, "positions", table=rand(0, 4))
    s.out((2, 3, 4), F32)
    shared = rand(7, 4)
    s.raises("out-overlaps-table", ValueError, "overlaps table", table=shared, out=_view_of(shared, (2, 3, 4)))
    square = rand(4, 4)  # lookup(t, arange(4)) could be written over t itself: refused all the same
    s.raises("out-is-table", ValueError, "overlaps table", table=square, positions=np.arange(4), out=square)
    return s


def spec_embedding_add() -> Spec:
    x, table, pos = rand(2, 3, 4), rand(7, 4), np.array([0, 6, 2])
    s = Spec("embedding_add", x=x, table=table, positions=pos)
    s.floats("x", list_dtype_must_match=True)
    s.floats("table", list_dtype_must_match=True)
    s.raises("table-other-dtype", TypeError, "same dtype", table=rand(7, 4, dtype=np.float64))
    s.raises("table-dim-mismatch", ValueError, "features", table=rand(7, 5))
    s.raises("positions-wrong-length", ValueError, "trailing part", positions=np.array([0, 1]))
    s.raises("positions-wrong-batch", ValueError, "trailing part", positions=np.zeros((3, 3), np.int64))
    s.raises("positions-too-many-axes", ValueError, "trailing part", positions=np.zeros((1, 2, 3), np.int64))
    _table_positions(s, "positions")
    s.same("positions-per-batch", positions=np.array([[0, 6, 2], [5, 5, 1]]))
    s.check("x-empty", empty_of((0, 3, 4)), x=rand(0, 3, 4))
    s.out(x.shape, F32, inputs=["x", "table"])
    shared = rand(7, 4)
    s.raises("out-overlaps-table", ValueError, "overlaps table", table=shared, out=_view_of(shared, x.shape))
    return s


def spec_embedding_grad() -> Spec:
    grad, pos = rand(2, 3, 4), np.array([[0, 6, 2], [2, 2, 1]])
    s = Spec("embedding_grad", grad=grad, positions=pos, num_positions=7)
    s.floats("grad")
    _table_positions(s, "positions")
    s.size("num_positions", empty=None, huge=False)
    s.raises("num_positions-huge", SIZE_ERRORS, "", num_positions=2**62)
    s.raises("positions-shape-mismatch", ValueError, "trailing part", positions=np.zeros((2, 4), np.int64))
    s.raises("positions-wrong-length", ValueError, "trailing part", positions=np.array([0, 1]))
    s.same("positions-shared-by-batches", positions=np.array([0, 6, 0]))
    s.same("grad-single-row", grad=rand(4), positions=np.array(3))
    s.check("grad-no-rows", _zeros((7, 4)), grad=rand(0, 3, 4), positions=np.zeros((0, 3), np.int64))
    return s


def spec_resize_table() -> Spec:
    s = Spec("resize_table", table=rand(5, 3), new_length=8)
    s.floats("table")
    s.raises("table-1d", ValueError, "table must have shape", table=rand(5))
    s.raises("table-empty", ValueError, "table has no rows", table=rand(0, 3))
    s.size("new_length", minimum=1, huge=False)
    s.raises("new_length-huge", SIZE_ERRORS, "", new_length=2**62)
    s.raises("method-unknown", ValueError, "method", method="cubic-ish")
    s.raises("method-2d-name", ValueError, "method", method="bicubic")
    s.raises("method-none", (TypeError, ValueError), "method", method=None)
    s.same("method-cubic", method="cubic")
    return s


def spec_resize_table_2d() -> Spec:
    s = Spec("resize_table_2d", grid=rand(3, 4, 2), new_height=5, new_width=6)
    s.floats("grid")
    s.raises("grid-2d", ValueError, "grid must have shape", grid=rand(3, 4))
    s.raises("grid-no-rows", ValueError, "no cells", grid=rand(0, 4, 2))
    s.raises("grid-no-columns", ValueError, "no cells", grid=rand(3, 0, 2))
    s.size("new_height", minimum=1, huge=False)
    s.size("new_width", minimum=1, huge=False)
    s.raises("new_height-huge", SIZE_ERRORS, "", new_height=2**40, new_width=2**40)
    s.raises("method-unknown", ValueError, "method", method="nearest")
    s.raises("method-1d-name", ValueError, "method", method="linear")
    s.same("method-bilinear", method="bilinear")
    s.same("height-unchanged", new_height=3)
    s.same("width-unchanged", new_width=4)
    return s


def _embedding(api: Any) -> Any:
    """The embedding every method case starts from (seeded: the same table on every backend)."""
    return api.LearnedPositionalEmbedding(8, 4, seed=0)


def _weight() -> np.ndarray:
    import posenc
    return _embedding(posenc).weight


def _equals(expected: Callable[[], np.ndarray]) -> Check:
    """The result is an array holding exactly ``expected()``: a lookup copies rows, and a float32 add
    (NumPy's ``x + w`` included) is one correctly rounded sum."""
    def check(result: Any) -> None:
        want = expected()
        assert isinstance(result, np.ndarray) and result.dtype == want.dtype, f"got {type(result)}"
        np.testing.assert_array_equal(result, want)
    return Check(check)


def _written(out: np.ndarray, expected: Callable[[], np.ndarray]) -> Check:
    """``out=`` is returned as passed, holding exactly ``expected()``."""
    def check(result: Any) -> None:
        assert result is out, "out= must be returned as passed"
        np.testing.assert_array_equal(out, expected())
    return Check(check)


def _resized(new_length: int, method: str) -> Check:
    """Of ``(emb, emb.resize(...))``: a new embedding whose table is ``resize_table`` of the old one."""
    def check(result: Any) -> None:
        import posenc
        old, new = result
        assert type(new) is posenc.LearnedPositionalEmbedding
        assert new.weight.shape == (new_length, 4) and new.weight.dtype == old.weight.dtype
        assert not np.may_share_memory(new.weight, old.weight), "the resized table must be a new array"
        np.testing.assert_array_equal(new.weight, posenc.resize_table(old.weight, new_length, method))
        if new_length == old.num_positions:
            np.testing.assert_array_equal(new.weight, old.weight)
        elif method == "linear":  # independently: half-pixel centres, clamped at the borders as np.interp does
            src = (old.num_positions / new_length) * (np.arange(new_length) + 0.5) - 0.5
            w = old.weight.astype(np.float64)
            exact = np.stack([np.interp(src, np.arange(old.num_positions), w[:, j]) for j in range(4)], axis=1)
            assert_close_to_float64(new.weight, exact, atol_f64=1e-12)
    return Check(check)


def _resize(new_length: Any, *method: Any) -> Callable[[Any], Any]:
    def call(api: Any) -> Any:
        e = _embedding(api)
        return e, e.resize(new_length, *method)
    return call


def spec_learned_positional_embedding() -> Spec:
    s = Spec("LearnedPositionalEmbedding", num_positions=8, dim=4, seed=0)
    s.size("num_positions", minimum=1, huge=False)
    s.dim("dim", even=False, huge=False)
    s.raises("size-huge", SIZE_ERRORS, "", num_positions=2**40, dim=2**40)
    s.raises("init-unknown", ValueError, "init", init="xavier-ish")
    s.raises("init-sinusoidal-odd-dim", ValueError, "dim must be even", init="sinusoidal", dim=5)
    for id, v, exc in [("negative", -1.0, ValueError), ("nan", float("nan"), ValueError), ("str", "1", TypeError)]:
        s.raises(f"std-{id}", exc, "std", std=v)
    s.raises("dtype-int", TypeError, "dtype", dtype=np.int32)
    s.raises("seed-float", TypeError, "seed", seed=1.5)
    s.same("init-zeros", init="zeros")
    s.same("init-sinusoidal", init="sinusoidal", dtype=np.float64)
    emb = _embedding
    x = rand(2, 5, 4)
    plus = _equals(lambda: x + _weight()[2:7])  # x + weight[offset:offset + seq], offset 2
    # lookup
    s.custom("lookup-rows", lambda api: emb(api).lookup(np.array([[7, 0], [3, 3]])),
             _equals(lambda: _weight()[[[7, 0], [3, 3]]]))
    out = np.full((2, 4), 7, F32)
    s.custom("lookup-out", lambda api: emb(api).lookup(np.array([5, 1]), out=out),
             _written(out, lambda: _weight()[[5, 1]]))
    s.custom("lookup-out-of-range", lambda api: emb(api).lookup(np.array([0, 8])),
             Raises(IndexError, "positions[1] = 8"))
    s.custom("lookup-negative", lambda api: emb(api).lookup(np.array([-1])), Raises(IndexError, "positions[0] = -1"))
    s.custom("lookup-float", lambda api: emb(api).lookup(np.array([1.0])), Raises(TypeError, "positions"))
    s.custom("lookup-out-wrong-dtype", lambda api: emb(api).lookup(np.array([5, 1]), out=np.zeros((2, 4))),
             Raises(TypeError, "out"))
    # add
    s.custom("add-offset", lambda api: emb(api).add(x, offset=2), plus)
    s.custom("add-misaligned", lambda api: emb(api).add(misaligned(x), offset=2), plus)
    s.custom("add-negative-strides", lambda api: emb(api).add(negative_strides(x), offset=2), plus)
    y = x.copy()
    s.custom("add-out", lambda api: emb(api).add(y, offset=2, out=y), _written(y, lambda: x + _weight()[2:7]))
    per_batch = np.array([[7, 6, 5, 4, 3], [0, 0, 0, 0, 0]])
    s.custom("add-positions", lambda api: emb(api).add(x, positions=per_batch),
             _equals(lambda: x + _weight()[per_batch]))
    s.custom("add-too-long", lambda api: emb(api).add(rand(1, 9, 4)), Raises(IndexError, "positions[8] = 8"))
    s.custom("add-offset-past-end", lambda api: emb(api).add(rand(1, 3, 4), offset=6),
             Raises(IndexError, "offset = 6: positions[2] = 8"))
    s.custom("add-offset-huge", lambda api: emb(api).add(rand(1, 3, 4), offset=HUGE),
             Raises(IndexError, f"offset = {HUGE}: positions[0]"))
    s.custom("add-offset-negative", lambda api: emb(api).add(rand(1, 3, 4), offset=-1),
             Raises(IndexError, "offset = -1: positions[0] = -1"))
    s.custom("add-offset-float", lambda api: emb(api).add(rand(1, 3, 4), offset=1.0), Raises(TypeError, "offset"))
    s.custom("add-positions-and-offset", lambda api: emb(api).add(rand(1, 3, 4), positions=np.arange(3), offset=1),
             Raises(ValueError, "either positions or offset"))
    s.custom("add-x-1d", lambda api: emb(api).add(rand(4)), Raises(ValueError, "x must have shape"))
    s.custom("add-int-x", lambda api: emb(api).add(np.ones((1, 3, 4), np.int32)), Raises(TypeError, "x"))
    s.custom("add-dim-mismatch", lambda api: emb(api).add(rand(1, 3, 5)), Raises(ValueError, "features"))
    # grad
    s.custom("grad-sums", lambda api: emb(api).grad(np.ones((2, 3, 4), F32), np.array([0, 2, 0])),
             _equals(lambda: np.array([[4] * 4, [0] * 4, [2] * 4] + [[0] * 4] * 5, F32)))
    s.custom("grad-float-positions", lambda api: emb(api).grad(rand(3, 4), np.array([0.0, 1.0, 2.0])),
             Raises(TypeError, "positions"))
    s.custom("grad-out-of-range", lambda api: emb(api).grad(rand(3, 4), np.array([0, 1, 8])),
             Raises(IndexError, "positions[2] = 8"))
    s.custom("grad-shape-mismatch", lambda api: emb(api).grad(rand(3, 4), np.array([0, 1])),
             Raises(ValueError, "trailing part"))
    s.custom("grad-int", lambda api: emb(api).grad(np.ones((3, 4), np.int64), np.array([0, 1, 2])),
             Raises(TypeError, "grad"))
    # resize
    s.custom("resize-longer", _resize(13), _resized(13, "linear"))
    s.custom("resize-shorter", _resize(5, "linear"), _resized(5, "linear"))
    s.custom("resize-cubic", _resize(11, "cubic"), _resized(11, "cubic"))
    s.custom("resize-same-length", _resize(8), _resized(8, "linear"))
    s.custom("resize-zero", lambda api: emb(api).resize(0), Raises(ValueError, "new_length"))
    s.custom("resize-float", lambda api: emb(api).resize(16.0), Raises(TypeError, "new_length"))
    s.custom("resize-huge", lambda api: emb(api).resize(2**62), Raises(SIZE_ERRORS, ""))
    s.custom("resize-method-unknown", lambda api: emb(api).resize(16, "nearest"), Raises(ValueError, "method"))
    s.custom("resize-method-2d-name", lambda api: emb(api).resize(16, "bilinear"), Raises(ValueError, "method"))
    return s


SPECS: Dict[str, Callable[[], Spec]] = {
    "embedding_lookup": spec_embedding_lookup,
    "embedding_add": spec_embedding_add,
    "embedding_grad": spec_embedding_grad,
    "resize_table": spec_resize_table,
    "resize_table_2d": spec_resize_table_2d,
    "LearnedPositionalEmbedding": spec_learned_positional_embedding,
}
