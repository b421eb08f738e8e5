// Memory ceilings: a write-only and a read-modify-write pass at the vector
// width of the path in use. Compiled once per ISA.
#include "posenc/vector_width_512.hpp"
#include "posenc/memory.hpp"

#include "posenc/parallel.hpp"

POSENC_BEGIN_TARGET
namespace {

void fill(std::uint64_t* data, std::int64_t words, std::uint64_t mask, int threads) {
    parallel_chunks(words, threads, [&](std::int64_t begin, std::int64_t end, int) {
#pragma omp simd
        for (std::int64_t i = begin; i < end; ++i) data[i] = mask;
    });
}

// The read-modify-write pass in blocks of 1 MiB that the threads claim one
// after another (parallel_blocks), as the in-place kernels go: on an AMD
// EPYC Zen 4 (2 threads, 12-32 MiB, calls switched one by one) it took
// 0.95-1.01x the time of fixed halves. The write-only pass keeps its
// halves: in blocks it took 0.96-1.06x their time.
void touch(std::uint64_t* data, std::int64_t words, std::uint64_t mask, int threads) {
    const auto body = [&](std::int64_t begin, std::int64_t end) {
#pragma omp simd
        for (std::int64_t i = begin; i < end; ++i) data[i] ^= mask;
    };
    if (threads <= 1) return body(0, words);
    // Each word costing kWorkPerThread makes parallel_blocks use every thread of the pool (`threads`).
    parallel_blocks(words, sizeof(std::uint64_t), std::int64_t(1) << 20, kWorkPerThread, body);
}

}  // namespace

extern const MemoryKernels memory = {fill, touch};

POSENC_END_TARGET
