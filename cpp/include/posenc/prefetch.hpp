// posenc/prefetch.hpp — ask for the bytes a streaming loop reads next, a page ahead.
//
// The hardware prefetchers stay within a 4 KiB page and start cold on every
// new one; a loop that does a few operations per byte (an add, a rotation)
// then waits on the next page's first lines. Prefetching (for writing: the
// loops work in place) the bytes kAheadBytes past those being worked on keeps
// them coming. Measured, one thread, against a read-modify-write pass of the
// same buffer: relative adds on Swin windows 1.4x -> 1.05x (relative.cpp), the
// float32 rotation of apply_rope_nd on [1, 4096, 24, 128] 1.6x -> 1.25x
// (rope.cpp). 2 KiB ahead measured the same for the adds, 2 and 8 KiB within
// the noise of 4 KiB for the rotation. A prefetch is a hint: addresses past
// the end of a buffer never fault.
#pragma once

#include <cstdint>

#include "posenc/dispatch.hpp"
#include "posenc/target.hpp"

POSENC_BEGIN_TARGET

constexpr std::int64_t kAheadBytes = 4096;
constexpr std::int64_t kLineBytes = 64;

// The sinusoidal sum, which visits rows far apart (each batch's row of one
// position, then the next position's), prefetches the row it visits this
// many bytes of rows later, at least the next one. The best distance
// differs between CPUs ([4, 2048, 1024] float32, AVX-512, medians of
// alternated builds, against one 4 KiB row ahead): on an AMD EPYC Zen 5,
// 16 KiB took 0.78-0.80x the time at one thread and 0.85-0.88x at two
// (32 KiB 1.05x 16 KiB's); on an Intel Xeon, 16 KiB took 1.22x and 1.09x,
// 8 KiB 1.15x and 1.08x (float16 1.03x and bfloat16 1.00x at 16 KiB; its
// AVX2 path 1.09x at two threads; on buffers larger than its cache the
// distance made no difference). So 16 KiB on AMD CPUs and one row on
// others, chosen once (rows_ahead_bytes, dispatch.hpp; cpu.cpp). The
// learned table's sum, which visits rows in the same order but has no
// trigonometry between them, took 1.05-1.2x its time with whole rows
// prefetched so on the Zen 5, so on AMD CPUs it prefetches none (one row
// ahead there: not measured). On an Intel Xeon, prefetching the row it adds
// next, a line per line added (learned_sum_prefetches), [4, 2048, 1024] in
// place against none, medians of 25 calls, builds alternated in separate
// processes, three pairs each, 1 / 2 threads: float32 0.83-0.86 /
// 0.72-0.76x the time, float16 0.78-0.85 / 0.74-0.83x, bfloat16 0.70-0.91 /
// 0.65-0.87x, float64 0.90-0.97 / 0.89-1.01x.

// Prefetches for writing every line of the `bytes` bytes from p.
inline void prefetch_lines(const void* p, std::int64_t bytes) {
    const char* c = static_cast<const char*>(p);
    for (std::int64_t b = 0; b < bytes; b += kLineBytes) __builtin_prefetch(c + b, 1, 3);
}

// piece(p0, pn) over columns [0, n) of a contiguous row of T, kLines cache
// lines at a time, each piece first prefetching its counterpart in the
// bytes from `ahead`: a prefetch inside the vectorised loop would keep it
// scalar.
template <std::int64_t kLines, class T, class Piece>
inline void in_pieces(std::int64_t n, const void* ahead, Piece&& piece) {
    constexpr std::int64_t kSize = static_cast<std::int64_t>(sizeof(T)), kPiece = kLines * kLineBytes / kSize;
    for (std::int64_t p0 = 0; p0 < n; p0 += kPiece) {
        const std::int64_t pn = n - p0 < kPiece ? n - p0 : kPiece;
        prefetch_lines(static_cast<const char*>(ahead) + p0 * kSize, pn * kSize);
        piece(p0, pn);
    }
}

POSENC_END_TARGET
