// The vision family's kernels (vision.hpp): Swin's relative position bias, each row
// of the [N, N] block streamed as one contiguous slice of a per-(head, query column)
// lookup row, and DETR's two-table gather. Compiled once per ISA.
#include "posenc/vision.hpp"

#include <cstring>
#include <type_traits>

#include "posenc/parallel.hpp"

#if defined(__F16C__)
#include <immintrin.h>  // F16C conversions: GCC 12 does not vectorise _Float16 <-> float itself
#endif

POSENC_BEGIN_TARGET
namespace {

// x + bias rounded once to T. float and double: the IEEE operation itself.
// float16 and bfloat16: the sum in float32, then rounded to T. Rounding twice is
// harmless here: float32's 24 bits are at least 2p + 2 for float16 (p = 11) and
// bfloat16 (p = 8), and for +, −, ×, ÷ and √ an intermediate of 2p + 2 bits rounds
// to the same p-bit result as rounding the exact value once (Figueroa, "When is
// double rounding innocuous?", SIGNUM 1995). float16 results never reach float32's
// subnormals, and bfloat16 values below 2^-126 add exactly in float32 (multiples
// of 2^-133). Conversions are written so loops vectorise: _Float16 becomes F16C's
// vcvtph2ps/vcvtps2ph where the ISA has it (a libgcc call in the baseline build),
// bfloat16 is integer shifts with round-to-nearest-even.
// Each dtype's storage as the kernel addresses it, and its sum rounded once.
template <class T> struct Lane { using S = T; static S sum(S x, S b) { return x + b; } };  // float, double
template <> struct Lane<half_t> {
    using S = _Float16;
    static S sum(S x, S b) { return static_cast<S>(static_cast<float>(x) + static_cast<float>(b)); }
};
template <> struct Lane<bfloat16_t> {
    using S = std::uint16_t;
    static float widen(S h) { return __builtin_bit_cast(float, static_cast<std::uint32_t>(h) << 16); }
    static S narrow(float f) {
        const std::uint32_t u = __builtin_bit_cast(std::uint32_t, f);
        const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;  // nearest, ties to even
        const std::uint32_t quiet = (u >> 16) | 0x40u;                          // a NaN stays a NaN
        return static_cast<S>((u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
    }
    static S sum(S x, S b) { return narrow(widen(x) + widen(b)); }
};

// One row of n elements: out = x + bias (kAdd) or bias. x may be out itself: each
// element is read before it is written, `omp simd` asserts lanes are independent.
// The pointers are the storage type S of T (same size and bits) so loops vectorise.
template <bool kAdd, bool kContiguous, class T>
inline void row(const T* x_t, std::int64_t xcs, const T* __restrict bias_t, T* out_t, std::int64_t ocs,
                std::int64_t n) {
    using S = typename Lane<T>::S;
    static_assert(sizeof(S) == sizeof(T), "storage and lane types must have one size");
    const S* x = reinterpret_cast<const S*>(x_t);
    const S* __restrict bias = reinterpret_cast<const S*>(bias_t);
    S* out = reinterpret_cast<S*>(out_t);
    if (kContiguous) xcs = ocs = 1;
    if (!kAdd && kContiguous) {
        std::memcpy(out, bias, static_cast<std::size_t>(n) * sizeof(S));
        return;
    }
    std::int64_t j = 0;
#if defined(__F16C__)
    if constexpr (kAdd && kContiguous && sizeof(T) == 2 && !std::is_same_v<S, std::uint16_t>) {
        // float16, 8 lanes at a time: widen exactly, add in float32, round once to nearest even.
        for (; j + 8 <= n; j += 8) {
            const __m256 xv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + j)));
            const __m256 bv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bias + j)));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j),
                             _mm256_cvtps_ph(_mm256_add_ps(xv, bv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        }
    }
#endif
#pragma omp simd
    for (std::int64_t k = j; k < n; ++k) out[k * ocs] = kAdd ? Lane<T>::sum(x[k * xcs], bias[k]) : bias[k];
}

// Work items (rows of an operand, pixels) in memory order of a C-contiguous
// operand, streamed in blocks of about kBlockBytes of output (parallel_blocks).
constexpr std::int64_t kBlockBytes = std::int64_t(1) << 17;

template <bool kAdd, class T>
void bias(const SwinArgs& a, const void* x_v, const RowLayout* xl, void* out_v, const RowLayout& ol) {
    const T* x = static_cast<const T*>(x_v);
    T* out = static_cast<T*>(out_v);
    const T* lut = static_cast<const T*>(a.lut);
    const std::int64_t ww = a.ww, n = a.wh * ww, lut_len = (2 * a.wh - 1) * ww;
    const bool contiguous = ol.col_stride == 1 && (!kAdd || xl->col_stride == 1);
    parallel_blocks(ol.batches * n, n * static_cast<std::int64_t>(sizeof(T)), kBlockBytes, n, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t item = begin; item < end; ++item) {
            const std::int64_t b = item / n, n1 = item % n, i1 = n1 / ww, j1 = n1 % ww;
            const T* src = lut + ((b % a.heads) * ww + j1) * lut_len + (a.wh - 1 - i1) * ww;
            const T* xi = kAdd ? x + xl->batch_offsets[b] + n1 * xl->row_stride : nullptr;
            T* oi = out + ol.batch_offsets[b] + n1 * ol.row_stride;
            if (contiguous) row<kAdd, true>(xi, 1, src, oi, 1, n);
            else row<kAdd, false>(xi, kAdd ? xl->col_stride : 0, src, oi, ol.col_stride, n);
        }
    });
}

// ---------------------------------------------------------------- DETR

template <class U>
inline void copy_row(const U* __restrict src, U* __restrict dst, std::int64_t cs, std::int64_t n) {
    if (cs == 1) {
        std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(U));
        return;
    }
    for (std::int64_t j = 0; j < n; ++j) dst[j * cs] = src[j];
}

// U is an unsigned integer of the element width: the gather never looks at values.
template <class U>
void detr(const DetrArgs& a, void* out_v, const RowLayout& ol) {
    U* out = static_cast<U*>(out_v);
    const U* yt = static_cast<const U*>(a.y_table);
    const U* xt = static_cast<const U*>(a.x_table);
    const std::int64_t f = a.feats, cs = ol.col_stride;
    const std::int64_t items = ol.batches * a.rows;
    parallel_blocks(items, 2 * f * static_cast<std::int64_t>(sizeof(U)), kBlockBytes, 2 * f, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t p = begin; p < end; ++p) {
            U* dst = out + ol.batch_offsets[p / a.rows] + (p % a.rows) * ol.row_stride;
            copy_row(yt + a.y_index[p % a.y_period] * f, dst, cs, f);
            copy_row(xt + a.x_index[p % a.x_period] * f, dst + f * cs, cs, f);
        }
    });
}

template <class T>
void bias_any(const SwinArgs& a, const void* x, const RowLayout* xl, void* out, const RowLayout& ol) {
    if (x) bias<true, T>(a, x, xl, out, ol);
    else bias<false, T>(a, nullptr, nullptr, out, ol);
}

}  // namespace

extern const VisionKernels vision = {
    {bias_any<float>, bias_any<double>, bias_any<half_t>, bias_any<bfloat16_t>},
    {detr<std::uint8_t>, detr<std::uint16_t>, detr<std::uint32_t>, detr<std::uint64_t>},
};

POSENC_END_TARGET
