"""Building blocks of the hostile-input table (tests/test_arguments.py).

A *spec* describes one public function: its name, a valid baseline call
(keyword arguments) and what each argument is (a size, a dim, a base, a
float array, integer positions, an ``out``...). The helpers below turn each
role into the hostile cases every function with that role must survive,
each with its documented outcome:

- ``Raises(exc, match)``: that exception type, with a message matching
  ``match`` (the argument's name); any ``out`` passed is left untouched.
- ``Same(clean)``: a result equal (within the dtype's rounding) to the
  reference implementation called with the clean equivalent arguments
  ``clean`` (a dict of overrides, default: the baseline) — used for odd
  layouts (byte-swapped, misaligned, negative/zero strides, subclasses,
  sequences), which must give the right answer, not merely no crash.
- ``Check(fn)``: any other property of the result (empty shapes, finiteness).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import resource
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Type, Union

from types import SimpleNamespace

import numpy as np

HUGE = 2**63  # beyond int64
HUGE_SIZES = (2**40, 2**62, HUGE, 2**64 + 1)  # products far beyond the address space
# Huge sizes must be refused before anything is allocated: a ValueError naming
# the size, or a MemoryError from the allocator (never a crash, never a wrap).
SIZE_ERRORS = (ValueError, MemoryError)


class Sub(np.ndarray):
    """An ndarray subclass: must be accepted like its base class."""


@dataclasses.dataclass
class Raises:
    exc: Union[Type[BaseException], Tuple[Type[BaseException], ...]]
    match: str


@dataclasses.dataclass
class Same:
    clean: Optional[Dict[str, Any]] = None  # overrides giving the same values in a plain layout
    name: Optional[str] = None  # reference function, if not the same name


@dataclasses.dataclass
class Check:
    fn: Callable[[Any], None]
    refuse: Tuple[Type[BaseException], ...] = ()  # documented exceptions also acceptable
    match: str = ""


Expect = Union[Raises, Same, Check]


@dataclasses.dataclass
class Case:
    id: str
    func: str  # public name, looked up on posenc or posenc.reference
    kwargs: Dict[str, Any]
    expect: Expect
    args: Tuple[Any, ...] = ()
    call: Optional[Callable[[Any], Any]] = None  # custom call(api) for classes and methods


# ------------------------------------------------------------------ memory guard

SANITIZED = os.environ.get("POSENC_SANITIZED") == "1"
GIB = 1 << 30


def _status(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


@contextlib.contextmanager
def memory_guard(headroom: int = 3 * GIB, max_growth: int = GIB):
    """Run a hostile call with the address space capped ``headroom`` above what is in use.

    A size that slips past validation then ends in a MemoryError instead of
    the OOM killer taking the test run (and the machine) down; and since a
    refused size must be refused *before* memory is spent, the peak RSS may
    not grow by more than ``max_growth`` either. No cap under ASan (its
    shadow memory needs terabytes of address space; allocator_may_return_null
    turns a single huge request into a MemoryError there).
    """
    if SANITIZED or not os.path.exists("/proc/self/statm"):
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        used = int(f.read().split()[0]) * resource.getpagesize()
    cap = used + headroom
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
    hwm = _status("VmHWM")
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        grown = _status("VmHWM") - hwm
        assert grown <= max_growth, f"peak memory grew by {grown / GIB:.2f} GiB during the call"


# ------------------------------------------------------------------ layouts

def byteswapped(a: np.ndarray) -> np.ndarray:
    return a.astype(a.dtype.newbyteorder())


def misaligned(a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` whose data pointer is one byte off its itemsize alignment."""
    buf = np.zeros(a.nbytes + a.itemsize + 1, np.uint8)
    view = buf[1 : 1 + a.nbytes].view(a.dtype).reshape(a.shape)
    view[...] = a
    assert a.itemsize == 1 or not view.flags.aligned
    return view


def negative_strides(a: np.ndarray) -> np.ndarray:
    """Same values, every axis walked backwards in memory."""
    return np.flip(np.flip(a).copy())


def stepped(a: np.ndarray) -> np.ndarray:
    """Same values, every axis with a step of 2 (a view of a larger buffer)."""
    big = np.zeros(tuple(2 * n for n in a.shape), a.dtype)
    view = big[tuple(slice(None, None, 2) for _ in a.shape)]
    view[...] = a
    return view


def zero_strided(a: np.ndarray) -> np.ndarray:
    """A broadcast (stride 0) view along the first axis, read-only like NumPy makes it."""
    return np.broadcast_to(a[:1], a.shape)


def fortran(a: np.ndarray) -> np.ndarray:
    return np.asfortranarray(a)


def subclass(a: np.ndarray) -> np.ndarray:
    return a.copy().view(Sub)


# A plain ascontiguousarray of each of these holds the same values as the
# clean baseline — except zero_strided, whose clean twin is its own copy.
INPUT_LAYOUTS: Dict[str, Callable[[np.ndarray], Any]] = {
    "byteswapped": byteswapped,
    "misaligned": misaligned,
    "negative-strides": negative_strides,
    "stepped": stepped,
    "zero-strides": zero_strided,
    "fortran": fortran,
    "subclass": subclass,
}
OUT_LAYOUTS: Dict[str, Callable[[np.ndarray], Any]] = {
    "misaligned": misaligned,
    "negative-strides": negative_strides,
    "stepped": stepped,
    "fortran": fortran,
    "subclass": subclass,
}


def read_only(a: np.ndarray) -> np.ndarray:
    a = a.copy()
    a.flags.writeable = False
    return a


# ------------------------------------------------------------------ the builder

class Spec:
    """Collects the hostile cases of one public function."""

    def __init__(self, func: str, **baseline: Any) -> None:
        self.func = func
        self.baseline = baseline
        self.cases: List[Case] = []
        # The out= arguments of the baseline call: name -> (shape, dtype, the inputs it may alias).
        self.outs: Dict[str, Tuple[Tuple[int, ...], np.dtype, Tuple[str, ...]]] = {}

    # -- primitives
    def add(self, id: str, expect: Expect, **over: Any) -> "Spec":
        self.cases.append(Case(f"{self.func}-{id}", self.func, {**self.baseline, **over}, expect))
        return self

    def raises(self, id: str, exc: Any, match: str, **over: Any) -> "Spec":
        return self.add(id, Raises(exc, match), **over)

    def same(self, id: str, clean: Optional[Dict[str, Any]] = None, **over: Any) -> "Spec":
        return self.add(id, Same(clean if clean is not None else {}), **over)

    def check(self, id: str, fn: Callable[[Any], None], **over: Any) -> "Spec":
        return self.add(id, Check(fn), **over)

    def custom(self, id: str, call: Callable[[Any], Any], expect: Expect) -> "Spec":
        self.cases.append(Case(f"{self.func}-{id}", self.func, {}, expect, call=call))
        return self

    # -- roles
    def size(self, arg: str, *, minimum: int = 0, empty: Optional[Callable[[Any], None]] = None,
             huge: bool = True, baseline: Any = None, float_exc: Any = TypeError, id: Optional[str] = None,
             zero_may_be_refused: bool = False) -> "Spec":
        """An integer count (length, head count...): ints and integer scalars only.

        ``baseline``: the valid count, when the spec's baseline passes an array
        there instead (``positions``: an int n or an array); ``float_exc``: the
        documented error for a float there (a float scalar is a 0-d array of
        positions: ValueError); ``zero_may_be_refused``: 0 may be a ValueError
        naming the argument instead of an empty result (a head count).
        """
        tag = id or arg
        good = self.baseline[arg] if baseline is None else baseline
        self.raises(f"{tag}-negative", ValueError, arg, **{arg: minimum - 1})
        self.raises(f"{tag}-float", float_exc, arg, **{arg: float(max(minimum, 2)) + 0.5})
        self.raises(f"{tag}-integral-float", float_exc, arg, **{arg: float(max(minimum, 2))})
        self.raises(f"{tag}-bool", (TypeError, ValueError) if float_exc is not TypeError else TypeError, arg,
                    **{arg: True})
        self.raises(f"{tag}-str", TypeError if float_exc is TypeError else (TypeError, ValueError), arg, **{arg: "3"})
        self.raises(f"{tag}-none", TypeError if float_exc is TypeError else (TypeError, ValueError), arg,
                    **{arg: None})
        if baseline is None:
            self.raises(f"{tag}-array", TypeError, arg, **{arg: np.array([3, 4])})
        self.same(f"{tag}-numpy-int", clean={arg: good}, **{arg: np.int64(good)})
        self.same(f"{tag}-python-int", clean={arg: np.int64(good)}, **{arg: int(good)})
        if huge:
            for h in HUGE_SIZES:
                self.raises(f"{tag}-huge-{h.bit_length() - 1}", SIZE_ERRORS, "", **{arg: h})
        if empty is not None and minimum <= 0:
            self.add(f"{tag}-zero", Check(empty, (ValueError,) if zero_may_be_refused else (), arg), **{arg: 0})
        return self

    def dim(self, arg: str, *, even: bool = True, huge: bool = True) -> "Spec":
        """A feature count: > 0 (and even where pairs rotate)."""
        self.raises(f"{arg}-zero", ValueError, arg, **{arg: 0})
        self.raises(f"{arg}-negative", ValueError, arg, **{arg: -2})
        self.raises(f"{arg}-float", TypeError, arg, **{arg: 4.0})
        self.raises(f"{arg}-bool", TypeError, arg, **{arg: True})
        self.raises(f"{arg}-none", TypeError, arg, **{arg: None})
        if even:
            self.raises(f"{arg}-odd", ValueError, arg, **{arg: 3})
        if huge:
            for h in HUGE_SIZES:
                self.raises(f"{arg}-huge-{h.bit_length() - 1}", SIZE_ERRORS, "", **{arg: h})
        return self

    def base(self, arg: str = "base") -> "Spec":
        """A frequency base: finite, > 0, not 1."""
        for id, v in [("zero", 0.0), ("negative", -10.0), ("one", 1.0), ("one-int", 1), ("nan", float("nan")),
                      ("inf", float("inf")), ("minus-inf", float("-inf")), ("int-beyond-float64", 10**400)]:
            self.raises(f"{arg}-{id}", ValueError, arg, **{arg: v})
        for id, v in [("str", "10000"), ("complex", 1e4 + 0j), ("bool", True), ("none", None), ("array", np.ones(2))]:
            self.raises(f"{arg}-{id}", TypeError, arg, **{arg: v})
        self.same(f"{arg}-int", clean={arg: 500.0}, **{arg: 500})
        self.same(f"{arg}-numpy-float32", clean={arg: float(np.float32(0.5))}, **{arg: np.float32(0.5)})
        return self

    def flag(self, arg: str) -> "Spec":
        """A bool argument: a non-bool is a TypeError (a truthy string is not True)."""
        for id, v in [("str", "yes"), ("int", 1), ("none", None)]:
            self.raises(f"{arg}-{id}", TypeError, arg, **{arg: v})
        self.same(f"{arg}-numpy-bool", clean={arg: bool(self.baseline.get(arg, False))},
                  **{arg: np.bool_(self.baseline.get(arg, False))})
        return self

    def integer(self, arg: str, *, huge: Any = ValueError) -> "Spec":
        """A signed integer (an offset): ints only; 2**63 refused or computed correctly."""
        self.raises(f"{arg}-float", TypeError, arg, **{arg: 1.5})
        self.raises(f"{arg}-bool", TypeError, arg, **{arg: True})
        self.raises(f"{arg}-str", TypeError, arg, **{arg: "1"})
        self.same(f"{arg}-numpy-int", clean={arg: 3}, **{arg: np.int32(3)})
        for h in (HUGE, -HUGE - 1, 2**64 + 1):
            if huge is ValueError:
                self.raises(f"{arg}-huge-{'minus-' if h < 0 else ''}{abs(h).bit_length() - 1}", (ValueError,), arg,
                            **{arg: h})
            elif huge is not None:  # a correct (finite) result or a ValueError naming the argument
                self.add(f"{arg}-huge-{'minus-' if h < 0 else ''}{abs(h).bit_length() - 1}",
                         Check(huge, (ValueError,), arg), **{arg: h})
        return self

    def floats(self, arg: str, *, layouts: bool = True, ints: bool = False, nan: Optional[Expect] = None,
               list_dtype_must_match: bool = False) -> "Spec":
        """A floating array argument: other kinds are a TypeError; every layout computes correctly."""
        good = np.asarray(self.baseline[arg])
        kinds = {"object": good.astype(object), "complex": good.astype(np.complex64), "bool": good != 0,
                 "str": good.astype(str), "timedelta": good.astype(np.int64).astype("m8[s]")}
        if not ints:
            kinds["int"] = good.astype(np.int64)
            kinds["uint8"] = good.astype(np.uint8)
        for id, v in kinds.items():
            self.raises(f"{arg}-{id}", TypeError, arg, **{arg: v})
        self.raises(f"{arg}-ragged", (TypeError, ValueError), arg, **{arg: [[1.0, 2.0], [3.0]]})
        self.raises(f"{arg}-scalar", ValueError, arg, **{arg: np.float32(1.0)})
        if layouts:
            for id, make in INPUT_LAYOUTS.items():
                v = make(good)
                self.same(f"{arg}-{id}", clean={arg: np.array(v, dtype=good.dtype)}, **{arg: v})
            if list_dtype_must_match:  # a list is float64, the other arrays are not: documented TypeError
                self.raises(f"{arg}-list", TypeError, "dtype", **{arg: good.tolist()})
            else:
                self.same(f"{arg}-list", clean={arg: np.array(good.tolist())}, **{arg: good.tolist()})
        if nan is not None:
            self.add(f"{arg}-nan-values", nan, **{arg: np.full_like(good, np.nan)})
        return self

    def positions(self, arg: str, *, integer_only: bool = False, finite: bool = True,
                  any_length: bool = False) -> "Spec":
        """A positions array of the baseline's shape (floats or integers unless integer_only)."""
        good = np.asarray(self.baseline[arg])
        self.raises(f"{arg}-wrong-ndim", ValueError, arg, **{arg: good.reshape(good.shape + (1,))})
        if not any_length:
            self.raises(f"{arg}-too-long", ValueError, arg, **{arg: np.concatenate([good.ravel(), good.ravel()])
                                                                 .reshape((-1,) + good.shape[1:])})
        for id, v in [("object", good.astype(object)), ("complex", good.astype(np.complex128)),
                      ("bool", good % 2 == 0), ("str", good.astype(str))]:
            self.raises(f"{arg}-{id}", TypeError, arg, **{arg: v})
        if integer_only:
            self.raises(f"{arg}-float", TypeError, arg, **{arg: good.astype(np.float64)})
            self.raises(f"{arg}-float-integral", TypeError, arg, **{arg: good.astype(np.float32)})
        else:
            self.same(f"{arg}-float", clean={arg: good.astype(np.float64)}, **{arg: good.astype(np.float32)})
            self.same(f"{arg}-misaligned-float64", clean={arg: good.astype(np.float64)},
                      **{arg: misaligned(good.astype(np.float64))})
            if finite:
                for id, bad in [("nan", np.nan), ("inf", np.inf), ("minus-inf", -np.inf)]:
                    v = good.astype(np.float64)
                    v.flat[-1] = bad
                    self.raises(f"{arg}-{id}", ValueError, arg, **{arg: v})
        for id, make in [("byteswapped", byteswapped), ("misaligned", misaligned),
                         ("negative-strides", negative_strides), ("stepped", stepped), ("subclass", subclass)]:
            self.same(f"{arg}-{id}", clean={arg: good.copy()}, **{arg: make(good)})
        for dt in (np.int8, np.uint16, np.int32, np.uint64):
            self.same(f"{arg}-{np.dtype(dt).name}", clean={arg: good.copy()}, **{arg: good.astype(dt)})
        self.same(f"{arg}-list", clean={arg: good.copy()}, **{arg: good.tolist()})
        return self

    def out(self, shape: Sequence[int], dtype: Any, inputs: Sequence[str] = (), arg: str = "out") -> "Spec":
        """``out=``: exact shape and dtype, writeable, no partial overlap; odd layouts written correctly."""
        dtype = np.dtype(dtype)
        self.outs[arg] = (tuple(shape), dtype, tuple(inputs))
        other = np.float64 if dtype != np.float64 else np.float32
        sentinel = lambda: np.full(shape, 7, dtype)  # noqa: E731
        self.raises(f"{arg}-read-only", ValueError, arg, **{arg: read_only(sentinel())})
        self.raises(f"{arg}-wrong-dtype", TypeError, arg, **{arg: np.full(shape, 7, other)})
        self.raises(f"{arg}-int-dtype", TypeError, arg, **{arg: np.full(shape, 7, np.int32 if dtype.kind == "f" else np.float32)})
        self.raises(f"{arg}-byteswapped", TypeError, arg, **{arg: byteswapped(sentinel())})
        self.raises(f"{arg}-wrong-shape", ValueError, arg, **{arg: np.full(tuple(shape) + (1,), 7, dtype)})
        self.raises(f"{arg}-transposed-shape", ValueError, arg, **{arg: np.full(tuple(shape)[::-1] + (2,), 7, dtype)})
        self.raises(f"{arg}-list", (TypeError, ValueError), arg, **{arg: sentinel().tolist()})
        self.raises(f"{arg}-zero-strides", ValueError, arg,
                    **{arg: np.lib.stride_tricks.as_strided(np.full(shape, 7, dtype), shape,
                                                            (0,) * len(shape), writeable=True)})
        for id, make in OUT_LAYOUTS.items():
            self.same(f"{arg}-{id}", **{arg: make(sentinel())})
        for name in inputs:
            good = np.asarray(self.baseline[name])
            if good.shape == tuple(shape) and good.dtype == dtype and good.ndim and good.shape[-1] > 1:
                # out shifted by one element against the input: the same buffer, partly overlapping
                buf = np.zeros(good.size + 1, dtype)
                src = buf[:-1].reshape(good.shape)
                src[...] = good
                self.raises(f"{arg}-overlaps-{name}", ValueError, arg, **{name: src, arg: buf[1:].reshape(good.shape)})
                # the exact alias is allowed (in place)
                alias = good.copy()
                self.same(f"{arg}-is-{name}", clean={name: good.copy()}, **{name: alias, arg: alias})
        # Every other array of the baseline call (see read).
        for name, value in self.baseline.items():
            if name not in self.outs and isinstance(value, np.ndarray):
                self.read(name, value, arg)
        return self

    def read(self, name: str, value: np.ndarray, arg: str = "out") -> "Spec":
        """An array argument the kernel reads (positions, slopes, coords, a table...), given as ``value``: whatever
        its shape and dtype, refused when its memory lies inside ``out`` or inside the input ``out`` aliases in
        place (the kernel would read values it has already written). Call after :meth:`out`."""
        shape, dtype, inputs = self.outs[arg]
        aliased = [n for n in inputs if np.shape(self.baseline[n]) == shape]
        if name in aliased or value.size == 0:
            return self
        holder = np.full(shape, 7, dtype)
        if holder.nbytes >= value.nbytes:
            self.raises(f"{arg}-holds-{name}-{value.dtype}", ValueError, "overlaps",
                        **{name: inside(holder, value), arg: holder})
        for x_name in aliased:
            buf = np.array(self.baseline[x_name], dtype)
            if buf.nbytes >= value.nbytes:
                self.raises(f"{x_name}-holds-{name}-{value.dtype}-in-place", ValueError, "overlaps",
                            **{name: inside(buf, value), x_name: buf, arg: buf})
        return self


def inside(holder: np.ndarray, value: np.ndarray) -> np.ndarray:
    """``value``'s values in a view of the first bytes of ``holder`` (C-contiguous, large enough)."""
    view = holder.reshape(-1).view(np.uint8)[:value.nbytes].view(value.dtype).reshape(value.shape)
    view[...] = value
    return view


# ------------------------------------------------------------------ expectations

def empty_of(shape: Tuple[int, ...]) -> Callable[[Any], None]:
    def check(result: Any) -> None:
        first = result[0] if isinstance(result, tuple) else result
        assert np.asarray(first).shape == shape, f"expected an empty result of shape {shape}, got {np.shape(first)}"
    return check


def finite_or_refused(result: Any) -> None:
    for r in result if isinstance(result, tuple) else (result,):
        r = np.asarray(r)
        if r.dtype.kind == "f":
            assert np.isfinite(r.astype(np.float64)).all(), "non-finite values in the result"


# ------------------------------------------------------------------ large inputs

def _large_inputs() -> SimpleNamespace:
    """Shared, read-only inputs large enough that the kernels go parallel (OpenMP): each family's LARGE
    calls (beside its SPECS) use them, and tests/test_invariants.py runs those calls (thread-count
    determinism, backend routing, concurrency)."""
    import posenc

    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 512, 8, 64)).astype(np.float32)  # [batch, seq, heads, head_dim]
    scores = rng.standard_normal((2, 8, 256, 256)).astype(np.float32)  # [batch, heads, q, k]
    table = rng.standard_normal((2048, 64)).astype(np.float32)
    pos = rng.integers(0, 2048, size=(4, 512))
    swin_scores = rng.standard_normal((32, 4, 49, 49)).astype(np.float32)  # [windows, heads, N, N], window 7
    detr_valid = np.ones((4, 64, 96), bool)  # a ragged padding mask
    for b, (h, w) in enumerate([(64, 50), (30, 96), (64, 96), (10, 7)]):
        detr_valid[b, h:, :] = detr_valid[b, :, w:] = False
    for a in (x, scores, table, pos, swin_scores, detr_valid):
        a.flags.writeable = False
    return SimpleNamespace(x=x, x3=x.reshape(4, 512, 512), scores=scores, table=table, pos=pos,
                           swin_scores=swin_scores, detr_valid=detr_valid,
                           grid=np.ascontiguousarray(table.reshape(32, 64, 64)[:16]),
                           axial=posenc.rope_axial_freqs((32, 32)))  # [2 axes, 32 pairs] for x's head_dim 64


BIG = _large_inputs()
