// Bindings of the sinusoidal kernels: shape checks, then the kernel without the GIL.
#include "bindings/common.hpp"
#include "bindings/lane.hpp"
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

// add_sinusoidal(x, offset=, base=, interleaved=, scale=, out=) in the small-call lane (bindings/lane.hpp):
// positions offset + arange(seq), out None or x itself.
const lane::Signature& add_sinusoidal_signature() {
    static const auto* s = new lane::Signature(
        "add_sinusoidal", {"x", "offset", "positions", "base", "interleaved", "scale", "out"}, 1);
    return *s;
}

py::object lane_add_sinusoidal(py::handle args, py::handle kwargs) {
    PyObject* v[7] = {};
    const auto x = add_sinusoidal_signature().bind(args, kwargs, v) ? lane::float_array(v[0]) : std::nullopt;
    if (!x || x->array.ndim() < 2) return py::none();
    const py::array& xa = x->array;
    const auto offset = lane::integer(v[1], 0);
    const auto base = lane::real(v[3], 10000.0), scale = lane::real(v[5], 1.0);
    const auto interleaved = lane::flag(v[4], true);
    PyObject* out = v[6];
    if (!offset || !base || !scale || !interleaved || !lane::is_none(v[2]) ||
        !lane::exact_positions(*offset, xa.shape(xa.ndim() - 2)) || !(lane::is_none(out) || lane::in_place(out, xa)))
        return py::none();
    const py::object freqs = lane::sinusoid_frequencies().get(xa.shape(xa.ndim() - 1), *base, v[3]);
    if (!freqs) return py::none();
    try {
        py::array dest = lane::is_none(out) ? lane::result_like(xa) : xa;
        add(xa, dest, std::nullopt, static_cast<double>(*offset), freqs, *interleaved, *scale);
        return lane::own(dest);
    } catch (const std::exception&) {  // a check the lane missed: nothing was written, the Python layer decides
        return py::none();
    }
}

}  // namespace

void register_sinusoidal(py::module_& m) {
    m.def("sinusoidal_table", &table, py::arg("out"), py::arg("positions"), py::arg("start"), py::arg("inv_freq"),
          py::arg("interleaved"));
    add_sinusoidal_signature();  // published now (lane.hpp)
    m.def("lane_add_sinusoidal", &lane_add_sinusoidal, py::arg("args"), py::arg("kwargs"));
    m.def("add_sinusoidal", &add, py::arg("x"), py::arg("out"), py::arg("positions"), py::arg("start"),
          py::arg("inv_freq"), py::arg("interleaved"), py::arg("scale"));
}

}  // namespace posenc::bind
