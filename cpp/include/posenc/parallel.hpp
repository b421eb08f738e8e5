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

POSENC_END_TARGET
