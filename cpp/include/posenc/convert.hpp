// posenc/convert.hpp — load any stored float as double, store a double rounded once.
//
// Kernels are templates over the storage type T; `load(T)` is exact and
// `store<T>(double)` rounds to nearest, ties to even, exactly once. For
// float16 and bfloat16 that matters: going double → float → half rounds twice
// and can land one ulp off. Both narrow formats use one routine on the bit
// pattern of the double, written without branches so loops vectorise.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "posenc/dtype.hpp"
#include "posenc/target.hpp"

POSENC_BEGIN_TARGET

constexpr double pow2(int e) {
    double r = 1.0;
    for (; e > 0; --e) r *= 2.0;
    for (; e < 0; ++e) r *= 0.5;
    return r;
}

// Round |d| (sign handled by the caller) to a binary format with kExp
// exponent bits and kMan stored mantissa bits, returning its bit pattern.
template <int kExp, int kMan>
inline std::uint16_t round_magnitude(double a) {
    constexpr int kBias = (1 << (kExp - 1)) - 1;
    constexpr int kDrop = 52 - kMan;
    constexpr std::uint64_t kInf = ((std::uint64_t(1) << kExp) - 1) << kMan;
    constexpr double kMinNormal = pow2(1 - kBias);
    constexpr double kSubnormalScale = pow2(kBias - 1 + kMan);  // 1 / subnormal spacing
    constexpr double kRound = 0x1.8p52;

    std::uint64_t u;
    std::memcpy(&u, &a, sizeof u);
    // Normal: move the exponent to the narrow bias and round the dropped bits
    // to nearest even; a carry into the exponent is the correct result, and
    // anything at or past the largest finite value becomes infinity.
    const std::uint64_t v = u - (std::uint64_t(1023 - kBias) << 52);
    std::uint64_t normal = (v + ((std::uint64_t(1) << (kDrop - 1)) - 1) + ((v >> kDrop) & 1)) >> kDrop;
    normal = normal > kInf ? kInf : normal;
    // Subnormal: the integer count of subnormal steps, rounded to even by the
    // 1.5·2^52 trick; a count of 2^kMan is the smallest normal, also correct.
    const double small = a < kMinNormal ? a : 0.0;  // keeps the cast below in range
    const double steps = (small * kSubnormalScale + kRound) - kRound;
    const std::uint64_t subnormal = static_cast<std::uint64_t>(steps);
    const std::uint64_t nan = kInf | (std::uint64_t(1) << (kMan - 1));
    const std::uint64_t r = (a != a) ? nan : (a < kMinNormal ? subnormal : normal);
    return static_cast<std::uint16_t>(r);
}

template <int kExp, int kMan>
inline std::uint16_t round_to_bits(double d) {
    std::uint64_t u;
    std::memcpy(&u, &d, sizeof u);
    const std::uint16_t sign = static_cast<std::uint16_t>((u >> 63) << 15);
    return static_cast<std::uint16_t>(sign | round_magnitude<kExp, kMan>(std::fabs(d)));
}

// Exact value of a narrow bit pattern.
template <int kExp, int kMan>
inline double widen_bits(std::uint16_t h) {
    constexpr int kBias = (1 << (kExp - 1)) - 1;
    constexpr std::uint64_t kExpMask = (std::uint64_t(1) << kExp) - 1;
    const std::uint64_t exp = (h >> kMan) & kExpMask;
    const std::uint64_t man = h & ((std::uint64_t(1) << kMan) - 1);
    const std::uint64_t sign = std::uint64_t(h >> (kExp + kMan)) << 63;
    // Normal, infinity and NaN: rebias the exponent (all-ones maps to 0x7ff).
    const std::uint64_t dexp = exp == kExpMask ? 0x7ff : exp + (1023 - kBias);
    const std::uint64_t normal_bits = sign | (dexp << 52) | (man << (52 - kMan));
    double normal;
    std::memcpy(&normal, &normal_bits, sizeof normal);
    const double subnormal = static_cast<double>(static_cast<std::int64_t>(man)) * pow2(1 - kBias - kMan);
    return exp == 0 ? (sign ? -subnormal : subnormal) : normal;
}

inline double load(float v) { return v; }
inline double load(double v) { return v; }
inline double load(half_t v) { return widen_bits<5, 10>(v.bits); }
inline double load(bfloat16_t v) { return widen_bits<8, 7>(v.bits); }

template <class T> inline T store(double d);
template <> inline float store<float>(double d) { return static_cast<float>(d); }
template <> inline double store<double>(double d) { return d; }
template <> inline half_t store<half_t>(double d) { return half_t{round_to_bits<5, 10>(d)}; }
template <> inline bfloat16_t store<bfloat16_t>(double d) { return bfloat16_t{round_to_bits<8, 7>(d)}; }

POSENC_END_TARGET
