// posenc/rounds_alike.hpp — float16/bfloat16 results computed in float32, kept where provably exact.
//
// A float16/bfloat16 result is its float64 evaluation V rounded once (convert.hpp).
// Let F be a float32 evaluation of the same expression and e a bound such
// that F − e and F + e, as computed in float, still enclose V and F strictly.
// Where those two round alike, F rounds as V does: rounding to nearest is
// monotone. Checking that costs six vector operations and yields the rounded
// value itself, where the float64 evaluation and its rounding to odd cost a
// dozen per vector of doubles. A lane where the check fails (F within e of a
// halfway point: for rope.cpp's rotation about 0.15% of pairs of Gaussian
// data, more where the result cancels) sends its whole vector back to
// float64. Used by the rotation (rope.cpp) and the sum scale·x + PE
// (sinusoidal.cpp), each with its own bound; float16 goes float32-first on
// the AVX2 path only (kFloat32First below says why). Vectors of the path's
// widest floats (lanes.hpp's kFullLanes: 16 on AVX-512, 8 on AVX2).
// bfloat16 pairs can also be read and written as they lie, two values to a
// 32-bit lane (Pairs), each half a float by itself: no widening or narrowing
// shuffle, which on AVX-512 competes with the arithmetic for one port.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "posenc/lanes.hpp"

POSENC_BEGIN_TARGET

// Which formats compute in float32 first, then checked: bfloat16, and
// float16 on the AVX2 path. float16's halfway points are 8x denser than
// bfloat16's, so more of its vectors fall back (15% of 16-pair rotations),
// and on AVX-512 its float64 route (lanes.hpp) was the faster (AMD EPYC Zen
// 5, 1 and 2 threads: float32 first took 1.18-1.33x its time in rotations,
// 1.19-1.21x in sums; so too for rotations on an Intel Xeon, 1.0-1.2x, and
// on a Zen 4, 1.34-1.47x for NeoX, GPT-J and FLUX at 1 and 2 threads,
// builds alternated in separate processes); on the AVX2 path float32 first
// was the faster (sums: the float64 route took 1.13-1.19x its time;
// rotations on Zen 3: 1.03-1.14x). What loses on the Zen 4 is the fallback:
// float16 NeoX and GPT-J rotations [1, 2048, 32, 128] in float32 first took
// 1.26-1.33x the float64 route's time, and 0.79-0.85x with the bound set to
// 0 (no vector falling back; 1 and 2 threads, calls alternated). 15% of
// NeoX's 16-pair vectors and 8% of GPT-J's 16-feature ones fall back on
// Gaussian data, ~100 cycles each. Exact products (cos/sin split in a high
// part of 13 bits and a low part) would bound the error by the result, not
// by |u| + |v|, and leave ~1.7% (a simulation); not tried: two more FMAs
// and a bound per result.
// (None on the baseline path, which has no vectors of its own here.)
#if !POSENC_HAVE_LANES
template <class T> constexpr bool kFloat32First = false;
#elif defined(__AVX512F__)
template <class T> constexpr bool kFloat32First = std::is_same<T, bfloat16_t>::value;
#else
template <class T> constexpr bool kFloat32First = kNarrowFormat<T>;
#endif

#if POSENC_HAVE_LANES

#if defined(__AVX512F__)
using Rounded = __m512i;    // sixteen 32-bit lanes whose high halves are bfloat16 values
using Rounded16 = __m256i;  // sixteen float16 values
POSENC_LANES_INLINE __m512 load_full(const float* p) { return _mm512_loadu_ps(p); }
POSENC_LANES_INLINE __m512 splat(float v) { return _mm512_set1_ps(v); }
POSENC_LANES_INLINE __m512 fused_add(__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); }
POSENC_LANES_INLINE __m512 fused_sub(__m512 a, __m512 b, __m512 c) { return _mm512_fmsub_ps(a, b, c); }
POSENC_LANES_INLINE __m512 swap_pairs(__m512 a) { return _mm512_permute_ps(a, 0xb1); }
POSENC_LANES_INLINE __m512 magnitude(__m512 a) { return _mm512_abs_ps(a); }
POSENC_LANES_INLINE __m512 min_lanes(__m512 a, __m512 b) { return _mm512_min_ps(a, b); }
// Bit k set where lane k of a is not below b (NaN included).
POSENC_LANES_INLINE unsigned not_below(__m512 a, __m512 b) { return _mm512_cmp_ps_mask(a, b, _CMP_NLT_UQ); }
// Rounding checked (see the header): r rounded to bfloat16 in `out`, and
// bit k set where lane k of r − e and r + e round apart. bfloat16's
// rounding boundaries (halfway points) are the floats with low half 0x8000:
// adding 0x8000 to the bits carries into the high half exactly at them (in
// magnitude), so finite lo and hi of magnitude below 2^127 have a halfway
// point between them, or differ in sign, where the high halves of the sums
// differ. Where none does, r is no halfway point and the high half of
// r + e's sum is r rounded (to nearest; ties cannot occur).
POSENC_LANES_INLINE unsigned round_checked(__m512 r, __m512 e, __m512i& out) {
    const __m512i half = _mm512_set1_epi32(0x8000);
    const __m512i lo = _mm512_add_epi32(_mm512_castps_si512(r - e), half);
    out = _mm512_add_epi32(_mm512_castps_si512(r + e), half);
    return _mm512_test_epi32_mask(_mm512_xor_si512(lo, out), _mm512_set1_epi32(~0xffff));
}
// The same for float16 (Rounded16: the float16 values themselves): where
// r − e and r + e convert (F16C, to nearest even) to the same values, those
// are r rounded.
POSENC_LANES_INLINE unsigned round_checked(__m512 r, __m512 e, __m256i& out) {
    constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    out = _mm512_cvtps_ph(r + e, kNearest);
    return _mm256_cmpneq_epi16_mask(_mm512_cvtps_ph(r - e, kNearest), out);
}
POSENC_LANES_INLINE void store_rounded(half_t* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
POSENC_LANES_INLINE void store_rounded(bfloat16_t* p, __m512i v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(_mm512_srli_epi32(v, 16)));
}
// Pairs of bfloat16 values, one pair per 32-bit lane (the first in the low
// half): a plain load, whose halves lanes.hpp's firsts and seconds read as floats.
using Pairs = __m512i;
POSENC_LANES_INLINE __m512i load_pairs(const bfloat16_t* p) { return _mm512_loadu_si512(p); }
POSENC_LANES_INLINE void store_pairs(bfloat16_t* p, __m512i v) { _mm512_storeu_si512(p, v); }
// The first n < 32 values only, the others loaded as zeros; no byte past
// them is touched. Half or a quarter of a vector (the tails of rotary_dim
// 96, 80, 32) with a plain load or store, other counts masked: on AMD Zen 4
// a masked tail took [1, 2048, 32, 128] rotary_dim=80 in place to 1.29x
// the AVX2 path's time (2 threads; 1.07x element by element instead).
POSENC_LANES_INLINE __m512i load_pairs(const bfloat16_t* p, std::int64_t n) {
    if (n == 16) return _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    if (n == 8) return _mm512_zextsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm512_maskz_loadu_epi16(static_cast<__mmask32>((1u << n) - 1), p);
}
POSENC_LANES_INLINE void store_pairs(bfloat16_t* p, __m512i v, std::int64_t n) {
    if (n == 16) return _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_castsi512_si256(v));
    if (n == 8) return _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_castsi512_si128(v));
    _mm512_mask_storeu_epi16(p, static_cast<__mmask32>((1u << n) - 1), v);
}
// round_checked for the two results of each pair, a within ea and b within
// eb: `out` holds a's rounding in the low halves and b's in the high ones,
// and bit k is set where either of lane k's results could round apart.
POSENC_LANES_INLINE unsigned round_pairs_checked(__m512 a, __m512 ea, __m512 b, __m512 eb, __m512i& out) {
    const __m512i half = _mm512_set1_epi32(0x8000), high = _mm512_set1_epi32(~0xffff);
    const __m512i a_hi = _mm512_add_epi32(_mm512_castps_si512(a + ea), half);
    const __m512i a_lo = _mm512_add_epi32(_mm512_castps_si512(a - ea), half);
    const __m512i b_hi = _mm512_add_epi32(_mm512_castps_si512(b + eb), half);
    const __m512i b_lo = _mm512_add_epi32(_mm512_castps_si512(b - eb), half);
    // (a_hi ^ a_lo) | (b_hi ^ b_lo) in two ternary operations; (b_hi & high) | (a_hi >> 16) in one.
    const __m512i apart = _mm512_ternarylogic_epi32(_mm512_xor_si512(a_hi, a_lo), b_hi, b_lo, 0xf6);
    out = _mm512_ternarylogic_epi32(b_hi, high, _mm512_srli_epi32(a_hi, 16), 0xea);
    return _mm512_test_epi32_mask(apart, high);
}
#else
using Rounded = __m256i;
using Rounded16 = __m128i;
POSENC_LANES_INLINE __m256 load_full(const float* p) { return _mm256_loadu_ps(p); }
POSENC_LANES_INLINE __m256 splat(float v) { return _mm256_set1_ps(v); }
POSENC_LANES_INLINE __m256 fused_add(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
POSENC_LANES_INLINE __m256 fused_sub(__m256 a, __m256 b, __m256 c) { return _mm256_fmsub_ps(a, b, c); }
POSENC_LANES_INLINE __m256 swap_pairs(__m256 a) { return _mm256_permute_ps(a, 0xb1); }
POSENC_LANES_INLINE __m256 magnitude(__m256 a) {
    return _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
}
POSENC_LANES_INLINE __m256 min_lanes(__m256 a, __m256 b) { return _mm256_min_ps(a, b); }
POSENC_LANES_INLINE unsigned not_below(__m256 a, __m256 b) {
    return static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_NLT_UQ)));
}
POSENC_LANES_INLINE unsigned round_checked(__m256 r, __m256 e, __m256i& out) {
    const __m256i half = _mm256_set1_epi32(0x8000);
    const __m256i lo = _mm256_add_epi32(_mm256_castps_si256(r - e), half);
    out = _mm256_add_epi32(_mm256_castps_si256(r + e), half);
    const __m256i high = _mm256_and_si256(_mm256_xor_si256(lo, out), _mm256_set1_epi32(~0xffff));
    const __m256i same = _mm256_cmpeq_epi32(high, _mm256_setzero_si256());
    return static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(same))) ^ 0xffu;
}
POSENC_LANES_INLINE unsigned round_checked(__m256 r, __m256 e, __m128i& out) {
    constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    out = _mm256_cvtps_ph(r + e, kNearest);
    const __m128i same = _mm_cmpeq_epi16(_mm256_cvtps_ph(r - e, kNearest), out);
    return static_cast<unsigned>(_mm_movemask_epi8(same)) ^ 0xffffu;
}
POSENC_LANES_INLINE void store_rounded(half_t* p, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); }
POSENC_LANES_INLINE void store_rounded(bfloat16_t* p, __m256i v) {
    const __m256i high = _mm256_srli_epi32(v, 16);  // eight values below 2^16, packed in order
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                     _mm_packus_epi32(_mm256_castsi256_si128(high), _mm256_extracti128_si256(high, 1)));
}
using Pairs = __m256i;
POSENC_LANES_INLINE __m256i load_pairs(const bfloat16_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
POSENC_LANES_INLINE void store_pairs(bfloat16_t* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
// The first n < 16 values only: half or a quarter of a vector with a plain
// load or store, other counts through a zero-padded copy (AVX2 has no 16-bit
// masked loads and stores).
POSENC_LANES_INLINE __m256i load_pairs(const bfloat16_t* p, std::int64_t n) {
    if (n == 8) return _mm256_zextsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    if (n == 4) return _mm256_zextsi128_si256(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    alignas(32) bfloat16_t b[16] = {};
    std::memcpy(b, p, static_cast<std::size_t>(n) * sizeof(bfloat16_t));
    return load_pairs(b);
}
POSENC_LANES_INLINE void store_pairs(bfloat16_t* p, __m256i v, std::int64_t n) {
    if (n == 8) return _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(v));
    if (n == 4) return _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(v));
    alignas(32) bfloat16_t b[16];
    store_pairs(b, v);
    std::memcpy(p, b, static_cast<std::size_t>(n) * sizeof(bfloat16_t));
}
POSENC_LANES_INLINE unsigned round_pairs_checked(__m256 a, __m256 ea, __m256 b, __m256 eb, __m256i& out) {
    const __m256i half = _mm256_set1_epi32(0x8000), high = _mm256_set1_epi32(~0xffff);
    const __m256i a_hi = _mm256_add_epi32(_mm256_castps_si256(a + ea), half);
    const __m256i a_lo = _mm256_add_epi32(_mm256_castps_si256(a - ea), half);
    const __m256i b_hi = _mm256_add_epi32(_mm256_castps_si256(b + eb), half);
    const __m256i b_lo = _mm256_add_epi32(_mm256_castps_si256(b - eb), half);
    const __m256i apart = _mm256_or_si256(_mm256_xor_si256(a_hi, a_lo), _mm256_xor_si256(b_hi, b_lo));
    out = _mm256_or_si256(_mm256_and_si256(b_hi, high), _mm256_srli_epi32(a_hi, 16));
    const __m256i same = _mm256_cmpeq_epi32(_mm256_and_si256(apart, high), _mm256_setzero_si256());
    return static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(same))) ^ 0xffu;
}
#endif

// The rounded lanes of one FullFloats as round_checked leaves them, per format.
template <class T> struct RoundedOf { using type = Rounded; };
template <> struct RoundedOf<half_t> { using type = Rounded16; };
template <class T> using RoundedLanes = typename RoundedOf<T>::type;

#endif

POSENC_END_TARGET
