// posenc/convert.hpp — the storage types' arithmetic, and rounding once.
//
// A kernel reads a stored value T as Wide<T> — float for float32, float16 and
// bfloat16 (float holds every value of the narrow formats exactly), double for
// float64 — computes, and rounds the result to T exactly once:
//
//  - Sums of two T values are formed in Wide<T> and narrowed (round to nearest,
//    ties to even). For float16 and bfloat16 the float sum is itself rounded,
//    but float carries 24 ≥ 2p + 2 bits of a p-bit format (p = 11, 8), and then
//    rounding the rounded sum again gives the correctly rounded sum (Figueroa,
//    "When is double rounding innocuous?", SIGNUM 1995). NumPy adds float16 the
//    same way.
//  - Results evaluated in double (sines, rotations, scale·x + PE, interpolation)
//    are rounded once by `store<T>(double)`. For the narrow formats that goes
//    through float rounded *to odd* (truncate, then set the last bit if anything
//    was dropped): a value rounded to odd with at least p + 2 bits, then to
//    nearest with p bits, is the value rounded to nearest directly (Boldo &
//    Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms
//    using rounding to odd", IEEE TC 2008). Rounding double to float to nearest
//    and then to half would land one ulp off at halfway cases.
//
// Everything here is branch-free 32/64-bit integer and float code that the
// compiler vectorises on every path (selects become blends once
// -fno-trapping-math lets GCC if-convert them); chunks.hpp converts whole
// vectors with F16C where the path has it, bit for bit the same.
#pragma once

#include <cmath>
#include <cstdint>

#include "posenc/bits.hpp"
#include "posenc/dtype.hpp"
#include "posenc/target.hpp"

POSENC_BEGIN_TARGET

template <class T> struct WideOf { using type = float; };
template <> struct WideOf<double> { using type = double; };
// The arithmetic type of a stored T: holds every T exactly.
template <class T> using Wide = typename WideOf<T>::type;

// Where a kernel keeps a result evaluated in double before it becomes a T:
// float for float32 (the conversion is its one rounding), double otherwise
// (float64 needs no rounding; float16/bfloat16 are rounded by store/narrowing).
template <class T> struct ResultOf { using type = double; };
template <> struct ResultOf<float> { using type = float; };
template <class T> using Result = typename ResultOf<T>::type;

// ---------------------------------------------------------------- exact widening

inline float widen(float v) { return v; }
inline double widen(double v) { return v; }

// float16 → float, as F16C's vcvtph2ps does it (a NaN comes out quiet).
inline float widen(half_t h) {
    const std::uint32_t exp = (h.bits >> 10) & 0x1fu, man = h.bits & 0x3ffu;
    const std::uint32_t sign = static_cast<std::uint32_t>(h.bits & 0x8000u) << 16;
    // Subnormal: man·2^-24, computed from an integer so that no float
    // subnormal is involved (a denormals-are-zero mode would lose it).
    const float subnormal = static_cast<float>(static_cast<std::int32_t>(man)) * 0x1p-24f;
    const std::uint32_t special = 0x7f800000u | (man << 13) | (man != 0 ? 0x400000u : 0u);  // inf, NaN
    const std::uint32_t normal = exp == 31 ? special : ((exp + 112u) << 23) | (man << 13);  // rebias 15 → 127
    return float_of((exp == 0 ? bits_of(subnormal) : normal) | sign);
}

// bfloat16 is the top half of a float.
inline float widen(bfloat16_t b) { return float_of(static_cast<std::uint32_t>(b.bits) << 16); }

// ---------------------------------------------------------------- float → narrow, to nearest even

template <class T> T narrow(Wide<T> w);
template <> inline float narrow<float>(float w) { return w; }
template <> inline double narrow<double>(double w) { return w; }

// float → float16, as F16C's vcvtps2ph with round-to-nearest-even does it
// (checked on every float): NaNs keep their top payload bits and come out quiet.
template <>
inline half_t narrow<half_t>(float w) {
    const std::uint32_t u = bits_of(w);
    const std::uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    // Normal: rebias 127 → 15 and round the 13 dropped bits to even; a carry
    // into the exponent is right, and anything from 65520 on becomes infinity.
    const std::uint32_t v = a - (112u << 23);
    std::uint32_t normal = (v + 0xfffu + ((v >> 13) & 1u)) >> 13;
    normal = normal > 0x7c00u ? 0x7c00u : normal;
    // Below 2^-14 (float16 subnormals): adding 0.5, whose float spacing is the
    // float16 subnormal step 2^-24, rounds to a multiple of it, to even; the
    // bit difference is the step count (1024 steps: the smallest normal, right).
    const std::uint32_t subnormal = bits_of(float_of(a) + 0.5f) - bits_of(0.5f);
    const std::uint32_t nan = 0x7e00u | ((a >> 13) & 0x3ffu);
    const std::uint32_t r = a > 0x7f800000u ? nan : (a < 0x38800000u ? subnormal : normal);
    return half_t{static_cast<std::uint16_t>(r | sign)};
}

// float → bfloat16: round the low 16 bits to even (a carry into the exponent,
// up to infinity, is right); a NaN keeps its top bits and comes out quiet.
template <>
inline bfloat16_t narrow<bfloat16_t>(float w) {
    const std::uint32_t u = bits_of(w);
    const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
    const std::uint32_t r = nan ? (u >> 16) | 0x40u : (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    return bfloat16_t{static_cast<std::uint16_t>(r)};
}

// ---------------------------------------------------------------- double → narrow, rounded once

// d rounded to float to odd, for |d| ≥ 2^-126 (float normals), zeros,
// infinities and NaNs: truncating the 29 mantissa bits float lacks and
// or-ing whether any was set into the last kept bit leaves a double of 24
// significant bits, which converts to float exactly. Below 2^-126 float has
// fewer bits and the conversion rounds again: see odd_float_exact.
inline float odd_float(double d) {
    constexpr std::uint64_t kDropped = (std::uint64_t(1) << 29) - 1;
    const std::uint64_t u = bits_of(d);
    // (u & kDropped) + kDropped carries into bit 29 exactly when a dropped bit is set.
    return static_cast<float>(double_of((u | ((u & kDropped) + kDropped)) & ~kDropped));
}

// Whether odd_float(d) may be inexact: 0 < |d| < 2^-126.
inline bool below_float_normals(double d) {
    const std::uint64_t a = bits_of(d) & ~(std::uint64_t(1) << 63);
    return a - 1 < (std::uint64_t(1023 - 126) << 52) - 1;
}

// d rounded to float to odd, for every d: the float rounded to nearest, moved
// one step toward zero if that rounded away from zero, with its last bit set
// if it is inexact.
inline float odd_float_exact(double d) {
    const float f = static_cast<float>(d);
    const double back = f;
    std::uint32_t u = bits_of(f);
    u -= std::fabs(back) > std::fabs(d) ? 1u : 0u;
    u |= back != d ? 1u : 0u;
    return float_of(u);
}

// The odd float of d from which narrowing to T is the single correct
// rounding of d. float16 never needs the exact form: below 2^-126 every
// value rounds to a float16 zero either way; bfloat16 has subnormals there.
template <class T> inline float odd_float_for(double d) { return odd_float_exact(d); }
template <> inline float odd_float_for<half_t>(double d) { return odd_float(d); }

inline double load(float v) { return v; }
inline double load(double v) { return v; }
inline double load(half_t v) { return widen(v); }
inline double load(bfloat16_t v) { return widen(v); }

// d rounded once to T (to nearest, ties to even).
template <class T> inline T store(double d) { return narrow<T>(odd_float_for<T>(d)); }
template <> inline float store<float>(double d) { return static_cast<float>(d); }
template <> inline double store<double>(double d) { return d; }

// x + y rounded once to T (see the header comment): the one sum every kernel uses.
template <class T> inline T rounded_sum(T x, T y) { return narrow<T>(widen(x) + widen(y)); }

POSENC_END_TARGET
