// Bindings of the memory-ceiling passes (used by `posenc bench` and benchmarks/).
#include "bindings/common.hpp"
#include "bindings/register.hpp"
#include "posenc/memory.hpp"
#include "posenc/threads.hpp"

namespace posenc::bind {

namespace {

// One pass over a's bytes with posenc's thread count and the widest path the
// CPU has (whichever path kernels are forced to): "fill" writes zeros,
// "touch" reads and writes back every word unchanged, "read" reads every
// word. a must be C-contiguous, writeable and hold whole, aligned 8-byte
// words (any dtype). `mask`, 0 for the ceilings, lets tests see every word
// reached: fill writes it, touch XORs each word with it. Returns mask ^ the
// XOR of a's words for "read", else 0.
std::uint64_t memory_pass(py::array a, const std::string& kind, std::uint64_t mask) {
    require_writeable(a, "a");
    const auto bytes = static_cast<std::int64_t>(a.nbytes());
    if (!(a.flags() & py::array::c_style) || bytes % 8 != 0 || reinterpret_cast<std::uintptr_t>(a.data()) % 8 != 0)
        throw std::invalid_argument("a must be C-contiguous, 8-byte aligned, of a whole number of 8-byte words");
    const MemoryKernels& k = memory_kernels_for(available_isas().back());
    MemoryPassFn pass = nullptr;
    if (kind == "fill") pass = k.fill;
    else if (kind == "touch") pass = k.touch;
    else if (kind == "read") pass = k.read;
    else throw std::invalid_argument("kind must be 'fill', 'touch' or 'read', got '" + kind + "'");
    auto* data = static_cast<std::uint64_t*>(a.mutable_data());
    const int threads = num_threads();
    py::gil_scoped_release release;
    return pass(data, bytes / 8, mask, threads);
}

}  // namespace

void register_memory(py::module_& m) {
    m.def("memory_pass", &memory_pass, py::arg("a"), py::arg("kind"), py::arg("mask") = std::uint64_t(0));
}

}  // namespace posenc::bind
