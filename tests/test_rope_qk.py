"""The 1-D rotary API of issue 13: per-row offset arrays, grad-requiring torch inputs, precomputed
cos/sin tables, xPos. Tolerances as in tests/test_rope.py (its independent float64 evaluation
``exact_rope`` and bound ``check_rotation``)."""

from __future__ import annotations

import numpy as np
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
