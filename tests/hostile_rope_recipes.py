"""Hostile-input specs of the multi-axis rotary recipes' helpers (run by tests/test_arguments.py)."""

from __future__ import annotations

from typing import Any, Callable, Dict

import numpy as np

from hostile import SIZE_ERRORS, Check, Spec, empty_of


def _int_coords(shape: Any) -> Callable[[Any], None]:
    def check(result: Any) -> None:
        result = np.asarray(result)
        assert result.dtype == np.int64 and result.shape == shape, (result.dtype, result.shape)
    return check


def _finite(result: Any) -> None:
    assert np.isfinite(np.asarray(result)).all(), "non-finite coordinates"


def _inside_unit(result: Any) -> None:
    result = np.asarray(result)
    assert result.dtype == np.float64 and (np.abs(result) < 1).all(), "centred coordinates outside (-1, 1)"


def spec_rope_grid_coords() -> Spec:
    s = Spec("rope_grid_coords", shape=(4, 6), spatial_merge=2)
    # shape: an int or a sequence of ints >= 0
    for id, v, exc in [("negative", (-1, 4), ValueError), ("float", (4.0, 6), TypeError), ("float-scalar", 4.0, TypeError),
                       ("bool", (True, 6), TypeError), ("str", "46", TypeError), ("none", None, TypeError),
                       ("empty", (), ValueError), ("2d-array", np.ones((2, 2), np.int64), ValueError),
                       ("complex", (4 + 0j, 6), TypeError), ("nested", ((4,), 6), TypeError)]:
        s.raises(f"shape-{id}", exc, "shape", shape=v)
    for h in (2**40, 2**62, 2**64 + 2):
        s.raises(f"shape-huge-{h.bit_length() - 1}", SIZE_ERRORS, "", shape=(4, h), spatial_merge=1)
    s.raises("shape-huge-product", SIZE_ERRORS, "", shape=(2**31, 2**31, 4), spatial_merge=1)
    s.same("shape-list", clean={"shape": (4, 6)}, shape=[4, 6])
    s.same("shape-numpy", clean={"shape": (4, 6)}, shape=np.array([4, 6], np.int32))
    s.same("shape-0d-array", clean={"shape": 6, "spatial_merge": 1}, shape=np.array(6), spatial_merge=1)
    s.same("shape-numpy-ints", clean={"shape": (4, 6)}, shape=(np.int64(4), np.uint8(6)))
    s.check("shape-int", _int_coords((5, 1)), shape=5, spatial_merge=1)
    s.check("shape-zero", empty_of((0, 2)), shape=(0, 6))
    s.check("shape-4-axes", _int_coords((24, 4)), shape=(1, 1, 4, 6))
    # spatial_merge: an int >= 1 dividing the last two sides
    for id, v, exc in [("zero", 0, ValueError), ("negative", -2, ValueError), ("float", 2.0, TypeError),
                       ("bool", True, TypeError), ("none", None, TypeError), ("str", "2", TypeError),
                       ("not-dividing", 4, ValueError), ("huge", 2**64, ValueError)]:
        s.raises(f"spatial_merge-{id}", exc, "spatial_merge", spatial_merge=v)
    s.raises("spatial_merge-not-dividing-rows", ValueError, "spatial_merge", shape=(3, 6))
    s.raises("spatial_merge-not-dividing-video-rows", ValueError, "spatial_merge", shape=(2, 5, 4))
    s.raises("spatial_merge-one-axis", ValueError, "spatial_merge", shape=6)
    s.same("spatial_merge-numpy", clean={"spatial_merge": 2}, spatial_merge=np.int16(2))
    # offset: a number or one per axis
    for id, v, exc in [("nan", float("nan"), ValueError), ("inf", float("inf"), ValueError),
                       ("nan-per-axis", (0, float("nan")), ValueError), ("wrong-length", (1, 2, 3), ValueError),
                       ("str", "1", TypeError), ("bool", True, TypeError), ("none", None, TypeError),
                       ("complex", 1j, TypeError), ("2d-array", np.zeros((2, 1)), ValueError),
                       ("huge", 2**63, ValueError), ("past-exact", (2**53, 0), ValueError)]:
        s.raises(f"offset-{id}", exc, "offset", offset=v)
    s.same("offset-numpy-int", clean={"offset": (3, 3)}, offset=np.int32(3))
    s.same("offset-0d-array", clean={"offset": 0.5}, offset=np.array(0.5))
    s.same("offset-list", clean={"offset": (1, 2)}, offset=[1, 2])
    s.same("offset-array", clean={"offset": (1.5, 2.0)}, offset=np.array([1.5, 2.0]))
    s.check("offset-large-float", _finite, offset=1e300)
    # ref_shape: one positive number per axis
    for id, v, exc in [("zero", (0, 16), ValueError), ("negative", (16, -1), ValueError), ("nan", (float("nan"), 16), ValueError),
                       ("inf", (16, float("inf")), ValueError), ("wrong-length", (16,), ValueError),
                       ("str", ("16", 16), TypeError), ("bool", (True, 16), TypeError)]:
        s.raises(f"ref_shape-{id}", exc, "ref_shape", ref_shape=v)
    s.same("ref_shape-int-scalar", clean={"ref_shape": (8.0, 8.0)}, ref_shape=8)
    s.same("ref_shape-numpy", clean={"ref_shape": (8, 12)}, ref_shape=np.array([8, 12]))
    s.raises("ref_shape-with-normalize", ValueError, "ref_shape", ref_shape=(8, 8), normalize="max")
    # normalize: one of the names
    for id, v in [("unknown", "centered"), ("upper", "MAX"), ("bool", True), ("int", 1)]:
        s.raises(f"normalize-{id}", ValueError, "normalize", normalize=v)
    s.add("normalize-range", Check(_inside_unit), normalize="separate")
    return s


SPECS: Dict[str, Callable[[], Spec]] = {
    "rope_grid_coords": spec_rope_grid_coords,
}
