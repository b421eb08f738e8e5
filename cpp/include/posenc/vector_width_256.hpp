// posenc/vector_width_256.hpp — this kernel source works in 256-bit vectors, also on the AVX-512 path.
//
// Included first by kernel sources whose loops are short and bound by memory
// (rows of 64-pair heads, biases added to scores, table rows). In their
// AVX-512 copy, 512-bit vectors bought nothing measured on Intel and cost
// 1.25-1.9x on AMD Zen 4 (issue 11: double-pumped 512-bit operations, masked
// tails of short rows, 512-bit shuffles), and the float16 adds ran up to 1.75x
// slower with 512-bit conversions on Intel too. The copy keeps AVX-512's
// instructions (masks, vpmovdw) on 256-bit registers. Sources whose double-
// precision trigonometry or interpolation does gain from 512 bits include
// vector_width_512.hpp instead; `posenc bench --isa all` shows both on any CPU.
// Measured again on a Zen 4 at later kernels (relative.cpp built at 512 bits,
// its AVX-512 copy's time ÷ the AVX2 copy's, the two switched call by call in
// one process, against the same at 256 bits; ALiBi and T5 adds): float32
// took 0.99-1.42x the time at one thread (1.16-1.42x on Swin-sized windows)
// and 0.87-1.10x at two, float16 0.75-1.05x, float64 0.91-1.25x, bfloat16
// 0.80-1.17x; 256 bits stay.
#pragma once

#define POSENC_VECTOR_BITS 256
#if defined(__AVX512F__)
#pragma GCC target("prefer-vector-width=256")
#endif
