// Which ISA the kernels run on: detected once, at import, lowered on request;
// and the one vendor-tuned constant, the sinusoidal sum's prefetch distance.
//
// A feature is usable only if the CPU has it (CPUID) and the OS saves its
// registers on a context switch (XGETBV): a hypervisor may report AVX-512
// while the OS leaves the ZMM state disabled.
#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "posenc/dispatch.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define POSENC_X86 1
#endif

namespace posenc {

namespace {

#ifdef POSENC_X86
std::uint64_t xgetbv0() {
    unsigned eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return (static_cast<std::uint64_t>(edx) << 32) | eax;
}
#endif

// Whether this build compiled the ISA's copy (CMake's POSENC_ISAS; baseline always).
bool built(Isa isa) {
    switch (isa) {
        case Isa::avx512: return POSENC_BUILT_AVX512;
        case Isa::avx2: return POSENC_BUILT_AVX2;
        default: return true;
    }
}

// The widest ISA this CPU and OS run.
Isa detect_cpu() {
#ifdef POSENC_X86
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return Isa::baseline;
    const bool osxsave = ecx & (1u << 27), fma = ecx & (1u << 12), f16c = ecx & (1u << 29),
               avx = ecx & (1u << 28);
    if (!(osxsave && avx && fma && f16c)) return Isa::baseline;
    const std::uint64_t xcr0 = xgetbv0();
    const bool ymm_state = (xcr0 & 0x6) == 0x6;            // SSE and AVX state
    const bool zmm_state = (xcr0 & 0xe6) == 0xe6;          // plus opmask, ZMM_Hi256, Hi16_ZMM
    if (!ymm_state) return Isa::baseline;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return Isa::baseline;
    const bool avx2 = ebx & (1u << 5);
    const bool avx512 = (ebx & (1u << 16)) && (ebx & (1u << 17)) && (ebx & (1u << 30)) && (ebx & (1u << 31));  // F DQ BW VL
    if (avx2 && avx512 && zmm_state) return Isa::avx512;
    if (avx2) return Isa::avx2;
#endif
    return Isa::baseline;
}

// The widest copy built at or below `isa`.
Isa widest_built(Isa isa) {
    while (!built(isa)) isa = static_cast<Isa>(static_cast<int>(isa) - 1);
    return isa;
}

// Whether the CPU is AMD's ("AuthenticAMD").
bool amd_cpu() {
#ifdef POSENC_X86
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return false;
    return ebx == 0x68747541 && edx == 0x69746e65 && ecx == 0x444d4163;  // "Auth" "enti" "cAMD"
#else
    return false;
#endif
}

// The CPU's family (CPUID leaf 1: the base family, plus the extended one
// when the base is 0xf): AMD's Zen 3 and Zen 4 are 0x19, Zen 5 0x1a.
unsigned cpu_family() {
#ifdef POSENC_X86
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    const unsigned base = (eax >> 8) & 0xf;
    return base == 0xf ? base + ((eax >> 20) & 0xff) : base;
#else
    return 0;
#endif
}

// Whether the CPU has AVX512_BF16 (CPUID leaf 7, subleaf 1, EAX bit 5).
bool has_avx512_bf16() {
#ifdef POSENC_X86
    unsigned eax, ebx, ecx, edx;
    return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 5));
#else
    return false;
#endif
}

const Isa g_cpu = detect_cpu();
// Its conversions run only in the AVX-512 copy, so they also need that copy's state.
const bool g_cpu_bfloat16 = g_cpu == Isa::avx512 && has_avx512_bf16();
const std::int64_t g_rows_ahead_bytes = amd_cpu() ? 16 * 1024 : 4 * 1024;  // prefetch.hpp says why
const bool g_learned_sum_prefetches = !amd_cpu();                             // so does this
// AMD's family 0x19 with AVX-512: Zen 4 (Zen 3, also 0x19, has none).
const bool g_zen4 = g_cpu == Isa::avx512 && amd_cpu() && cpu_family() == 0x19;
const bool g_relative_adds_prefetch = !g_zen4;  // relative.cpp says why
const bool g_rows_copied_by_loop = amd_cpu();    // so does this
const Isa g_best = widest_built(g_cpu);
std::atomic<int> g_active{static_cast<int>(g_best)};

}  // namespace

// On by default only where measured faster (lanes.hpp): Intel's CPUs and
// AMD's Zen 4 (the first of AMD's to have them, family 0x19); Zen 5 has them
// too but was not measured.
bool g_bfloat16_instructions = g_cpu_bfloat16 && (!amd_cpu() || g_zen4);

// On where measured faster (sinusoidal.cpp): AMD's Zen 4. The flag acts
// only in the AVX-512 copy.
bool g_sum_interleaves_in_registers = g_zen4;

void use_sum_interleaves_in_registers(bool on) { g_sum_interleaves_in_registers = on; }

// Measured on AMD's Zen 4 only (learned.cpp's run_in_memory_order,
// sinusoidal.cpp's run); elsewhere no limit, the order as before. Tests set
// them both ways (the same bits either way).
std::int64_t g_learned_position_streams = g_zen4 ? 8 : INT64_MAX;
std::int64_t g_sum_batches_per_item = g_zen4 ? 4 : INT64_MAX;

std::int64_t learned_position_streams() { return g_learned_position_streams; }
std::int64_t sum_batches_per_item() { return g_sum_batches_per_item; }
void use_learned_position_streams(std::int64_t n) {
    if (n < 0) throw std::invalid_argument("learned_position_streams must be at least 0");
    g_learned_position_streams = n;
}
void use_sum_batches_per_item(std::int64_t n) {
    if (n < 1) throw std::invalid_argument("sum_batches_per_item must be at least 1");
    g_sum_batches_per_item = n;
}

// On where measured faster (prefetch.hpp): AMD's Zen 4. Zen 5 and Intel's
// CPUs were not measured with it.
bool g_prefetch_far_into_l2 = g_zen4;

void use_prefetch_far_into_l2(bool on) { g_prefetch_far_into_l2 = on; }

void use_bfloat16_instructions(bool on) {
    if (on && !g_cpu_bfloat16) throw std::invalid_argument("this CPU has no AVX512_BF16 conversions");
    g_bfloat16_instructions = on;
}

std::int64_t rows_ahead_bytes() { return g_rows_ahead_bytes; }
bool learned_sum_prefetches() { return g_learned_sum_prefetches; }
bool relative_adds_prefetch() { return g_relative_adds_prefetch; }
bool rows_copied_by_loop() { return g_rows_copied_by_loop; }

Isa active_isa() { return static_cast<Isa>(g_active.load(std::memory_order_relaxed)); }

std::vector<Isa> available_isas() {
    std::vector<Isa> out;
    for (int i = 0; i <= static_cast<int>(g_best); ++i)
        if (built(static_cast<Isa>(i))) out.push_back(static_cast<Isa>(i));
    return out;
}

const char* isa_name(Isa isa) {
    switch (isa) {
        case Isa::avx512: return "avx512";
        case Isa::avx2: return "avx2";
        default: return "baseline";
    }
}

void select_isa(const std::string& name) {
    if (name.empty()) {
        g_active.store(static_cast<int>(g_best));
        return;
    }
    for (int i = 0; i <= static_cast<int>(Isa::avx512); ++i) {
        if (name == isa_name(static_cast<Isa>(i))) {
            if (i > static_cast<int>(g_cpu)) {
                throw std::invalid_argument("POSENC_ISA=" + name + " is not supported by this CPU (best available: " +
                                            isa_name(g_best) + ")");
            }
            if (!built(static_cast<Isa>(i))) {
                throw std::invalid_argument("POSENC_ISA=" + name + ": this build of posenc has no " + name +
                                            " copy (CMake's POSENC_ISAS; best available: " + isa_name(g_best) + ")");
            }
            g_active.store(i);
            return;
        }
    }
    throw std::invalid_argument("POSENC_ISA must be one of 'baseline', 'avx2', 'avx512', got '" + name + "'");
}

}  // namespace posenc
