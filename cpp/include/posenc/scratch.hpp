// posenc/scratch.hpp — per-call scratch memory, allocated before any parallel region.
//
// A failed allocation throws std::bad_alloc (MemoryError in Python) before
// any output is touched; nothing inside an OpenMP region allocates.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <new>

#include "posenc/target.hpp"

POSENC_BEGIN_TARGET

class Scratch {
  public:
    explicit Scratch(std::int64_t doubles)
        : data_(static_cast<double*>(std::malloc(sizeof(double) * static_cast<std::size_t>(doubles > 0 ? doubles : 1)))) {
        if (!data_) throw std::bad_alloc();
    }
    ~Scratch() { std::free(data_); }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    double* data() const { return data_; }

  private:
    double* data_;
};

POSENC_END_TARGET
