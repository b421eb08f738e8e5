"""Inputs that once misbehaved, kept as regression tests (found by the hostile table and the fuzzer)."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import posenc

from helpers import python, run_python


def test_out_with_a_zero_stride_is_refused(backend):
    # Was accepted: every row of the table raced to the same memory, the last write won.
    out = np.lib.stride_tricks.as_strided(np.zeros(6, np.float32), (5, 6), (0, 4), writeable=True)
    with pytest.raises(ValueError, match="out"):
        posenc.sinusoidal(5, 6, out=out)
    x = np.ones((2, 3, 4), np.float32)
    out = np.lib.stride_tricks.as_strided(np.zeros(12, np.float32), (2, 3, 4), (0, 16, 4), writeable=True)
    with pytest.raises(ValueError, match="out"):
        posenc.add_sinusoidal(x, out=out)


def test_out_views_that_do_not_self_overlap_are_accepted(backend):
    base = np.zeros((8, 12), np.float32)
    for out in (base[::2, ::2], base[::-1, 1::2], base.T[:6, :4].T, base[:, :6][::-1], base[1:, 2:][::-2, ::-1]):
        shape = out.shape
        posenc.sinusoidal(shape[0], shape[1], out=out)
        np.testing.assert_allclose(out, posenc.reference.sinusoidal(shape[0], shape[1]), atol=1e-6)


def test_set_num_threads_beyond_int_is_a_value_error():
    # Was a pybind11 TypeError ("incompatible function arguments") that did not name n.
    with pytest.raises(ValueError, match="n must be <="):
        posenc.set_num_threads(2**63)
    posenc.set_num_threads(None)


def test_offsets_beyond_exact_float64_positions_are_refused(backend):
    # Found by the fuzzer: add_sinusoidal(x, offset=-2**63 - 1) was accepted and the native
    # kernel (exact k·ω steps from the anchor) and the reference (offset + k rounded to float64
    # first) disagreed: past 2**53 consecutive positions are not representable.
    x = np.zeros((1, 3, 4), np.float32)
    for offset in (-(2**63) - 1, 2**63, 2**53 + 1, -(2**53) - 1, 2**53 - 1):
        with pytest.raises(ValueError, match="offset"):
            posenc.add_sinusoidal(x, offset=offset)
    posenc.add_sinusoidal(x, offset=2**53 - 2)
    posenc.add_sinusoidal(x, offset=-(2**53))


def test_huge_alibi_head_counts_are_refused_at_once(backend):
    # Were built as Python lists: 2**40 heads grew memory for tens of seconds until the
    # OOM killer (or the test's address-space cap) stopped it.
    import time
    start = time.perf_counter()
    for heads in (2**40, 2**62, 2**63):
        with pytest.raises((ValueError, MemoryError)):
            posenc.alibi_slopes(heads)
        with pytest.raises((ValueError, MemoryError)):
            posenc.alibi_bias(heads, 2, 4)
    assert time.perf_counter() - start < 5


def test_alibi_slopes_still_match_the_authors_lists():
    import math

    def authors(n):  # ofirpress/attention_with_linear_biases get_slopes, verbatim in structure
        def power_of_2(n):
            start = 2 ** (-(2 ** -(math.log2(n) - 3)))
            return [start * start**i for i in range(n)]
        if math.log2(n).is_integer():
            return power_of_2(n)
        closest = 2 ** math.floor(math.log2(n))
        return power_of_2(closest) + authors(2 * closest)[0::2][: n - closest]

    for n in list(range(1, 80)) + [96, 100, 255, 1000]:
        np.testing.assert_array_equal(posenc.alibi_slopes(n, dtype=np.float64), np.array(authors(n)))


def test_rope_argument_kinds_are_named(backend):
    x = np.ones((1, 4, 2, 8), np.float32)
    # seq_axis=-3.0 passed `in (-3, -2)` and failed as a tuple index.
    with pytest.raises((TypeError, ValueError), match="seq_axis"):
        posenc.apply_rope(x, seq_axis=-3.0)
    # RotaryEmbedding(scaling="linear") failed inside dict() with a message not naming scaling.
    with pytest.raises(TypeError, match="scaling"):
        posenc.RotaryEmbedding(8, scaling="linear")
    # Found by the fuzzer: offset=-2**63-1 was accepted and the backends disagreed (positions
    # past 2**53 are not exact in float64), as in add_sinusoidal.
    for offset in (-(2**63) - 1, 2**63, 2**53):
        with pytest.raises(ValueError, match="offset"):
            posenc.apply_rope(x, offset=offset)
    posenc.apply_rope(x, offset=2**53 - 4)


def test_out_must_expose_memory(backend):
    # relative_positions(3, 5, out=<list of int lists>) was accepted: np.asarray(out) is a
    # copy, the results went there, the caller's list stayed as it was.
    out = np.zeros((3, 5), np.int64).tolist()
    with pytest.raises(TypeError, match="out"):
        posenc.relative_positions(3, 5, out=out)
    with pytest.raises(TypeError, match="out"):
        posenc.clipped_relative_positions(3, 5, 2, out=out)
    with pytest.raises(TypeError, match="out"):
        posenc.sinusoidal(2, 2, out=((0.0, 1.0), (0.0, 1.0)))
    buf = bytearray(2 * 2 * 4)  # a writeable buffer is fine
    posenc.sinusoidal(2, 2, out=np.frombuffer(buf, np.float32).reshape(2, 2))


def test_relative_and_learned_arguments_are_named(backend):
    # clipped_relative_positions(..., None) failed at `-None`; a huge clip's message did not name it.
    with pytest.raises(TypeError, match="max_relative_position"):
        posenc.clipped_relative_positions(3, 5, None)
    with pytest.raises(ValueError, match="max_relative_position"):
        posenc.clipped_relative_positions(3, 5, 2**63)
    # LearnedPositionalEmbedding.add(offset=2**63) raised OverflowError from np.arange;
    # a negative offset was reported as positions[0].
    emb = posenc.LearnedPositionalEmbedding(8, 4, seed=0)
    x = np.zeros((1, 3, 4), np.float32)
    for offset in (2**63, -1, 6):
        with pytest.raises(IndexError, match="offset"):
            emb.add(x, offset=offset)
    np.testing.assert_array_equal(emb.add(x, offset=5)[0], emb.weight[5:8])


def test_misaligned_index_and_float64_vectors(backend):
    # UBSan (the sanitizer job): embedding_add with int64 positions from np.frombuffer at an
    # odd offset loaded int64 from a misaligned address in the bindings; np.ascontiguousarray
    # keeps such a view as it is. The same held for float64 positions, slopes and inv_freq.
    from hostile import misaligned
    x = np.ones((2, 3, 4), np.float32)
    table = np.arange(28, dtype=np.float32).reshape(7, 4)
    pos = misaligned(np.array([0, 6, 2]))
    np.testing.assert_array_equal(posenc.embedding_add(x, table, pos), x + table[[0, 6, 2]])
    np.testing.assert_array_equal(posenc.embedding_lookup(table, pos), table[[0, 6, 2]])
    p = misaligned(np.array([0.0, 3.5, 1.0]))
    np.testing.assert_allclose(posenc.sinusoidal(p, 4), posenc.reference.sinusoidal(np.array(p), 4), atol=1e-6)
    s = misaligned(np.array([0.5, 0.25]))
    np.testing.assert_array_equal(posenc.alibi_bias(2, 2, 3, slopes=s),
                                  posenc.reference.alibi_bias(2, 2, 3, slopes=np.array(s)))
    f = misaligned(np.array([1.0, 0.5]))
    xr = np.ones((1, 3, 2, 4), np.float32)
    np.testing.assert_allclose(posenc.apply_rope(xr, inv_freq=f),
                               posenc.reference.apply_rope(xr, inv_freq=np.array(f)), atol=1e-6)


def test_unparseable_dtype_strings_are_a_type_error(backend):
    # Found by the fuzzer: np.dtype(",") raises SyntaxError, which escaped every dtype= argument.
    for bad in (",", "f8,", "(", "float33"):
        with pytest.raises(TypeError, match="dtype"):
            posenc.sinusoidal(3, 4, dtype=bad)
        with pytest.raises(TypeError, match="dtype"):
            posenc.relative_positions(2, 2, dtype=bad)
        with pytest.raises(TypeError, match="dtype"):
            posenc.LearnedPositionalEmbedding(4, 2, dtype=bad)


def test_float64_results_are_exact_without_ml_dtypes():
    # Without ml_dtypes, np.dtype("float64") == None (NumPy reads None as float64) sent every
    # float64 result through the bfloat16 rounding: sin(1) came out as 0.84147102.
    r = run_python("""
        import math, sys
        sys.modules["ml_dtypes"] = None  # as if it were not installed
        import numpy as np, posenc
        assert posenc._checks.BFLOAT16 is None
        for backend in ["reference"] + (["native"] if posenc.info()["native"] else []):
            posenc.set_backend(backend)
            row = posenc.sinusoidal(2, 2, dtype=np.float64)[1]  # libm's values: np.sin on the reference,
            assert np.abs(row - [math.sin(1.0), math.cos(1.0)]).max() <= 4e-16, backend  # the vector sincos natively
            x = np.full((1, 1, 1, 3), 1 + 2**-40)
            assert posenc.add_alibi(x, slopes=[2**-30])[0, 0, 0].tolist() == [1 + 2**-40, 1 + 2**-40 + 2**-30,
                                                                               1 + 2**-40 + 2**-29], backend
        print("exact")
        """)
    assert r.returncode == 0 and r.stdout.strip() == "exact", r.stderr


def test_import_posenc_leaves_ml_dtypes_until_bfloat16_is_asked_for():
    # With NumPy 2.4, importing ml_dtypes 0.7 took 1.2 s: `import posenc` paid it in every program.
    pytest.importorskip("ml_dtypes")
    r = run_python("""
        import sys
        import numpy as np, posenc
        assert "ml_dtypes" not in sys.modules
        posenc.sinusoidal(3, 4, dtype=np.float16)
        posenc.apply_rope(np.zeros((1, 2, 1, 4), np.float32))
        assert "ml_dtypes" not in sys.modules
        table = posenc.sinusoidal(3, 4, dtype="bfloat16")  # the name alone: NumPy knows it only after the import
        import ml_dtypes
        assert table.dtype == ml_dtypes.bfloat16
        x = np.ones((1, 3, 4), ml_dtypes.bfloat16)
        import posenc.reference
        assert posenc.add_sinusoidal(x).view(np.uint16).tolist() == posenc.reference.add_sinusoidal(x).view(np.uint16).tolist()
        print("lazy")
        """)
    assert r.returncode == 0 and r.stdout.strip() == "lazy", r.stderr


def test_a_bfloat16_tensor_without_ml_dtypes_names_the_missing_extra():
    pytest.importorskip("torch")
    r = run_python("""
        import sys
        sys.modules["ml_dtypes"] = None
        import torch, posenc
        try:
            posenc.add_sinusoidal(torch.zeros(2, 4, dtype=torch.bfloat16))
        except TypeError as exc:
            print(exc)
        """)
    assert r.returncode == 0 and "x is a torch.bfloat16 tensor" in r.stdout and "posenc[bfloat16]" in r.stdout, r


def test_posenc_imports_and_works_without_docstrings():
    # Under python -OO every docstring is None: the shared-description fillers of _relative
    # called None.replace and `import posenc` raised AttributeError.
    r = python("-OO", "-c", textwrap.dedent("""
        import importlib.util, inspect
        import numpy as np, posenc, posenc.reference
        assert posenc.t5_buckets(2, 3, offset=1).tolist() == [[1, 0, 17], [2, 1, 0]]
        assert posenc.add_sinusoidal(np.zeros((2, 4), np.float32)).shape == (2, 4)
        if importlib.util.find_spec("dask") is not None:
            import posenc.dask
            assert "offset" in inspect.signature(posenc.dask.add_sinusoidal).parameters
        print("imported")
        """))
    assert r.returncode == 0 and r.stdout.strip() == "imported", r.stderr


def test_in_place_outs_refuse_arguments_inside_them(backend):
    # Were accepted: out was x itself, so the check of the other arguments was skipped, and a float64
    # positions (coords, slopes) view of x was read while being rotated or added to (different results
    # from the same call on copies). The hostile table now tries every array argument inside out.
    x = np.random.default_rng(0).standard_normal((2, 6, 2, 8))
    rows = x[0, :, 0]  # [6, 8]
    for call in (lambda: posenc.apply_rope(x, x[0, :, 0, 0], out=x),
                 lambda: posenc.apply_rope_qk(x, x.copy(), positions=x[0, :, 0, 0], out_q=x),
                 lambda: posenc.RotaryEmbedding(8)(x, x.copy(), positions=x[0, :, 0, 0], out_q=x),
                 lambda: posenc.apply_rope_nd(x, x[0, :, 0, :2], posenc.rope_axial_freqs((4, 4)), out=x),
                 lambda: posenc.add_sinusoidal(rows, positions=rows[:, 0], out=rows),
                 lambda: posenc.add_alibi(x, slopes=x[0, :, 0, 0], out=x)):
        before = x.copy()
        with pytest.raises(ValueError, match="overlaps"):
            call()
        assert np.array_equal(x, before)
    # An out of another shape than the input it is (the fast path skipped the shape check).
    table = np.ones((5, 4), np.float32)
    with pytest.raises(ValueError, match="out must have shape"):
        posenc.relative_embeddings(table, 3, 3, max_relative_position=2, out=table)


@pytest.mark.parametrize("scaling", [1e37, 1.9682376432316182e38, 3e38, 1e39, 1e300])
@pytest.mark.parametrize("interleaved", [False, True])
def test_float32_rotations_with_an_attention_scaling_near_float32s_range(backend, scaling, interleaved):
    # Found by the fuzzer (apply_rope_qk, attention_scaling=1.97e38): the float32 rotation's
    # products u·c overflowed to ±inf (and inf − inf to NaN) where the float64 rotation, rounded
    # once, is finite. Checked against that closed form, computed here in float64.
    rng = np.random.default_rng(7)
    q = rng.integers(-10, 40, size=(2, 5, 3, 8)).astype(np.float32)
    k = rng.integers(-10, 40, size=(2, 5, 1, 8)).astype(np.float32)
    q[0, 1, 0, :] = 0  # a zero pair: 0·c − 0·s is 0, not NaN
    theta = np.arange(5)[:, None] * 10000.0 ** (-np.arange(0, 8, 2) / 8.0)
    c, s = scaling * np.cos(theta)[:, None, :], scaling * np.sin(theta)[:, None, :]

    def rotated(x):
        x = x.astype(np.float64)
        u, v = (x[..., 0::2], x[..., 1::2]) if interleaved else (x[..., :4], x[..., 4:])
        ru, rv = u * c - v * s, v * c + u * s
        out = np.empty_like(x)
        if interleaved:
            out[..., 0::2], out[..., 1::2] = ru, rv
        else:
            out[..., :4], out[..., 4:] = ru, rv
        return out.astype(np.float32)

    with np.errstate(over="ignore", invalid="ignore"):
        expected_q, expected_k = rotated(q), rotated(k)
    got_q, got_k = posenc.apply_rope_qk(q, k, attention_scaling=scaling, interleaved=interleaved)
    got = posenc.apply_rope(q, attention_scaling=scaling, interleaved=interleaved)
    for a, b in ((got_q, expected_q), (got_k, expected_k), (got, expected_q)):
        np.testing.assert_array_equal(np.isfinite(a), np.isfinite(b))
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        finite = np.isfinite(b)
        np.testing.assert_allclose(a[finite], b[finite], rtol=2.0**-23, atol=0)


def test_float32_xpos_rotations_with_factors_beyond_float32s_range():
    # The same overflow through the caller-table route: xPos scales k at position n by
    # ζ_j^(−n/scale_base), here up to 1e54 (scale_base 1), where the float32 rotation gave NaN
    # (0·inf) and ±inf where the float64 rotation rounded once does not. Native against the
    # reference (k's tables pass 2^32, so both rotate k in float64): the same non-finite entries,
    # and k's others equal.
    rng = np.random.default_rng(3)
    q = rng.integers(-10, 40, size=(1, 120, 2, 8)).astype(np.float32)
    k = rng.integers(-10, 40, size=(1, 120, 2, 8)).astype(np.float32)
    q[0, ::7, 0, :] = 0
    k[0, ::5, 1, :] = 0
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        got_q, got_k = posenc.apply_rope_qk(q, k, xpos_scale_base=1.0)
        want_q, want_k = posenc.reference.apply_rope_qk(q, k, xpos_scale_base=1.0)
    for a, b in ((got_q, want_q), (got_k, want_k)):
        np.testing.assert_array_equal(np.isfinite(a), np.isfinite(b))
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    finite = np.isfinite(want_k)
    assert not finite.all() and finite.sum() > 1000  # both overflowing and ordinary entries
    np.testing.assert_allclose(got_k[finite], want_k[finite], rtol=2.0**-23, atol=0)


def test_positions_past_2_53_are_not_stepped_by_one(isa):
    # The angle rows stepped to the next position where `before + 1.0 == p`, which from 2^53 on also holds
    # for equal positions (2^64 twice) and for positions 2 apart: found by the fuzzer on sinusoidal_nd.
    p = np.array([2.0**64, 2.0**64, 2.0**53, 2.0**53 + 2, 2.0**53 + 4, 3.0, 4.0])
    coords, freqs = np.stack([p, p[::-1]], -1), posenc.rope_axial_freqs((4, 4))
    x = np.random.default_rng(0).standard_normal((1, p.size, 2, 8)).astype(np.float32)
    for name, args in [("sinusoidal", (p, 8)), ("sinusoidal_nd", (coords, (4, 4))), ("apply_rope", (x, p)),
                       ("apply_rope_nd", (x, np.stack([p, np.zeros_like(p)], -1), freqs))]:
        got, want = getattr(posenc, name)(*args), getattr(posenc.reference, name)(*args)
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6, err_msg=name)


def test_axis_products_are_rounded_before_they_are_summed(isa):
    # θ = Σ_a coords[a]·freqs[a] fused each product into the sum (-ffp-contract=fast), where the reference
    # rounds it first: the angles differed in their last bits, which near 2^64 is thousands of radians
    # (coordinates and frequencies near 2^32, found by the fuzzer on rope_nd_cos_sin).
    big = 2**32 - np.array([5, 7, 9, 2])
    coords = np.array([[big[0], 22, 35, 13, 30], [15, 4, 26, 17, 14], [11, big[1], big[2], 10, big[3]],
                       [39, 39, big[3], 11, 30]], np.uint32)
    freqs = np.concatenate([coords, [[5, 1, 8, 1, 27]]]).astype(np.uint32)
    for dtype in (np.float32, np.float64):
        for got, want in zip(posenc.rope_nd_cos_sin(coords, freqs, dtype=dtype),
                             posenc.reference.rope_nd_cos_sin(coords, freqs, dtype=dtype)):
            np.testing.assert_allclose(got, want, rtol=2e-6 if dtype == np.float32 else 1e-14, atol=1e-14)
    x = np.random.default_rng(0).standard_normal((1, 4, 2, 10))
    got = posenc.apply_rope_nd(x, coords.astype(np.float64)[None], freqs.astype(np.float64))
    np.testing.assert_allclose(got, posenc.reference.apply_rope_nd(x, coords.astype(np.float64)[None],
                                                                  freqs.astype(np.float64)), rtol=1e-13, atol=1e-13)
