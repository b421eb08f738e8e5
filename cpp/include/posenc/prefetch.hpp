// posenc/prefetch.hpp — ask for the bytes a streaming loop reads next, a page ahead.
//
// The hardware prefetchers stay within a 4 KiB page and start cold on every
// new one; a loop that does a few operations per byte (an add, a rotation)
// then waits on the next page's first lines. Prefetching (for writing: the
// loops work in place) the bytes kAheadBytes past those being worked on (the
// rotation: the vector its walk reaches that many bytes on, in any layout,
// rope.cpp) keeps them coming. Measured, one thread, against a
// read-modify-write pass of the same buffer: relative adds on Swin windows
// 1.4x -> 1.05x (relative.cpp), the float32 rotation of apply_rope_nd on [1,
// 4096, 24, 128] 1.6x -> 1.25x (rope.cpp). 2 KiB ahead measured the same for
// the adds, 2 and 8 KiB within the noise of 4 KiB for the rotation. A prefetch
// is a hint: addresses past the end of a buffer never fault.
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

// Prefetches every line of the `bytes` bytes from p: for writing, into L1
// unless told otherwise (__builtin_prefetch's rw and locality).
template <int kWrite = 1, int kLocality = 3>
inline void prefetch_lines(const void* p, std::int64_t bytes) {
    const char* c = static_cast<const char*>(p);
    for (std::int64_t b = 0; b < bytes; b += kLineBytes) __builtin_prefetch(c + b, kWrite, kLocality);
}

// Loops that prefetch far ahead of what they work on — the rotation a page
// (or more) ahead, the sinusoidal sum whole rows ahead, the embedding
// gradient the next row it gathers (learned.cpp) — ask with these. On
// an AMD EPYC Zen 4, prefetching those lines into L1 (prefetcht0: the
// copies are built without PREFETCHW, so a prefetch for writing is a read
// prefetch into every level) left float32/float64 loops waiting on memory;
// into L2 only (prefetcht2), and the rotation 16 KiB ahead instead of 4,
// they were faster in most of the cases tried and consistently slower in
// none (prefetch_far_into_l2: on for Zen 4 only, cpu.cpp). Time into L2 ÷ time into L1, the two switched
// call by call in one process (in alternating order in all but the first
// of the runs), medians, 2 / 1 threads: NeoX [1, 2048, 32, 128] float32
// 0.86-1.07 / 0.77-0.87 (five / two runs), float64 0.60-0.71 / 0.45-0.50;
// GPT-J float32 0.93-1.04 / 0.90-0.94, float64 0.97 / 0.72 (one run);
// FLUX's apply_rope_nd [1, 4096, 24, 128] float32 1.01-1.03 / 0.89-0.94;
// `add_sinusoidal` [4, 2048, 1024] float32 0.67-0.71 / 0.69-0.82, float64
// 0.68-0.76 / 0.59-0.65; on the AVX2 copy 0.63-0.94 (one run).
// Into L1, the float64 NeoX rotation's time also depended on where in a
// cache line the array started (3.1-7.8 ms at one thread, the AVX2 and
// AVX-512 copies fastest at different offsets: the ISA axis's unexplained
// gap); into L2, 2.8-3.1 ms at every offset on both. With a temporary
// switch: into L2 at 4 KiB the rotation was slower than into L1 (1.11 /
// 1.18, float32 GPT-J) and 8 KiB measured like 16; the relative adds'
// page-ahead prefetch into L2 at 4-16 KiB took 0.94-1.05 / 1.02-1.26x the
// time of L1, and no prefetch at all less than either, so on the Zen 4 the
// adds prefetch nothing (relative.cpp); the sinusoidal table's page ahead
// (row by row) stays in L1 (no difference), while its four-row passes,
// which prefetch nothing elsewhere, prefetch the next pass into L2 there
// (sinusoidal.cpp).
// On an Intel Xeon the sum's rows prefetched into L2 took 1.05-1.12x the
// time (sinusoidal.cpp), so there, and on CPUs not measured, far-ahead
// lines go into L1. float16/bfloat16 loops wait on their conversions, not
// on memory, and were no faster into L2 (0.99-1.07x the time, rotations and
// sums, 1 and 2 threads, L2 always called first): theirs go into L1
// everywhere. The learned table's sum, which prefetches nothing on AMD
// CPUs (above), prefetching its next row into L2 on the Zen 4 took
// 0.94-1.09x the time (float32, float64, alternating order): not adopted.
// Into L2, the sum's rows ahead (rows_ahead_bytes) at 32 KiB took
// 0.96-0.97x the time of 16 KiB for float32 (float64 0.99-1.02x), 64 KiB
// 1.01-1.13x, 4-8 KiB 1.34-1.41x (2 / 1 threads, calls in shuffled order):
// 16 KiB stays.
template <class T>
inline bool far_into_l2() { return sizeof(T) > 2 && prefetch_far_into_l2(); }

// How far ahead the rotation prefetches rows of T.
template <class T>
inline std::int64_t far_ahead_bytes() { return far_into_l2<T>() ? 4 * kAheadBytes : kAheadBytes; }

// Operands of at most this many bytes in all (a decode step's q and k, a
// short prompt's) are taken to be in cache already, where far-ahead
// prefetches cost their instructions and fetch nothing: the rotation
// (rope.cpp) issues none for them. AMD EPYC Zen 4, apply_rope on
// [1, S, 32, 128] and decode steps [32 or 64, 1, 32, 128] in place, without
// ÷ with, calls switched one by one, medians, 1 / 2 threads: float32 of
// 0.5-8 MiB 0.84-0.92 / 0.85-0.93, 16 MiB 1.23 / 0.89, 32 MiB 1.17 / 1.16;
// float64 of 1-8 MiB 0.84-0.94 at one thread, at two 0.91-0.99 up to 2 MiB
// but 0.72 (0.68-1.21) at 4 MiB and 0.98-1.35 at 8 MiB; 16 MiB or more
// 1.6-3.1x; float16, whose lines go into L1, 0.96-1.04. Hence 2 MiB, below
// every loss seen.
// The sinusoidal sum keeps its rows-ahead prefetches for such operands:
// without them add_sinusoidal of 0.1-2 MiB took 0.96-1.03x the time at one
// thread and 0.99-1.32x at two (float32 [4, 128, 1024] 1.32x; four formats).
constexpr std::int64_t kCachedBytes = std::int64_t(2) << 20;

// Prefetches the line at p, or every line of the `bytes` bytes from p, for
// a far-ahead loop over T.
template <class T>
inline void prefetch_far_line(const void* p) {
    if (far_into_l2<T>()) __builtin_prefetch(p, 0, 1);
    else __builtin_prefetch(p, 1, 3);
}
template <class T>
inline void prefetch_far_lines(const void* p, std::int64_t bytes) {
    if (far_into_l2<T>()) prefetch_lines<0, 1>(p, bytes);
    else prefetch_lines(p, bytes);
}

// piece(p0, pn) over columns [0, n) of a contiguous row of T, kLines cache
// lines at a time, each piece first prefetching its counterpart in the
// bytes from `ahead` (as far-ahead loops do when kFar): a prefetch inside
// the vectorised loop would keep it scalar.
template <std::int64_t kLines, class T, bool kFar = false, class Piece>
inline void in_pieces(std::int64_t n, const void* ahead, Piece&& piece) {
    constexpr std::int64_t kSize = static_cast<std::int64_t>(sizeof(T)), kPiece = kLines * kLineBytes / kSize;
    for (std::int64_t p0 = 0; p0 < n; p0 += kPiece) {
        const std::int64_t pn = n - p0 < kPiece ? n - p0 : kPiece;
        const char* at = static_cast<const char*>(ahead) + p0 * kSize;
        if (kFar) prefetch_far_lines<T>(at, pn * kSize);
        else prefetch_lines(at, pn * kSize);
        piece(p0, pn);
    }
}

POSENC_END_TARGET
