"""The vision family: native (every ISA) against the reference, closed forms, and the peers' own code."""

from __future__ import annotations

from typing import Any, Callable, Dict

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import posenc
from posenc import reference as ref
from posenc._rounding import round_once

from helpers import FLOAT_DTYPES, Peer, assert_close_to_float64, needs, rand, strided_view
from hostile import BIG, SIZE_ERRORS, Spec, empty_of

diffusers_embeddings = Peer("diffusers.models.embeddings")


# ---------------------------------------------------------------- independent closed forms

def closed_rows(values: np.ndarray, dim: int, base: float, interleaved: bool) -> np.ndarray:
    """sinusoidal(values, dim) written out in float64 (values any shape): [..., dim]."""
    w = base ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)
    angles = values[..., None].astype(np.float64) * w
    out = np.empty(values.shape + (dim,))
    if interleaved:
        out[..., 0::2], out[..., 1::2] = np.sin(angles), np.cos(angles)
    else:
        out[..., : dim // 2], out[..., dim // 2 :] = np.sin(angles), np.cos(angles)
    return out


def mae_1d(embed_dim, pos):
    """MAE's get_1d_sincos_pos_embed_from_grid (facebookresearch/mae util/pos_embed.py), np.float → float64."""
    assert embed_dim % 2 == 0
    omega = np.arange(embed_dim // 2, dtype=np.float64)
    omega /= embed_dim / 2.
    omega = 1. / 10000**omega
    pos = pos.reshape(-1)
    out = np.einsum('m,d->md', pos, omega)
    return np.concatenate([np.sin(out), np.cos(out)], axis=1)


def mae_2d(embed_dim, grid_size, cls_token=False):
    """MAE's get_2d_sincos_pos_embed, verbatim but for np.float (the original only takes a square grid)."""
    grid_h = np.arange(grid_size, dtype=np.float32)
    grid_w = np.arange(grid_size, dtype=np.float32)
    grid = np.meshgrid(grid_w, grid_h)  # here w goes first
    grid = np.stack(grid, axis=0)
    grid = grid.reshape([2, 1, grid_size, grid_size])
    emb_h = mae_1d(embed_dim // 2, grid[0])
    emb_w = mae_1d(embed_dim // 2, grid[1])
    pos_embed = np.concatenate([emb_h, emb_w], axis=1)
    if cls_token:
        pos_embed = np.concatenate([np.zeros([1, embed_dim]), pos_embed], axis=0)
    return pos_embed


def scaled_2d(embed_dim, h, w, base_size, scale, extra):
    """diffusers' get_2d_sincos_pos_embed with its positions kept in float64 (posenc's documented choice)."""
    grid_h = np.arange(h, dtype=np.float64) / (h / base_size) / scale
    grid_w = np.arange(w, dtype=np.float64) / (w / base_size) / scale
    gw, gh = np.meshgrid(grid_w, grid_h)
    emb = np.concatenate([mae_1d(embed_dim // 2, gw), mae_1d(embed_dim // 2, gh)], axis=1)
    return np.concatenate([np.zeros([extra, embed_dim]), emb], axis=0)


# ---------------------------------------------------------------- sinusoidal_nd

def angle_slack(max_angle: float) -> float:
    """Float64 budget of the native trig against np.sin: anchored recurrences and the kernel's reduction."""
    return 1e-13 + 4 * np.finfo(np.float64).eps * max_angle


coords_strategy = st.tuples(
    st.lists(st.integers(0, 5), min_size=0, max_size=3),  # leading shape
    st.integers(1, 4),  # axes
    st.booleans(),  # float coordinates
)


@settings(max_examples=60, deadline=None)
@given(lead_axes_float=coords_strategy, data=st.data(), dtype=st.sampled_from(FLOAT_DTYPES),
       interleaved=st.booleans(), base=st.sampled_from([10000.0, 100.0, 0.5]), use_out=st.booleans())
def test_sinusoidal_nd_closed_form(isa, lead_axes_float, data, dtype, interleaved, base, use_out):
    lead, axes, floats = lead_axes_float
    dims = tuple(data.draw(st.lists(st.integers(1, 9), min_size=axes, max_size=axes).map(lambda v: [2 * d for d in v])))
    rng = np.random.default_rng(len(lead) * 10 + axes)
    shape = tuple(lead) + (axes,)
    coords = rng.uniform(-300, 300, shape) if floats else rng.integers(-(2**20), 2**20, shape)
    out = np.full(tuple(lead) + (sum(dims),), 7, dtype) if use_out else None
    got = posenc.sinusoidal_nd(coords, dims, base=base, interleaved=interleaved, dtype=dtype, out=out)
    if use_out:
        assert got is out
    assert got.shape == tuple(lead) + (sum(dims),) and got.dtype == np.dtype(dtype)
    exact = np.concatenate([closed_rows(coords[..., a], d, base, interleaved) for a, d in enumerate(dims)], axis=-1)
    max_angle = float(np.abs(coords).max(initial=0)) * max(1.0, 1.0 / base)
    assert_close_to_float64(got, exact, angle_slack(max_angle))


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 70), dims=st.lists(st.integers(1, 20), min_size=1, max_size=3), dtype=st.sampled_from(FLOAT_DTYPES),
       seed=st.integers(0, 2**16))
def test_sinusoidal_nd_matches_reference_strided_out(native_isa, n, dims, dtype, seed):
    rng = np.random.default_rng(seed)
    dims = [2 * d for d in dims]
    coords = rng.integers(-1000, 1000, (n, len(dims)))
    out = strided_view(np.full((n, sum(dims)), 7, dtype), rng)
    got = posenc.sinusoidal_nd(strided_view(coords, rng), dims, dtype=dtype, out=out)
    assert got is out
    expected = ref.sinusoidal_nd(coords, dims, dtype=np.float64)
    # Both within one rounding (plus the native trig's float64 slack) of the float64 reference.
    assert_close_to_float64(got, expected, angle_slack(1000.0))


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(1, 12), min_size=1, max_size=4), batch=st.integers(1, 3),
       dims=st.lists(st.integers(1, 8), min_size=4, max_size=4), dtype=st.sampled_from(FLOAT_DTYPES),
       interleaved=st.booleans(), floats=st.booleans(), seed=st.integers(0, 2**16))
def test_sinusoidal_nd_grid_coordinates(isa, sizes, batch, dims, dtype, interleaved, floats, seed):
    """Patch-index coordinates (whole numbers spanning few values per axis, shuffled, offset, as ints or
    floats): the rows built from a table per axis agree with the closed form, into strided outs too."""
    rng = np.random.default_rng(seed)
    axes = len(sizes)
    dims = [2 * d for d in dims[:axes]]
    grid = np.stack(np.meshgrid(*[np.arange(n) for n in sizes], indexing="ij"), axis=-1).reshape(-1, axes)
    rows = max(2**14 // sum(dims) + 1, batch * len(grid))  # 2^14 values or more: the tables' path
    coords = np.resize(grid, (rows, axes))[rng.permutation(rows)] + rng.integers(-1000, 1000, axes)
    coords = coords.astype(np.float64) if floats else coords
    out = strided_view(np.full((len(coords), sum(dims)), 7, dtype), rng)
    got = posenc.sinusoidal_nd(coords, dims, interleaved=interleaved, dtype=dtype, out=out)
    assert got is out
    exact = np.concatenate([closed_rows(coords[:, a], d, 10000.0, interleaved) for a, d in enumerate(dims)], axis=-1)
    assert_close_to_float64(got, exact, angle_slack(float(np.abs(coords).max())))
    if floats:  # −0 among the coordinates is coordinate 0 (+0 sines) on both executors, by either path
        coords[:] = np.resize(grid, (rows, axes))[rng.permutation(rows)]
        coords[coords == 0] = -0.0
        got = posenc.sinusoidal_nd(coords, dims, interleaved=interleaved, dtype=dtype)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(ref.sinusoidal_nd(coords, dims, interleaved=interleaved,
                                                                           dtype=dtype)))


def test_sinusoidal_nd_one_axis_is_sinusoidal(isa):
    pos = np.array([0, 5, 2, 9, 1000])
    for interleaved in (True, False):
        np.testing.assert_array_equal(posenc.sinusoidal_nd(pos[:, None], [8], interleaved=interleaved),
                                      posenc.sinusoidal(pos, 8, interleaved=interleaved))


def test_sinusoidal_nd_axes_in_order(isa):
    """Axis a's block sits after the blocks of axes < a, and depends on coords[..., a] only."""
    coords = np.array([[[1, 20, 300]], [[4, 50, 600]]])
    pe = posenc.sinusoidal_nd(coords, (2, 4, 6), dtype=np.float64)
    assert pe.shape == (2, 1, 12)
    for a, (lo, hi, d) in enumerate([(0, 2, 2), (2, 6, 4), (6, 12, 6)]):
        np.testing.assert_allclose(pe[..., lo:hi], closed_rows(coords[..., a], d, 10000.0, True), rtol=0, atol=1e-13)


def test_sinusoidal_nd_out_not_mergeable(isa):
    """An out whose leading axes cannot be merged into one (a transposed view) is still written in place."""
    coords = np.arange(24).reshape(3, 4, 2)
    out = np.full((4, 3, 6), 7, np.float32).transpose(1, 0, 2)
    got = posenc.sinusoidal_nd(coords, (2, 4), out=out)
    assert got is out
    np.testing.assert_array_equal(out, ref.sinusoidal_nd(coords, (2, 4)) if isa == "reference" else
                                  posenc.sinusoidal_nd(coords, (2, 4)))
    exact = np.concatenate([closed_rows(coords[..., 0], 2, 1e4, True), closed_rows(coords[..., 1], 4, 1e4, True)], -1)
    assert_close_to_float64(out, exact, 1e-13)


# ---------------------------------------------------------------- sincos_2d

@pytest.mark.parametrize("grid", [1, 2, 7, 14, 16])
@pytest.mark.parametrize("embed_dim", [4, 8, 12, 64, 768])
def test_sincos_2d_is_mae_bit_for_bit(isa, grid, embed_dim):
    for cls in (False, True):
        got = posenc.sincos_2d(embed_dim, grid, extra_tokens=int(cls), dtype=np.float64)
        np.testing.assert_array_equal(got, mae_2d(embed_dim, grid, cls_token=cls))
        got32 = posenc.sincos_2d(embed_dim, grid, extra_tokens=int(cls))
        np.testing.assert_array_equal(got32, mae_2d(embed_dim, grid, cls_token=cls).astype(np.float32))


@pytest.mark.parametrize("hw", [(1, 5), (3, 4), (9, 2), (32, 48)])
@pytest.mark.parametrize("base_size,scale", [(16, 1.0), (16, 2.0), (64, 0.5), (7, 3.0)])
def test_sincos_2d_rescaled_non_square(isa, hw, base_size, scale):
    for dtype in FLOAT_DTYPES:
        got = posenc.sincos_2d(32, hw, extra_tokens=2, base_size=base_size, interpolation_scale=scale, dtype=dtype)
        exact = scaled_2d(32, hw[0], hw[1], base_size, scale, 2)
        if np.dtype(dtype) == np.float64:
            np.testing.assert_array_equal(got, exact)
        else:
            assert_close_to_float64(got, exact)
            np.testing.assert_array_equal(got, round_once(exact, np.dtype(dtype)))


def test_sincos_2d_strided_out(isa):
    rng = np.random.default_rng(3)
    for dtype in FLOAT_DTYPES:
        out = strided_view(np.full((3 + 5 * 6, 24), 7, dtype), rng)
        got = posenc.sincos_2d(24, (5, 6), extra_tokens=3, base_size=8, dtype=dtype, out=out)
        assert got is out
        np.testing.assert_array_equal(out, round_once(scaled_2d(24, 5, 6, 8, 1.0, 3), np.dtype(dtype)))


@settings(max_examples=50, deadline=None)
@given(quarter=st.integers(1, 40), h=st.integers(1, 20), w=st.integers(1, 20), extra=st.integers(0, 3),
       base_size=st.sampled_from([None, 1, 7.5, 16]), scale=st.sampled_from([1.0, 0.25, 3.0]),
       dtype=st.sampled_from(FLOAT_DTYPES), seed=st.integers(0, 2**16))
def test_sincos_2d_matches_reference(native_isa, quarter, h, w, extra, base_size, scale, dtype, seed):
    """Native equals the reference bit for bit (the same per-axis rows, copied), strided outs included."""
    rng = np.random.default_rng(seed)
    kw = dict(extra_tokens=extra, base_size=base_size, interpolation_scale=scale, dtype=dtype)
    out = strided_view(np.full((extra + h * w, 4 * quarter), 7, dtype), rng)
    got = posenc.sincos_2d(4 * quarter, (h, w), out=out, **kw)
    assert got is out
    expected = ref.sincos_2d(4 * quarter, (h, w), **kw)
    np.testing.assert_array_equal(got, expected)
    # MAE's rows of the positions k / (n / base_size) / scale (base_size None: k / scale), extra rows first.
    gh, gw = (np.arange(n, dtype=np.float64) / (1.0 if base_size is None else n / base_size) / scale for n in (h, w))
    cols, rows = np.meshgrid(gw, gh)
    exact = np.concatenate([np.zeros((extra, 4 * quarter)),
                            np.concatenate([mae_1d(2 * quarter, cols), mae_1d(2 * quarter, rows)], axis=1)])
    np.testing.assert_array_equal(expected, round_once(exact, np.dtype(dtype)))


@needs(diffusers_embeddings)
@pytest.mark.parametrize("hw,base_size,scale", [((16, 16), 16, 1.0), ((32, 32), 32, 1.0), ((8, 8), 8, 2.0),
                                                 ((64, 64), 64, 0.5), ((24, 40), 16, 1.0), ((12, 12), 16, 1.5)])
def test_sincos_2d_is_diffusers(isa, hw, base_size, scale):
    """diffusers' own function (torch, float64): float32 rows identical where its float32 positions are exact.

    diffusers evaluates ω = 1/10000**k and the sines with torch (float64), whose
    pow and sin differ from NumPy's (MAE's) in the last bit: float64 rows agree
    within a few ulp of the angle, float32 rows are identical.
    """
    kw = dict(cls_token=True, extra_tokens=1, base_size=base_size, interpolation_scale=scale)
    theirs = np.asarray(diffusers_embeddings.get_2d_sincos_pos_embed(64, hw, **kw), np.float64)
    got = posenc.sincos_2d(64, hw, extra_tokens=1, base_size=base_size, interpolation_scale=scale, dtype=np.float64)
    got32 = posenc.sincos_2d(64, hw, extra_tokens=1, base_size=base_size, interpolation_scale=scale)
    max_angle = max(hw) * base_size / min(hw) / scale
    exact_positions = all(float(np.float32(k / (n / base_size) / scale)) == k / (n / base_size) / scale
                          for n in hw for k in range(n))
    if exact_positions:
        np.testing.assert_allclose(got, theirs, rtol=0, atol=8 * np.finfo(np.float64).eps * max_angle)
        np.testing.assert_array_equal(got32, theirs.astype(np.float32))
    else:
        # Their positions carry float32 rounding (relative 2^-24), and so do their angles.
        np.testing.assert_allclose(got, theirs, rtol=0, atol=2.0**-24 * max_angle * 1.01)
        assert np.abs(got - theirs).max() > 1e-12  # the documented difference is real: float64 positions here


# ---------------------------------------------------------------- Swin

WINDOWS = [(1, 1), (1, 4), (3, 1), (2, 2), (2, 3), (7, 7), (5, 12), (12, 12)]
transformers = Peer("transformers")
torch = Peer("torch")


def swin_index_closed(wh: int, ww: int) -> np.ndarray:
    """Swin's relative_position_index, Microsoft's steps in NumPy (meshgrid, differences, shift, scale, sum)."""
    coords = np.stack(np.meshgrid(np.arange(wh), np.arange(ww), indexing="ij"))  # 2, wh, ww
    flat = coords.reshape(2, -1)
    rel = (flat[:, :, None] - flat[:, None, :]).transpose(1, 2, 0).copy()
    rel[:, :, 0] += wh - 1
    rel[:, :, 1] += ww - 1
    rel[:, :, 0] *= 2 * ww - 1
    return rel.sum(-1)


def swin_bias_closed(table: np.ndarray, wh: int, ww: int) -> np.ndarray:
    """The gather Transformers does: table[index.view(-1)].view(N, N, heads).permute(2, 0, 1), in float64."""
    n = wh * ww
    return table.astype(np.float64)[swin_index_closed(wh, ww).reshape(-1)].reshape(n, n, -1).transpose(2, 0, 1)


@pytest.mark.parametrize("window", WINDOWS)
def test_swin_index_closed_form(window):
    got = posenc.swin_relative_position_index(window)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, swin_index_closed(*window))
    if window[0] == window[1]:
        np.testing.assert_array_equal(posenc.swin_relative_position_index(window[0]), got)


@needs(torch, transformers)
@pytest.mark.parametrize("window", WINDOWS)
def test_swin_index_and_bias_are_transformers(window):
    from transformers.models.swin.modeling_swin import SwinRelativePositionBias

    module = SwinRelativePositionBias(3, window)
    with torch.no_grad():
        module.relative_position_bias_table.normal_()
    wh, ww = window
    n = wh * ww
    np.testing.assert_array_equal(posenc.swin_relative_position_index(window),
                                  module.relative_position_index.numpy().reshape(n, n))
    table = module.relative_position_bias_table.detach().numpy()
    theirs = module().detach().numpy()[0]
    np.testing.assert_array_equal(posenc.swin_bias(table, window), theirs)
    scores = np.random.default_rng(1).standard_normal((4, 3, n, n)).astype(np.float32)
    expected = (torch.from_numpy(scores) + module()).detach().numpy()
    np.testing.assert_array_equal(posenc.add_swin_bias(scores, table, window), expected)
    for dtype in (torch.float16, torch.bfloat16, torch.float64):
        s_t = torch.from_numpy(scores).to(dtype)
        t_t = module.relative_position_bias_table.detach().to(dtype)  # the model cast to the dtype
        expected = s_t + t_t[module.relative_position_index].view(n, n, -1).permute(2, 0, 1).unsqueeze(0)
        got = posenc.add_swin_bias(s_t, t_t, window, out=s_t)
        assert got is s_t
        assert torch.equal(s_t, expected)


@pytest.mark.parametrize("window", WINDOWS)
def test_swin_bias_closed_form_every_dtype(isa, window):
    rng = np.random.default_rng(5)
    wh, ww = window
    heads = 3
    for dtype in FLOAT_DTYPES:
        table = rng.standard_normal(((2 * wh - 1) * (2 * ww - 1), heads)).astype(dtype)
        exact = swin_bias_closed(table, wh, ww)
        got = posenc.swin_bias(table, window)
        assert got.dtype == np.dtype(dtype) and got.shape == (heads, wh * ww, wh * ww)
        np.testing.assert_array_equal(got.astype(np.float64), exact)
        scores = rng.standard_normal((2, 2, heads, wh * ww, wh * ww)).astype(dtype)
        added = posenc.add_swin_bias(scores, table, window)
        # the exact float64 sum rounded once to the dtype
        np.testing.assert_array_equal(added, round_once(scores.astype(np.float64) + exact, np.dtype(dtype)))


@settings(max_examples=60, deadline=None)
@given(wh=st.integers(1, 9), ww=st.integers(1, 17), heads=st.integers(1, 4), batch=st.integers(0, 3),
       dtype=st.sampled_from(FLOAT_DTYPES), seed=st.integers(0, 2**16), mode=st.sampled_from(["new", "inplace", "strided"]))
def test_add_swin_bias_matches_reference(native_isa, wh, ww, heads, batch, dtype, seed, mode):
    rng = np.random.default_rng(seed)
    n = wh * ww
    table = strided_view(rng.standard_normal(((2 * wh - 1) * (2 * ww - 1), heads)).astype(dtype), rng)
    scores = rng.standard_normal((batch, heads, n, n)).astype(dtype)
    expected = ref.add_swin_bias(scores, table, (wh, ww))
    if mode == "inplace":
        got = posenc.add_swin_bias(scores, table, (wh, ww), out=scores)
        assert got is scores
    elif mode == "strided":
        out = strided_view(np.full(scores.shape, 7, dtype), rng)
        got = posenc.add_swin_bias(strided_view(scores, rng), table, (wh, ww), out=out)
        assert got is out
    else:
        got = posenc.add_swin_bias(scores, table, (wh, ww))
    np.testing.assert_array_equal(got, expected)
    bias_out = strided_view(np.full((heads, n, n), 7, dtype), rng)
    np.testing.assert_array_equal(posenc.swin_bias(table, (wh, ww), out=bias_out), ref.swin_bias(table, (wh, ww)))


def test_add_swin_bias_large_threads(isa):
    """A Swin-B stage-1 sized batch (parallel blocks) equals the gather, for 1 and 2 threads."""
    rng = np.random.default_rng(9)
    table = rng.standard_normal((23 * 23, 4)).astype(np.float32)
    scores = rng.standard_normal((16, 4, 144, 144)).astype(np.float32)
    expected = (scores.astype(np.float64) + swin_bias_closed(table, 12, 12)).astype(np.float32)
    for threads in (1, 2):
        posenc.set_num_threads(threads)
        np.testing.assert_array_equal(posenc.add_swin_bias(scores, table, 12), expected)
    posenc.set_num_threads(None)


def test_swin_bias_binding_checks_what_it_is_given(isa):
    """native.swin_bias builds the lookup rows from Swin's table itself: from any strides, and it refuses a
    table of another shape, dtype or alignment, which it would otherwise read out of bounds."""
    native = posenc._backend.native
    rng = np.random.default_rng(4)
    wh, ww, heads = 3, 2, 2
    table = rng.standard_normal(((2 * wh - 1) * (2 * ww - 1), heads)).astype(np.float32)
    expected = swin_bias_closed(table, wh, ww).astype(np.float32)
    for t in (table, np.asfortranarray(table), np.ascontiguousarray(table[::-1])[::-1], strided_view(table, rng)):
        out = np.full((heads, wh * ww, wh * ww), 7, np.float32)
        native.swin_bias(None, out, t, wh, ww)
        np.testing.assert_array_equal(out, expected)
    out = np.full((heads, wh * ww, wh * ww), 7, np.float32)
    for bad in (table[1:], table[:, :1], table.reshape(-1), np.vstack([table, table])):
        with pytest.raises(ValueError, match="table must be"):
            native.swin_bias(None, out, bad, wh, ww)
    with pytest.raises(TypeError, match="dtype of out"):
        native.swin_bias(None, out, table.astype(np.float64), wh, ww)
    raw = np.frombuffer(bytearray(table.nbytes + 1), np.uint8)[1:].view(np.float32).reshape(table.shape)
    with pytest.raises(ValueError, match="aligned"):
        native.swin_bias(None, out, raw, wh, ww)
    with pytest.raises(ValueError, match="window sides"):
        native.swin_bias(None, out, table, 0, ww)
    assert (out == 7).all()


def test_add_swin_bias_table_rounded_to_scores_dtype(isa):
    table = np.random.default_rng(2).standard_normal((9, 2))  # float64
    scores = np.zeros((2, 4, 4), np.float16)
    got = posenc.add_swin_bias(scores, table, 2)
    np.testing.assert_array_equal(got, swin_bias_closed(table, 2, 2).astype(np.float16))


# ---------------------------------------------------------------- Swin V2 coordinates

def swinv2_closed(wh, ww, ph, pw):
    """Transformers' relative_coords_table steps, in float64."""
    ch = np.arange(-(wh - 1), wh, dtype=np.float64)
    cw = np.arange(-(ww - 1), ww, dtype=np.float64)
    t = np.stack(np.meshgrid(ch, cw, indexing="ij")).transpose(1, 2, 0).copy()
    t[..., 0] /= ph - 1
    t[..., 1] /= pw - 1
    t *= 8
    return np.sign(t) * np.log2(np.abs(t) + 1.0) / np.log2(8)


@pytest.mark.parametrize("window,pretrained", [((2, 2), None), ((7, 7), None), ((8, 8), None), ((12, 12), (8, 8)),
                                               ((24, 24), (12, 12)), ((3, 9), None), ((1, 4), (6, 6)), ((16, 8), (12, 6))])
def test_swinv2_coords_closed_form(window, pretrained):
    wh, ww = window
    ph, pw = pretrained or window
    exact = swinv2_closed(wh, ww, ph, pw)
    for dtype in FLOAT_DTYPES:
        got = posenc.swinv2_coords_table(window, pretrained_window=pretrained, dtype=dtype)
        assert got.shape == (2 * wh - 1, 2 * ww - 1, 2) and got.dtype == np.dtype(dtype)
        assert_close_to_float64(got, exact)
    # the centre is (0, 0) and the table is odd about it
    got = posenc.swinv2_coords_table(window, pretrained_window=pretrained, dtype=np.float64)
    np.testing.assert_array_equal(got[wh - 1, ww - 1], [0.0, 0.0])
    np.testing.assert_array_equal(got, -got[::-1, ::-1])


@needs(torch, transformers)
@pytest.mark.parametrize("window,pretrained", [((8, 8), (0, 0)), ((7, 7), (0, 0)), ((12, 12), (8, 8)),
                                               ((24, 24), (12, 12)), ((4, 6), (0, 0)), ((16, 8), (12, 6))])
def test_swinv2_coords_are_transformers(window, pretrained):
    """Within one float32 ulp of Transformers' float32 buffer (each of its steps rounds); the index is identical."""
    from transformers import Swinv2Config
    from transformers.models.swinv2.modeling_swinv2 import Swinv2SelfAttention

    module = Swinv2SelfAttention(Swinv2Config(), 32, 2, window, pretrained_window_size=list(pretrained))
    theirs = module.relative_coords_table.numpy()[0]
    got = posenc.swinv2_coords_table(window, pretrained_window=None if pretrained[0] == 0 else pretrained)
    np.testing.assert_array_max_ulp(got, theirs, 1)
    wh, ww = window
    np.testing.assert_array_equal(posenc.swin_relative_position_index(window),
                                  module.relative_position_index.numpy().reshape(wh * ww, wh * ww))


# ---------------------------------------------------------------- DETR

def detr_closed(valid, feats, temperature, normalize, scale):
    """DETR's PositionEmbeddingSine (facebookresearch/detr models/position_encoding.py) in float64, channels last."""
    not_mask = valid.astype(np.float64)
    y_embed = not_mask.cumsum(1)
    x_embed = not_mask.cumsum(2)
    if normalize:
        eps = 1e-6
        y_embed = y_embed / (y_embed[:, -1:, :] + eps) * scale
        x_embed = x_embed / (x_embed[:, :, -1:] + eps) * scale
    dim_t = np.arange(feats, dtype=np.float64)
    dim_t = temperature ** (2 * (dim_t // 2) / feats)
    pos_x = x_embed[:, :, :, None] / dim_t
    pos_y = y_embed[:, :, :, None] / dim_t
    pos_x = np.stack((np.sin(pos_x[:, :, :, 0::2]), np.cos(pos_x[:, :, :, 1::2])), axis=4).reshape(pos_x.shape)
    pos_y = np.stack((np.sin(pos_y[:, :, :, 0::2]), np.cos(pos_y[:, :, :, 1::2])), axis=4).reshape(pos_y.shape)
    return np.concatenate((pos_y, pos_x), axis=3)


def ragged_mask(rng, batch, h, w, holes=False):
    valid = np.zeros((batch, h, w), bool)
    for b in range(batch):
        valid[b, : rng.integers(0, h + 1), : rng.integers(0, w + 1)] = True
    if holes:  # not a DETR padding mask, but any mask must follow the same cumulative-sum rule
        valid ^= rng.random((batch, h, w)) < 0.2
    return valid


@pytest.mark.parametrize("normalize,scale", [(False, None), (True, None), (True, 1.0), (True, 7.5)])
@pytest.mark.parametrize("holes", [False, True])
def test_detr_sine_closed_form(isa, normalize, scale, holes):
    rng = np.random.default_rng(11)
    valid = ragged_mask(rng, 4, 9, 13, holes)
    for feats, temp in [(64, 10000), (2, 20), (6, 0.5)]:
        for dtype in FLOAT_DTYPES:
            got = posenc.detr_sine(valid, num_pos_feats=feats, temperature=temp, normalize=normalize, scale=scale,
                                   dtype=dtype)
            assert got.shape == (4, 9, 13, 2 * feats) and got.dtype == np.dtype(dtype)
            exact = detr_closed(valid, feats, temp, normalize, 2 * np.pi if scale is None else scale)
            np.testing.assert_array_equal(got, round_once(exact, np.dtype(dtype)))


def test_detr_sine_no_mask_is_all_valid(isa):
    for normalize in (False, True):
        full = posenc.detr_sine(np.ones((2, 5, 7), np.int64), num_pos_feats=8, normalize=normalize)
        np.testing.assert_array_equal(posenc.detr_sine(shape=(2, 5, 7), num_pos_feats=8, normalize=normalize), full)


@settings(max_examples=50, deadline=None)
@given(batch=st.integers(0, 3), h=st.integers(0, 12), w=st.integers(0, 12), feats=st.integers(1, 20),
       dtype=st.sampled_from(FLOAT_DTYPES), normalize=st.booleans(), mask=st.sampled_from(["ragged", "holes", "none"]),
       seed=st.integers(0, 2**16), mask_dtype=st.sampled_from([bool, np.int64, np.uint8, np.int32]))
def test_detr_sine_matches_reference(native_isa, batch, h, w, feats, dtype, normalize, mask, seed, mask_dtype):
    rng = np.random.default_rng(seed)
    kw = dict(num_pos_feats=2 * feats, normalize=normalize, dtype=dtype)
    if mask == "none":
        args, kw["shape"] = (), (batch, h, w)
    else:
        valid = ragged_mask(rng, batch, h, w, mask == "holes").astype(mask_dtype)
        args = (strided_view(valid, rng),)
    out = strided_view(np.full((batch, h, w, 4 * feats), 7, dtype), rng)
    got = posenc.detr_sine(*args, out=out, **kw)
    assert got is out
    np.testing.assert_array_equal(got, ref.detr_sine(*args, **kw))


@needs(torch, transformers)
@pytest.mark.parametrize("normalize,scale", [(False, None), (True, None), (True, 3.0)])
@pytest.mark.parametrize("feats,temperature", [(64, 10000), (128, 20), (8, 10000)])
def test_detr_sine_is_transformers(normalize, scale, feats, temperature):
    """Transformers' module, computed in float64, equals posenc's float64 within its pow/sin's last bits;
    in float32 (each of its steps rounding to float32) within that rounding."""
    from transformers.models.detr.modeling_detr import DetrSinePositionEmbedding

    module = DetrSinePositionEmbedding(feats, temperature, normalize, scale)
    valid = ragged_mask(np.random.default_rng(4), 3, 20, 30)
    shape = torch.Size((3, 256, 20, 30))
    got = posenc.detr_sine(valid, num_pos_feats=feats, temperature=temperature, normalize=normalize, scale=scale,
                           dtype=np.float64)
    mask = torch.from_numpy(valid.astype(np.int64))
    theirs64 = module(shape, "cpu", torch.float64, mask).permute(0, 2, 3, 1).numpy()
    max_angle = 30.0 if not normalize else module.scale
    np.testing.assert_allclose(got, theirs64, rtol=0, atol=16 * np.finfo(np.float64).eps * max(max_angle, 1))
    theirs32 = module(shape, "cpu", torch.float32, mask).permute(0, 2, 3, 1).numpy()
    got32 = posenc.detr_sine(valid, num_pos_feats=feats, temperature=temperature, normalize=normalize, scale=scale)
    np.testing.assert_allclose(got32, theirs32, rtol=0, atol=8 * 2.0**-24 * max(max_angle, 1))
    # no mask: shape=
    theirs = module(shape, "cpu", torch.float64).permute(0, 2, 3, 1).numpy()
    np.testing.assert_allclose(posenc.detr_sine(shape=(3, 20, 30), num_pos_feats=feats, temperature=temperature,
                                                normalize=normalize, scale=scale, dtype=np.float64),
                               theirs, rtol=0, atol=16 * np.finfo(np.float64).eps * max(max_angle, 1))


# ---------------------------------------------------------------- docs/vision.md

def test_docs_vision_examples_run():
    import pathlib
    import re

    doc = pathlib.Path(__file__).resolve().parents[1] / "docs" / "vision.md"
    if not doc.exists():
        pytest.skip("docs/vision.md not found next to the tests")
    blocks = re.findall(r"```python\n(.*?)```", doc.read_text(encoding="utf-8"), flags=re.S)
    assert blocks
    for i, block in enumerate(blocks):
        exec(compile(block, f"docs/vision.md[python block {i}]", "exec"), {})


# ---------------------------------------------------------------- posenc plot

@pytest.mark.parametrize("kind", ["swin", "detr"])
def test_plot_vision_heatmaps(tmp_path, capsys, kind):
    pytest.importorskip("matplotlib")
    from posenc import __main__ as cli

    assert cli.main(["plot", kind, "-o", str(tmp_path / f"{kind}.png")]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == f"wrote {tmp_path / f'{kind}.png'}"
    assert (tmp_path / f"{kind}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert cli.main(["plot", kind, "--figure", "similarity", "-o", str(tmp_path / "x.png")]) == 2
    assert "heatmap figure only" in capsys.readouterr().err


# ================================================================ hostile-input specs
# The valid baseline call of each public function and the role of each argument: the hostile table
# (tests/test_arguments.py), the differential fuzzer and the PyTorch/JAX/unpickled-input cases are
# generated from SPECS.

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
    # Positions divided past float64's range (NaN angles): the fuzzer found the tiny scale.
    s.raises("interpolation_scale-subnormal", ValueError, "interpolation_scale", interpolation_scale=1e-310)
    s.raises("base_size-huge", ValueError, "base_size", base_size=1e308, interpolation_scale=0.1)
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


# One call per executor-backed function, big enough to go parallel: tests/test_invariants.py runs
# each (thread-count determinism, backend routing, concurrency); out=None means a new result.
LARGE: Dict[str, Callable[[Any], Any]] = {
    "sinusoidal_nd": lambda out: posenc.sinusoidal_nd(BIG.pos.reshape(-1, 2), (64, 128), out=out),
    "sincos_2d": lambda out: posenc.sincos_2d(768, (48, 64), extra_tokens=1, base_size=16, out=out),
    "swin_bias": lambda out: posenc.swin_bias(BIG.table[:23 * 23, :8], 12, out=out),
    "add_swin_bias": lambda out: posenc.add_swin_bias(BIG.swin_scores, BIG.table[:13 * 13, :4], 7, out=out),
    "detr_sine": lambda out: posenc.detr_sine(BIG.detr_valid, normalize=True, out=out),
}
