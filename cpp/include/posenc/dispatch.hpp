// posenc/dispatch.hpp — runtime choice among the per-ISA copies of a kernel family.
//
// Each family header declares a table of function pointers (one entry per
// kernel and dtype) and one instance of it per ISA namespace. The bindings ask
// for the active table with `dispatch(...)`; the choice is made once, at
// import (cpu.cpp), from CPUID and XGETBV, and may be lowered with POSENC_ISA.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace posenc {

enum class Isa : int { baseline = 0, avx2 = 1, avx512 = 2 };

// The ISA kernels run on now.
Isa active_isa();
// Every ISA this CPU and OS can run, lowest first.
std::vector<Isa> available_isas();
const char* isa_name(Isa isa);
// Select by name ("baseline", "avx2", "avx512", or "" for the best);
// std::invalid_argument if the name is unknown or the CPU lacks it.
void select_isa(const std::string& name);
// How many bytes of rows ahead the sinusoidal sum prefetches, whether the
// learned table's sum prefetches the row it adds next (prefetch.hpp says why),
// how many rows far apart the learned tables keep in flight before going in
// memory order (learned.cpp), to how many batches one work item of a
// float32/float64 sinusoidal sum adds its rows (sinusoidal.cpp), whether the
// relative adds prefetch a page ahead and whether the relative
// blocks copy rows by a loop rather than memcpy (relative.cpp): per-CPU
// choices made once, like the ISA's. So is whether the float32
// and float64 sinusoidal sums of the AVX-512 copy interleave each row's
// sines and cosines in registers, batch by batch, rather than once per row
// in memory (sinusoidal.cpp); tests switch that one both ways (the same bits
// either way), never while a kernel runs.
std::int64_t rows_ahead_bytes();
bool learned_sum_prefetches();
std::int64_t learned_position_streams();
std::int64_t sum_batches_per_item();
void use_learned_position_streams(std::int64_t n);  // n >= 0, else std::invalid_argument
void use_sum_batches_per_item(std::int64_t n);      // n >= 1, else std::invalid_argument
bool relative_adds_prefetch();
bool rows_copied_by_loop();
extern bool g_sum_interleaves_in_registers;
inline bool sum_interleaves_in_registers() { return g_sum_interleaves_in_registers; }
void use_sum_interleaves_in_registers(bool on);
// Whether the loops that prefetch far ahead of what they work on (the
// rotation's page ahead, the sinusoidal sum's rows ahead, the embedding
// gradient's next row) prefetch into L2 only, the rotation 16 KiB ahead
// rather than 4, and the sinusoidal table's four-row passes the next pass
// (prefetch.hpp, sinusoidal.cpp): on where measured faster (cpu.cpp).
// Switched for measurements, never while a kernel runs; results are the
// same bits either way.
extern bool g_prefetch_far_into_l2;
inline bool prefetch_far_into_l2() { return g_prefetch_far_into_l2; }
void use_prefetch_far_into_l2(bool on);
// Whether the AVX-512 copy rounds floats to bfloat16 with AVX512_BF16's
// conversions (lanes.hpp): by default where the CPU has them and they were
// measured faster (cpu.cpp). Tests turn them on and off to check both
// roundings on the same CPU (std::invalid_argument when turned on where the
// CPU lacks them), never while a kernel runs. A plain flag: the kernels'
// vector loops read it, and as a relaxed atomic it made the bfloat16 table
// no faster than without the conversions.
extern bool g_bfloat16_instructions;
inline bool bfloat16_instructions() { return g_bfloat16_instructions; }
void use_bfloat16_instructions(bool on);

template <class Table>
const Table& dispatch_for(Isa isa, const Table& baseline, const Table& avx2, const Table& avx512) {
    switch (isa) {
        case Isa::avx512: return avx512;
        case Isa::avx2: return avx2;
        default: return baseline;
    }
}

template <class Table>
const Table& dispatch(const Table& baseline, const Table& avx2, const Table& avx512) {
    return dispatch_for(active_isa(), baseline, avx2, avx512);
}

}  // namespace posenc

// The copies this build compiled (CMake's POSENC_ISAS: all unless narrowed).
// A table that was not compiled is never named: its place holds the next
// lower copy's, which is never selected either (cpu.cpp offers built copies only).
#if !defined(POSENC_BUILT_AVX2) || !defined(POSENC_BUILT_AVX512)
#error "the build defines POSENC_BUILT_AVX2 and POSENC_BUILT_AVX512 (cpp/CMakeLists.txt)"
#endif
#if POSENC_BUILT_AVX2
#define POSENC_AVX2_TABLE(name) avx2::name
#else
#define POSENC_AVX2_TABLE(name) baseline::name
#endif
#if POSENC_BUILT_AVX512
#define POSENC_AVX512_TABLE(name) avx512::name
#else
#define POSENC_AVX512_TABLE(name) POSENC_AVX2_TABLE(name)
#endif

// Declares a family's table in each ISA namespace and the dispatched accessor
// `name_kernels()` returning the active one (`name_kernels_for(isa)`: that ISA's).
#define POSENC_DECLARE_KERNELS(Table, name)                                                         \
    namespace baseline { extern const Table name; }                                                 \
    namespace avx2 { extern const Table name; }                                                     \
    namespace avx512 { extern const Table name; }                                                   \
    inline const Table& name##_kernels() {                                                          \
        return ::posenc::dispatch(baseline::name, POSENC_AVX2_TABLE(name), POSENC_AVX512_TABLE(name)); \
    }                                                                                               \
    inline const Table& name##_kernels_for(::posenc::Isa isa) {                                     \
        return ::posenc::dispatch_for(isa, baseline::name, POSENC_AVX2_TABLE(name), POSENC_AVX512_TABLE(name)); \
    }
