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

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import posenc
from posenc import reference as ref

from helpers import FLOAT_DTYPES, assert_close_to_float64, eps, strided_view
from hostile import misaligned

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
    half = draw(st.integers(1, 20))
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
