// posenc/memory.hpp — the memory ceilings kernels are measured against, one table per ISA.
//
// A memory-bound kernel can at best move its bytes as fast as a plain pass
// over the same buffer with the same threads. `posenc bench` and benchmarks/
// time these passes on the very buffer a kernel works on, in the same run, so
// that "of ceiling" compares like with like (a one-thread NumPy call is no
// ceiling for a two-thread kernel, and a buffer just written may sit in cache).
#pragma once

#include <cstdint>

#include "posenc/dispatch.hpp"

namespace posenc {

// Over `words` 8-byte words on `threads` threads (fill in even halves, touch
// and read in claimed blocks: memory.cpp):
// fill writes mask (zeros for the ceilings; write only), touch reads each
// word and writes back x ^ mask (unchanged for the ceilings: a run-time zero
// mask, which no compiler can elide), read reads each word (read only: the
// input of a function that returns a new array) and returns mask ^ the XOR
// of them all, which keeps the loads from being elided. fill and touch
// return 0.
using MemoryPassFn = std::uint64_t (*)(std::uint64_t* data, std::int64_t words, std::uint64_t mask, int threads);

struct MemoryKernels {
    MemoryPassFn fill;
    MemoryPassFn touch;
    MemoryPassFn read;
};

POSENC_DECLARE_KERNELS(MemoryKernels, memory)

}  // namespace posenc
