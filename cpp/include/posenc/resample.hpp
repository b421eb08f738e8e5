// posenc/resample.hpp — resampling one axis of a table with precomputed taps.
//
// dst[o, i, c] = src[o, a_i, c] + Σ_k w[i, k]·(src[o, j[i, k], c] − src[o, a_i, c])
// for the `taps` source indices j[i, k] and weights w[i, k] of output index i
// (computed by the caller in float64, so every backend uses the same taps),
// a_i being the tap at floor(source coordinate): taps = 2 (linear, a_i =
// j[i, 0]) or taps = 4 (cubic, offsets -1..2, a_i = j[i, 1]). The weights
// sum to 1, so this is Σ_k w·src to float64 rounding; written around the
// anchor, a constant and a sample landing on a source row come out exactly.
// Computed in double; the result is rounded once when dst is not double.
#pragma once

#include <cstdint>

#include "posenc/dispatch.hpp"
#include "posenc/dtype.hpp"

namespace posenc {

struct ResampleArgs {
    std::int64_t outer;            // axes before the resampled one
    std::int64_t in_size;          // the resampled axis, in src
    std::int64_t out_size;         // and in dst
    std::int64_t inner;            // elements after it (contiguous)
    const std::int64_t* index;     // [out_size, taps], each in [0, in_size)
    const double* weights;         // [out_size, taps]
    std::int64_t taps;             // 2 or 4
};

// src and dst are C-contiguous [outer, in_size, inner] / [outer, out_size, inner].
using ResampleFn = void (*)(const ResampleArgs&, const void* src, void* dst);

// Indexed by the table dtype T: T → T, T → double (first axis of a 2-D
// resize, kept exact for the second) and double → T.
struct ResampleKernels {
    ResampleFn same[kNumFloatTypes];
    ResampleFn to_double[kNumFloatTypes];
    ResampleFn from_double[kNumFloatTypes];
};

POSENC_DECLARE_KERNELS(ResampleKernels, resample)

}  // namespace posenc
