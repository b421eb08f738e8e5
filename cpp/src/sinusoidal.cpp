// Sinusoidal encodings: tables and the fused scale·x + PE. Compiled once per ISA.
#include "posenc/sinusoidal.hpp"

#include "posenc/angles.hpp"
#include "posenc/convert.hpp"
#include "posenc/parallel.hpp"
#include "posenc/buffer.hpp"

POSENC_BEGIN_TARGET
namespace {

// One row: out = PE (kAdd false) or scale·x + PE (kAdd true), in double,
// rounded once. Sine i sits at column 2i (interleaved) or i; its cosine right
// after it or `half` columns later. The contiguous case is its own
// instantiation so the loop vectorises without gathers.
template <bool kAdd, bool kInterleaved, bool kContiguous, class T>
inline void encode_row(const double* __restrict s, const double* __restrict c, std::int64_t half,
                       double scale, const T* x, std::int64_t xcs, T* out, std::int64_t ocs) {
    if (kContiguous) xcs = ocs = 1;
    constexpr std::int64_t step = kInterleaved ? 2 : 1;
    const std::int64_t cos_base = kInterleaved ? 1 : half;
#pragma omp simd
    for (std::int64_t i = 0; i < half; ++i) {
        const std::int64_t js = i * step, jc = cos_base + i * step;
        double vs = s[i], vc = c[i];
        if (kAdd) {
            vs = scale * load(x[js * xcs]) + vs;
            vc = scale * load(x[jc * xcs]) + vc;
        }
        out[js * ocs] = store<T>(vs);
        out[jc * ocs] = store<T>(vc);
    }
}

template <bool kAdd, class T>
inline void encode(const SinusoidalArgs& a, const double* s, const double* c, double scale, const T* x,
                   std::int64_t xcs, T* out, std::int64_t ocs) {
    const bool contiguous = ocs == 1 && (!kAdd || xcs == 1);
    const std::int64_t half = a.half;
    if (a.interleaved) {
        const std::int64_t pairs = a.cols / 2;
        if (contiguous) encode_row<kAdd, true, true>(s, c, pairs, scale, x, xcs, out, ocs);
        else encode_row<kAdd, true, false>(s, c, pairs, scale, x, xcs, out, ocs);
        if (a.cols % 2) {  // a row cut after a sine (never with kAdd: x rows are whole)
            const std::int64_t j = a.cols - 1;
            out[j * ocs] = store<T>(kAdd ? scale * load(x[j * xcs]) + s[pairs] : s[pairs]);
        }
    } else {
        if (contiguous) encode_row<kAdd, false, true>(s, c, half, scale, x, xcs, out, ocs);
        else encode_row<kAdd, false, false>(s, c, half, scale, x, xcs, out, ocs);
    }
}

// Rows [0, rows) in anchor blocks; each block of rows is encoded into
// batches [b0, b1) of every operand. Work items are (block, batch slice)
// pairs, so a short sequence with many batches still uses every thread.
template <bool kAdd, class T>
void run(const SinusoidalArgs& a, double scale, const T* x, const RowLayout* xl, T* out, const RowLayout& ol) {
    const std::int64_t half = a.half;
    const std::int64_t blocks = (a.rows + kAnchorRows - 1) / kAnchorRows;
    int threads = plan_threads(blocks * ol.batches, kAnchorRows * (a.cols + 4));
    const std::int64_t slices = blocks < threads ? (ol.batches < threads ? ol.batches : threads) : 1;
    const std::int64_t items = blocks * (slices > 0 ? slices : 1);
    threads = threads < items ? threads : static_cast<int>(items);

    Scratch scratch(2 * half * (threads + 1));
    const AngleStep step{scratch.data(), scratch.data() + half};
    sincos_scaled(1.0, a.inv_freq, scratch.data(), scratch.data() + half, half);

    parallel_chunks(items, threads, [&](std::int64_t begin, std::int64_t end, int t) {
        double* mine = scratch.data() + 2 * half * (t + 1);
        AngleRows angles(a.positions, a.inv_freq, half, step, mine, mine + half);
        for (std::int64_t item = begin; item < end; ++item) {
            const std::int64_t block = item / slices, slice = item % slices;
            const std::int64_t b0 = ol.batches * slice / slices, b1 = ol.batches * (slice + 1) / slices;
            const std::int64_t r0 = block * kAnchorRows;
            const std::int64_t r1 = r0 + kAnchorRows < a.rows ? r0 + kAnchorRows : a.rows;
            for (std::int64_t row = r0; row < r1; ++row) {
                angles.seek(row);
                for (std::int64_t b = b0; b < b1; ++b) {
                    T* o = out + ol.batch_offsets[b] + row * ol.row_stride;
                    const T* xi = kAdd ? x + xl->batch_offsets[b] + row * xl->row_stride : nullptr;
                    encode<kAdd>(a, angles.s(), angles.c(), scale, xi, kAdd ? xl->col_stride : 0, o,
                                 ol.col_stride);
                }
            }
        }
    });
}

template <class T>
void table(const SinusoidalArgs& a, void* out, const RowLayout& ol) {
    run<false, T>(a, 1.0, nullptr, nullptr, static_cast<T*>(out), ol);
}

template <class T>
void add(const SinusoidalArgs& a, double scale, const void* x, const RowLayout& xl, void* out,
         const RowLayout& ol) {
    run<true, T>(a, scale, static_cast<const T*>(x), &xl, static_cast<T*>(out), ol);
}

}  // namespace

extern const SinusoidalKernels sinusoidal = {
    {table<float>, table<double>, table<half_t>, table<bfloat16_t>},
    {add<float>, add<double>, add<half_t>, add<bfloat16_t>},
};

POSENC_END_TARGET
