// posenc/vector_width_512.hpp — this kernel source uses the path's widest vectors.
//
// Included first by kernel sources dominated by double-precision arithmetic
// (the sine/cosine recurrence of sinusoidal tables, interpolation), where
// 512-bit vectors were measured faster on Intel and, per issue 11, on AMD Zen 4
// (1.3-1.7x). See vector_width_256.hpp for the others.
#pragma once

#define POSENC_VECTOR_BITS 512
#if defined(__AVX512F__)
#pragma GCC target("prefer-vector-width=512")
#endif
