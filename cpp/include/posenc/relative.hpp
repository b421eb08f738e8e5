// posenc/relative.hpp — kernels of the relative-position family, one table per ISA.
//
// Every relative scheme (T5 buckets and bias, ALiBi, Shaw-style clipped
// distances) depends on the distance j − i only: its [q, k] block is a
// Toeplitz matrix. So the caller builds one lookup row per head holding the
// value of each of the q + k − 1 distances the block contains, and these
// kernels stream rows out of it: row i of the block is the contiguous slice
//   lut[q − 1 − i : q − 1 − i + k]
// (lut[m] is the value at distance m − (q − 1) − offset). No index matrix is
// built and no logarithm is taken per element; the kernels are copies and
// adds at memory speed. Arguments are validated by the bindings.
#pragma once

#include <cstdint>

#include "posenc/dispatch.hpp"
#include "posenc/dtype.hpp"
#include "posenc/positions.hpp"

namespace posenc {

// The lookup rows of a [.., rows, cols] Toeplitz block.
struct ToeplitzArgs {
    const void* lut;         // [lut_rows, (rows + cols − 1)·step], C-contiguous, the operand's dtype
    std::int64_t lut_rows;   // batch b of the operand reads lut row b mod lut_rows (its head)
    std::int64_t rows;       // q_len
    std::int64_t cols;       // k_len
    std::int64_t step;       // elements per distance: 1, or d for rows of embeddings
};

// out[b, i, :] = lut[b mod lut_rows, (rows−1−i)·step : (rows−1−i+cols)·step]; out's
// layout has rows·(cols·step) elements per batch. A pure copy, so one kernel per
// element width serves every dtype of that width.
using ToeplitzCopyFn = void (*)(const ToeplitzArgs&, void* out, const RowLayout& out_layout);
// out[b, i, j] = x[b, i, j] + lut[b mod lut_rows, rows−1−i+j], the exact sum rounded once to
// the dtype (the lut already holds the bias in that dtype). x and out may be the same memory.
using ToeplitzAddFn = void (*)(const ToeplitzArgs&, const void* x, const RowLayout& x_layout, void* out,
                               const RowLayout& out_layout);
// The T5 log-bucket boundaries: out[c − 1] = the smallest distance n ≥ max_exact whose bucket
// (as the T5 reference computes it in float32) is ≥ max_exact + c, for c = 1 .. half − max_exact − 1;
// INT64_MAX where no distance up to 2^62 reaches it. Requires 1 ≤ max_exact < max_distance.
using T5ThresholdsFn = void (*)(std::int64_t half, std::int64_t max_exact, std::int64_t max_distance,
                                std::int64_t* out);

// ALiBi's lookup rows, [heads, length] C-contiguous in the scores' dtype: row h holds slopes[h]·d
// (−slopes[h]·|d| when symmetric) for d = first, first + 1, …, first + length − 1, evaluated in double
// and rounded once (|d| ≤ 2^54: no overflow).
using AlibiRowsFn = void (*)(const double* slopes, std::int64_t heads, std::int64_t first, std::int64_t length,
                             bool symmetric, void* out);

enum class Width : int { w1 = 0, w2 = 1, w4 = 2, w8 = 3 };
constexpr int kNumWidths = 4;

struct RelativeKernels {
    ToeplitzCopyFn copy[kNumWidths];
    ToeplitzAddFn add[kNumFloatTypes];
    AlibiRowsFn alibi_rows[kNumFloatTypes];
    T5ThresholdsFn t5_thresholds;
};

POSENC_DECLARE_KERNELS(RelativeKernels, relative)

}  // namespace posenc
