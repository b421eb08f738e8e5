// Learned position tables: lookup, the fused x + table[p], and the deterministic
// scatter-add gradient. Compiled once per ISA.
#include "posenc/vector_width_256.hpp"
#include "posenc/learned.hpp"

#include "posenc/buffer.hpp"
#include "posenc/chunks.hpp"
#include "posenc/copy_row.hpp"
#include "posenc/parallel.hpp"
#include "posenc/prefetch.hpp"

POSENC_BEGIN_TARGET
namespace {

// One row: out = t (kAdd false, a copy of bit patterns: copy_row.hpp) or
// x + t rounded once (add_rows). The contiguous case is its own instantiation
// so the loops are compiled without strides. x and out may be the same row
// (in place).
template <bool kAdd, bool kContiguous, class T>
inline void embed_row(const T* t, std::int64_t tcs, const T* x, std::int64_t xcs, T* out, std::int64_t ocs,
                      std::int64_t dim) {
    if (kContiguous) tcs = xcs = ocs = 1;
    if (kAdd) {
        add_rows<kContiguous>(x, xcs, t, tcs, out, ocs, dim);
        return;
    }
    using U = Bits<T>;
    copy_row(reinterpret_cast<U*>(out), ocs, reinterpret_cast<const U*>(t), tcs, dim, rows_copied_by_loop());
}

// The same in a call's layout: the contiguous instantiation where every
// operand's columns are (`contiguous`), else the strided one.
template <bool kAdd, class T>
inline void embed_row(bool contiguous, const EmbeddingArgs& a, const T* t, const T* x, std::int64_t xcs, T* out,
                      std::int64_t ocs) {
    if (contiguous) embed_row<kAdd, true>(t, 1, x, 1, out, 1, a.dim);
    else embed_row<kAdd, false>(t, a.table_col_stride, x, xcs, out, ocs, a.dim);
}

// Every operand row k = o·period + i (o < repeats) uses table row
// positions[i]. Work items are (i, slice of o) pairs, i outermost: each table
// row is read from memory once and reused, from cache, for all the rows that
// share it (every batch when positions are [seq]). A short `period` with many
// repeats is cut into slices so that every thread still gets work. Where
// that keeps too many rows far apart in flight (many batches), rows go in
// memory order instead (run_in_memory_order, below).
// Measured against this order on an Intel Xeon (AVX-512 path, float32 [4,
// 2048, 1024] in place, 2 threads, calls alternated with a read-modify-write
// pass of x, bests of 3 x 40): blocks of 8, 32 or 128 positions, each
// block's rows added batch by batch (the same bits), took 1.24-1.35 ms
// against 1.14 with x rewritten by one thread before each call (as the
// bench restores it), 0.83-0.89 against 0.74-0.78 without; prefetching the
// next position's table row as a position starts, 0.94-1.04x (0.97-0.98
// back to back: not clearly faster). On an AMD EPYC Zen 4 (float32 and
// float16 [4, 2048, 1024], [8, 512, 768], [2, 4096, 1024], x restored
// before each call, 1 and 2 threads, calls switched one by one) blocks of
// 8, 32 or 128 positions took 0.94-1.87x this order's time (1.10 or more in
// all but one float16 case). This order reaches 0.73-0.76 of the
// pass back to back (the table adds an eighth to the bytes), 0.61-0.66
// after x is rewritten, and 0.62-0.68 with the table also touched just
// before: its misses are not what is lost.
// Threads claim blocks of kRunBlockBytes of out one after another
// (parallel_blocks), not half the items each. On the Zen 4 (x restored
// before each call, 2 threads, calls switched one by one, medians of 40),
// in a period when the machine ran slow the pool's worker did only 28-40%
// of the work while the calling thread did the rest, and with fixed halves
// the call waited for it: blocks took 0.61 and 0.88x the time of halves on
// float32 [4, 2048, 1024] in place, 0.57 and 0.84x on float16, 0.61 on
// [8, 512, 768]; later, when it ran fast, 0.92-0.99x, 0.89-0.97x and
// 0.89-0.93x. Blocks of 256 KiB or 4 MiB measured about the same as 1 MiB.
constexpr std::int64_t kRunBlockBytes = std::int64_t(1) << 20;

// The operand's rows in memory order instead, each with its table row, in
// the same claimed blocks (as PyTorch's broadcast add goes): `run` with many
// batches keeps batches × threads rows far apart in flight, more streams
// than the hardware prefetchers follow: on an AMD EPYC Zen 4 (float32, 2
// threads) it fell to 0.33-0.49 of the read-modify-write pass on [16 to 64,
// seq, dim], where this order reaches 0.43-0.75. Position by position stays
// where its rows in flight are few (learned_position_streams(): 8 on the
// Zen 4, batches × threads; unlimited on CPUs not measured): there this
// order, which reads each table row once per batch, took 0.97-1.30x its time
// (median 1.15; float32 [4, 2048, 1024] at 1 and 2 threads, float16 at 2,
// [2, 2048, 4096] at 2, [8, 1024, 768] at 1). Time ÷ the time position by
// position, calls switched one by one, x restored before each, best of 25,
// two runs, on [32, 512, 768], [8, 1024, 768], [64, 128, 768], [16, 128,
// 1024], [8, 512, 768] and [16, 2048, 1024]: at 2 threads float32 0.50-0.87, float16 0.55-0.92,
// bfloat16 0.56-1.04, float64 0.55-0.77; at 1 thread (16 or more batches)
// float32 0.53-0.75 and float16 0.45-0.78, but [16, 128, 1024] 0.95-1.12.
// Blocks of 64 to 768 KiB of table rows, each added batch by batch, ran
// between the two orders ([32, 512, 768] float32 at 2 threads: 0.52-0.76 of
// the pass, the larger blocks the faster, against 0.46-0.53 position by
// position and 0.67-0.78 in memory order).
template <bool kAdd, class T>
void run_in_memory_order(const EmbeddingArgs& a, const T* x, const RowLayout* xl, T* out, const RowLayout& ol) {
    const T* table = static_cast<const T*>(a.table);
    const bool contiguous = a.table_col_stride == 1 && ol.col_stride == 1 && (!kAdd || xl->col_stride == 1);
    const std::int64_t xcs = kAdd ? xl->col_stride : 0;
    parallel_blocks(ol.batches * a.rows, a.dim * static_cast<std::int64_t>(sizeof(T)), kRunBlockBytes, a.dim,
                    [&](std::int64_t begin, std::int64_t end) {
                        std::int64_t b = begin / a.rows, r = begin % a.rows, i = begin % a.period;
                        for (std::int64_t k = begin; k < end; ++k) {
                            const T* t = table + a.positions[i] * a.table_row_stride;
                            T* orow = out + ol.batch_offsets[b] + r * ol.row_stride;
                            const T* xrow = kAdd ? x + xl->batch_offsets[b] + r * xl->row_stride : nullptr;
                            embed_row<kAdd>(contiguous, a, t, xrow, xcs, orow, ol.col_stride);
                            if (++i == a.period) i = 0;
                            if (++r == a.rows) {
                                r = 0;
                                ++b;
                            }
                        }
                    });
}

template <bool kAdd, class T>
void run(const EmbeddingArgs& a, const T* x, const RowLayout* xl, T* out, const RowLayout& ol) {
    const std::int64_t total = ol.batches * a.rows;
    const std::int64_t period = a.period, repeats = total / period;
    const int threads = plan_threads(total, a.dim);
    if (repeats * threads > learned_position_streams()) return run_in_memory_order<kAdd>(a, x, xl, out, ol);
    const std::int64_t slices = period < threads ? (repeats < threads ? repeats : threads) : 1;
    const std::int64_t items = period * slices;
    const T* table = static_cast<const T*>(a.table);
    const bool contiguous = a.table_col_stride == 1 && ol.col_stride == 1 && (!kAdd || xl->col_stride == 1);
    const bool prefetch = kAdd && contiguous && learned_sum_prefetches();
    // Row o·period + i of x, and the first o of an item's slice.
    const auto x_row = [&](std::int64_t i, std::int64_t o) {
        const std::int64_t k = o * period + i;
        return x + xl->batch_offsets[k / a.rows] + (k % a.rows) * xl->row_stride;
    };
    const auto first_repeat = [&](std::int64_t item) { return repeats * (item % slices) / slices; };

    const auto do_items = [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t item = begin; item < end; ++item) {
            const std::int64_t i = item / slices, slice = item % slices;
            const std::int64_t o0 = repeats * slice / slices, o1 = repeats * (slice + 1) / slices;
            const T* t = table + a.positions[i] * a.table_row_stride;
            for (std::int64_t o = o0; o < o1; ++o) {
                const std::int64_t k = o * period + i, b = k / a.rows, r = k % a.rows;
                T* orow = out + ol.batch_offsets[b] + r * ol.row_stride;
                const T* xrow = kAdd ? x + xl->batch_offsets[b] + r * xl->row_stride : nullptr;
                const std::int64_t xcs = kAdd ? xl->col_stride : 0;
                if (prefetch) {  // the row of x this thread adds next, if any
                    const T* next = o + 1 < o1      ? x_row(i, o + 1)
                                    : item + 1 < end ? x_row((item + 1) / slices, first_repeat(item + 1))
                                                     : nullptr;
                    add_rows<true>(xrow, 1, t, 1, orow, 1, a.dim, next);
                } else {
                    embed_row<kAdd>(contiguous, a, t, xrow, xcs, orow, ol.col_stride);
                }
            }
        }
    };
    const std::int64_t rows_per_item = repeats / slices + (repeats % slices ? 1 : 0);
    const std::int64_t item_bytes = rows_per_item * a.dim * static_cast<std::int64_t>(sizeof(T));
    parallel_blocks(items, item_bytes, kRunBlockBytes, rows_per_item * a.dim, do_items);
}

template <class T>
void lookup(const EmbeddingArgs& a, void* out, const RowLayout& ol) {
    run<false, T>(a, nullptr, nullptr, static_cast<T*>(out), ol);
}

// Each row of out written whole, its parts one after the other: written as
// two lookups into the halves of out's rows, one half after the other,
// concat_positional's float32 [4, 2048, 512] + [2048, 512] took 1.4-1.5x the
// time (AMD EPYC Zen 4, 2 threads). U: an unsigned integer of the width.
// Each row's place and its index entries are stepped along, not divided out
// of its number: on the Zen 4 (the two-part form this generalises, calls
// switched one by one, 1 and 2 threads)
// concat_positional took 0.86-1.08x the time of the division per row (wide
// float64 rows gain most), DETR's features 0.91-1.05x (its gather alone
// 0.84-1.07x; rows found from their number in C-contiguous outputs had taken
// 0.90-1.23x). DETR's gather runs at 0.34-0.84 of a fill of its output
// there: a copy from tables of 32 KiB and more, which the stream of stores
// pushes out of L1 (README). Blocks of out of 128 KiB, as DETR's ran in vision.cpp.
constexpr std::int64_t kPartsBlockBytes = std::int64_t(1) << 17;
template <class U>
void lookup_parts(const LookupPartsArgs& a, void* out_v, const RowLayout& ol) {
    U* out = static_cast<U*>(out_v);
    std::int64_t cols = 0;
    for (int p = 0; p < a.count; ++p) cols += a.parts[p].cols;
    const std::int64_t cs = ol.col_stride;
    const bool by_loop = rows_copied_by_loop();
    parallel_blocks(ol.batches * a.rows, cols * static_cast<std::int64_t>(sizeof(U)), kPartsBlockBytes, cols,
                    [&](std::int64_t begin, std::int64_t end) {
                        // Where row `begin` lies and each part's index entry, then stepped
                        // along: no division per row.
                        std::int64_t b = begin / a.rows, r = begin % a.rows, at[kMaxLookupParts];
                        for (int p = 0; p < a.count; ++p) at[p] = begin % a.parts[p].period;
                        U* dst = out + ol.batch_offsets[b] + r * ol.row_stride;
                        for (std::int64_t k = begin; k < end; ++k) {
                            U* part_dst = dst;
                            for (int p = 0; p < a.count; ++p) {
                                const LookupPart& t = a.parts[p];
                                const U* src = static_cast<const U*>(t.data) + t.index[at[p]] * t.row_stride;
                                copy_row(part_dst, cs, src, t.col_stride, t.cols, by_loop);
                                part_dst += t.cols * cs;
                                if (++at[p] == t.period) at[p] = 0;
                            }
                            if (++r < a.rows) {
                                dst += ol.row_stride;
                            } else {  // the next batch's first row
                                r = 0;
                                if (++b < ol.batches) dst = out + ol.batch_offsets[b];
                            }
                        }
                    });
}

template <class T>
void add(const EmbeddingArgs& a, const void* x, const RowLayout& xl, void* out, const RowLayout& ol) {
    run<true, T>(a, static_cast<const T*>(x), &xl, static_cast<T*>(out), ol);
}

// One row of a position's gradient: the sum so far (acc, or +0 for the
// position's first row, as np.add.at starts from zeros) plus the row g,
// stored into acc, or rounded once into out for the position's last row.
// The sum is kept in Wide<T>: float for float32 and the 16-bit types (whose
// values float holds exactly), double for float64.
template <bool kContiguous, bool kFirst, bool kLast, class T>
POSENC_BLOCK_INLINE void add_to_sum(const T* g, std::int64_t gcs, std::int64_t n, Wide<T>* acc, T* out) {
    using A = Wide<T>;
    if (kContiguous) gcs = 1;
    for_row<kDirect<T, kContiguous>>(n, [&](std::int64_t j0, auto m) POSENC_BLOCK_BODY {
        A buf[kBlock];
        A res_buf[kBlock];
        const A* __restrict gw = read_chunk(g + j0 * gcs, gcs, m, buf);
        const A* from = acc + j0;
        A* res = kLast ? result_chunk(out + j0, 1, res_buf) : acc + j0;
#pragma omp simd
        for (std::int64_t j = 0; j < m; ++j) res[j] = (kFirst ? A(0) : from[j]) + gw[j];
        if (kLast) write_chunk(res, out + j0, 1, m);
    });
}

template <bool kContiguous, class T>
POSENC_BLOCK_INLINE void add_to_sum(bool first, bool last, const T* g, std::int64_t gcs, std::int64_t n, Wide<T>* acc,
                                    T* out) {
    if (first && last) add_to_sum<kContiguous, true, true>(g, gcs, n, acc, out);
    else if (first) add_to_sum<kContiguous, true, false>(g, gcs, n, acc, out);
    else if (last) add_to_sum<kContiguous, false, true>(g, gcs, n, acc, out);
    else add_to_sum<kContiguous, false, false>(g, gcs, n, acc, out);
}

// First p in [0, n] with cost(p) = start[p] + p ≥ target (cost increases strictly).
inline std::int64_t first_position_costing(const std::int64_t* start, std::int64_t n, std::int64_t target) {
    std::int64_t lo = 0, hi = n;
    while (lo < hi) {
        const std::int64_t mid = lo + (hi - lo) / 2;
        if (start[mid] + mid < target) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

// Deterministic scatter-add. A stable counting sort lists, for each position
// p, its rows in increasing k (rows of p are order[start[p] .. start[p+1])).
// Threads then own disjoint ranges of positions, so each output row is the
// sum of the same rows in the same order whatever the thread count: no
// atomics, no per-thread partial tables, bit-for-bit reproducible. Ranges
// are balanced by rows + positions, so a skewed distribution (every row at
// one position) still splits what can be split. Measured and not faster
// (float32/float64 [16384, 1024] rows into 8192, Intel Xeon, 1 and 2
// threads, calls alternated, bests of 25): reading grad in order instead,
// each thread adding its share of the columns into the output rows in place
// (PyTorch's index_add_ order; the same bits), with or without prefetching
// the next output row, 0.98-1.13x this kernel's time; prefetching the row
// 2-6 rows ahead here instead of the next, the same time.
// A position's first row starts its sum (+0 plus the row) and its last one
// rounds the sum straight into out (add_to_sum): no pass zeroing the sum
// and none copying it out, which had left the loop waiting on L1's loads and
// stores (float32 in L2: 0.14 ns an element at one thread; out of cache,
// all 64 MiB of rows at one position, read in order, 7.8 ms, where a
// read-modify-write pass of them took 2.95). [16384, 1024] rows into 8192
// (at random positions, sorted, and [4, 4096] positions of arange(4096)),
// AMD EPYC Zen 4, calls switched one by one, time ÷ that of the two passes,
// 1 / 2 threads, two runs: float32 0.57-0.76 / 0.74-0.83, float16
// 0.76-0.91 / 0.76-0.96, bfloat16 0.77-0.99 / 0.76-0.98; one run: float64
// 0.70-0.85 / 0.75-0.82. Summing up to four rows of a position in
// registers, a column piece at a time, took float32 0.63-0.81x the time at
// random positions but 1.02-1.18x with [4, 4096]'s (rows 16 MiB apart), and
// bfloat16 1.3-1.8x with rows in order: each pass reads four streams at once.
template <class T>
void grad(const EmbeddingArgs& a, std::int64_t num_positions, const void* grad_data, const RowLayout& gl,
          void* out_data) {
    using A = Wide<T>;
    const T* g = static_cast<const T*>(grad_data);
    T* out = static_cast<T*>(out_data);
    const std::int64_t total = gl.batches * a.rows, period = a.period;
    const std::int64_t repeats = period > 0 ? total / period : 0;

    Buffer<std::int64_t> start(num_positions + 1), cursor(num_positions), order(total);
    std::int64_t* s = start.data();
    for (std::int64_t p = 0; p <= num_positions; ++p) s[p] = 0;
    for (std::int64_t o = 0; o < repeats; ++o)
        for (std::int64_t i = 0; i < period; ++i) ++s[a.positions[i] + 1];
    for (std::int64_t p = 0; p < num_positions; ++p) {
        s[p + 1] += s[p];
        cursor.data()[p] = s[p];
    }
    for (std::int64_t o = 0, k = 0; o < repeats; ++o)
        for (std::int64_t i = 0; i < period; ++i, ++k) order.data()[cursor.data()[a.positions[i]]++] = k;

    const std::int64_t cost = total + num_positions;
    const int threads = plan_threads(cost, a.dim);
    Buffer<A> accumulators(static_cast<std::int64_t>(threads) * a.dim);
    const bool contiguous = gl.col_stride == 1;
    // Row k of grad. Rows are added in the order of positions, so from all
    // over grad: each row's first lines wait on memory unless fetched while
    // the row before is added. [16384, 1024] rows at random positions of
    // 8192, AMD EPYC Zen 3, 1 and 2 threads, builds in alternated processes:
    // float16 0.66-0.79x the time, bfloat16 0.64-0.75x, float64 0.84-0.91x;
    // float32 0.91-1.07x, within the noise of the new table's page faults.
    // A row far off in memory, so prefetched as the far-ahead loops do
    // (prefetch_far_lines: on the AMD EPYC Zen 4 into L2 only; [16384, 1024]
    // into 8192 rows, 1 / 2 threads, the two alternated in one process, two
    // runs: float32 0.79-0.84 / 0.80-0.87x the time of L1, float64 0.69-0.71 /
    // 0.78-0.79x; the distance, one row or two to eight ahead, made no
    // difference; float16/bfloat16 keep L1).
    const auto row_of = [&](std::int64_t k) { return g + gl.batch_offsets[k / a.rows] + (k % a.rows) * gl.row_stride; };

    parallel_chunks(threads, threads, [&](std::int64_t begin, std::int64_t end, int t) {
        A* acc = accumulators.data() + static_cast<std::int64_t>(t) * a.dim;
        const std::int64_t p0 = first_position_costing(s, num_positions, cost * begin / threads);
        const std::int64_t p1 = first_position_costing(s, num_positions, cost * end / threads);
        for (std::int64_t p = p0; p < p1; ++p) {
            T* orow = out + p * a.dim;
            if (s[p] == s[p + 1]) {  // no rows: zeros
                for_row<kDirect<T, true>>(a.dim, [&](std::int64_t j0, auto m) POSENC_BLOCK_BODY {
                    A zeros[kBlock];
                    A* res = result_chunk(orow + j0, 1, zeros);
                    for (std::int64_t j = 0; j < m; ++j) res[j] = A(0);
                    write_chunk(res, orow + j0, 1, m);
                });
                continue;
            }
            for (std::int64_t n = s[p]; n < s[p + 1]; ++n) {
                const T* row = row_of(order.data()[n]);
                const bool first = n == s[p], last = n + 1 == s[p + 1];
                if (!contiguous) {
                    add_to_sum<false>(first, last, row, gl.col_stride, a.dim, acc, orow);
                } else if (n + 1 < s[p1]) {  // the thread's next row, prefetched as this one is added
                    in_pieces<2, T, true>(a.dim, row_of(order.data()[n + 1]), [&](std::int64_t j0, std::int64_t m) {
                        add_to_sum<true>(first, last, row + j0, 1, m, acc + j0, orow + j0);
                    });
                } else {
                    add_to_sum<true>(first, last, row, 1, a.dim, acc, orow);
                }
            }
        }
    });
}

}  // namespace

extern const LearnedKernels learned = {
    {lookup<float>, lookup<double>, lookup<half_t>, lookup<bfloat16_t>},
    {add<float>, add<double>, add<half_t>, add<bfloat16_t>},
    {grad<float>, grad<double>, grad<half_t>, grad<bfloat16_t>},
    {lookup_parts<std::uint8_t>, lookup_parts<std::uint16_t>, lookup_parts<std::uint32_t>, lookup_parts<std::uint64_t>},
};

POSENC_END_TARGET
