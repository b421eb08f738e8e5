// posenc/vision.hpp — kernels of the vision family, one table per ISA: Swin's
// relative position bias (streamed). DETR's sine embedding is a two-table
// gather, learned.hpp's lookup_parts.
//
// Swin.
// Swin adds to the [N, N] scores of a wh × ww window (N = wh·ww, token n = (i, j),
// n = i·ww + j) the bias table[(i1 − i2 + wh − 1)·(2ww − 1) + (j1 − j2 + ww − 1), head]
// (Swin's relative_position_index gather). The block is Toeplitz-block-Toeplitz: row
// n1 = (i1, j1) is wh runs of ww, run i2 depending on the row offset i1 − i2 and,
// inside it, on j2 − j1 only. For a fixed column j1 of the query, the runs of every
// row offset can be laid end to end once,
//   lut[h, j1, q·ww + j2] = table[(2wh − 2 − q)·(2ww − 1) + (j1 − j2 + ww − 1), h],
//   q = 0 .. 2wh − 2,
// and then the whole row (i1, j1) is ONE contiguous slice of it,
//   lut[h, j1, (wh − 1 − i1)·ww : (wh − 1 − i1)·ww + N],
// a Toeplitz structure in i1 with a step of ww. So each row of N is a single
// contiguous add of N elements, as long rows are, whatever ww is; the lookup rows
// hold heads·ww·(2wh − 1)·ww values (4·12·23·12 floats = 52 KiB for window 12), not
// an [N, N] index or bias.
//
// Tried first and rejected: adding each row as wh runs of ww straight from the
// per-(head, row offset) table rows. Runs of 12 do not fill a vector loop (a
// 16-lane AVX-512 loop runs its scalar tail), and the add reached 0.47 of the
// 2-thread read-modify-write ceiling on [256, 4, 144, 144] float32.
// Arguments are validated by the bindings.
#pragma once

#include <cstdint>

#include "posenc/dispatch.hpp"
#include "posenc/dtype.hpp"
#include "posenc/positions.hpp"

namespace posenc {

struct SwinArgs {
    const void* lut;       // [heads, ww, (2wh − 1)·ww], C-contiguous, the operand's dtype
    std::int64_t heads;    // batch b of the operand is head b mod heads
    std::int64_t wh, ww;   // the window; operand rows and columns are N = wh·ww
};

// out[b, n1, n2] = x[b, n1, n2] + bias (x given), or the bias itself when x is null;
// the sum is exact and rounded once to the dtype. x and out may be the same memory.
using SwinBiasFn = void (*)(const SwinArgs&, const void* x, const RowLayout* x_layout, void* out,
                            const RowLayout& out_layout);

struct VisionKernels {
    SwinBiasFn bias[kNumFloatTypes];
};

POSENC_DECLARE_KERNELS(VisionKernels, vision)

}  // namespace posenc
