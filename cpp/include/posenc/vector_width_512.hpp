// posenc/vector_width_512.hpp — this kernel source uses the path's widest vectors.
//
// Included first by kernel sources dominated by double-precision arithmetic
// (the sine/cosine recurrence of sinusoidal tables, interpolation), where
// 512-bit vectors were measured faster on Intel and, per issue 11, on AMD Zen 4
// (1.3-1.7x, at the kernels of then). See vector_width_256.hpp for the others.
// At later kernels, on a Zen 4 (AMD EPYC, family 25 model 17), the AVX-512
// copy of sinusoidal.cpp built at 256 bits took 0.71-0.95x the 512-bit copy's
// time on [8192, 1024] tables (every dtype; 1 and 2 threads, medians of
// builds alternated in separate processes) and the same on [4, 2048, 1024]
// sums; 512 bits stay, as what was measured faster on Intel and Zen 5: a
// per-CPU choice of width would take both.
#pragma once

#define POSENC_VECTOR_BITS 512
#if defined(__AVX512F__)
#pragma GCC target("prefer-vector-width=512")
#endif
