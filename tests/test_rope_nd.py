"""Rotary embeddings on several axes: apply_rope_nd, rope_nd_cos_sin, rope_axial_freqs.

Checked against an independent float64 evaluation written pair by pair
(``exact_nd``), against apply_rope (one axis is 1-D RoPE), against the
NumPy reference (hypothesis over shapes, dtypes, strides, layouts, per-head
and per-batch arguments) and, when installed, against diffusers' FLUX code.

Tolerances are test_rope.py's: float32 results within 3·2^-24·|x| (plus half
an ulp) of the float64 evaluation, the others within half an ulp of it.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import posenc
from posenc import reference as ref

from helpers import FLOAT_DTYPES, Peer, assert_bitwise_equal, assert_close_to_float64, eps, needs, rand, strided_view
from hostile import BIG, Spec, byteswapped, empty_of, misaligned, negative_strides, stepped
from test_rope import in_place_variants
from test_vision import axes_dims_cases

# ---------------------------------------------------------------- an independent float64 evaluation


def exact_nd(x, coords, freqs, *, interleaved=False, seq_axis=-3, inverse=False):
    """float64 multi-axis RoPE, pair by pair and token by token (no broadcasting tricks).

    x [..., seq, heads, D] (or [..., heads, seq, D] for seq_axis=-2); coords [seq, axes] or [batch, seq, axes];
    freqs [axes, pairs] or [heads, axes, pairs].
    """
    x = np.asarray(x, np.float64)
    coords = np.asarray(coords, np.float64)
    freqs = np.asarray(freqs, np.float64)
    xs = np.moveaxis(x, x.ndim + seq_axis, 0)  # [seq, ...]
    y = xs.copy()
    pairs = freqs.shape[-1]
    for t in range(xs.shape[0]):
        for j in range(pairs):
            a, b = (2 * j, 2 * j + 1) if interleaved else (j, j + pairs)
            # θ for every element of y[t, ..., a]: depends on the batch (axis 0 of x) and the head.
            theta = np.zeros(y[t][..., a].shape)
            for idx in np.ndindex(theta.shape):
                full = (t,) + idx  # index into xs without the last axis
                orig = list(full[1:])
                orig.insert(x.ndim + seq_axis, t)  # back to x's axis order
                batch = orig[0] if coords.ndim == 3 and coords.shape[0] > 1 else 0
                crow = coords[batch, t] if coords.ndim == 3 else coords[t]
                if freqs.ndim == 3:
                    head = orig[x.ndim - 2] if seq_axis == -3 else orig[x.ndim - 3]
                    f = freqs[head]
                else:
                    f = freqs
                theta[idx] = sum(crow[k] * f[k, j] for k in range(f.shape[0]))
            c, s = np.cos(theta), np.sin(theta)
            if inverse:
                s = -s
            u, v = xs[t][..., a], xs[t][..., b]
            y[t][..., a] = u * c - v * s
            y[t][..., b] = v * c + u * s
    return np.moveaxis(y, 0, x.ndim + seq_axis)


def check(got, x, exact, max_angle=1e4):
    """float32: 3·2^-24·max|x| + half an ulp; others: half an ulp of the float64 result, plus float64 slack
    for the rounding of angles up to ``max_angle`` (the kernel advances grid rows by the angle-addition
    identity, exact to the true angle, where a direct evaluation rounds θ first: up to half an ulp of θ)."""
    x64 = np.asarray(x, np.float64)
    if got.dtype == np.float32:
        bound = 3 * 2.0**-24 * np.abs(x64).max(initial=0) * np.sqrt(2) + 0.5 * eps(np.float32) * np.abs(exact) + 1e-30
        err = np.abs(got.astype(np.float64) - exact)
        assert (err <= bound).all(), f"worst {err.max():.3g}"
    else:
        slack = 1e-12 + 8 * np.finfo(np.float64).eps * max_angle
        assert_close_to_float64(got, exact, slack * (1 + 2 * np.abs(x64).max(initial=0)))


def grid(h, w, t=None):
    """Coords of an h×w patch grid in row-major order ([h·w, 2], or [t·h·w, 3] with a time axis)."""
    if t is None:
        return np.stack(np.meshgrid(np.arange(h), np.arange(w), indexing="ij"), -1).reshape(-1, 2)
    return np.stack(np.meshgrid(np.arange(t), np.arange(h), np.arange(w), indexing="ij"), -1).reshape(-1, 3)


# ---------------------------------------------------------------- rope_axial_freqs


def test_axial_freqs_closed_form():
    f = posenc.rope_axial_freqs((16, 56, 56), base=10000.0)
    assert f.shape == (3, 64) and f.dtype == np.float64
    blocks = [(0, 8, 16), (8, 36, 56), (36, 64, 56)]
    for a, (lo, hi, d) in enumerate(blocks):
        want = np.array([10000.0 ** (-2 * i / d) for i in range(d // 2)])
        np.testing.assert_allclose(f[a, lo:hi], want, rtol=1e-15)
        assert (np.delete(f[a], np.arange(lo, hi)) == 0).all()


def test_axial_freqs_one_axis_is_rope_inv_freq():
    w, _ = posenc.rope_inv_freq(64, base=500000.0)
    np.testing.assert_array_equal(posenc.rope_axial_freqs((64,), base=500000.0)[0], w)


# ---------------------------------------------------------------- closed forms, on every ISA


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("interleaved", [False, True])
def test_against_exact(isa, dtype, interleaved):
    x = rand(2, 12, 3, 20, dtype=dtype)  # 8 pairs rotate (2·8 ≤ 20), 4 features pass through
    coords = grid(3, 4) * 1.0
    coords[5] = (7.25, -3.5)  # fractional and negative ids
    freqs = rand(2, 8).astype(np.float64)
    got = posenc.apply_rope_nd(x, coords, freqs, interleaved=interleaved)
    check(got, x, exact_nd(x, coords, freqs, interleaved=interleaved))
    assert (got[..., 16:] == x[..., 16:]).all()


@pytest.mark.parametrize("seq_axis", [-3, -2])
def test_per_head_and_per_batch_against_exact(isa, seq_axis):
    x = rand(2, 6, 3, 8) if seq_axis == -3 else rand(2, 3, 6, 8)
    coords = np.stack([grid(2, 3), grid(2, 3)[::-1] * 5 + 1])
    freqs = rand(3, 2, 4).astype(np.float64)  # [heads, axes, pairs]
    for inverse in (False, True):
        got = posenc.apply_rope_nd(x, coords, freqs, seq_axis=seq_axis, inverse=inverse)
        check(got, x, exact_nd(x, coords, freqs, seq_axis=seq_axis, inverse=inverse))


@pytest.mark.parametrize("interleaved", [False, True])
def test_one_axis_is_apply_rope(isa, interleaved):
    x = rand(2, 40, 4, 64)
    pos = np.arange(40) * 3 + 7
    w, _ = posenc.rope_inv_freq(48, base=10000.0)
    got = posenc.apply_rope_nd(x, pos[:, None], posenc.rope_axial_freqs((48,)), interleaved=interleaved)
    want = posenc.apply_rope(x, pos, inv_freq=w, rotary_dim=48, interleaved=interleaved)
    np.testing.assert_allclose(got, want, rtol=0, atol=3 * 2.0**-24 * np.abs(x).max() * 2)


def test_zero_frequency_axis_is_identity(isa):
    x = rand(1, 12, 2, 16)
    coords = np.concatenate([grid(3, 4), np.full((12, 1), 1e6)], axis=1)  # a third axis with zero freqs
    f3 = np.zeros((3, 8))
    f3[:2] = posenc.rope_axial_freqs((8, 8))
    f2 = posenc.rope_axial_freqs((8, 8))
    np.testing.assert_array_equal(posenc.apply_rope_nd(x, coords, f3), posenc.apply_rope_nd(x, coords[:, :2], f2))
    np.testing.assert_array_equal(posenc.apply_rope_nd(x, coords, np.zeros((3, 8))), x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_inverse_undoes(isa, dtype):
    x = rand(2, 64, 4, 32, dtype=dtype)
    coords = grid(8, 8) * 0.5
    freqs = posenc.rope_axial_freqs((16, 16), base=100.0)
    y = posenc.apply_rope_nd(x, coords, freqs)
    back = posenc.apply_rope_nd(y, coords, freqs, inverse=True)
    np.testing.assert_allclose(back, x, rtol=0, atol=8 * eps(dtype) * np.abs(x).max())


def test_in_place_strided(isa):
    buf = rand(2, 9, 3 * 16)  # a fused QKV buffer: rotate the K slice in place
    k = buf.reshape(2, 9, 3, 16)[:, ::-1, 1:2, :]
    coords = grid(3, 3)
    freqs = posenc.rope_axial_freqs((8, 8))
    orig = k.copy()
    untouched = buf.reshape(2, 9, 3, 16)[:, :, [0, 2]].copy()
    got = posenc.apply_rope_nd(k, coords, freqs, out=k)
    assert got is k
    check(k, orig, exact_nd(orig, coords, freqs))
    np.testing.assert_array_equal(buf.reshape(2, 9, 3, 16)[:, :, [0, 2]], untouched)


def test_cos_sin_closed_form(isa):
    coords = np.array([[[0.0, 1.0], [2.5, -1.0]]])
    freqs = np.array([[1.0, 0.0, 0.25], [0.0, 2.0, 1.0]])
    c, s = posenc.rope_nd_cos_sin(coords, freqs, dtype=np.float64)
    theta = np.array([[[0.0, 2.0, 1.0], [2.5, -2.0, 0.625 - 1.0]]])
    np.testing.assert_allclose(c, np.cos(theta), rtol=0, atol=1e-15)
    np.testing.assert_allclose(s, np.sin(theta), rtol=0, atol=1e-15)
    per_head = np.stack([freqs, 2 * freqs])
    c, s = posenc.rope_nd_cos_sin(coords[0], per_head, dtype=np.float64)
    assert c.shape == (2, 2, 3)
    np.testing.assert_allclose(s[1], np.sin(2 * theta[0]), rtol=0, atol=1e-15)


# ---------------------------------------------------------------- exactness at large and fractional coordinates


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_grid_walk_exact_at_large_coords(isa, dtype):
    """Patch-grid tokens (each a unit step from the one before, where the kernel advances angles by the
    angle-addition identity) at coordinates near 2^20, against float64."""
    t, h, w = 3, 5, 40
    coords = grid(h, w, t).astype(np.float64) + (2**20 - 7, 2**20 - 100, 2**20 - 50)
    freqs = posenc.rope_axial_freqs((16, 56, 56), base=10000.0)
    x = rand(2, t * h * w, 3, 128, dtype=dtype)
    for interleaved in (False, True):
        got = posenc.apply_rope_nd(x, coords, freqs, interleaved=interleaved)
        check(got, x, exact_nd(x, coords, freqs, interleaved=interleaved), max_angle=2**21)


def test_float32_exact_at_large_coords(isa):
    """Coordinates up to 2^20 and fractional ids: float32 results within 3·2^-24·|x| of float64."""
    rng = np.random.default_rng(3)
    n = 256
    coords = np.stack([rng.integers(0, 2**20, n), rng.integers(0, 2**20, n) + rng.random(n).round(3),
                       np.full(n, 2**20)], -1).astype(np.float64)
    freqs = posenc.rope_axial_freqs((16, 56, 56), base=10000.0)
    x = rand(1, n, 2, 128)
    got = posenc.apply_rope_nd(x, coords, freqs, interleaved=True)
    exact = exact_nd(x, coords, freqs, interleaved=True)
    err = np.abs(got.astype(np.float64) - exact)
    # Per pair: 3·2^-24·sqrt(u² + v²) (cpp/src/rope.cpp), plus the final rounding.
    x64 = x.astype(np.float64)
    norm = np.sqrt(x64[..., 0::2] ** 2 + x64[..., 1::2] ** 2).repeat(2, -1)
    assert (err <= 3 * 2.0**-24 * norm + 0.5 * eps(np.float32) * np.abs(exact) + 1e-30).all(), err.max()


# ---------------------------------------------------------------- native against the reference


@st.composite
def nd_cases(draw):
    dtype = draw(st.sampled_from(FLOAT_DTYPES))
    seq_axis = draw(st.sampled_from([-3, -2]))
    batch, seq, heads = draw(st.integers(1, 3)), draw(st.integers(0, 40)), draw(st.integers(1, 4))
    axes, pairs = draw(st.integers(1, 4)), draw(st.integers(1, 9))
    head_dim = 2 * pairs + draw(st.integers(0, 3))
    per_head = draw(st.booleans())
    batched = draw(st.booleans()) and batch > 1
    shape = (batch, seq, heads, head_dim) if seq_axis == -3 else (batch, heads, seq, head_dim)
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(dtype)
    if draw(st.booleans()):
        x = strided_view(x, rng)
    cshape = (batch, seq, axes) if batched else (seq, axes)
    kind = draw(st.sampled_from(["walk", "int", "float"]))
    if kind == "walk":  # tokens of a grid: most rows one unit step along one axis (the kernel's recurrence)
        steps = np.zeros(cshape)
        axis = rng.integers(0, axes, cshape[:-1])
        np.put_along_axis(steps, axis[..., None], 1.0, -1)
        jumps = rng.random(cshape[:-1]) < 0.1
        steps[jumps] = rng.uniform(-500, 500, (int(jumps.sum()), axes))
        coords = np.cumsum(steps, axis=-2) + rng.uniform(-2**20, 2**20, cshape[:-2] + (1, axes)).round()
    elif kind == "int":
        itype = draw(st.sampled_from([np.int32, np.int64, np.uint16]))
        coords = rng.integers(0 if itype == np.uint16 else -50, 1000, cshape).astype(itype)
    else:
        coords = rng.uniform(-100, 100, cshape).astype(draw(st.sampled_from([np.float32, np.float64])))
    freqs = rng.uniform(-1, 1, (heads, axes, pairs) if per_head else (axes, pairs))
    kw = dict(interleaved=draw(st.booleans()), seq_axis=seq_axis, inverse=draw(st.booleans()))
    return x, coords, freqs, kw, draw(st.booleans())


@settings(max_examples=60, deadline=None)
@given(case=nd_cases())
def test_native_matches_reference(native_isa, case):
    x, coords, freqs, kw, in_place = case
    want = ref.apply_rope_nd(x, coords, freqs, **kw)
    if in_place:
        got = posenc.apply_rope_nd(x, coords, freqs, out=x, **kw)
        assert got is x
    else:
        got = posenc.apply_rope_nd(x, coords, freqs, **kw)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert_near_reference(got, want, x, coords, freqs)


def assert_near_reference(got, want, x, coords, freqs):
    """Native within one rounding of the reference: float32 per the bound of cpp/src/rope.cpp; the others one ulp
    (a float64 difference of the angles' trig, ~1e-16·|θ|, may flip a rounding) plus that difference."""
    xmax = np.abs(np.asarray(x, np.float64)).max(initial=0)
    tmax = np.abs(np.asarray(coords, np.float64)).max(initial=0) * np.abs(freqs).max(initial=0) * freqs.shape[-2]
    w64 = want.astype(np.float64)
    slack = (1e-14 + 8 * np.finfo(np.float64).eps * tmax) * (1 + 2 * xmax)
    if got.dtype == np.float32:
        tol = 3 * 2.0**-24 * 2 * xmax + eps(np.float32) * np.abs(w64) + slack
    else:
        tol = eps(got.dtype) * np.abs(w64) + slack
    err = np.abs(got.astype(np.float64) - w64)
    assert (err <= tol).all(), f"worst {err.max():.3g}"


@settings(max_examples=30, deadline=None)
@given(sizes=st.lists(st.integers(1, 20), min_size=1, max_size=3), dims=st.lists(st.integers(1, 10), min_size=3, max_size=3),
       runs=st.sampled_from(["blocks", "sections", "mixed"]), offset=st.integers(-500, 500),
       dtype=st.sampled_from(FLOAT_DTYPES), seed=st.integers(0, 2**16))
def test_cos_sin_axial_grid_is_the_per_row_kernel(native_isa, sizes, dims, runs, offset, dtype, seed):
    """Axial frequencies on grid coordinates (shuffled, offset) come from a table per run of one axis'
    pairs: bit for bit the per-element kernel's values, which a half-integer row elsewhere forces."""
    rng = np.random.default_rng(seed)
    axes = len(sizes)
    freqs = posenc.rope_axial_freqs([2 * d for d in dims[:axes]])
    pairs = freqs.shape[1]
    if runs == "sections":  # more runs of one axis than the tables take (4): the per-row kernel throughout
        freqs = freqs[:, rng.permutation(pairs)]
    elif runs == "mixed":  # a pair turning on two axes: not axial
        freqs[:, 0] = freqs[0, 0] if axes > 1 else freqs[:, 0]
    grid = np.stack(np.meshgrid(*[np.arange(n) for n in sizes], indexing="ij"), -1).reshape(-1, axes) + offset
    rows = max(2**17 // pairs + 1, len(grid))  # 2^17 values or more: the tables' path
    coords = np.resize(grid, (rows, axes))[rng.permutation(rows)]
    got = posenc.rope_nd_cos_sin(coords, freqs, dtype=dtype)
    per_row = posenc.rope_nd_cos_sin(np.concatenate([coords, np.full((1, axes), 0.5)]), freqs, dtype=dtype)
    for g, w in zip(got, per_row):
        assert_bitwise_equal(g, w[:-1])


@settings(max_examples=30, deadline=None)
@given(case=nd_cases())
def test_cos_sin_native_matches_reference(native_isa, case):
    x, coords, freqs, kw, _ = case
    dtype = x.dtype
    got = posenc.rope_nd_cos_sin(coords, freqs, dtype=dtype)
    want = ref.rope_nd_cos_sin(coords, freqs, dtype=dtype)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        # The same angles up to the float64 rounding of the sum (the kernel may fuse its multiply-adds: an ulp
        # of the largest |θ| per axis), rounded once: within an ulp of the reference.
        tmax = np.abs(coords.astype(np.float64)).max(initial=0) * np.abs(freqs).max() * freqs.shape[-2]
        atol = eps(dtype) + 8 * np.finfo(np.float64).eps * tmax + 1e-15
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=0, atol=atol)


# ---------------------------------------------------------------- the peer: diffusers' FLUX code


torch = Peer("torch")
emb = Peer("diffusers.models.embeddings")


@needs(torch, emb)
def test_flux_matches_diffusers(isa):
    from diffusers.models.transformers.transformer_flux import FluxPosEmbed

    h, w, heads, txt = 6, 5, 2, 3
    ids = torch.zeros(txt + h * w, 3, dtype=torch.float64)
    ids[txt:, 1] = torch.arange(h).repeat_interleave(w).double()
    ids[txt:, 2] = torch.arange(w).repeat(h).double()
    cos, sin = FluxPosEmbed(theta=10000, axes_dim=[16, 56, 56])(ids)
    x = torch.randn(1, heads, txt + h * w, 128, dtype=torch.float64)
    want = emb.apply_rotary_emb(x, (cos, sin), use_real=True, use_real_unbind_dim=-1).numpy()
    got = posenc.apply_rope_nd(x.numpy(), ids.numpy(), posenc.rope_axial_freqs((16, 56, 56)), interleaved=True,
                               seq_axis=-2)
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-6)


# ---------------------------------------------------------------- the kernel's table source (apply_rope(cos=, sin=) builds on it)


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_table_source_is_apply_rope(native_isa, interleaved, dtype):
    """posenc._native.apply_rope_tables (of x, and of k with it) with float64 tables of θ = p·ω rotates as apply_rope does."""
    from posenc._backend import native

    q, k = rand(2, 33, 4, 20, dtype=dtype), rand(2, 33, 2, 20, dtype=dtype)
    pos = np.stack([np.arange(33) * 2 + 5, np.arange(33)[::-1]]).astype(np.float64)  # per batch
    w, _ = posenc.rope_inv_freq(16, base=100.0)
    theta = pos[..., None] * w  # [2, 33, 8]
    scale = 1.5
    for inverse in (False, True):
        want_q, want_k = ref.apply_rope_qk(q, k, pos, inv_freq=w, rotary_dim=16, interleaved=interleaved,
                                           attention_scaling=scale, inverse=inverse)
        got = np.empty_like(q)
        native.apply_rope_tables(q, got, 1, True, np.cos(theta), np.sin(theta), scale, interleaved, inverse)
        assert_near_reference(got, want_q, q * scale, pos, w[None])
        gq, gk = q.copy(), k.copy()
        native.apply_rope_tables(gq, gq, 1, True, np.cos(theta), np.sin(theta), scale, interleaved, inverse, gk, gk)
        assert_near_reference(gq, want_q, q * scale, pos, w[None])
        assert_near_reference(gk, want_k, k * scale, pos, w[None])
    with pytest.raises(ValueError, match="cos"):
        native.apply_rope_tables(q, got, 1, True, np.cos(theta[:1]), np.sin(theta[:1]), 1.0, False, False)
    with pytest.raises(ValueError, match="cos"):
        native.apply_rope_tables(q, got, 1, True, np.cos(theta).astype(np.float32), np.sin(theta), 1.0, False, False)
    # The optional second operand: k with out_k, k's batch and rows, and room for the rotated pairs.
    tables = (1, True, np.cos(theta), np.sin(theta), 1.0, False, False)
    with pytest.raises(ValueError, match="k and out_k"):
        native.apply_rope_tables(q, got, *tables, k=k)
    with pytest.raises(ValueError, match="same batch and seq"):
        native.apply_rope_tables(q, got, *tables, k[:, :32], k[:, :32].copy())
    with pytest.raises(ValueError, match="fit k's head_dim 8"):
        native.apply_rope_tables(q, got, *tables, k[..., :8], k[..., :8].copy())


# ================================================================ hostile-input specs
# The valid baseline call of each public function and the role of each argument: the hostile table
# (tests/test_arguments.py), the differential fuzzer and the PyTorch/JAX/unpickled-input cases are
# generated from SPECS.

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


# One call per executor-backed function, big enough to go parallel: tests/test_invariants.py runs
# each (thread-count determinism, backend routing, concurrency); out=None means a new result.
LARGE: Dict[str, Callable[[Any], Any]] = {
    "apply_rope_nd": lambda out: posenc.apply_rope_nd(BIG.x, np.stack([BIG.pos % 64, BIG.pos // 64], -1), BIG.axial, out=out),
    "rope_nd_cos_sin": lambda out: posenc.rope_nd_cos_sin(np.stack([BIG.pos % 64, BIG.pos // 64], -1), BIG.axial),
}
