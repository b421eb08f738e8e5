"""The 1-D rotary API of issue 13: per-row offset arrays, grad-requiring torch inputs, precomputed
cos/sin tables, xPos. Tolerances as in tests/test_rope.py (its independent float64 evaluation
``exact_rope`` and bound ``check_rotation``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import posenc
from posenc import reference as ref

from helpers import FLOAT_DTYPES, assert_close_to_float64, strided_view
from test_rope import check_rotation, exact_rope

# ---------------------------------------------------------------- offset arrays (one first position per row)


@st.composite
def offset_cases(draw):
    seq_axis = draw(st.sampled_from([-3, -2]))
    batch = draw(st.integers(0, 4))
    seq = draw(st.integers(0, 9))
    heads = draw(st.integers(1, 3))
    half = draw(st.integers(1, 9))
    shape = (batch,) + ((seq, heads) if seq_axis == -3 else (heads, seq)) + (2 * half,)
    return dict(shape=shape, seq_axis=seq_axis, seq=seq, batch=batch, dtype=draw(st.sampled_from(FLOAT_DTYPES)),
                interleaved=draw(st.booleans()), inverse=draw(st.booleans()),
                offsets=draw(st.lists(st.one_of(st.integers(-100, 2000), st.integers(-2**22, 2**22)),
                                      min_size=batch, max_size=batch)),
                mode=draw(st.sampled_from(["new", "inplace", "strided"])), seed=draw(st.integers(0, 2**32 - 1)))


@given(case=offset_cases())
def test_offset_array_rotates_each_row_from_its_offset(isa, case):
    """Row b of x at positions offset[b] + arange(seq): the float64 closed form, and bit for bit the
    same call with those positions given as [batch, seq] (apply_rope, apply_rope_qk, RotaryEmbedding)."""
    rng = np.random.default_rng(case["seed"])
    x = rng.uniform(-1, 1, case["shape"]).astype(case["dtype"])
    offsets = np.array(case["offsets"], np.int64)
    pos = offsets[:, None] + np.arange(case["seq"])
    kw = dict(interleaved=case["interleaved"], seq_axis=case["seq_axis"], inverse=case["inverse"])
    inv_freq = posenc.rope_inv_freq(x.shape[-1])[0]
    exact = exact_rope(x, pos, inv_freq, **kw)
    if case["mode"] == "inplace":
        got = x.copy()
        assert posenc.apply_rope(got, offset=offsets, out=got, **kw) is got
    elif case["mode"] == "strided":
        got = posenc.apply_rope(strided_view(x, rng), offset=offsets, **kw)
    else:
        got = posenc.apply_rope(x, offset=offsets, **kw)
    max_angle = float(np.abs(pos).max(initial=0))
    check_rotation(got, x, exact, max_angle=max_angle)
    np.testing.assert_array_equal(got, posenc.apply_rope(x, pos, **kw))
    gq, gk = posenc.apply_rope_qk(x, x[..., :1, :] if case["seq_axis"] == -3 else x[:, :1], offset=offsets, **kw)
    np.testing.assert_array_equal(gq, got)
    rope = posenc.RotaryEmbedding(x.shape[-1], interleaved=case["interleaved"])
    np.testing.assert_array_equal(rope(x, x, offset=offsets, seq_axis=case["seq_axis"], inverse=case["inverse"])[0],
                                  got)


@given(case=offset_cases())
def test_offset_array_native_matches_reference(native_isa, case):
    """Native and reference, each against the pair-by-pair float64 rotation."""
    rng = np.random.default_rng(case["seed"])
    x = rng.uniform(-1, 1, case["shape"]).astype(case["dtype"])
    offsets = np.array(case["offsets"], np.int64)
    kw = dict(interleaved=case["interleaved"], seq_axis=case["seq_axis"], inverse=case["inverse"])
    got, want = posenc.apply_rope(x, offset=offsets, **kw), ref.apply_rope(x, offset=offsets, **kw)
    exact = exact_rope(x, offsets[:, None] + np.arange(case["seq"]), posenc.rope_inv_freq(x.shape[-1])[0], **kw)
    max_angle = float(np.abs(offsets).max(initial=0)) + case["seq"]
    assert_close_to_float64(want, exact, 1e-12 + 8 * np.finfo(np.float64).eps * max_angle)
    check_rotation(got, x, exact, max_angle=max_angle)


def test_decode_step_of_sequences_of_different_lengths(isa):
    """Three cached sequences of lengths 5, 9 and 2 each get their next token at its own position:
    the same values as rotating each whole sequence and keeping its last row."""
    rng = np.random.default_rng(1)
    lengths = [5, 9, 2]
    full = [rng.standard_normal((1, n + 1, 4, 32)).astype(np.float32) for n in lengths]
    step = np.concatenate([f[:, -1:] for f in full])  # [3, 1, heads, dim]
    k_step = step[:, :, :2].copy()
    q, k = posenc.apply_rope_qk(step, k_step, offset=np.array(lengths), base=500000.0)
    for b, f in enumerate(full):
        whole = posenc.apply_rope(f, base=500000.0)
        np.testing.assert_array_equal(q[b], whole[0, -1:])
        np.testing.assert_array_equal(k[b], whole[0, -1:, :2])


def test_offset_array_with_a_sequence_dependent_scheme(isa):
    """RotaryEmbedding's dynamic NTK scheme is evaluated at the largest position of the call + 1."""
    sc = {"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 16}
    x = np.random.default_rng(2).standard_normal((2, 1, 1, 16)).astype(np.float32)
    got = posenc.RotaryEmbedding(16, scaling=sc)(x, x, offset=np.array([3, 40]))[0]
    want = posenc.apply_rope(x, np.array([[3], [40]]), scaling={**sc, "seq_len": 41})
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------- precomputed cos/sin tables


def exact_from_tables(x, cos, sin, *, rotary_dim=None, interleaved=False, seq_axis=-3, inverse=False):
    """float64 rotation by given per-pair tables [seq, half] or [batch, seq, half], pair by pair."""
    x = np.asarray(x, np.float64)
    xs = np.moveaxis(x, x.ndim + seq_axis, -2)
    y = xs.copy()
    rd = x.shape[-1] if rotary_dim is None else rotary_dim
    half = rd // 2
    for j in range(half):
        c, s = np.asarray(cos, np.float64)[..., j], np.asarray(sin, np.float64)[..., j]
        if inverse:
            s = -s
        if c.ndim == 2:
            shape = (c.shape[0],) + (1,) * (xs.ndim - 3) + (c.shape[1],)
            c, s = c.reshape(shape), s.reshape(shape)
        a, b = (2 * j, 2 * j + 1) if interleaved else (j, j + half)
        u, v = xs[..., a], xs[..., b]
        y[..., a], y[..., b] = u * c - v * s, v * c + u * s
    return np.moveaxis(y, -2, x.ndim + seq_axis)


@st.composite
def table_cases(draw):
    seq_axis = draw(st.sampled_from([-3, -2]))
    batch, seq, heads, half = draw(st.integers(1, 3)), draw(st.integers(0, 12)), draw(st.integers(1, 3)), \
        draw(st.integers(1, 9))
    extra = draw(st.sampled_from([0, 0, 1, 3]))
    shape = (batch,) + ((seq, heads) if seq_axis == -3 else (heads, seq)) + (2 * half + extra,)
    return dict(shape=shape, seq_axis=seq_axis, seq=seq, batch=batch, half=half, extra=extra,
                dtype=draw(st.sampled_from(FLOAT_DTYPES)), table_dtype=draw(st.sampled_from(FLOAT_DTYPES)),
                interleaved=draw(st.booleans()), inverse=draw(st.booleans()),
                form=draw(st.sampled_from(["pairs", "features"])), rows=draw(st.sampled_from(["seq", "batch", "one"])),
                scale=draw(st.sampled_from([1.0, 1.25])), mode=draw(st.sampled_from(["new", "inplace", "strided"])),
                seed=draw(st.integers(0, 2**32 - 1)))


@given(case=table_cases())
def test_tables_rotate_by_the_given_values(isa, case):
    """apply_rope(cos=, sin=) and apply_rope_qk against the pair-by-pair float64 rotation by the very tables
    given (any dtype, pairs or Transformers' duplicated features, [seq]/[batch]/[1] rows, partial, in place)."""
    rng = np.random.default_rng(case["seed"])
    x = rng.uniform(-1, 1, case["shape"]).astype(case["dtype"])
    half, seq = case["half"], case["seq"]
    lead = {"seq": (), "batch": (case["batch"],), "one": (1,)}[case["rows"]]
    theta = rng.uniform(-1e4, 1e4, lead + (seq, half))
    cos = (case["scale"] * np.cos(theta)).astype(case["table_dtype"])
    sin = (case["scale"] * np.sin(theta)).astype(case["table_dtype"])
    kw = dict(interleaved=case["interleaved"], seq_axis=case["seq_axis"], inverse=case["inverse"],
              rotary_dim=2 * half if case["extra"] else None)
    exact = exact_from_tables(x, cos, sin, **kw)
    if case["form"] == "features":
        cos, sin = ((np.repeat(t, 2, -1) if case["interleaved"] else np.concatenate([t, t], -1)) for t in (cos, sin))
    if case["mode"] == "inplace":
        got = x.copy()
        assert posenc.apply_rope(got, cos=cos, sin=sin, out=got, **kw) is got
    elif case["mode"] == "strided":
        got = posenc.apply_rope(strided_view(x, rng), cos=strided_view(cos, rng), sin=sin, **kw)
    else:
        got = posenc.apply_rope(x, cos=cos, sin=sin, **kw)
    check_rotation(got, x, exact, case["scale"], max_angle=0)
    one_head = (slice(None), slice(None), slice(0, 1)) if case["seq_axis"] == -3 else (slice(None), slice(0, 1))
    gq, gk = posenc.apply_rope_qk(x, x[one_head], cos=cos, sin=sin, **kw)
    check_rotation(gq, x, exact, case["scale"], max_angle=0)
    check_rotation(gk, x[one_head], exact[one_head], case["scale"], max_angle=0)


def test_tables_equal_the_angle_path(isa):
    """float64 tables of rope_cos_sin give the angle path's values (float32: within its bound)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 30, 4, 64)).astype(np.float32)
    pos = rng.integers(0, 100000, (2, 30))
    c, s = (np.stack(t) for t in zip(*(posenc.rope_cos_sin(p, 64, base=500000.0, dtype=np.float64) for p in pos)))
    exact = exact_rope(x, pos, posenc.rope_inv_freq(64, base=500000.0)[0])
    check_rotation(posenc.apply_rope(x, cos=c, sin=s), x, exact, max_angle=1e5)
    np.testing.assert_allclose(posenc.apply_rope(x, cos=c, sin=s), posenc.apply_rope(x, pos, base=500000.0),
                               rtol=0, atol=4e-7)


def test_tables_against_transformers_llama(isa):
    """Transformers' LlamaRotaryEmbedding (YaRN: attention scaling inside its tables) and apply_rotary_pos_emb,
    with the tables as the model computes them (float32 and bfloat16), in the model's layout."""
    torch = pytest.importorskip("torch")
    llama = pytest.importorskip("transformers.models.llama.modeling_llama")
    from transformers import LlamaConfig
    config = LlamaConfig(hidden_size=256, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                         max_position_embeddings=256, rope_parameters={"rope_type": "yarn", "factor": 4.0,
                                                                       "original_max_position_embeddings": 64,
                                                                       "rope_theta": 10000.0})
    rotary = llama.LlamaRotaryEmbedding(config)
    assert rotary.attention_scaling != 1.0
    rng = np.random.default_rng(4)
    position_ids = torch.arange(20)[None].repeat(2, 1) + torch.tensor([[0], [170]])
    for dtype in (torch.float32, torch.bfloat16):
        q = torch.from_numpy(rng.standard_normal((2, 4, 20, 64))).to(dtype)  # [batch, heads, seq, head_dim]
        k = torch.from_numpy(rng.standard_normal((2, 2, 20, 64))).to(dtype)
        cos, sin = rotary(q, position_ids)
        assert cos.shape == (2, 20, 64) and cos.dtype == dtype
        hq, hk = llama.apply_rotary_pos_emb(q.double(), k.double(), cos.double(), sin.double())
        gq, gk = posenc.apply_rope_qk(q, k, cos=cos, sin=sin, seq_axis=-2)
        if dtype == torch.float32:  # posenc's float32 bound; Transformers' own float32 evaluation is no closer
            check_rotation(gq, q.double().numpy(), hq.numpy(), rotary.attention_scaling, max_angle=0)
            check_rotation(gk, k.double().numpy(), hk.numpy(), rotary.attention_scaling, max_angle=0)
        else:  # bfloat16: the float64 rotation rounded once
            np.testing.assert_array_equal(gq.astype(np.float32), hq.to(torch.bfloat16).float().numpy())
            np.testing.assert_array_equal(gk.astype(np.float32), hk.to(torch.bfloat16).float().numpy())
        # in place into the model's tensors
        q2 = q.clone()
        assert posenc.apply_rope(q2, cos=cos, sin=sin, seq_axis=-2, out=q2) is q2


def test_tables_against_transformers_phi_partial_and_gptj(isa):
    """Phi's partial rotary (tables of rotary_dim features) and GPT-J's half-width tables with interleaved pairs."""
    torch = pytest.importorskip("torch")
    phi = pytest.importorskip("transformers.models.phi.modeling_phi")
    gptj = pytest.importorskip("transformers.models.gptj.modeling_gptj")
    from transformers import GPTJConfig, PhiConfig
    rng = np.random.default_rng(5)
    rotary = phi.PhiRotaryEmbedding(PhiConfig(hidden_size=256, num_attention_heads=4, partial_rotary_factor=0.5))
    q = torch.from_numpy(rng.standard_normal((1, 4, 12, 64))).float()
    cos, sin = rotary(q, torch.arange(12)[None] + 7)
    assert cos.shape[-1] == 32
    hq, _ = phi.apply_rotary_pos_emb(q[..., :32].double(), q[..., :32].double(), cos.double(), sin.double())
    want = torch.cat([hq, q[..., 32:].double()], -1).numpy()  # Phi's attention: rotate q_rot, keep q_pass
    got = posenc.apply_rope(q, cos=cos, sin=sin, rotary_dim=32, seq_axis=-2)
    check_rotation(got, q.double().numpy(), want, max_angle=0)
    rotary = gptj.GPTJRotaryEmbedding(GPTJConfig(n_embd=256, n_head=4, rotary_dim=32, n_positions=128))
    x = torch.from_numpy(rng.standard_normal((2, 12, 4, 64))).float()  # GPT-J: [batch, seq, heads, head_dim]
    sin, cos = rotary(x, torch.arange(24).reshape(2, 12) * 3)
    want = torch.cat([gptj.apply_rotary_pos_emb(x[..., :32].double(), sin.double(), cos.double()),
                      x[..., 32:].double()], -1).numpy()
    got = posenc.apply_rope(x, cos=cos, sin=sin, rotary_dim=32, interleaved=True)
    check_rotation(got, x.double().numpy(), want, max_angle=0)


# ---------------------------------------------------------------- xPos


def exact_xpos(x, pos, inv_freq, scale_base, center, *, downscale, rotary_dim=None, interleaved=False, seq_axis=-3):
    """float64 xPos written from the paper's definition: RoPE, then pair j (both of its features) times
    ζ_j^(±(n − c)/scale_base), ζ_j = (2j + 0.4·d)/(1.4·d), d the rotated features."""
    y = exact_rope(x, pos, inv_freq, rotary_dim=rotary_dim, interleaved=interleaved, seq_axis=seq_axis)
    rd = x.shape[-1] if rotary_dim is None else rotary_dim
    ys = np.moveaxis(y, y.ndim + seq_axis, -2)  # [..., seq, dim]
    pos = np.asarray(pos, np.float64)
    for j in range(rd // 2):
        zeta = (2 * j + 0.4 * rd) / (1.4 * rd)
        power = (pos - center) / scale_base * (-1 if downscale else 1)
        f = zeta ** power  # [seq] or [batch, seq]
        if f.ndim == 2:
            f = f.reshape((f.shape[0],) + (1,) * (ys.ndim - 3) + (f.shape[1],))
        for feature in ((2 * j, 2 * j + 1) if interleaved else (j, j + rd // 2)):
            ys[..., feature] *= f
    return np.moveaxis(ys, -2, y.ndim + seq_axis)


@given(seq_axis=st.sampled_from([-3, -2]), batch_positions=st.booleans(), interleaved=st.booleans(),
       extra=st.sampled_from([0, 2]), dtype=st.sampled_from(FLOAT_DTYPES), center=st.sampled_from([0, 7, 2.5, 3000]),
       scale_base=st.sampled_from([512.0, 64.0]), seed=st.integers(0, 2**32 - 1))
def test_xpos_against_its_definition(isa, seq_axis, batch_positions, interleaved, extra, dtype, center, scale_base,
                                     seed):
    rng = np.random.default_rng(seed)
    shape = (2, 9, 3, 16 + extra) if seq_axis == -3 else (2, 3, 9, 16 + extra)
    q = rng.uniform(-1, 1, shape).astype(dtype)
    k = rng.uniform(-1, 1, shape[:-1] + (16,)).astype(dtype)
    # within ±300 of the centre: ζ_0^(±300/64) stays within float16's range
    pos = int(center) + rng.integers(-300, 300, (2, 9) if batch_positions else 9)
    kw = dict(interleaved=interleaved, seq_axis=seq_axis, rotary_dim=16)
    gq, gk = posenc.apply_rope_qk(q, k, pos, xpos_scale_base=scale_base, xpos_center=center, **kw)
    w = posenc.rope_inv_freq(16)[0]
    for got, x, down in ((gq, q, False), (gk, k, True)):
        exact = exact_xpos(x, pos, w, scale_base, center, downscale=down, **kw)
        largest = float(np.abs(exact).max() / max(np.abs(x.astype(np.float64)).max(), 1e-300))
        check_rotation(got, x, exact, scale=max(largest, 1.0), max_angle=3300)


def test_xpos_scores_decay_with_distance_only(isa):
    """<q'_m, k'_n> = Σ_j ζ_j^((m − n)/scale_base)·(rotated pair products): shifting both positions, or the
    centre, leaves the scores; without xPos they are the plain RoPE scores times nothing."""
    rng = np.random.default_rng(6)
    q = rng.standard_normal((1, 6, 1, 32))
    k = rng.standard_normal((1, 6, 1, 32))
    def scores(offset, center):
        a, b = posenc.apply_rope_qk(q, k, offset=offset, xpos_scale_base=64.0, xpos_center=center)
        return a[0, :, 0] @ b[0, :, 0].T
    base = scores(0, 0)
    np.testing.assert_allclose(scores(0, 3), base, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(scores(1000, 1003), base, rtol=1e-9, atol=1e-9)
    # q = k = a single pair (1, 0): the score is ζ_0^((m − n)/64)·cos((m − n)·ω_0)
    e = np.zeros((1, 6, 1, 2))
    e[..., 0] = 1
    a, b = posenc.apply_rope_qk(e, e, xpos_scale_base=64.0, xpos_center=2)
    m = np.arange(6)
    np.testing.assert_allclose(a[0, :, 0] @ b[0, :, 0].T, (0.4 / 1.4) ** ((m[:, None] - m) / 64) * np.cos(m[:, None] - m),
                               rtol=1e-12, atol=1e-15)


def test_xpos_against_rotary_embedding_torch(isa):
    """rotary-embedding-torch's use_xpos (interleaved pairs, its first ``dim`` features, centre seq_len // 2)
    through apply_rope_qk and RotaryEmbedding; its module in float64 with its own float32 frequencies."""
    torch = pytest.importorskip("torch")
    ret = pytest.importorskip("rotary_embedding_torch")
    rot = ret.RotaryEmbedding(dim=32, use_xpos=True, xpos_scale_base=64).double()
    # Its ζ buffer is computed in float32 (rounded by ~3e-8): the same formula in float64 to compare closely.
    assert torch.allclose(rot.scale.float(), (torch.arange(0, 32, 2) + 0.4 * 32) / (1.4 * 32), rtol=1e-7)
    rot.scale = (torch.arange(0, 32, 2, dtype=torch.float64) + 0.4 * 32) / (1.4 * 32)
    rng = np.random.default_rng(7)
    for seq in (25, 24):  # odd: seq // 2 differs from torchscale's ceil
        q = torch.from_numpy(rng.standard_normal((2, 3, seq, 48)))  # [batch, heads, seq, head_dim]
        k = torch.from_numpy(rng.standard_normal((2, 3, seq, 48)))
        hq, hk = (t.numpy() for t in rot.rotate_queries_and_keys(q, k))
        kw = dict(rotary_dim=32, interleaved=True, seq_axis=-2, xpos_scale_base=64, xpos_center=seq // 2)
        gq, gk = posenc.apply_rope_qk(q.float(), k.float(), inv_freq=rot.freqs.detach().double(), **kw)
        np.testing.assert_allclose(gq, hq, rtol=0, atol=3e-6)
        np.testing.assert_allclose(gk, hk, rtol=0, atol=3e-6)
        np.testing.assert_allclose(posenc.apply_rope_qk(q, k, inv_freq=rot.freqs.detach().double(), **kw)[0], hq,
                                   rtol=0, atol=1e-12)
        rope = posenc.RotaryEmbedding(48, rotary_dim=32, interleaved=True, xpos_scale_base=64)
        mq, mk = rope(q, k, seq_axis=-2, xpos_center=seq // 2)
        np.testing.assert_allclose(mq, hq, rtol=0, atol=1e-5)  # float64 vs its float32-rounded frequencies
        np.testing.assert_allclose(mk, hk, rtol=0, atol=1e-5)


def torchscale_xpos(x, head_dim, scale_base=512, offset=0, downscale=False):
    """torchscale's XPOS.forward transcribed (microsoft/torchscale, torchscale/component/xpos_relative_position.py
    at 776b070d68aef2aca447dc3e1adb64682fbec126), evaluated in float64. x: [batch·heads, length, head_dim]."""
    import torch
    scale_vec = (torch.arange(0, head_dim, 2, dtype=torch.float64) + 0.4 * head_dim) / (1.4 * head_dim)
    length = x.shape[1]
    min_pos = -(length + offset) // 2
    max_pos = length + offset + min_pos
    scale = scale_vec ** torch.arange(min_pos, max_pos, 1, dtype=torch.float64).div(scale_base)[:, None]
    seq_len, dim = scale.shape  # fixed_pos_embedding(scale)
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, dtype=torch.float64) / dim))
    inp = torch.einsum("i , j -> i j", torch.arange(0, seq_len, dtype=torch.float64), inv_freq)
    sin, cos = torch.sin(inp), torch.cos(inp)
    if scale.shape[0] > length:
        scale, sin, cos = scale[-length:], sin[-length:], cos[-length:]
    if downscale:
        scale = 1 / scale
    sin, cos = (torch.repeat_interleave(t * scale, 2, dim=-1) for t in (sin, cos))  # duplicate_interleave
    x1, x2 = x[:, :, ::2], x[:, :, 1::2]
    rotated = torch.stack((-x2, x1), dim=-1).flatten(-2)  # rotate_every_two
    return x * cos + rotated * sin


def test_xpos_against_torchscale(isa):
    """torchscale's XPOS: queries scaled up, keys down, centre ceil(T/2) of the T = cached + new positions;
    its decoding step (one query at offset T − 1, every key re-scaled) too."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    T = 21
    q = torch.from_numpy(rng.standard_normal((6, T, 32)))  # [batch·heads, length, head_dim]
    k = torch.from_numpy(rng.standard_normal((6, T, 32)))
    center = -(-T // 2)  # ceil(T / 2)
    gq, gk = posenc.apply_rope_qk(q, k, interleaved=True, seq_axis=-2, xpos_scale_base=512, xpos_center=center)
    np.testing.assert_allclose(gq, torchscale_xpos(q, 32), rtol=0, atol=1e-12)
    np.testing.assert_allclose(gk, torchscale_xpos(k, 32, downscale=True), rtol=0, atol=1e-12)
    # decoding: the new query at position T − 1, offset T − 1
    step = q[:, -1:]
    want = torchscale_xpos(step, 32, offset=T - 1)
    got, _ = posenc.apply_rope_qk(step, step, offset=T - 1, interleaved=True, seq_axis=-2, xpos_scale_base=512,
                                  xpos_center=center)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    got32, _ = posenc.apply_rope_qk(q.float(), k.float(), interleaved=True, seq_axis=-2, xpos_scale_base=512,
                                    xpos_center=center)
    check_rotation(got32, q.numpy(), torchscale_xpos(q, 32).numpy(), scale=1.1, max_angle=0)


def test_tensors_that_require_grad_in_the_new_arguments(isa):
    """cos/sin, offset arrays' operands and xPos operands from tensors that require grad: read, not refused."""
    torch = pytest.importorskip("torch")
    q = torch.randn(2, 5, 4, 16, requires_grad=True)
    c, s = posenc.rope_cos_sin(5, 16, dtype=np.float64)
    ct, st = (torch.from_numpy(t).requires_grad_(True) for t in (c, s))
    qn = q.detach().numpy()
    np.testing.assert_array_equal(posenc.apply_rope(q, cos=ct, sin=st), posenc.apply_rope(qn, cos=c, sin=s))
    np.testing.assert_array_equal(posenc.apply_rope(q, offset=torch.tensor([3, 9])),
                                  posenc.apply_rope(qn, offset=np.array([3, 9])))
    got = posenc.apply_rope_qk(q, q, xpos_scale_base=torch.tensor(512.0).item(), xpos_center=2)
    want = posenc.apply_rope_qk(qn, qn, xpos_scale_base=512.0, xpos_center=2)
    np.testing.assert_array_equal(got[0], want[0])
    with pytest.raises(ValueError, match="out_k"):
        posenc.apply_rope_qk(q.detach(), q, xpos_scale_base=512.0, out_k=q)
