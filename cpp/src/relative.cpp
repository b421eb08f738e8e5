// Relative positions: Toeplitz blocks streamed out of per-head lookup rows, and the
// T5 bucket boundaries. Compiled once per ISA.
#include "posenc/vector_width_256.hpp"
#include "posenc/relative.hpp"

#include <cmath>

#include "posenc/chunks.hpp"
#include "posenc/copy_row.hpp"
#include "posenc/parallel.hpp"
#include "posenc/prefetch.hpp"
#include "posenc/rows_follow.hpp"

POSENC_BEGIN_TARGET
namespace {

// ---------------------------------------------------------------- streaming

// Row i of a batch whose lookup row (head) is h starts at this element.
inline const char* lut_row(const ToeplitzArgs& a, std::size_t item_size, std::int64_t h, std::int64_t i) {
    const std::int64_t lut_len = (a.rows + a.cols - 1) * a.step;
    const std::int64_t index = h * lut_len + (a.rows - 1 - i) * a.step;
    return static_cast<const char*>(a.lut) + index * static_cast<std::int64_t>(item_size);
}

// Work items are (batch, row) pairs in memory order of a C-contiguous operand,
// streamed in blocks of about kBlockBytes of output (parallel_blocks).
constexpr std::int64_t kBlockBytes = std::int64_t(1) << 18;

// body(b, h, i, count, left) for rows i .. i + count − 1 of batch b, whose head is
// h = b mod lut_rows: a run of consecutive rows of one batch, with `left` rows
// of the same block after it. Within a run every row pointer moves by a
// constant step (the lookup row back by `step`, the operands by their row
// stride), so bodies step pointers and no row works out its place: rows of
// Swin-sized windows are a few hundred bytes, and the place of each (its
// batch offset loaded, row strides multiplied, the invariants reloaded from
// the stack) cost as much as the row's add. Against rows placed one by one
// (AMD EPYC Zen 4, calls switched one by one in one process, medians of 8,
// 1 / 2 threads), time ÷ theirs: the add on ALiBi windows [16, 4, 144, 144]
// float32 0.81 / 0.81, float16 0.74 / 0.75, bfloat16 0.66 / 0.69, float64
// 0.91 / 0.92; on [256, 4, 144, 144] 0.74-1.01 (float32 and float64 at two
// threads, out of cache, 1.01); T5 [8, 8, 64, 256] 0.73-0.96; rows of 1024
// ([1, 16, 1024, 1024], ALiBi and T5) 0.95-1.06. The copy's short rows
// (alibi_bias [4, 144, 144], t5_bias [16, 64, 64] and [16, 256, 256]) 0.75-1.02
// over two runs in float32, float16 and float64 (float32 t5_bias
// [16, 256, 256] at two threads 1.17 in one, 0.77 in the other); its long
// ones (alibi_bias [16, 1024, 1024], relative_positions [4096, 4096])
// 0.56-1.38, from one build to the next, whose copy loops are the same
// instructions: there this change is not what decides. Each step alone had
// been mixed: rows found from their number (0.85-1.21x), the contiguous
// branch hoisted out of the row loop (0.64-1.09x).
template <class Body>
inline void for_each_run(const ToeplitzArgs& a, std::int64_t batches, std::int64_t item_size, Body&& body) {
    parallel_blocks(batches * a.rows, a.cols * a.step * item_size, kBlockBytes, a.cols * a.step,
                    [&](std::int64_t first, std::int64_t end) {
        std::int64_t b = first / a.rows, i = first % a.rows, h = b % a.lut_rows;
        for (std::int64_t item = first; item < end;) {
            const std::int64_t count = end - item < a.rows - i ? end - item : a.rows - i;
            item += count;
            body(b, h, i, count, end - item);
            i = 0;
            ++b;
            h = h + 1 == a.lut_rows ? 0 : h + 1;
        }
    });
}

// Prefetches the n elements kAheadBytes past the n at x, clipped to the
// `left` rows of n elements that follow them (prefetch.hpp). Measured on one
// thread against a read-modify-write pass of the same buffer: float32 Swin
// windows [256, 4, 144, 144] (85 MB) 1.4x with the hardware prefetchers
// alone, 1.05x with this; float64 1.3x -> 1.05x; [64, 4, 144, 144] and
// [1, 16, 1024, 1024] unchanged within the noise (1.1-1.3x). On an AMD EPYC
// Zen 4 the hardware prefetchers do better alone (relative_adds_prefetch:
// off there, cpu.cpp). add_alibi without it ÷ with it, the two switched call
// by call in one process (alternating order, medians of 20), 2 / 1 threads:
// [1, 16, 1024, 1024] float32 0.88-0.91 / 0.76-0.78 (then at the
// read-modify-write pass's time, 1.02-1.06 / 1.07-1.11), float64 0.77-0.86 /
// 0.66, float16 0.95 / 0.99, bfloat16 0.95 / 0.93; windows
// [256, 4, 144, 144] 0.90-1.00 / 0.92-1.05 over the four formats, and
// [64, 4, 144, 144] 0.93-1.01 (float64 0.99-1.09).
template <class T>
inline void prefetch_ahead(const T* x, std::int64_t n, std::int64_t left) {
    const std::int64_t size = static_cast<std::int64_t>(sizeof(T));
    const std::int64_t last = (left + 1) * n * size;  // bytes from x to the end of the block's rows
    const std::int64_t hi = kAheadBytes + n * size < last ? kAheadBytes + n * size : last;
    if (hi > kAheadBytes) prefetch_lines(reinterpret_cast<const char*>(x) + kAheadBytes, hi - kAheadBytes);
}

// U is an unsigned integer of the element width (copy_row.hpp).
template <class U>
void copy(const ToeplitzArgs& a, void* out_v, const RowLayout& ol) {
    U* out = static_cast<U*>(out_v);
    const std::int64_t n = a.cols * a.step, cs = ol.col_stride;
    const bool by_loop = rows_copied_by_loop();
    for_each_run(a, ol.batches, sizeof(U), [&](std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t count,
                                               std::int64_t) {
        const U* src = reinterpret_cast<const U*>(lut_row(a, sizeof(U), h, i));
        U* dst = out + ol.batch_offsets[b] + i * ol.row_stride;
        for (std::int64_t k = 0; k < count; ++k, src -= a.step, dst += ol.row_stride)
            copy_row(dst, cs, src, 1, n, by_loop);
    });
}

// `count` rows of the sum out = x + bias, each row's lookup row `bias_step` before the last one's. x
// and out are either the same memory or disjoint (the Python layer refuses partial overlap). The
// contiguous case is its own instantiation, compiled without strides.
template <bool kContiguous, class T>
void add_run(const T* bias, std::int64_t bias_step, const T* x, std::int64_t xrs, std::int64_t xcs, T* out,
             std::int64_t ors, std::int64_t ocs, std::int64_t n, std::int64_t count, std::int64_t left, bool prefetch) {
    for (std::int64_t k = 0; k < count; ++k, bias -= bias_step, x += xrs, out += ors) {
        if (prefetch) prefetch_ahead(x, n, left + count - 1 - k);
        add_rows<kContiguous>(x, xcs, bias, 1, out, ocs, n);
    }
}

template <class T>
void add(const ToeplitzArgs& a, const void* x_v, const RowLayout& xl, void* out_v, const RowLayout& ol) {
    const T* x = static_cast<const T*>(x_v);
    T* out = static_cast<T*>(out_v);
    const bool contiguous = xl.col_stride == 1 && ol.col_stride == 1;
    const bool prefetch = relative_adds_prefetch() && rows_follow(xl, a.rows, a.cols);
    // Blocks are counted in the bytes of the arithmetic (Wide<T>), not of the storage: a float16 element
    // costs what a float32 one does, and in 256 KiB blocks of storage float16 scores [8, 64, 256] were one
    // block, left to one thread (1.6x float32's time at 2 threads, AMD EPYC Zen 4).
    for_each_run(a, ol.batches, sizeof(Wide<T>), [&](std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t count,
                                                     std::int64_t left) {
        const T* bias = reinterpret_cast<const T*>(lut_row(a, sizeof(T), h, i));
        const T* xi = x + xl.batch_offsets[b] + i * xl.row_stride;
        T* oi = out + ol.batch_offsets[b] + i * ol.row_stride;
        if (contiguous)
            add_run<true>(bias, a.step, xi, xl.row_stride, 1, oi, ol.row_stride, 1, a.cols, count, left, prefetch);
        else
            add_run<false>(bias, a.step, xi, xl.row_stride, xl.col_stride, oi, ol.row_stride, ol.col_stride, a.cols,
                           count, left, prefetch);
    });
}

// ---------------------------------------------------------------- ALiBi's rows

// The values of alibi_bias's lookup rows (slope·d in float64, rounded once), built here so that a
// decode step's add_alibi is one call instead of half a dozen NumPy operations on a few elements, in
// every dtype.
template <class T>
void alibi_rows(const double* slopes, std::int64_t heads, std::int64_t first, std::int64_t length, bool symmetric,
                void* out) {
    T* row = static_cast<T*>(out);
    for (std::int64_t h = 0; h < heads; ++h, row += length)
        for (std::int64_t m = 0; m < length; ++m) {
            const std::int64_t d = first + m;
            row[m] = store<T>(slopes[h] * static_cast<double>(symmetric ? (d < 0 ? d : -d) : d));
        }
}

// ---------------------------------------------------------------- T5 boundaries

// T5's log bucket of a distance n ≥ max_exact, before the clamp, in the reference's
// float32 arithmetic (Hugging Face T5Attention._relative_position_bucket, after
// mesh-tensorflow):  int(log(float(n) / max_exact) / log(max_distance / max_exact) · (half − max_exact)).
// Each operation rounds to float32; the divisor is the Python float log rounded to
// float32 as PyTorch does with a scalar; the log is the correctly rounded float32 one
// (float64 log of the float32 argument, rounded once). Monotone in n, since every
// step is a monotone, correctly rounded operation.
struct T5Chain {
    float max_exact, log_ratio, log_buckets;

    std::int64_t operator()(std::int64_t n) const {
        const float x = static_cast<float>(n) / max_exact;
        const float log_x = static_cast<float>(std::log(static_cast<double>(x)));
        const float scaled = log_x / log_ratio * log_buckets;  // two float32 roundings, as the reference
        return static_cast<std::int64_t>(scaled);               // truncation toward zero (scaled ≥ 0)
    }
};

// Distances are searched up to 2^62: past that, |d| of an int64 cannot be taken anyway.
constexpr std::int64_t kFarthest = std::int64_t(1) << 62;
constexpr std::int64_t kNever = INT64_MAX;

void t5_thresholds(std::int64_t half, std::int64_t max_exact, std::int64_t max_distance, std::int64_t* out) {
    const T5Chain chain{static_cast<float>(max_exact),
                        static_cast<float>(std::log(static_cast<double>(max_distance) / static_cast<double>(max_exact))),
                        static_cast<float>(half - max_exact)};
    // Thresholds increase with c, so each search starts at the previous one. Since
    // the chain is monotone, a bisection finds the exact first distance: the float32
    // rounding decides, not the real-valued formula.
    std::int64_t lo = max_exact;
    for (std::int64_t c = 1; c < half - max_exact; ++c) {
        std::int64_t hi = lo > max_distance ? lo : max_distance;
        while (hi < kFarthest && chain(hi) < c) hi = hi > kFarthest / 2 ? kFarthest : 2 * hi;
        if (chain(hi) < c) {
            for (; c < half - max_exact; ++c) out[c - 1] = kNever;
            return;
        }
        // chain(lo − 1) < c ≤ chain(hi) (lo − 1 is below every distance with offset ≥ c).
        std::int64_t below = lo - 1;
        while (hi - below > 1) {
            const std::int64_t mid = below + (hi - below) / 2;
            if (chain(mid) >= c) hi = mid;
            else below = mid;
        }
        out[c - 1] = hi;
        lo = hi;
    }
}

}  // namespace

extern const RelativeKernels relative = {
    {copy<std::uint8_t>, copy<std::uint16_t>, copy<std::uint32_t>, copy<std::uint64_t>},
    {add<float>, add<double>, add<half_t>, add<bfloat16_t>},
    {alibi_rows<float>, alibi_rows<double>, alibi_rows<half_t>, alibi_rows<bfloat16_t>},
    t5_thresholds,
};

POSENC_END_TARGET
