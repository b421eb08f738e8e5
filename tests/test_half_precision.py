"""float16 and bfloat16 in the compiled core: exact conversions, rounded once, on every path.

The kernels convert whole vectors at a time (F16C and integer instructions,
cpp/include/posenc/lanes.hpp) and element by element for the rest of a row
(convert.hpp); both must give the correctly rounded result, at every vector
tail. Three conversions carry every 16-bit kernel:

- widening float16/bfloat16 → float/double, exact;
- the sum of two stored values (scores + bias, x + table row), formed in float
  and rounded again: correct because float has at least 2p + 2 bits;
- a double result rounded once (sines, rotations, interpolation), through a
  float rounded to odd: correct for any double, including the values just off
  a halfway point where rounding to float first would round twice.

Each is driven through a kernel that performs it alone (a resampling with
weights (1, 0) copies its source; a Toeplitz add sums) and compared with an
exact rounding computed here in Python integers.
"""

from __future__ import annotations

import contextlib
import functools
import math
from typing import Any, Iterator

import numpy as np
import pytest

import posenc
from posenc import _backend
from posenc._checks import BFLOAT16

from conftest import requires_native

pytestmark = requires_native

HALF_DTYPES = [np.float16] + ([BFLOAT16] if BFLOAT16 is not None else [])
LENGTHS = list(range(1, 41)) + [255, 256, 257, 1000]  # every tail of 8- and 16-lane vectors


def _has_bfloat16_instructions() -> bool:
    """Whether the CPU has AVX512_BF16's conversions (whether or not posenc uses them by default)."""
    native = _backend.native
    if native is None:
        return False
    previous = native.bfloat16_instructions()
    try:
        native.use_bfloat16_instructions(True)
        return True
    except ValueError:
        return False
    finally:
        native.use_bfloat16_instructions(previous)


HAS_BFLOAT16_INSTRUCTIONS = _has_bfloat16_instructions()


def _paths() -> list:
    """Each path the CPU has; where it has AVX512_BF16's conversions, the AVX-512 path with and without them."""
    if _backend.native is None:
        return []
    paths = list(_backend.native.available_isas())
    if HAS_BFLOAT16_INSTRUCTIONS:
        paths[paths.index("avx512"):] = ["avx512-bf16-instructions", "avx512-integer-bf16"]
    return paths


@contextlib.contextmanager
def on_path(name: str) -> Iterator[str]:
    """A block on one of _paths(), selected on the compiled module directly; the AVX-512 path
    rounding floats to bfloat16 with AVX512_BF16's conversions (which flush subnormals, so vectors
    holding one must be left to the integer rounding) or without them."""
    native = _backend.native
    previous, bf16 = native.active_isa(), native.bfloat16_instructions()
    native.select_isa(name.split("-")[0])
    native.use_bfloat16_instructions(name.endswith("-instructions"))
    try:
        yield name
    finally:
        native.select_isa(previous)
        native.use_bfloat16_instructions(bf16)


@pytest.fixture(params=_paths() or None)
def path(request: Any) -> Iterator[str]:
    """Each instruction-set path the CPU has (on_path)."""
    with on_path(request.param) as name:
        yield name


def round_bfloat16(values: np.ndarray) -> np.ndarray:
    """float64 → bfloat16 rounded to nearest, ties to even, computed exactly (the reference)."""
    out = np.empty(values.shape, np.uint16)
    for k, d in enumerate(values.reshape(-1).tolist()):
        if math.isnan(d):
            out.reshape(-1)[k] = 0x7FC0 | (0x8000 if math.copysign(1.0, d) < 0 else 0)
            continue
        a = abs(d)
        if a == 0.0 or math.isinf(a):
            r = a
        else:
            exponent = math.frexp(a)[1]  # a = m·2^exponent, 0.5 <= m < 1
            step = 2.0 ** max(exponent - 8, -133)  # 8 significant bits; subnormal spacing 2^-133
            n = round(a / step)  # exact quotient (a power-of-two step); round() ties to even
            r = n * step if n * step < 2.0**128 else math.inf
        bits = int(np.array(r, np.float32).view(np.uint32)) >> 16
        out.reshape(-1)[k] = bits | (0x8000 if math.copysign(1.0, d) < 0 else 0)
    return out.reshape(values.shape).view(BFLOAT16)


def round_once(values: np.ndarray, dtype: Any) -> np.ndarray:
    """float64 rounded once to dtype (NumPy's float64 → float16 cast is correctly rounded)."""
    if np.dtype(dtype) == np.float16:
        with np.errstate(over="ignore"):
            return values.astype(np.float16)
    return round_bfloat16(values)


def same_bits(got: np.ndarray, expected: np.ndarray) -> None:
    g, e = got.view(np.uint16), expected.view(np.uint16)
    nan = np.isnan(got.astype(np.float32)) & np.isnan(expected.astype(np.float32))
    bad = (g != e) & ~nan
    assert not bad.any(), (f"{bad.sum()} of {g.size} differ, first at {bad.argmax()}: "
                           f"{g.reshape(-1)[bad.argmax()]:#06x} vs {e.reshape(-1)[bad.argmax()]:#06x}")


def hard_doubles(dtype: Any, n: int, seed: int) -> np.ndarray:
    """Doubles where rounding is hard: just off halfway points (where rounding to float first
    would round twice), exact halfway points, subnormals, the overflow edge, specials."""
    rng = np.random.default_rng(seed)
    bits = 10 if np.dtype(dtype) == np.float16 else 7
    lo, hi = (-24, 16) if np.dtype(dtype) == np.float16 else (-133, 127)
    exponent = rng.integers(lo, hi, n).astype(np.float64)
    mantissa = rng.integers(0, 2**bits, n) + 0.5  # a halfway point between two representable values
    nudge = rng.choice([-1.0, 0.0, 1.0], n) * 2.0 ** rng.integers(-45, -25, n)  # below float's precision
    values = np.ldexp(1.0 + (mantissa + nudge) / 2**bits, exponent.astype(int))
    values *= rng.choice([-1.0, 1.0], n)
    # (No -0.0, infinity or NaN: the resampling that carries these values computes b + 0·(b − b),
    # which turns -0.0 into 0.0 and an infinity into NaN; the sums below cover them.)
    special = [0.0, 65504.0, 65519.99, 65520.0, 3.3895e38, 3.4e38, 1e39,
               2.0**-24, 2.0**-25, 2.0**-25 * (1 + 2**-40), 2.0**-133, 2.0**-134 * (1 + 2**-30), 2.0**-150,
               2.0**-126 * (1 - 2**-30), 1e-300, 5e-324]
    values[: len(special)] = special
    return values


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=lambda d: np.dtype(d).name)
def test_doubles_are_rounded_once(path: str, dtype: Any) -> None:
    """double → float16/bfloat16 through a resampling that copies (weights 1 and 0): the single correct rounding."""
    native = _backend.native
    values = hard_doubles(dtype, 4000, seed=1)
    for n in LENGTHS + [values.size]:
        # One source row of n values resampled onto one output row (its n values in a vector loop).
        dst = np.empty((1, 1, n), dtype)
        native.resample(values[:n].reshape(1, 1, n), dst, np.zeros((1, 2), np.int64), np.array([[1.0, 0.0]]))
        same_bits(dst.reshape(-1), round_once(values[:n], dtype))


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_finite_value_widens_exactly(path: str, dtype: Any) -> None:
    """Every finite bit pattern → float64 through a resampling that copies: exact."""
    native = _backend.native
    every = np.arange(65536, dtype=np.uint16).view(dtype)
    every = every[np.isfinite(every.astype(np.float32))]
    for n in LENGTHS + [every.size]:
        out = np.empty((1, 1, n), np.float64)
        native.resample(every[:n].reshape(1, 1, n), out, np.zeros((1, 2), np.int64), np.array([[1.0, 0.0]]))
        assert np.array_equal(out.reshape(-1), every[:n].astype(np.float64))


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=lambda d: np.dtype(d).name)
def test_sums_are_rounded_once(path: str, dtype: Any) -> None:
    """x + bias of a Toeplitz add against the exact sum rounded once, at every row length."""
    native = _backend.native
    rng = np.random.default_rng(3)
    for k in LENGTHS:
        # Random bit patterns: every exponent, subnormals, infinities and NaNs included.
        x = rng.integers(0, 65536, (2, 3, k), dtype=np.uint16).view(dtype)
        lut = rng.integers(0, 65536, (2, 3 + k - 1), dtype=np.uint16).view(dtype)
        out = np.empty_like(x)
        native.toeplitz_add(x, out, lut)
        rows = np.stack([lut[:, 2 - i: 2 - i + k] for i in range(3)], axis=1)  # row i reads lut[q-1-i : q-1-i+k]
        with np.errstate(invalid="ignore", over="ignore"):
            exact = x.astype(np.float64) + rows.astype(np.float64)
        same_bits(out, round_once(exact, dtype))


@pytest.mark.parametrize("dtype", HALF_DTYPES + [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_round_once_binding(path: str, dtype: Any) -> None:
    """native.round_once (what the native executors round NumPy's float64 results with): the single
    correct rounding at every length, NaNs and infinities included; its checks."""
    native = _backend.native
    values = hard_doubles(np.float16 if np.dtype(dtype).itemsize > 2 else dtype, 3000, seed=9)
    values[-4:] = [np.nan, -np.inf, np.inf, -0.0]
    def same(got: np.ndarray, doubles: np.ndarray) -> None:
        if np.dtype(dtype).itemsize == 2:
            same_bits(got, round_once(doubles, dtype))
            return
        with np.errstate(over="ignore"):  # NumPy's float64 -> float32 cast is correctly rounded
            want = doubles.astype(dtype)
        np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{got.itemsize}"))

    for n in LENGTHS + [values.size]:
        out = np.empty(n, dtype)
        native.round_once(values[:n], out)
        same(out, values[:n])
    grid = np.empty((3, 4), dtype)
    native.round_once(values[-12:].reshape(3, 4), grid)
    same(grid, values[-12:].reshape(3, 4))
    with pytest.raises(TypeError, match="float64"):
        native.round_once(values[:4].astype(np.float32), np.empty(4, dtype))
    with pytest.raises(TypeError, match="float64"):
        native.round_once(values[:8:2], np.empty(4, dtype))
    with pytest.raises(ValueError, match="shape"):
        native.round_once(values[:4], np.empty(5, dtype))
    with pytest.raises(ValueError, match="C-contiguous"):
        native.round_once(values[:4], np.empty(8, dtype)[::2])
    with pytest.raises(TypeError, match="float32, float64, float16 or bfloat16"):
        native.round_once(values[:4], np.empty(4, np.int16))


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=lambda d: np.dtype(d).name)
def test_alibi_bias_is_rounded_once(path: str, dtype: Any) -> None:
    """ALiBi's bias slope·d, rounded once to the half format (add_alibi's rows, built in C++, and
    alibi_bias's, built with NumPy), with slopes where rounding to float first would round twice."""
    slopes = hard_doubles(dtype, 600, seed=5)
    bias = slopes[:, None] * np.array([-1.0, 0.0, 1.0])  # a query at position 1, keys at 0, 1, 2
    same_bits(posenc.alibi_bias(slopes.size, 1, 3, offset=1, slopes=slopes, dtype=dtype).reshape(-1, 3),
              round_once(bias, dtype))
    # Added to zero scores: the rounded bias itself, but +0 where that is -0.
    added = round_once(bias, dtype).astype(np.float64) + 0.0
    for scores in (np.zeros((slopes.size, 1, 3), dtype), np.zeros((2, slopes.size, 1, 3), dtype)[1]):
        same_bits(posenc.add_alibi(scores, offset=1, slopes=slopes).reshape(-1, 3), round_once(added, dtype))


@pytest.mark.skipif(not HAS_BFLOAT16_INSTRUCTIONS or BFLOAT16 is None,
                    reason="the CPU has no AVX512_BF16 conversions, or no bfloat16 dtype (ml_dtypes)")
def test_bfloat16_instructions_give_the_integer_roundings_bits() -> None:
    """AVX512_BF16's conversions and the integer rounding store the same bits, NaN payloads and
    signs included (same_bits above lets NaNs differ), in sums, tables and rotations."""
    native = _backend.native
    rng = np.random.default_rng(5)
    every = np.arange(65536, dtype=np.uint16).view(BFLOAT16).reshape(1, 256, 256)  # NaNs, subnormals, ±0, ±inf
    lut = rng.integers(0, 65536, (1, 511), dtype=np.uint16).view(BFLOAT16)
    x = rng.standard_normal((1, 64, 4, 64)).astype(BFLOAT16)
    x[0, 1, :, ::3] = np.float32(np.nan)
    calls = {
        "toeplitz_add": lambda: (native.toeplitz_add(every, out := np.empty_like(every), lut), out)[1],
        "sinusoidal": lambda: posenc.sinusoidal(300, 96, dtype=BFLOAT16),
        "apply_rope": lambda: posenc.apply_rope(x, positions=np.arange(64) * 1e4),
        "apply_rope interleaved": lambda: posenc.apply_rope(x, positions=np.arange(64) * 1e4, interleaved=True),
    }
    for name, call in calls.items():
        with np.errstate(all="ignore"):
            with on_path("avx512-bf16-instructions"):
                fast = call()
            with on_path("avx512-integer-bf16"):
                integer = call()
        differ = fast.view(np.uint16) != integer.view(np.uint16)
        assert not differ.any(), (f"{name}: {differ.sum()} values differ, first "
                                  f"{fast.view(np.uint16).reshape(-1)[differ.argmax()]:#06x} vs "
                                  f"{integer.view(np.uint16).reshape(-1)[differ.argmax()]:#06x}")


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=lambda d: np.dtype(d).name)
def test_in_place_and_strided_rows(path: str, dtype: Any) -> None:
    """The same sums in place and through strided views (element-by-element conversions)."""
    native = _backend.native
    rng = np.random.default_rng(4)
    base = (rng.standard_normal((2, 5, 2 * 37)) * 100).astype(dtype)
    lut = (rng.standard_normal((2, 5 + 37 - 1)) * 100).astype(dtype)
    rows = np.stack([lut[:, 4 - i: 4 - i + 37] for i in range(5)], axis=1)
    strided = base[:, :, ::2]
    expected = round_once(strided.astype(np.float64) + rows.astype(np.float64), dtype)
    native.toeplitz_add(strided, strided, lut)
    same_bits(np.ascontiguousarray(strided), expected)
    dense = np.ascontiguousarray(base[:, :, 1::2])
    expected = round_once(dense.astype(np.float64) + rows.astype(np.float64), dtype)
    native.toeplitz_add(dense, dense, lut)
    same_bits(dense, expected)


def _round_normal(values: np.ndarray, bits: int) -> np.ndarray:
    """Normal-range doubles rounded to `bits` significant bits, ties to even (vectorised)."""
    mantissa, exponent = np.frexp(values)
    return np.ldexp(np.round(mantissa * 2.0**bits) / 2.0**bits, exponent)


@functools.lru_cache(maxsize=None)
def _float32_rounding_cases(name: str) -> tuple[np.ndarray, ...]:
    """Rotation pairs (u, v, cos c, sin s) in `name` (float16/bfloat16) whose float32 rotation,
    simulated here, rounds to another value than the float64 one, found among millions of random
    pairs and angles (cos/sin scaled by 1.25 like an attention scaling, and just short of halfway
    between floats on the sides that make the float32 errors add up: the largest errors it can
    have); and pairs whose float32 results are far from any rounding boundary. Returns
    u, v, c, s, the indices of the first kind, the indices of the second."""
    rng = np.random.default_rng(12)
    bits = 11 if name == "float16" else 8
    n = 1 << (20 if bits == 11 else 22)
    u, v = (rng.standard_normal((2, n)) * 4).astype(name if bits == 11 else BFLOAT16).astype(np.float64)
    theta = rng.uniform(0.0, 2 * np.pi, n)
    c32 = (1.25 * np.cos(theta)).astype(np.float32).astype(np.float64)
    s32 = (1.25 * np.sin(theta)).astype(np.float32).astype(np.float64)
    # u·c − v·s in float32 errs by u·(c32 − c) − v·(s32 − s) plus its roundings.
    side = rng.choice([-1.0, 1.0], n)
    c = c32 - side * np.sign(u) * 0.499 * np.spacing(c32.astype(np.float32)).astype(np.float64)
    s = s32 + side * np.sign(v) * 0.499 * np.spacing(s32.astype(np.float32)).astype(np.float64)
    exact = (u * c - v * s, v * c + u * s)
    f32 = ((u * c32 - (v * s32).astype(np.float32)).astype(np.float32).astype(np.float64),
           (v * c32 + (u * s32).astype(np.float32)).astype(np.float32).astype(np.float64))
    normal = np.minimum(np.abs(exact[0]), np.abs(exact[1])) > 2.0**-12
    differ = normal & ((_round_normal(f32[0], bits) != _round_normal(exact[0], bits))
                       | (_round_normal(f32[1], bits) != _round_normal(exact[1], bits)))
    far = normal & ~differ
    for f in f32:
        far &= np.abs(np.frexp(f)[0] * 2.0**bits % 1.0 - 0.5) > 0.05
    return u, v, c, s, np.flatnonzero(differ), np.flatnonzero(far)


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("interleaved", [False, True], ids=["neox", "gptj"])
@pytest.mark.parametrize("half", [64, 24])
def test_rotation_where_float32_rounds_otherwise(path: str, dtype: Any, interleaved: bool, half: int) -> None:
    """float16/bfloat16 rows rotate in float32 first and keep that result only where it provably
    rounds as the float64 rotation does (rope.cpp, rounds_alike.hpp). One pair in every 8 here is
    one whose float32 rotation rounds otherwise (_float32_rounding_cases): each must come out as
    the float64 rotation rounded once, i.e. from the fallback. One per 8 (an AVX2 vector, half an
    AVX-512 one): a vector keeps its float32 result only if no lane fails the check, so such a pair
    next to another would hide it. On the paths with vector lanes it fails when the check is dropped
    or its error bound is 4 times too small."""
    rng = np.random.default_rng(13)
    u, v, c, s, picked, far = _float32_rounding_cases(np.dtype(dtype).name)
    assert picked.size >= 16, picked.size  # the search finds enough pairs to test
    rows = -(-picked.size * 8 // half)
    slots = rng.choice(far, rows * half)
    groups = np.arange(0, rows * half - 7, 8)[: picked.size]
    slots[groups + rng.integers(0, 8, groups.size)] = picked[: groups.size]
    cos, sin = c[slots].reshape(rows, half), s[slots].reshape(rows, half)
    pu, pv = u[slots].reshape(1, rows, 1, half), v[slots].reshape(1, rows, 1, half)
    first, second = (slice(0, None, 2), slice(1, None, 2)) if interleaved else (slice(0, half), slice(half, None))
    x64 = np.empty((1, rows, 1, 2 * half))
    x64[..., first], x64[..., second] = pu, pv
    expected = np.empty_like(x64)
    expected[..., first] = pu * cos[None, :, None] - pv * sin[None, :, None]
    expected[..., second] = pv * cos[None, :, None] + pu * sin[None, :, None]
    x = x64.astype(dtype)
    same_bits(posenc.apply_rope(x, cos=cos, sin=sin, interleaved=interleaved), round_once(expected, dtype))


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("interleaved", [True, False], ids=["interleaved", "split"])
@pytest.mark.parametrize("scale", [1.0, 1.1, 32.0])
@pytest.mark.parametrize("batches", [1, 4])
def test_sum_where_float32_rounds_otherwise(path: str, dtype: Any, interleaved: bool, scale: float,
                                            batches: int) -> None:
    """float16/bfloat16 add_sinusoidal sums in float32 first and keeps that result only where it
    provably rounds as the float64 sum does (sinusoidal.cpp, rounds_alike.hpp). The float32 sum
    errs mostly by the encoding's own rounding to float, so here x puts each sum just off a
    halfway point of the format, on the other side from that error, wherever the encoding value
    lies close enough to one: those sums must come out as the float64 sum rounded once, i.e. from
    the fallback. (Other elements are 0.) Fails when the check is dropped or its error bound is 8
    times too small. Four batches take the route of scales that are floats (FloatScaleCheck; the
    tests below break its bound's parts)."""
    bits = 11 if np.dtype(dtype) == np.float16 else 8
    seq, dim = 2048, 64
    pe = posenc.sinusoidal(np.arange(seq), dim, interleaved=interleaved, dtype=np.float64)
    with np.errstate(divide="ignore"):
        step = np.ldexp(1.0, np.frexp(pe)[1] - bits)  # the format's spacing at each value
    halfway = (np.floor(pe / step) + 0.5) * step
    x = np.zeros((batches, seq, dim))
    near = (np.abs(halfway - pe) < 2.0 ** (-6 - bits) * np.abs(pe)) & (np.abs(pe) >= 2.0**-14)  # normal values
    x[:, near] = ((halfway - pe)[near] / scale).astype(dtype).astype(np.float64)
    exact = x * scale + pe
    w, s32 = pe.astype(np.float32).astype(np.float64), float(np.float32(scale))
    f32 = (x * s32 + w).astype(np.float32).astype(np.float64)
    differ = _round_normal(f32, bits) != _round_normal(exact, bits)
    assert differ.sum() >= 16, differ.sum()  # enough sums that float32 rounds otherwise
    got = posenc.add_sinusoidal(x.astype(dtype), scale=scale, interleaved=interleaved)
    same_bits(got, round_once(exact, dtype) if bits == 11 else _round_normal(exact, bits).astype(dtype))


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("scale", [1.0, 2.0])
def test_sum_on_a_halfway_point(path: str, dtype: Any, scale: float) -> None:
    """float16/bfloat16 add_sinusoidal of four batches with a scale that is a float, which sums in
    float32 first with a bound of its own, e = (1 + 2^-8)·(2^-23·|F| + 2^-24·|w|) + 2^-140
    (sinusoidal.cpp, FloatScaleCheck), where the float32 sum F lands on a halfway point of the
    format while the exact one lies just past it: x·s in [2^(p-2), 2^(p-1)) (p the format's
    bits: spacing 1/2) plus an encoding value v within float32's rounding of ±0.25 or ±0.75
    (positions picked near asin of those, column 0's frequency being 1). F ± e must move off F;
    with the bound's |F| part 8 times too small they do not, and F's tie rounds the wrong way in
    one of x·s's two parities."""
    bits = 11 if np.dtype(dtype) == np.float16 else 8
    rng = np.random.default_rng(17)
    targets = np.repeat([0.25, 0.75, -0.25, -0.75], 64)
    picked = np.arcsin(targets) + rng.uniform(-(2.0**-27), 2.0**-26, targets.size)
    pe = posenc.sinusoidal(positions=picked, dim=32, dtype=np.float64)  # a vector of bfloat16 pairs on AVX-512
    on_grid = (pe[:, 0].astype(np.float32) == targets) & (pe[:, 0] != targets)
    assert on_grid.sum() >= 128, on_grid.sum()
    positions, v = picked[on_grid], pe[on_grid]
    whole = rng.integers(2 ** (bits - 2), 2 ** (bits - 1), positions.size) * np.sign(v[:, 0])
    x = np.zeros((4, positions.size, 32))
    x[:, :, 0] = (whole + 0.5 * np.sign(v[:, 0]) * (np.arange(4)[:, None] % 2)) / scale
    exact = x * scale + v
    f32 = (x * np.float32(scale) + v.astype(np.float32)).astype(np.float32).astype(np.float64)
    assert (round_once(f32, dtype).view(np.uint16) != round_once(exact, dtype).view(np.uint16)).sum() >= 32
    got = posenc.add_sinusoidal(x.astype(dtype), positions=positions, scale=scale)
    same_bits(got, round_once(exact, dtype))


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("scale", [1.0, -2.0, 4.0, float(np.float32(1.1))])
def test_sum_near_the_largest_values(path: str, dtype: Any, scale: float) -> None:
    """The same route (four batches, a scale that is a float) where x·s is near the format's
    largest value, past it (rounding to infinity) or past float32's (F infinite), and with
    infinities and NaNs in x: FloatScaleCheck has no range test and relies on F ± e ordering as
    their bits do up to infinity, and on a NaN F ∓ e where F is infinite."""
    rng = np.random.default_rng(23)
    top = np.float64(np.finfo(np.float16).max) if np.dtype(dtype) == np.float16 else 2.0**128 * (1 - 2.0**-8)
    x = top * rng.uniform(0.5, 1.5, (4, 64, 64)) * rng.choice([-1.0, 1.0], (4, 64, 64)) / abs(scale)
    x.reshape(-1)[rng.choice(x.size, 64, replace=False)] = rng.choice([np.inf, -np.inf, np.nan], 64)
    x = round_once(x, dtype).astype(np.float64)
    v = posenc.sinusoidal(np.arange(64), 64, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        exact = x * scale + v
    same_bits(posenc.add_sinusoidal(x.astype(dtype), scale=scale), round_once(exact, dtype))


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("scale", [float(np.float32(1.1)), float(np.float32(-0.3))])
def test_sum_that_cancels(path: str, dtype: Any, scale: float) -> None:
    """The same route where x·s cancels the encoding value v to within the format's spacing, in one
    lane of each vector of 16 (the others 0; a vector falls back whole): F = x·s + w then errs
    mostly by w's rounding, which for scales of many bits (x·s inexact in float32, so F no
    halfway point) only the bound's |w| part covers. Fails when that part is 8 times too small."""
    bits = 11 if np.dtype(dtype) == np.float16 else 8
    def rounded(values: np.ndarray) -> np.ndarray:  # all normal here, or 0
        return round_once(values, dtype) if bits == 11 else _round_normal(values, bits).astype(dtype)
    rng = np.random.default_rng(19)
    seq, dim = 512, 64
    v = posenc.sinusoidal(np.arange(seq), dim, dtype=np.float64)
    near = -rounded(v).astype(np.float64)
    spacing = np.ldexp(1.0, np.frexp(near)[1] - bits)
    x = (near[None] + spacing[None] * np.arange(-2, 2)[:, None, None]) / scale
    lane = np.arange(dim) % 16 == rng.integers(0, 16, (4, seq, 1))
    x = rounded(np.where(lane, x, 0.0)).astype(np.float64)
    exact = x * scale + v
    f32 = (x * scale + v.astype(np.float32)).astype(np.float32).astype(np.float64)  # x·s exact in float64
    assert (rounded(f32).view(np.uint16) != rounded(exact).view(np.uint16)).sum() >= 16
    same_bits(posenc.add_sinusoidal(x.astype(dtype), scale=scale), rounded(exact))


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("interleaved", [False, True], ids=["neox", "gptj"])
def test_rotations_are_rounded_once(path: str, dtype: Any, interleaved: bool) -> None:
    """apply_rope on float16/bfloat16 (its whole-vector rotation in registers and the element-wise
    rest) against the float64 rotation rounded once. Caller tables of few-bit values (1.5, 0.75, …
    and sines of 2^-30) make both products exact, so the float64 result is the same with or without
    fused multiply-adds; odd mantissas times 1.5 land on halfway points, the small products nudge
    them off, and random bit patterns bring subnormal, huge and non-finite results."""
    rng = np.random.default_rng(5)
    bits = 10 if np.dtype(dtype) == np.float16 else 7
    lo, hi = (-24, 15) if np.dtype(dtype) == np.float16 else (-133, 126)
    for half in [1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 24, 31, 32, 33, 48, 64]:
        seq, heads = 5, 3
        cos = rng.choice([1.5, 0.75, -1.25, 1.0, 0.0], (seq, half))
        sin = rng.choice([2.0**-30, -(2.0**-40), 3 * 2.0**-20, -1.0, 0.5], (seq, half))
        shape = (1, seq, heads, 2 * half)
        odd = np.ldexp(1.0 + (2 * rng.integers(0, 2 ** (bits - 1), shape) + 1) / 2**bits, rng.integers(lo, hi, shape))
        x = (odd * rng.choice([-1.0, 1.0], shape)).astype(dtype)
        random_bits = rng.random(shape) < 0.3
        x.view(np.uint16)[random_bits] = rng.integers(0, 65536, int(random_bits.sum()), dtype=np.uint16)
        first, second = (slice(0, None, 2), slice(1, None, 2)) if interleaved else (slice(0, half), slice(half, None))
        c, s = cos[None, :, None, :], sin[None, :, None, :]
        with np.errstate(invalid="ignore", over="ignore"):
            x64 = x.astype(np.float64)
            u, v = x64[..., first], x64[..., second]
            exact = np.empty_like(x64)
            exact[..., first], exact[..., second] = u * c - v * s, v * c + u * s
        got = posenc.apply_rope(x, cos=cos, sin=sin, interleaved=interleaved)
        same_bits(got, round_once(exact, dtype))
        posenc.apply_rope(x, cos=cos, sin=sin, interleaved=interleaved, out=x)  # in place
        same_bits(x, got)
