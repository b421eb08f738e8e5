"""Multi-axis rotary recipes (docs/rotary_nd.md) against the models' own code.

Part 1: :func:`posenc.rope_grid_coords` against closed forms and the coordinates the models build
(Transformers' ``get_vision_position_ids`` for the Qwen2-VL family, diffusers' FLUX image ids, timm's
grids for EVA-02 and DINOv3).

Part 2: each recipe of docs/rotary_nd.md (FLUX, Wan 2.1, HunyuanVideo, Qwen2-VL's vision tower, Pixtral,
DINOv3, EVA-02, RoPE-Mixed) rotates q/k exactly as the model does, on several grid sizes; and where the peers compute
their angles in float32, posenc (float64 angles) is checked against an exact evaluation while the peer's
own error is measured.

Peers are optional (``helpers.Peer``, imported by the tests that use them): torch, transformers, diffusers, timm. timm's top-level import
needs torchvision; when that is missing, its ``timm.layers.pos_embed_sincos`` module is loaded on its own.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types
from typing import Any, Callable, Dict, Optional

import numpy as np
import pytest

import posenc

from helpers import Peer, have_peer, needs
from hostile import SIZE_ERRORS, Check, Spec, empty_of

torch = Peer("torch")
transformers = Peer("transformers")
vision_utils = Peer("transformers.vision_utils")  # transformers 5
flux_pipeline = Peer("diffusers.pipelines.flux.pipeline_flux")


def _timm_sincos() -> Any:
    """timm's ``layers.pos_embed_sincos`` (RotaryEmbeddingCat/Mixed/DinoV3), without timm's torchvision import."""
    try:  # timm and torchvision both installed
        return importlib.import_module("timm.layers.pos_embed_sincos")
    except ImportError:
        pass
    spec = importlib.util.find_spec("timm") if have_peer(torch) else None
    if spec is None or spec.origin is None:
        raise ImportError("timm (and torch) not installed")
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


timm_sincos = Peer("timm.layers.pos_embed_sincos", _timm_sincos)

needs_torch = needs(torch)
needs_timm = needs(torch, timm_sincos)
needs_transformers = needs(torch, transformers, vision_utils)
needs_diffusers = needs(torch, flux_pipeline)


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
    want[..., 0] = 1  # FLUX Kontext's reference image (FluxKontextPipeline.prepare_latents)
    np.testing.assert_array_equal(posenc.rope_grid_coords((1, *hw), offset=(1, 0, 0)), want)


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


# ====================================================================== part 2: the recipes against the models

needs_nd = pytest.mark.skipif(not hasattr(posenc, "apply_rope_nd"), reason="needs apply_rope_nd (branch ropend)")
U32 = 2.0**-24  # the unit roundoff of float32


def _pairs(x, pairs, interleaved):
    """The two halves (u, v) of every rotated pair, as views of the last axis."""
    if interleaved:
        return x[..., 0 : 2 * pairs : 2], x[..., 1 : 2 * pairs : 2]
    return x[..., :pairs], x[..., pairs : 2 * pairs]


def _angles(coords, freqs, seq_axis, absolute=False):
    """θ_j = Σ_a coords[s, a]·freqs[a, j] in float64, shaped to broadcast against x's [..., pairs] halves.

    ``absolute``: Σ_a |coords[s, a]·freqs[a, j]|, the scale of a float32 evaluation's rounding errors."""
    c = np.asarray(coords, np.float64)
    f = np.asarray(freqs, np.float64)
    if absolute:
        c, f = np.abs(c), np.abs(f)
    if f.ndim == 2:
        theta = c @ f  # [seq, pairs]
        return theta[:, None, :] if seq_axis == -3 else theta
    theta = np.einsum("sa,hap->hsp", c, f)  # [heads, seq, pairs]
    return theta.transpose(1, 0, 2) if seq_axis == -3 else theta


def exact_rotation(x, coords, freqs, *, interleaved, seq_axis):
    """The rotation evaluated in float64 from float64 coordinates and frequencies (the exact answer to 2^-50)."""
    pairs = np.shape(freqs)[-1]
    out = np.asarray(x, np.float64).copy()
    theta = _angles(coords, freqs, seq_axis)
    u, v = _pairs(np.asarray(x, np.float64), pairs, interleaved)
    ou, ov = _pairs(out, pairs, interleaved)
    ou[...], ov[...] = u * np.cos(theta) - v * np.sin(theta), v * np.cos(theta) + u * np.sin(theta)
    return out


def pair_errors(got, want, x, coords, freqs, *, interleaved, seq_axis):
    """|got − want| of each rotated feature over the norm r of its pair in x, and the tail's difference."""
    pairs = np.shape(freqs)[-1]
    u, v = _pairs(np.asarray(x, np.float64), pairs, interleaved)
    r = np.hypot(u, v) + 1e-30
    d = np.asarray(got, np.float64) - np.asarray(want, np.float64)
    du, dv = _pairs(d, pairs, interleaved)
    tail = np.delete(d, np.r_[0 : 2 * pairs], axis=-1)
    return np.maximum(np.abs(du), np.abs(dv)) / r, tail


def assert_matches_peer(got, peer, x, coords, freqs, *, interleaved, seq_axis, angle_roundings):
    """posenc against a peer that rounds its angle ``angle_roundings`` times in float32 (0: float64 angles).

    Both rotate in float32 with cos/sin rounded once: each within 3·u·r of the exact rotation (u = 2^-24,
    r the pair's norm; posenc's documented bound, and the peer's by the same count: cos and sin rounded,
    two products and a sum), so 6·u·r apart; a peer angle rounded k times in float32 is off by at most
    k·u·Σ_a|coords_a·freqs_aj| radians, which moves the rotated pair by that much times r.
    """
    rel, tail = pair_errors(got, peer, x, coords, freqs, interleaved=interleaved, seq_axis=seq_axis)
    scale = _angles(coords, freqs, seq_axis, absolute=True)
    bound = 6 * U32 + angle_roundings * U32 * scale
    assert (rel <= bound).all(), f"worst {np.max(rel / bound):.3g} of the bound; max rel error {rel.max():.3g}"
    assert not tail.any(), "features past 2·pairs must pass through unchanged"


def assert_exact(got, x, coords, freqs, *, interleaved, seq_axis):
    """posenc float32 within 3·2^-24 of each pair's norm of the float64 evaluation (issue 13's bound)."""
    want = exact_rotation(x, coords, freqs, interleaved=interleaved, seq_axis=seq_axis)
    rel, tail = pair_errors(got, want, x, coords, freqs, interleaved=interleaved, seq_axis=seq_axis)
    assert rel.max() <= 3 * U32, f"posenc is {rel.max() / U32:.2f}·2^-24 off the exact rotation"
    return rel.max()


def peer_error(peer, x, coords, freqs, *, interleaved, seq_axis):
    """The peer's worst error against the exact rotation, in units of 2^-24 of the pair's norm."""
    want = exact_rotation(x, coords, freqs, interleaved=interleaved, seq_axis=seq_axis)
    rel, _ = pair_errors(peer, want, x, coords, freqs, interleaved=interleaved, seq_axis=seq_axis)
    return rel.max() / U32


def _rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------------- FLUX

def flux_peer(x, ids, theta=10000, axes_dim=(16, 56, 56)):
    """diffusers' FLUX: FluxPosEmbed(theta, axes_dim)(ids), then apply_rotary_emb(use_real=True,
    use_real_unbind_dim=-1) on [batch, seq, heads, head_dim] (sequence_dim=1, as its attention processor)."""
    from diffusers.models.embeddings import apply_rotary_emb
    from diffusers.models.transformers.transformer_flux import FluxPosEmbed

    cos, sin = FluxPosEmbed(theta=theta, axes_dim=list(axes_dim))(torch.from_numpy(np.asarray(ids)))
    out = apply_rotary_emb(torch.from_numpy(x), (cos, sin), use_real=True, use_real_unbind_dim=-1, sequence_dim=1)
    return out.numpy()


def flux_recipe(x, ids, theta=10000.0, axes_dim=(16, 56, 56)):
    freqs = posenc.rope_axial_freqs(axes_dim, base=theta)  # [3, 64]: t, rows, columns
    return posenc.apply_rope_nd(x, ids, freqs, interleaved=True), freqs


def flux_ids(n_text, h, w):
    return np.concatenate([np.zeros((n_text, 3)), posenc.rope_grid_coords((1, h, w))])


@needs_nd
@needs_diffusers
@pytest.mark.parametrize("n_text,h,w", [(0, 1, 1), (3, 2, 5), (16, 8, 8), (7, 32, 24)])
def test_flux(n_text, h, w, isa):
    ids = flux_ids(n_text, h, w)
    x = _rand((2, len(ids), 3, 128), seed=h * w)
    got, freqs = flux_recipe(x.copy(), ids)
    want = flux_peer(x, ids)
    # FLUX's angles are float64 (of float32 ids, exact here), its rotation float32: as close as posenc
    assert_matches_peer(got, want, x, ids, freqs, interleaved=True, seq_axis=-3, angle_roundings=0)
    assert_exact(got, x, ids, freqs, interleaved=True, seq_axis=-3)
    # in place, as a user rotates q and k of the attention processor
    inplace = x.copy()
    assert posenc.apply_rope_nd(inplace, ids, freqs, interleaved=True, out=inplace) is inplace
    np.testing.assert_array_equal(inplace, got)


@needs_nd
@needs_diffusers
def test_flux_float_ids_exactness(isa):
    """Fractional ids (interpolated or shifted grids): FLUX rounds them to float32 (``ids.float()``), posenc
    does not. Against the float64 evaluation posenc stays within 3·2^-24; FLUX's error grows with the id."""
    rng = np.random.default_rng(5)
    ids = np.concatenate([np.zeros((4, 3)), posenc.rope_grid_coords((1, 16, 16), offset=(0.0, 1000.1, 2**20 + 0.3))])
    ids = ids + rng.uniform(0, 1, ids.shape) * [0, 1, 1]
    x = _rand((1, len(ids), 2, 128), seed=1)
    got, freqs = flux_recipe(x.copy(), ids)
    ours = assert_exact(got, x, ids, freqs, interleaved=True, seq_axis=-3)
    theirs = peer_error(flux_peer(x, ids), x, ids, freqs, interleaved=True, seq_axis=-3)
    assert theirs > 1000, theirs  # the ids' float32 rounding (2^-24·2^20 ≈ 0.06 rad on the fastest column pair)
    print(f"FLUX float ids up to 2^20: posenc {ours / U32:.2f}, diffusers {theirs:.3g} (units of 2^-24·|pair|)")


# ---------------------------------------------------------------------- video: Wan 2.1, HunyuanVideo

def _wan_apply(hidden_states, freqs_cos, freqs_sin):
    """diffusers' WanAttnProcessor's nested ``apply_rotary_emb`` (transformer_wan.py), verbatim: it is a
    closure inside the processor's __call__, not importable."""
    x1, x2 = hidden_states.unflatten(-1, (-1, 2)).unbind(-1)
    cos = freqs_cos[..., 0::2]
    sin = freqs_sin[..., 1::2]
    out = torch.empty_like(hidden_states)
    out[..., 0::2] = x1 * cos - x2 * sin
    out[..., 1::2] = x1 * sin + x2 * cos
    return out.type_as(hidden_states)


@needs_nd
@needs_diffusers
@pytest.mark.parametrize("fhw", [(1, 2, 2), (3, 4, 6), (5, 8, 8), (21, 6, 10)])
def test_wan(fhw, isa):
    """Wan 2.1: WanRotaryPosEmbed(head_dim 128, patch (1, 2, 2)) splits 128 into t 44, h 42, w 42 features."""
    from diffusers.models.transformers.transformer_wan import WanRotaryPosEmbed

    f, h, w = fhw
    rope = WanRotaryPosEmbed(128, (1, 2, 2), max_seq_len=1024)
    cos, sin = rope(torch.zeros(1, 4, f, 2 * h, 2 * w))  # latents [batch, channels, frames, height, width]
    x = _rand((2, f * h * w, 3, 128), seed=f)
    want = _wan_apply(torch.from_numpy(x), cos, sin).numpy()
    coords = posenc.rope_grid_coords(fhw)
    freqs = posenc.rope_axial_freqs((44, 42, 42), base=10000.0)
    got = posenc.apply_rope_nd(x, coords, freqs, interleaved=True)
    assert_matches_peer(got, want, x, coords, freqs, interleaved=True, seq_axis=-3, angle_roundings=0)  # float64 angles
    assert_exact(got, x, coords, freqs, interleaved=True, seq_axis=-3)


@needs_nd
@needs_diffusers
@pytest.mark.parametrize("fhw", [(1, 2, 2), (3, 4, 6), (9, 16, 12)])
def test_hunyuan_video(fhw, isa):
    """HunyuanVideo: rope_dim (16, 56, 56), theta 256, FLUX's pairing; the text tokens after the video ones are not
    rotated (its attention processor rotates query[:, :-text_len])."""
    from diffusers.models.embeddings import apply_rotary_emb
    from diffusers.models.transformers.transformer_hunyuan_video import HunyuanVideoRotaryPosEmbed

    f, h, w = fhw
    n_text = 7
    rope = HunyuanVideoRotaryPosEmbed(patch_size=2, patch_size_t=1, rope_dim=[16, 56, 56], theta=256.0)
    cos, sin = rope(torch.zeros(1, 4, f, 2 * h, 2 * w))
    x = _rand((1, f * h * w + n_text, 2, 128), seed=h)
    q = torch.from_numpy(x)
    want = torch.cat([apply_rotary_emb(q[:, :-n_text], (cos, sin), sequence_dim=1), q[:, -n_text:]], dim=1).numpy()
    coords = posenc.rope_grid_coords(fhw)
    freqs = posenc.rope_axial_freqs((16, 56, 56), base=256.0)
    got = x.copy()
    video = got[:, :-n_text]
    posenc.apply_rope_nd(video, coords, freqs, interleaved=True, out=video)
    np.testing.assert_array_equal(got[:, -n_text:], x[:, -n_text:])
    # HunyuanVideo's angles: float32 positions times float32 frequencies (a float32 power)
    assert_matches_peer(got[:, :-n_text], want[:, :-n_text], x[:, :-n_text], coords, freqs, interleaved=True,
                        seq_axis=-3, angle_roundings=3)
    assert_exact(got[:, :-n_text], x[:, :-n_text], coords, freqs, interleaved=True, seq_axis=-3)


# ---------------------------------------------------------------------- Qwen2-VL's vision tower

def qwen2vl_peer(x, grid_thw, merge, head_dim, theta=10000.0, keep=slice(None)):
    """Transformers' Qwen2-VL vision tower: get_vision_position_ids, Qwen2VLVisionRotaryEmbedding,
    apply_rotary_pos_emb_vision on q of shape [seq, heads, head_dim] (the tokens ``keep`` of the grid)."""
    from transformers.models.qwen2_vl import modeling_qwen2_vl as m

    heads = x.shape[-2]
    config = transformers.Qwen2VLVisionConfig(embed_dim=heads * head_dim, num_heads=heads,
                                              rope_parameters={"rope_type": "axial", "rope_theta": theta})
    ids = vision_utils.get_vision_position_ids(torch.tensor(grid_thw), merge)[keep]
    q = torch.from_numpy(x)
    cos, sin = m.Qwen2VLVisionRotaryEmbedding(config)(q, ids)
    q_out, _ = m.apply_rotary_pos_emb_vision(q, q.clone(), cos, sin)
    return q_out.numpy()


def qwen2vl_recipe(x, grid_thw, merge, head_dim, theta=10000.0):
    freqs = posenc.rope_axial_freqs((head_dim // 2, head_dim // 2), base=theta)  # rows, then columns
    coords = np.concatenate([posenc.rope_grid_coords(g, spatial_merge=merge)[:, 1:] for g in grid_thw])
    return posenc.apply_rope_nd(x, coords, freqs), coords, freqs


@needs_nd
@needs_transformers
@pytest.mark.parametrize("grid_thw,merge", [([(1, 2, 2)], 2), ([(1, 4, 6)], 2), ([(1, 14, 20), (2, 8, 8)], 2),
                                            ([(1, 64, 92)], 2), ([(3, 5, 7)], 1)])
@pytest.mark.parametrize("head_dim", [80, 64])
def test_qwen2vl_vision(grid_thw, merge, head_dim, isa):
    n = sum(t * h * w for t, h, w in grid_thw)
    x = _rand((n, 3, head_dim), seed=n)
    got, coords, freqs = qwen2vl_recipe(x.copy(), grid_thw, merge, head_dim)
    want = qwen2vl_peer(x, grid_thw, merge, head_dim)
    # Transformers: float32 inv_freq (a float32 power), float32 product: about three roundings of the angle
    assert_matches_peer(got, want, x, coords, freqs, interleaved=False, seq_axis=-3, angle_roundings=3)
    assert_exact(got, x, coords, freqs, interleaved=False, seq_axis=-3)


@needs_nd
@needs_transformers
def test_qwen2vl_vision_large_grid_exactness():
    """A 2048 × 2048 patch grid's last rows: the float32 angles of the model drift, posenc's do not."""
    grid = [(1, 2048, 2048)]
    coords_all = posenc.rope_grid_coords(grid[0], spatial_merge=2)[:, 1:]
    head_dim = 80
    keep = slice(len(coords_all) - 4096, None)
    x = _rand((4096, 2, head_dim), seed=3)
    freqs = posenc.rope_axial_freqs((40, 40))
    got = posenc.apply_rope_nd(x, coords_all[keep], freqs)
    ours = assert_exact(got, x, coords_all[keep], freqs, interleaved=False, seq_axis=-3)
    theirs = peer_error(qwen2vl_peer(x, grid, 2, head_dim, keep=keep), x, coords_all[keep], freqs, interleaved=False,
                        seq_axis=-3)
    assert theirs > 3 * 8, theirs
    print(f"Qwen2-VL vision, 2048² grid: posenc {ours / U32:.2f}, Transformers {theirs:.3g} (units of 2^-24·|pair|)")


@needs_nd
@needs_transformers
@pytest.mark.parametrize("grid_thw", [[(1, 8, 8)], [(1, 20, 36)], [(1, 14, 22), (2, 12, 8)]])
def test_qwen25vl_vision_windows(grid_thw, isa):
    """Qwen2.5-VL's tower reorders the 2 × 2 merge blocks into attention windows (get_vision_window_index) and
    permutes its cos/sin alike: permuting the recipe's coordinates the same way gives its rotation."""
    from transformers.models.qwen2_5_vl import modeling_qwen2_5_vl as m

    heads, head_dim = 4, 80
    config = transformers.Qwen2_5_VLVisionConfig(hidden_size=heads * head_dim, num_heads=heads, window_size=112,
                                                 patch_size=14, spatial_merge_size=2)
    grid = torch.tensor(grid_thw)
    window_index, _ = vision_utils.get_vision_window_index(grid, spatial_merge_size=2, window_size=112, patch_size=14)
    ids = vision_utils.get_vision_position_ids(grid, 2)
    rope = m.Qwen2_5_VLVisionRotaryEmbedding(config)
    assert rope.inv_freq.numel() == head_dim // 4
    n = len(ids)
    x = _rand((n, heads, head_dim), seed=n)
    q = torch.from_numpy(x)
    cos, sin = (t.reshape(n // 4, 4, -1)[window_index].reshape(n, -1) for t in rope(q, ids))
    want, _ = m.apply_rotary_pos_emb_vision(q, q.clone(), cos, sin)
    coords = np.concatenate([posenc.rope_grid_coords(g, spatial_merge=2)[:, 1:] for g in grid_thw])
    coords = coords.reshape(-1, 4, 2)[window_index.numpy()].reshape(-1, 2)  # the tower's window order
    freqs = posenc.rope_axial_freqs((head_dim // 2, head_dim // 2))
    got = posenc.apply_rope_nd(x, coords, freqs)
    assert_matches_peer(got, want.numpy(), x, coords, freqs, interleaved=False, seq_axis=-3, angle_roundings=3)
    assert_exact(got, x, coords, freqs, interleaved=False, seq_axis=-3)


# ---------------------------------------------------------------------- Pixtral

def pixtral_freqs(head_dim, theta=10000.0):
    """Pixtral's split: inv_freq = θ^(-2i/head_dim); the even ones rotate by the row, the odd ones by the column."""
    inv = theta ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    freqs = np.zeros((2, head_dim // 2))
    freqs[0, : head_dim // 4] = inv[0::2]
    freqs[1, head_dim // 4 :] = inv[1::2]
    return freqs


def pixtral_peer(x, hw_list, head_dim, theta=10000.0):
    """Transformers' PixtralVisionRotaryEmbedding + apply_rotary_pos_emb(unsqueeze_dim=0) on [batch, heads, seq, D]."""
    from transformers.models.pixtral import modeling_pixtral as m

    heads = x.shape[1]
    config = transformers.PixtralVisionConfig(hidden_size=heads * head_dim, num_attention_heads=heads,
                                              head_dim=head_dim,
                                              rope_parameters={"rope_type": "axial", "rope_theta": theta})
    ids = torch.cat([torch.stack([a.flatten(), b.flatten()], -1)
                     for a, b in (torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij") for h, w in hw_list)])
    q = torch.from_numpy(x)
    cos, sin = m.PixtralVisionRotaryEmbedding(config)(q, ids)
    q_out, _ = m.apply_rotary_pos_emb(q, q.clone(), cos, sin, unsqueeze_dim=0)
    return q_out.numpy()


@needs_nd
@needs_transformers
@pytest.mark.parametrize("hw_list", [[(1, 1)], [(3, 5)], [(16, 16), (4, 9)], [(64, 64)]])
def test_pixtral(hw_list, isa):
    head_dim = 64
    coords = np.concatenate([posenc.rope_grid_coords(hw) for hw in hw_list])
    x = _rand((1, 4, len(coords), head_dim), seed=len(coords))
    freqs = pixtral_freqs(head_dim)
    got = posenc.apply_rope_nd(x, coords, freqs, seq_axis=-2)
    want = pixtral_peer(x, hw_list, head_dim)
    assert_matches_peer(got, want, x, coords, freqs, interleaved=False, seq_axis=-2, angle_roundings=3)
    assert_exact(got, x, coords, freqs, interleaved=False, seq_axis=-2)
    # the split matters: Qwen2-VL's (rows take the first half of the frequencies) is not Pixtral's
    if len(coords) > 4:
        other = posenc.apply_rope_nd(x, coords, posenc.rope_axial_freqs((head_dim // 2, head_dim // 2)), seq_axis=-2)
        assert np.abs(other - want).max() > 1e-2


# ---------------------------------------------------------------------- timm: DINOv3, EVA-02, RoPE-Mixed

def dinov3_freqs(head_dim, temperature=100.0, min_period=None, max_period=None):
    """DINOv3 rotates by 2π·coordinate / period; periods temperature^(2i/(head_dim/2)) or geometric min→max."""
    if min_period is not None:
        periods = min_period * (max_period / min_period) ** np.linspace(0, 1, head_dim // 4)
        freqs = np.zeros((2, head_dim // 2))
        freqs[0, : head_dim // 4] = freqs[1, head_dim // 4 :] = 2 * np.pi / periods
        return freqs
    return 2 * np.pi * posenc.rope_axial_freqs((head_dim // 2, head_dim // 2), base=temperature)


@needs_nd
@needs_timm
@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (14, 14), (37, 23)])
@pytest.mark.parametrize("how", ["separate", "max"])
@pytest.mark.parametrize("periods", [None, (0.5, 90.0)])
def test_dinov3(shape, how, periods, isa):
    head_dim, npt = 64, 5  # cls + 4 registers pass through, as in timm's Eva attention
    kw = {} if periods is None else {"min_period": periods[0], "max_period": periods[1]}
    rope = timm_sincos.RotaryEmbeddingDinoV3(head_dim, temperature=100.0, normalize_coords=how, rotate_half=True, **kw)
    x = _rand((2, 3, npt + shape[0] * shape[1], head_dim), seed=shape[0])
    q = torch.from_numpy(x)
    want = torch.cat([q[:, :, :npt], timm_sincos.apply_rot_embed_cat(q[:, :, npt:], rope.get_embed(list(shape)), half=True)],
                     dim=2).numpy()
    coords = posenc.rope_grid_coords(shape, normalize=how)
    freqs = dinov3_freqs(head_dim, 100.0, *(periods or (None, None)))
    got = x.copy()
    posenc.apply_rope_nd(got[:, :, npt:], coords, freqs, seq_axis=-2, out=got[:, :, npt:])  # in place, strided
    np.testing.assert_array_equal(got[:, :, :npt], x[:, :, :npt])
    # timm: float32 coordinates (two roundings), periods (a float32 power), 2π·c / p (three roundings)
    assert_matches_peer(got[:, :, npt:], want[:, :, npt:], x[:, :, npt:], coords, freqs, interleaved=False,
                        seq_axis=-2, angle_roundings=8)
    assert_exact(got[:, :, npt:], x[:, :, npt:], coords, freqs, interleaved=False, seq_axis=-2)


@needs_nd
@needs_timm
@pytest.mark.parametrize("shape,ref", [((16, 16), None), ((32, 32), (16, 16)), ((24, 20), (16, 16)), ((7, 9), None)])
@pytest.mark.parametrize("rotate_half", [False, True])
def test_eva02(shape, ref, rotate_half, isa):
    """timm's RotaryEmbeddingCat as EVA-02 builds it (in_pixels=False, ref_feat_shape=(16, 16) at 448 px)."""
    head_dim, npt = 64, 1
    rope = timm_sincos.RotaryEmbeddingCat(head_dim, in_pixels=False, temperature=10000,
                                          ref_feat_shape=None if ref is None else list(ref), rotate_half=rotate_half)
    x = _rand((2, 4, npt + shape[0] * shape[1], head_dim), seed=shape[1])
    q = torch.from_numpy(x)
    emb = rope.get_embed(list(shape))
    want = torch.cat([q[:, :, :npt], timm_sincos.apply_rot_embed_cat(q[:, :, npt:], emb, half=rotate_half)], dim=2).numpy()
    coords = posenc.rope_grid_coords(shape, ref_shape=ref)
    freqs = posenc.rope_axial_freqs((head_dim // 2, head_dim // 2), base=10000.0)
    got = x.copy()
    posenc.apply_rope_nd(got[:, :, npt:], coords, freqs, interleaved=not rotate_half, seq_axis=-2, out=got[:, :, npt:])
    np.testing.assert_array_equal(got[:, :, :npt], x[:, :, :npt])
    # timm: float32 bands (a float32 power), grid (i / f · r: two roundings), product
    assert_matches_peer(got[:, :, npt:], want[:, :, npt:], x[:, :, npt:], coords, freqs,
                        interleaved=not rotate_half, seq_axis=-2, angle_roundings=5)
    assert_exact(got[:, :, npt:], x[:, :, npt:], coords, freqs, interleaved=not rotate_half, seq_axis=-2)


@needs_nd
@needs_timm
@pytest.mark.parametrize("kind", ["cat", "dinov3"])
def test_padded_batch_of_grids(kind, isa):
    """Images of different sizes in one padded batch (timm's get_batch_embeds(shapes, seq_len), NaFlex):
    coords [batch, seq, axes], one grid per row, padding at coordinate 0. timm zeroes the padded tokens
    (sin = cos = 0) where posenc leaves them unrotated; attention masks them either way, so only the
    valid tokens are compared."""
    head_dim, seq = 64, 120
    shapes = [(7, 9), (10, 12), (3, 5)]
    if kind == "cat":
        rope = timm_sincos.RotaryEmbeddingCat(head_dim, in_pixels=False, temperature=10000)
        grids = [posenc.rope_grid_coords(s) for s in shapes]
        freqs, interleaved, half = posenc.rope_axial_freqs((32, 32)), True, False
    else:
        rope = timm_sincos.RotaryEmbeddingDinoV3(head_dim, temperature=100.0, rotate_half=True)
        grids = [posenc.rope_grid_coords(s, normalize="separate") for s in shapes]
        freqs, interleaved, half = dinov3_freqs(head_dim), False, True
    emb = rope.get_batch_embeds(shapes, seq_len=seq)  # [batch, seq, 2·head_dim]
    coords = np.zeros((len(shapes), seq, 2))
    for b, g in enumerate(grids):
        coords[b, : len(g)] = g
    x = _rand((len(shapes), 2, seq, head_dim), seed=11)
    want = timm_sincos.apply_rot_embed_cat(torch.from_numpy(x), emb[:, None], half=half).numpy()
    got = posenc.apply_rope_nd(x, coords, freqs, interleaved=interleaved, seq_axis=-2)
    for b, g in enumerate(grids):
        n = len(g)
        assert_matches_peer(got[b, :, :n], want[b, :, :n], x[b, :, :n], g, freqs, interleaved=interleaved,
                            seq_axis=-2, angle_roundings=8)
        np.testing.assert_array_equal(got[b, :, n:], x[b, :, n:])  # padding: coordinate 0, not rotated


@needs_nd
@needs_timm
@pytest.mark.parametrize("shape", [(4, 4), (14, 14), (9, 13)])
@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_rope_mixed(shape, indexing, isa):
    """timm's RotaryEmbeddingMixed: learned per-head, per-layer freqs (2, depth, heads, pairs) → [heads, 2, pairs]."""
    torch.manual_seed(0)
    heads, head_dim, depth = 3, 32, 2
    rope = timm_sincos.RotaryEmbeddingMixed(heads * head_dim, depth, heads, temperature=10.0, grid_indexing=indexing)
    emb = rope.get_embed(list(shape))  # [depth, heads, N, 2·head_dim]
    coords = posenc.rope_grid_coords(shape)
    if indexing == "xy":
        coords = coords[:, ::-1]  # x (the column) first
    x = _rand((2, heads, shape[0] * shape[1], head_dim), seed=7)
    for layer in range(depth):
        want = timm_sincos.apply_rot_embed_cat(torch.from_numpy(x), emb[layer]).detach().numpy()
        freqs = rope.freqs.detach().numpy()[:, layer].transpose(1, 0, 2)  # [heads, axes, pairs]
        got = posenc.apply_rope_nd(x, coords, freqs, interleaved=True, seq_axis=-2)
        # timm: two float32 products and their sum
        assert_matches_peer(got, want, x, coords, freqs, interleaved=True, seq_axis=-2, angle_roundings=2)
        assert_exact(got, x, coords, freqs, interleaved=True, seq_axis=-2)
        # and on a [batch, seq, heads, head_dim] layout
        got_t = posenc.apply_rope_nd(np.ascontiguousarray(x.transpose(0, 2, 1, 3)), coords, freqs, interleaved=True)
        np.testing.assert_array_equal(got_t.transpose(0, 2, 1, 3), got)


# ====================================================================== docs/rotary_nd.md

@needs_nd
def test_docs_rotary_nd_examples_run():
    """Every ``>>>`` example of docs/rotary_nd.md, as a doctest (output compared)."""
    import doctest
    import pathlib

    doc = pathlib.Path(__file__).resolve().parents[1] / "docs" / "rotary_nd.md"
    if not doc.exists():
        pytest.skip("docs/rotary_nd.md not found next to the tests")
    result = doctest.testfile(str(doc), module_relative=False, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.attempted > 20 and result.failed == 0, result


# ====================================================================== posenc compare

@needs_nd
def test_compare_has_a_vision_rope_row():
    """``posenc compare``'s Qwen2-VL vision row: a rotation (exact shift, no drift), and its similarity profile
    is the closed form mean_j cos(d·ω_j) with ω 0 on the row pairs and base^(-2i/(dim/2)) on the column pairs."""
    from posenc import _compare

    settings = _compare.Settings(length=128, dim=32, heads=4)
    (row,) = _compare.compare(settings, only=["Qwen2-VL vision"])
    assert row.shift_residual < 1e-9 and row.defined_beyond and row.drift < 1e-9
    omega = np.concatenate([np.zeros(8), 10000.0 ** (-np.arange(0, 16, 2) / 16)])
    np.testing.assert_allclose(row.similarity[:60], [np.mean(np.cos(d * omega)) for d in range(60)], atol=1e-12)
    (odd,) = _compare.compare(_compare.Settings(length=64, dim=18), only=["Qwen2-VL vision"])  # a tail passes through
    assert odd.min_dist > 0


# ================================================================ hostile-input specs
# The valid baseline call of each public function and the role of each argument: the hostile table
# (tests/test_arguments.py), the differential fuzzer and the PyTorch/JAX/unpickled-input cases are
# generated from SPECS.

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
    s.raises("ref_shape-overflowing", ValueError, "ref_shape", ref_shape=(1e308, 16))  # coordinates past float64
    s.raises("offset-overflowing-normalized", ValueError, "offset", offset=1e308, normalize="separate")
    # normalize: one of the names
    for id, v in [("unknown", "centered"), ("upper", "MAX"), ("bool", True), ("int", 1)]:
        s.raises(f"normalize-{id}", ValueError, "normalize", normalize=v)
    s.add("normalize-range", Check(_inside_unit), normalize="separate")
    return s


SPECS: Dict[str, Callable[[], Spec]] = {
    "rope_grid_coords": spec_rope_grid_coords,
}


LARGE: Dict[str, Callable[[Any], Any]] = {}
