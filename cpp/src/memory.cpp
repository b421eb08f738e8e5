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

void touch(std::uint64_t* data, std::int64_t words, std::uint64_t mask, int threads) {
    parallel_chunks(words, threads, [&](std::int64_t begin, std::int64_t end, int) {
#pragma omp simd
        for (std::int64_t i = begin; i < end; ++i) data[i] ^= mask;
    });
}

}  // namespace

extern const MemoryKernels memory = {fill, touch};

POSENC_END_TARGET
