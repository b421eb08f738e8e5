// posenc/copy_row.hpp — a row of elements copied as bit patterns, whatever their dtype.
//
// A copy never looks at values, so elements go as unsigned integers of their
// width (Bits<T>: a float16 row as uint16_t), which every path vectorises. A
// half_t row copied struct by struct was not: float16 embedding_lookup
// [4096, 1024] into out= took 2.5x float32's time for half its bytes (AMD
// EPYC Zen 4, 2 threads).
//
// Contiguous rows go through a vector loop or memcpy (by_loop:
// rows_copied_by_loop, cpu.cpp). On an AMD EPYC Zen 4 (glibc 2.36's memcpy;
// lookup rows starting at every element offset against the rows written) the
// loop took 0.58-0.95x memcpy's time at two threads (AVX-512, AVX2 and
// baseline paths) and 0.50-0.84x at one (AVX-512, AVX2) on 64 MiB of
// t5_buckets, relative_positions, float16 t5_bias and float32 alibi_bias into
// out=, and 0.97-1.05x on a float32 t5_bias [8, 128, 128] (calls alternated
// in one process). On short rows there too (Swin's bias copy, swin_bias
// 7 x 7 and 12 x 12 windows, and DETR's gather, detr_sine [2, 32, 32] and
// [8, 64, 64] with 128 features: the loop's time ÷ memcpy's, switched call by
// call, medians) 0.85-1.06x at one and two threads in every format (one
// float64 gather 1.13x, its range 0.95-1.18). Not measured on Intel's CPUs:
// memcpy stays there. Copying elements one by one up to dst's first 64-byte
// line, so that the loop's vector stores start on lines (NumPy's rows start
// 16 bytes past one), took 0.83-1.21x the time there (alibi_bias, t5_bias,
// concat_positional, sinusoidal_3d into out=, float32 and float16, 1 and 2
// threads, switched call by call): float32 0.83-0.88x at one thread on the
// 16 and 64 MiB biases (0.98-1.06x on the others), float16 1.00-1.21x at one
// thread, and 0.90-1.10x at two. Not adopted.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "posenc/target.hpp"

POSENC_BEGIN_TARGET

// The unsigned integer of T's width.
template <class T>
using Bits = std::conditional_t<sizeof(T) == 1, std::uint8_t,
                                std::conditional_t<sizeof(T) == 2, std::uint16_t,
                                                   std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>>;

// dst[j·dst_stride] = src[j·src_stride] for j < n.
template <class U>
inline void copy_row(U* dst, std::int64_t dst_stride, const U* src, std::int64_t src_stride, std::int64_t n,
                     bool by_loop) {
    if (dst_stride == 1 && src_stride == 1 && by_loop) {
#pragma omp simd
        for (std::int64_t j = 0; j < n; ++j) dst[j] = src[j];
    } else if (dst_stride == 1 && src_stride == 1) {
        std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(U));
    } else {
        for (std::int64_t j = 0; j < n; ++j) dst[j * dst_stride] = src[j * src_stride];
    }
}

POSENC_END_TARGET
