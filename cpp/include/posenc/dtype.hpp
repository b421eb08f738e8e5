// posenc/dtype.hpp — the element types kernels read and write.
//
// Kernels compute in double (or float where a bound is stated) and round to
// the storage type once. float16 and bfloat16 are stored as raw 16-bit
// patterns; their conversions live in convert.hpp.
#pragma once

#include <cstdint>

namespace posenc {

enum class DType : int { f32 = 0, f64 = 1, f16 = 2, bf16 = 3 };
constexpr int kNumFloatTypes = 4;

struct half_t { std::uint16_t bits; };
struct bfloat16_t { std::uint16_t bits; };

}  // namespace posenc
