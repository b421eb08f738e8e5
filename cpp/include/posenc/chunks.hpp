// posenc/chunks.hpp — rows of any storage type, a block at a time, in their arithmetic type.
//
// Kernels write their arithmetic once, on plain float or double arrays. A row
// of T is read through `read_chunk` — the row itself when it already is a
// contiguous row of Wide<T>, else a small buffer filled by exact widening —
// and results go through `result_chunk` / `write_chunk` — computed straight
// into the row when it is a contiguous row of the result type, else into a
// buffer that is then rounded once into the row. `for_row` runs a kernel's
// body over a row: in one piece when no conversion is needed (contiguous
// float32/float64 rows are never copied: those loops are what they were
// without this header), else in blocks of kBlock elements whose size is a
// compile-time constant, so that GCC keeps a block's buffers in registers and
// fuses widening, arithmetic and narrowing into one loop (vcvtph2ps, the
// arithmetic, vcvtps2ph). float16 converts with F16C where the path has it
// (the AVX2 and AVX-512 copies), with the compiler-vectorised integer code of
// convert.hpp elsewhere and for bfloat16; both give identical bits.
#pragma once

#include <cstdint>
#include <type_traits>

#if defined(__F16C__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "posenc/convert.hpp"

POSENC_BEGIN_TARGET

// The helpers below must inline into the kernel's block loop, or a block's
// buffers stay in memory and every block pays a call: GCC's size heuristics
// would otherwise decline the larger ones.
#define POSENC_BLOCK_INLINE inline __attribute__((always_inline))

// Elements per converted block: one 256-bit vector of floats (two of doubles).
constexpr std::int64_t kBlock = 8;
using Block = std::integral_constant<std::int64_t, kBlock>;

// Whether rows of T are worked on in place, without conversion: contiguous
// rows of a type that is its own arithmetic type (float32, float64).
template <class T, bool kContiguous>
constexpr bool kDirect = std::is_same<T, Wide<T>>::value && kContiguous;

// Runs body(j0, m) over [0, n): once with m = n when kDirect (the body then
// works in the row itself), else for blocks of m = Block() elements and one
// shorter last block. Only the variant needed is compiled.
template <bool kDirect, class Body>
POSENC_BLOCK_INLINE void for_row(std::int64_t n, Body&& body) {
    if constexpr (kDirect) {
        body(std::int64_t(0), n);
    } else {
        std::int64_t j0 = 0;
        for (; j0 + kBlock <= n; j0 += kBlock) body(j0, Block());
        if (j0 < n) body(j0, n - j0);
    }
}

template <class T>
POSENC_BLOCK_INLINE void widen_into(const T* src, std::int64_t stride, std::int64_t n, Wide<T>* __restrict dst) {
    if (stride == 1) {
#pragma omp simd
        for (std::int64_t j = 0; j < n; ++j) dst[j] = widen(src[j]);
    } else {
        for (std::int64_t j = 0; j < n; ++j) dst[j] = widen(src[j * stride]);
    }
}

// dst[j·stride] = src[j] rounded to nearest even, j < n (S is Wide<T>, or float into float64).
template <class T, class S>
POSENC_BLOCK_INLINE void narrow_into(const S* __restrict src, std::int64_t n, T* dst, std::int64_t stride) {
    if (stride == 1) {
#pragma omp simd
        for (std::int64_t j = 0; j < n; ++j) dst[j] = narrow<T>(src[j]);
    } else {
        for (std::int64_t j = 0; j < n; ++j) dst[j * stride] = narrow<T>(src[j]);
    }
}

#if defined(__F16C__)
template <>
POSENC_BLOCK_INLINE void widen_into<half_t>(const half_t* src, std::int64_t stride, std::int64_t n, float* __restrict dst) {
    std::int64_t j = 0;
    if (stride == 1)
        for (; j + 8 <= n; j += 8)
            _mm256_storeu_ps(dst + j, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + j))));
    for (; j < n; ++j) dst[j] = widen(src[j * stride]);
}

template <>
POSENC_BLOCK_INLINE void narrow_into<half_t, float>(const float* __restrict src, std::int64_t n, half_t* dst, std::int64_t stride) {
    std::int64_t j = 0;
    if (stride == 1)
        for (; j + 8 <= n; j += 8)
            _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j),
                             _mm256_cvtps_ph(_mm256_loadu_ps(src + j), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; j < n; ++j) dst[j * stride] = narrow<half_t>(src[j]);
}
#endif

#if defined(__AVX2__)
// bfloat16 ↔ float with AVX2 integer instructions (GCC does not vectorise the
// portable form inside a block): the same operations as convert.hpp's.
template <>
POSENC_BLOCK_INLINE void widen_into<bfloat16_t>(const bfloat16_t* src, std::int64_t stride, std::int64_t n,
                                   float* __restrict dst) {
    std::int64_t j = 0;
    if (stride == 1)
        for (; j + 8 <= n; j += 8) {
            const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + j)));
            _mm256_storeu_ps(dst + j, _mm256_castsi256_ps(_mm256_slli_epi32(h, 16)));
        }
    for (; j < n; ++j) dst[j] = widen(src[j * stride]);
}

template <>
POSENC_BLOCK_INLINE void narrow_into<bfloat16_t, float>(const float* __restrict src, std::int64_t n, bfloat16_t* dst,
                                           std::int64_t stride) {
    std::int64_t j = 0;
    if (stride == 1)
        for (; j + 8 <= n; j += 8) {
            const __m256i u = _mm256_castps_si256(_mm256_loadu_ps(src + j));
            const __m256i hi = _mm256_srli_epi32(u, 16);
            const __m256i bias = _mm256_add_epi32(_mm256_and_si256(hi, _mm256_set1_epi32(1)), _mm256_set1_epi32(0x7fff));
            const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
            const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                                   _mm256_set1_epi32(0x7f800000));
            const __m256i r = _mm256_blendv_epi8(rounded, _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
            // Eight 32-bit values below 2^16 packed to 16 bits, in order.
            _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j),
                             _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)));
        }
    for (; j < n; ++j) dst[j * stride] = narrow<bfloat16_t>(src[j]);
}
#endif

#if defined(__AVX2__)
// Eight doubles rounded to float to odd (convert.hpp's odd_float, four lanes
// of 64-bit integer arithmetic at a time); `tiny` gets whether one of them
// lies below 2^-126, where that is inexact.
POSENC_BLOCK_INLINE __m256 odd_floats8(const double* src, bool& tiny) {
    const __m256i dropped = _mm256_set1_epi64x((std::int64_t(1) << 29) - 1);
    const __m256d lo = _mm256_loadu_pd(src), hi = _mm256_loadu_pd(src + 4);
    const auto odd = [&](__m256d d) {
        const __m256i u = _mm256_castpd_si256(d);
        const __m256i sticky = _mm256_add_epi64(_mm256_and_si256(u, dropped), dropped);
        return _mm256_cvtpd_ps(_mm256_castsi256_pd(_mm256_andnot_si256(dropped, _mm256_or_si256(u, sticky))));
    };
    const auto below = [](__m256d d) {
        const __m256d a = _mm256_andnot_pd(_mm256_set1_pd(-0.0), d);
        return _mm256_movemask_pd(_mm256_and_pd(_mm256_cmp_pd(a, _mm256_set1_pd(0x1p-126), _CMP_LT_OQ),
                                                _mm256_cmp_pd(a, _mm256_setzero_pd(), _CMP_NEQ_OQ)));
    };
    tiny = (below(lo) | below(hi)) != 0;
    return _mm256_set_m128(odd(hi), odd(lo));
}
#endif

// dst[j·stride] = src[j] rounded once to T, j < n.
template <class T>
POSENC_BLOCK_INLINE void round_into(const double* __restrict src, std::int64_t n, T* dst, std::int64_t stride) {
    if constexpr (std::is_same<T, float>::value || std::is_same<T, double>::value) {
        if (stride == 1) {
#pragma omp simd
            for (std::int64_t j = 0; j < n; ++j) dst[j] = static_cast<T>(src[j]);
        } else {
            for (std::int64_t j = 0; j < n; ++j) dst[j * stride] = static_cast<T>(src[j]);
        }
    } else {
        std::int64_t j = 0;
#if defined(__AVX2__)
        // Through floats rounded to odd (convert.hpp), eight at a time. Below
        // 2^-126 only bfloat16 has values odd_float gets wrong: store<T> takes
        // such a block (float16 rounds them to zero either way).
        if (stride == 1)
            for (; j + 8 <= n; j += 8) {
                bool tiny;
                alignas(32) float odd[8];
                _mm256_store_ps(odd, odd_floats8(src + j, tiny));
                if (std::is_same<T, bfloat16_t>::value && tiny)
                    for (int k = 0; k < 8; ++k) dst[j + k] = store<T>(src[j + k]);
                else
                    narrow_into(odd, 8, dst + j, 1);
            }
#endif
        if (stride == 1) {
#pragma omp simd
            for (std::int64_t k = j; k < n; ++k) dst[k] = store<T>(src[k]);
        } else {
            for (std::int64_t k = j; k < n; ++k) dst[k * stride] = store<T>(src[k]);
        }
    }
}

// n values of a row of T (every `stride`-th element from src) as Wide<T>:
// the row itself when it is contiguous Wide<T>, else buf, filled.
template <class T>
POSENC_BLOCK_INLINE const Wide<T>* read_chunk(const T* src, std::int64_t stride, std::int64_t n, Wide<T>* buf) {
    if constexpr (std::is_same<T, Wide<T>>::value)
        if (stride == 1) return src;
    widen_into(src, stride, n, buf);
    return buf;
}

// Where a kernel computes n results of type S for dst: dst itself when it is a
// contiguous row of S, else buf (whose kBlock elements then bound n).
template <class T, class S>
POSENC_BLOCK_INLINE S* result_chunk(T* dst, std::int64_t stride, S* buf) {
    if constexpr (std::is_same<T, S>::value)
        if (stride == 1) return dst;
    return buf;
}

// Stores n results into the row at dst, rounded once to T: nothing to do when
// they were computed in dst itself.
template <class T, class S>
POSENC_BLOCK_INLINE void write_chunk(const S* res, T* dst, std::int64_t stride, std::int64_t n) {
    if (static_cast<const void*>(res) == static_cast<const void*>(dst)) return;
    if constexpr (std::is_same<S, double>::value) round_into(res, n, dst, stride);
    else narrow_into(res, n, dst, stride);
}

// out = x + y, element by element rounded once (rounded_sum), for rows of n
// elements with any strides (all 1 when kContiguous); x may be out itself
// (each block is read before it is written). The one row sum of every
// kernel (T5/ALiBi biases, learned tables).
template <bool kContiguous, class T>
POSENC_BLOCK_INLINE void add_rows(const T* x, std::int64_t xs, const T* y, std::int64_t ys, T* out, std::int64_t os,
                     std::int64_t n) {
    using W = Wide<T>;
    if (kContiguous) xs = ys = os = 1;
    for_row<kDirect<T, kContiguous>>(n, [&](std::int64_t j0, auto m) {
        W xb[kBlock], yb[kBlock], ob[kBlock];
        const W* xw = read_chunk(x + j0 * xs, xs, m, xb);
        const W* yw = read_chunk(y + j0 * ys, ys, m, yb);
        W* ow = result_chunk(out + j0 * os, os, ob);
        // x may be out: no restrict on either; each lane reads its x before writing it.
#pragma omp simd
        for (std::int64_t j = 0; j < m; ++j) ow[j] = xw[j] + yw[j];
        write_chunk(ow, out + j0 * os, os, m);
    });
}

POSENC_END_TARGET
