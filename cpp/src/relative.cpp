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

template <class Body>
inline void for_each_row(const ToeplitzArgs& a, std::int64_t batches, std::int64_t item_size, Body&& body) {
    // body(b, h, i, left) for row i of batch b, whose head is h = b mod lut_rows,
    // with `left` rows of the same block after it. The indices advance by
    // increments: rows of Swin-sized windows are a few hundred bytes, and
    // three integer divisions per row cost as much as the add.
    parallel_blocks(batches * a.rows, a.cols * a.step * item_size, kBlockBytes, a.cols * a.step,
                    [&](std::int64_t first, std::int64_t end) {
        std::int64_t b = first / a.rows, i = first % a.rows, h = b % a.lut_rows;
        for (std::int64_t item = first; item < end; ++item) {
            body(b, h, i, end - 1 - item);
            if (++i == a.rows) {
                i = 0;
                ++b;
                h = h + 1 == a.lut_rows ? 0 : h + 1;
            }
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
    for_each_row(a, ol.batches, sizeof(U), [&](std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t) {
        const U* src = reinterpret_cast<const U*>(lut_row(a, sizeof(U), h, i));
        copy_row(out + ol.batch_offsets[b] + i * ol.row_stride, cs, src, 1, n, by_loop);
    });
}

template <class T>
void add(const ToeplitzArgs& a, const void* x_v, const RowLayout& xl, void* out_v, const RowLayout& ol) {
    const T* x = static_cast<const T*>(x_v);
    T* out = static_cast<T*>(out_v);
    const bool contiguous = xl.col_stride == 1 && ol.col_stride == 1;
    const bool prefetch = relative_adds_prefetch() && rows_follow(xl, a.rows, a.cols);
    // Rows found from their number alone where both operands' rows follow each other, as vision.cpp's
    // Swin bias finds them (0.73-1.00x its time there), took 0.85-1.21x the time here on a Zen 4 (ALiBi and
    // T5 adds, four formats, 1 and 2 threads, calls switched one by one; float32 windows [256, 4, 144,
    // 144] 1.21x and float16 1.02-1.12x at one thread, bfloat16 0.89-1.02x): for_each_row's stepped
    // indices already leave little per row. Not adopted. Nor the contiguous case as an instantiation of
    // the whole row loop (its branch hoisted out of the loop; a standalone copy of this kernel on the
    // same buffers took 0.81-0.90x the time that way, and 0.67-0.81x with plain nested loops over b and
    // i): in the kernels float32 ALiBi windows [16, 4, 144, 144] took 0.70x the time and T5 [8, 8, 64,
    // 256] 0.64x at one thread, but float16 windows [256, ...] and T5 [8, 8, 64, 256] 1.08-1.09x at
    // one and two threads, and float64 T5 [8, 8, 64, 256] 1.08x at one (0.64-1.09x over 40 cases).
    // Blocks are counted in the bytes of the arithmetic (Wide<T>), not of the storage: a float16 element
    // costs what a float32 one does, and in 256 KiB blocks of storage float16 scores [8, 64, 256] were one
    // block, left to one thread (1.6x float32's time at 2 threads, AMD EPYC Zen 4).
    for_each_row(a, ol.batches, sizeof(Wide<T>), [&](std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t left) {
        const T* bias = reinterpret_cast<const T*>(lut_row(a, sizeof(T), h, i));
        const T* xi = x + xl.batch_offsets[b] + i * xl.row_stride;
        if (prefetch) prefetch_ahead(xi, a.cols, left);
        T* oi = out + ol.batch_offsets[b] + i * ol.row_stride;
        // x and out are either the same memory or disjoint (the Python layer refuses partial overlap).
        // The contiguous case is its own instantiation, compiled without strides.
        if (contiguous) add_rows<true>(xi, 1, bias, 1, oi, 1, a.cols);
        else add_rows<false>(xi, xl.col_stride, bias, 1, oi, ol.col_stride, a.cols);
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
