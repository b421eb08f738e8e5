"""Hostile-input specs of the vision family (run by tests/test_arguments.py)."""

from __future__ import annotations

from typing import Any, Callable, Dict

import numpy as np

from helpers import rand
from hostile import SIZE_ERRORS, Spec, empty_of

F32 = np.float32


def axes_dims_cases(s: Spec) -> None:
    """``axes_dims`` (baseline (4, 6)): a non-empty sequence of even feature counts (sinusoidal_nd, rope_axial_freqs)."""
    for id, v, exc in [("empty", (), ValueError), ("odd", (4, 5), ValueError), ("zero", (4, 0), ValueError),
                       ("negative", (-2, 4), ValueError), ("float", (4.0, 6), TypeError), ("int", 4, TypeError),
                       ("str", "46", TypeError), ("none", None, TypeError), ("bool", (True, 4), TypeError)]:
        s.raises(f"axes_dims-{id}", exc, "axes_dims", axes_dims=v)
    for h in (2**62, 2**64 + 2):
        s.raises(f"axes_dims-huge-{h.bit_length() - 1}", SIZE_ERRORS, "", axes_dims=(4, h))
    s.same("axes_dims-numpy", clean={"axes_dims": (4, 6)}, axes_dims=np.array([4, 6]))
    s.same("axes_dims-list", clean={"axes_dims": (4, 6)}, axes_dims=[4, 6])


def spec_sinusoidal_nd() -> Spec:
    coords = np.array([[0, 1], [3, 2], [7, 5], [2, 2]])
    s = Spec("sinusoidal_nd", coords=coords, axes_dims=(4, 6), dtype=F32)
    s.positions("coords", any_length=True)
    s.raises("coords-scalar", ValueError, "coords", coords=np.int64(3))
    s.raises("coords-too-many-axes", ValueError, "coords", coords=np.zeros((4, 3), np.int64))
    s.raises("coords-1d-wrong-axes", ValueError, "coords", coords=np.arange(3))
    s.check("coords-empty", empty_of((0, 10)), coords=np.zeros((0, 2), np.int64))
    s.check("coords-3d", empty_of((2, 2, 10)), coords=coords.reshape(2, 2, 2))
    s.check("coords-1d", empty_of((10,)), coords=np.array([3, 4]))
    axes_dims_cases(s)
    s.base("base")
    s.flag("interleaved")
    s.raises("dtype-int", TypeError, "dtype", dtype=np.int32)
    s.raises("dtype-garbage", TypeError, "dtype", dtype="float33")
    s.out((4, 10), F32)
    return s


def spec_sincos_2d() -> Spec:
    s = Spec("sincos_2d", embed_dim=16, grid_size=(3, 4))
    s.dim("embed_dim", even=True)
    s.raises("embed_dim-not-multiple-of-4", ValueError, "embed_dim", embed_dim=10)
    s.size("grid_size", minimum=1, baseline=3)
    s.raises("grid_size-zero-pair", ValueError, "grid_size", grid_size=(0, 4))
    s.raises("grid_size-triple", ValueError, "grid_size", grid_size=(3, 4, 5))
    s.raises("grid_size-float-pair", TypeError, "grid_size", grid_size=(3.0, 4))
    s.raises("grid_size-huge-pair", SIZE_ERRORS, "", grid_size=(2**40, 2**40))
    s.same("grid_size-list", clean={"grid_size": (3, 4)}, grid_size=[3, 4])
    s.same("grid_size-numpy-pair", clean={"grid_size": (3, 4)}, grid_size=(np.int32(3), np.int64(4)))
    s.size("extra_tokens", empty=None, baseline=0)
    for arg in ("interpolation_scale", "base_size"):
        for id, v, exc in [("zero", 0.0, ValueError), ("negative", -1.0, ValueError), ("nan", float("nan"), ValueError),
                           ("inf", float("inf"), ValueError), ("str", "1", TypeError), ("bool", True, TypeError),
                           ("complex", 1j, TypeError)]:
            s.raises(f"{arg}-{id}", exc, arg, **{arg: v})
    s.same("base_size-int", clean={"base_size": 16.0}, base_size=16)
    s.raises("dtype-int", TypeError, "dtype", dtype=np.int32)
    s.out((12, 16), F32)
    return s


def _window_roles(s: Spec, arg: str = "window", minimum: int = 1) -> None:
    """A window (square in the baseline): an int or a pair, each side >= minimum."""
    s.size(arg, minimum=minimum, huge=False)
    s.raises(f"{arg}-zero-pair", ValueError, arg, **{arg: (minimum - 1, 3)})
    s.raises(f"{arg}-triple", ValueError, arg, **{arg: (2, 3, 4)})
    s.raises(f"{arg}-float-pair", TypeError, arg, **{arg: (2.0, 3)})
    s.raises(f"{arg}-huge", SIZE_ERRORS, "", **{arg: 2**40})
    s.raises(f"{arg}-huge-pair", SIZE_ERRORS, "", **{arg: (2**40, 2**40)})
    good = s.baseline[arg]
    s.same(f"{arg}-pair", clean={arg: good}, **{arg: (good, good)})
    s.same(f"{arg}-list", clean={arg: good}, **{arg: [good, np.int32(good)]})


def spec_swin_relative_position_index() -> Spec:
    s = Spec("swin_relative_position_index", window=3)
    _window_roles(s)
    s.check("window-one", empty_of((1, 1)), window=1)
    s.check("window-non-square", empty_of((6, 6)), window=(2, 3))
    return s


def spec_swinv2_coords_table() -> Spec:
    s = Spec("swinv2_coords_table", window=3, dtype=F32)
    _window_roles(s, minimum=2)
    s.raises("window-one", ValueError, "window", window=(1, 4))
    s.check("window-one-with-pretrained", empty_of((1, 7, 2)), window=(1, 4), pretrained_window=(8, 8))
    s.raises("pretrained_window-one", ValueError, "pretrained_window", pretrained_window=(1, 8))
    s.raises("pretrained_window-float", TypeError, "pretrained_window", pretrained_window=8.0)
    s.raises("pretrained_window-triple", ValueError, "pretrained_window", pretrained_window=(8, 8, 8))
    s.same("pretrained_window-int", clean={"pretrained_window": (8, 8)}, pretrained_window=8)
    s.raises("dtype-int", TypeError, "dtype", dtype=np.int32)
    s.raises("dtype-garbage", TypeError, "dtype", dtype="float33")
    return s


TABLE = rand(9, 3)  # window 2: (2·2 − 1)² offsets, 3 heads


def spec_swin_bias() -> Spec:
    s = Spec("swin_bias", table=TABLE, window=2)
    s.floats("table")
    s.raises("table-wrong-rows", ValueError, "table", table=rand(8, 3))
    s.raises("table-1d", ValueError, "table", table=rand(9))
    s.raises("table-3d", ValueError, "table", table=rand(9, 3, 1))
    s.check("table-no-heads", empty_of((0, 4, 4)), table=rand(9, 0))
    _window_roles(s)
    s.raises("window-mismatch", ValueError, "table", window=(2, 3))
    s.out((3, 4, 4), F32, inputs=["table"])
    return s


def spec_add_swin_bias() -> Spec:
    scores = rand(2, 3, 4, 4)
    s = Spec("add_swin_bias", scores=scores, table=TABLE, window=2)
    s.floats("scores")
    s.raises("scores-2d", ValueError, "scores", scores=rand(4, 4))
    s.raises("scores-wrong-n", ValueError, "scores", scores=rand(2, 3, 4, 5))
    s.raises("scores-wrong-heads", ValueError, "scores", scores=rand(2, 4, 4, 4))
    s.check("scores-empty-batch", empty_of((0, 3, 4, 4)), scores=rand(0, 3, 4, 4))
    s.check("scores-one-window", empty_of((3, 4, 4)), scores=rand(3, 4, 4))
    s.raises("table-wrong-rows", ValueError, "table", table=rand(8, 3))
    s.raises("table-1d", ValueError, "table", table=rand(9))
    s.raises("table-int", TypeError, "table", table=np.ones((9, 3), np.int64))
    s.same("table-float64", clean={"table": TABLE.astype(np.float32)}, table=TABLE.astype(np.float64))
    _window_roles(s)
    s.raises("window-mismatch", ValueError, "table", window=(2, 3))
    s.out(scores.shape, F32, inputs=["scores"])
    buf = np.zeros(scores.size, F32)
    s.raises("out-overlaps-table", ValueError, "out", table=buf[:27].reshape(9, 3),
             out=buf.reshape(scores.shape))
    return s


def _all_valid_of(shape: tuple, feats: int) -> Callable[[Any], None]:
    def check(result: Any) -> None:
        import posenc

        expected = posenc.reference.detr_sine(np.ones(shape, bool), num_pos_feats=feats)
        np.testing.assert_array_equal(np.asarray(result), expected)
    return check


def spec_detr_sine() -> Spec:
    valid = np.ones((2, 3, 4), bool)
    valid[0, 2:, :] = False
    valid[1, :, 3:] = False
    s = Spec("detr_sine", valid=valid, num_pos_feats=4)
    s.raises("valid-2d", ValueError, "valid", valid=valid[0])
    s.raises("valid-4d", ValueError, "valid", valid=valid[None])
    s.raises("valid-float", TypeError, "valid", valid=valid.astype(np.float32))
    s.raises("valid-complex", TypeError, "valid", valid=valid.astype(np.complex64))
    s.raises("valid-str", TypeError, "valid", valid=valid.astype(str))
    s.raises("valid-object", TypeError, "valid", valid=valid.astype(object))
    s.raises("valid-two", ValueError, "valid", valid=valid.astype(np.int64) * 2)
    s.raises("valid-negative", ValueError, "valid", valid=-valid.astype(np.int64))
    s.raises("valid-ragged", (TypeError, ValueError), "valid", valid=[[[1, 0]], [[1]]])
    for id, make in [("int64", lambda v: v.astype(np.int64)), ("uint8", lambda v: v.astype(np.uint8)),
                     ("list", lambda v: v.tolist()), ("negative-strides", lambda v: np.flip(np.flip(v).copy())),
                     ("stepped", lambda v: np.repeat(np.repeat(v, 2, 1), 2, 2)[:, ::2, ::2]),
                     ("byteswapped", lambda v: v.astype(">i8" if np.little_endian else "<i8")),
                     ("fortran", np.asfortranarray)]:
        s.same(f"valid-{id}", clean={"valid": valid}, valid=make(valid))
    s.check("valid-empty", empty_of((0, 3, 4, 8)), valid=np.ones((0, 3, 4), bool))
    s.check("valid-no-width", empty_of((2, 3, 0, 8)), valid=np.ones((2, 3, 0), bool))
    s.check("valid-none-shape", _all_valid_of((2, 3, 4), 4), valid=None, shape=(2, 3, 4))
    s.raises("valid-none-no-shape", ValueError, "shape", valid=None)
    s.raises("shape-with-valid", ValueError, "shape", shape=(2, 3, 4))
    s.raises("shape-2d", ValueError, "shape", valid=None, shape=(3, 4))
    s.raises("shape-negative", ValueError, "shape", valid=None, shape=(2, -3, 4))
    s.raises("shape-float", TypeError, "shape", valid=None, shape=(2, 3.0, 4))
    s.raises("shape-huge", SIZE_ERRORS, "", valid=None, shape=(2**40, 2**40, 4))
    s.dim("num_pos_feats")
    for id, v, exc in [("zero", 0, ValueError), ("negative", -1.0, ValueError), ("nan", float("nan"), ValueError),
                       ("inf", float("inf"), ValueError), ("str", "10000", TypeError), ("bool", True, TypeError)]:
        s.raises(f"temperature-{id}", exc, "temperature", temperature=v)
    s.same("temperature-float", clean={"temperature": 100}, temperature=100.0)
    s.flag("normalize")
    s.raises("scale-without-normalize", ValueError, "scale", scale=1.0)
    for id, v, exc in [("nan", float("nan"), ValueError), ("inf", float("inf"), ValueError), ("str", "1", TypeError),
                       ("bool", True, TypeError)]:
        s.raises(f"scale-{id}", exc, "scale", normalize=True, scale=v)
    s.raises("dtype-int", TypeError, "dtype", dtype=np.int32)
    s.out((2, 3, 4, 8), F32)
    return s


SPECS: Dict[str, Callable[[], Spec]] = {
    "sinusoidal_nd": spec_sinusoidal_nd,
    "sincos_2d": spec_sincos_2d,
    "swin_relative_position_index": spec_swin_relative_position_index,
    "swinv2_coords_table": spec_swinv2_coords_table,
    "swin_bias": spec_swin_bias,
    "add_swin_bias": spec_add_swin_bias,
    "detr_sine": spec_detr_sine,
}
