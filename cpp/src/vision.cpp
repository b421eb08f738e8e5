// The vision family's kernels (vision.hpp): Swin's relative position bias, each row
// of the [N, N] block streamed as one contiguous slice of a per-(head, query column)
// lookup row, and DETR's two-table gather. Compiled once per ISA.
#include "posenc/vector_width_256.hpp"
#include "posenc/vision.hpp"

#include <cstring>

#include "posenc/chunks.hpp"
#include "posenc/parallel.hpp"

POSENC_BEGIN_TARGET
namespace {

// One row of n elements: out = x + bias (kAdd: each sum rounded once, chunks.hpp's
// add_rows, as every kernel adds) or the bias itself (a copy). x may be out itself.
template <bool kAdd, bool kContiguous, class T>
inline void row(const T* x, std::int64_t xcs, const T* __restrict bias, T* out, std::int64_t ocs, std::int64_t n) {
    if (kContiguous) xcs = ocs = 1;
    if (kAdd) {
        add_rows<kContiguous>(x, xcs, bias, 1, out, ocs, n);
    } else if (kContiguous) {
        std::memcpy(out, bias, static_cast<std::size_t>(n) * sizeof(T));
    } else {
        for (std::int64_t j = 0; j < n; ++j) out[j * ocs] = bias[j];
    }
}

// Work items (rows of an operand, pixels) in memory order of a C-contiguous operand,
// in blocks of about kBlockBytes of output that threads claim one after another
// (dynamic: on a shared machine a slow thread takes fewer blocks). Every element is
// computed the same way whichever thread takes it: results do not depend on the
// schedule or the thread count. body(begin, end) runs items [begin, end).
constexpr std::int64_t kBlockBytes = std::int64_t(1) << 17;

template <class Body>
inline void for_each_block(std::int64_t items, std::int64_t item_bytes, std::int64_t cost, Body&& body) {
    const std::int64_t per_block = item_bytes >= kBlockBytes ? 1 : kBlockBytes / (item_bytes > 0 ? item_bytes : 1);
    const std::int64_t blocks = (items + per_block - 1) / per_block;
    const auto run_block = [&](std::int64_t block) {
        const std::int64_t end = (block + 1) * per_block < items ? (block + 1) * per_block : items;
        body(block * per_block, end);
    };
    const int threads = plan_threads(items, cost);
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

template <bool kAdd, class T>
void bias(const SwinArgs& a, const void* x_v, const RowLayout* xl, void* out_v, const RowLayout& ol) {
    const T* x = static_cast<const T*>(x_v);
    T* out = static_cast<T*>(out_v);
    const T* lut = static_cast<const T*>(a.lut);
    const std::int64_t ww = a.ww, n = a.wh * ww, lut_len = (2 * a.wh - 1) * ww;
    const bool contiguous = ol.col_stride == 1 && (!kAdd || xl->col_stride == 1);
    for_each_block(ol.batches * n, n * static_cast<std::int64_t>(sizeof(T)), n, [&](std::int64_t begin, std::int64_t end) {
        // Row n1 = (i1, j1) of batch b (head h): indices advance by increments, since
        // a row is a few hundred bytes and divisions per row would cost as much as it.
        std::int64_t b = begin / n, n1 = begin % n, i1 = n1 / ww, j1 = n1 % ww, h = b % a.heads;
        for (std::int64_t item = begin; item < end; ++item) {
            const T* src = lut + (h * ww + j1) * lut_len + (a.wh - 1 - i1) * ww;
            const T* xi = kAdd ? x + xl->batch_offsets[b] + n1 * xl->row_stride : nullptr;
            T* oi = out + ol.batch_offsets[b] + n1 * ol.row_stride;
            if (contiguous) row<kAdd, true>(xi, 1, src, oi, 1, n);
            else row<kAdd, false>(xi, kAdd ? xl->col_stride : 0, src, oi, ol.col_stride, n);
            if (++j1 == ww) {
                j1 = 0;
                if (++i1 == a.wh) {
                    i1 = 0;
                    ++b;
                    h = h + 1 == a.heads ? 0 : h + 1;
                }
            }
            n1 = n1 + 1 == n ? 0 : n1 + 1;
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
    for_each_block(items, 2 * f * static_cast<std::int64_t>(sizeof(U)), 2 * f, [&](std::int64_t begin, std::int64_t end) {
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
