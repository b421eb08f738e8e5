// The vision family's kernels (vision.hpp): Swin's relative position bias, each row
// of the [N, N] block streamed as one contiguous slice of a per-(head, query column)
// lookup row, and DETR's two-table gather. Compiled once per ISA.
// 512-bit vectors on the AVX-512 path: these rows (144 elements for 12 x 12
// windows) were compiled that wide before they shared chunks.hpp's sum, and at
// 256 bits the float32 add of [16, 4, 144, 144] in cache took 1.15-1.2x the time
// at one thread (AMD EPYC Zen 4, builds alternated in separate processes).
#include "posenc/vector_width_512.hpp"
#include "posenc/vision.hpp"

#include "posenc/chunks.hpp"
#include "posenc/copy_row.hpp"
#include "posenc/parallel.hpp"
#include "posenc/rows_follow.hpp"

#include <type_traits>

POSENC_BEGIN_TARGET
namespace {

// One row of n elements: out = x + bias rounded once (kAdd: the row sum of every
// kernel, chunks.hpp's add_rows) or a copy of bias (copy_row.hpp). x may be out
// itself. These rows had a loop of their own, whose bfloat16 sums went through
// integer rounding and word shuffles (bfloat16 add_swin_bias [16, 4, 144, 144] in
// cache took 1.69x float32's time at one thread) and whose float16 sums were 8
// F16C lanes. Against that loop (AMD EPYC Zen 4, medians of 7, builds alternated
// in separate processes, three pairs, 1 / 2 threads): bfloat16 0.67 / 0.55x the
// time on [16, 4, 144, 144] and 0.70 / 0.65x on [256, 4, 144, 144], float16
// 0.70 / 0.65x and 0.80 / 0.95x; float32 and float64 within the noise (0.8-1.2x).
template <bool kAdd, bool kContiguous, class T>
inline void row(const T* x, std::int64_t xcs, const T* bias, T* out, std::int64_t ocs, std::int64_t n) {
    if (kContiguous) xcs = ocs = 1;
    if (kAdd) {
        add_rows<kContiguous>(x, xcs, bias, 1, out, ocs, n);
        return;
    }
    using U = Bits<T>;
    copy_row(reinterpret_cast<U*>(out), ocs, reinterpret_cast<const U*>(bias), 1, n, rows_copied_by_loop());
}

// Work items (rows of an operand, pixels) in memory order of a C-contiguous
// operand, streamed in blocks of about kBlockBytes of output (parallel_blocks).
// Three forms of bias's loop measured on an AMD EPYC Zen 4 and not adopted
// (switched call by call in one process, [16, 4, 144, 144], [256, 4, 144, 144]
// and [64, 3, 49, 49], 1 and 2 threads, time ÷ this loop's): each row's place
// stepped along instead of divided out (float32, float16, bfloat16),
// 0.94-1.06x; rows in runs of one window row, their pointers stepped from row
// to row (as relative.cpp's for_each_run, which made the ALiBi/T5 adds
// 0.66-0.96x their time on short rows), 0.84-0.96x on float16/bfloat16 adds
// and 0.89-0.95x on copies (swin_bias, four formats), 0.90-0.99x on float32
// adds in cache and 0.98-1.04x on float64 ones, but 1.02-1.06x on float32
// and float64 [256, ...] out of cache (tight ranges); and the per-head [N, N] blocks
// copied out of the lookup rows once per call (what users cache), then added
// block by block (float32, float16), 0.94-1.50x. Against adding such a
// cached block with NumPy's `np.add` or PyTorch's `add_` (float32, calls
// alternated in one process), before rows found from their number (below):
// [16, 4, 144, 144] 0.44-0.49 of a read-modify-write pass at 2 threads, the
// best of those 1.1-1.6x faster (1.2-1.3x at one thread); their best time ÷
// this add's [64, ...] 0.82-1.40, [256, ...] 1.00-1.38. After (one run at one
// thread, two at two): [16, ...] 0.61-0.70 of the pass and 0.95-1.03,
// [64, ...] 1.27-1.59, [256, ...] 1.09-1.32.
constexpr std::int64_t kBlockBytes = std::int64_t(1) << 17;

template <bool kAdd, class T>
void bias(const SwinArgs& a, const void* x_v, const RowLayout* xl, void* out_v, const RowLayout& ol) {
    const T* x = static_cast<const T*>(x_v);
    T* out = static_cast<T*>(out_v);
    const T* lut = static_cast<const T*>(a.lut);
    const std::int64_t ww = a.ww, n = a.wh * ww, lut_len = (2 * a.wh - 1) * ww;
    const bool contiguous = ol.col_stride == 1 && (!kAdd || xl->col_stride == 1);
    // Blocks counted in the arithmetic's bytes (Wide<T>) when adding: a float16 sum costs what a float32 one does.
    const auto item_bytes = static_cast<std::int64_t>(kAdd ? sizeof(Wide<T>) : sizeof(T));
    // C-contiguous operands (rows_follow) find row `item` at item·n from their first, with no
    // offsets loaded and multiplied per row. On an AMD EPYC Zen 4 (calls switched one by one,
    // medians of 8, 1 / 2 threads) that took, of the offsets' time: float32 [16, 4, 144, 144]
    // 0.79 / 0.86, [64, 3, 49, 49] 0.78 / 0.89, [256, 4, 144, 144] 0.97 / 0.98; float64
    // 0.87-0.93 / 0.73-0.97; bfloat16 0.93-0.96 / 0.92-0.95; float16 0.97-1.00 / 0.96-0.97.
    const bool follow = ol.batches > 0 && rows_follow(ol, n, n) && (!kAdd || rows_follow(*xl, n, n));
    const T* x0 = follow && kAdd ? x + xl->batch_offsets[0] : nullptr;
    T* o0 = follow ? out + ol.batch_offsets[0] : nullptr;
    const auto rows = [&](auto follows, std::int64_t begin, std::int64_t end) POSENC_BLOCK_BODY {
        for (std::int64_t item = begin; item < end; ++item) {
            const std::int64_t b = item / n, n1 = item % n, i1 = n1 / ww, j1 = n1 % ww;
            const T* src = lut + ((b % a.heads) * ww + j1) * lut_len + (a.wh - 1 - i1) * ww;
            if constexpr (decltype(follows)::value) {
                row<kAdd, true>(kAdd ? x0 + item * n : nullptr, 1, src, o0 + item * n, 1, n);
            } else {
                const T* xi = kAdd ? x + xl->batch_offsets[b] + n1 * xl->row_stride : nullptr;
                T* oi = out + ol.batch_offsets[b] + n1 * ol.row_stride;
                if (contiguous) row<kAdd, true>(xi, 1, src, oi, 1, n);
                else row<kAdd, false>(xi, kAdd ? xl->col_stride : 0, src, oi, ol.col_stride, n);
            }
        }
    };
    parallel_blocks(ol.batches * n, n * item_bytes, kBlockBytes, n, [&](std::int64_t begin, std::int64_t end) {
        if (follow) rows(std::true_type{}, begin, end);
        else rows(std::false_type{}, begin, end);
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
};

POSENC_END_TARGET
