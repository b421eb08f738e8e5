// posenc/lanes.hpp — float16/bfloat16 ↔ float ↔ double, and double → odd float, a whole vector at a time.
//
// The element-wise conversions of convert.hpp, for one vector of kLanes
// values: 16 on the AVX-512 path when the kernel source works in 512-bit
// vectors (POSENC_VECTOR_BITS), 8 on the AVX2 path (whose dispatch requires
// F16C) and in 256-bit AVX-512 sources, none on the baseline path (kLanes = 0:
// callers fall back to the element-wise code, which GCC vectorises there). Each function computes the
// same bits as its element-wise twin: F16C's conversions are those convert.hpp
// imitates (checked on every float16 value and 4e8 floats), and the bfloat16
// ones are the same integer operations, lane by lane. Rounding doubles once
// (odd_lanes, then narrow_lanes) takes an odd float of fewer bits than
// convert.hpp's (kOddBits below): the same final bits, with no exception for
// bfloat16's subnormals. Doubles holds kLanes doubles for kernels that
// compute a narrow format's results in float64 (the rotation of rope.cpp).
// The two widths are spelled out in their own intrinsics: written once with
// GCC's vector extensions instead, the fused rotation of float16 ran 4x and
// bfloat16 kernels 1.5-3x slower (GCC no longer kept the blocks in registers).
#pragma once

#include <cstdint>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#ifndef POSENC_VECTOR_BITS
#error "a kernel source states its vector width (POSENC_VECTOR_BITS, see posenc/target.hpp) before its includes"
#endif

#include "posenc/convert.hpp"
#include "posenc/dispatch.hpp"
#include "posenc/dtype.hpp"
#include "posenc/target.hpp"

POSENC_BEGIN_TARGET

// Every helper must inline into the kernel's vector loop: an out-of-line
// call per vector (GCC declined the bfloat16 narrowing with its NaN branch)
// costs more than the conversion.
#define POSENC_LANES_INLINE inline __attribute__((always_inline))

// Significant bits of the floats that odd_lanes rounds doubles to (to odd:
// truncate, then set the last kept bit if anything was dropped). A value
// rounded to odd with q ≥ p + 2 bits, then to nearest with p bits, is the
// value rounded to nearest directly (Boldo & Melquiond, see convert.hpp), so
// any q from 10 (bfloat16, p = 8) up works for both formats when the odd
// value converts to float exactly. With q = 16 it does for every |d| ≥ 2^-134:
// the float spacing there (2^-149 at the smallest) is at most 2^-15·|d|.
// Below 2^-134 both formats round to zero and so does the float (or to a
// float ≤ 2^-134, which still narrows to zero: a tie, to even). So, unlike
// convert.hpp's odd_float (q = 24, inexact where float is subnormal), no
// value needs an element-wise fallback, bfloat16 included; NaN payload bits
// the narrow formats keep (the top 7 or 10) and infinities pass unchanged.
constexpr int kOddBits = 16;

#if defined(__AVX512BF16__)
// AVX512_BF16's conversions (vcvtneps2bf16, vcvtne2ps2bf16) round floats to
// bfloat16 to nearest even and quiet NaNs as convert.hpp does, one
// instruction for what the integer rounding below does in seven, but flush
// subnormal floats to zero: a vector with one keeps the integer rounding. The
// AVX-512 copy is built with them for every AVX-512 CPU, so they run only
// where this one has them, and by default only on the CPUs where they were
// measured faster (bfloat16_instructions, cpu.cpp). Against the integer
// rounding, bfloat16, Intel Xeon, medians of 25 calls, builds alternated in
// separate processes, three pairs each, 1 / 2 threads: the table [8192, 1024]
// 0.87-0.88 / 0.80-0.92x the time, embedding_add [4, 2048, 1024] 0.78-0.82 /
// 0.90-0.93x, add_alibi [1, 16, 1024, 1024] 0.89-0.91 / 0.85-1.01x, GPT-J
// rotations 0.87-0.93 / 1.00-1.11x; NeoX rotations and add_sinusoidal within
// the noise (0.92-1.07x). On an AMD EPYC Zen 4 (medians of 25 calls, the two
// switched every 25 calls in one process, three rounds, 1 / 2 threads): the
// table 0.81-0.87 / 0.77-0.86x, embedding_add 0.70-0.73 / 0.89-0.96x,
// add_alibi 0.65-0.87 / 0.87-0.90x, NeoX rotations 0.90-0.92 / 0.91-1.00x,
// GPT-J 0.95-1.00 / 0.95-0.97x, add_sinusoidal 0.84-1.01 / 0.94-1.06x.
template <class V>
POSENC_LANES_INLINE bool bfloat16_converts(V a, V b) {
    if constexpr (sizeof(V) == 64)
        return bfloat16_instructions() && (_mm512_fpclass_ps_mask(a, 0x20) | _mm512_fpclass_ps_mask(b, 0x20)) == 0;
    else
        return bfloat16_instructions() && (_mm256_fpclass_ps_mask(a, 0x20) | _mm256_fpclass_ps_mask(b, 0x20)) == 0;
}
#endif

#if defined(__AVX512F__)
// Sixteen floats (a 512-bit register): the vectors of 512-bit sources, and on
// the AVX-512 path also of 256-bit sources' loops that hold doubles anyway
// (see Doubles below), where converting 16 values costs what 8 do.
POSENC_LANES_INLINE __m512 widen16(const half_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
POSENC_LANES_INLINE void narrow_lanes(half_t* p, __m512 v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
POSENC_LANES_INLINE __m512 widen16(const bfloat16_t* p) {
    const __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(h, 16));
}
// v rounded to bfloat16 (to nearest even, NaNs quieted as convert.hpp does)
// in the high half of each lane; the low halves are not cleared.
POSENC_LANES_INLINE __m512i bfloat16_high_halves(__m512 v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff)));
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                  _mm512_set1_epi32(0x7f800000));
    return _mm512_mask_mov_epi32(rounded, nan, _mm512_or_si512(u, _mm512_set1_epi32(0x400000)));
}
POSENC_LANES_INLINE void narrow_lanes(bfloat16_t* p, __m512 v) {
#if defined(__AVX512BF16__)
    if (bfloat16_converts(v, v)) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v)));
        return;
    }
#endif
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(_mm512_srli_epi32(bfloat16_high_halves(v), 16)));
}
// p[2k] = a[k] and p[2k + 1] = b[k], each rounded to nearest even, k < 16:
// both narrowed, then each pair joined in a 32-bit lane (a's value in the
// low half), one 64-byte store.
POSENC_LANES_INLINE void narrow_pairs(half_t* p, __m512 a, __m512 b) {
    constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    const __m512i lo = _mm512_cvtepu16_epi32(_mm512_cvtps_ph(a, kNearest));
    const __m512i hi = _mm512_cvtepu16_epi32(_mm512_cvtps_ph(b, kNearest));
    _mm512_storeu_si512(p, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
}
POSENC_LANES_INLINE void narrow_pairs(bfloat16_t* p, __m512 a, __m512 b) {
#if defined(__AVX512BF16__)
    if (bfloat16_converts(a, b)) {
        // a's sixteen values, then b's, interleaved.
        const __m512i halves = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(b, a));
        const __m512i pairs = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8,
                                               23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
        _mm512_storeu_si512(p, _mm512_permutexvar_epi16(pairs, halves));
        return;
    }
#endif
    const __m512i lo = _mm512_srli_epi32(bfloat16_high_halves(a), 16);
    // lo | (b's high halves): the low halves of b's lanes are cleared.
    const __m512i pairs = _mm512_ternarylogic_epi32(lo, bfloat16_high_halves(b), _mm512_set1_epi32(~0xffff), 0xf8);
    _mm512_storeu_si512(p, pairs);
}
// bfloat16 pairs in 32-bit lanes, the first value in the low half: each
// half is a float by itself, the first shifted up, the second with its low
// half cleared.
POSENC_LANES_INLINE __m512 firsts(__m512i v) { return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)); }
POSENC_LANES_INLINE __m512 seconds(__m512i v) {
    return _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(~0xffff)));
}
// narrow_pairs's inverse for bfloat16: the 32 values at p as they lie,
// firsts[k] = p[2k] and seconds[k] = p[2k + 1], with no widening shuffle.
POSENC_LANES_INLINE void widen_pairs(const bfloat16_t* p, __m512& first, __m512& second) {
    const __m512i v = _mm512_loadu_si512(p);
    first = firsts(v);
    second = seconds(v);
}
#endif

#if defined(__AVX512F__) && POSENC_VECTOR_BITS >= 512

#define POSENC_HAVE_LANES 1
constexpr std::int64_t kLanes = 16;
using Floats = __m512;

POSENC_LANES_INLINE Floats load_floats(const float* p) { return _mm512_loadu_ps(p); }
POSENC_LANES_INLINE void store_floats(float* p, Floats v) { _mm512_storeu_ps(p, v); }
template <class T> POSENC_LANES_INLINE Floats widen_lanes(const T* p) { return widen16(p); }

#define POSENC_HAVE_NARROW_PAIRS 1

#elif defined(__AVX2__)

#define POSENC_HAVE_LANES 1
constexpr std::int64_t kLanes = 8;
using Floats = __m256;

POSENC_LANES_INLINE Floats load_floats(const float* p) { return _mm256_loadu_ps(p); }
POSENC_LANES_INLINE void store_floats(float* p, Floats v) { _mm256_storeu_ps(p, v); }

POSENC_LANES_INLINE Floats widen_lanes(const half_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
POSENC_LANES_INLINE void narrow_lanes(half_t* p, Floats v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
POSENC_LANES_INLINE Floats widen_lanes(const bfloat16_t* p) {
    const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
}
// Whether a lane of a or of b is a NaN.
POSENC_LANES_INLINE bool any_nan(Floats a, Floats b) { return _mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_UNORD_Q)); }
// v rounded to bfloat16 (to nearest even) in the high half of each lane, for
// every v but NaNs (callers send those element-wise: they are rare, and a
// blend for them would cost every vector).
POSENC_LANES_INLINE __m256i bfloat16_high_halves(Floats v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    return _mm256_add_epi32(u, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff)));
}
POSENC_LANES_INLINE void narrow_lanes(bfloat16_t* p, Floats v) {
#if defined(__AVX512BF16__)
    if (bfloat16_converts(v, v)) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(p), reinterpret_cast<__m128i>(_mm256_cvtneps_pbh(v)));
        return;
    }
#endif
    if (any_nan(v, v)) {
        alignas(32) float f[8];
        _mm256_store_ps(f, v);
        for (int k = 0; k < 8; ++k) p[k] = narrow<bfloat16_t>(f[k]);
        return;
    }
    const __m256i r = _mm256_srli_epi32(bfloat16_high_halves(v), 16);
    // Eight 32-bit values below 2^16, packed to 16 bits in order.
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                     _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)));
}

// p[2k] = a[k] and p[2k + 1] = b[k], each rounded to nearest even, k < 8:
// two vectors narrowed and interleaved in their 16-bit form (one unpack per
// eight values for float16, none for bfloat16, whose pairs are the 32-bit
// lanes), where interleaving doubles or floats first costs a shuffle per four.
POSENC_LANES_INLINE void narrow_pairs(half_t* p, Floats a, Floats b) {
    const __m128i ha = _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m128i hb = _mm256_cvtps_ph(b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm_unpacklo_epi16(ha, hb));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 8), _mm_unpackhi_epi16(ha, hb));
}
POSENC_LANES_INLINE void narrow_pairs(bfloat16_t* p, Floats a, Floats b) {
    // NaNs as narrow_lanes rounds them. (The one caller, the sinusoidal table,
    // passes sines and cosines of finite angles: no test reaches this.)
    if (any_nan(a, b)) {
        alignas(32) float fa[8], fb[8];
        _mm256_store_ps(fa, a);
        _mm256_store_ps(fb, b);
        for (int k = 0; k < 8; ++k) p[2 * k] = narrow<bfloat16_t>(fa[k]), p[2 * k + 1] = narrow<bfloat16_t>(fb[k]);
        return;
    }
    const __m256i lo = _mm256_srli_epi32(bfloat16_high_halves(a), 16);
    const __m256i hi = _mm256_and_si256(bfloat16_high_halves(b), _mm256_set1_epi32(static_cast<int>(0xffff0000u)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm256_or_si256(lo, hi));
}
#define POSENC_HAVE_NARROW_PAIRS 1
POSENC_LANES_INLINE __m256 firsts(__m256i v) { return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)); }
POSENC_LANES_INLINE __m256 seconds(__m256i v) {
    return _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(~0xffff)));
}
// narrow_pairs's inverse for bfloat16: the sixteen values at p as they lie,
// firsts[k] = p[2k] and seconds[k] = p[2k + 1], with no widening shuffle.
POSENC_LANES_INLINE void widen_pairs(const bfloat16_t* p, Floats& first, Floats& second) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    first = firsts(v);
    second = seconds(v);
}

#else

#define POSENC_HAVE_LANES 0
constexpr std::int64_t kLanes = 0;  // the baseline path converts element by element

#endif

#if POSENC_HAVE_LANES

// kLanes doubles, for results computed in float64 and rounded once to a
// narrow format (rope.cpp rotates float16/bfloat16 pairs in them): registers
// of 8 doubles where AVX-512 has them, also in 256-bit sources (one register
// per 8-float vector, as many operations as two of 4 on any CPU), else of 4.
#if defined(__AVX512F__)
using DoubleReg = __m512d;
POSENC_LANES_INLINE DoubleReg load_reg(const double* p) { return _mm512_loadu_pd(p); }
POSENC_LANES_INLINE DoubleReg splat_reg(double v) { return _mm512_set1_pd(v); }
POSENC_LANES_INLINE DoubleReg mul(DoubleReg a, DoubleReg b) { return _mm512_mul_pd(a, b); }
POSENC_LANES_INLINE DoubleReg fused_add(DoubleReg a, DoubleReg b, DoubleReg c) { return _mm512_fmadd_pd(a, b, c); }
POSENC_LANES_INLINE DoubleReg fused_sub(DoubleReg a, DoubleReg b, DoubleReg c) { return _mm512_fmsub_pd(a, b, c); }
POSENC_LANES_INLINE DoubleReg swap_pairs(DoubleReg a) { return _mm512_permute_pd(a, 0x55); }
// Eight doubles as floats rounded to odd at kOddBits bits.
POSENC_LANES_INLINE __m256 odd_reg(DoubleReg d) {
    const __m512i dropped = _mm512_set1_epi64((std::int64_t(1) << (53 - kOddBits)) - 1);
    const __m512i u = _mm512_castpd_si512(d);
    const __m512i sticky = _mm512_add_epi64(_mm512_and_si512(u, dropped), dropped);
    return _mm512_cvtpd_ps(_mm512_castsi512_pd(_mm512_andnot_si512(dropped, _mm512_or_si512(u, sticky))));
}
#else
using DoubleReg = __m256d;
POSENC_LANES_INLINE DoubleReg load_reg(const double* p) { return _mm256_loadu_pd(p); }
POSENC_LANES_INLINE DoubleReg splat_reg(double v) { return _mm256_set1_pd(v); }
POSENC_LANES_INLINE DoubleReg mul(DoubleReg a, DoubleReg b) { return _mm256_mul_pd(a, b); }
POSENC_LANES_INLINE DoubleReg fused_add(DoubleReg a, DoubleReg b, DoubleReg c) { return _mm256_fmadd_pd(a, b, c); }
POSENC_LANES_INLINE DoubleReg fused_sub(DoubleReg a, DoubleReg b, DoubleReg c) { return _mm256_fmsub_pd(a, b, c); }
POSENC_LANES_INLINE DoubleReg swap_pairs(DoubleReg a) { return _mm256_permute_pd(a, 0x5); }
// Four doubles as floats rounded to odd at kOddBits bits.
POSENC_LANES_INLINE __m128 odd_reg(DoubleReg d) {
    const __m256i dropped = _mm256_set1_epi64x((std::int64_t(1) << (53 - kOddBits)) - 1);
    const __m256i u = _mm256_castpd_si256(d);
    const __m256i sticky = _mm256_add_epi64(_mm256_and_si256(u, dropped), dropped);
    return _mm256_cvtpd_ps(_mm256_castsi256_pd(_mm256_andnot_si256(dropped, _mm256_or_si256(u, sticky))));
}
#endif

// Doubles per register, and that many floats widened from memory and
// rounded back into it: each load and store the width it needs, where a
// full vector of floats would be split and joined by a shuffle per register.
// (Doubles load and store as they are, for loops written for both.)
constexpr std::int64_t kDoubleLanes = static_cast<std::int64_t>(sizeof(DoubleReg) / sizeof(double));
#if defined(__AVX512F__)
POSENC_LANES_INLINE DoubleReg load_widened(const float* p) { return _mm512_cvtps_pd(_mm256_loadu_ps(p)); }
POSENC_LANES_INLINE void store_narrowed(float* p, DoubleReg d) { _mm256_storeu_ps(p, _mm512_cvtpd_ps(d)); }
POSENC_LANES_INLINE void store_narrowed(double* p, DoubleReg d) { _mm512_storeu_pd(p, d); }
#else
POSENC_LANES_INLINE DoubleReg load_widened(const float* p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }
POSENC_LANES_INLINE void store_narrowed(float* p, DoubleReg d) { _mm_storeu_ps(p, _mm256_cvtpd_ps(d)); }
POSENC_LANES_INLINE void store_narrowed(double* p, DoubleReg d) { _mm256_storeu_pd(p, d); }
#endif
POSENC_LANES_INLINE DoubleReg load_widened(const double* p) { return load_reg(p); }

// p[2k] = float(a[k]) and p[2k + 1] = float(b[k]), k < kDoubleLanes: both
// rounded, then interleaved by one two-source shuffle (AVX-512) or two
// unpacks (AVX2). Interleaving GCC's way, a full vector of floats at a time,
// took four conversions, two inserts and two shuffles per 32 floats, most on
// the one shuffle port every conversion also uses.
#if defined(__AVX512F__)
POSENC_LANES_INLINE void store_pairs(float* p, DoubleReg a, DoubleReg b) {
    const __m512i pairs = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512 fa = _mm512_castps256_ps512(_mm512_cvtpd_ps(a)), fb = _mm512_castps256_ps512(_mm512_cvtpd_ps(b));
    _mm512_storeu_ps(p, _mm512_permutex2var_ps(fa, pairs, fb));
}
#else
POSENC_LANES_INLINE void store_pairs(float* p, DoubleReg a, DoubleReg b) {
    const __m128 fa = _mm256_cvtpd_ps(a), fb = _mm256_cvtpd_ps(b);
    _mm_storeu_ps(p, _mm_unpacklo_ps(fa, fb));
    _mm_storeu_ps(p + 4, _mm_unpackhi_ps(fa, fb));
}
#endif

// N doubles (N floats' worth), in as many registers as they take.
template <int N>
struct Doubles {
    static constexpr int kRegs = static_cast<int>(N * sizeof(double) / sizeof(DoubleReg));
    DoubleReg r[kRegs];
};

template <int N>
POSENC_LANES_INLINE Doubles<N> load_doubles(const double* p) {
    Doubles<N> d;
    for (int k = 0; k < Doubles<N>::kRegs; ++k) d.r[k] = load_reg(p + k * N / Doubles<N>::kRegs);
    return d;
}

// Pairs of two rows interleaved, {s[0], c[0], s[1], c[1], ...}, a vector of
// floats' worth (the doubles of an interleaved encoding row, sinusoidal.cpp):
// from a register of each, or from memory.
#if defined(__AVX512F__)
POSENC_LANES_INLINE Doubles<16> interleave_regs(__m512d a, __m512d b) {
    const __m512i lo = _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0), hi = _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4);
    return {{_mm512_permutex2var_pd(a, lo, b), _mm512_permutex2var_pd(a, hi, b)}};
}
#else
POSENC_LANES_INLINE Doubles<8> interleave_regs(__m256d a, __m256d b) {
    const __m256d lo = _mm256_unpacklo_pd(a, b), hi = _mm256_unpackhi_pd(a, b);  // {s0 c0 s2 c2}, {s1 c1 s3 c3}
    return {{_mm256_permute2f128_pd(lo, hi, 0x20), _mm256_permute2f128_pd(lo, hi, 0x31)}};
}
#endif
POSENC_LANES_INLINE Doubles<2 * kDoubleLanes> interleave_doubles(const double* s, const double* c) {
    return interleave_regs(load_reg(s), load_reg(c));
}

// A vector of floats as doubles (exact), and doubles as floats rounded to
// odd at kOddBits bits: narrow_lanes of those is each double rounded once to
// float16 or bfloat16.
#if defined(__AVX512F__)
POSENC_LANES_INLINE Doubles<16> to_doubles(__m512 f) {
    return {{_mm512_cvtps_pd(_mm512_castps512_ps256(f)),
             _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f), 1)))}};
}
POSENC_LANES_INLINE __m512 odd_lanes(Doubles<16> d) {
    return _mm512_insertf32x8(_mm512_castps256_ps512(odd_reg(d.r[0])), odd_reg(d.r[1]), 1);
}
POSENC_LANES_INLINE Doubles<8> to_doubles(__m256 f) { return {{_mm512_cvtps_pd(f)}}; }
POSENC_LANES_INLINE __m256 odd_lanes(Doubles<8> d) { return odd_reg(d.r[0]); }
#else
POSENC_LANES_INLINE Doubles<8> to_doubles(__m256 f) {
    return {{_mm256_cvtps_pd(_mm256_castps256_ps128(f)), _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1))}};
}
POSENC_LANES_INLINE __m256 odd_lanes(Doubles<8> d) { return _mm256_set_m128(odd_reg(d.r[1]), odd_reg(d.r[0])); }
#endif
POSENC_LANES_INLINE Floats odd_lanes(const double* p) { return odd_lanes(load_doubles<kLanes>(p)); }

// A vector of floats' worth of doubles rounded once to T and stored: odd
// floats, then narrowed.
template <class T, int N>
POSENC_LANES_INLINE void narrow_doubles(T* p, Doubles<N> d) {
    narrow_lanes(p, odd_lanes(d));
}
#if defined(__AVX512F__)
// float16 on AVX-512 rounds to odd at float's own 24 bits instead: the
// dropped bits' sticky ORed into the last kept bit, then a truncating
// conversion (embedded rounding), three operations per register where
// odd_reg takes five. Exact for float16 (24 ≥ 11 + 2 bits): values below
// float's normal range, where truncation loses the sticky bit, round to
// zero as float16 either way (bfloat16's subnormals are float's: odd_reg);
// NaNs keep their top payload bits, infinities stay, and finite values past
// float's range truncate to FLT_MAX, which float16 rounds to infinity too.
// AVX512-FP16's conversions between float16 and double (one instruction each
// way, rounded once) in place of widen_doubles' and narrow_doubles' here, in
// an AVX-512 copy built with -mavx512fp16, were no faster: that copy took
// 1.00-1.10x the time of float16 NeoX and GPT-J rotations and sums on an
// Intel Xeon (1 and 2 threads, best of 25 calls, builds alternated in
// separate processes; 1.02-1.10x on ALiBi adds, which it does not change), so
// there is no path for it: these rotations wait on more than conversions. On
// that Xeon each of those conversions sustains one per ~2.3 cycles, the time
// of the two it replaces (float16 <-> float and float <-> double, ~1.0-1.2
// cycles each; eight independent chains of each instruction), and the
// rotation's ~12 vector operations per register of doubles share the two
// ports that execute 512-bit operations. Also measured there and slower (the
// same bits; NeoX and GPT-J [1, 2048, 32, 128] in place, 1 and 2 threads,
// builds in alternated processes): sixteen values converted at once, a
// 512-bit cvtph2ps and cvtps2ph with an extract and an insert, 1.05-1.10x the
// time; the sticky bit set by an and, an add and a ternary operation instead
// of a test and a masked or, 1.07-1.12x.
POSENC_LANES_INLINE __m256 odd_float_reg(__m512d d) {
    const __m512i u = _mm512_castpd_si512(d);
    const __m512i last = _mm512_set1_epi64(std::int64_t(1) << 29);  // float's last kept bit
    const __mmask8 inexact = _mm512_test_epi64_mask(u, _mm512_sub_epi64(last, _mm512_set1_epi64(1)));
    const __m512i odd = _mm512_mask_or_epi64(u, inexact, u, last);
    return _mm512_cvt_roundpd_ps(_mm512_castsi512_pd(odd), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
}
POSENC_LANES_INLINE void narrow_doubles(half_t* p, Doubles<16> d) {
    constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(odd_float_reg(d.r[0]), kNearest));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 8), _mm256_cvtps_ph(odd_float_reg(d.r[1]), kNearest));
}
#endif

// The widest float vector of the path, whatever the source's width: for loops
// that hold doubles in 512-bit registers anyway (AVX-512), where converting
// sixteen narrow values costs what eight do.
#if defined(__AVX512F__)
constexpr int kFullLanes = 16;
using FullFloats = __m512;
template <class T> POSENC_LANES_INLINE __m512 widen_full(const T* p) { return widen16(p); }
#else
constexpr int kFullLanes = 8;
using FullFloats = __m256;
template <class T> POSENC_LANES_INLINE __m256 widen_full(const T* p) { return widen_lanes(p); }
#endif

// A vector of floats' worth of T as doubles.
template <class T>
POSENC_LANES_INLINE Doubles<kFullLanes> widen_doubles(const T* p) {
    return to_doubles(widen_full(p));
}
#if defined(__AVX512F__)
POSENC_LANES_INLINE Doubles<16> widen_doubles(const half_t* p) {
    const __m128i* q = reinterpret_cast<const __m128i*>(p);
    return {{_mm512_cvtps_pd(_mm256_cvtph_ps(_mm_loadu_si128(q))), _mm512_cvtps_pd(_mm256_cvtph_ps(_mm_loadu_si128(q + 1)))}};
}
#endif

#endif

POSENC_END_TARGET
