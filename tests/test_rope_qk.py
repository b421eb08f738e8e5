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
