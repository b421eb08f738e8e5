// posenc/buffer.hpp — a typed per-call work array, allocated before any parallel region.
//
// Angle rows need doubles (Scratch), sorting and counting need integers or a
// narrower accumulator. malloc'ed up front: a failed allocation is
// std::bad_alloc (MemoryError) before any output is written, and nothing
// inside an OpenMP region allocates. Not std::vector: kernel sources are
// compiled once per ISA and must not share inline std templates.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <new>

#include "posenc/target.hpp"

POSENC_BEGIN_TARGET

template <class T>
class Buffer {
  public:
    explicit Buffer(std::int64_t n)
        : data_(static_cast<T*>(std::malloc(sizeof(T) * static_cast<std::size_t>(n > 0 ? n : 1)))) {
        if (!data_) throw std::bad_alloc();
    }
    ~Buffer() { std::free(data_); }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    T* data() const { return data_; }

  private:
    T* data_;
};

using Scratch = Buffer<double>;

POSENC_END_TARGET
