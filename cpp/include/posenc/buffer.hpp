// posenc/buffer.hpp — a typed per-call work array, allocated before any parallel region.
//
// Angle rows need doubles (Scratch), sorting and counting need integers or a
// narrower accumulator. Allocated up front: a failed allocation is
// std::bad_alloc (MemoryError) before any output is written, and nothing
// inside an OpenMP region allocates. Not std::vector: kernel sources are
// compiled once per ISA and must not share inline std templates.
//
// Aligned to a cache line: the angle rows are streamed through 512-bit loads
// and stores, and at malloc's 16-byte alignment every one of them straddled
// two lines. Measured with alternated builds (2 threads, three runs each):
// apply_rope_nd on FLUX's [1, 4096, 24, 128] float32 1.47-1.61 ms -> 1.31-1.43
// ms, bfloat16 3.08-3.22 -> 2.59-2.69 ms; sinusoidal [8192, 1024] float32
// 15-20% faster a row (one thread).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <new>

#include "posenc/target.hpp"

POSENC_BEGIN_TARGET

template <class T>
class Buffer {
  public:
    explicit Buffer(std::int64_t n) : data_(static_cast<T*>(std::aligned_alloc(kAlign, bytes(n)))) {
        if (!data_) throw std::bad_alloc();
    }
    ~Buffer() { std::free(data_); }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    T* data() const { return data_; }

  private:
    static constexpr std::size_t kAlign = 64;
    // n elements' bytes rounded up to whole alignments (aligned_alloc's
    // rule); a count whose bytes would wrap around is refused like a failed
    // allocation.
    static std::size_t bytes(std::int64_t n) {
        const std::size_t count = static_cast<std::size_t>(n > 0 ? n : 1);
        if (count > (SIZE_MAX - kAlign) / sizeof(T)) throw std::bad_alloc();
        return (sizeof(T) * count + kAlign - 1) / kAlign * kAlign;
    }
    T* data_;
};

using Scratch = Buffer<double>;

// Where in a 4 KiB page an array starts matters to a loop that stores to one
// array while it loads another: a load whose address matches an older,
// still pending store in its low 12 bits is taken for a dependence on it
// and waits ("4K aliasing"). Two arrays streamed at the same rate collide
// on every iteration or never, depending only on how far apart they start
// within a page: with the loaded array a few lines ahead, the last store to
// a load's offset is most of a page of stores back, more than are pending;
// a few lines behind, it is a few stores back. kPageDoubles of slack per
// array let at_page_offset place it.
constexpr std::int64_t kPageBytes = 4096, kPageDoubles = kPageBytes / sizeof(double);
constexpr std::uintptr_t kLine = 64;

inline std::uintptr_t page_offset(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % kPageBytes; }

// The first address at or after p that lies `offset` bytes into a page,
// rounded down to a cache line: less than kPageDoubles on.
inline double* at_page_offset(double* p, std::uintptr_t offset) {
    const std::uintptr_t want = offset % kPageBytes / kLine * kLine;
    return p + (want - page_offset(p)) % kPageBytes / sizeof(double);
}

POSENC_END_TARGET
