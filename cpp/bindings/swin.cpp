// Bindings of the Swin bias kernels: shape checks, then the kernel without the GIL.
#include "bindings/common.hpp"
#include "bindings/register.hpp"
#include "posenc/swin.hpp"

namespace posenc::bind {

namespace {

// out[..., heads, N, N] = x + Swin's bias (x given) or the bias (x None), from lookup
// rows lut [heads, ww, (2wh − 1)·ww] in out's dtype (see swin.hpp); out may be x itself.
void swin_bias(std::optional<py::array> x, py::array out, py::array lut, std::int64_t wh, std::int64_t ww) {
    const DType dt = float_dtype(out, "out");
    require_writeable(out, "out");
    if (x && float_dtype(*x, "scores") != dt) throw py::type_error("out must have the dtype of scores");
    if (x) require_same_shape(*x, "scores", out, "out");
    if (wh < 1 || ww < 1) throw std::invalid_argument("the window sides must be >= 1");
    const std::int64_t n = wh * ww;
    const py::ssize_t nd = out.ndim();
    if (nd < 3 || out.shape(nd - 1) != n || out.shape(nd - 2) != n)
        throw std::invalid_argument("out must be [..., heads, " + std::to_string(n) + ", " + std::to_string(n) + "]");
    if (!lut.dtype().equal(out.dtype())) throw py::type_error("lut must have the dtype of out");
    if (lut.ndim() != 3 || lut.shape(0) != out.shape(nd - 3) || lut.shape(1) != ww ||
        lut.shape(2) != (2 * wh - 1) * ww || !(lut.flags() & py::array::c_style))
        throw std::invalid_argument("lut must be a C-contiguous [heads, ww, (2wh - 1)·ww] array");
    if (reinterpret_cast<std::uintptr_t>(lut.data()) % static_cast<std::uintptr_t>(lut.itemsize()) != 0)
        throw std::invalid_argument("lut is not aligned to its itemsize");
    const Rows o(out, "out");
    std::optional<Rows> xr;
    if (x) xr.emplace(*x, "scores");
    if (o.empty()) return;
    const SwinArgs a{lut.data(), lut.shape(0), wh, ww};
    const auto kernel = swin_kernels().bias[static_cast<int>(dt)];
    const void* xdata = x ? x->data() : nullptr;
    const RowLayout xl = xr ? xr->layout() : RowLayout{};
    void* odata = out.mutable_data();
    const RowLayout ol = o.layout();
    py::gil_scoped_release release;
    kernel(a, xdata, x ? &xl : nullptr, odata, ol);
}

}  // namespace

void register_swin(py::module_& m) {
    m.def("swin_bias", &swin_bias, py::arg("x"), py::arg("out"), py::arg("lut"), py::arg("wh"), py::arg("ww"));
}

}  // namespace posenc::bind
