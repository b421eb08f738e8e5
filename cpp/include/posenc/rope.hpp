// posenc/rope.hpp — kernels of the rotary family (RoPE), one table per ISA.
//
// x is seen as [groups, units, rows, cols]: `rows` is the sequence axis,
// `cols` the head dimension, `units` every other axis (heads, and the batch
// when all batches share positions) and `groups` the batch when positions
// differ per batch. Element offsets of each (group, unit) vector start are
// listed by the bindings, so any strides (negative too) are walked in place.
// A row's angles θ_j = position·ω_j are shared by every unit of its group:
// the trigonometry is done once per (group, row) and amortised over heads.
// Frequencies ω_j and the attention scaling come from the caller (Python,
// float64), so every backend uses the same ones. Arguments are validated by
// the bindings; kernels only touch the elements the layouts describe.
#pragma once

#include <cstdint>

#include "posenc/dispatch.hpp"
#include "posenc/dtype.hpp"

namespace posenc {

// Offsets (in elements) of the first element of vector (group g, unit u)
// at offsets[g·units + u], then row and column strides.
struct RopeLayout {
    const std::int64_t* offsets;
    std::int64_t row_stride;
    std::int64_t col_stride;
};

struct RopeArgs {
    std::int64_t groups, rows;
    // positions[(a·groups + g)·rows + r] for positions axis a, or start + r
    // when null (every group, every axis).
    const double* positions;
    double start;
    const double* inv_freq;  // [half]
    std::int64_t half;       // rotary_dim / 2; columns beyond 2·half pass through
    // M-RoPE: pair j takes its angle from positions axis pair_axis[j]; null: axis 0.
    const std::int64_t* pair_axis;
    double scale;      // attention scaling, multiplies cos and sin
    bool interleaved;  // pairs (2j, 2j+1), else (j, j + half)
    bool inverse;      // rotate by −θ
};

// One tensor to rotate (q, or k): x → out, out may be x itself (identical
// layout). Every operand of a call shares groups, rows and the angles.
struct RopeOperand {
    const void* x;
    RopeLayout xl;
    void* out;
    RopeLayout ol;
    std::int64_t units, cols;
    bool copy_tail;   // out is not x: copy the pass-through columns
    bool rows_outer;  // visit rows, then units (rows are the larger stride)
};

// Rotates every operand; the trigonometry of a row is done once for all.
using ApplyRopeFn = void (*)(const RopeArgs&, const RopeOperand* ops, int n_ops);
// cos[r, j] = scale·cos(position(r)·ω_j), sin likewise; [rows, half] each,
// contiguous, rounded once (groups must be 1, no M-RoPE).
using RopeCosSinFn = void (*)(const RopeArgs&, void* cos, void* sin);

struct RopeKernels {
    ApplyRopeFn apply[kNumFloatTypes];
    RopeCosSinFn cos_sin[kNumFloatTypes];
};

POSENC_DECLARE_KERNELS(RopeKernels, rope)

}  // namespace posenc
