// posenc/rope.hpp — kernels of the rotary family (RoPE), one table per ISA.
//
// x is seen as [groups, units, rows, cols]: `rows` is the sequence axis,
// `cols` the head dimension, `units` every other axis (heads, and the batch
// when all batches share positions) and `groups` the batch when positions
// differ per batch. Element offsets of each (group, unit) vector start are
// listed by the bindings, so any strides (negative too) are walked in place.
// A row's angles θ_j = position·ω_j are shared by every unit of its group:
// the trigonometry is done once per (group, row) and amortised over heads.
// Two other angle sources share the rest of the kernel: multi-axis
// coordinates times frequencies (θ_j = Σ_a coords[a]·freqs[a, j]: vision,
// video and diffusion transformers), and float64 cos/sin tables the caller
// computed (Transformers' precomputed cos/sin, xPos).
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
    // Angle sources replacing positions·inv_freq (inv_freq, positions and
    // pair_axis unused; at most one of them set):
    // coords·freqs: θ_j = Σ_a coords[(g·rows + r)·axes + a]·freqs[a·half + j],
    // in float64, summed in axis order; coords [groups, rows, axes], freqs [axes, half].
    const double* coords = nullptr;
    const double* freqs = nullptr;
    std::int64_t axes = 0;
    // Per-head frequencies: freqs is [freq_heads, axes, half] and unit u (whose
    // innermost unit axis is the heads axis) takes freqs[u mod freq_heads]; 0: shared.
    std::int64_t freq_heads = 0;
    // Tables: cos θ = cos_table[(g·rows + r)·half + j], sin likewise, float64
    // [groups, rows, half] (times `scale` like computed ones).
    const double* cos_table = nullptr;
    const double* sin_table = nullptr;
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
// contiguous, rounded once (groups must be 1, no M-RoPE, no tables; with
// coords, row r takes coords[r·axes ...]).
using RopeCosSinFn = void (*)(const RopeArgs&, void* cos, void* sin);

struct RopeKernels {
    ApplyRopeFn apply[kNumFloatTypes];
    RopeCosSinFn cos_sin[kNumFloatTypes];
};

POSENC_DECLARE_KERNELS(RopeKernels, rope)

}  // namespace posenc
