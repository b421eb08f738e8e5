// Swin's relative position bias: rows of the [N, N] block streamed as wh runs of ww
// out of per-(head, row offset) lookup rows. Compiled once per ISA.
#include "posenc/swin.hpp"

#include <cstring>

#include "posenc/convert.hpp"
#include "posenc/parallel.hpp"

POSENC_BEGIN_TARGET
namespace {

// x + bias rounded once. float and double: the IEEE operation itself. float16 and
// bfloat16: their sum is exact in double, so rounding it once to T is the correct sum.
inline float sum_once(float x, float b) { return x + b; }
inline double sum_once(double x, double b) { return x + b; }
template <class T>
inline T sum_once(T x, T b) { return store<T>(load(x) + load(b)); }

// One run of n elements: out = x + bias, or bias (kAdd false). x may be out itself:
// each element is read before it is written, `omp simd` asserts lanes are independent.
template <bool kAdd, bool kContiguous, class T>
inline void run(const T* x, std::int64_t xcs, const T* __restrict bias, T* out, std::int64_t ocs, std::int64_t n) {
    if (kContiguous) xcs = ocs = 1;
    if (!kAdd && kContiguous) {
        std::memcpy(out, bias, static_cast<std::size_t>(n) * sizeof(T));
        return;
    }
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) out[j * ocs] = kAdd ? sum_once(x[j * xcs], bias[j]) : bias[j];
}

// Row n1 = (i1, j1) of batch b: wh runs, run i2 from lookup row (h, i1 − i2 + wh − 1).
template <bool kAdd, bool kContiguous, class T>
inline void row(const SwinArgs& a, const T* lut_h, std::int64_t n1, const T* x, std::int64_t xcs, T* out,
                std::int64_t ocs) {
    const std::int64_t wh = a.wh, ww = a.ww, lut_len = 2 * ww - 1;
    const std::int64_t i1 = n1 / ww, j1 = n1 % ww;
    // Lookup row of run 0 (offset r = i1 + wh − 1), stepping back one row per run.
    const T* src = lut_h + (i1 + wh - 1) * lut_len + (ww - 1 - j1);
    for (std::int64_t i2 = 0; i2 < wh; ++i2, src -= lut_len) {
        const std::int64_t col = i2 * ww;
        run<kAdd, kContiguous>(kAdd ? x + col * xcs : x, xcs, src, out + col * ocs, ocs, ww);
    }
}

// Work items are (batch, row) pairs in memory order of a C-contiguous operand, in
// blocks of about kBlockBytes of output that threads claim one after another
// (dynamic: on a shared machine a slow thread takes fewer blocks). Every element
// is computed the same way whichever thread takes it: results do not depend on the
// schedule or the thread count.
constexpr std::int64_t kBlockBytes = std::int64_t(1) << 17;

template <bool kAdd, class T>
void bias(const SwinArgs& a, const void* x_v, const RowLayout* xl, void* out_v, const RowLayout& ol) {
    const T* x = static_cast<const T*>(x_v);
    T* out = static_cast<T*>(out_v);
    const T* lut = static_cast<const T*>(a.lut);
    const std::int64_t n = a.wh * a.ww, lut_per_head = (2 * a.wh - 1) * (2 * a.ww - 1);
    const std::int64_t items = ol.batches * n;
    const std::int64_t row_bytes = n * static_cast<std::int64_t>(sizeof(T));
    const std::int64_t per_block = row_bytes >= kBlockBytes ? 1 : kBlockBytes / row_bytes;
    const std::int64_t blocks = (items + per_block - 1) / per_block;
    const bool contiguous = ol.col_stride == 1 && (!kAdd || xl->col_stride == 1);
    const auto run_block = [&](std::int64_t block) {
        const std::int64_t end = (block + 1) * per_block < items ? (block + 1) * per_block : items;
        for (std::int64_t item = block * per_block; item < end; ++item) {
            const std::int64_t b = item / n, n1 = item % n;
            const T* lut_h = lut + (b % a.heads) * lut_per_head;
            const T* xi = kAdd ? x + xl->batch_offsets[b] + n1 * xl->row_stride : nullptr;
            const std::int64_t xcs = kAdd ? xl->col_stride : 0;
            T* oi = out + ol.batch_offsets[b] + n1 * ol.row_stride;
            if (contiguous) row<kAdd, true>(a, lut_h, n1, xi, 1, oi, 1);
            else row<kAdd, false>(a, lut_h, n1, xi, xcs, oi, ol.col_stride);
        }
    };
    const int threads = plan_threads(items, n);
    if (threads <= 1 || blocks <= 1) {
        for (std::int64_t block = 0; block < blocks; ++block) run_block(block);
        return;
    }
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (std::int64_t block = 0; block < blocks; ++block) run_block(block);
#else
    for (std::int64_t block = 0; block < blocks; ++block) run_block(block);
#endif
}

template <class T>
void bias_any(const SwinArgs& a, const void* x, const RowLayout* xl, void* out, const RowLayout& ol) {
    if (x) bias<true, T>(a, x, xl, out, ol);
    else bias<false, T>(a, nullptr, nullptr, out, ol);
}

}  // namespace

extern const SwinKernels swin = {
    {bias_any<float>, bias_any<double>, bias_any<half_t>, bias_any<bfloat16_t>},
};

POSENC_END_TARGET
