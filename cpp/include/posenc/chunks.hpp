// posenc/chunks.hpp — rows of any storage type, a block at a time, in their arithmetic type.
//
// Kernels write their arithmetic once, on plain float or double arrays. A row
// of T is read through `read_chunk` — the row itself when it already is a
// contiguous row of Wide<T>, else a small buffer filled by exact widening —
// and results go through `result_chunk` / `write_chunk` — computed straight
// into the row when it is a contiguous row of the result type, else into a
// buffer that is then rounded once into the row. `for_row` runs a kernel's
// body over a row: in one piece when no conversion is needed (contiguous
// float32/float64 rows are never copied: those loops are what they were
// without this header), else in blocks of kBlock elements whose size is a
// compile-time constant, so that GCC keeps a block's buffers in registers and
// fuses widening, arithmetic and narrowing into one loop (vcvtph2ps, the
// arithmetic, vcvtps2ph). Whole vectors convert with lanes.hpp (F16C and
// integer instructions on the AVX2 and AVX-512 paths), the rest element by
// element with convert.hpp; both give identical bits.
#pragma once

#include <cstdint>
#include <type_traits>

#include "posenc/convert.hpp"
#include "posenc/lanes.hpp"
#include "posenc/prefetch.hpp"

POSENC_BEGIN_TARGET

// The helpers below must inline into the kernel's block loop, or a block's
// buffers stay in memory and every block pays a call: GCC's size heuristics
// would otherwise decline the larger ones.
#define POSENC_BLOCK_INLINE inline __attribute__((always_inline))
// The same for a kernel's block body (a lambda passed to for_row).
#define POSENC_BLOCK_BODY __attribute__((always_inline))

// Elements per converted block: one vector of floats (lanes.hpp), 8 where there are none.
constexpr std::int64_t kBlock = kLanes > 0 ? kLanes : 8;
using Block = std::integral_constant<std::int64_t, kBlock>;

// Whether rows of T are worked on in place, without conversion: contiguous
// rows of a type that is its own arithmetic type (float32, float64).
template <class T, bool kContiguous>
constexpr bool kDirect = std::is_same<T, Wide<T>>::value && kContiguous;

// Runs body(j0, m) over [0, n): once with m = n when kDirect (the body then
// works in the row itself), else for blocks of m = Block() elements and one
// shorter last block. Only the variant needed is compiled.
template <bool kDirect, class Body>
POSENC_BLOCK_INLINE void for_row(std::int64_t n, Body&& body) {
    if constexpr (kDirect) {
        body(std::int64_t(0), n);
    } else {
        std::int64_t j0 = 0;
        for (; j0 + kBlock <= n; j0 += kBlock) body(j0, Block());
        if (j0 < n) body(j0, n - j0);
    }
}

template <class T>
constexpr bool kNarrowFormat = std::is_same<T, half_t>::value || std::is_same<T, bfloat16_t>::value;

// dst[j] = src[j·stride] widened, j < n: whole vectors (lanes.hpp) where the
// path has them, element by element for the rest.
template <class T>
POSENC_BLOCK_INLINE void widen_into(const T* src, std::int64_t stride, std::int64_t n, Wide<T>* __restrict dst) {
    std::int64_t j = 0;
    if (stride != 1) {
        for (; j < n; ++j) dst[j] = widen(src[j * stride]);
        return;
    }
#if POSENC_HAVE_LANES
    if constexpr (kNarrowFormat<T>)
        for (; j + kLanes <= n; j += kLanes) store_floats(dst + j, widen_lanes(src + j));
#endif
#pragma omp simd
    for (std::int64_t k = j; k < n; ++k) dst[k] = widen(src[k]);
}

// dst[j·stride] = src[j] rounded to nearest even, j < n (S is Wide<T>, or float into float64).
template <class T, class S>
POSENC_BLOCK_INLINE void narrow_into(const S* __restrict src, std::int64_t n, T* dst, std::int64_t stride) {
    std::int64_t j = 0;
    if (stride != 1) {
        for (; j < n; ++j) dst[j * stride] = narrow<T>(src[j]);
        return;
    }
#if POSENC_HAVE_LANES
    if constexpr (kNarrowFormat<T>)
        for (; j + kLanes <= n; j += kLanes) narrow_lanes(dst + j, load_floats(src + j));
#endif
#pragma omp simd
    for (std::int64_t k = j; k < n; ++k) dst[k] = narrow<T>(src[k]);
}

// dst[j·stride] = src[j] rounded once to T, j < n.
template <class T>
POSENC_BLOCK_INLINE void round_into(const double* __restrict src, std::int64_t n, T* dst, std::int64_t stride) {
    std::int64_t j = 0;
    if (stride != 1) {
        for (; j < n; ++j) dst[j * stride] = store<T>(src[j]);
        return;
    }
#if POSENC_HAVE_LANES
    if constexpr (kNarrowFormat<T>)
        // Through floats rounded to odd (lanes.hpp), a vector at a time:
        // exact for every double, so no value takes the element-wise path.
        for (; j + kLanes <= n; j += kLanes) narrow_lanes(dst + j, odd_lanes(src + j));
#endif
#pragma omp simd
    for (std::int64_t k = j; k < n; ++k) dst[k] = store<T>(src[k]);
}

// n values of a row of T (every `stride`-th element from src) as Wide<T>:
// the row itself when it is contiguous Wide<T>, else buf, filled.
template <class T>
POSENC_BLOCK_INLINE const Wide<T>* read_chunk(const T* src, std::int64_t stride, std::int64_t n, Wide<T>* buf) {
    if constexpr (std::is_same<T, Wide<T>>::value)
        if (stride == 1) return src;
    widen_into(src, stride, n, buf);
    return buf;
}

// Where a kernel computes n results of type S for dst: dst itself when it is a
// contiguous row of S, else buf (whose kBlock elements then bound n).
template <class T, class S>
POSENC_BLOCK_INLINE S* result_chunk(T* dst, std::int64_t stride, S* buf) {
    if constexpr (std::is_same<T, S>::value)
        if (stride == 1) return dst;
    return buf;
}

// Stores n results into the row at dst, rounded once to T: nothing to do when
// they were computed in dst itself.
template <class T, class S>
POSENC_BLOCK_INLINE void write_chunk(const S* res, T* dst, std::int64_t stride, std::int64_t n) {
    if (static_cast<const void*>(res) == static_cast<const void*>(dst)) return;
    if constexpr (std::is_same<S, double>::value) round_into(res, n, dst, stride);
    else narrow_into(res, n, dst, stride);
}

// out = x + y, element by element rounded once (rounded_sum), for rows of n
// elements with any strides (all 1 when kContiguous); x may be out itself
// (each block is read before it is written). The one row sum of every
// kernel (T5/ALiBi biases, learned tables). A contiguous sum given `next`
// prefetches next[0, n), a line per line added (for rows far apart in
// memory, whose first lines the hardware prefetchers do not fetch).
template <bool kContiguous, class T>
POSENC_BLOCK_INLINE void add_rows(const T* x, std::int64_t xs, const T* y, std::int64_t ys, T* out, std::int64_t os,
                     std::int64_t n, const T* next = nullptr) {
    using W = Wide<T>;
    if (kContiguous) xs = ys = os = 1;
    // In pieces of two lines, each first prefetching its counterpart in
    // next (a prefetch inside for_row's loop would keep it scalar); bfloat16
    // prefetches in its own loop below: in pieces it took 1.14-1.23x the
    // time of that at one thread (Intel Xeon, the learned sum, two runs of
    // alternated calls).
    if constexpr (kContiguous && !std::is_same<T, bfloat16_t>::value) {
        if (next) {
            in_pieces<2, T>(n, next, [&](std::int64_t p0, std::int64_t pn) {
                add_rows<true>(x + p0, 1, y + p0, 1, out + p0, 1, pn);
            });
            return;
        }
    }
#if POSENC_HAVE_LANES
    // bfloat16: read and written as they lie, two values to a 32-bit lane
    // (widen_pairs, narrow_pairs), in the path's widest vectors (FullFloats:
    // 32 values on AVX-512, even in kernels whose loops are 256 bits wide;
    // 16 on AVX2), with none of the shuffles that widening and narrowing a
    // vector of floats cost (widen_lanes, narrow_lanes). The same sums and
    // roundings. bfloat16 embedding_add, add_t5_bias and add_alibi took
    // 0.74-0.87x the time of widening eight on the AVX2 path of an AMD EPYC
    // Zen 3, and 0.71-0.90x that of widening sixteen (vpmovzxwd, vpmovdw)
    // on the AVX-512 path of a Zen 4 at one thread, 0.84-0.92x at two
    // (medians of builds alternated in separate processes), where widening
    // had been 1.13-1.40x the AVX2 path's time.
    if constexpr (std::is_same<T, bfloat16_t>::value && kContiguous) {
        std::int64_t j = 0;
        for (; j + 2 * kFullLanes <= n; j += 2 * kFullLanes) {
            if (next) __builtin_prefetch(next + j, 1, 3);  // a line (AVX-512) or half of one
            FullFloats x1, x2, y1, y2;
            widen_pairs(x + j, x1, x2);
            widen_pairs(y + j, y1, y2);
            narrow_pairs(out + j, x1 + y1, x2 + y2);
        }
        x += j;
        y += j;
        out += j;
        n -= j;
    }
#endif
    // float16 goes in blocks of the source's width. Sixteen at a time in
    // 256-bit sources too (widen_full, narrowed by one vcvtps2ph), as bfloat16
    // does, was measured on an AMD EPYC Zen 4 (AVX-512 ÷ AVX2 copy's time,
    // switched call by call, against the same before): ALiBi and T5 adds
    // 0.81-1.02x, but embedding_add 1.04-1.18x at one thread ([4, 2048, 1024]
    // and [8, 512, 768]; 0.75-1.04x at two); not adopted. Nor an in-place
    // branch (x == out) that loads and stores through one pointer, as a
    // standalone copy of Swin's loop ran faster that way: in the kernels, on
    // the same Zen 4 (switched call by call, float32/float16/float64, 1 and 2
    // threads, three runs), Swin, ALiBi and T5 adds took 0.80-1.13x the time.
    // (embedding_add was timed too, but with its table converted inside each
    // timed call by the script: not a measurement of the sum.)
    for_row<kDirect<T, kContiguous>>(n, [&](std::int64_t j0, auto m) POSENC_BLOCK_BODY {
        W xb[kBlock], yb[kBlock], ob[kBlock];
        const W* xw = read_chunk(x + j0 * xs, xs, m, xb);
        const W* yw = read_chunk(y + j0 * ys, ys, m, yb);
        W* ow = result_chunk(out + j0 * os, os, ob);
        // x may be out: no restrict on either; each lane reads its x before writing it.
#pragma omp simd
        for (std::int64_t j = 0; j < m; ++j) ow[j] = xw[j] + yw[j];
        write_chunk(ow, out + j0 * os, os, m);
    });
}

POSENC_END_TARGET
