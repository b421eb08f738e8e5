// posenc/swin.hpp — Swin's relative position bias, streamed, one table per ISA.
//
// Swin adds to the [N, N] scores of a wh × ww window (N = wh·ww, token n = (i, j),
// n = i·ww + j) the bias table[(i1 − i2 + wh − 1)·(2ww − 1) + (j1 − j2 + ww − 1), head]
// (Swin's relative_position_index gather). The block is Toeplitz-block-Toeplitz:
// row n1 = (i1, j1) is wh runs of ww, run i2 depends on the row offset i1 − i2 only
// and, inside a run, on j2 − j1 only. So the caller builds one lookup row per head
// and row offset,
//   lut[h, r, m] = table[r·(2ww − 1) + (2ww − 2 − m), h],   r = i1 − i2 + wh − 1,
// (the table's column reversed, so a run reads forwards) and run i2 of row (i1, j1)
// is the contiguous slice lut[h, i1 − i2 + wh − 1, ww − 1 − j1 : 2ww − 1 − j1].
// No [N, N] index is built; the kernels are adds (or copies) at memory speed.
// Arguments are validated by the bindings.
#pragma once

#include <cstdint>

#include "posenc/dispatch.hpp"
#include "posenc/dtype.hpp"
#include "posenc/positions.hpp"

namespace posenc {

struct SwinArgs {
    const void* lut;       // [heads, 2wh − 1, 2ww − 1], C-contiguous, the operand's dtype
    std::int64_t heads;    // batch b of the operand is head b mod heads
    std::int64_t wh, ww;   // the window; operand rows and columns are N = wh·ww
};

// out[b, n1, n2] = x[b, n1, n2] + bias (kAdd), or the bias itself when x is null;
// the sum is exact and rounded once to the dtype. x and out may be the same memory.
using SwinBiasFn = void (*)(const SwinArgs&, const void* x, const RowLayout* x_layout, void* out,
                            const RowLayout& out_layout);

struct SwinKernels {
    SwinBiasFn bias[kNumFloatTypes];
};

POSENC_DECLARE_KERNELS(SwinKernels, swin)

}  // namespace posenc
