// posenc/lanes.hpp — float16/bfloat16 ↔ float, and double → odd float, a whole vector at a time.
//
// The element-wise conversions of convert.hpp, for one vector of kLanes
// values: 16 on the AVX-512 path when the kernel source works in 512-bit
// vectors (POSENC_VECTOR_BITS), 8 on the AVX2 path (whose dispatch requires
// F16C) and in 256-bit AVX-512 sources, none on the baseline path (kLanes = 0:
// callers fall back to the element-wise code, which GCC vectorises there). Each function computes the
// same bits as its element-wise twin: F16C's conversions are those convert.hpp
// imitates (checked on every float16 value and 4e8 floats), and the bfloat16
// and round-to-odd ones are the same integer operations, lane by lane.
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
#include "posenc/dtype.hpp"
#include "posenc/target.hpp"

POSENC_BEGIN_TARGET

#if defined(__AVX512F__) && POSENC_VECTOR_BITS >= 512

#define POSENC_HAVE_LANES 1
constexpr std::int64_t kLanes = 16;
using Floats = __m512;

inline Floats load_floats(const float* p) { return _mm512_loadu_ps(p); }
inline void store_floats(float* p, Floats v) { _mm512_storeu_ps(p, v); }

inline Floats widen_lanes(const half_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline void narrow_lanes(half_t* p, Floats v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
inline Floats widen_lanes(const bfloat16_t* p) {
    const __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(h, 16));
}
inline void narrow_lanes(bfloat16_t* p, Floats v) {
    const __m512i u = _mm512_castps_si512(v), hi = _mm512_srli_epi32(u, 16);
    const __m512i bias = _mm512_add_epi32(_mm512_and_si512(hi, _mm512_set1_epi32(1)), _mm512_set1_epi32(0x7fff));
    const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                  _mm512_set1_epi32(0x7f800000));
    const __m512i r = _mm512_mask_mov_epi32(rounded, nan, _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(r));
}

// Doubles as floats rounded to odd (convert.hpp's odd_float), eight at a time.
inline __m256 odd_eight(const double* p) {
    const __m512i dropped = _mm512_set1_epi64((std::int64_t(1) << 29) - 1);
    const __m512i u = _mm512_castpd_si512(_mm512_loadu_pd(p));
    const __m512i sticky = _mm512_add_epi64(_mm512_and_si512(u, dropped), dropped);
    return _mm512_cvtpd_ps(_mm512_castsi512_pd(_mm512_andnot_si512(dropped, _mm512_or_si512(u, sticky))));
}
inline Floats odd_lanes(const double* p) {
    return _mm512_insertf32x8(_mm512_castps256_ps512(odd_eight(p)), odd_eight(p + 8), 1);
}
// Whether a lane holds 0 < |v| ≤ 2^-126 (see chunks.hpp's round_into).
inline bool any_tiny(Floats v) {
    const __m512 a = _mm512_abs_ps(v);
    return (_mm512_cmp_ps_mask(a, _mm512_set1_ps(0x1p-126f), _CMP_LE_OQ) &
            _mm512_cmp_ps_mask(a, _mm512_setzero_ps(), _CMP_NEQ_OQ)) != 0;
}

#elif defined(__AVX2__)

#define POSENC_HAVE_LANES 1
constexpr std::int64_t kLanes = 8;
using Floats = __m256;

inline Floats load_floats(const float* p) { return _mm256_loadu_ps(p); }
inline void store_floats(float* p, Floats v) { _mm256_storeu_ps(p, v); }

inline Floats widen_lanes(const half_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline void narrow_lanes(half_t* p, Floats v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
inline Floats widen_lanes(const bfloat16_t* p) {
    const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
}
inline void narrow_lanes(bfloat16_t* p, Floats v) {
    if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q))) {  // NaNs are rare: no blend for them
        alignas(32) float f[8];
        _mm256_store_ps(f, v);
        for (int k = 0; k < 8; ++k) p[k] = narrow<bfloat16_t>(f[k]);
        return;
    }
    const __m256i u = _mm256_castps_si256(v), hi = _mm256_srli_epi32(u, 16);
    const __m256i bias = _mm256_add_epi32(_mm256_and_si256(hi, _mm256_set1_epi32(1)), _mm256_set1_epi32(0x7fff));
    const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
    // Eight 32-bit values below 2^16, packed to 16 bits in order.
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                     _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)));
}

// Doubles as floats rounded to odd (convert.hpp's odd_float), four at a time.
inline __m128 odd_four(const double* p) {
    const __m256i dropped = _mm256_set1_epi64x((std::int64_t(1) << 29) - 1);
    const __m256i u = _mm256_castpd_si256(_mm256_loadu_pd(p));
    const __m256i sticky = _mm256_add_epi64(_mm256_and_si256(u, dropped), dropped);
    return _mm256_cvtpd_ps(_mm256_castsi256_pd(_mm256_andnot_si256(dropped, _mm256_or_si256(u, sticky))));
}
inline Floats odd_lanes(const double* p) { return _mm256_set_m128(odd_four(p + 4), odd_four(p)); }
// Whether a lane holds 0 < |v| ≤ 2^-126 (see chunks.hpp's round_into).
inline bool any_tiny(Floats v) {
    const __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
    return _mm256_movemask_ps(_mm256_and_ps(_mm256_cmp_ps(a, _mm256_set1_ps(0x1p-126f), _CMP_LE_OQ),
                                            _mm256_cmp_ps(a, _mm256_setzero_ps(), _CMP_NEQ_OQ))) != 0;
}

#else

#define POSENC_HAVE_LANES 0
constexpr std::int64_t kLanes = 0;  // the baseline path converts element by element

#endif

POSENC_END_TARGET
