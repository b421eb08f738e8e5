// posenc/sinusoidal.hpp — kernels of the sinusoidal family, one table per ISA.
//
// An encoding row for position p holds sin(p·ω_i) and cos(p·ω_i) for the
// `half` frequencies ω_i (computed by the caller, in float64, so every
// backend uses the same ω): interleaved [s0 c0 s1 c1 ...] or split
// [s0 s1 ... c0 c1 ...]. Arguments are validated by the bindings; kernels
// assume valid shapes and only touch the elements the layouts describe.
#pragma once

#include <cstdint>

#include "posenc/dispatch.hpp"
#include "posenc/dtype.hpp"
#include "posenc/positions.hpp"

namespace posenc {

struct SinusoidalArgs {
    Positions positions;
    std::int64_t rows;
    const double* inv_freq;
    std::int64_t half;
    bool interleaved;
    // Columns written per row: 2·half, or fewer for an interleaved row cut
    // short (the 2-D/3-D layouts cut the last axis' channels to `dim`).
    std::int64_t cols;
};

// out[row, :] = encoding(position(row)) for `rows` rows; out has one batch.
using SinusoidalTableFn = void (*)(const SinusoidalArgs&, void* out, const RowLayout& out_layout);
// out[b, row, :] = scale·x[b, row, :] + encoding(position(row)), rounded once.
// x and out may be the same memory (identical layouts).
using AddSinusoidalFn = void (*)(const SinusoidalArgs&, double scale, const void* x,
                                 const RowLayout& x_layout, void* out, const RowLayout& out_layout);

struct SinusoidalKernels {
    SinusoidalTableFn table[kNumFloatTypes];
    AddSinusoidalFn add[kNumFloatTypes];
};

POSENC_DECLARE_KERNELS(SinusoidalKernels, sinusoidal)

}  // namespace posenc
