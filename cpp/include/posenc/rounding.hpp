// posenc/rounding.hpp — float64 values rounded once to a result dtype, one table per ISA.
//
// Some results are computed with NumPy in float64 (a vision table's rows, DETR's
// distinct sines, a T5 table given in another dtype than the scores) and then
// handed to a kernel in the result's dtype. They are rounded here, as the kernels
// round their own results (convert.hpp: to nearest even, once): NumPy rounds
// float64 to bfloat16 through float32 (ml_dtypes), which can round twice, so the
// NumPy layer's exact rounding (_rounding.round_once) takes half a dozen passes
// for bfloat16 where this takes one.
#pragma once

#include <cstdint>

#include "posenc/dispatch.hpp"
#include "posenc/dtype.hpp"

namespace posenc {

// dst[j] = src[j] rounded once to the table entry's dtype, j < n (dst: n elements of it).
using RoundFn = void (*)(const double* src, std::int64_t n, void* dst);

struct RoundingKernels {
    RoundFn round[kNumFloatTypes];
};

POSENC_DECLARE_KERNELS(RoundingKernels, rounding)

}  // namespace posenc
