// posenc/positions.hpp — the positions a kernel encodes: an array, or start + k.
#pragma once

#include <cstdint>

namespace posenc {

// Position k is values[k] when values is set, else start + k. Positions are
// doubles: integers are exact up to 2^53, far past any sequence length.
struct Positions {
    const double* values;
    double start;
};

// Where the k-th row of a [batch..., rows, cols] operand lives: element
// offsets of each batch (outer) index, then row and column strides, all in
// elements of the operand's dtype (negative strides allowed).
struct RowLayout {
    const std::int64_t* batch_offsets;
    std::int64_t batches;
    std::int64_t row_stride;
    std::int64_t col_stride;
};

}  // namespace posenc
