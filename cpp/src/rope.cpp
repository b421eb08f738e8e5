// Rotary embeddings: rotate feature pairs of q and k by position·ω_j. Compiled once per ISA.
//
// Memory is the bound: in place, every byte of x is read once and written
// once. Work goes in blocks of kAnchorRows rows of one position group: the
// block's cos/sin (already multiplied by the attention scaling, sin negated
// for the inverse) are computed once into a small table that stays in L1,
// then applied to every unit (head) of every operand (q and k). Angles come
// from angles.hpp in float64: exact anchors at every block start and the
// angle-addition recurrence in between, or a direct vector sincos per row
// when positions are not consecutive (per-batch positions, M-RoPE).
//
// Precision: float64, float16 and bfloat16 data rotate in float64 and are
// rounded once. float32 data rotate in float32, with cos/sin rounded to
// float32 once: each output is u·c − v·s with |c|, |s| ≤ 1 off by at most
// 2^-25 each, and two roundings of the products, so the error is below
// ~3·2^-24·max(|u|, |v|) (≈ 2e-7 for inputs of magnitude 1) at any position,
// against the 4e-6 target; the angles themselves are exact to ~1e-9 rad at
// positions of 2^23. Doing the float32 rotation in float32 halves the
// register width per element and keeps the loop at memory speed.
#include "posenc/rope.hpp"

#include "posenc/angles.hpp"
#include "posenc/convert.hpp"
#include "posenc/parallel.hpp"
#include "posenc/scratch.hpp"

POSENC_BEGIN_TARGET
namespace {

// The arithmetic type of the rotation for storage type T (see the header).
template <class T> struct ComputeOf { using type = double; };
template <> struct ComputeOf<float> { using type = float; };

template <class R, class T> inline R load_as(T v) { return static_cast<R>(load(v)); }
template <> inline float load_as<float, float>(float v) { return v; }
inline float to_storage(float v, float*) { return v; }
template <class T> inline T to_storage(double v, T*) { return store<T>(v); }

// One vector of `cols` features: rotate the 2·half leading ones, copy the
// rest when out is not x. x and o may be the same memory: each lane reads
// its own pair before writing it, so there is no dependence between lanes.
template <bool kInterleaved, bool kContiguous, class T, class R>
inline void rotate_vector(const T* x, std::int64_t xs, T* o, std::int64_t os, const R* __restrict c,
                          const R* __restrict s, std::int64_t half, std::int64_t cols, bool copy_tail) {
    if (kContiguous) xs = os = 1;
    constexpr std::int64_t step = kInterleaved ? 2 : 1;
    const std::int64_t second = kInterleaved ? 1 : half;
#pragma omp simd
    for (std::int64_t i = 0; i < half; ++i) {
        const std::int64_t j1 = i * step, j2 = i * step + second;
        const R u = load_as<R>(x[j1 * xs]), v = load_as<R>(x[j2 * xs]);
        o[j1 * os] = to_storage(u * c[i] - v * s[i], static_cast<T*>(nullptr));
        o[j2 * os] = to_storage(v * c[i] + u * s[i], static_cast<T*>(nullptr));
    }
    if (copy_tail)
        for (std::int64_t j = 2 * half; j < cols; ++j) o[j * os] = x[j * xs];
}

// Units [u0, u1) of one operand over rows [r0, r1) of group g; table row
// r − r0 holds that row's cos and sin.
template <bool kInterleaved, bool kContiguous, class T, class R>
void rotate_block(const RopeOperand& op, std::int64_t g, std::int64_t u0, std::int64_t u1, std::int64_t r0,
                  std::int64_t r1, const R* ct, const R* st, std::int64_t half) {
    const T* x = static_cast<const T*>(op.x);
    T* o = static_cast<T*>(op.out);
    const std::int64_t* xo = op.xl.offsets + g * op.units;
    const std::int64_t* oo = op.ol.offsets + g * op.units;
    const std::int64_t xr = op.xl.row_stride, orr = op.ol.row_stride, xs = op.xl.col_stride, os = op.ol.col_stride;
    auto one = [&](std::int64_t u, std::int64_t r) {
        const std::int64_t k = (r - r0) * half;
        rotate_vector<kInterleaved, kContiguous>(x + xo[u] + r * xr, xs, o + oo[u] + r * orr, os, ct + k, st + k,
                                                 half, op.cols, op.copy_tail);
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

template <class T, class R>
void rotate_units(const RopeArgs& a, const RopeOperand& op, std::int64_t g, std::int64_t u0, std::int64_t u1,
                  std::int64_t r0, std::int64_t r1, const R* ct, const R* st) {
    const bool contiguous = op.xl.col_stride == 1 && op.ol.col_stride == 1;
    if (a.interleaved) {
        if (contiguous) rotate_block<true, true, T>(op, g, u0, u1, r0, r1, ct, st, a.half);
        else rotate_block<true, false, T>(op, g, u0, u1, r0, r1, ct, st, a.half);
    } else {
        if (contiguous) rotate_block<false, true, T>(op, g, u0, u1, r0, r1, ct, st, a.half);
        else rotate_block<false, false, T>(op, g, u0, u1, r0, r1, ct, st, a.half);
    }
}

inline Positions group_positions(const RopeArgs& a, std::int64_t axis, std::int64_t g) {
    if (!a.positions) return {nullptr, a.start};
    return {a.positions + (axis * a.groups + g) * a.rows, 0.0};
}

// Per-thread buffers: float64 sin/cos of the current row and M-RoPE angles.
struct RowScratch {
    double* s;
    double* c;
    double* theta;
};

// cos/sin of rows [r0, r1) of group g, times the attention scaling (sin
// negated for the inverse), rounded once to R into ct/st ([rows, half]).
template <class R>
void block_table(const RopeArgs& a, const AngleStep& step, std::int64_t g, std::int64_t r0, std::int64_t r1,
                 const RowScratch& w, R* ct, R* st) {
    const std::int64_t half = a.half;
    const double cs = a.scale, ss = a.inverse ? -a.scale : a.scale;
    AngleRows angles(group_positions(a, 0, g), a.inv_freq, half, step, w.s, w.c);
    for (std::int64_t r = r0; r < r1; ++r) {
        const double* s;
        const double* c;
        if (a.pair_axis) {
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
        R* cr = ct + (r - r0) * half;
        R* sr = st + (r - r0) * half;
#pragma omp simd
        for (std::int64_t j = 0; j < half; ++j) {
            cr[j] = static_cast<R>(cs * c[j]);
            sr[j] = static_cast<R>(ss * s[j]);
        }
    }
}

template <class T>
void apply(const RopeArgs& a, const RopeOperand* ops, int n_ops) {
    using R = typename ComputeOf<T>::type;
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
    int threads = plan_threads(row_blocks * units, kAnchorRows * (cost / units + 2));
    const std::int64_t slices = row_blocks < threads ? (units < threads ? units : threads) : 1;
    const std::int64_t items = row_blocks * slices;
    threads = threads < items ? threads : static_cast<int>(items);

    // Per thread: the block's cos and sin tables (R ≤ double each) and
    // three float64 rows; plus the one-position step shared by all.
    const std::int64_t per_thread = 2 * kAnchorRows * half + 3 * half;
    Scratch scratch(2 * half + per_thread * threads);
    const AngleStep step{scratch.data(), scratch.data() + half};
    sincos_scaled(1.0, a.inv_freq, scratch.data(), scratch.data() + half, half);

    parallel_chunks(items, threads, [&](std::int64_t begin, std::int64_t end, int t) {
        double* mine = scratch.data() + 2 * half + per_thread * t;
        R* ct = reinterpret_cast<R*>(mine);
        R* st = ct + kAnchorRows * half;
        const RowScratch w{mine + 2 * kAnchorRows * half, mine + 2 * kAnchorRows * half + half,
                           mine + 2 * kAnchorRows * half + 2 * half};
        for (std::int64_t item = begin; item < end; ++item) {
            const std::int64_t slice = item % slices, rb = item / slices;
            const std::int64_t g = rb / blocks, r0 = (rb % blocks) * kAnchorRows;
            const std::int64_t r1 = r0 + kAnchorRows < a.rows ? r0 + kAnchorRows : a.rows;
            block_table(a, step, g, r0, r1, w, ct, st);
            const std::int64_t u0 = units * slice / slices, u1 = units * (slice + 1) / slices;
            std::int64_t first = 0;  // operand i holds units [first, first + units_i)
            for (int i = 0; i < n_ops; ++i) {
                const std::int64_t lo = u0 > first ? u0 - first : 0;
                const std::int64_t hi = u1 - first < ops[i].units ? u1 - first : ops[i].units;
                if (lo < hi) rotate_units<T>(a, ops[i], g, lo, hi, r0, r1, ct, st);
                first += ops[i].units;
            }
        }
    });
}

template <class T>
void cos_sin(const RopeArgs& a, void* cos_out, void* sin_out) {
    const std::int64_t half = a.half;
    const std::int64_t blocks = (a.rows + kAnchorRows - 1) / kAnchorRows;
    const int threads = plan_threads(blocks, kAnchorRows * 2 * (half + 2));
    Scratch scratch(2 * half + 2 * half * threads);
    const AngleStep step{scratch.data(), scratch.data() + half};
    sincos_scaled(1.0, a.inv_freq, scratch.data(), scratch.data() + half, half);
    T* co = static_cast<T*>(cos_out);
    T* so = static_cast<T*>(sin_out);
    parallel_chunks(blocks, threads, [&](std::int64_t begin, std::int64_t end, int t) {
        double* mine = scratch.data() + 2 * half * (t + 1);
        AngleRows angles(group_positions(a, 0, 0), a.inv_freq, half, step, mine, mine + half);
        for (std::int64_t r = begin * kAnchorRows; r < end * kAnchorRows && r < a.rows; ++r) {
            angles.seek(r);
            const double* s = angles.s();
            const double* c = angles.c();
#pragma omp simd
            for (std::int64_t j = 0; j < half; ++j) {
                co[r * half + j] = store<T>(a.scale * c[j]);
                so[r * half + j] = store<T>(a.scale * s[j]);
            }
        }
    });
}

}  // namespace

extern const RopeKernels rope = {
    {apply<float>, apply<double>, apply<half_t>, apply<bfloat16_t>},
    {cos_sin<float>, cos_sin<double>, cos_sin<half_t>, cos_sin<bfloat16_t>},
};

POSENC_END_TARGET
