"""The rotary family: frequencies of every scaling scheme, the fused rotation on every ISA, M-RoPE, bad input.

Tolerances. Angles are exact to float64 rounding in both backends. float64,
float16 and bfloat16 results are rotated in float64 and rounded once: within
half an ulp of an independent float64 evaluation (plus float64 slack).
float32 results are rotated in float32 with cos/sin rounded to float32 once:
per output |error| <= 2^-22·(|u| + |v|)·a + half an ulp, a = attention scaling
(the bound proven in cpp/src/rope.cpp is ~3·2^-24·max(|u|, |v|)).
"""

from __future__ import annotations

import math
import types
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import pytest
from hypothesis import given, strategies as st

import posenc
from posenc import reference as ref

from helpers import FLOAT_DTYPES, assert_close_to_float64, eps, rand, strided_view
from hostile import (BIG, HUGE, SIZE_ERRORS, Case, Check, Raises, Same, Spec, byteswapped, empty_of, finite_or_refused,
                     misaligned, negative_strides, stepped)

# ---------------------------------------------------------------- an independent float64 evaluation


def exact_rope(x, pos, inv_freq, *, rotary_dim=None, interleaved=False, seq_axis=-3, scale=1.0, inverse=False,
               pair_axis=None):
    """float64 RoPE written pair by pair, independently of posenc.reference.

    pos: [seq] or [batch, seq] (or [3, batch, seq] with pair_axis).
    """
    x = np.asarray(x, np.float64)
    xs = np.moveaxis(x, x.ndim + seq_axis, -2)  # [..., seq, dim] with heads (if -3) moved before seq
    y = xs.copy()
    rd = x.shape[-1] if rotary_dim is None else rotary_dim
    half = rd // 2
    pos = np.asarray(pos, np.float64)
    for j in range(half):
        if pair_axis is None:
            p = pos
        else:
            p = pos[pair_axis[j]]
        theta = p * inv_freq[j]  # [seq] or [batch, seq]
        c, s = scale * np.cos(theta), scale * np.sin(theta)
        if inverse:
            s = -s
        if theta.ndim == 2:  # [batch, seq] → broadcast over the axes between batch and seq
            shape = (theta.shape[0],) + (1,) * (xs.ndim - 3) + (theta.shape[1],)
            c, s = c.reshape(shape), s.reshape(shape)
        a, b = (2 * j, 2 * j + 1) if interleaved else (j, j + half)
        u, v = xs[..., a], xs[..., b]
        y[..., a] = u * c - v * s
        y[..., b] = v * c + u * s
    return np.moveaxis(y, -2, x.ndim + seq_axis)


def check_rotation(got, x, exact, scale=1.0, max_angle=1e7):
    """The tolerance of the module docstring; float64 slack for the rounding of angles up to ``max_angle``."""
    x64 = np.asarray(x, np.float64)
    if got.dtype == np.float32:
        bound = 2.0**-22 * scale * 2 * np.abs(x64).max(initial=0) + 0.5 * eps(np.float32) * np.abs(exact) + 1e-30
        err = np.abs(got.astype(np.float64) - exact)
        assert (err <= bound).all(), f"worst {err.max():.3g}"
    else:
        slack = (1e-13 + 8 * np.finfo(np.float64).eps * max_angle) * (1 + 2 * np.abs(x64).max(initial=0)) * max(scale, 1)
        assert_close_to_float64(got, exact, slack)


# ---------------------------------------------------------------- frequencies: closed forms and published values


def default_freqs(dim, base):
    return np.array([base ** (-2 * j / dim) for j in range(dim // 2)])


def test_default_frequencies():
    w, a = posenc.rope_inv_freq(8)
    np.testing.assert_allclose(w, [1, 0.1, 0.01, 0.001], rtol=1e-15)
    assert a == 1.0
    w, _ = posenc.rope_inv_freq(128, base=500000.0)
    np.testing.assert_allclose(w, default_freqs(128, 500000.0), rtol=1e-14)
    for spelled in ({"rope_type": "default"}, {"type": "default"}, {"rope_type": "mrope"},
                    {"rope_type": "default", "rope_theta": 500000.0}):
        np.testing.assert_array_equal(posenc.rope_inv_freq(128, base=500000.0, scaling=spelled)[0], w)


def test_linear():
    w, a = posenc.rope_inv_freq(64, scaling={"type": "linear", "factor": 4.0})
    np.testing.assert_allclose(w, default_freqs(64, 1e4) / 4, rtol=1e-14)
    assert a == 1.0


def test_dynamic_ntk():
    """base' = base·(s·L/L0 − (s − 1))^(d/(d−2)) (bloc97/emozilla; transformers' dynamic)."""
    dim, s, L0 = 128, 2.0, 4096
    sc = {"rope_type": "dynamic", "factor": s, "original_max_position_embeddings": L0}
    np.testing.assert_allclose(posenc.rope_inv_freq(dim, scaling=sc)[0], default_freqs(dim, 1e4), rtol=1e-14)
    np.testing.assert_allclose(posenc.rope_inv_freq(dim, scaling={**sc, "seq_len": 1000})[0],
                               default_freqs(dim, 1e4), rtol=1e-14)
    L = 10000
    new_base = 1e4 * (s * L / L0 - (s - 1)) ** (dim / (dim - 2))
    np.testing.assert_allclose(posenc.rope_inv_freq(dim, scaling={**sc, "seq_len": L})[0],
                               default_freqs(dim, new_base), rtol=1e-13)
    # one pair: ω_0 = 1 whatever the base
    assert posenc.rope_inv_freq(2, scaling={**sc, "seq_len": L})[0].tolist() == [1.0]


def yarn_paper(dim, base, factor, original, beta_fast=32.0, beta_slow=1.0, truncate=True):
    """YaRN's ramp written from the paper's definitions: r_j = L/λ_j = L·ω_j/(2π) rotations of
    pair j over the original context; the reference code ramps linearly in j between the
    indices where r_j = β (fast) and r_j = α (slow), floor/ceil when truncating."""
    w = default_freqs(dim, base)
    j_of = lambda r: (dim / 2) * math.log(original / (2 * math.pi * r)) / math.log(base)  # r_j = r ⇔ j = j_of(r)
    lo, hi = j_of(beta_fast), j_of(beta_slow)
    if truncate:
        lo, hi = math.floor(lo), math.ceil(hi)
    lo, hi = max(lo, 0), min(hi, dim - 1)
    out = []
    for j in range(dim // 2):
        ramp = min(max((j - lo) / (hi - lo), 0.0), 1.0)  # 0: extrapolate (keep ω), 1: interpolate (ω/s)
        out.append(w[j] * (1 - ramp) + w[j] / factor * ramp)
    return np.array(out)


def test_yarn_qwen25_published():
    """Qwen2.5-7B-Instruct's documented YaRN: factor 4, original 32768, rope_theta 1e6, head_dim 128.
    The attention factor is 0.1·ln(4) + 1 = 1.1386294361 (YaRN eq. 22); pairs 0..23 keep ω
    (j(β=32) = 23.6 → 23), pairs from 40 on are divided by 4 (j(α=1) = 39.6 → 40)."""
    sc = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    w, a = posenc.rope_inv_freq(128, base=1e6, scaling=sc)
    assert a == pytest.approx(1.1386294361119891, abs=1e-15)
    base = default_freqs(128, 1e6)
    np.testing.assert_allclose(w[:24], base[:24], rtol=1e-14)
    np.testing.assert_allclose(w[40:], base[40:] / 4, rtol=1e-14)
    np.testing.assert_allclose(w, yarn_paper(128, 1e6, 4.0, 32768), rtol=1e-13)
    np.testing.assert_allclose(posenc.rope_inv_freq(128, base=1e6, scaling={**sc, "truncate": False})[0],
                               yarn_paper(128, 1e6, 4.0, 32768, truncate=False), rtol=1e-13)


def test_yarn_deepseek_mscale():
    """DeepSeek-V3 (qk_rope_head_dim 64, rope_theta 10000, factor 40, original 4096, beta 32/1,
    mscale = mscale_all_dim = 1): the cos/sin scaling is mscale(40, 1)/mscale(40, 1) = 1 (the
    model applies mscale² to the softmax scale instead); DeepSeek-V2-Lite's 0.707/0.707 too.
    One-sided ratio: mscale 0.707 alone over mscale_all_dim's default 0."""
    sc = {"rope_type": "yarn", "factor": 40, "original_max_position_embeddings": 4096, "beta_fast": 32,
          "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}
    w, a = posenc.rope_inv_freq(64, scaling=sc)
    assert a == 1.0
    np.testing.assert_allclose(w, yarn_paper(64, 1e4, 40.0, 4096), rtol=1e-13)
    assert posenc.rope_inv_freq(64, scaling={**sc, "mscale": 0.707, "mscale_all_dim": 0.707})[1] == 1.0
    plain = {k: v for k, v in sc.items() if k not in ("mscale", "mscale_all_dim")}
    assert posenc.rope_inv_freq(64, scaling=plain)[1] == pytest.approx(0.1 * math.log(40) + 1, abs=1e-15)
    ratio = (0.1 * 1.0 * math.log(40) + 1) / (0.1 * 0.707 * math.log(40) + 1)
    assert posenc.rope_inv_freq(64, scaling={**sc, "mscale_all_dim": 0.707})[1] == pytest.approx(ratio, abs=1e-15)
    assert posenc.rope_inv_freq(64, scaling={**plain, "attention_factor": 0.8})[1] == 0.8
    # gpt-oss: factor 32, original 4096, truncate false, rope_theta 150000, head_dim 64
    gpt_oss = {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096, "beta_fast": 32.0,
               "beta_slow": 1.0, "truncate": False}
    np.testing.assert_allclose(posenc.rope_inv_freq(64, base=150000.0, scaling=gpt_oss)[0],
                               yarn_paper(64, 150000.0, 32.0, 4096, truncate=False), rtol=1e-13)


LLAMA31 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
           "original_max_position_embeddings": 8192}


def test_llama3_published_structure():
    """Llama 3.1 8B (rope_theta 500000, head_dim 128, Meta's apply_scaling): wavelengths below
    8192/4 = 2048 keep ω (pairs 0..28), above 8192 divide by 8 (pairs 35..63), pairs 29..34
    blend with smooth = (8192/λ − 1)/(4 − 1)."""
    w, a = posenc.rope_inv_freq(128, base=500000.0, scaling=LLAMA31)
    base = default_freqs(128, 500000.0)
    assert a == 1.0
    np.testing.assert_allclose(w[:29], base[:29], rtol=1e-14)
    np.testing.assert_allclose(w[35:], base[35:] / 8, rtol=1e-14)
    for j in range(29, 35):
        lam = 2 * math.pi / base[j]
        smooth = (8192 / lam - 1) / 3
        assert 0 < smooth < 1
        assert w[j] == pytest.approx((1 - smooth) * base[j] / 8 + smooth * base[j], rel=1e-14)
    # Llama 3.2 1B/3B: factor 32, same bands.
    w32, _ = posenc.rope_inv_freq(64, base=500000.0, scaling={**LLAMA31, "factor": 32.0})
    np.testing.assert_allclose(w32[-1], default_freqs(64, 500000.0)[-1] / 32, rtol=1e-14)


def test_longrope_phi3():
    """Phi-3-mini-128k: head_dim 96, original 4096, max 131072 (factor 32): attention scaling
    sqrt(1 + ln 32 / ln 4096) = 1.1902380714238083 (Phi-3's `scaling_factor`); long factors
    only when seq_len > 4096."""
    rng = np.random.default_rng(0)
    short, long = list(1 + rng.random(48)), list(1 + 10 * rng.random(48))
    sc = {"type": "longrope", "short_factor": short, "long_factor": long, "original_max_position_embeddings": 4096,
          "factor": 32.0}
    w, a = posenc.rope_inv_freq(96, scaling=sc)
    assert a == pytest.approx(1.1902380714238083, abs=1e-15)
    base = default_freqs(96, 1e4)
    np.testing.assert_allclose(w, base / np.array(short), rtol=1e-14)
    np.testing.assert_allclose(posenc.rope_inv_freq(96, scaling={**sc, "seq_len": 4096})[0], w, rtol=0)
    np.testing.assert_allclose(posenc.rope_inv_freq(96, scaling={**sc, "seq_len": 4097})[0], base / np.array(long),
                               rtol=1e-14)
    su = {**sc, "type": "su"}
    assert posenc.rope_inv_freq(96, scaling=su)[1] == a
    assert posenc.rope_inv_freq(96, scaling={**sc, "attention_factor": 1.5})[1] == 1.5
    assert posenc.rope_inv_freq(96, scaling={**sc, "factor": 1.0})[1] == 1.0


# ---------------------------------------------------------------- frequencies: parity with transformers


def hf_config(head_dim, params, max_pos):
    """The attributes transformers' ROPE_INIT_FUNCTIONS read."""
    cfg = types.SimpleNamespace(head_dim=head_dim, hidden_size=head_dim * 4, num_attention_heads=4,
                                max_position_embeddings=max_pos, rope_parameters=dict(params))
    cfg.standardize_rope_params = lambda: None
    return cfg


rng_ = np.random.default_rng(7)
PHI3_SHORT, PHI3_LONG = [float(v) for v in 1 + rng_.random(48)], [float(v) for v in 1 + 20 * rng_.random(48)]
HF_CASES = [
    # (name, head_dim, base, our scaling, hf extra params, max_position_embeddings, seq_len)
    ("llama3.1-8b", 128, 500000.0, LLAMA31, {}, 131072, None),
    ("llama3.2-1b", 64, 500000.0, {**LLAMA31, "factor": 32.0}, {}, 131072, None),
    ("linear", 128, 10000.0, {"rope_type": "linear", "factor": 4.0}, {}, 16384, None),
    ("dynamic-short", 128, 10000.0, {"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 4096},
     {}, 4096, 1000),
    ("dynamic-long", 128, 10000.0, {"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 4096},
     {}, 4096, 12345),
    ("qwen2.5-yarn", 128, 1e6, {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}, {},
     131072, None),
    ("deepseek-v3", 64, 10000.0, {"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096,
                                  "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0},
     {}, 163840, None),
    ("deepseek-v2-lite", 64, 10000.0, {"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096,
                                       "mscale": 0.707, "mscale_all_dim": 0.707}, {}, 163840, None),
    ("gpt-oss", 64, 150000.0, {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096,
                               "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False}, {}, 131072, None),
    ("yarn-attention-factor", 128, 10000.0, {"rope_type": "yarn", "factor": 8.0,
                                             "original_max_position_embeddings": 4096, "attention_factor": 0.9},
     {}, 32768, None),
    ("phi3-short", 96, 10000.0, {"rope_type": "longrope", "short_factor": PHI3_SHORT, "long_factor": PHI3_LONG,
                                 "original_max_position_embeddings": 4096, "factor": 32.0}, {}, 131072, 4096),
    ("phi3-long", 96, 10000.0, {"rope_type": "longrope", "short_factor": PHI3_SHORT, "long_factor": PHI3_LONG,
                                "original_max_position_embeddings": 4096, "factor": 32.0}, {}, 131072, 5000),
]


@pytest.mark.parametrize("case", HF_CASES, ids=[c[0] for c in HF_CASES])
def test_frequencies_match_transformers(case):
    pytest.importorskip("torch")
    mru = pytest.importorskip("transformers.modeling_rope_utils")
    name, head_dim, base, scaling, extra, max_pos, seq_len = case
    params = {k: v for k, v in scaling.items() if k not in ("seq_len",)}
    params.update(extra, rope_theta=base)
    if params["rope_type"] == "dynamic":
        params.pop("original_max_position_embeddings")  # transformers reads config.max_position_embeddings
    fn = mru.ROPE_INIT_FUNCTIONS[params["rope_type"]]
    hf_w, hf_a = fn(hf_config(head_dim, params, max_pos), None, seq_len=seq_len)
    ours = dict(scaling)
    if seq_len is not None:
        ours["seq_len"] = seq_len
    w, a = posenc.rope_inv_freq(head_dim, base=base, scaling=ours)
    # transformers evaluates ω in float32: agreement to float32 rounding.
    np.testing.assert_allclose(w, hf_w.double().numpy(), rtol=3e-6, atol=0)
    assert a == pytest.approx(float(hf_a), rel=1e-12)


# ---------------------------------------------------------------- application: native vs exact vs reference


@st.composite
def rope_cases(draw):
    seq_axis = draw(st.sampled_from([-3, -2]))
    batch = draw(st.integers(1, 3))
    extra = draw(st.lists(st.integers(1, 2), max_size=1))
    seq = draw(st.integers(0, 70))
    heads = draw(st.integers(1, 4))
    # Small counts, and those the native core fixes at compile time (rope.cpp's rotate_contiguous).
    half = draw(st.one_of(st.integers(1, 20), st.sampled_from([16, 32, 48, 64])))
    pass_through = draw(st.sampled_from([0, 0, 1, 2, 3]))
    rotary_dim = None if pass_through == 0 else 2 * half
    head_dim = 2 * half + (pass_through if rotary_dim else 0)
    lead = (batch,) + tuple(extra)
    shape = lead + ((seq, heads) if seq_axis == -3 else (heads, seq)) + (head_dim,)
    kind = draw(st.sampled_from(["offset", "seq", "batch", "batch1", "float", "large"]))
    return dict(seq_axis=seq_axis, shape=shape, rotary_dim=rotary_dim, kind=kind, seq=seq, batch=batch,
                dtype=draw(st.sampled_from(FLOAT_DTYPES)), interleaved=draw(st.booleans()),
                inverse=draw(st.booleans()), mode=draw(st.sampled_from(["new", "inplace", "strided", "strided_out"])),
                scaling=draw(st.sampled_from([None, {"rope_type": "yarn", "factor": 4.0,
                                                     "original_max_position_embeddings": 64}])),
                offset=draw(st.integers(0, 2**20)), seed=draw(st.integers(0, 2**32 - 1)))


@given(case=rope_cases())
def test_apply_and_reference_match_exact(isa, case):
    """The active backend (every layout, in place, strided out) and the reference against the float64 rotation."""
    rng = np.random.default_rng(case["seed"])
    x = rng.uniform(-1, 1, case["shape"]).astype(case["dtype"])
    seq, batch = case["seq"], case["batch"]
    kw = dict(rotary_dim=case["rotary_dim"], interleaved=case["interleaved"], seq_axis=case["seq_axis"],
              inverse=case["inverse"], scaling=case["scaling"])
    kind = case["kind"]
    if kind == "offset":
        pos, kw["offset"] = case["offset"] + np.arange(seq), case["offset"]
        args = ()
    elif kind == "seq":
        pos = rng.integers(-1000, 100000, seq)
        args = (pos,)
    elif kind == "batch":
        pos = rng.integers(0, 5000, (batch, seq))
        args = (pos,)
    elif kind == "batch1":
        pos = rng.integers(0, 5000, (1, seq))
        args = (pos,)
        pos = pos[0]
    elif kind == "float":
        pos = rng.uniform(-100, 100, seq)
        args = (pos,)
    else:
        pos = np.sort(rng.integers(2**22, 2**23, seq))
        args = (pos,)
    rd = case["rotary_dim"] or case["shape"][-1]
    inv_freq, scale = posenc.rope_inv_freq(rd, scaling=case["scaling"])
    exact = exact_rope(x, pos, inv_freq, rotary_dim=case["rotary_dim"], interleaved=case["interleaved"],
                       seq_axis=case["seq_axis"], scale=scale, inverse=case["inverse"])
    expected = ref.apply_rope(x, *args, **kw)
    max_angle = float(np.abs(pos).max(initial=0)) * float(inv_freq.max())
    check_rotation(expected, x, exact, scale, max_angle) if x.dtype != np.float32 else assert_close_to_float64(
        expected, exact, 1e-12 + 8 * np.finfo(np.float64).eps * max_angle)
    mode = case["mode"]
    if mode == "inplace":
        y = x.copy()
        got = posenc.apply_rope(y, *args, out=y, **kw)
        assert got is y
    elif mode == "strided":
        got = posenc.apply_rope(strided_view(x, rng), *args, **kw)
    elif mode == "strided_out":
        out = strided_view(np.zeros_like(x), rng)
        got = posenc.apply_rope(strided_view(x, rng), *args, out=out, **kw)
        assert got is out
    else:
        got = posenc.apply_rope(x, *args, **kw)
    assert got.shape == x.shape and got.dtype == x.dtype
    check_rotation(got, x, exact, scale, max_angle)


@pytest.mark.parametrize("half", [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 65])
@pytest.mark.parametrize("interleaved", [False, True])
def test_every_vector_tail(isa, half, interleaved):
    """Sizes around every SIMD width and the 32-row anchor blocks, float32 and float64."""
    rng = np.random.default_rng(half)
    for seq in (1, 31, 32, 33, 65):
        for dtype in (np.float32, np.float64):
            x = rng.uniform(-1, 1, (2, seq, 3, 2 * half)).astype(dtype)
            got = posenc.apply_rope(x, interleaved=interleaved, offset=1000)
            exact = exact_rope(x, 1000 + np.arange(seq), posenc.rope_inv_freq(2 * half)[0], interleaved=interleaved)
            check_rotation(got, x, exact, max_angle=1100)


def test_exact_at_large_positions(isa):
    """float32 within 4e-6 (measured ~2e-7) of float64 at positions up to 2^23, where a float32-angle pipeline is off by ~1e-2."""
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (1, 256, 4, 128)).astype(np.float32)
    inv_freq = posenc.rope_inv_freq(128, base=500000.0)[0]
    for start in (4096, 131072, 2**20, 2**23 - 256):
        pos = start + np.arange(256)
        exact = exact_rope(x, pos, inv_freq)
        got = posenc.apply_rope(x, offset=start, base=500000.0)
        assert np.abs(got - exact).max() < 4e-6
        assert np.abs(got - exact).max() < 6e-7
    # The float32-angle formula at 2^23 for comparison.
    pos32 = (2**23 - 256 + np.arange(256)).astype(np.float32)
    ang = pos32[:, None] * inv_freq.astype(np.float32)[None, :]
    c, s = np.cos(ang), np.sin(ang)
    u, v = x[..., :64], x[..., 64:]
    naive = np.concatenate([u * c[:, None] - v * s[:, None], v * c[:, None] + u * s[:, None]], -1)
    assert np.abs(naive - exact).max() > 1e-3


# ---------------------------------------------------------------- independent properties


def test_norms_inverse_and_relative_property(isa):
    rng = np.random.default_rng(6)
    for interleaved in (False, True):
        x = rng.standard_normal((2, 40, 3, 64))
        y = posenc.apply_rope(x, interleaved=interleaved, offset=17)
        pairs = (lambda a: (a[..., 0::2], a[..., 1::2])) if interleaved else (lambda a: (a[..., :32], a[..., 32:]))
        (u, v), (u2, v2) = pairs(x), pairs(y)
        np.testing.assert_allclose(u2**2 + v2**2, u**2 + v**2, rtol=1e-13)
        back = posenc.apply_rope(y, interleaved=interleaved, offset=17, inverse=True)
        np.testing.assert_allclose(back, x, rtol=0, atol=1e-13)
        # <R_m q, R_n k> = <q, R_{n-m} k>: depends on n - m only.
        q, k = rng.standard_normal(64), rng.standard_normal(64)
        qs = np.broadcast_to(q, (1, 200, 1, 64)).copy()
        ks = np.broadcast_to(k, (1, 200, 1, 64)).copy()
        rq = posenc.apply_rope(qs, interleaved=interleaved)[0, :, 0]
        rk = posenc.apply_rope(ks, interleaved=interleaved)[0, :, 0]
        for shift in (0, 3, 50):
            dots = np.einsum("md,md->m", rq[: 200 - shift], rk[shift:])
            np.testing.assert_allclose(dots, dots[0], rtol=0, atol=1e-11)


def test_float32_float16_bfloat16_bounds(isa):
    rng = np.random.default_rng(8)
    x64 = rng.uniform(-1, 1, (1, 100, 8, 64))
    exact = exact_rope(x64, 5000 + np.arange(100), posenc.rope_inv_freq(64)[0])
    for dtype in FLOAT_DTYPES:
        x = x64.astype(dtype)
        ex = exact_rope(x, 5000 + np.arange(100), posenc.rope_inv_freq(64)[0])
        got = posenc.apply_rope(x, offset=5000)
        check_rotation(got, x, ex, max_angle=5100)
        assert np.abs(got.astype(np.float64) - exact).max() < 4 * eps(dtype) + 5100 * 1e-15


# ---------------------------------------------------------------- layouts, in place, peers


def test_fused_qkv_in_place_without_touching_v(isa):
    buf = np.random.default_rng(4).standard_normal((2, 50, 3, 4, 64)).astype(np.float32)
    before = buf.copy()
    w = posenc.rope_inv_freq(64)[0]
    q, k = buf[:, :, 0], buf[:, :, 1]
    rq, rk = posenc.apply_rope_qk(q, k, out_q=q, out_k=k, offset=3)
    assert rq is q and rk is k
    np.testing.assert_array_equal(buf[:, :, 2], before[:, :, 2])
    for i in (0, 1):
        check_rotation(buf[:, :, i], before[:, :, i], exact_rope(before[:, :, i], 3 + np.arange(50), w), max_angle=53)
    np.testing.assert_array_equal(buf[:, :, 0], posenc.apply_rope(before[:, :, 0], offset=3))
    # single-tensor form, heads-first view, negative strides
    v = buf[:, ::-1, 2].transpose(0, 2, 1, 3)  # [b, h, s, d] view with a negative seq stride
    exact = exact_rope(v.copy(), np.arange(50), w, seq_axis=-2)
    x = v.copy()
    assert posenc.apply_rope(v, seq_axis=-2, out=v) is v
    check_rotation(v, x, exact, max_angle=50)


def test_apply_qk_equals_two_calls(isa):
    """The one-pass kernel gives what two apply_rope calls give, bit for bit (and the closed form)."""
    rng = np.random.default_rng(9)
    q = rng.standard_normal((2, 33, 8, 64)).astype(np.float32)
    k = rng.standard_normal((2, 33, 2, 64)).astype(np.float32)
    pos = rng.integers(0, 10000, (2, 33))
    for kw in (dict(), dict(interleaved=True), dict(rotary_dim=32), dict(inverse=True),
               dict(scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16})):
        gq, gk = posenc.apply_rope_qk(q, k, pos, **kw)
        np.testing.assert_array_equal(gq, posenc.apply_rope(q, pos, **kw))
        np.testing.assert_array_equal(gk, posenc.apply_rope(k, pos, **kw))
        w, a = posenc.rope_inv_freq(kw.get("rotary_dim", 64), scaling=kw.get("scaling"))
        pairing = dict(rotary_dim=kw.get("rotary_dim"), interleaved=kw.get("interleaved", False),
                       inverse=kw.get("inverse", False), scale=a)
        check_rotation(gq, q, exact_rope(q, pos, w, **pairing), a, max_angle=10000)
        check_rotation(gk, k, exact_rope(k, pos, w, **pairing), a, max_angle=10000)


def test_apply_qk_mixed_operands_equal_two_calls(backend):
    """q and k may differ in dtype (each rotated in its own), rank (seq_axis=-2 without heads) and head_dim
    (with rotary_dim): the documented result is that of two apply_rope calls, exactly, on either backend."""
    rng = np.random.default_rng(18)
    q = rng.standard_normal((2, 7, 4, 16)).astype(np.float32)
    for dtype in FLOAT_DTYPES:
        k = rng.standard_normal((2, 7, 2, 16)).astype(dtype)
        gq, gk = posenc.apply_rope_qk(q, k, offset=9)
        assert gq.dtype == q.dtype and gk.dtype == k.dtype
        np.testing.assert_array_equal(gq, posenc.apply_rope(q, offset=9))
        np.testing.assert_array_equal(gk, posenc.apply_rope(k, offset=9))
        qq, kk = q.copy(), k.copy()  # in place
        rq, rk = posenc.apply_rope_qk(qq, kk, offset=9, out_q=qq, out_k=kk)
        assert rq is qq and rk is kk
        np.testing.assert_array_equal(qq, gq)
        np.testing.assert_array_equal(kk, gk)
    qh, kh = q.transpose(0, 2, 1, 3), rng.standard_normal((2, 7, 16)).astype(np.float32)  # [b, h, s, d], [b, s, d]
    gq, gk = posenc.apply_rope_qk(qh, kh, offset=9, seq_axis=-2)
    np.testing.assert_array_equal(gq, posenc.apply_rope(qh, offset=9, seq_axis=-2))
    np.testing.assert_array_equal(gk, posenc.apply_rope(kh, offset=9, seq_axis=-2))
    k24 = rng.standard_normal((2, 7, 1, 24)).astype(np.float32)
    with pytest.raises(ValueError, match="rotary_dim"):
        posenc.apply_rope_qk(q, k24)
    gq, gk = posenc.apply_rope_qk(q, k24, rotary_dim=12)
    np.testing.assert_array_equal(gq, posenc.apply_rope(q, rotary_dim=12))
    np.testing.assert_array_equal(gk, posenc.apply_rope(k24, rotary_dim=12))


def test_torch_tensor_out_in_place(isa):
    torch = pytest.importorskip("torch")
    t = torch.randn(1, 10, 2, 16)
    x = t.numpy().copy()
    assert posenc.apply_rope(t.numpy(), out=t, offset=2) is t
    check_rotation(t.numpy(), x, exact_rope(x, 2 + np.arange(10), posenc.rope_inv_freq(16)[0]), max_angle=12)


def test_against_transformers_rotate_half(isa):
    torch = pytest.importorskip("torch")
    llama = pytest.importorskip("transformers.models.llama.modeling_llama")
    rng = np.random.default_rng(10)
    q = rng.standard_normal((2, 4, 20, 64)).astype(np.float32)  # HF layout [batch, heads, seq, dim]
    k = rng.standard_normal((2, 2, 20, 64)).astype(np.float32)
    pos = rng.integers(0, 100000, (2, 20))
    inv_freq, scale = posenc.rope_inv_freq(64, base=500000.0, scaling=LLAMA31)
    freqs = torch.from_numpy(pos).double()[..., None] * torch.from_numpy(inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    hq, hk = llama.apply_rotary_pos_emb(torch.from_numpy(q).double(), torch.from_numpy(k).double(),
                                        emb.cos() * scale, emb.sin() * scale)
    gq, gk = posenc.apply_rope_qk(q, k, pos, base=500000.0, scaling=LLAMA31, seq_axis=-2)
    np.testing.assert_allclose(gq, hq.numpy(), rtol=0, atol=1e-6)
    np.testing.assert_allclose(gk, hk.numpy(), rtol=0, atol=1e-6)


def test_against_rotary_embedding_torch_interleaved(isa):
    torch = pytest.importorskip("torch")
    ret = pytest.importorskip("rotary_embedding_torch")
    rot = ret.RotaryEmbedding(dim=32)  # GPT-J pairs, rotates the first 32 of 48 features
    t = torch.randn(2, 3, 25, 48)  # [batch, heads, seq, dim]
    expected = rot.rotate_queries_or_keys(t.double()).numpy()
    got = posenc.apply_rope(t.numpy(), interleaved=True, rotary_dim=32, seq_axis=-2)
    np.testing.assert_allclose(got, expected, rtol=0, atol=2e-6)


# ---------------------------------------------------------------- M-RoPE and packed batches


def qwen_mrope_exact(x, pos3, inv_freq, section, interleaved):
    """Qwen2-VL / Qwen3-VL recomposition of per-axis angles, written from their modeling code."""
    theta = pos3[..., None].astype(np.float64) * inv_freq  # [3, batch, seq, half]
    if interleaved:  # Qwen3-VL apply_interleaved_mrope
        t = theta[0].copy()
        for axis, offset in ((1, 1), (2, 2)):
            idx = slice(offset, section[axis] * 3, 3)
            t[..., idx] = theta[axis][..., idx]
    else:  # Qwen2-VL: chunk i of the split takes axis i % 3
        bounds = np.cumsum([0] + list(section))
        t = np.concatenate([theta[i % 3][..., bounds[i]:bounds[i + 1]] for i in range(3)], -1)
    c, s = np.cos(t)[:, :, None, :], np.sin(t)[:, :, None, :]  # [batch, seq, 1, half] for x [b, s, h, d]
    x = x.astype(np.float64)
    half = x.shape[-1] // 2
    u, v = x[..., :half], x[..., half:]
    return np.concatenate([u * c - v * s, v * c + u * s], -1)


def mrope_axes(section, interleaved):
    """The positions axis of each pair, from the definitions (Qwen2-VL contiguous, Qwen3-VL interleaved)."""
    if interleaved:
        return [j % 3 if j < 3 * section[j % 3] else 0 for j in range(sum(section))]
    return [axis for axis, n in enumerate(section) for _ in range(n)]


@pytest.mark.parametrize("interleaved,section", [(False, (16, 24, 24)), (True, (24, 20, 20)), (False, (2, 0, 62)),
                                                 (True, (30, 17, 17))])
def test_mrope(isa, interleaved, section):
    rng = np.random.default_rng(11)
    x = rng.uniform(-1, 1, (2, 30, 4, 128)).astype(np.float32)
    pos3 = rng.integers(0, 500, (3, 2, 30))
    inv_freq = posenc.rope_inv_freq(128, base=1e6)[0]
    exact = qwen_mrope_exact(x, pos3, inv_freq, section, interleaved)
    kw = dict(base=1e6, mrope_section=section, mrope_interleaved=interleaved)
    got = posenc.apply_rope(x, pos3, **kw)
    check_rotation(got, x, exact)
    assert_close_to_float64(ref.apply_rope(x, pos3, **kw), exact, 1e-12)
    np.testing.assert_array_equal(got, posenc.apply_rope_qk(x, x, pos3, **kw)[1])
    # Equal positions on the three axes are plain RoPE; [3, seq] broadcasts over the batch.
    same = np.broadcast_to(np.arange(30), (3, 30))
    np.testing.assert_allclose(posenc.apply_rope(x, same, **kw), posenc.apply_rope(x, base=1e6), rtol=0, atol=1e-6)
    np.testing.assert_allclose(posenc.apply_rope(x, **kw), posenc.apply_rope(x, base=1e6), rtol=0, atol=1e-6)


@given(
    sections=st.tuples(st.integers(0, 6), st.integers(0, 6), st.integers(0, 6)).filter(lambda t: sum(t) > 0),
    interleaved=st.booleans(),
    seq=st.integers(0, 40),
    batch=st.integers(1, 3),
    dtype=st.sampled_from(FLOAT_DTYPES),
    seq_axis=st.sampled_from([-3, -2]),
    batch_positions=st.booleans(),
    strided=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_mrope_matches_reference(native_isa, sections, interleaved, seq, batch, dtype, seq_axis, batch_positions,
                                 strided, seed):
    """Native and reference M-RoPE against the pair-by-pair float64 rotation, and against each other."""
    rng = np.random.default_rng(seed)
    half = sum(sections)
    shape = (batch, seq, 2, 2 * half) if seq_axis == -3 else (batch, 2, seq, 2 * half)
    x = rng.uniform(-1, 1, shape).astype(dtype)
    pos = rng.integers(0, 3000, (3, batch if batch_positions else 1, seq))
    kw = dict(mrope_section=sections, mrope_interleaved=interleaved, seq_axis=seq_axis)
    expected = ref.apply_rope(x, pos, **kw)
    got = posenc.apply_rope(strided_view(x, rng) if strided else x, pos, **kw)
    g = pos if batch_positions else np.broadcast_to(pos, (3, batch, seq))
    exact = exact_rope(x, g, posenc.rope_inv_freq(2 * half)[0], seq_axis=seq_axis,
                       pair_axis=mrope_axes(sections, interleaved))
    check_rotation(got, x, exact, max_angle=3000)
    assert_close_to_float64(expected, exact, 1e-12)  # the reference rounds its float64 rotation once
    # float32 rotates in float32 (check_rotation's bound), the others round float64 once: a few ulps apart
    np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=0, atol=6 * eps(dtype))


def test_mrope_against_transformers(isa):
    torch = pytest.importorskip("torch")
    q2 = pytest.importorskip("transformers.models.qwen2_vl.modeling_qwen2_vl")
    q3 = pytest.importorskip("transformers.models.qwen3_vl.modeling_qwen3_vl")
    rng = np.random.default_rng(12)
    x = rng.uniform(-1, 1, (2, 4, 30, 128)).astype(np.float32)  # HF layout [b, h, s, d]
    pos3 = rng.integers(0, 500, (3, 2, 30))
    inv_freq = posenc.rope_inv_freq(128, base=1e6)[0]
    freqs = torch.from_numpy(pos3).double()[..., None] * torch.from_numpy(inv_freq)
    for cls, section, inter in ((q2.Qwen2VLRotaryEmbedding, [16, 24, 24], False),
                                (q3.Qwen3VLTextRotaryEmbedding, [24, 20, 20], True)):
        holder = types.SimpleNamespace(mrope_section=section)
        cos = cls.recomposition_frequencies(holder, freqs.cos().clone())
        sin = cls.recomposition_frequencies(holder, freqs.sin().clone())
        hq, _ = q2.apply_rotary_pos_emb(torch.from_numpy(x).double(), torch.from_numpy(x).double(), cos, sin)
        got = posenc.apply_rope(x, pos3, base=1e6, seq_axis=-2, mrope_section=section, mrope_interleaved=inter)
        np.testing.assert_allclose(got, hq.numpy(), rtol=0, atol=1e-6)


def test_positions_from_cu_seqlens(isa):
    assert posenc.positions_from_cu_seqlens([0, 3, 5, 5, 7]).tolist() == [0, 1, 2, 0, 1, 0, 1]
    assert posenc.positions_from_cu_seqlens(np.array([0], np.int32)).tolist() == []
    # packed batch == each sequence rotated alone
    rng = np.random.default_rng(13)
    x = rng.standard_normal((9, 2, 16)).astype(np.float32)
    cu = [0, 4, 9]
    got = posenc.apply_rope(x, posenc.positions_from_cu_seqlens(cu))
    np.testing.assert_array_equal(got[:4], posenc.apply_rope(x[:4]))
    np.testing.assert_array_equal(got[4:], posenc.apply_rope(x[4:]))


# ---------------------------------------------------------------- RotaryEmbedding and cos/sin


def test_rope_cos_sin(isa):
    """The active backend's tables and the reference's, every dtype, against a·cos(p·ω) and a·sin(p·ω)."""
    for scaling in (None, {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}):
        w, a = posenc.rope_inv_freq(64, scaling=scaling)
        for positions in (100, np.array([0, 5, 2**23, -7]), np.array([0.5, 1e6])):
            angles = np.multiply.outer(np.arange(positions) if isinstance(positions, int) else positions, w)
            for dtype in FLOAT_DTYPES:
                for fn in (posenc.rope_cos_sin, ref.rope_cos_sin):
                    c, s = fn(positions, 64, scaling=scaling, dtype=dtype)
                    assert c.dtype == s.dtype == np.dtype(dtype) and c.shape == s.shape == angles.shape
                    assert_close_to_float64(c, a * np.cos(angles), 1e-12)
                    assert_close_to_float64(s, a * np.sin(angles), 1e-12)


def test_rotary_embedding_module(isa):
    rng = np.random.default_rng(14)
    q = rng.standard_normal((1, 10, 4, 64)).astype(np.float32)
    k = rng.standard_normal((1, 10, 2, 64)).astype(np.float32)
    rope = posenc.RotaryEmbedding(64, base=500000.0, scaling=LLAMA31, max_positions=64)
    gq, gk = rope(q, k, offset=5)
    eq, ek = posenc.apply_rope_qk(q, k, base=500000.0, scaling=LLAMA31, offset=5)
    np.testing.assert_array_equal(gq, eq)
    np.testing.assert_array_equal(gk, ek)
    # cos/sin from the cache and beyond it agree with rope_cos_sin
    for pos in (np.arange(10), np.array([3, 63, 64, 100000])):
        c, s = rope.cos_sin(pos)
        rc, rs = posenc.rope_cos_sin(pos, 64, base=500000.0, scaling=LLAMA31)
        np.testing.assert_array_equal(c, rc)
        np.testing.assert_array_equal(s, rs)
    assert rope.cos_cached.shape == (64, 32)
    # partial rotary, interleaved
    r2 = posenc.RotaryEmbedding(80, rotary_dim=32, interleaved=True)
    x = rng.standard_normal((1, 10, 2, 80)).astype(np.float32)
    np.testing.assert_array_equal(r2(x, x)[0], posenc.apply_rope(x, rotary_dim=32, interleaved=True))


def test_rotary_embedding_dynamic_follows_seq_len(isa):
    sc = {"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 16}
    rope = posenc.RotaryEmbedding(32, scaling=sc)
    x = np.random.default_rng(15).standard_normal((1, 40, 1, 32)).astype(np.float32)
    long_q, _ = rope(x, x)  # seq_len 40 > 16: the base grows
    np.testing.assert_array_equal(long_q, posenc.apply_rope(x, scaling={**sc, "seq_len": 40}))
    short_q, _ = rope(x[:, :8], x[:, :8])  # back within the original length
    np.testing.assert_array_equal(short_q, posenc.apply_rope(x[:, :8]))
    step_q, _ = rope(x[:, :1], x[:, :1], offset=99)  # a decode step at position 99: seq_len 100
    np.testing.assert_array_equal(step_q, posenc.apply_rope(x[:, :1], offset=99, scaling={**sc, "seq_len": 100}))
    lr = {"type": "longrope", "short_factor": [1.0] * 16, "long_factor": [4.0] * 16,
          "original_max_position_embeddings": 16, "factor": 4.0}
    rope = posenc.RotaryEmbedding(32, scaling=lr)
    np.testing.assert_array_equal(rope(x, x, positions=np.arange(40))[0],
                                  posenc.apply_rope(x, np.arange(40), scaling={**lr, "seq_len": 40}))
    np.testing.assert_array_equal(rope(x[:, :5], x[:, :5])[0], posenc.apply_rope(x[:, :5], scaling=lr))


def test_misaligned_and_byteswapped(isa):
    """Misaligned and byte-swapped operands are copied once, never read differently: bit for bit the
    aligned call's result (itself checked against the closed form), into a misaligned out and in place too."""
    rng = np.random.default_rng(16)
    x = rng.uniform(-1, 1, (2, 5, 3, 8)).astype(np.float32)
    want = posenc.apply_rope(x, offset=4)
    check_rotation(want, x, exact_rope(x, 4 + np.arange(5), posenc.rope_inv_freq(8)[0]), max_angle=10)
    np.testing.assert_array_equal(posenc.apply_rope(misaligned(x), offset=4), want)
    np.testing.assert_array_equal(posenc.apply_rope(x.astype(x.dtype.newbyteorder()), offset=4), want)
    out = misaligned(np.zeros_like(x))
    assert posenc.apply_rope(x, offset=4, out=out) is out
    np.testing.assert_array_equal(out, want)
    y = misaligned(x)
    assert posenc.apply_rope(y, offset=4, out=y) is y
    np.testing.assert_array_equal(y, want)
    # apply_rope_qk in place on misaligned q and k (two kernel calls instead of one)
    q, k = misaligned(x), misaligned(x[:, :, 1:2])
    gq, gk = posenc.apply_rope_qk(q, k, offset=4, out_q=q, out_k=k)
    assert gq is q and gk is k
    np.testing.assert_array_equal(q, want)
    np.testing.assert_array_equal(k, want[:, :, 1:2])


def test_empty(isa):
    assert posenc.apply_rope(np.zeros((0, 5, 2, 8), np.float32)).shape == (0, 5, 2, 8)
    assert posenc.apply_rope(np.zeros((2, 0, 2, 8), np.float32)).shape == (2, 0, 2, 8)
    assert posenc.apply_rope(np.zeros((2, 3, 0, 8), np.float32)).shape == (2, 3, 0, 8)
    assert posenc.rope_cos_sin(0, 8)[0].shape == (0, 4)


@pytest.mark.parametrize("shape,seq_axis,offset,base", [((1, 1, 1, 128), -3, 4000, 10000.0), ((2, 4, 3, 64), -2, 0, 500000),
                                                        ((5, 6), -2, -7, 1e4), ((3, 2, 8), -3, 2**52, 10000.0)])
def test_decode_fast_lane_builds_the_full_checks_params(shape, seq_axis, offset, base):
    """rope_params' fast lane for plain arguments (ints, bools, default frequencies) gives exactly the plan
    the full checks give (reached here with a NumPy integer offset, which the lane does not take)."""
    from posenc._plans.rope import rope_params

    x = np.zeros(shape, np.float32)
    kw = dict(positions=None, base=base, scaling=None, inv_freq=None, attention_scaling=None, rotary_dim=None,
              seq_axis=seq_axis, inverse=True, interleaved=False, mrope_section=None, mrope_interleaved=False)
    fast = rope_params(((x, "x"),), offset=offset, **kw)
    full = rope_params(((x, "x"),), offset=np.int64(offset), **kw)
    for name, a, b in zip(fast._fields, fast, full):
        assert type(a) is type(b) and (np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b), name


@pytest.mark.parametrize("shape,seq_axis,positions", [
    ((1, 1, 32, 128), -3, np.array([[4000]])), ((1, 1, 8, 128), -3, np.array([2**53])),
    ((2, 3, 2, 8), -3, np.arange(3, dtype=np.int32)[::-1]), ((1, 2, 3, 8), -2, np.array([[7, 2, 9]], ">u2")),
    ((1, 0, 2, 8), -3, np.zeros(0, np.int64)), ((1, 4, 8), -2, np.array([[-5, 0, 3, 2**40]]))])
def test_decode_fast_lane_takes_integer_positions_as_the_full_checks_do(shape, seq_axis, positions):
    """Integer ndarray positions [seq] or [1, seq] take rope_params' fast lane: the very plan the full checks
    make of the same positions as a list (which the lane does not take)."""
    from posenc._plans.rope import rope_params

    x = np.zeros(shape, np.float32)
    kw = dict(offset=0, base=10000.0, scaling=None, inv_freq=None, attention_scaling=None, rotary_dim=None,
              seq_axis=seq_axis, inverse=False, interleaved=True, mrope_section=None, mrope_interleaved=False)
    k = x[..., :1, :] if seq_axis == -3 else x[..., :1, :, :] if x.ndim == 4 else x  # fewer heads
    fast = rope_params(((x, "x"), (k, "k")), positions=positions, **kw)
    full = rope_params(((x, "x"), (k, "k")), positions=positions.tolist(), **kw)
    for name, a, b in zip(fast._fields, fast, full):
        assert type(a) is type(b) and (np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b), name
    assert fast.positions.dtype == np.float64 and fast.positions.flags.c_contiguous


@pytest.mark.parametrize("positions,offset", [
    (np.array([[1, 2]]), 0), (np.array([[1], [2]]), 0), (np.array([1]), 3), (np.array([[[1]]]), 0),
    (np.array([1.5]), 0), (np.array([np.nan]), 0), (np.array([True]), 0), (np.array(["1"]), 0)])
def test_bad_positions_raise_the_full_checks_errors_in_a_decode_step(positions, offset):
    """A decode step's call with bad ndarray positions raises what the full checks raise (the same positions
    given as a list, which never takes the fast lane)."""
    q, k = np.zeros((1, 1, 4, 8), np.float32), np.zeros((1, 1, 2, 8), np.float32)
    errors = []
    for value in (positions, positions.tolist()):
        try:
            posenc.apply_rope_qk(q, k, value, offset=offset, out_q=q, out_k=k)
            errors.append(None)
        except (TypeError, ValueError) as exc:
            errors.append((type(exc), str(exc)))
    assert errors[0] == errors[1]
    assert errors[0] is not None or positions.dtype.kind == "f" and np.isfinite(positions).all()  # 1.5 is valid


# ================================================================ hostile-input specs
# The valid baseline call of each public function and the role of each argument: the hostile table
# (tests/test_arguments.py), the differential fuzzer and the PyTorch/JAX/unpickled-input cases are
# generated from SPECS.

F32 = np.float32
VE, TE = ValueError, TypeError

LLAMA3 = {"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 8192}
YARN = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}
LONGROPE = {"type": "longrope", "short_factor": [1.0] * 3, "long_factor": [4.0, 2.0, 1.5],
            "original_max_position_embeddings": 16, "factor": 2.0}
DYNAMIC = {"type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 16}

# A RoPE scaling dict (a model config's rope_scaling; dim 6, three frequency pairs): every bad value
# is a ValueError naming its key (a TypeError for a scaling that is not a dict at all).
BAD_SCALINGS = [
    ("not-a-dict", "linear", TE, "scaling"),
    ("list", [("type", "linear")], TE, "scaling"),
    ("unknown-type", {"type": "quadratic", "factor": 2.0}, VE, "rope_type"),
    ("type-not-str", {"type": 3, "factor": 2.0}, VE, "rope_type"),
    ("types-disagree", {"type": "linear", "rope_type": "yarn", "factor": 2.0}, VE, "disagree"),
    ("unknown-key", {"type": "linear", "factor": 2.0, "fctor": 3.0}, VE, "'fctor'"),
    ("rope_theta-one", {"type": "linear", "factor": 2.0, "rope_theta": 1.0}, VE, "rope_theta"),
    ("rope_theta-nan", {"type": "linear", "factor": 2.0, "rope_theta": float("nan")}, VE, "rope_theta"),
    ("rope_theta-negative", {"type": "linear", "factor": 2.0, "rope_theta": -10.0}, VE, "rope_theta"),
    ("rope_theta-str", {"type": "linear", "factor": 2.0, "rope_theta": "1e4"}, VE, "rope_theta"),
    # int(6 * 0.5) = 3 rotated features: odd.
    ("partial_rotary_factor-odd", {"type": "linear", "factor": 2.0, "partial_rotary_factor": 0.5}, VE,
     "partial_rotary_factor"),
    ("partial_rotary_factor-zero", {"type": "default", "partial_rotary_factor": 0.0}, VE, "partial_rotary_factor"),
    ("partial_rotary_factor-tiny", {"type": "default", "partial_rotary_factor": 0.1}, VE, "partial_rotary_factor"),
    ("partial_rotary_factor-above-1", {"type": "default", "partial_rotary_factor": 1.5}, VE, "partial_rotary_factor"),
    ("partial_rotary_factor-str", {"type": "default", "partial_rotary_factor": "0.5"}, VE, "partial_rotary_factor"),
    ("proportional-factor-zero", {"rope_type": "proportional", "factor": 0.0}, VE, "'factor'"),
    ("proportional-partial-nan", {"rope_type": "proportional", "partial_rotary_factor": float("nan")}, VE,
     "partial_rotary_factor"),
    ("proportional-unknown-key", {"rope_type": "proportional", "low_freq_factor": 1.0}, VE, "low_freq_factor"),
    ("mrope_section-inside-wrong-sum", {"type": "mrope", "mrope_section": [1, 1, 2]}, VE, "mrope_section"),
    ("mrope_section-inside-two", {"type": "mrope", "mrope_section": [1, 2]}, VE, "mrope_section"),
    ("mrope_interleaved-inside-str", {"mrope_section": [1, 1, 1], "mrope_interleaved": "yes"}, VE,
     "mrope_interleaved"),
    ("mrope-and-other-type-disagree", {"type": "mrope", "rope_type": "quadratic"}, VE, "rope_type"),
    ("per-layer-type-dict", {"sliding_attention": {"rope_type": "default"},
                             "full_attention": {"rope_type": "linear", "factor": 8.0}}, VE, "per-layer-type"),
    ("missing-factor", {"type": "linear"}, VE, "'factor'"),
    ("factor-nan", {"type": "linear", "factor": float("nan")}, VE, "'factor'"),
    ("factor-inf", {"type": "linear", "factor": float("inf")}, VE, "'factor'"),
    ("factor-zero", {"type": "linear", "factor": 0.0}, VE, "'factor'"),
    ("factor-negative", {"type": "linear", "factor": -2.0}, VE, "'factor'"),
    ("factor-str", {"type": "linear", "factor": "2"}, VE, "'factor'"),
    ("factor-bool", {"type": "linear", "factor": True}, VE, "'factor'"),
    ("factor-complex", {"type": "linear", "factor": 2j}, VE, "'factor'"),
    ("dynamic-missing-original", {"type": "dynamic", "factor": 2.0}, VE, "original_max_position_embeddings"),
    ("dynamic-seq-negative", {**DYNAMIC, "seq_len": -1}, VE, "seq_len"),
    ("dynamic-seq-float", {**DYNAMIC, "seq_len": 1.5}, VE, "seq_len"),
    ("yarn-missing-original", {"type": "yarn", "factor": 4.0}, VE, "original_max_position_embeddings"),
    ("yarn-orig-zero", {**YARN, "original_max_position_embeddings": 0}, VE, "original_max_position_embeddings"),
    ("yarn-orig-str", {**YARN, "original_max_position_embeddings": "4096"}, VE, "original_max_position_embeddings"),
    ("yarn-beta_fast-zero", {**YARN, "beta_fast": 0}, VE, "'beta_fast'"),
    ("yarn-betas-swapped", {**YARN, "beta_fast": 1, "beta_slow": 2}, VE, "beta_fast"),
    ("yarn-truncate-str", {**YARN, "truncate": "no"}, VE, "truncate"),
    ("yarn-mscale-negative", {**YARN, "mscale": -1}, VE, "mscale"),
    ("llama3-equal-factors", {**LLAMA3, "high_freq_factor": 1.0}, VE, "low_freq_factor"),
    ("llama3-factors-swapped", {**LLAMA3, "low_freq_factor": 4.0, "high_freq_factor": 0.5}, VE, "low_freq_factor"),
    ("llama3-missing-high", {k: v for k, v in LLAMA3.items() if k != "high_freq_factor"}, VE, "high_freq_factor"),
    ("longrope-short-wrong-length", {**LONGROPE, "short_factor": [1.0]}, VE, "short_factor"),
    ("longrope-long-wrong-length", {**LONGROPE, "long_factor": [1.0] * 4}, VE, "long_factor"),
    ("longrope-nan", {**LONGROPE, "short_factor": [float("nan")] * 3}, VE, "short_factor"),
    ("longrope-zero", {**LONGROPE, "short_factor": [1.0, 1.0, 0.0]}, VE, "short_factor"),
    ("longrope-missing-short", {k: v for k, v in LONGROPE.items() if k != "short_factor"}, VE, "short_factor"),
    ("longrope-no-factor", {k: v for k, v in LONGROPE.items() if k != "factor"}, VE, "factor"),
]


def scaling_cases(s: Spec, arg: str = "scaling") -> None:
    """A RoPE scaling dict: unknown types and keys, bad or missing values are refused, naming the key."""
    for id, value, exc, match in BAD_SCALINGS:
        s.raises(f"{arg}-{id}", exc, match, **{arg: value})
    s.same(f"{arg}-rope_type-alias", clean={arg: {"type": "linear", "factor": 2.0}},
           **{arg: {"rope_type": "linear", "factor": 2.0}})
    s.same(f"{arg}-numpy-factor", clean={arg: {"type": "linear", "factor": 2.0}},
           **{arg: {"type": "linear", "factor": np.float32(2.0)}})
    # Transformers v5 rope_parameters: rope_theta sets the base unless base is passed (then they must agree).
    s.raises(f"{arg}-rope_theta-disagrees", VE, "rope_theta", base=10000.0,
             **{arg: {"type": "linear", "factor": 2.0, "rope_theta": 500000.0}})
    s.same(f"{arg}-rope_theta-sets-base", clean={arg: {"type": "linear", "factor": 2.0}, "base": 500000.0},
           **{arg: {"rope_type": "linear", "factor": 2.0, "rope_theta": 500000.0}})
    s.same(f"{arg}-rope_theta-agrees", clean={arg: {"type": "linear", "factor": 2.0}, "base": 500000.0},
           base=500000.0, **{arg: {"rope_type": "linear", "factor": 2.0, "rope_theta": 500000.0}})
    s.same(f"{arg}-proportional-full", clean={arg: {"type": "default"}},
           **{arg: {"rope_type": "proportional", "partial_rotary_factor": 1.0, "factor": 1.0}})
    s.same(f"{arg}-qwen2-vl-raw-no-section", clean={arg: None, "base": 1e6},
           **{arg: {"type": "mrope", "rope_type": "default", "rope_theta": 1e6}})


def in_place_variants(s: Spec, pairs: Dict[str, str]) -> None:
    """Each refused call again with ``out=`` each baseline operand itself (``pairs``: operand -> its out)
    where no out is given: a bad k must leave q untouched too."""
    rows: List[Case] = []
    for case in s.cases:
        if isinstance(case.expect, Raises):
            outs = {o: case.kwargs[x] for x, o in pairs.items() if o not in case.kwargs and case.kwargs[x] is s.baseline[x]}
            if outs:
                rows.append(Case(f"{case.id}-in-place", case.func, {**case.kwargs, **outs}, case.expect))
    s.cases.extend(rows)


# ------------------------------------------------------------------ rotary

OFFSETS = np.array([3, 100])  # one first position per batch row of a [2, 4, ...] baseline
OFFSET_ROWS = OFFSETS[:, None] + np.arange(4)


def _tables(positions: np.ndarray, dim: int = 6) -> Any:
    """float64 cos and sin [..., seq, dim/2] of positions at the default base (written out, not posenc's)."""
    theta = positions[..., None] * 10000.0 ** (-np.arange(0, dim, 2) / dim)
    return np.cos(theta), np.sin(theta)


COS, SIN = _tables(np.arange(4.0))


def table_cases(s: Spec) -> None:
    """``cos=``/``sin=``: the caller's tables [seq, W] / [batch, seq, W], W = pairs or Transformers' 2·pairs."""
    no = {"cos": None, "sin": None}
    s.same("cos-sin-pairs", clean=no, cos=COS, sin=SIN)
    s.same("cos-sin-transformers", clean=no, cos=np.concatenate([COS, COS], -1)[None],
           sin=np.concatenate([SIN, SIN], -1)[None])
    s.same("cos-sin-transformers-interleaved", clean={**no, "interleaved": True}, interleaved=True,
           cos=np.repeat(COS, 2, -1), sin=np.repeat(SIN, 2, -1))
    rows = np.array([[0, 1, 2, 3], [7, 5, 3, 1]])
    bc, bs = _tables(rows.astype(float))
    s.same("cos-sin-batch", clean={**no, "positions": rows}, cos=bc, sin=bs)
    s.same("cos-sin-batch-one", clean=no, cos=COS[None], sin=SIN[None])
    s.same("cos-sin-inverse", clean={**no, "inverse": True}, cos=COS, sin=SIN, inverse=True)
    pc, ps = _tables(np.arange(4.0), 4)
    s.same("cos-sin-partial", clean={**no, "rotary_dim": 4}, cos=pc, sin=ps, rotary_dim=4)
    s.same("cos-sin-partial-transformers", clean={**no, "rotary_dim": 4}, cos=np.concatenate([pc, pc], -1),
           sin=np.concatenate([ps, ps], -1), rotary_dim=4)
    s.same("cos-sin-float32", clean={"cos": COS.astype(F32).astype(float), "sin": SIN.astype(F32).astype(float)},
           cos=COS.astype(F32), sin=SIN.astype(F32))
    s.same("cos-sin-float16", clean={"cos": COS.astype(np.float16).astype(float)}, cos=COS.astype(np.float16),
           sin=SIN)
    for id, make in [("byteswapped", byteswapped), ("misaligned", misaligned), ("negative-strides", negative_strides),
                     ("stepped", stepped)]:
        s.same(f"cos-sin-{id}", clean={"cos": COS, "sin": SIN}, cos=make(COS), sin=make(SIN))
    s.same("cos-sin-lists", clean={"cos": COS, "sin": SIN}, cos=COS.tolist(), sin=SIN.tolist())
    for id, kw, exc, match in [
        ("cos-alone", dict(cos=COS), VE, "sin"), ("sin-alone", dict(sin=SIN), VE, "cos"),
        ("cos-int", dict(cos=COS.astype(np.int64), sin=SIN), TE, "cos"),
        ("sin-complex", dict(cos=COS, sin=SIN + 0j), TE, "sin"),
        ("cos-str", dict(cos=COS.astype(str), sin=SIN), TE, "cos"),
        ("cos-object", dict(cos=COS.astype(object), sin=SIN), TE, "cos"),
        ("cos-1d", dict(cos=COS[0], sin=SIN[0]), VE, "cos"),
        ("cos-4d", dict(cos=COS[None, None], sin=SIN[None, None]), VE, "cos"),
        ("sin-other-shape", dict(cos=COS, sin=SIN[None]), VE, "sin"),
        ("cos-wrong-seq", dict(cos=COS[:3], sin=SIN[:3]), VE, "cos"),
        ("cos-wrong-width", dict(cos=COS[:, :2], sin=SIN[:, :2]), VE, "cos"),
        ("cos-halves-differ", dict(cos=np.concatenate([COS, COS + 1e-9], -1), sin=np.concatenate([SIN, SIN], -1)),
         VE, "cos"),
        ("sin-halves-differ", dict(cos=np.concatenate([COS, COS], -1), sin=np.concatenate([SIN, -SIN], -1)),
         VE, "sin"),
        ("cos-neox-halves-interleaved", dict(cos=np.concatenate([COS, COS], -1), sin=np.concatenate([SIN, SIN], -1),
                                             interleaved=True), VE, "cos"),
        ("cos-nan", dict(cos=np.where(COS > 0.9, np.nan, COS), sin=SIN), VE, "cos"),
        ("sin-inf", dict(cos=COS, sin=np.where(SIN > 0.5, np.inf, SIN)), VE, "sin"),
        ("cos-batch-mismatch", dict(cos=np.stack([COS] * 3), sin=np.stack([SIN] * 3)), VE, "cos"),
        ("cos-and-positions", dict(cos=COS, sin=SIN, positions=np.arange(4)), VE, "positions"),
        ("cos-and-offset", dict(cos=COS, sin=SIN, offset=2), VE, "offset"),
        ("cos-and-offset-array", dict(cos=COS, sin=SIN, offset=OFFSETS), VE, "offset"),
        ("cos-and-base", dict(cos=COS, sin=SIN, base=500.0), VE, "base"),
        ("cos-and-scaling", dict(cos=COS, sin=SIN, scaling={"type": "linear", "factor": 2.0}), VE, "scaling"),
        ("cos-and-inv_freq", dict(cos=COS, sin=SIN, inv_freq=np.ones(3)), VE, "inv_freq"),
        ("cos-and-attention_scaling", dict(cos=COS, sin=SIN, attention_scaling=1.0), VE, "attention_scaling"),
        ("cos-and-mrope_section", dict(cos=COS, sin=SIN, mrope_section=(1, 1, 1)), VE, "mrope_section"),
    ]:
        s.raises(f"tables-{id}", exc, match, **kw)
    s.same("cos-and-zero-offset", clean=no, cos=COS, sin=SIN, offset=np.int64(0))


def offset_array_cases(s: Spec) -> None:
    """``offset`` as an array [batch]: row b at ``offset[b] + arange(seq)``; validated like positions."""
    s.same("offset-array", clean={"offset": 0, "positions": OFFSET_ROWS}, offset=OFFSETS)
    s.same("offset-array-list", clean={"offset": 0, "positions": OFFSET_ROWS}, offset=OFFSETS.tolist())
    for id, v in [("int32", OFFSETS.astype(np.int32)), ("uint64", OFFSETS.astype(np.uint64)),
                  ("byteswapped", byteswapped(OFFSETS)), ("misaligned", misaligned(OFFSETS)),
                  ("negative-strides", negative_strides(OFFSETS))]:
        s.same(f"offset-array-{id}", clean={"offset": 0, "positions": OFFSET_ROWS}, offset=v)
    s.same("offset-array-negative", clean={"offset": 0, "positions": OFFSET_ROWS - 200}, offset=OFFSETS - 200)
    s.check("offset-array-near-limit", finite_or_refused, offset=OFFSETS - 103 + 2**53 - 3)
    s.same("offset-array-mrope", clean={"offset": 0, "positions": np.stack([OFFSET_ROWS] * 3)}, offset=OFFSETS,
           mrope_section=(1, 1, 1))
    for id, v, exc in [("wrong-batch", np.array([1, 2, 3]), VE), ("empty", np.array([], np.int64), VE),
                       ("2d", OFFSETS[None], VE), ("float", OFFSETS.astype(float), TE), ("bool", OFFSETS > 5, TE),
                       ("object", OFFSETS.astype(object), TE), ("complex", OFFSETS + 0j, TE),
                       ("str", OFFSETS.astype(str), TE), ("ragged", [[1], [1, 2]], (TE, VE)),
                       ("beyond-2-53", np.array([0, 2**53 - 2]), VE), ("minus-huge", np.array([-2**63, 0]), VE),
                       ("uint64-huge", np.array([0, 2**64 - 1], np.uint64), VE)]:
        s.raises(f"offset-array-{id}", exc, "offset", offset=v)
    s.raises("offset-array-and-positions", VE, "offset", offset=OFFSETS, positions=np.arange(4))
    s.raises("offset-array-and-zero-positions", VE, "offset", offset=np.zeros(2, np.int64), positions=np.arange(4))


def spec_rope_inv_freq() -> Spec:
    s = Spec("rope_inv_freq", dim=6)
    s.dim("dim", huge=False)
    s.raises("dim-huge", SIZE_ERRORS, "", dim=2**62)
    s.base("base")
    scaling_cases(s)
    return s


def spec_rope_cos_sin() -> Spec:
    s = Spec("rope_cos_sin", positions=np.array([0, 5, 2, 9]), dim=6)
    s.positions("positions", any_length=True)
    s.size("positions", baseline=4, float_exc=ValueError, id="n", empty=empty_of((0, 3)))
    s.dim("dim")
    s.base("base")
    s.raises("dtype-int", TypeError, "dtype", dtype=np.int16)
    s.raises("dtype-garbage", TypeError, "dtype", dtype="float33")
    scaling_cases(s)
    return s


def _rope_common(s: Spec, x: str) -> None:
    s.base("base")
    s.flag("interleaved")
    s.flag("inverse")
    for id, v in [("zero", 0), ("odd", 3), ("too-big", 10), ("negative", -2)]:
        s.raises(f"rotary_dim-{id}", ValueError, "rotary_dim", rotary_dim=v)
    s.raises("rotary_dim-float", TypeError, "rotary_dim", rotary_dim=4.0)
    s.same("rotary_dim-partial", rotary_dim=4)
    for id, v in [("minus-1", -1), ("zero", 0), ("one", 1), ("minus-4", -4)]:
        s.raises(f"seq_axis-{id}", ValueError, "seq_axis", seq_axis=v)
    s.raises("seq_axis-float", ValueError, "seq_axis", seq_axis=-3.0)
    s.raises("seq_axis-bool", ValueError, "seq_axis", seq_axis=True)
    s.same("seq_axis-numpy-int", clean={"seq_axis": -3}, seq_axis=np.int64(-3))
    s.integer("offset", huge=finite_or_refused)
    s.raises("positions-and-offset", ValueError, "offset", positions=np.arange(4), offset=1)
    offset_array_cases(s)
    table_cases(s)
    s.same("positions-per-batch", positions=np.array([[0, 1, 2, 3], [7, 5, 3, 1]]))
    s.same("positions-one-row", clean={"positions": np.array([0, 3, 1, 2])}, positions=np.array([[0, 3, 1, 2]]))
    s.raises("positions-batch-mismatch", ValueError, "positions", positions=np.zeros((3, 4), np.int64))
    s.raises("positions-wrong-length", ValueError, "positions", positions=np.arange(5))
    s.raises("positions-3d", ValueError, "positions", positions=np.zeros((1, 2, 4)))
    s.raises("positions-0d", ValueError, "positions", positions=np.int64(3))
    for id, v in [("nan", np.nan), ("inf", np.inf)]:
        p = np.arange(4.0)
        p[2] = v
        s.raises(f"positions-{id}", ValueError, "positions", positions=p)
    s.raises("positions-complex", TypeError, "positions", positions=np.arange(4) + 0j)
    s.raises("positions-object", TypeError, "positions", positions=np.arange(4).astype(object))
    s.raises("positions-bool", TypeError, "positions", positions=np.ones(4, bool))
    s.raises("positions-str", TypeError, "positions", positions=np.array(["a"] * 4))
    for id, make in [("byteswapped", byteswapped), ("misaligned", misaligned), ("negative-strides", negative_strides)]:
        s.same(f"positions-{id}", clean={"positions": np.arange(4) * 3}, positions=make(np.arange(4) * 3))
    s.same("positions-float32", clean={"positions": np.arange(4) * 0.5}, positions=(np.arange(4) * 0.5).astype(F32))
    for id, v in [("nan", [np.nan, 1.0, 0.1]), ("zero-length", [1.0, 1.0]), ("2d", [[1.0, 1.0, 1.0]])]:
        s.raises(f"inv_freq-{id}", ValueError, "inv_freq", inv_freq=np.array(v))
    s.raises("inv_freq-complex", ValueError, "inv_freq", inv_freq=np.ones(3) + 0j)
    s.same("inv_freq-float32", clean={"inv_freq": np.array([1.0, 0.5, 0.25])}, inv_freq=np.array([1, .5, .25], F32))
    s.raises("inv_freq-and-scaling", ValueError, "inv_freq", inv_freq=np.ones(3),
             scaling={"type": "linear", "factor": 2.0})
    for id, v, exc in [("nan", float("nan"), ValueError), ("inf", float("inf"), ValueError),
                       ("str", "1", TypeError), ("bool", True, TypeError), ("array", np.ones(2), TypeError)]:
        s.raises(f"attention_scaling-{id}", exc, "attention_scaling", attention_scaling=v)
    s.same("attention_scaling-int", clean={"attention_scaling": 2.0}, attention_scaling=2)
    scaling_cases(s)
    s.raises("mrope_section-wrong-sum", ValueError, "mrope_section", mrope_section=(1, 1, 2),
             positions=np.zeros((3, 2, 4), np.int64))
    s.raises("mrope_section-two", ValueError, "mrope_section", mrope_section=(1, 2),
             positions=np.zeros((3, 2, 4), np.int64))
    s.raises("mrope_section-float", TypeError, "mrope_section", mrope_section=(1.0, 1.0, 1.0),
             positions=np.zeros((3, 2, 4), np.int64))
    s.raises("mrope_section-negative", ValueError, "mrope_section", mrope_section=(4, -1, 0),
             positions=np.zeros((3, 2, 4), np.int64))
    s.raises("mrope_section-str", TypeError, "mrope_section", mrope_section="111")
    s.raises("mrope_interleaved-alone", ValueError, "mrope", mrope_interleaved=True)
    s.raises("mrope_interleaved-str", TypeError, "mrope_interleaved", mrope_section=(1, 1, 1), mrope_interleaved="1")
    s.raises("mrope-positions-two-axes", ValueError, "positions", mrope_section=(1, 1, 1),
             positions=np.zeros((2, 2, 4), np.int64))
    s.raises("mrope-positions-two-axes-2d", ValueError, "positions", mrope_section=(1, 1, 1),
             positions=np.zeros((2, 4), np.int64))
    s.same("mrope-positions", mrope_section=(1, 1, 1), positions=np.arange(24).reshape(3, 2, 4) % 5)
    s.same("mrope-positions-interleaved", mrope_section=(1, 1, 1), mrope_interleaved=True,
           positions=np.arange(24).reshape(3, 2, 4) % 7)


def spec_apply_rope() -> Spec:
    x = rand(2, 4, 3, 6)  # [batch, seq, heads, head_dim]
    s = Spec("apply_rope", x=x)
    s.floats("x")
    s.raises("x-odd-head_dim", ValueError, "x", x=rand(2, 4, 3, 5))
    s.raises("x-empty-head_dim", ValueError, "x", x=rand(2, 4, 3, 0))
    s.raises("x-2d", ValueError, "x", x=rand(4, 6))
    s.raises("x-1d-seq_axis-minus-2", ValueError, "x", x=rand(6), seq_axis=-2)
    s.check("x-empty-seq", empty_of((2, 0, 3, 6)), x=rand(2, 0, 3, 6))
    s.check("x-empty-batch", empty_of((0, 4, 3, 6)), x=rand(0, 4, 3, 6))
    s.same("seq_axis-minus-2", seq_axis=-2, x=rand(2, 3, 4, 6))
    s.same("seq_axis-minus-2-no-heads", seq_axis=-2, x=rand(2, 4, 6))
    s.raises("offset-array-no-batch-axis", ValueError, "offset", seq_axis=-2, x=rand(4, 6), offset=np.arange(4))
    xh = rand(2, 3, 4, 6)  # [batch, heads, seq, head_dim]
    s.same("offset-array-seq_axis-minus-2", clean={"x": xh, "offset": 0, "positions": OFFSET_ROWS, "seq_axis": -2}, x=xh,
           seq_axis=-2, offset=OFFSETS)
    _rope_common(s, "x")
    s.out(x.shape, F32, inputs=["x"])
    s.read("positions", np.arange(4)).read("positions", np.arange(4.0)).read("offset", OFFSETS)
    s.read("inv_freq", np.array([1.0, 0.1, 0.01]))
    in_place_variants(s, {"x": "out"})
    return s


def spec_apply_rope_qk() -> Spec:
    q, k = rand(2, 4, 3, 6), rand(2, 4, 1, 6)
    s = Spec("apply_rope_qk", q=q, k=k)
    s.floats("q")
    s.floats("k")
    s.raises("k-seq-mismatch", ValueError, "seq", k=rand(2, 5, 1, 6))
    s.raises("k-batch-mismatch", ValueError, "k", k=rand(3, 4, 1, 6), positions=np.arange(8).reshape(2, 4))
    s.raises("k-rank-mismatch", ValueError, "k", k=rand(4, 6))
    s.raises("k-odd-head_dim", ValueError, "k", k=rand(2, 4, 1, 5))
    s.raises("k-head_dim-mismatch", ValueError, "rotary_dim", k=rand(2, 4, 1, 4))
    s.raises("k-head_dim-below-rotary_dim", ValueError, "rotary_dim", k=rand(2, 4, 1, 4), rotary_dim=6)
    s.same("k-head_dim-mismatch-rotary_dim", k=rand(2, 4, 1, 8), rotary_dim=4)
    # Mixed dtypes are documented: each operand rotated in its own dtype (as two apply_rope calls).
    s.same("k-float64", k=rand(2, 4, 1, 6, dtype=np.float64))
    q2, k16 = q.copy(), k.astype(np.float16)
    s.same("k-float16-in-place", clean={"q": q.copy(), "k": k16.copy()}, q=q2, k=k16, out_q=q2, out_k=k16)
    s.same("k-rank-3-seq_axis-minus-2", seq_axis=-2, q=rand(2, 3, 4, 6), k=rand(2, 4, 6))
    s.check("empty-seq", empty_of((2, 0, 3, 6)), q=rand(2, 0, 3, 6), k=rand(2, 0, 1, 6))
    _rope_common(s, "q")
    s.out(q.shape, F32, inputs=["q"], arg="out_q")
    s.out(k.shape, F32, inputs=["k"], arg="out_k")
    s.read("positions", np.arange(4.0), arg="out_q").read("positions", np.arange(4.0), arg="out_k")
    buf = np.zeros(2 * 4 * 3 * 6, F32)
    s.raises("out_q-is-out_k", ValueError, "out", q=rand(2, 4, 3, 6), k=rand(2, 4, 3, 6),
             out_q=buf.reshape(2, 4, 3, 6), out_k=buf.reshape(2, 4, 3, 6))
    same = rand(2, 4, 3, 6)
    s.raises("k-is-q-in-place", ValueError, "overlaps", q=same, k=same, out_q=same)
    s.raises("out_k-is-q", ValueError, "overlaps", q=same, k=rand(2, 4, 3, 6), out_k=same)
    xpos_cases(s)
    in_place_variants(s, {"q": "out_q", "k": "out_k"})
    return s


def xpos_cases(s: Spec) -> None:
    """apply_rope_qk's xPos arguments."""
    for id, v, exc in [("zero", 0.0, VE), ("negative", -512.0, VE), ("nan", float("nan"), VE), ("inf", float("inf"), VE),
                       ("str", "512", TE), ("bool", True, TE), ("array", np.ones(2), TE)]:
        s.raises(f"xpos_scale_base-{id}", exc, "xpos_scale_base", xpos_scale_base=v)
    for id, v, exc in [("nan", float("nan"), VE), ("inf", float("inf"), VE), ("str", "2", TE), ("none", None, TE)]:
        s.raises(f"xpos_center-{id}", exc, "xpos_center", xpos_scale_base=512.0, xpos_center=v)
    s.raises("xpos_center-without-xpos", VE, "xpos_center", xpos_center=2)
    s.raises("xpos-and-cos-sin", VE, "xpos_scale_base", xpos_scale_base=512.0, cos=COS, sin=SIN)
    s.raises("xpos-and-mrope", VE, "xpos_scale_base", xpos_scale_base=512.0, mrope_section=(1, 1, 1))
    s.raises("xpos-overflow", VE, "xpos_center", xpos_scale_base=1.0, offset=10**6)
    s.same("xpos-int-base", clean={"xpos_scale_base": 512.0}, xpos_scale_base=512, xpos_center=0)
    s.same("xpos-numpy", clean={"xpos_scale_base": 8.0, "xpos_center": 2.0}, xpos_scale_base=np.float32(8),
           xpos_center=np.int64(2))
    s.same("xpos-offset-array", clean={"offset": 0, "positions": OFFSET_ROWS}, xpos_scale_base=8.0, xpos_center=50,
           offset=OFFSETS)
    s.same("xpos-mixed-dtypes", k=rand(2, 4, 1, 6).astype(np.float16), xpos_scale_base=8.0, xpos_center=1.5)
    q2, k2 = rand(2, 4, 3, 6), rand(2, 4, 1, 6)
    s.same("xpos-in-place", clean={"q": q2.copy(), "k": k2.copy()}, q=q2, k=k2, out_q=q2, out_k=k2,
           xpos_scale_base=8.0, xpos_center=1.5)


def spec_positions_from_cu_seqlens() -> Spec:
    s = Spec("positions_from_cu_seqlens", cu_seqlens=np.array([0, 3, 3, 7]))
    s.raises("cu_seqlens-decreasing", ValueError, "cu_seqlens", cu_seqlens=np.array([0, 5, 3]))
    s.raises("cu_seqlens-not-from-zero", ValueError, "cu_seqlens", cu_seqlens=np.array([1, 5]))
    s.raises("cu_seqlens-empty", ValueError, "cu_seqlens", cu_seqlens=np.array([], np.int64))
    s.raises("cu_seqlens-empty-list", ValueError, "cu_seqlens", cu_seqlens=[])
    s.raises("cu_seqlens-2d", ValueError, "cu_seqlens", cu_seqlens=np.zeros((2, 2), np.int64))
    s.raises("cu_seqlens-float", TypeError, "cu_seqlens", cu_seqlens=np.array([0.0, 3.0]))
    s.raises("cu_seqlens-bool", TypeError, "cu_seqlens", cu_seqlens=np.array([False, True]))
    s.raises("cu_seqlens-object", TypeError, "cu_seqlens", cu_seqlens=np.array([0, 3], dtype=object))
    s.raises("cu_seqlens-huge", SIZE_ERRORS, "", cu_seqlens=np.array([0, 2**62], np.int64))
    s.raises("cu_seqlens-wrapping", (ValueError, MemoryError), "", cu_seqlens=np.array([0, 2**62, 2**63 - 1], np.int64))
    s.raises("cu_seqlens-uint64-huge", (ValueError, MemoryError), "",
             cu_seqlens=np.array([0, 2**64 - 1], np.uint64))
    s.check("cu_seqlens-only-zero", empty_of((0,)), cu_seqlens=np.array([0]))
    for id, make in [("byteswapped", byteswapped), ("misaligned", misaligned), ("negative-strides", negative_strides),
                     ("stepped", stepped)]:
        s.same(f"cu_seqlens-{id}", clean={"cu_seqlens": np.array([0, 3, 3, 7])}, cu_seqlens=make(np.array([0, 3, 3, 7])))
    s.same("cu_seqlens-list", clean={"cu_seqlens": np.array([0, 3, 3, 7])}, cu_seqlens=[0, 3, 3, 7])
    s.same("cu_seqlens-int32", clean={"cu_seqlens": np.array([0, 3, 3, 7])}, cu_seqlens=np.array([0, 3, 3, 7], np.int32))
    return s


# ------------------------------------------------------------------ RotaryEmbedding and its methods

def spec_rotary_embedding() -> Spec:
    s = Spec("RotaryEmbedding", dim=6)
    s.dim("dim", huge=False)
    s.base("base")
    s.flag("interleaved")
    for id, v in [("odd", 3), ("too-big", 8), ("zero", 0)]:
        s.raises(f"rotary_dim-{id}", ValueError, "rotary_dim", rotary_dim=v)
    s.raises("dim-odd-without-rotary_dim", ValueError, "dim", dim=7)
    s.same("dim-odd-rotary_dim", dim=7, rotary_dim=4)
    s.raises("max_positions-negative", ValueError, "max_positions", max_positions=-1)
    s.raises("max_positions-float", TypeError, "max_positions", max_positions=2.5)
    for id, v, exc in [("zero", 0.0, VE), ("nan", float("nan"), VE), ("str", "512", TE), ("bool", True, TE)]:
        s.raises(f"xpos_scale_base-{id}", exc, "xpos_scale_base", xpos_scale_base=v)
    scaling_cases(s)
    _call_cases(s)
    _cos_sin_cases(s)
    _from_config_cases(s)
    return s


def _call_cases(s: Spec) -> None:
    """``RotaryEmbedding(6, ...)(q, k, ...)``: refused as apply_rope_qk refuses; results as apply_rope_qk's."""
    q, k = rand(2, 4, 2, 6), rand(2, 4, 1, 6)

    def call(ctor: Optional[Dict[str, Any]] = None, q: np.ndarray = q, k: np.ndarray = k,
             **kw: Any) -> Callable[[Any], Any]:
        return lambda api: api.RotaryEmbedding(6, **(ctor or {}))(q, k, **kw)

    for id, kw, exc, match in [
        ("positions-nan", dict(positions=np.array([0, 1, np.nan, 3])), VE, "positions"),
        ("positions-wrong-length", dict(positions=np.arange(5)), VE, "positions"),
        ("positions-and-offset", dict(positions=np.arange(4), offset=1), VE, "offset"),
        ("q-int", dict(q=q.astype(np.int32)), TE, "q"),
        ("k-complex", dict(k=k.astype(np.complex64)), TE, "k"),
        ("k-seq-mismatch", dict(k=rand(2, 5, 1, 6)), VE, "seq"),
        ("offset-float", dict(offset=1.5), TE, "offset"),
        ("offset-array-wrong-batch", dict(offset=np.array([1, 2, 3])), VE, "offset"),
        ("offset-array-float", dict(offset=np.array([1.0, 2.0])), TE, "offset"),
        ("offset-array-and-positions", dict(offset=np.array([1, 2]), positions=np.arange(4)), VE, "offset"),
        ("seq_axis-minus-1", dict(seq_axis=-1), VE, "seq_axis"),
        ("inverse-str", dict(inverse="yes"), TE, "inverse"),
        ("out_q-wrong-shape", dict(out_q=np.zeros((2, 4, 1, 6), F32)), VE, "out_q"),
        ("out_k-wrong-dtype", dict(out_k=np.zeros((2, 4, 1, 6))), TE, "out_k"),
    ]:
        s.custom(f"call-{id}", call(**kw), Raises(exc, match))
    s.custom("call-head_dim-below-dim", lambda api: api.RotaryEmbedding(8)(q, k), Raises(VE, "rotary_dim"))
    s.custom("call-huge-offset", call({"max_positions": 16}, offset=HUGE), Raises(VE, "offset"))
    s.custom("call-empty", lambda api: api.RotaryEmbedding(6)(rand(1, 0, 2, 6), rand(1, 0, 1, 6)),
             Check(empty_of((1, 0, 2, 6))))
    # Results: apply_rope_qk's with the same frequencies (reference twin on clean copies).
    plain = dict(q=q, k=k, rotary_dim=4, offset=3)
    for id, make in [("misaligned", misaligned), ("negative-strides", negative_strides), ("stepped", stepped),
                     ("byteswapped", byteswapped)]:
        s.custom(f"call-{id}", lambda api, m=make: api.RotaryEmbedding(6, rotary_dim=4)(m(q), m(k), offset=3),
                 Same(plain, name="apply_rope_qk"))
    s.custom("call-positions-per-batch",
             lambda api: api.RotaryEmbedding(6, interleaved=True)(q, k, np.array([[0, 9, 2, 3], [5, 1, 0, 7]])),
             Same(dict(q=q, k=k, positions=np.array([[0, 9, 2, 3], [5, 1, 0, 7]]), interleaved=True),
                  name="apply_rope_qk"))
    qh, kh = rand(2, 2, 4, 6), rand(2, 1, 4, 6)  # [batch, heads, seq, head_dim]
    s.custom("call-seq_axis-minus-2-inverse",
             lambda api: api.RotaryEmbedding(6)(qh, kh, seq_axis=-2, inverse=True),
             Same(dict(q=qh, k=kh, seq_axis=-2, inverse=True), name="apply_rope_qk"))
    s.custom("call-offset-array", lambda api: api.RotaryEmbedding(6)(q, k, offset=OFFSETS),
             Same(dict(q=q, k=k, positions=OFFSET_ROWS), name="apply_rope_qk"))
    s.custom("call-dynamic-offset-array", lambda api: api.RotaryEmbedding(6, scaling=DYNAMIC)(q, k, offset=OFFSETS),
             Same(dict(q=q, k=k, scaling={**DYNAMIC, "seq_len": 104}, positions=OFFSET_ROWS), name="apply_rope_qk"))
    s.custom("call-xpos_center-without-xpos", lambda api: api.RotaryEmbedding(6)(q, k, xpos_center=1),
             Raises(VE, "xpos_center"))
    s.custom("call-xpos_center-nan", lambda api: api.RotaryEmbedding(6, xpos_scale_base=8)(q, k, xpos_center=np.nan),
             Raises(VE, "xpos_center"))
    s.custom("call-xpos", lambda api: api.RotaryEmbedding(6, xpos_scale_base=8)(q, k, offset=3, xpos_center=4),
             Same(dict(q=q, k=k, offset=3, xpos_scale_base=8.0, xpos_center=4), name="apply_rope_qk"))
    s.custom("call-xpos-yarn", lambda api: api.RotaryEmbedding(6, scaling=YARN, xpos_scale_base=8)(q, k, offset=5),
             Same(dict(q=q, k=k, scaling=YARN, offset=5, xpos_scale_base=8.0), name="apply_rope_qk"))
    s.custom("call-yarn", lambda api: api.RotaryEmbedding(6, scaling=YARN)(q, k, offset=5),
             Same(dict(q=q, k=k, scaling=YARN, offset=5), name="apply_rope_qk"))
    s.custom("call-dynamic-long", lambda api: api.RotaryEmbedding(6, scaling=DYNAMIC)(q, k, offset=30),
             Same(dict(q=q, k=k, scaling={**DYNAMIC, "seq_len": 34}, offset=30), name="apply_rope_qk"))

    def in_place(api: Any) -> Any:
        qq, kk = q.copy(), k.copy()
        got = api.RotaryEmbedding(6)(qq, kk, offset=2, out_q=qq, out_k=kk)
        assert got[0] is qq and got[1] is kk, "out_q/out_k must be returned as passed"
        return got

    s.custom("call-in-place", in_place, Same(dict(q=q, k=k, offset=2), name="apply_rope_qk"))


def _cos_sin_cases(s: Spec) -> None:
    """``RotaryEmbedding(6, ...).cos_sin(positions, dtype)``: refused as rope_cos_sin refuses; its values."""
    pos = np.array([0, 5, 2, 9])

    def cos_sin(ctor: Optional[Dict[str, Any]] = None, **kw: Any) -> Callable[[Any], Any]:
        return lambda api: api.RotaryEmbedding(6, **(ctor or {})).cos_sin(**kw)

    cached = {"max_positions": 16}
    for id, kw, exc, match in [
        ("positions-nan", dict(positions=np.array([0.0, np.nan])), VE, "positions"),
        ("positions-inf", dict(positions=np.array([0.0, np.inf])), VE, "positions"),
        ("positions-2d", dict(positions=pos.reshape(2, 2)), VE, "positions"),
        ("positions-negative-count", dict(positions=-1), VE, "positions"),
        ("positions-float-scalar", dict(positions=2.5), VE, "positions"),
        ("positions-none", dict(positions=None), VE, "positions"),
        ("positions-complex", dict(positions=pos + 0j), TE, "positions"),
        ("positions-str", dict(positions=pos.astype(str)), TE, "positions"),
        ("positions-bool", dict(positions=pos > 2), TE, "positions"),
        ("positions-object", dict(positions=pos.astype(object)), TE, "positions"),
        ("dtype-int", dict(positions=pos, dtype=np.int32), TE, "dtype"),
        ("dtype-garbage", dict(positions=pos, dtype="float33"), TE, "dtype"),
    ]:
        s.custom(f"cos_sin-{id}", cos_sin(**kw), Raises(exc, match))
        s.custom(f"cos_sin-{id}-cached", cos_sin(cached, **kw), Raises(exc, match))
    for h in (2**40, 2**62):
        s.custom(f"cos_sin-huge-{h.bit_length() - 1}", cos_sin(positions=h), Raises(SIZE_ERRORS, ""))
        s.custom(f"cos_sin-huge-{h.bit_length() - 1}-cached", cos_sin(cached, positions=h), Raises(SIZE_ERRORS, ""))
    s.custom("cos_sin-empty", cos_sin(positions=0), Check(empty_of((0, 3))))
    s.custom("cos_sin-empty-cached", cos_sin(cached, positions=np.array([], np.int64)), Check(empty_of((0, 3))))
    # Values: rope_cos_sin's with the same frequencies, from the cache or not, in any layout.
    for id, ctor, kw, clean in [
        ("positions", {}, dict(positions=pos), dict(positions=pos)),
        ("count", {}, dict(positions=4), dict(positions=4)),
        ("count-cached", cached, dict(positions=4), dict(positions=4)),
        ("cached", cached, dict(positions=pos), dict(positions=pos)),
        ("cached-beyond", cached, dict(positions=np.array([3, 15, 16, 40])), dict(positions=np.array([3, 15, 16, 40]))),
        ("cached-negative", cached, dict(positions=np.array([-3, 2])), dict(positions=np.array([-3, 2]))),
        ("cached-float", cached, dict(positions=np.array([0.5, 2.0])), dict(positions=np.array([0.5, 2.0]))),
        ("cached-float64", cached, dict(positions=pos, dtype=np.float64), dict(positions=pos, dtype=np.float64)),
        ("float16", {}, dict(positions=pos, dtype=np.float16), dict(positions=pos, dtype=np.float16)),
        ("list", cached, dict(positions=pos.tolist()), dict(positions=pos)),
        ("float32-positions", {}, dict(positions=(pos * 0.5).astype(F32)), dict(positions=pos * 0.5)),
        ("byteswapped", cached, dict(positions=byteswapped(pos)), dict(positions=pos)),
        ("misaligned", cached, dict(positions=misaligned(pos)), dict(positions=pos)),
        ("negative-strides", {}, dict(positions=negative_strides(pos)), dict(positions=pos)),
        ("numpy-int", cached, dict(positions=np.int64(5)), dict(positions=5)),
        ("llama3", {"scaling": LLAMA3}, dict(positions=pos), dict(positions=pos, scaling=LLAMA3)),
        ("dynamic", {"scaling": DYNAMIC}, dict(positions=np.array([3, 40])),
         dict(positions=np.array([3, 40]), scaling={**DYNAMIC, "seq_len": 41})),
        ("longrope-long", {"scaling": LONGROPE}, dict(positions=np.array([3, 40])),
         dict(positions=np.array([3, 40]), scaling={**LONGROPE, "seq_len": 41})),
    ]:
        s.custom(f"cos_sin-{id}", cos_sin(ctor, **kw), Same({"dim": 6, **clean}, name="rope_cos_sin"))


class _NotADictConfig:
    def to_dict(self) -> List[Any]:
        return [("head_dim", 6)]


def _from_config_cases(s: Spec) -> None:
    """``RotaryEmbedding.from_config(config, layer_type=, max_positions=)``: bad configs are named errors;
    good ones rotate as apply_rope_qk with the arguments the config stands for."""
    theta = {"rope_theta": 1e4}
    per_layer = {"head_dim": 6, "layer_types": ["sliding_attention", "full_attention"],
                 "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
                                     "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6}}}
    for id, config, kw, exc, match in [
        ("str", "llama", {}, TE, "config"),
        ("int", 3, {}, TE, "config"),
        ("to_dict-not-a-dict", _NotADictConfig(), {}, TE, "to_dict"),
        ("no-rope", {"hidden_size": 12, "num_attention_heads": 2}, {}, VE, "rotary"),
        ("no-head_dim", theta, {}, VE, "head_dim"),
        ("head_dim-zero", {"head_dim": 0, **theta}, {}, VE, "head_dim"),
        ("head_dim-str", {"head_dim": "6", **theta}, {}, VE, "head_dim"),
        ("head_dim-float", {"head_dim": 6.0, **theta}, {}, VE, "head_dim"),
        ("head_dim-odd", {"head_dim": 5, **theta}, {}, VE, "dim"),
        ("num_attention_heads-zero", {"hidden_size": 12, "num_attention_heads": 0, **theta}, {}, VE,
         "num_attention_heads"),
        ("rope_parameters-list", {"head_dim": 6, "rope_parameters": [("rope_type", "default")]}, {}, VE,
         "rope_parameters"),
        ("rope_theta-nan", {"head_dim": 6, "rope_theta": float("nan")}, {}, VE, "rope_theta"),
        ("rope_theta-one", {"head_dim": 6, "rope_parameters": {"rope_type": "default", "rope_theta": 1}}, {}, VE,
         "rope_theta"),
        ("rope_type-unknown", {"head_dim": 6, "rope_parameters": {"rope_type": "quadratic"}}, {}, VE, "rope_type"),
        ("rope_key-unknown", {"head_dim": 6, "rope_parameters": {"rope_type": "linear", "factor": 2, "fctor": 3}},
         {}, VE, "fctor"),
        ("per-layer-without-layer_type", per_layer, {}, VE, "layer_type"),
        ("per-layer-unknown-layer_type", per_layer, {"layer_type": "global"}, VE, "layer_type"),
        ("layer_type-not-in-layer_types", {"head_dim": 6, "layer_types": ["full_attention"], **theta},
         {"layer_type": "sliding_attention"}, VE, "layer_type"),
        ("nope-layer", {**per_layer, "rope_parameters": {**per_layer["rope_parameters"], "full_attention": None}},
         {"layer_type": "full_attention"}, VE, "no rotary"),
        ("dynamic-without-max_position_embeddings",
         {"head_dim": 6, "rope_parameters": {"rope_type": "dynamic", "factor": 2.0}}, {}, VE,
         "max_position_embeddings"),
        ("yarn-without-lengths", {"head_dim": 6, "rope_parameters": {"rope_type": "yarn", "factor": 2.0}}, {}, VE,
         "original_max_position_embeddings"),
        ("mrope-section-wrong-sum", {"model_type": "qwen2_vl", "head_dim": 6, **theta}, {}, VE, "mrope_section"),
        ("partial-odd", {"head_dim": 6, "partial_rotary_factor": 0.5, **theta}, {}, VE, "partial_rotary_factor"),
        ("rotary_dim-too-big", {"model_type": "gptj", "n_embd": 12, "n_head": 2, "rotary_dim": 8}, {}, VE,
         "rotary_dim"),
        ("max_positions-negative", {"head_dim": 6, **theta}, {"max_positions": -1}, VE, "max_positions"),
    ]:
        s.custom(f"from_config-{id}", lambda api, c=config, k=kw: api.RotaryEmbedding.from_config(c, **k),
                 Raises(exc, match))
    q, k = rand(2, 4, 2, 6), rand(2, 4, 1, 6)
    pos3 = np.arange(24).reshape(3, 2, 4) % 5
    for id, config, kw, call, plain in [
        ("rope_parameters", {"head_dim": 6, "rope_parameters": {"rope_type": "linear", "factor": 2.0,
                                                                "rope_theta": 5e5}}, {}, dict(offset=3),
         dict(base=5e5, scaling={"type": "linear", "factor": 2.0}, offset=3)),
        ("raw-rope_scaling", {"hidden_size": 12, "num_attention_heads": 2, "rope_theta": 5e5,
                              "rope_scaling": {"type": "linear", "factor": 2.0}}, {}, dict(offset=3),
         dict(base=5e5, scaling={"type": "linear", "factor": 2.0}, offset=3)),
        ("gptj", {"model_type": "gptj", "n_embd": 12, "n_head": 2, "rotary_dim": 4}, {}, dict(offset=1),
         dict(rotary_dim=4, interleaved=True, offset=1)),
        ("dynamic", {"head_dim": 6, "max_position_embeddings": 16, "rope_parameters": {"rope_type": "dynamic",
                                                                                     "factor": 2.0}}, {},
         dict(offset=30), dict(scaling={**DYNAMIC, "seq_len": 34}, offset=30)),
        ("per-layer", per_layer, {"layer_type": "full_attention"}, dict(offset=2),
         dict(base=1e6, scaling={"type": "linear", "factor": 8.0}, offset=2)),
        ("qwen2-vl", {"model_type": "qwen2_vl", "head_dim": 6,
                      "rope_parameters": {"type": "mrope", "mrope_section": [1, 1, 1], "rope_theta": 1e6,
                                          "rope_type": "default"}}, {}, dict(positions=pos3),
         dict(base=1e6, mrope_section=(1, 1, 1), positions=pos3)),
        ("qwen3-vl", {"model_type": "qwen3_vl_text", "head_dim": 6,
                      "rope_parameters": {"rope_type": "default", "mrope_section": [1, 1, 1]}}, {},
         dict(positions=pos3), dict(mrope_section=(1, 1, 1), mrope_interleaved=True, positions=pos3)),
        ("max_positions", {"head_dim": 6, **theta}, {"max_positions": 8}, dict(offset=2), dict(offset=2)),
    ]:
        s.custom(f"from_config-{id}",
                 lambda api, c=config, kk=kw, cl=call: api.RotaryEmbedding.from_config(c, **kk)(q, k, **cl),
                 Same(dict(q=q, k=k, **plain), name="apply_rope_qk"))


SPECS: Dict[str, Callable[[], Spec]] = {
    "rope_inv_freq": spec_rope_inv_freq,
    "rope_cos_sin": spec_rope_cos_sin,
    "apply_rope": spec_apply_rope,
    "apply_rope_qk": spec_apply_rope_qk,
    "positions_from_cu_seqlens": spec_positions_from_cu_seqlens,
    "RotaryEmbedding": spec_rotary_embedding,
}


def _large_qk(out: Any) -> Any:
    q, k = (None, None) if out is None else out
    return posenc.apply_rope_qk(BIG.x, BIG.x[:, :, :2], offset=5, out_q=q, out_k=k)


# One call per executor-backed function, big enough to go parallel: tests/test_invariants.py runs
# each (thread-count determinism, backend routing, concurrency); out=None means a new result.
LARGE: Dict[str, Callable[[Any], Any]] = {
    "rope_cos_sin": lambda out: posenc.rope_cos_sin(BIG.pos[1], 128),
    "apply_rope": lambda out: posenc.apply_rope(BIG.x, offset=5, out=out),
    "apply_rope_qk": _large_qk,
}
