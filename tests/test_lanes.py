"""The small-call lanes (cpp/bindings/lane.hpp): a decode step's common call, computed without the Python layer.

A lane takes a call or declines it. What it takes must give the planned path's
result bit for bit (same kernel, same arguments) and return the same objects
(``out`` itself, or a new array); what the planned path refuses it must
decline, and a call it declines it must leave untouched (the planned path then
runs with its checks). Every call is built twice from one recipe, so that the
lane and the planned path each get fresh, identical arguments.
"""

from __future__ import annotations

import inspect
import math
from typing import Any, Callable, Dict, List, Tuple

import numpy as np
import pytest
from hypothesis import given, strategies as st

import posenc
from posenc import _backend
from posenc._checks import BFLOAT16

from conftest import ISAS, requires_native, using
from hostile import inside

# Lanes serve the native backend only: the suite's reference stage (POSENC_BACKEND=reference) skips them.
pytestmark = [requires_native, pytest.mark.skipif(ISAS == ["reference"], reason="native-only: lanes")]


@pytest.fixture(autouse=True)
def native_backend() -> Any:
    """The planned path a lane is compared with runs on the native backend, as the lane does."""
    with using("native"):
        yield

Call = Tuple[Tuple[Any, ...], Dict[str, Any]]
ABSENT = "absent"  # a recipe's value for an argument not passed


def _dtype(name: str) -> np.dtype:
    return np.dtype(BFLOAT16) if name == "bfloat16" else np.dtype(name)


def _array(shape: Tuple[int, ...], dtype: str, layout: str, seed: int) -> np.ndarray:
    """Fresh values of ``shape`` (the same for one seed) in one of the layouts a caller passes."""
    values = np.random.default_rng(seed).standard_normal(shape).astype(_dtype(dtype))
    if layout == "f":
        return np.asfortranarray(values)
    if layout == "sliced":  # every other element of the last axis: a strided view of a larger buffer
        wide = np.zeros(shape[:-1] + (2 * shape[-1],), values.dtype)
        wide[..., ::2] = values
        return wide[..., ::2]
    if layout == "unaligned":
        raw = np.frombuffer(bytearray(values.nbytes + 1), np.uint8)[1:]
        view = raw.view(values.dtype).reshape(shape) if values.size else values[:0].reshape(shape)
        view[...] = values
        return view
    if layout == "readonly":
        values.flags.writeable = False
    return values


def _snapshot(call: Call) -> List[bytes]:
    args, kwargs = call
    return [np.ascontiguousarray(a).tobytes() for a in (*args, *kwargs.values()) if isinstance(a, np.ndarray)]


def _same_bits(got: Any, want: Any) -> bool:
    return (got.shape == want.shape and got.dtype == want.dtype
            and np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes())


def _where(obj: Any, call: Call) -> Any:
    """Which argument of ``call`` ``obj`` is (its position or keyword), or None."""
    args, kwargs = call
    for i, a in enumerate(args):
        if a is obj:
            return i
    for k, a in kwargs.items():
        if a is obj:
            return k
    return None


def agree(name: str, make: Callable[[], Call]) -> bool:
    """Run the lane and the planned path on two fresh builds of one call; True when the lane took it."""
    lane_call, planned_call = make(), make()
    before = _snapshot(lane_call)
    got = getattr(_backend.native, "lane_" + name)(*lane_call)  # a lane never raises
    try:
        want, refused = getattr(posenc, name).planned(*planned_call[0], **planned_call[1]), None
    except (TypeError, ValueError) as exc:
        want, refused = None, exc
    if got is None:
        assert _snapshot(lane_call) == before, f"{name}: the lane declined the call but wrote its arguments"
        return False
    assert refused is None, f"{name}: the lane took a call the planned path refuses ({refused!r})"
    assert type(got) is type(want) and (not isinstance(want, tuple) or len(got) == len(want)), name
    for g, w in zip(got, want) if isinstance(want, tuple) else [(got, want)]:
        assert _same_bits(g, w), f"{name}: the lane's result differs from the planned path's"
        assert _where(g, lane_call) == _where(w, planned_call), f"{name}: returned another object than planned"
    assert _snapshot(lane_call) == _snapshot(planned_call), f"{name}: the arguments were written differently"
    return True


# ------------------------------------------------------------------ signatures


def test_lanes_bind_the_public_signatures():
    """A lane binds exactly its public function's parameters (a renamed one must not be taken by its old name)."""
    lanes = _backend.native.LANE_PARAMETERS
    assert set(lanes) == {"apply_rope", "apply_rope_qk", "apply_rope_nd", "add_alibi", "add_sinusoidal"}
    for name, (names, positional) in lanes.items():
        parameters = inspect.signature(getattr(posenc, name)).parameters.values()
        assert names == tuple(p.name for p in parameters), name
        assert positional == sum(p.kind is p.POSITIONAL_OR_KEYWORD for p in parameters), name


# ------------------------------------------------------------------ the calls the lanes are for


def _x(shape: Tuple[int, ...], dtype: str = "float32", layout: str = "c", seed: int = 0) -> Callable[[], np.ndarray]:
    return lambda: _array(shape, dtype, layout, seed)


def _in_place(x: Callable[[], np.ndarray], **kwargs: Any) -> Callable[[], Call]:
    def make() -> Call:
        a = x()
        return (a,), dict(kwargs, out=a)
    return make


def _rope_qk(q_shape: Tuple[int, ...], k_shape: Tuple[int, ...], dtype: str, in_place: bool, **kwargs: Any
             ) -> Callable[[], Call]:
    def make() -> Call:
        q, k = _array(q_shape, dtype, "c", 1), _array(k_shape, dtype, "c", 2)
        outs = dict(out_q=q, out_k=k) if in_place else {}
        return (q, k), dict(kwargs, **outs)
    return make


def _nd(x: Callable[[], np.ndarray], coords: Callable[[], np.ndarray], axes_dims: Tuple[int, ...], in_place: bool = False,
        **kwargs: Any) -> Callable[[], Call]:
    def make() -> Call:
        a = x()
        return (a, coords(), posenc.rope_axial_freqs(axes_dims)), dict(kwargs, out=a) if in_place else kwargs
    return make


COMMON = [
    ("apply_rope", _in_place(_x((1, 1, 1, 128)), offset=4000)),
    ("apply_rope", lambda: ((_array((2, 5, 3, 16), "float64", "c", 3),), dict(offset=7))),
    ("apply_rope", lambda: ((_array((2, 3, 5, 8), "float16", "f", 4), np.arange(5, dtype=np.int32)),
                            dict(seq_axis=-2, interleaved=True, inverse=True, base=500000))),
    ("apply_rope", lambda: ((_array((5, 8), "float32", "c", 5),), dict(positions=np.array([[3, 1, 4, 1, 5]], np.uint8),
                                                                       seq_axis=-2, base=1e6, scaling=None))),
    ("apply_rope_qk", _rope_qk((1, 1, 32, 128), (1, 1, 8, 128), "float32", True, positions=np.array([[4000]]))),
    # RotaryEmbedding's call (Llama 3's frequencies and a YaRN-like attention scaling), in Hugging Face's layout.
    ("apply_rope_qk", _rope_qk((1, 32, 1, 128), (1, 8, 1, 128), "float32", True, positions=np.array([[4000]]),
                               seq_axis=-2, base=500000.0, rotary_dim=128, attention_scaling=1.1,
                               inv_freq=posenc.rope_inv_freq(128, base=500000.0, scaling={
                                   "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                   "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})[0])),
    ("apply_rope", _in_place(_x((2, 3, 2, 16), "float16"), offset=9, inv_freq=np.geomspace(1, 1e-4, 8),
                             attention_scaling=-2)),
    # A batched decode step: a position per sequence ([batch, 1]), and a row per batch entry at any seq.
    ("apply_rope", _in_place(_x((4, 1, 3, 16)), positions=np.array([[5], [900], [7], [2**40]]))),
    ("apply_rope", lambda: ((_array((3, 2, 5, 8), "float64", "c", 12), np.arange(15).reshape(3, 5) * 31),
                            dict(seq_axis=-2, interleaved=True))),
    ("apply_rope_qk", _rope_qk((3, 1, 4, 16), (3, 1, 2, 16), "float16", True,
                               positions=np.array([[9], [70000], [3]], np.int32))),
    ("apply_rope_qk", _rope_qk((2, 4, 6, 16), (2, 4, 2, 16), "float64", False, offset=9, xpos_center=0)),
    ("apply_rope_qk", _rope_qk((3, 4, 2, 8), (3, 4, 1, 8), "float16", True, seq_axis=-3, interleaved=True)),
    ("apply_rope_nd", _nd(_x((1, 16, 2, 16), seed=8), lambda: posenc.rope_grid_coords((1, 4, 4)), (4, 6, 6),
                          in_place=True, interleaved=True)),
    ("apply_rope_nd", _nd(_x((2, 3, 5, 8), "float64", seed=9), lambda: np.linspace(0, 7, 10).reshape(5, 2), (4, 4),
                          seq_axis=-2, inverse=True)),
    ("apply_rope_nd", _nd(_x((5, 3, 12), "float16", "f", 10), lambda: np.arange(15, dtype=np.int32).reshape(5, 3),
                          (2, 2, 4))),
    ("add_alibi", _in_place(_x((1, 1, 1, 8)), offset=7)),
    ("add_alibi", lambda: ((_array((2, 4, 3, 7), "float64", "f", 6),), dict(symmetric=True, offset=-2))),
    ("add_alibi", _in_place(_x((1, 4, 1, 40), "float16"), offset=1000)),
    ("add_sinusoidal", _in_place(_x((1, 1, 64)), offset=4000)),
    ("add_sinusoidal", lambda: ((_array((2, 3, 6), "float16", "c", 7),), dict(base=100, interleaved=False, scale=2))),
]
if BFLOAT16 is not None:
    COMMON += [
        ("apply_rope", _in_place(_x((1, 3, 2, 16), "bfloat16"), offset=2**40)),
        ("add_sinusoidal", _in_place(_x((2, 3, 8), "bfloat16"), scale=0.5)),
        ("add_alibi", _in_place(_x((1, 8, 1, 40), "bfloat16"), offset=1000)),
        ("apply_rope_nd", _nd(_x((2, 6, 3, 16), "bfloat16", seed=11), lambda: np.arange(12).reshape(6, 2) * 4096,
                              (8, 8), in_place=True, interleaved=True)),
    ]


@pytest.mark.parametrize("name, make", COMMON, ids=[f"{name}-{i}" for i, (name, _) in enumerate(COMMON)])
def test_lane_takes_the_common_calls(name, make, native_isa):
    assert agree(name, make), f"{name}: the lane declined a call it is for"


@pytest.mark.skipif(BFLOAT16 is None, reason="needs ml_dtypes")
def test_two_byte_dtypes_are_told_apart_after_bfloat16():
    """The bindings know bfloat16 by its type number once they have seen it by name: other 2-byte dtypes
    are still declined before and after, and bfloat16 views of the same memory still taken."""
    bits = np.ones((1, 1, 2, 8), np.float32).astype(BFLOAT16).view(np.uint16)
    for dtype in (np.int16, np.uint16, np.dtype("V2"), BFLOAT16, np.int16, np.uint16, np.dtype("V2"), BFLOAT16):
        x = bits.copy().view(dtype)
        got = _backend.native.lane_apply_rope((x,), dict(offset=3, out=x))
        assert (got is x) == (np.dtype(dtype) == np.dtype(BFLOAT16)), dtype


def test_the_public_function_takes_the_lane():
    """On the native backend the public function's result is the lane's (the planned path never runs)."""
    x = np.ones((1, 1, 2, 8), np.float32)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(posenc._rope, "rope_params", None)  # the plan's first step: not reached, the lane took the call
        assert posenc.apply_rope(x, offset=3, out=x) is x


def test_rotary_embedding_takes_the_lane():
    """RotaryEmbedding's call of a fixed scheme is apply_rope_qk's with its frequencies: a decode step takes the lane."""
    rope = posenc.RotaryEmbedding(16, base=500000.0, scaling={"rope_type": "yarn", "factor": 4.0,
                                                               "original_max_position_embeddings": 64})
    q, k = np.ones((1, 4, 1, 16), np.float32), np.ones((1, 2, 1, 16), np.float32)
    want = posenc.apply_rope_qk.planned(q, k, np.array([[70]]), seq_axis=-2, inv_freq=rope.inv_freq,
                                        attention_scaling=rope.attention_scaling)
    assert rope.attention_scaling != 1.0
    with pytest.MonkeyPatch.context() as m:
        m.setattr(posenc._rope, "rope_params", None)  # not reached: the lane took the call
        got = rope(q, k, np.array([[70]]), seq_axis=-2, out_q=q, out_k=k)
    assert got[0] is q and got[1] is k
    assert _same_bits(q, want[0]) and _same_bits(k, want[1])


# ------------------------------------------------------------------ everything near them: taken or declined, never wrong
#
# Each call is a recipe: plain values (what the lane takes) with any argument swapped for an odd one. The
# odd ones are tried one at a time from a plain call (every one, deterministically), then mixed by
# hypothesis.

ODD_OFFSETS = [2**53, 2**53 - 1, -(2**53), True, np.int64(5), 5.0, 2**70]
ODD_BASES = [1.0, -2.0, math.nan, math.inf, np.float64(1e4), 10**400, "1e4"]
ODD_FLAGS = [np.bool_(True), 1, None]
ODD_OUTS = ["other", "view"]
ODD_POSITIONS = [">i8", "two-rows", "three-rows", "float", "list", "bool", "of x"]
_FREQS = np.geomspace(1.0, 1e-3, 4)  # inv_freq for the recipes' head_dim 8
ODD_EXTRAS = [{"rotary_dim": 4}, {"inv_freq": None}, {"mrope_interleaved": True}, {"attention_scaling": 1.0},
              {"bogus": 1}, {"scaling": {"rope_type": "linear", "factor": 2.0}},
              # What RotaryEmbedding passes (taken), and everything near it.
              {"inv_freq": _FREQS, "attention_scaling": 1.25, "rotary_dim": 8, "base": 500000.0},
              {"inv_freq": _FREQS.astype(np.float32)}, {"inv_freq": np.arange(1, 5, dtype=np.int32)},
              {"inv_freq": np.repeat(_FREQS, 2)[::2]}, {"inv_freq": _FREQS.astype(np.float16)},
              {"inv_freq": _FREQS.astype(">f8")}, {"inv_freq": _FREQS.tolist()}, {"inv_freq": _FREQS[None]},
              {"inv_freq": np.ones(5)}, {"inv_freq": np.where(_FREQS < 0.1, np.nan, _FREQS)},
              {"inv_freq": np.where(_FREQS < 0.1, np.inf, _FREQS)}, {"inv_freq": _FREQS > 0.1},
              {"inv_freq": _FREQS, "scaling": {"rope_type": "linear", "factor": 2.0}}, {"inv_freq": _FREQS, "base": 1.0},
              {"inv_freq": _FREQS, "base": -2.0}, {"inv_freq": "of x"},
              {"attention_scaling": 0.5}, {"attention_scaling": -3}, {"attention_scaling": math.nan},
              {"attention_scaling": math.inf}, {"attention_scaling": True}, {"attention_scaling": np.float64(2.0)},
              {"attention_scaling": 10**400}, {"attention_scaling": "2"},
              {"rotary_dim": 8}, {"rotary_dim": np.int64(8)}, {"rotary_dim": 8.0}, {"rotary_dim": True},
              {"rotary_dim": 0}, {"rotary_dim": 10}]


def _extra(extra: Dict[str, Any], x: Any) -> Dict[str, Any]:
    """The recipe's extra arguments; inv_freq "of x" is a float view of x's first bytes (read while x is written)."""
    if not (isinstance(extra.get("inv_freq"), str) and extra["inv_freq"] == "of x"):
        return extra
    ok = isinstance(x, np.ndarray) and x.dtype.kind == "f" and x.dtype.itemsize >= 4 and x.flags.c_contiguous \
        and x.size >= 4
    return dict(extra, inv_freq=x.reshape(-1)[:4] if ok else _FREQS)
ODD_OPERANDS = [dict(dtype="int32"), dict(dtype=">f4"), dict(layout="sliced"), dict(layout="unaligned"),
                dict(layout="readonly"), dict(shape=(2, 3, 2, 3)), dict(shape=(2, 3, 2, 0)), dict(shape=(3, 8)),
                dict(shape=(8,)), dict(shape=(0, 3, 0, 8))] + ([dict(dtype="bfloat16", layout="f")] if BFLOAT16 else [])


def _out(choice: Any, x: np.ndarray) -> Any:
    return {"self": x, "other": np.zeros_like(x), "view": x[...]}.get(choice, choice) if isinstance(choice, str) \
        else choice


def _kwargs(recipe: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in recipe.items() if not (isinstance(v, str) and v == ABSENT)}


def _positions(choice: str, seq: int, x: Any = None) -> Any:
    if choice == "of x" and isinstance(x, np.ndarray) and x.flags.c_contiguous and x.flags.writeable \
            and x.nbytes >= 8 * seq:
        return inside(x, np.arange(seq, dtype=np.int64))  # integer positions in x's first bytes
    return {"none": None, "int64": np.arange(seq), "int32-row": np.arange(seq, dtype=np.int32)[None],
            "uint8-strided": np.arange(2 * seq, dtype=np.uint8)[::2], ">i8": np.arange(seq, dtype=">i8"),
            "two-rows": np.arange(2 * seq).reshape(2, seq), "three-rows": np.arange(3 * seq).reshape(3, seq),
            "float": np.arange(seq, dtype=np.float64),
            "list": list(range(seq)), "bool": np.ones(seq, bool)}.get(choice, ABSENT)


def _operand(spec: Dict[str, Any]) -> np.ndarray:
    return _array(spec.get("shape", (2, 3, 2, 8)), spec.get("dtype", "float32"), spec.get("layout", "c"),
                  spec.get("seed", 0))


def _seq(x: np.ndarray, seq_axis: Any) -> int:
    axis = -2 if isinstance(seq_axis, int) and seq_axis == -2 else -3
    return x.shape[axis] if x.ndim >= -axis else 0


def rope_call(r: Dict[str, Any]) -> Call:
    """apply_rope(x, [positions], offset=, base=, interleaved=, inverse=, seq_axis=, out=, **extra)."""
    x = _operand(r["x"])
    kwargs = _kwargs(dict(dict(offset=r["offset"], base=r["base"], interleaved=r["interleaved"], inverse=r["inverse"],
                               seq_axis=r["seq_axis"], out=_out(r["out"], x)), **_extra(r["extra"], x)))
    p = _positions(r["positions"], _seq(x, r["seq_axis"]), x)
    if isinstance(p, str):
        return (x,), kwargs
    return ((x, p), kwargs) if r["positional"] else ((x,), dict(kwargs, positions=p))


def rope_qk_call(r: Dict[str, Any]) -> Call:
    """apply_rope_qk(q, k, [positions], ..., xpos..., out_q=, out_k=): k as its recipe says, or q or a view of it."""
    q = _operand(r["q"])
    k = {"q itself": q, "view of q": q[...]}.get(r["k"]) if isinstance(r["k"], str) else _operand(r["k"])
    kwargs = _kwargs(dict(dict(offset=r["offset"], base=r["base"], seq_axis=r["seq_axis"], out_q=_out(r["out_q"], q),
                               out_k=q if r["out_k"] == "q" else _out(r["out_k"], k), **r["xpos"]),
                          **_extra(r["extra"], k)))
    p = _positions(r["positions"], _seq(q, r["seq_axis"]), q)
    return ((q, k), kwargs) if isinstance(p, str) else ((q, k, p), kwargs)


def alibi_call(r: Dict[str, Any]) -> Call:
    """add_alibi(scores, offset=, symmetric=, slopes=, num_heads=, out=)."""
    s = _operand(r["scores"])
    slopes = np.linspace(0.5, 0.1, s.shape[-3]) if r["slopes"] == "given" and s.ndim >= 3 else r["slopes"]
    return (s,), _kwargs(dict(offset=r["offset"], symmetric=r["symmetric"], slopes=slopes, num_heads=r["num_heads"],
                              out=_out(r["out"], s)))


def sinusoidal_call(r: Dict[str, Any]) -> Call:
    """add_sinusoidal(x, offset=, positions=, base=, interleaved=, scale=, out=)."""
    x = _operand(r["x"])
    p = _positions(r["positions"], x.shape[-2] if x.ndim >= 2 else 0)
    return (x,), _kwargs(dict(offset=r["offset"], positions=p, base=r["base"], interleaved=r["interleaved"],
                              scale=r["scale"], out=_out(r["out"], x)))


def _coords(choice: str, x: np.ndarray, seq: int) -> Any:
    """coords [seq, 2] for the recipe's freqs (two axes), or an odd one."""
    grid = np.arange(2 * seq).reshape(seq, 2)
    if choice == "of x" and x.ndim == 4 and x.size and x.shape[1] == seq and x.shape[3] >= 2:  # a view of x's memory
        return x[0, :, 0, :2]
    return {"int64": grid, "float64": grid / 3.0, "float32": (grid / 3.0).astype(np.float32), "uint8-strided":
            np.arange(4 * seq, dtype=np.uint8).reshape(seq, 4)[:, ::2], "fortran": np.asfortranarray(grid),
            ">i8": grid.astype(">i8"), "float16": grid.astype(np.float16), "nan": np.where(grid == 1, np.nan, grid),
            "inf": np.where(grid == 1, np.inf, grid), "huge": grid * 3e307, "huge negative": grid * -3e307, "one row": grid[:1],
            "three axes": np.arange(3 * seq).reshape(seq, 3), "batched": grid[None], "flat": grid.reshape(-1),
            "list": grid.tolist(), "bool": grid > 1, "object": grid.astype(object)}.get(choice, choice)


def _freqs(choice: str) -> Any:
    """freqs [2, 4] (two axes, four pairs), or an odd one."""
    f = posenc.rope_axial_freqs((4, 4), base=100.0)
    return {"shared": f, "per head": np.stack([f, f / 2]), "int": np.ones((2, 4), np.int64), "float32":
            f.astype(np.float32), "nan": np.where(f > 0.5, np.nan, f), "fortran": np.asfortranarray(f), ">f8":
            f.astype(">f8"), "strided": np.repeat(f, 2, axis=1)[:, ::2], "five pairs": np.ones((2, 5)), "flat":
            f.reshape(-1), "no pairs": f[:, :0], "huge": f * 1e306, "list": f.tolist()}.get(choice, choice)


def rope_nd_call(r: Dict[str, Any]) -> Call:
    """apply_rope_nd(x, coords, freqs, interleaved=, seq_axis=, inverse=, out=), coords and freqs positional or
    by keyword."""
    x = _operand(r["x"])
    kwargs = _kwargs(dict(interleaved=r["interleaved"], inverse=r["inverse"], seq_axis=r["seq_axis"],
                          out=_out(r["out"], x)))
    coords, freqs = _coords(r["coords"], x, _seq(x, r["seq_axis"])), _freqs(r["freqs"])
    return ((x, coords, freqs), kwargs) if r["positional"] else ((x,), dict(kwargs, coords=coords, freqs=freqs))


# name: (the call, a plain recipe, the odd values of each argument)
LANES: Dict[str, Tuple[Callable[[Dict[str, Any]], Call], Dict[str, Any], Dict[str, List[Any]]]] = {
    "apply_rope": (rope_call, dict(x={}, positions=ABSENT, positional=False, offset=5, base=10000.0, interleaved=False,
                                   inverse=True, seq_axis=-3, extra={}, out="self"),
                   dict(x=ODD_OPERANDS, positions=ODD_POSITIONS, offset=ODD_OFFSETS, base=ODD_BASES,
                        interleaved=ODD_FLAGS, inverse=ODD_FLAGS, seq_axis=[-1, np.int64(-3), -3.0, None],
                        extra=ODD_EXTRAS, out=ODD_OUTS, positional=[True])),
    "apply_rope_qk": (rope_qk_call, dict(q={}, k=dict(shape=(2, 3, 1, 8), seed=1), positions="int32-row",
                                         offset=ABSENT, base=500000, seq_axis=-3, xpos={}, extra={}, out_q="self",
                                         out_k="self"),
                      dict(q=ODD_OPERANDS, k=["q itself", "view of q", dict(shape=(2, 3, 1, 10)),
                                               dict(shape=(2, 4, 1, 8)), dict(shape=(3, 1, 8)),
                                               dict(shape=(2, 3, 1, 8), dtype="float64"),
                                               dict(shape=(2, 3, 1, 8), layout="unaligned")],
                           positions=ODD_POSITIONS, offset=ODD_OFFSETS + [5], base=ODD_BASES, seq_axis=[-1, -3.0],
                           xpos=[{"xpos_scale_base": 512.0}, {"xpos_center": 1}, {"xpos_center": False}],
                           extra=ODD_EXTRAS, out_q=ODD_OUTS, out_k=ODD_OUTS + ["q"])),
    "apply_rope_nd": (rope_nd_call, dict(x={}, coords="int64", freqs="shared", positional=True, interleaved=False,
                                         inverse=True, seq_axis=-3, out="self"),
                      dict(x=ODD_OPERANDS + [dict(dtype="float16", layout="f"), dict(shape=(2, 3, 2, 10))],
                           coords=["float64", "float32", "uint8-strided", "fortran", ">i8", "float16", "nan", "inf",
                                   "huge", "huge negative", "one row", "three axes", "batched", "flat", "list", "bool", "object",
                                   "of x"],
                           freqs=["per head", "int", "float32", "nan", "fortran", ">f8", "strided", "five pairs", "flat",
                                  "no pairs", "huge", "list"],
                           positional=[False], interleaved=ODD_FLAGS, inverse=ODD_FLAGS,
                           seq_axis=[-1, -2, np.int64(-3), -3.0, None], out=ODD_OUTS)),
    "add_alibi": (alibi_call, dict(scores={}, offset=-3, symmetric=True, slopes=None, num_heads=ABSENT, out="self"),
                  dict(scores=ODD_OPERANDS + [dict(dtype="float16"), dict(shape=(2, 0, 3, 8))], offset=ODD_OFFSETS,
                       symmetric=ODD_FLAGS, slopes=["given"], num_heads=[None, 1], out=ODD_OUTS)),
    "add_sinusoidal": (sinusoidal_call, dict(x={}, offset=5, positions=ABSENT, base=100, interleaved=False, scale=2,
                                             out="self"),
                       dict(x=ODD_OPERANDS + [dict(shape=(2, 3, 2, 6))], offset=ODD_OFFSETS, positions=["none", "int64"],
                            base=ODD_BASES, interleaved=ODD_FLAGS, scale=[math.nan, 10**400, np.float32(2)],
                            out=ODD_OUTS)),
}
ONE_ODD = [(name, arg, value) for name, (_, _, odd) in LANES.items() for arg, values in odd.items() for value in values]


@pytest.mark.parametrize("name", sorted(LANES))
def test_the_plain_recipe_is_the_lanes(name):
    call, plain, _ = LANES[name]
    assert agree(name, lambda: call(plain)), f"{name}: the lane declined the plain recipe the odd ones start from"


@pytest.mark.parametrize("name, arg, value", ONE_ODD, ids=[f"{n}-{a}-{i}" for i, (n, a, _) in enumerate(ONE_ODD)])
def test_one_odd_argument(name, arg, value):
    call, plain, _ = LANES[name]
    agree(name, lambda: call(dict(plain, **{arg: value})))


@st.composite
def recipes(draw: Any, name: str) -> Dict[str, Any]:
    """A plain recipe of ``name`` with each argument odd one time in ten."""
    _, plain, odd = LANES[name]
    return {arg: draw(st.sampled_from([value] * 9 * max(1, len(odd.get(arg, []))) + odd.get(arg, [])))
            for arg, value in plain.items()}


@given(data=st.data())
@pytest.mark.parametrize("name", sorted(LANES))
def test_mixed_odd_arguments(name, data):
    recipe = data.draw(recipes(name))
    agree(name, lambda: LANES[name][0](recipe))
