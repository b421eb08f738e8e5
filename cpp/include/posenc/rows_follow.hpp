// posenc/rows_follow.hpp — whether an operand's rows lie one after another in memory.
//
// A kernel helper, so in the per-ISA namespace (target.hpp): positions.hpp, where
// RowLayout lives, is shared with the bindings and holds no code.
#pragma once

#include <cstdint>

#include "posenc/positions.hpp"
#include "posenc/target.hpp"

POSENC_BEGIN_TARGET

// Whether the operand's rows follow each other in memory, batch after batch
// (a C-contiguous operand of `rows` rows of `cols` a batch): row k of the
// walk then starts k·cols after row 0.
inline bool rows_follow(const RowLayout& l, std::int64_t rows, std::int64_t cols) {
    if (l.col_stride != 1 || l.row_stride != cols) return false;
    for (std::int64_t b = 1; b < l.batches; ++b)
        if (l.batch_offsets[b] - l.batch_offsets[b - 1] != rows * cols) return false;
    return true;
}

POSENC_END_TARGET
