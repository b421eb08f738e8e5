"""Transformers v5 rope configs: ``scaling`` takes a ``rope_parameters`` dict as it is, and
``RotaryEmbedding.from_config`` reads a whole config (issue 13).

Parity with transformers (an optional peer: these tests skip without it) is checked three ways for
every rope type: the frequencies and attention scaling of ``ROPE_INIT_FUNCTIONS`` (or the model's own
``compute_default_rope_parameters``), the cos/sin of the model's rotary class at positions up to 2^20,
and q/k rotated by the model's ``apply_rotary_pos_emb``. Transformers evaluates its angles in float32,
so its error grows with the position; the comparisons allow exactly that error, derived per frequency:

    |ours − theirs| ≤ p·ω_j·(|δ_j| + 2^-24) + 4·2^-24      (cos and sin, |values| ≤ 1, times the scaling)

where δ_j = ω_hf/ω − 1 is transformers' own float32 rounding of the frequency (measured, itself
checked to be a few float32 ulps) and 2^-24 the rounding of its product p·ω in float32. posenc's
angles are exact (float64): the bound is transformers' error, not a tolerance loosened until it passes.
"""

from __future__ import annotations

import numpy as np
import pytest

import posenc

from helpers import Peer, needs

torch = Peer("torch")
mru = Peer("transformers.modeling_rope_utils")
# Tests against transformers (an optional peer, installed beside torch); the closed forms and docs run without.
requires_hf = needs(torch, mru)

U = 2.0 ** -24
# Positions: a short prefix, the edges of the original contexts used below, and long ones up to 2^20.
POSITIONS = np.concatenate([np.arange(40), [511, 512, 513, 2047, 2048, 2049, 4095, 4096, 4097, 8191, 8192,
                                            32767, 32768, 131071, 131072, 500000, 2**20 - 1]]).astype(np.int64)


def hf_inv_freq_rtol(w_ours: np.ndarray, w_hf: np.ndarray) -> float:
    """Transformers' frequencies are posenc's rounded through a float32 pow/division: a few ulps."""
    nz = w_ours != 0
    assert (w_hf[~nz] == 0).all(), "a zero frequency (p-RoPE) must stay zero"
    return float(np.max(np.abs(w_hf[nz] / w_ours[nz] - 1), initial=0.0))


def assert_hf_frequencies(w: np.ndarray, a: float, hf_w, hf_a) -> None:
    hf = hf_w.double().numpy()
    assert w.shape == hf.shape, (w.shape, hf.shape)
    assert hf_inv_freq_rtol(w, hf) <= 6 * U, hf_inv_freq_rtol(w, hf)  # float32 evaluation of the formula (measured: up to 5.4 ulps, llama3)
    assert a == pytest.approx(float(hf_a), rel=1e-12, abs=0)


def angle_bound(positions: np.ndarray, w: np.ndarray, w_hf: np.ndarray, scale: float) -> np.ndarray:
    """Transformers' float32 error bound of a·cos(p·ω_j) and a·sin(p·ω_j), [n, pairs] (see the module doc)."""
    nz = w != 0
    delta = np.where(nz, np.abs(w_hf / np.where(nz, w, 1.0) - 1), 0.0)
    p = np.abs(positions.astype(np.float64))[:, None]
    return abs(scale) * (p * w[None, :] * (delta[None, :] + U) + 4 * U)


def assert_cos_sin(cos, sin, hf_cos, hf_sin, positions, w, w_hf, scale) -> None:
    """Ours [n, pairs] vs transformers' [n, 2·pairs] (each half once), within transformers' float32 error."""
    half = cos.shape[-1]
    hc, hs = hf_cos.double().numpy(), hf_sin.double().numpy()
    np.testing.assert_array_equal(hc[:, :half], hc[:, half:])
    bound = angle_bound(positions, w, w_hf, scale)
    for ours, theirs, name in ((cos, hc[:, :half], "cos"), (sin, hs[:, :half], "sin")):
        err = np.abs(np.asarray(ours, np.float64) - theirs)
        assert (err <= bound).all(), f"{name}: worst excess {np.max(err - bound)} at {np.unravel_index(np.argmax(err - bound), err.shape)}"
    # And ours are exact: within the float32 rounding of a·cos/a·sin computed in float64.
    theta = positions.astype(np.float64)[:, None] * w[None, :]
    np.testing.assert_allclose(np.asarray(cos, np.float64), scale * np.cos(theta), rtol=0, atol=abs(scale) * U * 1.01)
    np.testing.assert_allclose(np.asarray(sin, np.float64), scale * np.sin(theta), rtol=0, atol=abs(scale) * U * 1.01)


def llama_config(rope_parameters, *, head_dim=64, max_pos=4096, **extra):
    from transformers import LlamaConfig

    return LlamaConfig(hidden_size=4 * head_dim, num_attention_heads=4, num_key_value_heads=2, head_dim=head_dim,
                       num_hidden_layers=1, intermediate_size=32, vocab_size=32, max_position_embeddings=max_pos,
                       rope_parameters=dict(rope_parameters), **extra)


rng_ = np.random.default_rng(13)
SHORT32, LONG32 = [float(v) for v in 1 + rng_.random(32)], [float(v) for v in 1 + 30 * rng_.random(32)]
SHORT16, LONG16 = SHORT32[:16], LONG32[:16]

# (id, rope_parameters as a transformers v5 config holds them, head_dim, max_position_embeddings)
RP_CASES = [
    ("default", {"rope_type": "default", "rope_theta": 10000.0}, 64, 4096),
    ("default-theta-5e5", {"rope_type": "default", "rope_theta": 500000.0}, 128, 8192),
    ("linear", {"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0}, 64, 4096),
    ("linear-partial", {"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0, "partial_rotary_factor": 0.5},
     64, 4096),
    ("dynamic", {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0}, 64, 2048),
    ("dynamic-partial", {"rope_type": "dynamic", "factor": 4.0, "rope_theta": 10000.0, "partial_rotary_factor": 0.25},
     128, 2048),
    ("yarn", {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096, "rope_theta": 1e6},
     128, 16384),
    ("yarn-deepseek", {"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096,
                       "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0, "rope_theta": 10000.0},
     64, 163840),
    ("yarn-gpt-oss", {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096, "beta_fast": 32.0,
                      "beta_slow": 1.0, "truncate": False, "rope_theta": 150000.0}, 64, 131072),
    ("yarn-attention-factor", {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 2048,
                               "attention_factor": 0.9, "rope_theta": 10000.0}, 64, 16384),
    ("yarn-partial", {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 2048,
                      "partial_rotary_factor": 0.5, "rope_theta": 10000.0}, 128, 8192),
    ("llama3", {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192, "rope_theta": 500000.0}, 128, 131072),
    ("llama3.2", {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 8192, "rope_theta": 500000.0}, 64, 131072),
    ("longrope", {"rope_type": "longrope", "short_factor": SHORT32, "long_factor": LONG32, "factor": 32.0,
                  "original_max_position_embeddings": 4096, "rope_theta": 10000.0}, 64, 131072),
    ("longrope-partial", {"rope_type": "longrope", "short_factor": SHORT16, "long_factor": LONG16, "factor": 16.0,
                          "original_max_position_embeddings": 2048, "partial_rotary_factor": 0.5,
                          "rope_theta": 10000.0}, 64, 32768),
    ("proportional", {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1e6}, 512, 131072),
    ("proportional-factor", {"rope_type": "proportional", "partial_rotary_factor": 0.5, "factor": 8.0,
                             "rope_theta": 10000.0}, 64, 8192),
    ("proportional-full", {"rope_type": "proportional", "rope_theta": 10000.0}, 64, 4096),
]


def hf_scaling(config) -> dict:
    """The config's rope_parameters as posenc's scaling, plus what transformers reads from the config itself
    (dynamic NTK's original length is max_position_embeddings; longrope/yarn without factor use the ratio)."""
    rp = dict(config.rope_parameters)
    if rp["rope_type"] == "dynamic":
        rp["original_max_position_embeddings"] = config.max_position_embeddings
    return rp


@requires_hf
@pytest.mark.parametrize("case", RP_CASES, ids=[c[0] for c in RP_CASES])
@pytest.mark.parametrize("seq_len", [None, 1000, 200000])
def test_rope_inv_freq_matches_rope_init_functions(case, seq_len):
    """rope_inv_freq(head_dim, scaling=config.rope_parameters) = ROPE_INIT_FUNCTIONS (or the default)."""
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    name, rp, head_dim, max_pos = case
    config = llama_config(rp, head_dim=head_dim, max_pos=max_pos)
    kind = config.rope_parameters["rope_type"]
    fn = LlamaRotaryEmbedding.compute_default_rope_parameters if kind == "default" else mru.ROPE_INIT_FUNCTIONS[kind]
    hf_w, hf_a = fn(config, seq_len=seq_len)
    scaling = hf_scaling(config)
    if seq_len is not None and kind in ("dynamic", "longrope"):
        scaling["seq_len"] = seq_len
    w, a = posenc.rope_inv_freq(head_dim, scaling=scaling)  # base from rope_theta
    assert_hf_frequencies(w, a, hf_w, hf_a)
    if "partial_rotary_factor" in rp and kind != "proportional":
        assert w.shape == (int(head_dim * rp["partial_rotary_factor"]) // 2,)


@requires_hf
@pytest.mark.parametrize("case", RP_CASES, ids=[c[0] for c in RP_CASES])
def test_rotary_class_and_apply_rotary_pos_emb(case):
    """cos/sin of the model's rotary class and q/k through its apply_rotary_pos_emb, at positions up to 2^20,
    against posenc's RotaryEmbedding(scaling=...), rope_cos_sin and apply_rope_qk given the same dict."""
    from transformers.models.llama import modeling_llama as llama
    from transformers.models.gpt_neox import modeling_gpt_neox as neox

    name, rp, head_dim, max_pos = case
    partial = "partial_rotary_factor" in rp and rp["rope_type"] != "proportional"
    # GPT-NeoX's rotary class honours partial_rotary_factor for the default type too and rotates the
    # first rotary_ndims features; otherwise Llama's.
    if partial:
        from transformers import GPTNeoXConfig

        config = GPTNeoXConfig(hidden_size=4 * head_dim, num_attention_heads=4, num_hidden_layers=1,
                               intermediate_size=32, vocab_size=32, max_position_embeddings=max_pos,
                               rope_parameters=dict(rp))
        emb, apply = neox.GPTNeoXRotaryEmbedding(config), neox.apply_rotary_pos_emb
    else:
        config = llama_config(rp, head_dim=head_dim, max_pos=max_pos)
        emb, apply = llama.LlamaRotaryEmbedding(config), llama.apply_rotary_pos_emb
    scaling = hf_scaling(config)
    rot = posenc.RotaryEmbedding(head_dim, scaling=scaling)
    rdim = rot.rotary_dim
    for positions in (POSITIONS[:40], POSITIONS):  # a short call, then one reaching 2^20 (dynamic/longrope switch)
        pid = torch.from_numpy(positions)[None]
        x = torch.zeros(1, 4, len(positions), head_dim)
        hf_cos, hf_sin = emb(x, pid)
        w_hf = emb.inv_freq.double().numpy()
        cos, sin = rot.cos_sin(positions)
        w, a = rot.inv_freq, rot.attention_scaling
        assert a == pytest.approx(emb.attention_scaling, rel=1e-12)
        assert hf_inv_freq_rtol(w, w_hf) <= 6 * U
        assert_cos_sin(cos, sin, hf_cos[0], hf_sin[0], positions, w, w_hf, a)
        # The one-shot functions with the same dict (the sequence length for dynamic/longrope made explicit).
        sc = dict(scaling, seq_len=int(positions.max()) + 1) if rp["rope_type"] in ("dynamic", "longrope") else scaling
        c2, s2 = posenc.rope_cos_sin(positions, head_dim, scaling=sc) if not partial else \
            posenc.rope_cos_sin(positions, head_dim, scaling=sc)
        np.testing.assert_array_equal(c2, cos)
        np.testing.assert_array_equal(s2, sin)
        # q/k: transformers rotates [batch, heads, seq, head_dim] (GPT-NeoX the first rotary_ndims features).
        g = torch.Generator().manual_seed(5)
        q, k = torch.randn(1, 4, len(positions), head_dim, generator=g), torch.randn(1, 2, len(positions), head_dim,
                                                                                    generator=g)
        if partial:
            eq_r, ek_r = apply(q[..., :rdim], k[..., :rdim], hf_cos, hf_sin)
            eq, ek = torch.cat([eq_r, q[..., rdim:]], -1), torch.cat([ek_r, k[..., rdim:]], -1)
        else:
            eq, ek = apply(q, k, hf_cos, hf_sin)
        gq, gk = posenc.apply_rope_qk(q.numpy(), k.numpy(), positions, scaling=sc, seq_axis=-2)
        rq, rk = rot(q.numpy(), k.numpy(), positions, seq_axis=-2)
        np.testing.assert_array_equal(rq, gq)
        np.testing.assert_array_equal(rk, gk)
        bound = angle_bound(positions, w, w_hf, a)  # [seq, pairs]
        for ours, theirs, t in ((gq, eq, q), (gk, ek, k)):
            tt = t.double().numpy()
            half = rdim // 2
            u, v = tt[..., :half], tt[..., half:rdim]
            mag = np.abs(u) + np.abs(v)
            lim = np.concatenate([mag * bound + 4 * U * mag, mag * bound + 4 * U * mag], -1)
            err = np.abs(np.asarray(ours, np.float64)[..., :rdim] - theirs.double().numpy()[..., :rdim])
            assert (err <= lim).all(), f"worst excess {np.max(err - lim)}"
            np.testing.assert_array_equal(np.asarray(ours)[..., rdim:], t.numpy()[..., rdim:])


def test_rope_theta_sets_the_base_and_conflicts_are_named():
    w, _ = posenc.rope_inv_freq(8, scaling={"rope_type": "default", "rope_theta": 1e6})
    np.testing.assert_array_equal(w, posenc.rope_inv_freq(8, base=1e6)[0])
    w, _ = posenc.rope_inv_freq(8, base=1e6, scaling={"rope_type": "linear", "factor": 2.0, "rope_theta": 1e6})
    np.testing.assert_array_equal(w, posenc.rope_inv_freq(8, base=1e6)[0] / 2)
    for call in (lambda s: posenc.rope_inv_freq(8, base=10000.0, scaling=s),
                 lambda s: posenc.apply_rope(np.ones((2, 1, 8), np.float32), base=10000.0, scaling=s),
                 lambda s: posenc.RotaryEmbedding(8, base=10000.0, scaling=s)):
        with pytest.raises(ValueError, match="rope_theta"):
            call({"rope_type": "default", "rope_theta": 1e6})
    rot = posenc.RotaryEmbedding(8, scaling={"rope_type": "default", "rope_theta": 1e6})
    assert rot.base == 1e6
    x = np.random.default_rng(0).standard_normal((5, 2, 8)).astype(np.float32)
    np.testing.assert_array_equal(posenc.apply_rope(x, scaling={"rope_theta": 5e5}), posenc.apply_rope(x, base=5e5))


def test_partial_rotary_factor_rotates_the_leading_features():
    """Phi's {'rope_type': 'default', 'rope_theta': 10000.0, 'partial_rotary_factor': 0.5}: as rotary_dim."""
    phi = {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}
    x = np.random.default_rng(1).standard_normal((2, 7, 3, 80)).astype(np.float32)
    np.testing.assert_array_equal(posenc.apply_rope(x, scaling=phi), posenc.apply_rope(x, rotary_dim=40))
    np.testing.assert_array_equal(posenc.apply_rope(x, scaling=phi, rotary_dim=40), posenc.apply_rope(x, rotary_dim=40))
    assert posenc.rope_inv_freq(80, scaling=phi)[0].shape == (20,)
    assert posenc.RotaryEmbedding(80, scaling=phi).rotary_dim == 40
    with pytest.raises(ValueError, match="partial_rotary_factor"):
        posenc.apply_rope(x, scaling=phi, rotary_dim=20)
    with pytest.raises(ValueError, match="partial_rotary_factor"):
        posenc.RotaryEmbedding(80, scaling=phi, rotary_dim=20)
    for bad in (0.0, -0.5, 1.5, float("nan"), "half"):
        with pytest.raises(ValueError, match="partial_rotary_factor"):
            posenc.rope_inv_freq(80, scaling={**phi, "partial_rotary_factor": bad})
    with pytest.raises(ValueError, match="partial_rotary_factor"):  # int(80 * 0.3125) = 25: odd
        posenc.rope_inv_freq(80, scaling={**phi, "partial_rotary_factor": 0.3125})


def test_proportional_closed_form():
    """p-RoPE: the first int(p·dim/2) pairs get base^(−2i/dim), the others 0, all divided by factor;
    every feature pair takes part (zero frequencies leave theirs unchanged)."""
    w, a = posenc.rope_inv_freq(16, scaling={"rope_type": "proportional", "partial_rotary_factor": 0.5,
                                             "factor": 4.0, "rope_theta": 100.0})
    np.testing.assert_allclose(w, [1 / 4, 100 ** (-2 / 16) / 4, 100 ** (-4 / 16) / 4, 100 ** (-6 / 16) / 4,
                                   0, 0, 0, 0], rtol=1e-15)
    assert a == 1.0
    x = np.random.default_rng(2).standard_normal((6, 1, 16))
    y = posenc.apply_rope(x, scaling={"rope_type": "proportional", "partial_rotary_factor": 0.5, "rope_theta": 100.0})
    for j in (4, 5, 6, 7):  # pairs (j, j + 8) with frequency 0
        np.testing.assert_array_equal(y[..., [j, j + 8]], x[..., [j, j + 8]])
    assert not np.allclose(y[1:, :, 0], x[1:, :, 0])


def test_qwen2_vl_dicts_are_accepted():
    """Qwen2-VL's config dict (type 'mrope' + rope_type 'default') and its raw checkpoint form carry M-RoPE."""
    own = {"type": "mrope", "mrope_section": [2, 3, 3], "rope_theta": 1e6, "rope_type": "default"}
    raw = {"type": "mrope", "mrope_section": [2, 3, 3]}
    q = np.random.default_rng(3).standard_normal((2, 5, 4, 16)).astype(np.float32)
    k = np.random.default_rng(4).standard_normal((2, 5, 2, 16)).astype(np.float32)
    pos = np.random.default_rng(5).integers(0, 50, (3, 2, 5))
    want = posenc.apply_rope_qk(q, k, pos, base=1e6, mrope_section=(2, 3, 3))
    for got in (posenc.apply_rope_qk(q, k, pos, scaling=own), posenc.apply_rope_qk(q, k, pos, base=1e6, scaling=raw),
                posenc.RotaryEmbedding(16, scaling=own)(q, k, pos)):
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    w, _ = posenc.rope_inv_freq(16, scaling=own)
    np.testing.assert_array_equal(w, posenc.rope_inv_freq(16, base=1e6)[0])
    with pytest.raises(ValueError, match="mrope_section"):
        posenc.apply_rope_qk(q, k, pos, scaling=own, mrope_section=(4, 2, 2))
    with pytest.raises(ValueError, match="mrope_section"):
        posenc.rope_inv_freq(16, scaling={**own, "mrope_section": [2, 2, 2]})
    # "type": "mrope" marks M-RoPE whatever the scheme; other pairs of names must agree.
    yarn = {"type": "mrope", "rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 32,
            "mrope_section": [2, 3, 3]}
    np.testing.assert_array_equal(posenc.rope_inv_freq(16, scaling=yarn)[0],
                                  posenc.rope_inv_freq(16, scaling={k: v for k, v in yarn.items() if k != "type"})[0])
    with pytest.raises(ValueError, match="disagree"):
        posenc.rope_inv_freq(16, scaling={"type": "linear", "rope_type": "yarn", "factor": 2.0})


@requires_hf
def test_per_layer_type_dict():
    """Gemma's nested dict: each entry works as given; the whole dict is refused with a named error."""
    from transformers import Gemma3TextConfig

    config = Gemma3TextConfig(hidden_size=64, num_attention_heads=2, head_dim=32, num_hidden_layers=6,
                              num_key_value_heads=1, intermediate_size=32, vocab_size=32,
                              rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                                               "full_attention": {"rope_type": "linear", "factor": 8.0,
                                                                  "rope_theta": 1e6}})
    from transformers.models.gemma3.modeling_gemma3 import Gemma3RotaryEmbedding

    emb = Gemma3RotaryEmbedding(config)
    for layer_type in ("sliding_attention", "full_attention"):
        w, a = posenc.rope_inv_freq(32, scaling=config.rope_parameters[layer_type])
        assert_hf_frequencies(w, a, getattr(emb, f"{layer_type}_inv_freq"),
                              getattr(emb, f"{layer_type}_attention_scaling"))
    with pytest.raises(ValueError, match="per-layer-type"):
        posenc.rope_inv_freq(32, scaling=config.rope_parameters)


def test_dynamic_without_original_length_is_named():
    with pytest.raises(ValueError, match="original_max_position_embeddings.*from_config"):
        posenc.rope_inv_freq(64, scaling={"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0})


# ---------------------------------------------------------------- RotaryEmbedding.from_config on real config classes

TINY = dict(num_hidden_layers=2, intermediate_size=32, vocab_size=32)


def _pairs_bound(pair_positions, w, w_hf, scale):
    """angle_bound with a position per pair ([n, pairs]: M-RoPE pairs read different axes)."""
    nz = w != 0
    delta = np.where(nz, np.abs(w_hf / np.where(nz, w, 1.0) - 1), 0.0)
    return abs(scale) * (np.abs(pair_positions) * w * (delta + U) + 4 * U)


def assert_rotated(ours, theirs, x, bound, rdim, interleaved, seq_axis):
    """ours/theirs: x rotated ([..., seq, head_dim] with the sequence on seq_axis); bound [seq, pairs]."""
    ours, theirs, x = (np.asarray(a, np.float64) for a in (ours, theirs, x))
    half = rdim // 2
    if interleaved:
        u, v = x[..., 0:rdim:2], x[..., 1:rdim:2]
    else:
        u, v = x[..., :half], x[..., half:rdim]
    b = bound if seq_axis == -2 else bound[:, None, :]  # [seq, pairs] against [..., heads, seq, pairs] or [..., seq, heads, pairs]
    lim = (np.abs(u) + np.abs(v)) * (b + 4 * U)
    lim = np.stack([lim, lim], -1).reshape(lim.shape[:-1] + (rdim,)) if interleaved else np.concatenate([lim, lim], -1)
    err = np.abs(ours[..., :rdim] - theirs[..., :rdim])
    assert (err <= lim).all(), f"worst excess {np.max(err - lim)}"
    np.testing.assert_array_equal(ours[..., rdim:], theirs[..., rdim:])  # the pass-through tail is copied


def _positions(n_max):
    p = POSITIONS[POSITIONS < n_max]
    return p


def _qk(seq, head_dim, heads=(4, 2), seed=0, seq_first=False):
    g = torch.Generator().manual_seed(seed)
    shape = (lambda h: (1, seq, h, head_dim)) if seq_first else (lambda h: (1, h, seq, head_dim))
    return torch.randn(*shape(heads[0]), generator=g), torch.randn(*shape(heads[1]), generator=g)


def _check_standard(rot, emb, apply, positions, head_dim, *, layer_type=None, single=False):
    """A Llama-style rotary class (cos/sin [b, s, rotary_dim]) + apply_rotary_pos_emb, against rot(q, k)."""
    pid = torch.from_numpy(positions)[None]
    q, k = _qk(len(positions), head_dim)
    args = (q, pid) if layer_type is None else (q, pid, layer_type)
    cos, sin = emb(*args)
    if single:  # Gemma 4 rotates q and k one at a time
        eq, ek = apply(q, cos, sin), apply(k, cos, sin)
    else:
        eq, ek = apply(q, k, cos, sin)
    inv = emb.inv_freq if layer_type is None else getattr(emb, f"{layer_type}_inv_freq")
    scale = emb.attention_scaling if layer_type is None else getattr(emb, f"{layer_type}_attention_scaling")
    gq, gk = rot(q.numpy(), k.numpy(), positions, seq_axis=-2)
    w, w_hf = rot.inv_freq, inv.double().numpy()
    assert hf_inv_freq_rtol(w, w_hf) <= 6 * U
    assert rot.attention_scaling == pytest.approx(scale, rel=1e-12)
    bound = angle_bound(positions, w, w_hf, rot.attention_scaling)
    assert_rotated(gq, eq, q, bound, rot.rotary_dim, False, -2)
    assert_rotated(gk, ek, k, bound, rot.rotary_dim, False, -2)
    if rot.mrope_section is None:  # and the tables, for 1-D positions
        c, s = rot.cos_sin(positions)
        assert_cos_sin(c, s, cos[0], sin[0], positions, w, w_hf, rot.attention_scaling)


@requires_hf
def test_from_config_llama31():
    from transformers import LlamaConfig
    from transformers.models.llama import modeling_llama as m

    config = LlamaConfig(hidden_size=256, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=131072,
                         rope_parameters={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                          "high_freq_factor": 4.0, "original_max_position_embeddings": 8192,
                                          "rope_theta": 500000.0}, **TINY)
    for cfg in (config, config.to_dict()):
        rot = posenc.RotaryEmbedding.from_config(cfg)
        assert (rot.dim, rot.rotary_dim, rot.base, rot.interleaved) == (64, 64, 500000.0, False)
        _check_standard(rot, m.LlamaRotaryEmbedding(config), m.apply_rotary_pos_emb, POSITIONS, 64)


@requires_hf
@pytest.mark.parametrize("kind", ["dynamic", "linear", "yarn", "longrope"])
def test_from_config_llama_other_types(kind):
    """Every rope type through the Llama class, with what transformers reads beside the dict
    (dynamic's max_position_embeddings, yarn/longrope's factor = max / original)."""
    from transformers import LlamaConfig
    from transformers.models.llama import modeling_llama as m

    rp = {"dynamic": {"rope_type": "dynamic", "factor": 4.0},
          "linear": {"rope_type": "linear", "factor": 2.0},
          "yarn": {"rope_type": "yarn", "factor": None, "original_max_position_embeddings": 4096},
          "longrope": {"rope_type": "longrope", "short_factor": SHORT16, "long_factor": LONG16,
                       "original_max_position_embeddings": 4096}}[kind]
    config = LlamaConfig(hidden_size=128, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32768,
                         rope_parameters=dict(rp), **TINY)
    rot = posenc.RotaryEmbedding.from_config(config)
    for positions in (POSITIONS[:40], POSITIONS):  # below and beyond the original length: fresh classes each
        _check_standard(rot, m.LlamaRotaryEmbedding(config), m.apply_rotary_pos_emb, positions, 32)


def _mrope_positions(n, rng):
    """[3, 1, n] M-RoPE positions: text runs (equal axes) and an image block (t fixed, h/w a grid)."""
    base = np.sort(rng.choice(np.arange(2**20), n, replace=False))
    pos = np.stack([base, base, base])
    pos[1, n // 3: n // 3 + 9] = pos[0, n // 3] + np.repeat(np.arange(3), 3)
    pos[2, n // 3: n // 3 + 9] = pos[0, n // 3] + np.tile(np.arange(3), 3)
    return pos[:, None, :].astype(np.int64)


@requires_hf
@pytest.mark.parametrize("model", ["qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl-defaults"])
@pytest.mark.parametrize("form", ["object", "to_dict", "raw"])
def test_from_config_qwen_vl(model, form):
    """Qwen2/2.5/3-VL: the text config's mrope_section (its own dict or the raw checkpoint's
    rope_scaling), Qwen3-VL's interleaved sections (also when its config says nothing: the model's
    defaults (24, 20, 20), interleaved); positions [3, batch, seq]."""
    import transformers as tf

    defaults = model.endswith("-defaults")
    model = model.replace("-defaults", "")

    mod = {"qwen2_vl": "transformers.models.qwen2_vl.modeling_qwen2_vl",
           "qwen2_5_vl": "transformers.models.qwen2_5_vl.modeling_qwen2_5_vl",
           "qwen3_vl": "transformers.models.qwen3_vl.modeling_qwen3_vl"}[model]
    m = pytest.importorskip(mod)
    section = [8, 12, 12] if model != "qwen3_vl" else [24, 20, 20] if defaults else [12, 10, 10]
    hd = 128 if defaults else 64
    text = dict(hidden_size=128, num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32768, **TINY)
    if model == "qwen3_vl":
        text["head_dim"] = hd
        text["rope_parameters"] = {"rope_type": "default", "rope_theta": 5e5} if defaults else {
            "rope_type": "default", "rope_theta": 5e5, "mrope_section": section, "mrope_interleaved": True}
        cls, emb_cls = tf.Qwen3VLConfig, m.Qwen3VLTextRotaryEmbedding
    else:
        text["rope_scaling"] = {"type": "mrope", "mrope_section": section}
        text["rope_theta"] = 1e6
        cls = tf.Qwen2VLConfig if model == "qwen2_vl" else tf.Qwen2_5_VLConfig
        emb_cls = m.Qwen2VLRotaryEmbedding if model == "qwen2_vl" else m.Qwen2_5_VLRotaryEmbedding
    config = cls(text_config=dict(text))
    if form == "object":
        cfg = config
    elif form == "to_dict":
        cfg = config.to_dict()
    else:  # a raw checkpoint config.json: everything at the top, old names
        cfg = {"model_type": model, **{k: v for k, v in text.items()}}
    rot = posenc.RotaryEmbedding.from_config(cfg)
    assert rot.mrope_section == tuple(section)
    assert rot.mrope_interleaved == (model == "qwen3_vl")
    emb = emb_cls(config.text_config)
    pos = _mrope_positions(60, np.random.default_rng(8))
    q, k = _qk(pos.shape[-1], hd, seed=3)
    cos, sin = emb(q, torch.from_numpy(pos))
    eq, ek = m.apply_rotary_pos_emb(q, k, cos, sin)
    gq, gk = rot(q.numpy(), k.numpy(), pos, seq_axis=-2)
    w, w_hf = rot.inv_freq, emb.inv_freq.double().numpy()
    assert hf_inv_freq_rtol(w, w_hf) <= 6 * U
    from posenc._plans.rope import mrope_pair_axes

    axis = mrope_pair_axes(section, model == "qwen3_vl")
    pair_pos = pos[axis, 0, :].T  # [seq, pairs]
    bound = _pairs_bound(pair_pos.astype(np.float64), w, w_hf, rot.attention_scaling)
    assert_rotated(gq, eq, q, bound, hd, False, -2)
    assert_rotated(gk, ek, k, bound, hd, False, -2)
    # Text-only positions (equal axes) through the 1-D tables.
    c, s = rot.cos_sin(pos[0, 0])
    text_pos = np.broadcast_to(pos[0], (3,) + pos.shape[1:]).copy()
    tc, ts = emb(q, torch.from_numpy(text_pos))
    assert_cos_sin(c, s, tc[0], ts[0], pos[0, 0], w, w_hf, 1.0)


@requires_hf
@pytest.mark.parametrize("variant", ["phi3-mini-128k", "phi4-mini"])
def test_from_config_phi3_longrope(variant):
    """Phi-3: longrope without factor, original_max_position_embeddings beside the dict; Phi-4-mini
    rotates 3/4 of the head (partial_rotary_factor)."""
    from transformers import Phi3Config
    from transformers.models.phi3 import modeling_phi3 as m

    partial = 0.75 if variant == "phi4-mini" else 1.0
    half = int(64 * partial) // 2
    config = Phi3Config(hidden_size=128, num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=131072,
                        original_max_position_embeddings=4096, partial_rotary_factor=partial,
                        rope_parameters={"rope_type": "longrope", "short_factor": SHORT32[:half],
                                         "long_factor": LONG32[:half], "rope_theta": 10000.0}, **TINY)
    raw = {"model_type": "phi3", "hidden_size": 128, "num_attention_heads": 2, "max_position_embeddings": 131072,
           "original_max_position_embeddings": 4096, "partial_rotary_factor": partial, "rope_theta": 10000.0,
           "rope_scaling": {"type": "longrope", "short_factor": SHORT32[:half], "long_factor": LONG32[:half]}}
    for cfg in (config, raw):
        rot = posenc.RotaryEmbedding.from_config(cfg)
        assert rot.rotary_dim == 2 * half
        for positions in (POSITIONS[:40], POSITIONS):
            _check_standard(rot, m.Phi3RotaryEmbedding(config), m.apply_rotary_pos_emb, positions, 64)


@requires_hf
def test_from_config_gemma3_both_layer_types():
    from transformers import Gemma3Config, Gemma3TextConfig
    from transformers.models.gemma3 import modeling_gemma3 as m

    config = Gemma3TextConfig(hidden_size=64, num_attention_heads=2, num_key_value_heads=1, head_dim=32,
                              max_position_embeddings=131072, layer_types=["sliding_attention", "full_attention"],
                              rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                                               "full_attention": {"rope_type": "linear", "factor": 8.0,
                                                                  "rope_theta": 1e6}}, **TINY)
    emb = m.Gemma3RotaryEmbedding(config)
    for layer_type, base in (("sliding_attention", 10000.0), ("full_attention", 1e6)):
        for cfg in (config, config.to_dict(), Gemma3Config(text_config=config.to_dict())):
            rot = posenc.RotaryEmbedding.from_config(cfg, layer_type=layer_type)
            assert rot.base == base
            _check_standard(rot, emb, m.apply_rotary_pos_emb, POSITIONS, 32, layer_type=layer_type)
    with pytest.raises(ValueError, match="layer_type"):
        posenc.RotaryEmbedding.from_config(config)
    with pytest.raises(ValueError, match="layer_type"):
        posenc.RotaryEmbedding.from_config(config, layer_type="local")


@requires_hf
def test_from_config_gemma4_both_layer_types():
    """Gemma 4: default RoPE on sliding layers (head_dim 32), p-RoPE on full ones with their own head dim."""
    from transformers import Gemma4TextConfig
    from transformers.models.gemma4 import modeling_gemma4 as m

    config = Gemma4TextConfig(hidden_size=64, num_attention_heads=2, num_key_value_heads=1, head_dim=32,
                              global_head_dim=64, num_hidden_layers=6, intermediate_size=32, vocab_size=32)
    emb = m.Gemma4TextRotaryEmbedding(config)
    for layer_type, head_dim in (("sliding_attention", 32), ("full_attention", 64)):
        for cfg in (config, config.to_dict()):
            rot = posenc.RotaryEmbedding.from_config(cfg, layer_type=layer_type)
            assert rot.dim == rot.rotary_dim == head_dim
            _check_standard(rot, emb, m.apply_rotary_pos_emb, POSITIONS, head_dim, layer_type=layer_type,
                            single=True)
    w = posenc.RotaryEmbedding.from_config(config, layer_type="full_attention").inv_freq
    assert (w[int(0.25 * 64 // 2):] == 0).all() and (w[:8] > 0).all()


@requires_hf
def test_from_config_deepseek_v3():
    """DeepSeek-V3: yarn on the qk_rope_head_dim features, interleaved pairs (rope_interleave)."""
    from transformers import DeepseekV3Config
    from transformers.models.deepseek_v3 import modeling_deepseek_v3 as m

    config = DeepseekV3Config(hidden_size=64, num_attention_heads=2, num_key_value_heads=2, qk_rope_head_dim=16,
                              qk_nope_head_dim=16, v_head_dim=16, kv_lora_rank=16, q_lora_rank=None,
                              max_position_embeddings=163840, n_routed_experts=4, num_experts_per_tok=2,
                              moe_intermediate_size=16, first_k_dense_replace=1,
                              rope_parameters={"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096,
                                               "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0,
                                               "rope_theta": 10000.0}, **TINY)
    raw = {"model_type": "deepseek_v3", "hidden_size": 7168, "num_attention_heads": 128, "qk_rope_head_dim": 16,
           "max_position_embeddings": 163840, "rope_theta": 10000.0,
           "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096, "beta_fast": 32,
                            "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}, "rope_interleave": True}
    emb = m.DeepseekV3RotaryEmbedding(config)
    pid = torch.from_numpy(POSITIONS)[None]
    q, k = _qk(len(POSITIONS), 16, heads=(2, 1))
    cos, sin = emb(q, pid)
    eq, ek = m.apply_rotary_pos_emb_interleave(q, k, cos, sin)
    for cfg in (config, raw):
        rot = posenc.RotaryEmbedding.from_config(cfg)
        assert (rot.dim, rot.interleaved) == (16, True)
        gq, gk = rot(q.numpy(), k.numpy(), POSITIONS, seq_axis=-2)
        w, w_hf = rot.inv_freq, emb.inv_freq.double().numpy()
        assert hf_inv_freq_rtol(w, w_hf) <= 6 * U
        assert rot.attention_scaling == pytest.approx(emb.attention_scaling, rel=1e-12)
        bound = angle_bound(POSITIONS, w, w_hf, rot.attention_scaling)
        # DeepSeek returns the rotated pairs de-interleaved: put ours the same way.
        for ours, theirs, x in ((gq, eq, q), (gk, ek, k)):
            ours = np.concatenate([ours[..., 0::2], ours[..., 1::2]], -1)
            xs = torch.cat([x[..., 0::2], x[..., 1::2]], -1)
            assert_rotated(ours, theirs, xs, bound, 16, False, -2)


@requires_hf
def test_from_config_gptj():
    """GPT-J: rotary_dim of the head rotated with interleaved pairs, [batch, seq, heads, head_dim]."""
    from transformers import GPTJConfig
    from transformers.models.gptj import modeling_gptj as m

    config = GPTJConfig(n_embd=128, n_head=2, rotary_dim=16, n_positions=70000, n_layer=1, vocab_size=32)
    emb = m.GPTJRotaryEmbedding(config)
    positions = _positions(70000)
    pid = torch.from_numpy(positions)[None]
    q, k = _qk(len(positions), 64, heads=(2, 2), seq_first=True)
    sin, cos = emb(q, pid)
    eq = torch.cat([m.apply_rotary_pos_emb(q[..., :16], sin, cos), q[..., 16:]], -1)
    ek = torch.cat([m.apply_rotary_pos_emb(k[..., :16], sin, cos), k[..., 16:]], -1)
    w_hf = (1.0 / (10000 ** (torch.arange(0, 16, 2, dtype=torch.int64) / 16))).double().numpy()
    for cfg in (config, config.to_dict()):
        rot = posenc.RotaryEmbedding.from_config(cfg)
        assert (rot.dim, rot.rotary_dim, rot.interleaved) == (64, 16, True)
        gq, gk = rot(q.numpy(), k.numpy(), positions)
        bound = angle_bound(positions, rot.inv_freq, w_hf, 1.0)
        assert_rotated(gq, eq, q, bound, 16, True, -3)
        assert_rotated(gk, ek, k, bound, 16, True, -3)


@requires_hf
def test_from_config_gpt_neox():
    """GPT-NeoX: partial_rotary_factor 0.25 (rotary_pct in its checkpoints) of the head."""
    from transformers import GPTNeoXConfig
    from transformers.models.gpt_neox import modeling_gpt_neox as m

    config = GPTNeoXConfig(hidden_size=256, num_attention_heads=4, max_position_embeddings=2048, **TINY)
    raw = {"model_type": "gpt_neox", "hidden_size": 256, "num_attention_heads": 4, "rotary_pct": 0.25,
           "rotary_emb_base": 10000, "max_position_embeddings": 2048}
    emb = m.GPTNeoXRotaryEmbedding(config)
    pid = torch.from_numpy(POSITIONS)[None]
    q, k = _qk(len(POSITIONS), 64)
    cos, sin = emb(q, pid)
    eq_r, ek_r = m.apply_rotary_pos_emb(q[..., :16], k[..., :16], cos, sin)
    eq, ek = torch.cat([eq_r, q[..., 16:]], -1), torch.cat([ek_r, k[..., 16:]], -1)
    for cfg in (config, raw):
        rot = posenc.RotaryEmbedding.from_config(cfg)
        assert (rot.dim, rot.rotary_dim) == (64, 16)
        gq, gk = rot(q.numpy(), k.numpy(), POSITIONS, seq_axis=-2)
        bound = angle_bound(POSITIONS, rot.inv_freq, emb.inv_freq.double().numpy(), 1.0)
        assert_rotated(gq, eq, q, bound, 16, False, -2)
        assert_rotated(gk, ek, k, bound, 16, False, -2)


@requires_hf
def test_from_config_bad_configs():
    from transformers import GPT2Config

    with pytest.raises(TypeError, match="config"):
        posenc.RotaryEmbedding.from_config("llama")
    with pytest.raises(ValueError, match="not a rotary model"):
        posenc.RotaryEmbedding.from_config(GPT2Config())
    with pytest.raises(ValueError, match="head_dim"):
        posenc.RotaryEmbedding.from_config({"rope_theta": 1e4})
    with pytest.raises(ValueError, match="mrope_section"):  # sections not summing to head_dim/2
        posenc.RotaryEmbedding.from_config({"model_type": "qwen2_vl", "hidden_size": 64, "num_attention_heads": 2,
                                            "rope_theta": 1e6})


def test_docs_guide_transformers_section_runs():
    """docs/guide.md's "Rotary embeddings from a Transformers config" examples, as written (no transformers)."""
    import doctest
    import pathlib
    import re

    doc = pathlib.Path(__file__).resolve().parents[1] / "docs" / "guide.md"
    if not doc.exists():
        pytest.skip("docs/guide.md not found next to the tests")
    text = doc.read_text(encoding="utf-8")
    start = text.index("## Rotary embeddings from a Transformers config")
    section = text[start:text.index("\n## ", start + 1)]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert blocks
    for i, block in enumerate(blocks):
        test = doctest.DocTestParser().get_doctest(block, {}, f"guide.md[{i}]", str(doc), 0)
        runner = doctest.DocTestRunner()
        runner.run(test)
        assert runner.summarize().failed == 0 and runner.summarize().attempted > 0
