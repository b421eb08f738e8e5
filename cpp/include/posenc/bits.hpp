// posenc/bits.hpp — the bit pattern of a float or double, and back.
#pragma once

#include <cstdint>
#include <cstring>

#include "posenc/target.hpp"

POSENC_BEGIN_TARGET

inline std::uint32_t bits_of(float x) {
    std::uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    return u;
}
inline std::uint64_t bits_of(double x) {
    std::uint64_t u;
    std::memcpy(&u, &x, sizeof u);
    return u;
}
inline float float_of(std::uint32_t u) {
    float x;
    std::memcpy(&x, &u, sizeof x);
    return x;
}
inline double double_of(std::uint64_t u) {
    double x;
    std::memcpy(&x, &u, sizeof x);
    return x;
}

POSENC_END_TARGET
