// Bindings of the sinusoidal kernels: shape checks, then the kernel without the GIL.
#include "bindings/common.hpp"
#include "bindings/register.hpp"
#include "posenc/sinusoidal.hpp"

namespace posenc::bind {

namespace {

SinusoidalArgs args_of(const Rows& o, const std::optional<py::array>& positions, double start,
                       const py::array& inv_freq, bool interleaved) {
    const std::int64_t half = inv_freq.ndim() == 1 ? inv_freq.shape(0) : -1;
    if (o.cols() > 2 * half || (!interleaved && o.cols() != 2 * half))
        throw std::invalid_argument("rows of " + std::to_string(o.cols()) + " features do not fit " +
                                    std::to_string(half) + " frequencies");
    return {positions_of(positions, start, o.rows()), o.rows(), float64_vector(inv_freq, half, "inv_freq"),
            half, interleaved, o.cols()};
}

// out[..., rows, cols] = the encoding of each row's position, repeated over
// the leading axes. cols may cut an interleaved row short (2-D/3-D layouts).
void table(py::array out, std::optional<py::array> positions, double start, py::array inv_freq, bool interleaved) {
    const DType dt = float_dtype(out, "out");
    require_writeable(out, "out");
    const Rows o(out, "out");
    const SinusoidalArgs a = args_of(o, positions, start, inv_freq, interleaved);
    if (o.empty()) return;
    const auto kernel = sinusoidal_kernels().table[static_cast<int>(dt)];
    const ReleaseGil release(out.size());
    kernel(a, out.mutable_data(), o.layout());
}

// out[..., rows, dim] = scale·x + PE(row); out may be x itself.
void add(py::array x, py::array out, std::optional<py::array> positions, double start, py::array inv_freq,
         bool interleaved, double scale) {
    const DType dt = float_dtype(x, "x");
    if (float_dtype(out, "out") != dt) throw py::type_error("out must have the dtype of x");
    require_writeable(out, "out");
    require_same_shape(x, "x", out, "out");
    const Rows xr(x, "x"), o(out, "out");
    const SinusoidalArgs a = args_of(o, positions, start, inv_freq, interleaved);
    if (o.cols() != 2 * a.half) throw std::invalid_argument("x rows must hold 2·len(inv_freq) features");
    if (o.empty()) return;
    const auto kernel = sinusoidal_kernels().add[static_cast<int>(dt)];
    const ReleaseGil release(out.size());
    kernel(a, scale, x.data(), xr.layout(), out.mutable_data(), o.layout());
}

}  // namespace

void register_sinusoidal(py::module_& m) {
    m.def("sinusoidal_table", &table, py::arg("out"), py::arg("positions"), py::arg("start"), py::arg("inv_freq"),
          py::arg("interleaved"));
    m.def("add_sinusoidal", &add, py::arg("x"), py::arg("out"), py::arg("positions"), py::arg("start"),
          py::arg("inv_freq"), py::arg("interleaved"), py::arg("scale"));
}

}  // namespace posenc::bind
