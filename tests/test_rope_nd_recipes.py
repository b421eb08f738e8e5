"""Multi-axis rotary recipes (docs/rotary_nd.md) against the models' own code.

Part 1: :func:`posenc.rope_grid_coords` against closed forms and the coordinates the models build
(Transformers' ``get_vision_position_ids`` for the Qwen2-VL family, diffusers' FLUX image ids, timm's
grids for EVA-02 and DINOv3).

Part 2: each recipe of docs/rotary_nd.md (FLUX, Qwen2-VL's vision tower, Pixtral, DINOv3, EVA-02,
RoPE-Mixed) rotates q/k exactly as the model does, on several grid sizes; and where the peers compute
their angles in float32, posenc (float64 angles) is checked against an exact evaluation while the peer's
own error is measured.

Peers are optional (``helpers.optional``): torch, transformers, diffusers, timm. timm's top-level import
needs torchvision; when that is missing, its ``timm.layers.pos_embed_sincos`` module is loaded on its own.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types
from typing import Any, Optional

import numpy as np
import pytest

import posenc
from helpers import optional

torch = optional("torch")
transformers = optional("transformers")
vision_utils = optional("transformers.vision_utils")
flux_pipeline = optional("diffusers.pipelines.flux.pipeline_flux")


def _timm_sincos() -> Optional[Any]:
    """timm's ``layers.pos_embed_sincos`` (RotaryEmbeddingCat/Mixed/DinoV3), without timm's torchvision import."""
    module = optional("timm.layers.pos_embed_sincos") if "timm" in sys.modules else None
    if module is not None:
        return module
    try:
        return importlib.import_module("timm.layers.pos_embed_sincos")
    except ImportError:
        pass
    spec = importlib.util.find_spec("timm") if torch is not None else None
    if spec is None or spec.origin is None:
        if os.environ.get("POSENC_REQUIRE_PEERS") == "1":
            raise ImportError("timm is required (POSENC_REQUIRE_PEERS=1)")
        return None
    root = os.path.dirname(spec.origin)
    saved = {k: v for k, v in sys.modules.items() if k == "timm" or k.startswith("timm.")}
    for name in [k for k in sys.modules if k == "timm" or k.startswith("timm.")]:
        del sys.modules[name]
    try:  # namespace stand-ins for the two packages, so their __init__ (and torchvision) never runs
        for name, path in [("timm", root), ("timm.layers", os.path.join(root, "layers"))]:
            stub = types.ModuleType(name)
            stub.__path__ = [path]
            sys.modules[name] = stub
        return importlib.import_module("timm.layers.pos_embed_sincos")
    finally:  # leave sys.modules as it was: the module keeps what it imported
        for name in [k for k in sys.modules if k == "timm" or k.startswith("timm.")]:
            del sys.modules[name]
        sys.modules.update(saved)


timm_sincos = _timm_sincos()

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")
needs_timm = pytest.mark.skipif(timm_sincos is None, reason="needs timm (and torch)")
needs_transformers = pytest.mark.skipif(transformers is None or torch is None or vision_utils is None,
                                        reason="needs transformers 5 and torch")
needs_diffusers = pytest.mark.skipif(flux_pipeline is None or torch is None, reason="needs diffusers and torch")


# ====================================================================== part 1: the coordinates

GRIDS_2D = [(1, 1), (2, 3), (4, 4), (6, 10), (14, 8), (32, 32)]


def row_major(shape):
    """The closed form: token n = Σ i_a·Π_{b>a} s_b holds index (i_0, ..., i_{A-1})."""
    n = int(np.prod(shape))
    out = np.zeros((n, len(shape)), np.int64)
    for token in range(n):
        rest = token
        for a in range(len(shape) - 1, -1, -1):
            out[token, a] = rest % shape[a]
            rest //= shape[a]
    return out


@pytest.mark.parametrize("shape", [(5,), (2, 3), (3, 1, 4), (2, 2, 3, 2)])
def test_row_major_closed_form(shape):
    got = posenc.rope_grid_coords(shape)
    assert got.dtype == np.int64 and got.shape == (int(np.prod(shape)), len(shape))
    np.testing.assert_array_equal(got, row_major(shape))


@pytest.mark.parametrize("shape,m", [((4, 4), 2), ((6, 4), 2), ((3, 6, 9), 3), ((2, 4, 6), 2), ((4, 4), 1), ((4, 8), 4)])
def test_spatial_merge_closed_form(shape, m):
    """Block order: token n is (leading, block row, block column, row in block, column in block), row-major."""
    got = posenc.rope_grid_coords(shape, spatial_merge=m)
    *lead, h, w = shape
    expected = []
    for lead_index in row_major(tuple(lead) if lead else (1,)):
        for bi in range(h // m):
            for bj in range(w // m):
                for i in range(m):
                    for j in range(m):
                        expected.append(list(lead_index[: len(lead)]) + [bi * m + i, bj * m + j])
    np.testing.assert_array_equal(got, np.array(expected, np.int64))
    # the same set of coordinates as row-major order, each once
    assert sorted(map(tuple, got.tolist())) == sorted(map(tuple, row_major(shape).tolist()))


def test_offsets_and_float_maps():
    np.testing.assert_array_equal(posenc.rope_grid_coords((1, 2, 2), offset=(1, 0, 0)),
                                  [[1, 0, 0], [1, 0, 1], [1, 1, 0], [1, 1, 1]])
    got = posenc.rope_grid_coords((2, 3), offset=0.25)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, row_major((2, 3)) + 0.25)
    got = posenc.rope_grid_coords((3, 5), ref_shape=(6, 2))
    np.testing.assert_allclose(got, row_major((3, 5)) * [2.0, 0.4], rtol=2**-52)
    for how, d in [("separate", (3, 5)), ("min", (3, 3)), ("max", (5, 5))]:
        got = posenc.rope_grid_coords((3, 5), normalize=how, offset=(0, 0.5))
        np.testing.assert_allclose(got, 2 * (row_major((3, 5)) + [0.5, 1.0]) / np.array(d) - 1, rtol=0, atol=2**-52)


def test_empty_grids():
    assert posenc.rope_grid_coords((0, 4)).shape == (0, 2)
    assert posenc.rope_grid_coords((3, 0, 2), spatial_merge=2).shape == (0, 3)
    assert posenc.rope_grid_coords((0, 2), normalize="min").shape == (0, 2)
    assert posenc.rope_grid_coords(0).shape == (0, 1)


def test_same_on_both_backends():
    """No kernel: the function is shared, as posenc.reference exposes it."""
    assert posenc.reference.rope_grid_coords is posenc.rope_grid_coords


@needs_transformers
@pytest.mark.parametrize("thw", [[(1, 4, 4)], [(1, 6, 10), (2, 4, 8)], [(3, 14, 8)], [(1, 2, 2), (1, 32, 46)]])
@pytest.mark.parametrize("merge", [1, 2])
def test_qwen2vl_vision_position_ids(thw, merge):
    """Transformers' get_vision_position_ids (Qwen2-VL/2.5-VL/3-VL vision towers; with include_temporal, MiniMax)."""
    grid = torch.tensor(thw)
    want = vision_utils.get_vision_position_ids(grid, merge).numpy()
    got = np.concatenate([posenc.rope_grid_coords(g, spatial_merge=merge)[:, 1:] for g in thw])
    np.testing.assert_array_equal(got, want)
    want3 = vision_utils.get_vision_position_ids(grid, merge, include_temporal=True).numpy()
    got3 = np.concatenate([posenc.rope_grid_coords(g, spatial_merge=merge) for g in thw])
    np.testing.assert_array_equal(got3, want3)


@needs_diffusers
@pytest.mark.parametrize("hw", [(1, 1), (2, 3), (32, 32), (48, 64)])
def test_flux_image_ids(hw):
    """diffusers' FluxPipeline._prepare_latent_image_ids: (0, row, column), float."""
    want = flux_pipeline.FluxPipeline._prepare_latent_image_ids(1, *hw, "cpu", torch.float64).numpy()
    np.testing.assert_array_equal(posenc.rope_grid_coords((1, *hw)), want)


@needs_timm
@pytest.mark.parametrize("shape", [(4, 4), (7, 5), (14, 14), (37, 23)])
def test_timm_grids(shape):
    """timm's float32 grids: the float64 coordinates rounded to float32 are timm's, within one float32 rounding
    of the coordinate (timm rounds (i + 0.5) / d and then 2x - 1, each in float32)."""
    build = timm_sincos._build_grid
    for how in ("separate", "min", "max"):
        want = build(list(shape), grid_type="centered", normalize_coords=how).reshape(-1, 2).numpy()
        got = posenc.rope_grid_coords(shape, normalize=how)
        assert np.abs(got - want).max() <= 2 * 2**-24, how  # two float32 roundings of values in [0, 2]
        np.testing.assert_array_equal(timm_sincos.make_coords_dinov3(*shape, normalize_coords=how).numpy(), want)
    want = build(list(shape), grid_type="index", ref_feat_shape=[16, 16]).reshape(-1, 2).numpy()
    got = posenc.rope_grid_coords(shape, ref_shape=(16, 16))
    np.testing.assert_allclose(got, want, rtol=2 * 2**-24, atol=0)
    want = build(list(shape), grid_type="index", grid_offset=0.5).reshape(-1, 2).numpy()
    np.testing.assert_array_equal(posenc.rope_grid_coords(shape, offset=0.5), want)
