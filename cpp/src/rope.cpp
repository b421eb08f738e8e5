// Rotary embeddings: rotate feature pairs of q and k by position·ω_j. Compiled once per ISA.
//
// Memory is the bound: in place, every byte of x is read once and written
// once. Work goes in blocks of kAnchorRows rows of one position group: the
// block's cos/sin (already multiplied by the attention scaling, sin negated
// for the inverse) are computed once into a small table that stays in L1,
// then applied to every unit (head) of every operand (q and k). Angles come
// from angles.hpp in float64: exact anchors at every block start and the
// angle-addition recurrence in between, or a direct vector sincos per row
// when positions are not consecutive (per-batch positions, M-RoPE) and for
// multi-axis coordinates (θ_j = Σ_a coords[a]·freqs[a, j], summed in float64
// in axis order). Caller tables (float64 cos/sin) replace the trigonometry.
//
// Precision: float64, float16 and bfloat16 results are the float64 rotation
// (u·c fused with the rounded product v·s on the AVX2/AVX-512 paths) rounded
// once. float16/bfloat16 rows go whole vectors at a time through
// registers. bfloat16 vectors (and float16 ones on the AVX2 path) rotate in
// float32 and keep that result where a rigorous error bound shows it rounds
// as the float64 rotation (rounds_alike.hpp, FloatTables below); the others
// take the float64 route (widened, rotated, rounded to odd then to nearest:
// lanes.hpp), the same double and the same rounding as the element-wise
// rest of a row, so the same bits.
// float32 data rotate in float32, with cos/sin rounded to
// float32 once: each output is u·c − v·s where c and s carry one rounding
// each (relative 2^-24), the products one each (one of them fused into an FMA
// on the AVX2/AVX-512 paths) and the difference one, so the error is below
// 3·2^-24·sqrt(u² + v²) (|c|, |s| ≤ 1 and |u·c| + |v·s| ≤ sqrt(u² + v²)) —
// about 2.5e-7 for inputs of magnitude 1 — at any position; the angles
// themselves are exact to ~1e-9 rad at positions of 2^23. Doing the float32
// rotation in float32 halves the register width per element and keeps the
// loop at memory speed. (An attention scaling or caller table beyond 2^32,
// where a float32 product could overflow, sends float32 data through the
// float64 rotation instead: float32_rotation_safe.)
//
// Speed, measured on one thread (FLUX-like [1, 4096, 24, 128] in place, the
// AVX-512 path, against a read-modify-write pass of the same buffer): float32
// reaches ~0.8 of the pass with the page-ahead prefetch of rotate_block.
// float16/bfloat16 do not wait on memory but on arithmetic. The float64
// rotation (widen, two float -> double conversions, swap, multiply, FMA,
// round to odd, narrow) issued ~34 vector operations per 16 elements, nearly
// all 512-bit, which only two ports execute: 4-5x the pass (Intel Xeon). On
// AMD Zen 5, float16's route with its conversions in 256-bit halves and its
// rounding to odd in three operations (lanes.hpp: widen_doubles,
// narrow_doubles) took 0.85-0.88x the time of the 512-bit form. bfloat16 reads
// and writes its pairs as they lie (rounds_alike.hpp's Pairs, with tables
// ordered to match: deal_pairs): its float32 rotation and the check take
// ~25 per 32 elements, the check's sum being the rounded result itself;
// ~2.4% of its vectors fall back on Gaussian data. That is 0.73-0.84x the
// time of the earlier widen-and-shuffle form on FLUX and 0.93-1.05x on NeoX
// and GPT-J [1, 2048, 32, 128] (alternated calls, 1 and 2 threads).
// float16 on the AVX2 path: the float32 rotation and its check took
// 0.88-0.97x the float64 route's time on NeoX and GPT-J (AMD EPYC, Zen 3,
// two builds alternated, one thread; the same build against itself
// 0.95-1.02x). The loop is bound by its vector operations, not by its
// conversions or its fallbacks: an integer form of the check (one
// conversion fewer, five integer operations more) and redoing the failed
// vectors after the row from copies (no branch on the check) were both
// slower. Without the check the rotation would take ~0.6x float32's time.
// Interleaved (GPT-J) rows parted into their u and v (a byte shuffle and a
// 64-bit permute per 16 features) and rotated in the NeoX form, one error
// bound per pair instead of per feature, took 1.13-1.16x the time (one and
// two threads, builds in alternated processes; the same bits). A guess, not
// measured: a check then covers 16 features, so more vectors fall back.
#include "posenc/vector_width_256.hpp"
#include "posenc/rope.hpp"

#include <algorithm>
#include <cmath>

#include "posenc/angles.hpp"
#include "posenc/chunks.hpp"
#include "posenc/parallel.hpp"
#include "posenc/prefetch.hpp"
#include "posenc/rounds_alike.hpp"
#include "posenc/buffer.hpp"

POSENC_BEGIN_TARGET
namespace {

// The arithmetic type of the rotation for storage type T (see the header).
template <class T> struct ComputeOf { using type = double; };
template <> struct ComputeOf<float> { using type = float; };

// float32 copies of a block's cos/sin tables (rounded once from its float64
// ones), for the float32 rotation of bfloat16 (and float16) rows, and what
// its error bound needs. Let c, s be the float32 entries of float64 ones C,
// S, |C|, |S| ≤ m, a = |u| + |v|, and F = u·c − fl(v·s) as rotate_pairs and
// rotate_floats form it (one FMA). Then |F − V|, V the float64 rotation of the same u, v, is
// below 3·2^-24·m·a·(1 + 2^-23) (one rounding each of c, s, v·s and F, as
// |u| + 2|v| + a ≤ 3a) plus 2^-52·m·a for V's own roundings and 2^-149 for
// underflow. F ± e rounded to float moves by at most 2^-24·(|F| + e), with
// |F| ≤ m·a·(1 + 2^-20). So e = (1 + 2^-8)·2^-22·m·a + min(a, 2^-100) keeps
// V and F strictly inside (F − e, F + e) as rounded, which is what
// rounds_alike.hpp needs (a is 0, or at least 2^-133 for narrow inputs; for
// zero inputs e = 0, and F is a zero of V's sign: +0 passes the check as it
// is, −0 fails it, since −0 + 0 is +0, and takes the float64 route). `limit` keeps a
// where no product or sum can overflow, and is 0 (the float64 rotation
// everywhere) for tables that are not finite or too small (m < 2^-100: a
// float32 entry's absolute error, 2^-150 at worst, must stay below 2^-24·m).
// Which formats rotate in float32 first (kFloat32First, rounds_alike.hpp):
// bfloat16 (rotate_pairs), whose 16-pair vectors fall back to float64 for
// 2.4% of Gaussian data, and float16 on the AVX2 path (rotate_floats),
// whose 8-feature vectors fall back for 3.9% (GPT-J).
#if POSENC_HAVE_LANES
// Pairs one vector of Pairs rotates (kFullLanes); NeoX rows take two, a
// load of pairs of u and one of v (see rotate_pairs).
constexpr std::int64_t kPairLanes = kFullLanes;
#else
constexpr std::int64_t kPairLanes = 1;
#endif

// One row of FloatTables: for bfloat16 a (c, s) per pair, s with the sign
// of the second feature's term, in the order of its Pairs (deal_pairs);
// for float16 the float64 rows' entries rounded, in their order.
struct FloatRow {
    const float* c;
    const float* s;
    float bound;  // (1 + 2^-8)·2^-22·m
    float limit;  // 2^126 / m
};

struct FloatTables {
    float* c = nullptr;
    float* s = nullptr;
    std::int64_t stride = 0;  // floats per row: the pairs, rounded up to whole vectors (zeros after)
    float bound = 0.0f;
    float limit = 0.0f;
    FloatRow row(std::int64_t r) const { return {c + r * stride, s + r * stride, bound, limit}; }
};

// Floats per row of FloatTables for format T. bfloat16: the pairs of a row
// rounded up to what rotate_pairs reads, whole vectors of kPairLanes pairs
// (interleaved) or of 2·kPairLanes (NeoX). float16: a float64 row's entries
// (2·half interleaved, half NeoX), of which rotate_floats reads whole vectors only.
template <class T>
inline std::int64_t float_row_stride(std::int64_t half, bool interleaved) {
    if (!std::is_same<T, bfloat16_t>::value) return interleaved ? 2 * half : half;
    const std::int64_t v = interleaved ? kPairLanes : 2 * kPairLanes;
    return (half + v - 1) / v * v;
}

// dst[i] = src[stride·i] rounded to float, i < n.
inline void deal(const double* __restrict src, std::int64_t stride, std::int64_t n, float* __restrict dst) {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[stride * i]);
}

// bfloat16's float32 tables of `rows` rows of half pairs (float64 rows c,
// s), in the order rotate_pairs reads them: pair by pair for interleaved
// rows, and for NeoX rows each vector's 2·kPairLanes pairs as its even pairs
// then its odd ones (the firsts and the seconds of a load of pairs). Entries
// past the last pair are zeros: the missing pairs of a last part vector,
// loaded as zeros, rotate to zeros.
inline void deal_pairs(const double* c, const double* s, std::int64_t rows, std::int64_t half, bool interleaved,
                       float* c32, float* s32) {
    const std::int64_t width = interleaved ? 2 * half : half;
    const std::int64_t stride = float_row_stride<bfloat16_t>(half, interleaved);
    for (std::int64_t r = 0; r < rows; ++r) {
        const double* cr = c + r * width;
        const double* sr = s + r * width;
        float* c32r = c32 + r * stride;
        float* s32r = s32 + r * stride;
        std::fill(c32r, c32r + stride, 0.0f);
        std::fill(s32r, s32r + stride, 0.0f);
        if (interleaved) {
            deal(cr, 2, half, c32r);
            deal(sr + 1, 2, half, s32r);
            continue;
        }
        for (std::int64_t b = 0; b < half; b += 2 * kPairLanes) {
            const std::int64_t n = half - b < 2 * kPairLanes ? half - b : 2 * kPairLanes;
            deal(cr + b, 2, (n + 1) / 2, c32r + b);
            deal(sr + b, 2, (n + 1) / 2, s32r + b);
            deal(cr + b + 1, 2, n / 2, c32r + b + kPairLanes);
            deal(sr + b + 1, 2, n / 2, s32r + b + kPairLanes);
        }
    }
}

// The largest magnitude of c[k] and s[k], k < n; infinity where one is not
// finite (or their sum reaches 2^1000), which a max reduction alone would
// not tell: a NaN or infinity spoils the sum.
inline double largest_magnitude(const double* __restrict c, const double* __restrict s, std::int64_t n) {
    double m = 0.0, total = 0.0;
#pragma omp simd reduction(max : m) reduction(+ : total)
    for (std::int64_t k = 0; k < n; ++k) {
        const double a = std::fabs(c[k]) > std::fabs(s[k]) ? std::fabs(c[k]) : std::fabs(s[k]);
        m = a > m ? a : m;
        total += a;
    }
    return total < 0x1p1000 ? m : HUGE_VAL;
}

// A bound m on the magnitudes of a block's scaled cos/sin tables
// (FloatTables). For angles posenc computes, |scale| with room for their
// rounding (angles.hpp: within 1e-14 of the true sine and cosine, so at most
// 1 + 2^-46 in magnitude, then one rounding of the product): no pass over
// the tables. For the caller's tables, their largest entry in the block.
// The bound decides only which vectors take the float64 route, not any bit
// of the result. The pass, a chain of dependent maxima and sums, had taken
// ~5% of a sampled profile of bfloat16 GPT-J [1, 2048, 32, 128] in place at
// one thread (Intel Xeon); without it bfloat16 rotations took 0.91-1.00x
// the time at one thread and 0.89-1.07x at two (NeoX, GPT-J, rotary_dim 96
// on [1, 2048, 32, 128] in place; medians of 25 calls, builds alternated in
// separate processes, three pairs each).
inline double computed_table_bound(double scale) { return std::fabs(scale) * (1 + 0x1p-40); }

// The FloatTables of format T for `rows` rows of half pairs: bfloat16's in
// Pairs order (deal_pairs), float16's entry for entry. m bounds every |c|
// and |s| (computed_table_bound, or the tables' largest_magnitude).
template <class T>
inline FloatTables float_tables(const double* __restrict c, const double* __restrict s, std::int64_t rows,
                                std::int64_t half, bool interleaved, double m, float* c32, float* s32) {
    const std::int64_t width = interleaved ? 2 * half : half;
    if constexpr (std::is_same<T, bfloat16_t>::value) {
        deal_pairs(c, s, rows, half, interleaved, c32, s32);
    } else {
        deal(c, 1, rows * width, c32);
        deal(s, 1, rows * width, s32);
    }
    FloatTables f{c32, s32, float_row_stride<T>(half, interleaved)};
    if (m >= 0x1p-100 && m <= 0x1p100) {
        f.bound = static_cast<float>(0x1p-22 * (1 + 0x1p-8) * m);
        f.limit = static_cast<float>(0x1p126 / m);
    }
    return f;
}

#if POSENC_HAVE_LANES
// The rotation's e (see FloatTables) for inputs with |u| + |v| = a, and
// nonzero when some lane's a is not below FloatTables' limit.
POSENC_BLOCK_INLINE FullFloats error_bound(FullFloats a, FullFloats bound, FullFloats limit, unsigned& out_of_range) {
    out_of_range = not_below(a, limit);
    return fused_add(a, bound, min_lanes(a, splat(0x1p-100f)));
}

// kFullLanes features of an interleaved float16/bfloat16 row at x (a
// pair's features side by side), widened to double, rotated as
// rotate_vector's loops rotate them — the same products, the first of each
// sum fused — and rounded once (odd floats, then narrowed; lanes.hpp) into
// o. x may be o: the features are read before they are written.
template <class T>
POSENC_BLOCK_INLINE void rotate_exact(const T* x, T* o, const double* __restrict c, const double* __restrict s) {
    using D = Doubles<kFullLanes>;
    const D xv = widen_doubles(x), cv = load_doubles<kFullLanes>(c), sv = load_doubles<kFullLanes>(s);
    D r;
    for (int i = 0; i < D::kRegs; ++i) r.r[i] = fused_add(xv.r[i], cv.r[i], mul(swap_pairs(xv.r[i]), sv.r[i]));
    narrow_doubles(o, r);
}

// The same for kFullLanes pairs of a NeoX row: u at xu, v at xv, into ou and ov.
template <class T>
POSENC_BLOCK_INLINE void rotate_exact(const T* xu, const T* xv, T* ou, T* ov, const double* __restrict c,
                                      const double* __restrict s) {
    using D = Doubles<kFullLanes>;
    const D u = widen_doubles(xu), v = widen_doubles(xv);
    const D cv = load_doubles<kFullLanes>(c), sv = load_doubles<kFullLanes>(s);
    D ru, rv;
    for (int i = 0; i < D::kRegs; ++i) {  // (u·c − v·s, v·c + u·s)
        ru.r[i] = fused_sub(u.r[i], cv.r[i], mul(v.r[i], sv.r[i]));
        rv.r[i] = fused_add(v.r[i], cv.r[i], mul(u.r[i], sv.r[i]));
    }
    narrow_doubles(ou, ru);
    narrow_doubles(ov, rv);
}

// rotate_exact's rotations of float16 in float32 instead, with FloatTables'
// c and s, rounded into `out`; false where some lane could round otherwise
// than rotate_exact's (rounds_alike.hpp).
POSENC_BLOCK_INLINE bool rotate_floats(const half_t* x, const float* __restrict c, const float* __restrict s,
                                       FullFloats bound, FullFloats limit, Rounded16& out) {
    const FullFloats xv = widen_full(x), ax = magnitude(xv);
    unsigned bad;
    const FullFloats e = error_bound(ax + swap_pairs(ax), bound, limit, bad);
    return !(bad | round_checked(fused_add(xv, load_full(c), swap_pairs(xv) * load_full(s)), e, out));
}

POSENC_BLOCK_INLINE bool rotate_floats(const half_t* xu, const half_t* xv, const float* __restrict c,
                                       const float* __restrict s, FullFloats bound, FullFloats limit, Rounded16& ou,
                                       Rounded16& ov) {
    const FullFloats u = widen_full(xu), v = widen_full(xv), cv = load_full(c), sv = load_full(s);
    unsigned bad;
    const FullFloats e = error_bound(magnitude(u) + magnitude(v), bound, limit, bad);
    return !(bad | round_checked(fused_sub(u, cv, v * sv), e, ou) | round_checked(fused_add(v, cv, u * sv), e, ov));
}

// Rotated in float32 and rounded where that provably rounds as the float64
// rotation does (rounds_alike.hpp), into `out`: one vector of interleaved
// pairs p (u and v of a pair side by side in a lane). Returns false where
// some lane could round otherwise.
POSENC_BLOCK_INLINE bool rotate_pairs(Pairs p, const float* __restrict c, const float* __restrict s, FullFloats bound,
                                      FullFloats limit, Pairs& out) {
    const FullFloats u = firsts(p), v = seconds(p), cv = load_full(c), sv = load_full(s);
    unsigned bad;
    const FullFloats e = error_bound(magnitude(u) + magnitude(v), bound, limit, bad);
    return !(bad | round_pairs_checked(fused_sub(u, cv, v * sv), e, fused_add(v, cv, u * sv), e, out));
}

// The same for NeoX rows: pu holds 2·kFullLanes consecutive u, pv their v.
// The firsts of the lanes are the even pairs and the seconds the odd ones,
// the order of FloatTables' entries (deal_pairs): c[0, kFullLanes) for the even
// pairs, c[kFullLanes, 2·kFullLanes) for the odd ones.
POSENC_BLOCK_INLINE bool rotate_pairs(Pairs pu, Pairs pv, const float* __restrict c, const float* __restrict s,
                                      FullFloats bound, FullFloats limit, Pairs& out_u, Pairs& out_v) {
    constexpr int kN = kFullLanes;
    FullFloats ru[2], rv[2], e[2];
    unsigned bad = 0;
    for (int h = 0; h < 2; ++h) {
        const FullFloats u = h ? seconds(pu) : firsts(pu), v = h ? seconds(pv) : firsts(pv);
        const FullFloats cv = load_full(c + h * kN), sv = load_full(s + h * kN);
        ru[h] = fused_sub(u, cv, v * sv);
        rv[h] = fused_add(v, cv, u * sv);
        unsigned out_of_range;
        e[h] = error_bound(magnitude(u) + magnitude(v), bound, limit, out_of_range);
        bad |= out_of_range;
    }
    return !(bad | round_pairs_checked(ru[0], e[0], ru[1], e[1], out_u) |
             round_pairs_checked(rv[0], e[0], rv[1], e[1], out_v));
}

// The leading pairs of a contiguous float16/bfloat16 row, rotated in
// registers and rounded once, with no buffer in between: in float32 first
// (rotate_pairs, rotate_floats), a vector whose check fails through
// rotate_exact (the same bits), or through rotate_exact alone (float16 on
// the AVX-512 path). A last part vector of bfloat16 has its missing values
// loaded as zeros (zeros rotate to zeros, which pass), and is left to
// rotate_vector's loops if its check fails, as float16's is. Returns the
// number of pairs done; x may be o.
template <bool kInterleaved, std::int64_t kHalf, class T>
POSENC_BLOCK_INLINE std::int64_t rotate_lanes(const T* x, T* o, const double* __restrict c,
                                              const double* __restrict s, const FloatRow& f, std::int64_t half) {
    if (kHalf > 0) half = kHalf;
    constexpr int kN = kFullLanes;
    // Locals, which stores to o cannot change: kept in registers.
    const float* __restrict fc = f.c;
    const float* __restrict fs = f.s;
    const FullFloats bound = splat(f.bound), limit = splat(f.limit);
    std::int64_t j = 0;  // features (interleaved float16) or pairs done
    if constexpr (!std::is_same<T, bfloat16_t>::value && kInterleaved) {
        for (; j + kN <= 2 * half; j += kN) {
            Rounded16 out;
            if (kFloat32First<T> && rotate_floats(x + j, fc + j, fs + j, bound, limit, out))
                store_rounded(o + j, out);
            else
                rotate_exact(x + j, o + j, c + j, s + j);
        }
        return j / 2;
    } else if constexpr (!std::is_same<T, bfloat16_t>::value) {
        for (; j + kN <= half; j += kN) {
            Rounded16 ou, ov;
            if (kFloat32First<T> && rotate_floats(x + j, x + half + j, fc + j, fs + j, bound, limit, ou, ov)) {
                store_rounded(o + j, ou);
                store_rounded(o + half + j, ov);
            } else {
                rotate_exact(x + j, x + half + j, o + j, o + half + j, c + j, s + j);
            }
        }
        return j;
    } else if constexpr (kInterleaved) {  // kN pairs, 2·kN features a vector
        for (; j + kN <= half; j += kN) {
            Pairs out;
            if (rotate_pairs(load_pairs(x + 2 * j), fc + j, fs + j, bound, limit, out)) {
                store_pairs(o + 2 * j, out);
            } else {
                const std::int64_t k = 2 * j;
                rotate_exact(x + k, o + k, c + k, s + k);
                rotate_exact(x + k + kN, o + k + kN, c + k + kN, s + k + kN);
            }
        }
        if (j == half) return j;
        const std::int64_t n = 2 * (half - j);  // features in the last part vector
        Pairs out;
        if (!rotate_pairs(load_pairs(x + 2 * j, n), fc + j, fs + j, bound, limit, out)) return j;
        store_pairs(o + 2 * j, out, n);
        return half;
    } else {  // 2·kN pairs a vector
        for (; j + 2 * kN <= half; j += 2 * kN) {
            Pairs ou, ov;
            if (rotate_pairs(load_pairs(x + j), load_pairs(x + half + j), fc + j, fs + j, bound, limit, ou, ov)) {
                store_pairs(o + j, ou);
                store_pairs(o + half + j, ov);
            } else {
                for (std::int64_t k = j; k < j + 2 * kN; k += kN)
                    rotate_exact(x + k, x + half + k, o + k, o + half + k, c + k, s + k);
            }
        }
        if (j == half) return j;
        // The last part vectors: half or a quarter of a vector (the tails
        // of rotary_dim 96, 80, 32) load and store their values plainly
        // (load_pairs). Half a vector had gone the float64 route instead,
        // then faster than the masked (AVX-512) or copied (AVX2) part
        // vector: whole calls on [1, 2048, 32, 128] in place, 2 threads, AMD
        // EPYC Zen 5, rotary_dim 96 on the AVX-512 path 0.78 -> 0.56 ms; 80
        // and 112 on the AVX2 path 1.10 -> 0.66 and 1.21 -> 0.84 ms. With
        // plain loads, in float32 first, against that (AMD EPYC Zen 4,
        // bfloat16, medians of builds alternated in separate processes, 1 /
        // 2 threads): on the AVX-512 path rotary_dim 96 0.89 / 0.88x the
        // time, 80 (a quarter vector, masked before) 0.74 / 0.84x, 32 0.87 /
        // 0.89x; on the AVX2 path 80 0.95 / 0.96x.
        const std::int64_t n = half - j;  // pairs in the last part vectors
        Pairs ou, ov;
        if (!rotate_pairs(load_pairs(x + j, n), load_pairs(x + half + j, n), fc + j, fs + j, bound, limit, ou, ov))
            return j;
        store_pairs(o + j, ou, n);
        store_pairs(o + half + j, ov, n);
        return half;
    }
}
#endif

// One vector of `cols` features: rotate the 2·half leading ones, copy the
// rest when out is not x. Features are read and results written a chunk of
// pairs at a time through chunks.hpp (in place for float32/float64, through
// converted buffers for float16/bfloat16). x and o may be the same memory:
// each lane reads its own pair before writing it, and a buffered chunk is
// read whole before it is written. kHalf > 0 fixes the pair count at compile
// time (head_dim 64 and 128 with full rotation): the loop then unrolls
// completely, without the prologue and epilogue that otherwise cost as much
// as the 4-8 vector iterations of a head. GCC keeps it a call per head,
// whose constants are set up again each time; forced inline into
// rotate_block's loop it took 1.06-1.11x the time for bfloat16 NeoX and
// GPT-J [1, 2048, 32, 128] in place and the same for float16 (Intel Xeon, 1
// and 2 threads, medians and bests of 25 calls, builds in separate processes).
template <bool kInterleaved, bool kContiguous, std::int64_t kHalf, class T, class R>
inline void rotate_vector(const T* x, std::int64_t xs, T* o, std::int64_t os, const R* __restrict c,
                          const R* __restrict s, const FloatRow& f, std::int64_t half,
                          std::int64_t cols, bool copy_tail) {
    using W = Wide<T>;
    using Res = Result<T>;
    if (kContiguous) xs = os = 1;
    if (kHalf > 0) half = kHalf;
    std::int64_t done = 0;  // pairs rotated in registers
#if POSENC_HAVE_LANES
    if constexpr (kNarrowFormat<T> && kContiguous) done = rotate_lanes<kInterleaved, kHalf>(x, o, c, s, f, half);
#endif
    // Blocks of pairs: kBlock pairs (interleaved: 2·kBlock features).
    for_row<kDirect<T, kContiguous>>(half - done, [&](std::int64_t j0, auto m) POSENC_BLOCK_BODY {
        const std::int64_t i0 = done + j0;
        W xb[2 * kBlock];
        Res rb[2 * kBlock];
        if (kInterleaved) {
            // Interleaved tables hold each pair's cos twice and its sin as
            // (−s, +s) (see block_table), so out = x·c + swap(x)·s: contiguous
            // loads and stores and one in-register swap, where the (u, v) form
            // needs de- and re-interleaving shuffles.
            const W* xw = read_chunk(x + 2 * i0 * xs, xs, 2 * m, xb);
            Res* ow = result_chunk(o + 2 * i0 * os, os, rb);
            const R* __restrict ci = c + 2 * i0;
            const R* __restrict si = s + 2 * i0;
#pragma omp simd
            for (std::int64_t i = 0; i < m; ++i) {
                const std::int64_t j = 2 * i;
                const R u = static_cast<R>(xw[j]), v = static_cast<R>(xw[j + 1]);
                ow[j] = static_cast<Res>(u * ci[j] + v * si[j]);
                ow[j + 1] = static_cast<Res>(v * ci[j + 1] + u * si[j + 1]);
            }
            write_chunk(ow, o + 2 * i0 * os, os, 2 * m);
        } else {
            const W* uw = read_chunk(x + i0 * xs, xs, m, xb);
            const W* vw = read_chunk(x + (half + i0) * xs, xs, m, xb + kBlock);
            Res* uo = result_chunk(o + i0 * os, os, rb);
            Res* vo = result_chunk(o + (half + i0) * os, os, rb + kBlock);
            const R* __restrict ci = c + i0;
            const R* __restrict si = s + i0;
#pragma omp simd
            for (std::int64_t i = 0; i < m; ++i) {
                const R u = static_cast<R>(uw[i]), v = static_cast<R>(vw[i]);
                uo[i] = static_cast<Res>(u * ci[i] - v * si[i]);
                vo[i] = static_cast<Res>(v * ci[i] + u * si[i]);
            }
            write_chunk(uo, o + i0 * os, os, m);
            write_chunk(vo, o + (half + i0) * os, os, m);
        }
    });
    if (copy_tail)
        for (std::int64_t j = 2 * half; j < cols; ++j) o[j * os] = x[j * xs];
}

// Units [u0, u1) of one operand over rows [r0, r1) of group g; table row
// r − r0 holds that row's cos and sin.
template <bool kInterleaved, bool kContiguous, std::int64_t kHalf, class T, class R>
void rotate_block(const RopeOperand& op, std::int64_t g, std::int64_t u0, std::int64_t u1, std::int64_t r0,
                  std::int64_t r1, const R* ct, const R* st, const FloatTables& f, std::int64_t half,
                  std::int64_t far_rows) {
    const T* x = static_cast<const T*>(op.x);
    T* o = static_cast<T*>(op.out);
    const std::int64_t* xo = op.xl.offsets + g * op.units;
    const std::int64_t* oo = op.ol.offsets + g * op.units;
    const std::int64_t xr = op.xl.row_stride, orr = op.ol.row_stride, xs = op.xl.col_stride, os = op.ol.col_stride;
    const std::int64_t width = kInterleaved ? 2 * half : half;  // table row length
    const std::int64_t bytes = op.cols * static_cast<std::int64_t>(sizeof(T));
    // The walk (below) visits the vectors of one row (rows first) or of one
    // unit (units first) in turn, then steps on. Each visit prefetches
    // (prefetch.hpp) the vector `ahead` outer steps on, about
    // far_ahead_bytes of vectors later whatever the layout: past this
    // item's last row or unit, the next block's vector the walk would
    // reach, up to row far_rows (0: no prefetch, for operands in cache).
    // The bytes a page past the vector, prefetched before, are those the
    // walk reaches next only where rows follow one another ([batch, seq,
    // heads, dim]); in [batch, heads, seq, dim] (seq_axis=-2, the layout of
    // Hugging Face's q and k) they were the next block's, which the other
    // thread takes. Time ÷ that one's, switched call by call (AMD EPYC Zen
    // 4, medians, 1 / 2 threads, two runs, one of them of the form that
    // stops at the item's end, which measured the same: 0.89-1.22x),
    // float32: [1, 32, 2048, 128] seq_axis=-2 0.91-1.04 / 0.33-0.93 (the
    // old walk 1.2-3.4 ms at 2 threads), [4, 32, 512, 128] 0.49-0.57 /
    // 0.53-0.64, GPT-J 0.83-0.93 / 0.43-0.49, apply_rope_qk with 8 key
    // heads 0.88 / 0.38-0.47, FLUX's [1, 24, 4096, 128] 0.88-1.11 /
    // 0.33-0.45, q of a fused qkv projection (rows 3x apart) 0.45-0.54 /
    // 0.42-0.43; [1, 2048, 32, 128] 0.89-1.08 / 0.92-1.02 and k [4, 2048,
    // 8, 128] 0.96-1.14 / 0.84-0.86. The same ten cases in float16 and
    // bfloat16 0.73-1.14 / 0.50-1.07, float64 0.49-1.02 / 0.58-0.99 (one run).
    const std::int64_t units = u1 - u0, rows = r1 - r0;
    const std::int64_t step_bytes = (op.rows_outer ? units : rows) * bytes;  // one outer step of the walk
    const std::int64_t ahead = std::max<std::int64_t>(1, far_ahead_bytes<T>() / step_bytes);
    auto one = [&](std::int64_t u, std::int64_t r) {
        const std::int64_t k = (r - r0) * width;
        // A partial rotation in place (rotary_dim < head_dim) still
        // prefetches whole vectors: with the page-ahead prefetch (above),
        // only the lines it rotates took 0.96-2.55x the time, and twice or
        // four times as far ahead 0.80-1.41x, no consistent gain (AMD EPYC
        // Zen 4, float32 [1, 2048, 32, 128] rotary_dim 32, 64, 96, NeoX and
        // GPT-J, 1 and 2 threads, calls switched one by one). Such rotations touch a quarter to
        // three quarters of each vector's lines, which this CPU fetches more
        // slowly than all of them: at one thread rotary_dim 32 took 1.9-5.7
        // ms (between runs) against 1.1-1.6 for whole heads; in one run 3.5
        // ms, as did NumPy's in-place multiply of that slice (PyTorch's
        // rotation of it 24 ms, NumPy's 21).
        if (kContiguous && far_rows > 0) {
            std::int64_t u2 = u, r2 = r + ahead;  // rows first
            if (!op.rows_outer) {                 // units first: on to the next block's rows past the last unit
                u2 = u + ahead;
                r2 = r;
                for (; u2 >= u1; u2 -= units) r2 += rows;
            }
            if (r2 < far_rows) prefetch_far_lines<T>(x + xo[u2] + r2 * xr, bytes);
        }
        rotate_vector<kInterleaved, kContiguous, kHalf>(x + xo[u] + r * xr, xs, o + oo[u] + r * orr, os, ct + k, st + k,
                                                        f.row(r - r0), half, op.cols, op.copy_tail);
    };
    // Walk memory in the order it is laid out: [seq, heads] rows first,
    // [heads, seq] units first.
    if (op.rows_outer) {
        for (std::int64_t r = r0; r < r1; ++r)
            for (std::int64_t u = u0; u < u1; ++u) one(u, r);
    } else {
        for (std::int64_t u = u0; u < u1; ++u)
            for (std::int64_t r = r0; r < r1; ++r) one(u, r);
    }
}

// Contiguous vectors of h pairs, with h fixed at compile time (rotate_vector's
// kHalf) for the common head sizes: 64 and 32 pairs (head_dim 128 and 64,
// fully rotated) for every format; for float16/bfloat16 also 16 (partial
// rotation of a 128-feature head to 32, as in Pythia and StableLM, or of
// Phi-2's 80 to 32) and 48 (head_dim 96, Phi-3). Measured on an AMD EPYC
// Zen 4, [1, 2048, 32, 128] rotary_dim 32 / 96 and [1, 2048, 32, 96] in place,
// the fixed count against the run-time one switched call by call, medians,
// 1 and 2 threads, two runs: rotary_dim 32 float16 1.07-1.28x faster,
// bfloat16 1.08-1.30x; 48 pairs bfloat16 1.03-1.11x, float16 0.96-1.02x.
// For float32 the fixed 48 pairs (and 128, head_dim 256) took 1.09-1.35x the
// time of the run-time count, and the fixed 16 0.92-1.32x (the two runs
// disagreed), so float32 and float64 keep the run-time count there.
template <bool kInterleaved, class T, class R>
void rotate_contiguous(const RopeOperand& op, std::int64_t g, std::int64_t u0, std::int64_t u1, std::int64_t r0,
                       std::int64_t r1, const R* ct, const R* st, const FloatTables& f, std::int64_t h,
                       std::int64_t far_rows) {
    if (h == 64) return rotate_block<kInterleaved, true, 64, T>(op, g, u0, u1, r0, r1, ct, st, f, h, far_rows);
    if (h == 32) return rotate_block<kInterleaved, true, 32, T>(op, g, u0, u1, r0, r1, ct, st, f, h, far_rows);
    if constexpr (kNarrowFormat<T>) {
        if (h == 16) return rotate_block<kInterleaved, true, 16, T>(op, g, u0, u1, r0, r1, ct, st, f, h, far_rows);
        if (h == 48) return rotate_block<kInterleaved, true, 48, T>(op, g, u0, u1, r0, r1, ct, st, f, h, far_rows);
    }
    rotate_block<kInterleaved, true, 0, T>(op, g, u0, u1, r0, r1, ct, st, f, h, far_rows);
}

template <class T, class R>
void rotate_units(const RopeArgs& a, const RopeOperand& op, std::int64_t g, std::int64_t u0, std::int64_t u1,
                  std::int64_t r0, std::int64_t r1, const R* ct, const R* st, const FloatTables& f,
                  std::int64_t far_rows) {
    const bool contiguous = op.xl.col_stride == 1 && op.ol.col_stride == 1;
    const std::int64_t h = a.half;
    if (a.interleaved) {
        if (!contiguous) rotate_block<true, false, 0, T>(op, g, u0, u1, r0, r1, ct, st, f, h, far_rows);
        else rotate_contiguous<true, T>(op, g, u0, u1, r0, r1, ct, st, f, h, far_rows);
    } else {
        if (!contiguous) rotate_block<false, false, 0, T>(op, g, u0, u1, r0, r1, ct, st, f, h, far_rows);
        else rotate_contiguous<false, T>(op, g, u0, u1, r0, r1, ct, st, f, h, far_rows);
    }
}

inline Positions group_positions(const RopeArgs& a, std::int64_t axis, std::int64_t g) {
    if (!a.positions) return {nullptr, a.start};
    return {a.positions + (axis * a.groups + g) * a.rows, 0.0};
}

// Per-thread buffers: float64 sin/cos of the current row (s, then c = s + half)
// and M-RoPE angles.
struct RowScratch {
    double* s;
    double* c;
    double* theta;
};

// θ_j = Σ_a coords[a]·freqs[a, j] of one row (coords[axes]), into theta[half],
// each product rounded before it is added, as the reference's NumPy sum
// rounds it: GCC compiles this function without -ffp-contract=fast (a
// compiler that ignores the attribute fails tests/test_regressions.py).
// Fused, the angles differed from the reference's in their last bits, which
// at angles of 2^64 (coordinates and frequencies near 2^32; the fuzzer) is
// thousands of radians, and can reach float64 results' last bits at any
// angle. Products
// kept apart by a store (two loops) instead took rope_nd_cos_sin of 65536
// rows of 3 random coordinates 1.05-1.3x the time.
__attribute__((optimize("-ffp-contract=off"))) inline void coords_angles(const double* coords, const double* freqs,
                                                                        std::int64_t axes, std::int64_t half,
                                                                        double* __restrict theta) {
    const double c0 = coords[0];
#pragma omp simd
    for (std::int64_t j = 0; j < half; ++j) theta[j] = c0 * freqs[j];
    for (std::int64_t k = 1; k < axes; ++k) {
        const double ck = coords[k];
        const double* __restrict f = freqs + k * half;
#pragma omp simd
        for (std::int64_t j = 0; j < half; ++j) theta[j] += ck * f[j];
    }
}

// The axis along which coordinate row `cur` is one step (+1) past `prev`, all
// other coordinates equal; −1 otherwise. Neighbouring tokens of a patch grid
// (FLUX's ids, a Qwen2-VL window) are such steps.
inline std::int64_t unit_step(const double* prev, const double* cur, std::int64_t axes) {
    std::int64_t axis = -1;
    for (std::int64_t k = 0; k < axes; ++k) {
        if (cur[k] == prev[k]) continue;
        if (axis >= 0 || cur[k] - prev[k] != 1.0) return -1;  // not prev + 1.0, which rounds from 2^53 on (angles.hpp)
        axis = k;
    }
    return axis;
}

// The sines and cosines of every axis's frequencies (the angle steps of the
// coords source), into buf (2·axes·half doubles): sin of freqs[k, j] at
// [k·half + j], cos at [axes·half + k·half + j].
inline AngleStep coords_step(const RopeArgs& a, double* buf) {
    const std::int64_t n = (a.freq_heads > 0 ? a.freq_heads : 1) * a.axes * a.half;
    if (a.rows > 1) sincos_scaled(1.0, a.freqs, buf, buf + n, n);
    return {buf, buf + n};
}

// cos/sin of rows [r0, r1) of group g, times the attention scaling (sin
// negated for the inverse), rounded once to R into ct/st ([rows, half]).
template <class R>
void block_table(const RopeArgs& a, const AngleStep& step, std::int64_t g, std::int64_t r0, std::int64_t r1,
                 const RowScratch& w, R* ct, R* st, std::int64_t head = 0) {
    const std::int64_t half = a.half;
    const std::int64_t head_offset = head * a.axes * half;  // per-head frequencies and their steps
    const double* freqs = a.freqs + head_offset;
    const double cs = a.scale, ss = a.inverse ? -a.scale : a.scale;
    AngleRows angles(group_positions(a, 0, g), a.inv_freq, half, step, w.s);
    for (std::int64_t r = r0; r < r1; ++r) {
        const double* s;
        const double* c;
        if (a.cos_table) {
            s = a.sin_table + (g * a.rows + r) * half;
            c = a.cos_table + (g * a.rows + r) * half;
        } else if (a.coords) {
            // A row one unit step along axis k from the row before advances by
            // the angle-addition identity with the step sin/cos of freqs[k]
            // (as AngleRows does for 1-D positions, exact anchors at every
            // block start, so threads do not change the result); any other
            // row is evaluated directly. Direct rows cost 2x the rotation of a
            // FLUX row (24 heads of 128) in float32; stepped ones ~nothing.
            const double* cr = a.coords + (g * a.rows + r) * a.axes;
            const std::int64_t k = r > r0 ? unit_step(cr - a.axes, cr, a.axes) : -1;
            if (k >= 0) {
                double* __restrict sr = w.s;
                double* __restrict cr2 = w.c;
                const double* __restrict ss = step.sin_w + head_offset + k * half;
                const double* __restrict sc = step.cos_w + head_offset + k * half;
#pragma omp simd
                for (std::int64_t j = 0; j < half; ++j) {
                    const double s0 = sr[j], c0 = cr2[j];
                    sr[j] = s0 * sc[j] + c0 * ss[j];
                    cr2[j] = c0 * sc[j] - s0 * ss[j];
                }
            } else {
                coords_angles(cr, freqs, a.axes, half, w.theta);
                sincos_scaled(1.0, w.theta, w.s, w.c, half);
            }
            s = w.s;
            c = w.c;
        } else if (a.pair_axis) {
            // M-RoPE: each pair has its own position; evaluate the row directly.
            for (std::int64_t j = 0; j < half; ++j)
                w.theta[j] = a.positions ? position_at(group_positions(a, a.pair_axis[j], g), r) * a.inv_freq[j]
                                         : (a.start + static_cast<double>(r)) * a.inv_freq[j];
            sincos_scaled(1.0, w.theta, w.s, w.c, half);
            s = w.s;
            c = w.c;
        } else {
            angles.seek(r);
            s = angles.s();
            c = angles.c();
        }
        if (a.interleaved) {  // [c0 c0 c1 c1 ...], [−s0 s0 −s1 s1 ...]
            R* cr = ct + (r - r0) * 2 * half;
            R* sr = st + (r - r0) * 2 * half;
#pragma omp simd
            for (std::int64_t j = 0; j < half; ++j) {
                const R cj = static_cast<R>(cs * c[j]), sj = static_cast<R>(ss * s[j]);
                cr[2 * j] = cj;
                cr[2 * j + 1] = cj;
                sr[2 * j] = -sj;
                sr[2 * j + 1] = sj;
            }
        } else {
            R* cr = ct + (r - r0) * half;
            R* sr = st + (r - r0) * half;
#pragma omp simd
            for (std::int64_t j = 0; j < half; ++j) {
                cr[j] = static_cast<R>(cs * c[j]);
                sr[j] = static_cast<R>(ss * s[j]);
            }
        }
    }
}

template <class T, class R>
void apply_as(const RopeArgs& a, const RopeOperand* ops, int n_ops) {
    const std::int64_t half = a.half;
    std::int64_t units = 0, cost = 0;
    for (int i = 0; i < n_ops; ++i) {
        units += ops[i].units;
        cost += ops[i].units * ops[i].cols;
    }
    if (units == 0 || a.rows == 0 || a.groups == 0) return;
    // Work items are (group, block of rows, slice of units): a decode step
    // (one row) with many heads still splits over threads.
    const std::int64_t blocks = (a.rows + kAnchorRows - 1) / kAnchorRows;
    const std::int64_t row_blocks = a.groups * blocks;
    // A rotated element costs a fraction of an "operation" of plan_threads
    // (8-16 per vector instruction, streamed): count 4 per operation, so a
    // second thread starts from ~2^18 elements (1 MB of float32), and a
    // decode step (one row per sequence) stays on the calling thread, where
    // waking a pool would cost more than the work. Measured and not adopted:
    // counting float16/bfloat16 elements one per operation (their rotations
    // wait on arithmetic), which put [32, 1, 32, 128] decode steps on two
    // threads: 0.64-0.80x the time in runs of such calls (AMD EPYC Zen 4, 2
    // threads), but in a loop that also ran a NumPy matmul (OpenBLAS's
    // threads spin after a call) each rotation took 4.3-4.5 ms, not 37 µs.
    // With posenc's workers spinning 3,000 times (_backend.py), not
    // 300,000, such a loop still took 141-275 µs a rotation (10th-90th
    // percentile; 38-55 µs on one thread): OpenBLAS's own workers spin on
    // the second core, and a woken posenc worker waits for it.
    const std::int64_t elements = a.groups * a.rows * cost;
    // Rows of each group that prefetches may reach (rotate_block); none for
    // operands small enough to be in cache (prefetch.hpp's kCachedBytes).
    const std::int64_t far_rows = elements * static_cast<std::int64_t>(sizeof(T)) > kCachedBytes ? a.rows : 0;
    int threads = plan_threads(row_blocks * units, elements / (4 * row_blocks * units) + 1);
    const std::int64_t slices = row_blocks < threads ? (units < threads ? units : threads) : 1;
    const std::int64_t items = row_blocks * slices;
    threads = threads < items ? threads : static_cast<int>(items);

    // Per thread: the block's cos and sin tables (R ≤ double each, rows of
    // 2·half when interleaved), their float32 copies (bfloat16) and three
    // float64 rows; plus the one-position step shared by all.
    const std::int64_t block_rows = a.rows < kAnchorRows ? a.rows : kAnchorRows;
    const std::int64_t table = block_rows * 2 * half;
    const std::int64_t float_table = kFloat32First<T> ? block_rows * float_row_stride<T>(half, a.interleaved) : 0;
    const std::int64_t all_tables = 2 * table + float_table;  // two float tables take one of doubles
    const std::int64_t per_thread = all_tables + 3 * half;
    const std::int64_t steps = a.coords ? 2 * (a.freq_heads > 0 ? a.freq_heads : 1) * a.axes * half
                                        : 2 * half;  // the angle steps, shared by all
    Scratch scratch(steps + per_thread * threads);
    const AngleStep step = a.coords ? coords_step(a, scratch.data())
                                    : angle_step(a.inv_freq, half, a.inv_freq ? a.rows : 1, scratch.data());

    // Each item's arithmetic does not depend on which thread claims it.
    parallel_claims(items, threads, [&](std::int64_t item, int t) {
        double* mine = scratch.data() + steps + per_thread * t;
        R* ct = reinterpret_cast<R*>(mine);
        R* st = ct + table;  // packed: both tables share as few cache lines as possible
        float* c32 = reinterpret_cast<float*>(mine + 2 * table);
        float* s32 = c32 + float_table;
        const RowScratch w{mine + all_tables, mine + all_tables + half, mine + all_tables + 2 * half};
        // Rows [r0, r1) of the tables (for one head's frequencies, or all heads').
        auto tables = [&](std::int64_t g, std::int64_t r0, std::int64_t r1, std::int64_t head) {
            block_table(a, step, g, r0, r1, w, ct, st, head);
            if constexpr (!kFloat32First<T>) return FloatTables{};
            else {
                const double m = a.cos_table ? largest_magnitude(ct, st, (r1 - r0) * (a.interleaved ? 2 : 1) * half)
                                             : computed_table_bound(a.scale);
                return float_tables<T>(ct, st, r1 - r0, half, a.interleaved, m, c32, s32);
            }
        };
        const std::int64_t slice = item % slices, rb = item / slices;
        const std::int64_t g = rb / blocks, r0 = (rb % blocks) * kAnchorRows;
        const std::int64_t r1 = r0 + kAnchorRows < a.rows ? r0 + kAnchorRows : a.rows;
        const std::int64_t u0 = units * slice / slices, u1 = units * (slice + 1) / slices;
        if (a.freq_heads > 0) {  // per-head frequencies (one operand): a table per unit
            for (std::int64_t u = u0; u < u1; ++u) {
                const FloatTables f = tables(g, r0, r1, u % a.freq_heads);
                rotate_units<T>(a, ops[0], g, u, u + 1, r0, r1, ct, st, f, far_rows);
            }
            return;
        }
        const FloatTables f = tables(g, r0, r1, 0);
        std::int64_t first = 0;  // operand i holds units [first, first + units_i)
        for (int i = 0; i < n_ops; ++i) {
            const std::int64_t lo = u0 > first ? u0 - first : 0;
            const std::int64_t hi = u1 - first < ops[i].units ? u1 - first : ops[i].units;
            if (lo < hi) rotate_units<T>(a, ops[i], g, lo, hi, r0, r1, ct, st, f, far_rows);
            first += ops[i].units;
        }
    });
}

// Whether float32 data may rotate in float32 (ComputeOf): while m, the
// largest magnitude of the scaled cos/sin (|scale| for computed angles, as
// |cos|, |sin| <= 1; the caller's tables times |scale| otherwise), is at
// most 2^32. A float32 product u·c or v·s then cannot overflow for inputs
// below 2^94 in magnitude, so the float32 rotation stays within its bound
// (see the header). A larger or non-finite m (an attention scaling near
// float32's range, found by the differential fuzzer at 1.97e38: u·c
// overflowed to ±inf, or inf − inf to NaN, where the rotation itself was
// finite) takes the float64 rotation, rounded once, as float64 data do. A
// real checkpoint's scaling (YaRN, LongRoPE: below 3) keeps the float32 route.
inline bool float32_rotation_safe(const RopeArgs& a) {
    double m = std::fabs(a.scale);
    if (a.cos_table) m *= largest_magnitude(a.cos_table, a.sin_table, a.groups * a.rows * a.half);
    return m <= 0x1p32;  // false for NaN too (0 · inf)
}

template <class T>
void apply(const RopeArgs& a, const RopeOperand* ops, int n_ops) {
    if constexpr (std::is_same<T, float>::value)
        if (!float32_rotation_safe(a)) return apply_as<float, double>(a, ops, n_ops);
    apply_as<T, typename ComputeOf<T>::type>(a, ops, n_ops);
}

// out[j] = scale·v[j] rounded once to T, j < n.
template <class T>
inline void scaled_row(const double* __restrict v, double scale, std::int64_t n, T* out) {
    for_row<kDirect<T, true>>(n, [&](std::int64_t j0, auto m) POSENC_BLOCK_BODY {
        Result<T> buf[kBlock];
        Result<T>* res = result_chunk(out + j0, 1, buf);
#pragma omp simd
        for (std::int64_t j = 0; j < m; ++j) res[j] = static_cast<Result<T>>(scale * v[j0 + j]);
        write_chunk(res, out + j0, 1, m);
    });
}

template <class T>
void cos_sin(const RopeArgs& a, void* cos_out, void* sin_out) {
    const std::int64_t half = a.half;
    const std::int64_t blocks = (a.rows + kAnchorRows - 1) / kAnchorRows;
    const int threads = plan_threads(blocks, kAnchorRows * 2 * (half + 2));
    Scratch scratch(2 * half + 3 * half * threads);
    const AngleStep step = angle_step(a.inv_freq, half, a.inv_freq ? a.rows : 1, scratch.data());
    T* co = static_cast<T*>(cos_out);
    T* so = static_cast<T*>(sin_out);
    parallel_chunks(blocks, threads, [&](std::int64_t begin, std::int64_t end, int t) {
        double* mine = scratch.data() + 2 * half + 3 * half * t;
        AngleRows angles(group_positions(a, 0, 0), a.inv_freq, half, step, mine);
        for (std::int64_t r = begin * kAnchorRows; r < end * kAnchorRows && r < a.rows; ++r) {
            if (a.coords) {
                coords_angles(a.coords + r * a.axes, a.freqs, a.axes, half, mine + 2 * half);
                sincos_scaled(1.0, mine + 2 * half, angles.s(), angles.c(), half);
            } else {
                angles.seek(r);
            }
            scaled_row(angles.c(), a.scale, half, co + r * half);
            scaled_row(angles.s(), a.scale, half, so + r * half);
        }
    });
}

}  // namespace

extern const RopeKernels rope = {
    {apply<float>, apply<double>, apply<half_t>, apply<bfloat16_t>},
    {cos_sin<float>, cos_sin<double>, cos_sin<half_t>, cos_sin<bfloat16_t>},
};

POSENC_END_TARGET
