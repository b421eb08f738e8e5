// posenc/learned.hpp — kernels of the learned (table) family, one table per ISA.
//
// A learned positional embedding is a [num_positions, dim] table indexed by
// integer positions. The operand rows (x, out, grad) are the rows of a
// [batch..., rows, dim] layout, numbered k = b·rows + r in C order; row k
// uses position positions[k % period], which is how a positions array equal
// to a trailing part of the operand's leading shape broadcasts. Positions are
// validated (0 ≤ p < num_positions) by the bindings before a kernel runs.
#pragma once

#include <cstdint>

#include "posenc/dispatch.hpp"
#include "posenc/dtype.hpp"
#include "posenc/positions.hpp"

namespace posenc {

struct EmbeddingArgs {
    const std::int64_t* positions;  // `period` entries, each in [0, num_positions)
    std::int64_t period;            // > 0
    std::int64_t rows;              // rows per batch of the operand layouts
    std::int64_t dim;               // columns of every operand and of the table
    const void* table;              // [num_positions, dim], any strides
    std::int64_t table_row_stride;  // in elements
    std::int64_t table_col_stride;
};

// out[k, :] = table[positions[k % period], :] (an exact copy).
using EmbeddingLookupFn = void (*)(const EmbeddingArgs&, void* out, const RowLayout& out_layout);
// out[k, :] = x[k, :] + table[positions[k % period], :], in double, rounded once.
// x and out may be the same memory (identical layouts).
using EmbeddingAddFn = void (*)(const EmbeddingArgs&, const void* x, const RowLayout& x_layout, void* out,
                                const RowLayout& out_layout);
// out[p, :] = Σ grad[k, :] over the rows k with positions[k % period] = p, in
// increasing k, accumulated in float (float32/float16/bfloat16) or double
// (float64) and rounded once. `out` is a C-contiguous [num_positions, dim]
// array; rows of positions no row maps to are zero. args.table is unused.
using EmbeddingGradFn = void (*)(const EmbeddingArgs&, std::int64_t num_positions, const void* grad,
                                 const RowLayout& grad_layout, void* out);

// Rows of tables side by side: out[k, c_p : c_p + parts[p].cols] is row
// parts[p].index[k % parts[p].period] of table p, the parts in order
// (c_0 = 0, each next c after the last's columns), one pass over out writing
// each of its rows whole. DETR's y and x features (tables of its distinct
// positions), concat_positional's x and pe (x's own rows, pe's repeated per
// batch), the grid encodings' per-axis blocks (each axis' row of a cell). A
// copy of bit patterns, so the kernels go by element width, not dtype.
struct LookupPart {
    const void* data;            // [index rows, cols], any strides
    std::int64_t cols;
    std::int64_t row_stride;     // in elements
    std::int64_t col_stride;
    const std::int64_t* index;   // `period` rows of data (checked by the bindings)
    std::int64_t period;         // > 0
};
constexpr int kMaxLookupParts = 4;  // a 3-D grid has three
struct LookupPartsArgs {
    const LookupPart* parts;
    int count;  // 1 .. kMaxLookupParts
    std::int64_t rows;  // rows per batch of out's layout
};
using LookupPartsFn = void (*)(const LookupPartsArgs&, void* out, const RowLayout& out_layout);

struct LearnedKernels {
    EmbeddingLookupFn lookup[kNumFloatTypes];
    EmbeddingAddFn add[kNumFloatTypes];
    EmbeddingGradFn grad[kNumFloatTypes];
    LookupPartsFn lookup_parts[4];  // by element width: 1, 2, 4, 8 bytes
};

POSENC_DECLARE_KERNELS(LearnedKernels, learned)

}  // namespace posenc
