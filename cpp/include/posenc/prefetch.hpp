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

#include "posenc/target.hpp"

POSENC_BEGIN_TARGET

constexpr std::int64_t kAheadBytes = 4096;
constexpr std::int64_t kLineBytes = 64;

// The sinusoidal sum, which visits rows far apart (each batch's row of one
// position, then the next position's), prefetches the row it visits this
// many bytes of rows later, at least the next one. One row ahead (a float32
// row of 1024 columns is 4 KiB), the loads still waited: 16 KiB ahead,
// float32 sums took 0.78-0.80x the time at one thread and 0.85-0.88x at
// two, 32 KiB 1.05x that ([4, 2048, 1024], AMD EPYC Zen 5, AVX-512). The
// learned table's sum, which visits rows in the same order but has no
// trigonometry between them, took 1.05-1.2x its time with whole rows
// prefetched so (it prefetches none).
constexpr std::int64_t kRowsAheadBytes = 16 * 1024;

// Prefetches for writing every line of the `bytes` bytes from p.
inline void prefetch_lines(const void* p, std::int64_t bytes) {
    const char* c = static_cast<const char*>(p);
    for (std::int64_t b = 0; b < bytes; b += kLineBytes) __builtin_prefetch(c + b, 1, 3);
}

POSENC_END_TARGET
