"""docs/migration.md, row by row: each posenc call against the code it replaces.

Skips a row when its library (PyTorch, positional-encodings,
rotary-embedding-torch, transformers) or posenc family is not installed.
The originals compute in float32; tolerances allow their rounding (positions
here stay below 1000, where float32 angles are good to ~1e-4).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import posenc

torch = pytest.importorskip("torch")

ATOL = 2e-4  # the originals' float32 angle error at positions < 1000


def needs(*names: str) -> None:
    for name in names:
        if not hasattr(posenc, name):
            pytest.skip(f"posenc.{name} is not in this build")


class TutorialPositionalEncoding(torch.nn.Module):
    """Verbatim from the PyTorch tutorial "Language Modeling with nn.Transformer"."""

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000):
        super().__init__()
        self.dropout = torch.nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        x = x + self.pe[: x.size(0)]
        return self.dropout(x)


def test_pytorch_tutorial():
    tut = TutorialPositionalEncoding(64, dropout=0.0, max_len=600).eval()
    np.testing.assert_allclose(posenc.sinusoidal(600, 64), tut.pe[:, 0, :].numpy(), atol=ATOL)
    x = torch.randn(50, 3, 64)  # [seq, batch, d]
    expected = tut(x).numpy()
    posenc.add_sinusoidal(x.transpose(0, 1), out=x.transpose(0, 1))  # in place through the transposed view
    np.testing.assert_allclose(x.numpy(), expected, atol=ATOL)
    xb = torch.randn(3, 50, 64)
    expected = xb.numpy() * math.sqrt(64) + posenc.sinusoidal(50, 64)
    np.testing.assert_allclose(posenc.add_sinusoidal(xb, scale=math.sqrt(64)), expected, rtol=1e-6, atol=1e-5)


def test_worked_example_module_keeps_gradients():
    class PositionalEncoding(torch.nn.Module):  # as in docs/migration.md
        def __init__(self, d_model, dropout=0.1, max_len=5000):
            super().__init__()
            self.dropout = torch.nn.Dropout(dropout)

        def forward(self, x):
            x = x.clone()
            posenc.add_sinusoidal(x.detach().transpose(0, 1), out=x.detach().transpose(0, 1))
            return self.dropout(x)

    x = torch.randn(20, 2, 16, requires_grad=True)
    y = PositionalEncoding(16, dropout=0.0)(x)
    tut = TutorialPositionalEncoding(16, dropout=0.0, max_len=20)
    np.testing.assert_allclose(y.detach().numpy(), tut(x).detach().numpy(), atol=ATOL)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((20, 2, 16), np.float32))


def test_positional_encodings_package():
    pe_mod = pytest.importorskip("positional_encodings.torch_encodings")
    x1 = torch.zeros(2, 40, 12)
    np.testing.assert_allclose(pe_mod.PositionalEncoding1D(12)(x1)[0].numpy(), posenc.sinusoidal(40, 12), atol=ATOL)
    x1 = torch.randn(2, 40, 12)
    np.testing.assert_allclose(pe_mod.Summer(pe_mod.PositionalEncoding1D(12))(x1).numpy(),
                               posenc.add_sinusoidal(x1), atol=ATOL)
    for ch in (8, 10, 13):
        x2 = torch.zeros(1, 6, 7, ch)
        np.testing.assert_allclose(pe_mod.PositionalEncoding2D(ch)(x2)[0].numpy(), posenc.sinusoidal_2d(6, 7, ch),
                                   atol=ATOL)
        x3 = torch.zeros(1, 3, 4, 5, ch)
        np.testing.assert_allclose(pe_mod.PositionalEncoding3D(ch)(x3)[0].numpy(),
                                   posenc.sinusoidal_3d(3, 4, 5, ch), atol=ATOL)
    xp = torch.zeros(1, 8, 6, 7)
    np.testing.assert_allclose(pe_mod.PositionalEncodingPermute2D(8)(xp)[0].numpy(),
                               posenc.sinusoidal_2d(6, 7, 8).transpose(2, 0, 1), atol=ATOL)


def test_rotary_embedding_torch():
    needs("apply_rope")
    ret = pytest.importorskip("rotary_embedding_torch")
    q = torch.randn(2, 4, 30, 64)  # [batch, heads, seq, head_dim]
    rot = ret.RotaryEmbedding(dim=32)
    expected = rot.rotate_queries_or_keys(q).numpy()
    got = posenc.apply_rope(q, rotary_dim=32, interleaved=True, seq_axis=-2)
    np.testing.assert_allclose(got, expected, atol=ATOL)
    expected = rot.rotate_queries_or_keys(q, offset=7).numpy()
    got = posenc.apply_rope(q, offset=7, rotary_dim=32, interleaved=True, seq_axis=-2)
    np.testing.assert_allclose(got, expected, atol=ATOL)
    expected = ret.RotaryEmbedding(dim=32, theta=5e5).rotate_queries_or_keys(q).numpy()
    np.testing.assert_allclose(posenc.apply_rope(q, base=5e5, rotary_dim=32, interleaved=True, seq_axis=-2),
                               expected, atol=ATOL)
    expected = ret.RotaryEmbedding(dim=32, interpolate_factor=4.0).rotate_queries_or_keys(q).numpy()
    got = posenc.apply_rope(q, scaling={"type": "linear", "factor": 4.0}, rotary_dim=32, interleaved=True,
                            seq_axis=-2)
    np.testing.assert_allclose(got, expected, atol=ATOL)
    qs = torch.randn(2, 30, 4, 64)  # [batch, seq, heads, head_dim]
    np.testing.assert_allclose(posenc.apply_rope(qs, rotary_dim=32, interleaved=True),
                               rot.rotate_queries_or_keys(qs, seq_dim=-3).numpy(), atol=ATOL)


def _llama_config(rope_parameters):
    """A real transformers config object, built as a checkpoint is loaded (its rope dict standardised by it)."""
    from transformers import LlamaConfig

    return LlamaConfig(hidden_size=256, num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=2048,
                       num_hidden_layers=1, intermediate_size=32, vocab_size=32,
                       rope_parameters=dict(rope_parameters))


@pytest.mark.parametrize("rope_parameters", [
    {"rope_type": "default", "rope_theta": 10000.0},
    {"rope_type": "default", "rope_theta": 500000.0},
    {"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0},
    {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 2048, "rope_theta": 1e6},
    {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
     "original_max_position_embeddings": 512, "rope_theta": 500000.0},
    {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0}])
def test_hugging_face_rotary(rope_parameters):
    """The rows as written: config.rope_parameters (transformers 5 has no config.rope_theta) and from_config."""
    needs("rope_inv_freq", "rope_cos_sin", "apply_rope_qk", "RotaryEmbedding")
    llama = pytest.importorskip("transformers.models.llama.modeling_llama")
    config = _llama_config(rope_parameters)
    assert "rope_theta" in config.rope_parameters
    emb = llama.LlamaRotaryEmbedding(config)
    head_dim = 64
    rope = posenc.RotaryEmbedding.from_config(config)
    assert rope.dim == head_dim
    q, k = torch.randn(2, 4, 40, head_dim), torch.randn(2, 4, 40, head_dim)
    position_ids = torch.arange(40)[None].expand(2, 40)
    cos, sin = emb(q, position_ids)
    eq, ek = llama.apply_rotary_pos_emb(q, k, cos, sin)
    np.testing.assert_allclose(rope.inv_freq, emb.inv_freq.double().numpy(), rtol=1e-6)
    assert rope.attention_scaling == pytest.approx(emb.attention_scaling, rel=1e-6)
    pcos, psin = rope.cos_sin(position_ids[0])
    np.testing.assert_allclose(pcos, cos[0, :, : head_dim // 2].numpy(), atol=ATOL)
    np.testing.assert_allclose(psin, sin[0, :, : head_dim // 2].numpy(), atol=ATOL)
    gq, gk = rope(q, k, position_ids, seq_axis=-2)
    np.testing.assert_allclose(gq, eq.numpy(), atol=ATOL * 4)
    np.testing.assert_allclose(gk, ek.numpy(), atol=ATOL * 4)
    if config.rope_parameters["rope_type"] == "dynamic":  # transformers reads its length beside the dict
        return
    inv_freq, attention = posenc.rope_inv_freq(head_dim, scaling=config.rope_parameters)
    np.testing.assert_array_equal(inv_freq, rope.inv_freq)
    assert attention == rope.attention_scaling
    pcos2, psin2 = posenc.rope_cos_sin(position_ids[0], head_dim, scaling=config.rope_parameters)
    np.testing.assert_array_equal(pcos2, pcos)
    np.testing.assert_array_equal(psin2, psin)
    gq2, gk2 = posenc.apply_rope_qk(q, k, position_ids, scaling=config.rope_parameters, seq_axis=-2)
    np.testing.assert_array_equal(gq2, gq)
    np.testing.assert_array_equal(gk2, gk)


def test_hugging_face_partial_and_mrope_rows():
    """Phi's partial_rotary_factor and Qwen2-VL's M-RoPE, from the real config objects."""
    needs("apply_rope", "RotaryEmbedding")
    pytest.importorskip("transformers")
    from transformers import PhiConfig, Qwen2VLConfig
    from transformers.models.phi import modeling_phi as phi
    from transformers.models.qwen2_vl import modeling_qwen2_vl as qvl

    config = PhiConfig(hidden_size=256, num_attention_heads=4, num_hidden_layers=1, intermediate_size=32,
                       vocab_size=32, partial_rotary_factor=0.5)
    emb = phi.PhiRotaryEmbedding(config)
    q, k = torch.randn(1, 4, 30, 64), torch.randn(1, 4, 30, 64)
    pid = torch.arange(30)[None]
    cos, sin = emb(q, pid)
    rd = cos.shape[-1]
    eq_r, ek_r = phi.apply_rotary_pos_emb(q[..., :rd], k[..., :rd], cos, sin)
    eq = torch.cat([eq_r, q[..., rd:]], -1)
    np.testing.assert_allclose(posenc.apply_rope(q, pid[0], scaling=config.rope_parameters, seq_axis=-2), eq.numpy(),
                               atol=ATOL * 4)
    gq, gk = posenc.RotaryEmbedding.from_config(config)(q, k, pid[0], seq_axis=-2)
    np.testing.assert_allclose(gq, eq.numpy(), atol=ATOL * 4)
    np.testing.assert_allclose(gk, torch.cat([ek_r, k[..., rd:]], -1).numpy(), atol=ATOL * 4)

    config = Qwen2VLConfig(text_config=dict(hidden_size=128, num_attention_heads=2, num_key_value_heads=1,
                                            num_hidden_layers=1, intermediate_size=32, vocab_size=32,
                                            rope_scaling={"type": "mrope", "mrope_section": [8, 12, 12]},
                                            rope_theta=1e6))
    emb = qvl.Qwen2VLRotaryEmbedding(config.text_config)
    q, k = torch.randn(1, 2, 30, 64), torch.randn(1, 1, 30, 64)
    pos = torch.from_numpy(np.random.default_rng(0).integers(0, 100, (3, 1, 30)))
    cos, sin = emb(q, pos)
    eq, ek = qvl.apply_rotary_pos_emb(q, k, cos, sin)
    gq, gk = posenc.RotaryEmbedding.from_config(config)(q, k, pos, seq_axis=-2)
    np.testing.assert_allclose(gq, eq.numpy(), atol=ATOL * 4)
    np.testing.assert_allclose(gk, ek.numpy(), atol=ATOL * 4)
    gq2 = posenc.apply_rope(q, pos, scaling=config.text_config.rope_parameters, seq_axis=-2)
    np.testing.assert_array_equal(gq2, gq)


def test_hugging_face_t5_and_alibi():
    needs("t5_bucket", "t5_bias", "alibi_bias", "alibi_slopes")
    t5 = pytest.importorskip("transformers.models.t5.modeling_t5")
    rel = torch.arange(-300, 300)
    for bidirectional in (True, False):
        expected = t5.T5Attention._relative_position_bucket(rel, bidirectional=bidirectional, num_buckets=32,
                                                            max_distance=128)
        got = posenc.t5_bucket(rel, bidirectional=bidirectional, num_buckets=32, max_distance=128)
        np.testing.assert_array_equal(got, expected.numpy())
    bloom = pytest.importorskip("transformers.models.bloom.modeling_bloom")
    heads, n = 6, 9
    alibi = bloom.build_alibi_tensor(torch.ones(1, n), heads, torch.float32).reshape(heads, 1, n).numpy()
    causal = np.triu(np.full((n, n), -np.inf), 1)

    def softmax(s):
        e = np.exp(s - s.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    np.testing.assert_allclose(softmax(alibi + causal), softmax(posenc.alibi_bias(heads, n, n) + causal), atol=1e-6)
    np.testing.assert_allclose(posenc.alibi_slopes(heads), alibi[:, 0, 1], rtol=1e-6)
