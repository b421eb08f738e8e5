// Sinusoidal encodings: tables and the fused scale·x + PE. Compiled once per ISA.
#include "posenc/vector_width_512.hpp"
#include "posenc/sinusoidal.hpp"

#include "posenc/angles.hpp"
#include "posenc/buffer.hpp"
#include "posenc/chunks.hpp"
#include "posenc/parallel.hpp"
#include "posenc/prefetch.hpp"
#include "posenc/rounds_alike.hpp"

#include <cstring>
#include <type_traits>

POSENC_BEGIN_TARGET
namespace {

// The sum streams each batch's rows out of memory a row at a time, and the
// rows of different batches lie far apart (a float32 row of 1024 columns is
// one 4 KiB page): the hardware prefetchers, which stay within a page, start
// cold on every row and the loads wait on memory. So while it adds a row, the
// kernel prefetches a row it visits later (rows_ahead_bytes; one thread,
// [4, 2048, 1024] float32 on the AVX-512 path of an Intel Xeon, with the
// float32 loop below and the next row prefetched: 1.7-2.4x a plain
// read-modify-write pass of the buffer before, 1.2-1.4x after; float64
// 1.3x -> 1.25x). Contiguous rows only (encode_run, through in_pieces).

// An encoding row as its sines s and cosines c: column j of an interleaved
// row is s[j/2] (even j) or c[j/2], of a split row s[j] (c follows s).
struct AngleRow {
    const double* s;
    const double* c;
    bool interleaved;
    double at(std::int64_t j) const { return !interleaved ? s[j] : j % 2 ? c[j / 2] : s[j / 2]; }
};

#if POSENC_HAVE_LANES
// float32 (and float64 interleaved in registers, below) on the AVX2 and
// AVX-512 paths: scale·x + v a register of doubles at a time, as many
// floats widened and narrowed back, each load and store the width it needs
// (lanes.hpp). The plain loop (GCC vectorises it a full vector
// of floats at a time) splits and joins the halves with an extract and an
// insert, two more operations per vector on the shuffle port every
// conversion uses: once the loads no longer wait on memory that was 15-20%
// of the sum (one thread, [4, 2048, 1024], AVX-512 on an Intel Xeon;
// measured with the prefetch below, not alone); on the AVX2 path of an AMD
// EPYC (Zen 3) 0.83-0.91x the plain loop's time, 1 and 2 threads, alternated
// calls. The same FMA and rounding as the plain loop, so the same bits.
constexpr bool kFloatRowKernel = true;

// Doubles per unit of the sum's loop: two registers' worth.
constexpr std::int64_t kRowUnit = 2 * kDoubleLanes;

// out[j] = scale·x[j] + v(j), j < n, one FMA in double, rounded once to T
// (float, or double as it is), prefetching next[0, n) (if not null) a line
// per line added; x may be out. unit(i) gives the doubles v(i), ...,
// v(i + kRowUnit - 1) for each whole unit in turn, at(j) v(j) for the
// columns after them, in turn.
template <class T, class Unit, class At>
inline void add_row_units(std::int64_t n, double scale, const T* x, T* out, const T* next, Unit&& unit, At&& at) {
    constexpr std::int64_t kLine = kLineBytes / static_cast<std::int64_t>(sizeof(T));
    constexpr std::int64_t kStep = kRowUnit > kLine ? kRowUnit : kLine;  // whole units, whole lines
    const DoubleReg s = splat_reg(scale);
    std::int64_t j = 0;
    for (; j + kStep <= n; j += kStep) {
        if (next) prefetch_far_lines<T>(next + j, kStep * static_cast<std::int64_t>(sizeof(T)));
        for (std::int64_t k = 0; k < kStep; k += kRowUnit) {
            const std::int64_t i = j + k;
            const Doubles<kRowUnit> vi = unit(i);
            store_narrowed(out + i, fused_add(s, load_widened(x + i), vi.r[0]));
            store_narrowed(out + i + kDoubleLanes, fused_add(s, load_widened(x + i + kDoubleLanes), vi.r[1]));
        }
    }
    for (; j < n; ++j) out[j] = static_cast<T>(fused_step(scale, static_cast<double>(x[j]), at(j)));
}

// add_row_units of the row v, its doubles read as they lie (kPairs false:
// v.s, split or already interleaved) or interleaved from v.s and v.c in
// registers (kPairs true).
template <bool kPairs, class T>
inline void add_row_lanes(const AngleRow& v, std::int64_t n, double scale, const T* x, T* out, const T* next) {
    add_row_units(
        n, scale, x, out, next,
        [&](std::int64_t i) POSENC_BLOCK_BODY {
            return kPairs ? interleave_doubles(v.s + i / 2, v.c + i / 2) : load_doubles<kRowUnit>(v.s + i);
        },
        [&](std::int64_t j) { return v.at(j); });
}
#else
constexpr bool kFloatRowKernel = false;
template <bool kPairs, class T>
inline void add_row_lanes(const AngleRow&, std::int64_t, double, const T*, T*, const T*) {}
#endif

// Whether float32 and float64 sums of interleaved rows may interleave in
// registers (add_row_lanes<true>), where the CPU calls for it
// (sum_interleaves_in_registers). Interleaving a row's doubles once in memory
// and reading them back for every batch costs a pass over the row a position;
// in registers, two shuffles per 16 values a batch instead. On the AVX-512
// path of an AMD EPYC Zen 4 (two threads, calls of the two forms alternated in
// one process, medians) the pass in memory took, as multiples of the time in
// registers, float32 / float64: [4, 2048, 1024] 1.03-1.09 / 1.03-1.05x with x
// restored before each call, 1.09-1.13 / 1.05x back to back, 1.06 / 1.04x at
// one thread; [2, 4096, 1024] 1.14-1.17 / 1.19x; [1, 8192, 1024] 1.22 / 1.28x;
// float32 [32, 256, 1024] 0.99-1.05x; float64 [4, 512, 768] 1.09x. But float32
// on [8, 512, 768], in cache and bound by its arithmetic, took 0.93-0.94x (the
// same code against itself there: 0.97-1.00x): the shuffles are paid per
// batch, the pass once per row, so rows added to more than
// kPairsInRegistersUpTo batches keep the pass. Intel's AVX-512 cores run the
// shuffles on the port two of the float32 sum's five 512-bit operations per 16
// floats already need (see run, below): not measured there, so not used there;
// nor on Zen 5. On the AVX2 path a pair of 256-bit registers takes four
// shuffles, and interleaving in registers took 0.95-1.05x the time (float32,
// Zen 3), so it keeps the pass.
constexpr std::int64_t kPairsInRegistersUpTo = 4;

#if POSENC_HAVE_LANES
// add_row_lanes<true> of the row one position on: steps the angle row (s,
// c) by `step` in place, as AngleRows::advance does (the same operations, so
// the same bits), a register at a time, and adds it as it goes. Where rows
// interleave in registers the row's first batch does this, in place of a
// separate pass over the row: on the Zen 4 above (two threads, x restored
// before each call, calls alternated, medians) the separate pass took,
// float32 / float64, [4, 2048, 1024] 1.00-1.07 / 1.03-1.05x the time (back
// to back 1.06x), [2, 4096, 1024] 1.07-1.11x, [1, 8192, 1024] 1.21 /
// 1.12x, [4, 512, 768] (in cache) 1.09x; one thread 1.01x.
template <class T>
inline void step_and_add_row(double* s, double* c, AngleStep step, std::int64_t n, double scale, const T* x, T* out,
                             const T* next) {
    add_row_units(
        n, scale, x, out, next,
        [&](std::int64_t i) POSENC_BLOCK_BODY {
            const std::int64_t h = i / 2;
            const DoubleReg s0 = load_reg(s + h), c0 = load_reg(c + h);
            const DoubleReg sw = load_reg(step.sin_w + h), cw = load_reg(step.cos_w + h);
            const DoubleReg s1 = fused_add(s0, cw, mul(c0, sw)), c1 = fused_sub(c0, cw, mul(s0, sw));
            store_narrowed(s + h, s1);
            store_narrowed(c + h, c1);
            return interleave_regs(s1, c1);
        },
        [&](std::int64_t j) {  // the columns after the units, from a sine's (n is even): a pair steps at its sine
            if (j % 2) return c[j / 2];
            rotate_by_step(s[j / 2], c[j / 2], step.sin_w[j / 2], step.cos_w[j / 2]);
            return s[j / 2];
        });
}
#endif
#if defined(__AVX512F__) && POSENC_VECTOR_BITS == 512
constexpr bool kPairsInRegisters = kFloatRowKernel;
#else
constexpr bool kPairsInRegisters = false;
#endif

// out[j] = scale·x[j] + v[j], j < n, in double, rounded once. In place, out
// is x: each lane reads its x before writing it.
template <bool kContiguous, class T>
inline void add_run(const double* __restrict v, std::int64_t n, double scale, const T* x, std::int64_t xcs, T* out,
                    std::int64_t ocs) {
    using R = Result<T>;
    for_row<kDirect<T, kContiguous>>(n, [&](std::int64_t j0, auto m) POSENC_BLOCK_BODY {
        Wide<T> xb[kBlock];
        R rb[kBlock];
        const Wide<T>* xw = read_chunk(x + j0 * xcs, xcs, m, xb);
        R* res = result_chunk(out + j0 * ocs, ocs, rb);
#pragma omp simd
        for (std::int64_t j = 0; j < m; ++j) res[j] = static_cast<R>(scale * static_cast<double>(xw[j]) + v[j0 + j]);
        write_chunk(res, out + j0 * ocs, ocs, m);
    });
}

// w[j] = float(v.at(j)), j < n.
inline void float_row(const AngleRow& v, std::int64_t n, float* __restrict w) {
    const double* __restrict s = v.s;
    const double* __restrict c = v.c;
    if (!v.interleaved) {
#pragma omp simd
        for (std::int64_t j = 0; j < n; ++j) w[j] = static_cast<float>(s[j]);
        return;
    }
#pragma omp simd
    for (std::int64_t i = 0; i < n / 2; ++i) {
        w[2 * i] = static_cast<float>(s[i]);
        w[2 * i + 1] = static_cast<float>(c[i]);
    }
    if (n % 2) w[n - 1] = static_cast<float>(s[n / 2]);  // a row cut after a sine
}

// Whether bfloat16 sums read and write their rows as pairs (add_row_pairs,
// below): wherever the path has vectors.
template <class T> constexpr bool kPairSums = POSENC_HAVE_LANES && std::is_same<T, bfloat16_t>::value;

#if POSENC_HAVE_LANES
// The exact sum of columns [j, j + m) of a row, m ≤ kFullLanes, element by element (add_run).
template <class T>
inline void add_columns(const AngleRow& v, std::int64_t j, std::int64_t m, double scale, const T* x, T* out) {
    double vj[kFullLanes];
    for (std::int64_t k = 0; k < m; ++k) vj[k] = v.at(j + k);
    add_run<true>(vj, m, scale, x + j, 1, out + j, 1);
}

// add_run's float64 sum of the whole vector of columns [j, j + kFullLanes)
// in registers: the same fused scale·x + v, rounded to odd, then narrowed,
// so the same bits. out may be x.
template <class T>
POSENC_BLOCK_INLINE void add_exact(const AngleRow& v, std::int64_t j, double scale, const T* x, T* out) {
    using D = Doubles<kFullLanes>;
    const D vd = v.interleaved ? interleave_doubles(v.s + j / 2, v.c + j / 2) : load_doubles<kFullLanes>(v.s + j);
    D r = widen_doubles(x + j);
    for (int i = 0; i < D::kRegs; ++i) r.r[i] = fused_add(splat_reg(scale), r.r[i], vd.r[i]);
    narrow_doubles(out + j, r);
}

// float16 sums on the AVX-512 path (kFloat32First, rounds_alike.hpp): in
// float64, a vector at a time, prefetching `next` (if not null) a line per
// line added. In float32 first, as below, they had taken 1.2x this time
// (AMD EPYC Zen 5, [4, 2048, 1024], 1 and 2 threads; the prefetch then
// took off another 3-5%); on the AVX2 path this took 1.13-1.19x float32
// first's. On an AMD EPYC Zen 4 float32 first also took 1.14-1.28x this
// time ([4, 2048, 1024], [16, 128, 1024], [8, 512, 768], [3, 1024, 1024],
// 1 and 2 threads, x restored before each call, calls switched one by
// one). Adding in place to the same x call
// after call had shown it 0.79-0.91x this time where three or more batches
// share a row: x grows with every add, and fewer of its vectors fall back.
// Scales that are floats have a tighter bound, used from three batches up
// (FloatScaleCheck).
template <class T>
inline void add_row_exact(const AngleRow& v, std::int64_t n, double scale, const T* x, T* out, const T* next) {
    constexpr std::int64_t kLine = kLineBytes / sizeof(T);
    std::int64_t j = 0;
    for (; j + kFullLanes <= n; j += kFullLanes) {
        if (next && j % kLine == 0) prefetch_far_line<T>(next + j);
        add_exact(v, j, scale, x, out);
    }
    if (j < n) add_columns(v, j, n - j, scale, x, out);
}

// float16/bfloat16 sums, a vector at a time, in float32 first
// (rounds_alike.hpp; sums whose scale is a float take FloatScaleCheck's
// tighter bound where a row is added to enough batches): with
// s = float(scale), w = float(v) (the row rounded
// once, shared by every batch) and F = x·s + w in one FMA, F differs from
// the float64 sum V by less than 3·2^-24·A·(1 + 2^-20), A = |x·s| + |w| (one
// rounding each of s, w and F, and V's own), and F ± e as rounded moves by
// at most 2^-24·(|F| + e). So e = (1 + 2^-8)·2^-22·A suffices where A is at
// least 2^-100 (far above any underflow) and below 2^126 (no overflow);
// vectors with a lane outside, or one that may round apart, take the
// float64 sum (add_exact: element by element, those had taken a third of
// float16 sums' time on Gaussian x). Scales beyond 2^±60 take it everywhere
// (float(scale) would not carry one rounding of relative 2^-24). Unlike the
// rotation's (rope.cpp) these results seldom cancel: on Gaussian x plus a
// [2048, 1024] encoding 1.3% of bfloat16 and 6.9% of float16 vectors (16
// lanes) fall back. bfloat16 sums took 0.56-0.69x the float64 sum's time
// (one thread, [4, 2048, 1024], AVX-512, Intel; on Zen 5, with the float64
// sum as add_exact, 0.55-0.59x).
// A row prefetches a row added later, a line per line added as add_row_lanes
// does: with it float16 sums took 0.89-0.92x their time without, bfloat16
// ones 0.96-1.02x (AVX2 path, AMD EPYC Zen 3, 1 and 2 threads, alternated
// calls); bfloat16 on the AVX-512 path of a Zen 5, 16 KiB ahead
// (rows_ahead_bytes), 0.73-0.77x (medians of alternated rounds, 1 and 2
// threads; the same build against itself 1.00). (Cut into prefetched pieces
// instead, these sums had been 10-15% slower on an Intel AVX-512 path.)
// The row's float64 values v (AngleRow) are read only where a vector falls
// back: its floats w are built from the sines and cosines directly, and
// interleaving the doubles first for every row had taken a sixth of the
// float16 sum's time; without it float16 sums took 0.87-0.95x their time
// (AMD EPYC, Zen 3, two builds alternated, one thread; the same build
// against itself 0.92-1.00x). out may be x.
// What the check of a float32-first sum needs for one scale (see above):
// usable where the scale lies within 2^±60.
struct SumCheck {
    explicit SumCheck(double scale)
        : usable(std::fabs(scale) >= 0x1p-60 && std::fabs(scale) <= 0x1p60),
          s(splat(static_cast<float>(scale))),
          s_mag(splat(std::fabs(static_cast<float>(scale)))) {}
    // The bound e of f = F = x·s + w, at column j; sets the bits of
    // `outside` where A is below 2^-100 or not below 2^126.
    FullFloats error(FullFloats x, FullFloats w, FullFloats, std::int64_t, unsigned& outside) const {
        const FullFloats a = fused_add(magnitude(x), s_mag, magnitude(w));
        outside |= not_below(a, high) | not_below(low, a);
        return a * bound;
    }
    bool usable;
    FullFloats s, s_mag;
    FullFloats bound = splat(0x1p-22f * (1 + 0x1p-8f)), low = splat(0x1p-100f), high = splat(0x1p126f);
};

template <class Check, class T>
inline void add_row_float32_first(const AngleRow& v, const float* __restrict w, std::int64_t n, double scale,
                                  const Check& check, const T* x, T* out, const T* next) {
    constexpr std::int64_t kLine = kLineBytes / sizeof(T);
    std::int64_t j = 0;
    for (; check.usable && j + kFullLanes <= n; j += kFullLanes) {
        if (next && j % kLine == 0) prefetch_far_line<T>(next + j);
        const FullFloats xf = widen_full(x + j), wf = load_full(w + j), f = fused_add(xf, check.s, wf);
        unsigned outside = 0;
        const FullFloats e = check.error(xf, wf, f, j, outside);
        RoundedLanes<T> r;
        if (!(outside | round_checked(f, e, r))) {
            store_rounded(out + j, r);
            continue;
        }
        add_exact(v, j, scale, x, out);
    }
    for (; j < n; j += kFullLanes) add_columns(v, j, n - j < kFullLanes ? n - j : kFullLanes, scale, x, out);
}

// float16/bfloat16 sums whose scale is itself a float (1, 2^k,
// float32(1.1), ...): in float32 first with a bound of their own
// (FloatScaleCheck), float16 on the AVX-512 path too.
// With s = scale exact, the FMA F = x·s + w rounds once, and w = float(v)
// errs by at most 2^-24·|w|·(1 + 2^-23), so |F − V| ≤ 2^-24·|F| +
// 2^-24·(1 + 2^-23)·|w| + 2^-53·|V| (+ 2^-148 for underflow); SumCheck's
// general bound is 3·2^-24·A, A = |x·s| + |w|, plus one more rounding of s.
// F ± e as rounded moves by at most 2^-24·(|F| + e), so
// e = (1 + 2^-8)·(2^-23·|F| + 2^-24·|w|) + 2^-140 keeps V and F inside
// (rounds_alike.hpp); the |w| part is built once per row with w
// (float_bounds), and the check is then two operations. A result
// that may be ±0 (|F| < e) falls back, as does a non-finite one (F ± e is
// then NaN, or infinite with F's sign; F is NaN only where x is, and
// carries x's payload as the float64 sum does). Scales within 2^±60 only:
// x·s then can neither overflow nor be subnormal. (The |F| part makes
// F ± e leave F, which matters where F is itself a halfway point; the |w|
// part matters where x·s is inexact in float32 and cancels v: the two
// tests of test_half_precision.py that break each part.)
// Building w and its bounds costs about a third of adding the row to one
// batch, so a work item takes this route where it adds each row to at
// least kFloatScaleSumsFrom<T> batches. Measured on an AMD EPYC Zen 4, x
// restored before each call (Gaussian, σ = 1 unless said), calls switched
// one by one, medians of 25; 1 / 2 threads:
// - AVX-512, against add_row_exact: [4, 2048, 1024] 0.94 / 0.87-0.94x the
//   time (σ = 0.02, 0.2, 5 at two threads: 0.88-0.93x), [16, 128, 1024]
//   0.82 / 0.74-0.83x, [8, 512, 768] 0.89 / 0.76-0.88x, [3, 1024, 1024]
//   0.98 / 0.90-0.97x, [4, 4096, 4096] (rows past L1) 1.01-1.03x; forced
//   onto one batch 1.30x, two 1.00-1.04x. (One batch with a bound that
//   needs no row of bounds, |w| ≤ 2 for sines and cosines, e = (1 + 2^-8)·
//   2^-23·(|F| + 1): 1.13-1.26x add_row_exact's time, [1, 2048, 1024] at
//   σ = 1 and 0.02, [1, 4096, 768]; 1 and 2 threads: building the floats
//   costs more than the float32 sum saves on one batch.) Adding to the same x call after
//   call, as `posenc bench` does, [4, 2048, 1024] at two threads took
//   0.98-1.08 ms against 1.22-1.26 (float32: 0.95-0.97).
// - AVX2, against add_row_float32_first: [4, 2048, 1024] 0.80 / 0.77x
//   (σ = 0.02, 0.2, 5: 0.86-0.93x; added call after call 0.91-0.94 /
//   0.86-0.91x), [16, 128, 1024] 0.70 / 0.72x, [8, 512, 768] 0.75 / 0.73x;
//   two batches 0.78 / 0.81x (σ = 0.02-5: 0.92-0.98x); one batch 0.90 /
//   0.92x, but 0.98-1.00x at σ = 0.02-5 and 0.99-1.06x added call after call.
// - bfloat16 (pairs, add_row_pairs), against SumCheck's bound (scale 1
//   against 1 + 2^-30 in one process): AVX-512 [4, 2048, 1024] 0.85-0.90
//   / 0.81-0.87x (a fourth run at two threads: 1.18x), [3, 2048, 1024]
//   0.87 / 0.88x, [16, 128, 1024] 0.83 / 0.82-0.84x, added call after call 0.84-0.91x
//   (two threads); AVX2 0.93 / 0.91-0.93x, 0.94 / 0.92x, 0.88 / 0.88-0.89x,
//   added call after call 0.91-0.92x. With a range test then (switched by
//   a temporary flag), one batch had taken 1.04-1.14x and two 0.97-1.03x.
//   (bfloat16 vectors seldom fall back with either bound; what is saved is
//   SumCheck's five operations per vector.)
template <class T> constexpr bool kFloatScaleSums = kNarrowFormat<T>;
// (float16 on AVX2 builds its row of floats anyway: from two batches.)
template <class T> constexpr std::int64_t kFloatScaleSumsFrom = kFloat32First<T> && !kPairSums<T> ? 2 : 3;
inline bool float_scale(double scale) {
    const double m = std::fabs(scale);
    return static_cast<double>(static_cast<float>(scale)) == scale && m >= 0x1p-60 && m <= 0x1p60;
}

// The check of a float32-first sum whose scale is a float (see above), with
// b the row's bounds (float_bounds). No range test: F finite, F ± e are
// ordered as their bits are, up to infinity, so both formats' round_checked
// hold up to there too (a value past bfloat16's largest rounds to infinity,
// as V does), and F = ±inf makes F ∓ e NaN, which fails the check. (A test
// of |F| against 2^126 cost float16 sums 6-7% of their time on AVX2.)
struct FloatScaleCheck {
    FloatScaleCheck(double scale, const float* row_bounds) : s(splat(static_cast<float>(scale))), b(row_bounds) {}
    FullFloats error(FullFloats, FullFloats, FullFloats f, std::int64_t j, unsigned&) const {
        return fused_add(magnitude(f), bound, load_full(b + j));
    }
    static constexpr bool usable = true;
    FullFloats s;
    const float* b;
    FullFloats bound = splat(0x1p-23f * (1 + 0x1p-8f));
};

// bfloat16 sums read and write x as it lies, 2·kFullLanes values a vector
// (sixteen on AVX2, 32 on AVX-512), two to a 32-bit lane (rounds_alike.hpp's
// Pairs: firsts, the even columns, and seconds, the odd ones, each a float
// by itself), and check and round both halves at once (round_pairs_checked):
// no widening or narrowing shuffle. The float row is laid out to match
// (pair_float_row). The same bound and the same fallback as
// add_row_float32_first, so the same bits. [4, 2048, 1024], builds in
// alternated processes: on the AVX2 path of an AMD EPYC Zen 3 (1 and 2
// threads) 0.79-0.82x add_row_float32_first's time on interleaved rows,
// 0.85-0.97x on split ones; on the AVX-512 path of a Zen 4, interleaved
// rows, 0.86x at one thread and 0.91x at two (medians).
//
// w = float(v) for each whole vector of 2·kFullLanes columns [j, j + 2·kFullLanes):
// the even columns' values, then the odd ones' (Pairs order).
inline void pair_float_row(const AngleRow& v, std::int64_t n, float* __restrict w) {
    constexpr std::int64_t kN = kFullLanes;
    for (std::int64_t j = 0; j + 2 * kN <= n; j += 2 * kN) {
        const double* __restrict even = v.interleaved ? v.s + j / 2 : v.s + j;
        const double* __restrict odd = v.interleaved ? v.c + j / 2 : v.s + j + 1;
        const std::int64_t step = v.interleaved ? 1 : 2;  // a split row is s then c, one run of 2·half
#pragma omp simd
        for (std::int64_t k = 0; k < kN; ++k) {
            w[j + k] = static_cast<float>(even[k * step]);
            w[j + kN + k] = static_cast<float>(odd[k * step]);
        }
    }
}

// add_row_float32_first for bfloat16 a vector of pairs at a time (kPairSums),
// with w from pair_float_row.
template <class Check>
inline void add_row_pairs(const AngleRow& v, const float* __restrict w, std::int64_t n, double scale,
                          const Check& check, const bfloat16_t* x, bfloat16_t* out, const bfloat16_t* next) {
    constexpr std::int64_t kN = kFullLanes, kLine = kLineBytes / sizeof(bfloat16_t);
    std::int64_t j = 0;
    for (; check.usable && j + 2 * kN <= n; j += 2 * kN) {
        if (next && j % kLine == 0) prefetch_far_line<bfloat16_t>(next + j);
        const Pairs p = load_pairs(x + j);
        const FullFloats u = firsts(p), t = seconds(p), wu = load_full(w + j), wt = load_full(w + j + kN);
        const FullFloats fu = fused_add(u, check.s, wu), ft = fused_add(t, check.s, wt);
        unsigned outside = 0;
        const FullFloats eu = check.error(u, wu, fu, j, outside), et = check.error(t, wt, ft, j + kN, outside);
        Pairs r;
        if (!(outside | round_pairs_checked(fu, eu, ft, et, r))) {
            store_pairs(out + j, r);
            continue;
        }
        add_exact(v, j, scale, x, out);
        add_exact(v, j + kN, scale, x, out);
    }
    for (; j < n; j += kN) add_columns(v, j, n - j < kN ? n - j : kN, scale, x, out);
}

// The columns pair_float_row writes: its whole vectors of pairs.
inline std::int64_t pair_columns(std::int64_t n) { return n - n % (2 * kFullLanes); }

#else
inline void pair_float_row(const AngleRow&, std::int64_t, float*) {}
inline std::int64_t pair_columns(std::int64_t) { return 0; }
#endif

#if !POSENC_HAVE_LANES
template <class T> constexpr bool kFloatScaleSums = false;
template <class T> constexpr std::int64_t kFloatScaleSumsFrom = 0;
inline bool float_scale(double) { return false; }
#endif

// b[j] = (1 + 2^-8)·2^-24·|w[j]| + 2^-140, j < n: FloatScaleCheck's part of
// each bound that depends on the row alone.
inline void float_bounds(const float* __restrict w, std::int64_t n, float* __restrict b) {
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) b[j] = std::fabs(w[j]) * (0x1p-24f * (1 + 0x1p-8f)) + 0x1p-140f;
}

// Columns [0, n) of a row: out[j] = v[j] (kAdd false) or scale·x[j] + v[j]
// (kAdd true, add_run); a contiguous sum prefetches `next`, a row of x it
// adds later (null: none).
// (Contiguous float16/bfloat16 sums go through add_row_exact or add_row_float32_first.)
template <bool kAdd, bool kContiguous, class T>
inline void encode_run(const double* __restrict v, std::int64_t n, double scale, const T* x, std::int64_t xcs,
                       T* out, std::int64_t ocs, const T* next = nullptr) {
    if (!kAdd) {  // the values themselves, rounded once
        write_chunk(v, out, ocs, n);
        return;
    }
    if constexpr (kFloatRowKernel && kContiguous && std::is_same<T, float>::value) {
        add_row_lanes<false>(AngleRow{v, nullptr, false}, n, scale, x, out, next);
        return;
    }
    // float16/bfloat16 sums are bound by their conversions, not by memory:
    // cut into pieces they were measured 10-15% slower, and a whole row in
    // one run keeps them at their former speed.
    if (!kContiguous || next == nullptr || kNarrowFormat<T>) {
        add_run<kContiguous>(v, n, scale, x, xcs, out, ocs);
        return;
    }
    in_pieces<16, T, true>(n, next, [&](std::int64_t p0, std::int64_t pn) {
        add_run<true>(v + p0, pn, scale, x + p0, 1, out + p0, 1);
    });
}

// Pairs of columns [0, 2n) of an interleaved encoding row: column 2i is
// s[i], 2i + 1 is c[i], rounded once (the interleaving fused into the conversion).
template <bool kContiguous, class T>
inline void encode_pairs(const double* __restrict s, const double* __restrict c, std::int64_t n, T* out,
                         std::int64_t ocs) {
    using R = Result<T>;
#if defined(POSENC_HAVE_NARROW_PAIRS)
    // A vector of sines and one of cosines, each rounded to odd and narrowed,
    // then interleaved (lanes.hpp): interleaving the doubles first took a
    // shuffle per four values, as many as the rounding itself.
    if constexpr (kNarrowFormat<T>) {
        if (ocs == 1) {
            std::int64_t i = 0;
            for (; i + kLanes <= n; i += kLanes) narrow_pairs(out + 2 * i, odd_lanes(s + i), odd_lanes(c + i));
            s += i, c += i, out += 2 * i, n -= i;
        }
    }
#endif
    for_row<kDirect<T, kContiguous>>(n, [&](std::int64_t i0, auto m) POSENC_BLOCK_BODY {
        R rb[2 * kBlock];
        R* res = result_chunk(out + 2 * i0 * ocs, ocs, rb);
#pragma omp simd
        for (std::int64_t i = 0; i < m; ++i) {
            res[2 * i] = static_cast<R>(s[i0 + i]);
            res[2 * i + 1] = static_cast<R>(c[i0 + i]);
        }
        write_chunk(res, out + 2 * i0 * ocs, ocs, 2 * m);
    });
}

// n pairs of a contiguous interleaved table row (encode_pairs), two lines
// at a time, each piece first prefetching the bytes kAheadBytes on
// (table_row_ahead).
template <class T>
inline void pairs_ahead(const double* s, const double* c, std::int64_t n, T* out) {
    in_pieces<2, T>(2 * n, reinterpret_cast<const char*>(out) + kAheadBytes, [&](std::int64_t p0, std::int64_t pn) {
        encode_pairs<true>(s + p0 / 2, c + p0 / 2, pn / 2, out + p0, 1);  // p0, pn even: whole pairs
    });
}

#if POSENC_HAVE_LANES
// float32 on the AVX2 and AVX-512 paths: a register of sines and one of
// cosines per store_pairs, each line first prefetching the line kAheadBytes
// on. Against the pieces above, in which GCC interleaved a full vector of
// floats at a time and each piece of two lines cost a score of scalar
// instructions, [8192, 1024] took 0.96x the time at two threads and 0.94x
// at one on the AVX-512 path of an Intel Xeon, 0.91x and 0.87x on its AVX2
// path (medians of alternated builds). Advancing the angles a piece at a
// time and writing each piece straight after, to overlap the stores with
// the arithmetic, was slower (1.03-1.19x, pieces of 16 and 64 pairs). On
// the AVX2 path of an AMD EPYC Zen 3 ([8192, 1024], the same bits, calls
// alternated in one process) two other overlaps did no better: stepping
// the angle row in place as each line of it was written, 1.17x at two
// threads and 1.10x at one; a line of pairs kept in registers, stepped
// through the anchor block's rows and stored to each, 1.09-1.10x and 1.01x.
inline void pairs_ahead(const double* s, const double* c, std::int64_t n, float* out) {
    constexpr std::int64_t kLinePairs = kLineBytes / (2 * sizeof(float));
    std::int64_t i = 0;
    for (; i + kLinePairs <= n; i += kLinePairs) {
        __builtin_prefetch(reinterpret_cast<const char*>(out + 2 * i) + kAheadBytes, 1, 3);
        for (std::int64_t k = 0; k < kLinePairs; k += kDoubleLanes)
            store_pairs(out + 2 * (i + k), load_reg(s + i + k), load_reg(c + i + k));
    }
    encode_pairs<true>(s + i, c + i, n - i, out + 2 * i, 1);
}

// A unit of an interleaved table row: kPairUnit<T> pairs, their sines and
// cosines each in Doubles, stored interleaved and rounded once, as
// encode_pairs stores them.
template <class T> constexpr int kPairUnit = kNarrowFormat<T> ? static_cast<int>(kLanes) : static_cast<int>(kDoubleLanes);
template <class T> using PairUnit = Doubles<kPairUnit<T>>;
POSENC_BLOCK_INLINE void store_unit(float* out, PairUnit<float> s, PairUnit<float> c) { store_pairs(out, s.r[0], c.r[0]); }
POSENC_BLOCK_INLINE void store_unit(double* out, PairUnit<double> s, PairUnit<double> c) {
    const Doubles<2 * kDoubleLanes> d = interleave_regs(s.r[0], c.r[0]);
    std::memcpy(out, d.r, sizeof d.r);
}
template <class T>
POSENC_BLOCK_INLINE void store_unit(T* out, PairUnit<T> s, PairUnit<T> c) { narrow_pairs(out, odd_lanes(s), odd_lanes(c)); }
// The same unit of a split row: its sines (or its cosines) side by side.
POSENC_BLOCK_INLINE void store_lanes(float* out, PairUnit<float> v) { store_narrowed(out, v.r[0]); }
POSENC_BLOCK_INLINE void store_lanes(double* out, PairUnit<double> v) { store_narrowed(out, v.r[0]); }
template <class T>
POSENC_BLOCK_INLINE void store_lanes(T* out, PairUnit<T> v) { narrow_doubles(out, v); }

// The pairs of a row at `out` before its first cache-line boundary (none
// when no pair starts there), at most `half`. NumPy puts large arrays 16
// bytes past a line, and a unit of pairs stored across two lines costs two:
// into such a row, [8192, 1024] float32 took 0.95-0.99 ms where a row
// starting on a line took 0.76-0.82 (2 threads, Intel Xeon; its fill pass
// the same either way). The sum's rows (add_row_units) were tried the same
// way on an AMD EPYC Zen 4: their first columns one at a time up to the line,
// then the units on lines. [4, 2048, 1024] float32 on such a row, 16 bytes
// past a line, still took 1.03-1.13x the time of an aligned copy (1 and 2
// threads) and 0.98-1.11x the time without the head (float64 1.00-1.11x;
// switched call by call); without a prefetch of the head's line in the
// row ahead (whose units' prefetches begin past it) it took 1.35-1.49x.
// Not adopted.
template <class T>
inline std::int64_t pairs_to_line(const T* out, std::int64_t half) {
    constexpr std::uintptr_t kLine = kLineBytes, kPair = 2 * sizeof(T);
    const std::uintptr_t past = reinterpret_cast<std::uintptr_t>(out) % kLine;
    if (past % kPair != 0) return 0;
    const std::int64_t n = static_cast<std::int64_t>((kLine - past) % kLine / kPair);
    return n < half ? n : half;
}

// Rows [r, r + kRows) of a table (`half` pairs, 2·half columns, interleaved
// or split; row r at out, the next `stride` values on) from the angles (s, c)
// of row r, a unit of pairs at a time: stored to a row, stepped to the next,
// kRows rows, then (if `keep`) written back as the angles of r + kRows. In
// interleaved float32 rows the pairs before row r's first line boundary go
// one at a time, as the last ones do, so that the units' stores start on
// lines (pairs_to_line): into NumPy's rows [8192, 1024] then took
// 0.81-0.88x the time at two threads and 0.78-0.90x at one (Intel Xeon,
// medians of 30 calls, builds alternated in separate processes). Not in the
// other formats: float64 took 0.93-1.02x (one pair of runs 1.38x), and
// float16/bfloat16, whose pairs one at a time convert element by element,
// 1.19-1.46x; with those pairs taken from a whole unit stored into a buffer
// instead, 1.10-1.20x (one pair of runs 1.49x).
template <bool kInterleaved, int kRows, class T>
inline void table_rows(double* __restrict s, double* __restrict c, AngleStep step, std::int64_t half,
                       T* __restrict out, std::int64_t stride, bool keep, const T* next = nullptr) {
    constexpr int kUnit = kPairUnit<T>;
    // Pair i's sine is column kSpread·i of a row, its cosine `cos_at` after it.
    constexpr std::int64_t kSpread = kInterleaved ? 2 : 1;
    const std::int64_t cos_at = kInterleaved ? 1 : half;
    const auto one_pair = [&](std::int64_t i) {
        double rs = s[i], rc = c[i];
        for (int k = 0; k < kRows; ++k) {
            T* o = out + k * stride + kSpread * i;
            o[0] = store<T>(rs), o[cos_at] = store<T>(rc);
            if (k + 1 < kRows || keep) rotate_by_step(rs, rc, step.sin_w[i], step.cos_w[i]);
        }
        if (keep) s[i] = rs, c[i] = rc;
    };
    const std::int64_t head = kInterleaved && std::is_same<T, float>::value ? pairs_to_line(out, half) : 0;
    for (std::int64_t i = 0; i < head; ++i) one_pair(i);
    std::int64_t i = head;
    for (; i + kUnit <= half; i += kUnit) {
        if (next)
            for (int k = 0; k < kRows; ++k) {
                const T* n = next + k * stride + kSpread * i;
                prefetch_far_lines<T>(n, kSpread * kUnit * sizeof(T));
                if constexpr (!kInterleaved) prefetch_far_lines<T>(n + cos_at, kUnit * sizeof(T));
            }
        PairUnit<T> rs = load_doubles<kUnit>(s + i), rc = load_doubles<kUnit>(c + i);
        const PairUnit<T> sw = load_doubles<kUnit>(step.sin_w + i), cw = load_doubles<kUnit>(step.cos_w + i);
        for (int k = 0; k < kRows; ++k) {
            T* o = out + k * stride + kSpread * i;
            if constexpr (kInterleaved) store_unit(o, rs, rc);
            else store_lanes(o, rs), store_lanes(o + cos_at, rc);
            if (k + 1 < kRows || keep)
                for (int j = 0; j < PairUnit<T>::kRegs; ++j) rotate_by_step(rs.r[j], rc.r[j], sw.r[j], cw.r[j]);
        }
        if (keep) std::memcpy(s + i, rs.r, sizeof rs.r), std::memcpy(c + i, rc.r, sizeof rc.r);
    }
    for (; i < half; ++i) one_pair(i);  // the last pairs
}

// `rows` rows of a table (as table_rows), whose positions follow row 0's
// (s, c) a step at a time, four rows to a pass. Split rows (c after s) took
// this path later than interleaved ones: [8192, 1024] into out=, on the
// Zen 4, against row by row (builds alternated, 2 / 1 threads), float32
// 0.85 / 1.83 against 1.71 / 3.79 ms (AVX2 path 1.20 / 2.16 against 1.98 /
// 3.62), float64 2.22 / 3.57 against 2.60 / 4.91, float16 0.95 / 2.26
// against 1.25 / 2.34, bfloat16 1.29 / 2.59 against 1.27 / 2.55.
// Row by row, each step read the angle row from memory and wrote it back and
// the next loop read it again to store it: per register of pairs, six loads
// and three stores for one row; so the loads and stores, not the arithmetic,
// set the time (on the AVX-512 path of an AMD EPYC Zen 4, [256, 1024] into
// L2, 242 ns a row; the same loop with the angles kept in registers, ~120).
// Four rows to a pass share a load and a store of the angles and write four
// streams of the table at once. [8192, 1024] float32, calls alternated in
// one process, against row by row: AVX-512 path of a Zen 4, 1.8-2.0 against
// 2.8-3.6 ms at one thread, 0.97-0.98 against 1.25-1.6 ms at two; into L2
// 184 against 242 ns a row; its AVX2 path 2.12 against 2.11 ms at one thread,
// 1.17 against 1.40 at two. Two rows to a pass, 186 ns a row into L2, eight
// no faster than four; prefetching the rows of the next pass, a line per
// line stored, 1.6-1.9 ms at two threads. (A register of pairs at a time
// stepped through all 32 rows of an anchor block took 2.2-2.3 ms at one
// thread: the stores to 32 pages at once waited on memory.) On the Zen 4
// storing the float32 units with non-temporal stores (whole aligned lines,
// no reads for ownership) took 1.04 / 0.98x the time at 2 / 1 threads; but
// each unit prefetching into L2 its lines of the next pass's rows (where
// far-ahead lines go into L2: prefetch_far_lines, prefetch.hpp; none
// elsewhere) took 0.81-0.85 / 0.77-0.82x the time of none in float32 and
// 0.83-0.84 / 0.81x in float64 ([8192, 1024], the two switched call by call
// in one process, one to three runs each), float32 then at 0.66-0.70 of a fill
// pass of the same buffer at 2 threads, against 0.55-0.57 without. (float16
// and bfloat16, whose far-ahead lines go into L1, prefetch none here: into
// L2 they took 0.88-1.00x the time.)
template <bool kInterleaved, class T>
inline void table_block(double* s, double* c, AngleStep step, std::int64_t half, std::int64_t rows, T* out,
                        std::int64_t stride) {
    constexpr int kRowsPerPass = 4;
    const bool ahead = far_into_l2<T>();
    std::int64_t r = 0;
    for (; r + kRowsPerPass <= rows; r += kRowsPerPass)
        table_rows<kInterleaved, kRowsPerPass>(
            s, c, step, half, out + r * stride, stride, r + kRowsPerPass < rows,
            ahead && r + 2 * kRowsPerPass <= rows ? out + (r + kRowsPerPass) * stride : nullptr);
    for (; r < rows; ++r) table_rows<kInterleaved, 1>(s, c, step, half, out + r * stride, stride, r + 1 < rows);
}
// Where tables take four rows to a pass (table_block): float32 everywhere,
// the other formats on the AVX-512 path. [8192, 1024], calls alternated in
// one process, AMD EPYC Zen 4, 1 / 2 threads, against row by row: AVX-512
// float64 3.83 / 2.18 against 4.21 / 2.32 ms, float16 2.06 / 1.00 against
// 2.32 / 1.20, bfloat16 2.48 / 1.21 against 2.69 / 1.38. On the AVX2 path
// float64 took 4.09 / 2.24 against 3.81 / 2.19 ms; float16 at one thread
// 2.80 against 2.33 (its units of sixteen doubles and the step outgrow the
// 16 registers).
template <class T> constexpr bool kBlockTables = std::is_same<T, float>::value || kDoubleLanes == 8;
#else
template <class T> constexpr bool kBlockTables = false;
template <bool kInterleaved, class T>
inline void table_block(double*, double*, AngleStep, std::int64_t, std::int64_t, T*, std::int64_t) {}
#endif

// A table row of `cols` columns from the sines s and cosines c (`half` each):
// interleaved [s0 c0 s1 c1 ...] or split [s0 s1 ... c0 c1 ...]. The
// contiguous case is its own instantiation, compiled without strides.
template <bool kInterleaved, bool kContiguous, class T>
inline void table_row(const double* s, const double* c, std::int64_t half, std::int64_t cols, T* out,
                      std::int64_t ocs) {
    if (kContiguous) ocs = 1;
    if (kInterleaved) {
        encode_pairs<kContiguous>(s, c, cols / 2, out, ocs);
        if (cols % 2) out[(cols - 1) * ocs] = store<T>(s[cols / 2]);  // a row cut after a sine (2-D/3-D layouts)
    } else {
        encode_run<false, kContiguous>(s, 2 * half, 1.0, static_cast<const T*>(nullptr), 0, out, ocs);  // c follows s
    }
}

// A contiguous table row (as table_row) two lines at a time, each piece first
// prefetching the bytes a page ahead of it: in a table of the usual width,
// the same columns of the row written next. Without it each row's stores
// wait on lines the hardware prefetchers do not fetch across the page
// boundary. Measured, one thread, [8192, 1024] float32, alternated calls:
// 340-480 ns a row without, 325-360 with when the machine was loaded; the
// same within the noise when it was not; 4, 8 or 16 lines per piece no
// better, 8 KiB ahead worse. float16/bfloat16 rows, bound by their
// conversions, are written whole (in pieces ~3% slower).
template <bool kInterleaved, class T>
inline void table_row_ahead(const double* s, const double* c, std::int64_t half, std::int64_t cols, T* out) {
    if (kNarrowFormat<T>) return table_row<kInterleaved, true>(s, c, half, cols, out, 1);
    if (kInterleaved) {
        pairs_ahead(s, c, cols / 2, out);
        if (cols % 2) out[cols - 1] = store<T>(s[cols / 2]);  // a row cut after a sine
    } else {
        const char* ahead = reinterpret_cast<const char*>(out) + kAheadBytes;
        in_pieces<2, T>(2 * half, ahead, [&](std::int64_t p0, std::int64_t pn) {
            write_chunk(s + p0, out + p0, 1, pn);  // c follows s
        });
    }
}

// Where a float32 sum's time goes (AVX2 path, AMD EPYC Zen 3, [4, 2048,
// 1024], calls alternated in one process): at two threads it took 0.65 of a
// read-modify-write pass of x; with the angle rows left unstepped (wrong
// values, for timing only) 0.81; with a plain multiply in place of the
// widening FMA and narrowing, 0.65 again. So the adds wait on memory, and the
// angles (~170 ns a row per thread) come on top. Overlapping the two did not
// pay: stepping the next row's angles, and interleaving them, four pairs per
// line added in every batch's pass took 0.95-0.96x this time at two threads
// (0.93-1.00x at one) on [4, 2048, 1024] but 1.2-1.28x on [1, 8192, 1024] and
// 1.05-1.09x on split rows; eight pairs per line in the first batch's pass
// alone 1.0-1.18x. On the AVX-512 path of an Intel Xeon (2 threads, [4, 2048,
// 1024], calls alternated in one process, the same bits) the next row's
// angles stepped and interleaved a register of pairs per line added, in the
// last batch's pass or spread over every batch's, took 1.08-1.18x this time,
// though with its angle rows left unstepped (wrong values, for timing only)
// this order reaches 0.90-0.92 of the read-modify-write pass against
// 0.72-0.80. Adding a block of up to 32 rows to one batch before the next
// (each batch's rows in memory order) measured within the noise of this
// order. On the AVX-512 path of an AMD EPYC Zen 4 (one thread, calls
// alternated in one process) that batch-by-batch order, with the angles left
// unstepped and a plain multiply for the add, ran at the read-modify-write
// pass's speed (1.06 against 1.00 ms) where this order took 2.4 ms; but built
// for real, up to 256 KiB of a block's rows kept and each batch's rows added
// from them, float32 sums took 1.3-1.4x this order's time: the rows come back
// from L2, and the widening, FMA and narrowing (0.165 ns a float in cache,
// ~10 cycles per 16) no longer overlap the memory stalls. Stepping the angles
// in registers as tables do (table_block), one row to a pass with every
// batch's row added from them, did not pay either on that Zen 4 (AVX-512, two
// runs of 30 alternated calls at two threads): [4, 2048, 1024] 1.11-1.20
// against 1.01-1.14 ms, [1, 8192, 1024] 1.68-1.70 against 1.67-1.73, [8, 512,
// 768] 0.39-0.46 against 0.26 (at one thread 2.29 against 2.56 ms on the
// first); on its AVX2 path 1.18-1.25x the time; two and four rows to a pass,
// or prefetching the next pass's rows, slower still.
// On the AVX-512 path of an Intel Xeon (512-bit FMAs in flight, 3.4 GHz by
// a dependent imul chain beside them) the sum is bound by its arithmetic
// as much as by memory. A standalone copy of add_row_lanes's float loop (g++ -O2,
// intrinsics), on a row in L1, takes ~1.65 ns per 16 floats, ~5.7 cycles,
// where its five 512-bit operations (two conversions, each one on port 0
// and one on port 5, and the FMA) need 5 on the two ports that execute
// them; with the widening hoisted out (timing only) ~1.15 ns. Fitted over
// batch counts at one thread on [b, 64, 1024] (in L2): 0.124 µs a batch
// row, 0.14 µs a position's
// angles (the call's overhead included). At two threads on [4, 2048, 1024]
// that is ~0.6 ms a thread, as long as the read-modify-write pass (0.56-0.65
// ms), and the sum takes 0.74-0.88 ms: the two overlap only in part.
// Prefetching the next row for reading into L2 instead (prefetcht1,
// prefetcht2), one, two or four rows ahead, took 1.05-1.12x the time there
// (on a Zen 4 it was faster, and is used: prefetch.hpp); for
// writing into L1 two rows ahead 1.03-1.06x, four 1.13-1.15x (calls
// alternated with the pass, bests of 3 x 40, with and without x restored
// before each call).
//
// Rows [0, rows) in anchor blocks; each block of rows is encoded into
// batches [b0, b1) of every operand, so a row's sines are computed once for
// all batches. Work items are (block, batch slice) pairs, so a short
// sequence with many batches still uses every thread.
// A float32/float64 sum's item adds its rows to at most
// sum_batches_per_item() batches (4 on an AMD EPYC Zen 4, unlimited
// elsewhere: not measured), though each further slice computes the block's
// angles again: with every batch's row of a position added in turn, the
// rows far apart in flight outnumber what the hardware prefetchers follow,
// as in learned.cpp's run_in_memory_order. On the Zen 4 (calls switched one
// by one, x restored before each, best of 20, two runs; [32, 512, 768], [64,
// 128, 768], [16, 1024, 1024], [8, 1024, 768]) groups of 4 took, as a share
// of the time with every batch in one item: float32 at 2 threads 0.68-1.03
// (interleaved rows; split rows 0.73-0.82), at 1 thread 0.71-0.97; float64
// at 2 threads 0.84-0.99. Groups of 8 measured as one item, of 2 between.
// float16 sums, bound by their arithmetic, took 1.09-1.32x the time in
// groups of 4, so the narrow formats keep every batch in one item.
template <bool kAdd, bool kInterleaved, class T>
void run(const SinusoidalArgs& a, double scale, const T* x, const RowLayout* xl, T* out, const RowLayout& ol) {
    const std::int64_t half = a.half;
    const std::int64_t blocks = (a.rows + kAnchorRows - 1) / kAnchorRows;
    int threads = plan_threads(blocks * ol.batches, kAnchorRows * (a.cols + 4));
    std::int64_t slices = blocks < threads ? (ol.batches < threads ? ol.batches : threads) : 1;
    if (kAdd && !kNarrowFormat<T>) {  // float32/float64 sums: at most sum_batches_per_item() batches an item
        const std::int64_t most = sum_batches_per_item(), fewest = ol.batches / most + (ol.batches % most != 0);
        slices = slices > fewest ? slices : fewest;
    }
    const std::int64_t items = blocks * (slices > 0 ? slices : 1);
    threads = threads < items ? threads : static_cast<int>(items);

    // Per thread: the angle row (sines, then cosines), for an interleaved
    // sum the row interleaved, for a float16/bfloat16 sum in float32 first
    // the row as floats (and their bounds, FloatScaleCheck); plus the
    // one-position step shared by all.
    constexpr bool kNarrowRows = kAdd && kNarrowFormat<T> && POSENC_HAVE_LANES;
    // Each placed in its page (buffer.hpp): the angle row a few lines past
    // the first output row's offset, the step a quarter page past the row's,
    // so that the loops streaming two of them at the same rate (a float32
    // table row from the angle row, the angle row from the step) load lines
    // last stored to most of a page before. Where malloc put them had
    // decided it: on the AVX-512 path of an AMD EPYC Zen 4 (one thread,
    // [8192, 1024] float32) the table took 2.1-3.7 ms depending on where in
    // its page the angle row began, all else the same. Placed as
    // here against the layout before (step, then each thread's row), calls
    // alternated in one process, 1 / 2 threads: float32 table 2.54 / 1.22
    // against 2.94 / 1.24 ms, float64 4.33 / 2.38 against 4.72 / 2.55,
    // float16 within 6%; the float32 sum [4, 2048, 1024] at two threads 1.09
    // against 1.24 ms.
    constexpr std::uintptr_t kRowAhead = 256, kStepAhead = kRowAhead + kPageBytes / 4;
    const std::int64_t float_row_doubles = kFloatScaleSums<T> ? a.cols + 4 : a.cols / 2 + 1;
    const std::int64_t per_thread = kPageDoubles + 4 * half + (kNarrowRows ? float_row_doubles : 0);
    const bool scale_is_float = kFloatScaleSums<T> && float_scale(scale);
    const std::uintptr_t out_page = page_offset(out + (ol.batches ? ol.batch_offsets[0] : 0));
    Scratch scratch(kPageDoubles + 2 * half + per_thread * threads);
    const AngleStep step = angle_step(a.inv_freq, half, a.rows, at_page_offset(scratch.data(), out_page + kStepAhead));
    const bool contiguous = ol.col_stride == 1 && (!kAdd || xl->col_stride == 1);
    // (Rows of whole pairs only: step_and_add_row steps the pairs it adds.)
    const bool wide_pairs_in_registers = kPairsInRegisters && kAdd && kInterleaved && !kNarrowFormat<T> &&
                                         contiguous && a.cols == 2 * half && sum_interleaves_in_registers();
    // A sum prefetches the row of x it visits rows_ahead_bytes() of rows
    // later, `ahead` visits on (a line per line added, prefetch.hpp). float64
    // rows, added in prefetched pieces (encode_run), prefetch the next row:
    // two 8 KiB rows ahead they took 1.05-1.10x the time at one thread (Zen 5).
    const std::int64_t row_bytes = a.cols * static_cast<std::int64_t>(sizeof(T)), ahead_bytes = rows_ahead_bytes();
    const std::int64_t ahead =
        std::is_same<T, double>::value || row_bytes >= ahead_bytes ? 1 : ahead_bytes / row_bytes;

    // Blocks start at an anchor row (angles.hpp), so an item's values do not
    // depend on the thread that claims it.
    parallel_claims(items, threads, [&](std::int64_t item, int t) {
        double* mine = at_page_offset(scratch.data() + kPageDoubles + 2 * half + per_thread * t,
                                      out_page + kRowAhead);
        AngleRows angles(a.positions, a.inv_freq, half, step, mine);
        double* interleaved = mine + 2 * half;
        float* row32 = reinterpret_cast<float*>(mine + 4 * half);
        float* bounds32 = row32 + a.cols + 4;  // float_bounds' b
        const std::int64_t block = item / slices, slice = item % slices;
        const std::int64_t b0 = ol.batches * slice / slices, b1 = ol.batches * (slice + 1) / slices;
        const std::int64_t r0 = block * kAnchorRows;
        const std::int64_t r1 = r0 + kAnchorRows < a.rows ? r0 + kAnchorRows : a.rows;
        const bool pairs_in_registers = wide_pairs_in_registers && b1 - b0 <= kPairsInRegistersUpTo;
        const bool float_scale_sums = scale_is_float && b1 - b0 >= kFloatScaleSumsFrom<T>;
        // A table's block of consecutive positions a few rows at a time,
        // its angles stepped in registers (table_block).
        if constexpr (kBlockTables<T> && !kAdd) {
            if (contiguous && b1 - b0 == 1 && a.cols == 2 * half && angles.steps_through(r0, r1)) {
                angles.seek(r0);
                table_block<kInterleaved>(angles.s(), angles.c(), angles.step(), half, r1 - r0,
                                          out + ol.batch_offsets[b0] + r0 * ol.row_stride, ol.row_stride);
                return;
            }
        }
        for (std::int64_t row = r0; row < r1; ++row) {
            // Where the sum interleaves in registers, its first batch's pass
            // steps the angle row too (step_and_add_row).
            const bool step_in_sum = pairs_in_registers && angles.steps_to_next(row);
            if (step_in_sum) angles.stepped_to(row);
            else angles.seek(row);
            // The sum reads the encoding row in the output's layout, so
            // that adding it to each batch is an element-by-element pass:
            // the split row is the angle row itself; an interleaved one is
            // built once per row and reused by every batch (stepped and
            // interleaved in one pass over the row instead of two,
            // 1.00-1.05x: AVX-512 path, Intel Xeon, calls alternated), except
            // where float32 and float64 sums interleave in registers
            // (pairs_in_registers, kPairsInRegisters). Contiguous
            // float16/bfloat16 sums read the sines and cosines themselves
            // (add_row_exact, add_row_float32_first: the row as floats) and
            // need no interleaved doubles.
            const AngleRow angle_row{angles.s(), angles.c(), kInterleaved};
            const bool narrow_row = kNarrowRows && contiguous;
            const double* pe = angles.s();
            if constexpr (kAdd && kInterleaved) {
                if (!narrow_row && !pairs_in_registers) {
#pragma omp simd
                    for (std::int64_t i = 0; i < half; ++i) {
                        interleaved[2 * i] = angles.s()[i];
                        interleaved[2 * i + 1] = angles.c()[i];
                    }
                    pe = interleaved;
                }
            }
            if (narrow_row && kPairSums<T>) pair_float_row(angle_row, a.cols, row32);  // Pairs order
            else if (narrow_row && (kFloat32First<T> || float_scale_sums)) float_row(angle_row, a.cols, row32);
            if (narrow_row && float_scale_sums)  // (over the floats the row has)
                float_bounds(row32, kPairSums<T> ? pair_columns(a.cols) : a.cols, bounds32);
            for (std::int64_t b = b0; b < b1; ++b) {
                T* o = out + ol.batch_offsets[b] + row * ol.row_stride;
                if constexpr (kAdd) {
                    const T* xi = x + xl->batch_offsets[b] + row * xl->row_stride;
                    // The row to prefetch (rows_ahead_bytes): `ahead` visits on,
                    // in the order (row, batch) of this item.
                    const std::int64_t visit = (row - r0) * (b1 - b0) + (b - b0) + ahead;
                    const std::int64_t next_row = r0 + visit / (b1 - b0), next_b = b0 + visit % (b1 - b0);
                    const T* next = next_row < r1 ? x + xl->batch_offsets[next_b] + next_row * xl->row_stride : nullptr;
                    if constexpr (kPairsInRegisters && kInterleaved && !kNarrowFormat<T>) {
                        if (pairs_in_registers) {
                            if (step_in_sum && b == b0)
                                step_and_add_row(angles.s(), angles.c(), angles.step(), a.cols, scale, xi, o, next);
                            else
                                add_row_lanes<true>(angle_row, a.cols, scale, xi, o, next);
                            continue;
                        }
                    }
#if POSENC_HAVE_LANES
                    if constexpr (kNarrowRows) {
                        if (narrow_row) {
                            const FloatScaleCheck tight(scale, bounds32);
                            const SumCheck general(scale);
                            if constexpr (kPairSums<T>) {
                                if (float_scale_sums)
                                    add_row_pairs(angle_row, row32, a.cols, scale, tight, xi, o, next);
                                else
                                    add_row_pairs(angle_row, row32, a.cols, scale, general, xi, o, next);
                            } else if (float_scale_sums)
                                add_row_float32_first(angle_row, row32, a.cols, scale, tight, xi, o, next);
                            else if constexpr (kFloat32First<T>)
                                add_row_float32_first(angle_row, row32, a.cols, scale, general, xi, o, next);
                            else
                                add_row_exact(angle_row, a.cols, scale, xi, o, next);
                            continue;
                        }
                    }
#endif
                    if (contiguous) encode_run<true, true>(pe, a.cols, scale, xi, 1, o, 1, next);
                    else encode_run<true, false>(pe, a.cols, scale, xi, xl->col_stride, o, ol.col_stride);
                } else if (contiguous) {
                    table_row_ahead<kInterleaved>(angles.s(), angles.c(), half, a.cols, o);
                } else {
                    table_row<kInterleaved, false>(angles.s(), angles.c(), half, a.cols, o, ol.col_stride);
                }
            }
        }
    });
}

template <bool kAdd, class T>
void run_layout(const SinusoidalArgs& a, double scale, const T* x, const RowLayout* xl, T* out,
                const RowLayout& ol) {
    if (a.interleaved) run<kAdd, true>(a, scale, x, xl, out, ol);
    else run<kAdd, false>(a, scale, x, xl, out, ol);
}

template <class T>
void table(const SinusoidalArgs& a, void* out, const RowLayout& ol) {
    run_layout<false, T>(a, 1.0, nullptr, nullptr, static_cast<T*>(out), ol);
}

template <class T>
void add(const SinusoidalArgs& a, double scale, const void* x, const RowLayout& xl, void* out,
         const RowLayout& ol) {
    run_layout<true, T>(a, scale, static_cast<const T*>(x), &xl, static_cast<T*>(out), ol);
}

}  // namespace

extern const SinusoidalKernels sinusoidal = {
    {table<float>, table<double>, table<half_t>, table<bfloat16_t>},
    {add<float>, add<double>, add<half_t>, add<bfloat16_t>},
};

POSENC_END_TARGET
