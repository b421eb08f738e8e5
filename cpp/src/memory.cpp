// Memory ceilings: a write-only and a read-modify-write pass at the vector
// width of the path in use. Compiled once per ISA.
#include "posenc/vector_width_512.hpp"
#include "posenc/memory.hpp"

#include "posenc/parallel.hpp"

#include <atomic>

POSENC_BEGIN_TARGET
namespace {

std::uint64_t fill(std::uint64_t* data, std::int64_t words, std::uint64_t mask, int threads) {
    parallel_chunks(words, threads, [&](std::int64_t begin, std::int64_t end, int) {
#pragma omp simd
        for (std::int64_t i = begin; i < end; ++i) data[i] = mask;
    });
    return 0;
}

// Blocks of kBlockBytes that the threads claim one after another
// (parallel_blocks), each word costing kWorkPerThread so that every thread of
// the pool (`threads`) takes part.
constexpr std::int64_t kBlockBytes = std::int64_t(1) << 20;
template <class Body>
void in_claimed_blocks(std::int64_t words, int threads, Body&& body) {
    if (threads <= 1) return body(0, words);
    parallel_blocks(words, sizeof(std::uint64_t), kBlockBytes, kWorkPerThread, body);
}

// The read-modify-write pass in blocks of 1 MiB that the threads claim one
// after another (parallel_blocks), as the in-place kernels go: on an AMD
// EPYC Zen 4 (2 threads, 12-32 MiB, calls switched one by one) it took
// 0.95-1.01x the time of fixed halves. The write-only pass keeps its
// halves: in blocks it took 0.96-1.06x their time.
std::uint64_t touch(std::uint64_t* data, std::int64_t words, std::uint64_t mask, int threads) {
    in_claimed_blocks(words, threads, [&](std::int64_t begin, std::int64_t end) {
#pragma omp simd
        for (std::int64_t i = begin; i < end; ++i) data[i] ^= mask;
    });
    return 0;
}

// The read-only pass, in claimed blocks as touch: each block's XOR, then
// folded into the result.
std::uint64_t read(std::uint64_t* data, std::int64_t words, std::uint64_t mask, int threads) {
    std::atomic<std::uint64_t> all{mask};
    in_claimed_blocks(words, threads, [&](std::int64_t begin, std::int64_t end) {
        std::uint64_t block = 0;
#pragma omp simd reduction(^ : block)
        for (std::int64_t i = begin; i < end; ++i) block ^= data[i];
        all.fetch_xor(block, std::memory_order_relaxed);
    });
    return all.load();
}

}  // namespace

extern const MemoryKernels memory = {fill, touch, read};

POSENC_END_TARGET
