// Bindings of the rounding kernels: float64 values into an array of a result dtype, rounded once.
#include "bindings/common.hpp"
#include "bindings/register.hpp"
#include "posenc/rounding.hpp"

namespace posenc::bind {

namespace {

// out = values rounded once to out's dtype; both C-contiguous, of the same shape.
void round_once(py::array values, py::array out) {
    if (!holds<double>(values) || !(values.flags() & py::array::c_style) ||
        reinterpret_cast<std::uintptr_t>(values.data()) % alignof(double) != 0)
        throw py::type_error("values must be a C-contiguous, aligned float64 array");
    const DType dt = float_dtype(out, "out");
    require_writeable(out, "out");
    require_same_shape(values, "values", out, "out");
    if (!(out.flags() & py::array::c_style) ||
        reinterpret_cast<std::uintptr_t>(out.data()) % static_cast<std::uintptr_t>(out.itemsize()) != 0)
        throw std::invalid_argument("out must be C-contiguous and aligned to its itemsize");
    const auto kernel = rounding_kernels().round[static_cast<int>(dt)];
    const auto* src = static_cast<const double*>(values.data());
    void* dst = out.mutable_data();
    const auto n = static_cast<std::int64_t>(values.size());
    const ReleaseGil release(out.size());
    kernel(src, n, dst);
}

}  // namespace

void register_rounding(py::module_& m) { m.def("round_once", &round_once, py::arg("values"), py::arg("out")); }

}  // namespace posenc::bind
