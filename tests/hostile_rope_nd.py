"""Hostile-input specs of the multi-axis rotary family (run by tests/test_arguments.py).

Every refused call of apply_rope_nd is made a second time in place (``-in-place`` rows, ``out=x``): a
refused call must leave x untouched.
"""

from __future__ import annotations

from typing import Callable, Dict

import numpy as np

from helpers import rand
from hostile import Spec, byteswapped, empty_of, misaligned, negative_strides, stepped
from hostile_rope import in_place_variants
from hostile_vision import axes_dims_cases

F32 = np.float32
VE, TE = ValueError, TypeError

COORDS = np.array([[0, 1], [3, 2], [7, 5], [2, 2]])  # [seq, axes]: 4 tokens, 2 axes
FREQS = np.array([[1.0, 0.1, 0.0], [0.0, 0.0, 0.5]])  # [axes, pairs]: 3 pairs


def _freqs_cases(s: Spec, heads: int) -> None:
    """``freqs``: [axes, pairs] or [heads, axes, pairs], real and finite."""
    for id, v in [("nan", np.nan), ("inf", np.inf), ("minus-inf", -np.inf)]:
        f = FREQS.copy()
        f[1, 2] = v
        s.raises(f"freqs-{id}", VE, "freqs", freqs=f)
    for id, v in [("complex", FREQS + 0j), ("bool", FREQS > 0), ("str", FREQS.astype(str)),
                  ("object", FREQS.astype(object))]:
        s.raises(f"freqs-{id}", TE, "freqs", freqs=v)
    s.raises("freqs-1d", VE, "freqs", freqs=FREQS[0])
    s.raises("freqs-4d", VE, "freqs", freqs=FREQS[None, None])
    s.raises("freqs-scalar", VE, "freqs", freqs=1.0)
    s.raises("freqs-no-pairs", VE, "freqs", freqs=np.zeros((2, 0)))
    s.raises("freqs-no-axes", VE, "freqs", freqs=np.zeros((0, 3)))
    s.raises("freqs-three-axes", VE, "coords", freqs=np.ones((3, 3)))  # coords has 2 columns
    s.raises("freqs-one-axis", VE, "coords", freqs=np.ones((1, 3)))
    s.same("freqs-float32", clean={"freqs": FREQS.astype(F32).astype(np.float64)}, freqs=FREQS.astype(F32))
    s.same("freqs-int", clean={"freqs": np.array([[1.0, 2.0, 0.0], [0.0, 0.0, 3.0]])},
           freqs=np.array([[1, 2, 0], [0, 0, 3]]))
    s.same("freqs-list", clean={"freqs": FREQS}, freqs=FREQS.tolist())
    for id, make in [("byteswapped", byteswapped), ("misaligned", misaligned), ("negative-strides", negative_strides),
                     ("stepped", stepped), ("fortran", np.asfortranarray)]:
        s.same(f"freqs-{id}", clean={"freqs": FREQS.copy()}, freqs=make(FREQS))
    s.same("freqs-per-head", freqs=np.stack([FREQS * (h + 1) for h in range(heads)]))
    s.raises("overflow", VE, "coords", freqs=np.full((2, 3), 1e300), coords=COORDS * 1e10)


def spec_apply_rope_nd() -> Spec:
    x = rand(2, 4, 3, 8)  # [batch, seq, heads, head_dim]: 3 pairs rotate, 2 features pass through
    s = Spec("apply_rope_nd", x=x, coords=COORDS, freqs=FREQS)
    s.floats("x")
    s.raises("x-2d", VE, "x", x=rand(4, 8))
    s.raises("x-1d-seq_axis-minus-2", VE, "x", x=rand(8), seq_axis=-2)
    s.raises("x-head_dim-too-small", VE, "head_dim", x=rand(2, 4, 3, 5))
    s.raises("x-seq-mismatch", VE, "coords", x=rand(2, 5, 3, 8))
    s.check("x-empty-batch", empty_of((0, 4, 3, 8)), x=rand(0, 4, 3, 8))
    s.check("x-empty-seq", empty_of((2, 0, 3, 8)), x=rand(2, 0, 3, 8), coords=np.zeros((0, 2)))
    s.check("x-empty-heads", empty_of((2, 4, 0, 8)), x=rand(2, 4, 0, 8))
    s.same("x-odd-head_dim", x=rand(2, 4, 3, 7))
    s.same("seq_axis-minus-2", seq_axis=-2, x=rand(2, 3, 4, 8))
    s.same("seq_axis-minus-2-no-heads", seq_axis=-2, x=rand(2, 4, 8))
    s.same("x-3d", x=rand(4, 3, 8))
    s.positions("coords", any_length=False)
    s.raises("coords-1d", VE, "coords", coords=np.arange(4))
    s.raises("coords-4d", VE, "coords", coords=COORDS[None, None])
    s.raises("coords-0d", VE, "coords", coords=np.int64(3))
    s.same("coords-per-batch", coords=np.stack([COORDS, COORDS[::-1] * 3]))
    s.same("coords-one-batch", clean={"coords": COORDS}, coords=COORDS[None])
    s.same("coords-fractional", coords=COORDS * 0.37 - 1.5)
    s.raises("coords-batch-mismatch", VE, "coords", coords=np.stack([COORDS] * 3))
    s.raises("coords-batch-without-batch-axis", VE, "coords", x=rand(4, 2, 8), seq_axis=-3,
             coords=np.stack([COORDS] * 4))
    s.raises("coords-batch-on-heads-axis", VE, "coords", x=rand(3, 4, 8), seq_axis=-2,
             coords=np.stack([COORDS] * 3), freqs=np.stack([FREQS] * 3))
    _freqs_cases(s, 3)
    s.raises("freqs-per-head-wrong-heads", VE, "heads", freqs=np.stack([FREQS] * 4))
    s.same("freqs-per-head-seq_axis-minus-2", seq_axis=-2, x=rand(2, 3, 4, 8), freqs=np.stack([FREQS, -FREQS, FREQS]))
    s.raises("freqs-per-head-no-heads-axis", VE, "heads", seq_axis=-2, x=rand(4, 8), freqs=FREQS[None])
    s.same("freqs-per-head-per-batch", freqs=np.stack([FREQS, -FREQS, 2 * FREQS]),
           coords=np.stack([COORDS, COORDS + 0.5]))
    s.flag("interleaved")
    s.flag("inverse")
    for id, v in [("minus-1", -1), ("zero", 0), ("one", 1), ("minus-4", -4), ("float", -3.0), ("bool", True)]:
        s.raises(f"seq_axis-{id}", VE, "seq_axis", seq_axis=v)
    s.same("seq_axis-numpy-int", clean={"seq_axis": -3}, seq_axis=np.int64(-3))
    s.out(x.shape, F32, inputs=["x"])
    buf = np.zeros(24)  # an out overlapping coords (float64): refused, not read after being written
    s.raises("out-overlaps-coords", VE, "coords", x=rand(1, 4, 3, 2, dtype=np.float64), freqs=FREQS[:, :1],
             coords=buf[:8].reshape(4, 2), out=buf.reshape(1, 4, 3, 2))
    in_place_variants(s, {"x": "out"})
    return s


def spec_rope_nd_cos_sin() -> Spec:
    s = Spec("rope_nd_cos_sin", coords=COORDS, freqs=FREQS)
    s.positions("coords", any_length=True)
    s.raises("coords-1d", VE, "coords", coords=np.arange(4))
    s.raises("coords-0d", VE, "coords", coords=np.int64(3))
    s.same("coords-batch", coords=np.stack([COORDS, COORDS * 2]))
    s.check("coords-empty", empty_of((0, 3)), coords=np.zeros((0, 2)))
    s.check("coords-4d", empty_of((1, 2, 4, 3)), coords=np.stack([COORDS, COORDS])[None])
    s.check("per-head-shape", empty_of((2, 5, 4, 3)), coords=np.stack([COORDS, COORDS]),
            freqs=np.stack([FREQS] * 5))
    _freqs_cases(s, 2)
    s.raises("dtype-int", TE, "dtype", dtype=np.int16)
    s.raises("dtype-garbage", TE, "dtype", dtype="float33")
    s.same("dtype-float16", dtype=np.float16)
    return s


def spec_rope_axial_freqs() -> Spec:
    s = Spec("rope_axial_freqs", axes_dims=(4, 6))
    axes_dims_cases(s)
    s.base("base")
    return s


SPECS: Dict[str, Callable[[], Spec]] = {
    "apply_rope_nd": spec_apply_rope_nd,
    "rope_nd_cos_sin": spec_rope_nd_cos_sin,
    "rope_axial_freqs": spec_rope_axial_freqs,
}
