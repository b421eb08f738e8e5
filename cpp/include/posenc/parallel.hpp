// posenc/parallel.hpp — split a loop over OpenMP threads, or not at all.
//
// Starting a parallel region costs microseconds, so small inputs run on the
// calling thread. Chunks are contiguous and fixed by (n, threads), so each
// output element is computed by the same arithmetic whatever the thread
// count: results are identical for 1 or N threads. Bodies must not throw
// (an exception cannot leave an OpenMP region); kernels validate and
// allocate before they get here.
#pragma once

#include <cstdint>

#include "posenc/target.hpp"
#include "posenc/threads.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

POSENC_BEGIN_TARGET

// Below this many elementary operations a second thread is not worth it.
constexpr std::int64_t kWorkPerThread = std::int64_t(1) << 16;

// Threads to use for n items costing `cost` operations each.
inline int plan_threads(std::int64_t n, std::int64_t cost) {
    const std::int64_t budget = num_threads();
    const std::int64_t total = n * (cost > 0 ? cost : 1);
    std::int64_t t = total / kWorkPerThread;
    t = t < budget ? t : budget;
    t = t < n ? t : n;
    return t < 1 ? 1 : static_cast<int>(t);
}

// body(begin, end, thread) over [0, n) in `threads` contiguous chunks.
template <class Body>
inline void parallel_chunks(std::int64_t n, int threads, Body&& body) {
    if (threads <= 1 || n <= 1) {
        body(std::int64_t(0), n, 0);
        return;
    }
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
    {
        const int t = omp_get_thread_num();
        const int nt = omp_get_num_threads();
        const std::int64_t begin = n * t / nt, end = n * (t + 1) / nt;
        if (begin < end) body(begin, end, t);
    }
#else
    body(std::int64_t(0), n, 0);
#endif
}

// body(item, thread) for every item in [0, n), on `threads` threads that
// claim items one at a time from a shared counter rather than in fixed
// chunks: on a loaded machine a descheduled thread then delays the call by
// one item, not by its whole share. For kernels whose arithmetic for an item
// does not depend on which thread runs it (per-thread scratch indexed by
// `thread` starts afresh for each item), so results stay identical.
template <class Body>
inline void parallel_claims(std::int64_t n, int threads, Body&& body) {
    std::int64_t next = 0;
    parallel_chunks(threads, threads, [&](std::int64_t, std::int64_t, int t) {
        for (;;) {
            std::int64_t item;
#pragma omp atomic capture
            item = next++;
            if (item >= n) break;
            body(item, t);
        }
    });
}

// body(begin, end) over [0, items) in blocks of about block_bytes of output
// (items of item_bytes each) that threads claim one after another: on a shared
// machine a slow thread takes fewer blocks. For streaming kernels without
// per-thread state (copies and adds); every element is computed the same way
// whichever thread takes it, so results do not depend on the schedule.
template <class Body>
inline void parallel_blocks(std::int64_t items, std::int64_t item_bytes, std::int64_t block_bytes, std::int64_t cost,
                            Body&& body) {
    const std::int64_t per_block = item_bytes >= block_bytes ? 1 : block_bytes / (item_bytes > 0 ? item_bytes : 1);
    const std::int64_t blocks = (items + per_block - 1) / per_block;
    const auto run_block = [&](std::int64_t block) {
        const std::int64_t first = block * per_block;
        body(first, first + per_block < items ? first + per_block : items);
    };
    const int threads = plan_threads(items, cost);
    if (threads <= 1 || blocks <= 1) {
        for (std::int64_t block = 0; block < blocks; ++block) run_block(block);
        return;
    }
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (std::int64_t block = 0; block < blocks; ++block) run_block(block);
#else
    for (std::int64_t block = 0; block < blocks; ++block) run_block(block);
#endif
}

POSENC_END_TARGET
