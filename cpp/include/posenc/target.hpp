// posenc/target.hpp — the per-ISA namespace every kernel lives in.
//
// Kernel sources (cpp/src/*.cpp except cpu.cpp and threads.cpp) are compiled
// three times, with -DPOSENC_TARGET=baseline|avx2|avx512 and that ISA's flags.
// Everything they define, including the inline helpers of the headers they
// include, must sit in posenc::POSENC_TARGET: an inline function compiled
// with -mavx512f must never be the copy the linker keeps for the baseline
// path. Kernels therefore avoid inline templates from the standard library
// beyond what always inlines, and use only extern "C" maths from libm.
#pragma once

#ifndef POSENC_TARGET
#error "kernel sources are compiled once per ISA with -DPOSENC_TARGET=<isa>"
#endif

#define POSENC_BEGIN_TARGET \
    namespace posenc {      \
    namespace POSENC_TARGET {
#define POSENC_END_TARGET \
    }                     \
    }
