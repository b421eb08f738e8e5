"""Hostile-input specs of the learned family (run by tests/test_arguments.py).

Baselines are small: the table checks outcomes, the family tests check accuracy at scale.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

import numpy as np

from helpers import rand
from hostile import (HUGE, SIZE_ERRORS, Check, Raises, Spec, byteswapped, empty_of,
                     misaligned, negative_strides, stepped)

F32 = np.float32


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


SPECS: Dict[str, Callable[[], Spec]] = {
    "embedding_lookup": spec_embedding_lookup,
    "embedding_add": spec_embedding_add,
    "embedding_grad": spec_embedding_grad,
    "resize_table": spec_resize_table,
    "resize_table_2d": spec_resize_table_2d,
    "LearnedPositionalEmbedding": spec_learned_positional_embedding,
}
