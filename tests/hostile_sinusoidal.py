"""Hostile-input specs of the sinusoidal family (run by tests/test_arguments.py)."""

from __future__ import annotations

from typing import Callable, Dict, List

import numpy as np

from helpers import rand
from hostile import SIZE_ERRORS, Spec, empty_of, finite_or_refused

F32 = np.float32


def spec_sinusoidal() -> Spec:
    s = Spec("sinusoidal", positions=np.array([0, 3, 1, 7, 2]), dim=6, dtype=F32)
    s.positions("positions", any_length=True)
    s.size("positions", empty=empty_of((0, 6)), baseline=5, float_exc=ValueError, id="n")
    s.dim("dim")
    s.base("base")
    s.flag("interleaved")
    s.raises("freq_rule-unknown", ValueError, "freq_rule", freq_rule="Vaswani")
    s.raises("freq_rule-t2t-dim2", ValueError, "dim", freq_rule="t2t", dim=2)
    s.raises("dtype-int", TypeError, "dtype", dtype=np.int32)
    s.raises("dtype-complex", TypeError, "dtype", dtype=np.complex64)
    s.raises("dtype-garbage", TypeError, "dtype", dtype="float33")
    s.raises("dtype-byteswapped", TypeError, "dtype", dtype=np.dtype(">f8" if np.little_endian else "<f8"))
    s.out((5, 6), F32)
    return s


def spec_add_sinusoidal() -> Spec:
    x = rand(2, 5, 6)
    s = Spec("add_sinusoidal", x=x)
    s.floats("x")
    s.raises("x-1d", ValueError, "x", x=rand(6))
    s.raises("x-odd-dim", ValueError, "x.shape", x=rand(2, 5, 7))
    s.check("x-empty-batch", empty_of((0, 5, 6)), x=rand(0, 5, 6))
    s.check("x-empty-seq", empty_of((2, 0, 6)), x=rand(2, 0, 6))
    s.raises("x-empty-dim", ValueError, "x.shape", x=rand(2, 5, 0))
    s.integer("offset", huge=finite_or_refused)
    s.same("positions-float", clean={"positions": np.arange(5.0) * 0.5}, positions=(np.arange(5) * 0.5).astype(F32))
    s.raises("positions-wrong-length", ValueError, "positions", positions=np.arange(4))
    s.raises("positions-nan", ValueError, "positions", positions=np.array([0, 1, np.nan, 3, 4]))
    s.raises("positions-complex", TypeError, "positions", positions=np.arange(5) + 0j)
    s.raises("positions-and-offset", ValueError, "offset", positions=np.arange(5), offset=1)
    s.base("base")
    s.flag("interleaved")
    for id, v, exc in [("nan", float("nan"), ValueError), ("inf", float("inf"), ValueError),
                       ("str", "1", TypeError), ("complex", 1j, TypeError)]:
        s.raises(f"scale-{id}", exc, "scale", scale=v)
    s.out(x.shape, F32, inputs=["x"])
    return s


def spec_grid(name: str, sizes: List[str]) -> Callable[[], Spec]:
    def build() -> Spec:
        s = Spec(name, **{k: 3 for k in sizes}, dim=5)
        for k in sizes:
            s.size(k, empty=empty_of(tuple(0 if j == k else 3 for j in sizes) + (5,)))
        s.dim("dim", even=False)
        s.base("base")
        s.raises("dtype-int", TypeError, "dtype", dtype=np.int64)
        s.out((3,) * len(sizes) + (5,), F32)
        return s
    return build


def spec_concat_positional() -> Spec:
    x, pe = rand(2, 4, 3), rand(4, 2)
    s = Spec("concat_positional", x=x, pe=pe)
    s.floats("x")
    s.floats("pe")
    s.raises("pe-seq-mismatch", ValueError, "seq", pe=rand(5, 2))
    s.raises("pe-not-broadcastable", ValueError, "pe", pe=rand(3, 4, 2))
    s.raises("x-1d", ValueError, "x", x=rand(3))
    s.check("x-empty", empty_of((0, 4, 5)), x=rand(0, 4, 3))
    s.out((2, 4, 5), F32, inputs=[])
    buf = np.zeros((2, 4, 5), F32)
    s.raises("out-overlaps-x", ValueError, "out", x=buf[:, :, 1:4], out=buf)
    return s


def spec_sinusoidal_frequencies() -> Spec:
    s = Spec("sinusoidal_frequencies", dim=8)
    s.dim("dim", huge=False)
    s.raises("dim-huge", SIZE_ERRORS, "", dim=2**62)
    s.base("base")
    s.raises("freq_rule-unknown", ValueError, "freq_rule", freq_rule="t5")
    return s


SPECS: Dict[str, Callable[[], Spec]] = {
    "sinusoidal": spec_sinusoidal,
    "add_sinusoidal": spec_add_sinusoidal,
    "sinusoidal_2d": spec_grid("sinusoidal_2d", ["height", "width"]),
    "sinusoidal_3d": spec_grid("sinusoidal_3d", ["depth", "height", "width"]),
    "concat_positional": spec_concat_positional,
    "sinusoidal_frequencies": spec_sinusoidal_frequencies,
}
