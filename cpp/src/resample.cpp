// Resampling one table axis with precomputed taps (linear or cubic). Compiled once per ISA.
#include "posenc/vector_width_512.hpp"
#include "posenc/resample.hpp"

#include "posenc/chunks.hpp"
#include "posenc/parallel.hpp"

POSENC_BEGIN_TARGET
namespace {

// One output row: the taps are a compile-time count so the loop over them
// unrolls and the loop over c vectorises. Source rows are read a chunk at a
// time in their arithmetic type; the result, evaluated in double, is rounded
// once into out.
template <int kTaps, class S, class D>
inline void resample_row(const double* __restrict w, const std::int64_t* __restrict j, const S* plane,
                         std::int64_t n, D* out) {
    constexpr int kAnchor = kTaps == 2 ? 0 : 1;
    for_row<kDirect<S, true> && kDirect<D, true>>(n, [&](std::int64_t c0, auto m) POSENC_BLOCK_BODY {
        Wide<S> bufs[kTaps][kBlock];
        Result<D> res_buf[kBlock];
        const Wide<S>* __restrict rows[kTaps];
        for (int k = 0; k < kTaps; ++k) rows[k] = read_chunk(plane + j[k] * n + c0, 1, m, bufs[k]);
        Result<D>* __restrict res = result_chunk(out + c0, 1, res_buf);
#pragma omp simd
        for (std::int64_t c = 0; c < m; ++c) {
            const double b = rows[kAnchor][c];
            double delta = 0.0;
            for (int k = 0; k < kTaps; ++k)
                if (k != kAnchor) delta += w[k] * (static_cast<double>(rows[k][c]) - b);
            res[c] = static_cast<Result<D>>(b + delta);
        }
        write_chunk(res, out + c0, 1, m);
    });
}

// Output rows (o, i) are independent: threads take contiguous ranges of them,
// and each row is the same arithmetic whatever the split.
template <class S, class D>
void resample_axis(const ResampleArgs& a, const void* src_data, void* dst_data) {
    const S* src = static_cast<const S*>(src_data);
    D* dst = static_cast<D*>(dst_data);
    const std::int64_t rows = a.outer * a.out_size, n = a.inner;
    const int threads = plan_threads(rows, a.taps * n);
    parallel_chunks(rows, threads, [&](std::int64_t begin, std::int64_t end, int) {
        for (std::int64_t row = begin; row < end; ++row) {
            const std::int64_t o = row / a.out_size, i = row % a.out_size;
            const S* plane = src + o * a.in_size * n;
            if (a.taps == 2) resample_row<2>(a.weights + 2 * i, a.index + 2 * i, plane, n, dst + row * n);
            else resample_row<4>(a.weights + 4 * i, a.index + 4 * i, plane, n, dst + row * n);
        }
    });
}

}  // namespace

extern const ResampleKernels resample = {
    {resample_axis<float, float>, resample_axis<double, double>,
     resample_axis<half_t, half_t>, resample_axis<bfloat16_t, bfloat16_t>},
    {resample_axis<float, double>, resample_axis<double, double>,
     resample_axis<half_t, double>, resample_axis<bfloat16_t, double>},
    {resample_axis<double, float>, resample_axis<double, double>,
     resample_axis<double, half_t>, resample_axis<double, bfloat16_t>},
};

POSENC_END_TARGET
