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

// Whether the operand's rows follow each other in memory, batch after batch
// (a C-contiguous operand of `rows` rows of `cols` a batch): row k of the
// walk then starts k·cols after row 0.
inline bool rows_follow(const RowLayout& l, std::int64_t rows, std::int64_t cols) {
    if (l.col_stride != 1 || l.row_stride != cols) return false;
    for (std::int64_t b = 1; b < l.batches; ++b)
        if (l.batch_offsets[b] - l.batch_offsets[b - 1] != rows * cols) return false;
    return true;
}

}  // namespace posenc
