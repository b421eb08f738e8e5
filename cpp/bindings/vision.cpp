// Bindings of the vision kernels (Swin bias): shape checks, then the kernel without the GIL.
#include "bindings/common.hpp"
#include "bindings/register.hpp"
#include "posenc/vision.hpp"

#include <cstring>

namespace posenc::bind {

namespace {

// Swin's lookup rows from its table [(2wh − 1)·(2ww − 1), heads] (any strides):
// lut[h, j1, q·ww + j2] = table[(2wh − 2 − q)·(2ww − 1) + (j1 − j2 + ww − 1), h], so that
// each row of a head's [N, N] block is one contiguous slice (vision.hpp). Built here
// in one pass, where NumPy's fancy indexing and transposed copy took ~35 µs for a
// 12 x 12 window's 4 heads (AMD EPYC Zen 4), as long as the add itself on one
// window. U: an unsigned integer of the table's element width (a copy of bits).
template <class U>
void swin_rows(const py::array& table, std::int64_t wh, std::int64_t ww, void* lut) {
    const char* t = static_cast<const char*>(table.data());
    const std::int64_t rs = table.strides(0), cs = table.strides(1), width = 2 * ww - 1;
    U* out = static_cast<U*>(lut);
    for (std::int64_t h = 0; h < table.shape(1); ++h)
        for (std::int64_t j1 = 0; j1 < ww; ++j1)
            for (std::int64_t q = 0; q < 2 * wh - 1; ++q) {
                // j2 = 0 reads table row `first`, each next j2 the row before it.
                const char* first = t + ((2 * wh - 2 - q) * width + j1 + ww - 1) * rs + h * cs;
                for (std::int64_t j2 = 0; j2 < ww; ++j2, ++out) std::memcpy(out, first - j2 * rs, sizeof(U));
            }
}
using SwinRows = void (*)(const py::array&, std::int64_t, std::int64_t, void*);
constexpr SwinRows kSwinRows[] = {swin_rows<std::uint8_t>, swin_rows<std::uint16_t>, swin_rows<std::uint32_t>,
                                  swin_rows<std::uint64_t>};  // by log2 of the element width

// out[..., heads, N, N] = x + Swin's bias (x given) or the bias (x None), from Swin's
// table [(2wh − 1)·(2ww − 1), heads] in out's dtype; out may be x itself.
void swin_bias(std::optional<py::array> x, py::array out, py::array table, std::int64_t wh, std::int64_t ww) {
    const DType dt = float_dtype(out, "out");
    require_writeable(out, "out");
    if (x && float_dtype(*x, "scores") != dt) throw py::type_error("out must have the dtype of scores");
    if (x) require_same_shape(*x, "scores", out, "out");
    if (wh < 1 || ww < 1 || wh > (1 << 15) || ww > (1 << 15))
        throw std::invalid_argument("the window sides must be within 1 .. 2**15");
    const std::int64_t n = wh * ww;
    const py::ssize_t nd = out.ndim();
    if (nd < 3 || out.shape(nd - 1) != n || out.shape(nd - 2) != n)
        throw std::invalid_argument("out must be [..., heads, " + std::to_string(n) + ", " + std::to_string(n) + "]");
    if (!table.dtype().equal(out.dtype())) throw py::type_error("table must have the dtype of out");
    const std::int64_t heads = out.shape(nd - 3), size = table.itemsize();
    if (table.ndim() != 2 || table.shape(0) != (2 * wh - 1) * (2 * ww - 1) || table.shape(1) != heads)
        throw std::invalid_argument("table must be [(2wh - 1)·(2ww - 1), heads] = [" +
                                    std::to_string((2 * wh - 1) * (2 * ww - 1)) + ", " + std::to_string(heads) + "]");
    if (reinterpret_cast<std::uintptr_t>(table.data()) % static_cast<std::uintptr_t>(size) != 0 ||
        table.strides(0) % size != 0 || table.strides(1) % size != 0)
        throw std::invalid_argument("table is not aligned to its itemsize");
    py::array lut(table.dtype(), {heads, ww, (2 * wh - 1) * ww});
    if (lut.size() > 0) kSwinRows[size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : 3](table, wh, ww, lut.mutable_data());
    const Rows o(out, "out");
    std::optional<Rows> xr;
    if (x) xr.emplace(*x, "scores");
    if (o.empty()) return;
    const SwinArgs a{lut.data(), lut.shape(0), wh, ww};
    const auto kernel = vision_kernels().bias[static_cast<int>(dt)];
    const void* xdata = x ? x->data() : nullptr;
    const RowLayout xl = xr ? xr->layout() : RowLayout{};
    void* odata = out.mutable_data();
    const RowLayout ol = o.layout();
    py::gil_scoped_release release;
    kernel(a, xdata, x ? &xl : nullptr, odata, ol);
}

}  // namespace

void register_vision(py::module_& m) {
    m.def("swin_bias", &swin_bias, py::arg("x"), py::arg("out"), py::arg("table"), py::arg("wh"), py::arg("ww"));
}

}  // namespace posenc::bind
