// Bindings of the learned-table kernels: shape, stride and range checks, then
// the kernel without the GIL. The Python layer has already flattened the
// positions to a contiguous int64 vector and reported any out-of-range value
// with its index; the range is checked again here because it is what keeps
// the kernel inside the table.
#include "bindings/common.hpp"
#include "bindings/register.hpp"
#include "posenc/learned.hpp"
#include "posenc/resample.hpp"

#include <string>
#include <utility>
#include <vector>

namespace posenc::bind {

namespace {

// A contiguous int64 vector whose every value lies in [0, num_positions).
const std::int64_t* checked_positions(const py::array& positions, std::int64_t num_positions,
                                      const std::string& name = "positions") {
    if (!holds<std::int64_t>(positions) || positions.ndim() != 1 ||
        !(positions.flags() & py::array::c_style) ||
        reinterpret_cast<std::uintptr_t>(positions.data()) % alignof(std::int64_t) != 0)
        throw std::invalid_argument(name + " must be an aligned, contiguous int64 vector");
    const auto* p = static_cast<const std::int64_t*>(positions.data());
    for (py::ssize_t i = 0; i < positions.shape(0); ++i)
        if (p[i] < 0 || p[i] >= num_positions)
            throw std::out_of_range(name + "[" + std::to_string(i) + "] = " + std::to_string(p[i]) +
                                    " is outside the table's [0, " + std::to_string(num_positions) + ")");
    return p;
}

// The arguments shared by every kernel, for operand rows `o` of the table's dtype.
EmbeddingArgs args_of(const Rows& o, const py::array& positions, std::int64_t num_positions, std::int64_t dim) {
    const std::int64_t period = positions.ndim() == 1 ? positions.shape(0) : 0;
    const std::int64_t total = o.empty() ? 0 : o.layout().batches * o.rows();
    if (o.cols() != dim) throw std::invalid_argument("operand rows must hold dim = " + std::to_string(dim) + " features");
    if (total > 0 && (period == 0 || total % period != 0))
        throw std::invalid_argument("positions must repeat a whole number of times over the operand's rows");
    return {checked_positions(positions, num_positions), period, o.rows(), dim, nullptr, 0, 0};
}

EmbeddingArgs table_args(const py::array& table, DType dt, const Rows& o, const py::array& positions) {
    if (table.ndim() != 2) throw std::invalid_argument("table must have shape [num_positions, dim]");
    if (float_dtype(table, "table") != dt) throw py::type_error("table and the operand must have the same dtype");
    EmbeddingArgs a = args_of(o, positions, table.shape(0), table.shape(1));
    a.table = table.data();
    a.table_row_stride = element_stride(table, 0, "table");
    a.table_col_stride = element_stride(table, 1, "table");
    return a;
}

// out[..., dim] = table[positions] (positions flattened to out's rows).
void lookup(py::array table, py::array positions, py::array out) {
    const DType dt = float_dtype(out, "out");
    require_writeable(out, "out");
    const Rows o(out, "out");
    const EmbeddingArgs a = table_args(table, dt, o, positions);
    if (o.empty()) return;
    const auto kernel = learned_kernels().lookup[static_cast<int>(dt)];
    const ReleaseGil release(out.size());
    kernel(a, out.mutable_data(), o.layout());
}

// out[..., dim] = x + table[positions]; out may be x itself.
void add(py::array x, py::array table, py::array positions, py::array out) {
    const DType dt = float_dtype(x, "x");
    if (float_dtype(out, "out") != dt) throw py::type_error("out must have the dtype of x");
    require_writeable(out, "out");
    require_same_shape(x, "x", out, "out");
    const Rows xr(x, "x"), o(out, "out");
    const EmbeddingArgs a = table_args(table, dt, o, positions);
    if (o.empty()) return;
    const auto kernel = learned_kernels().add[static_cast<int>(dt)];
    const ReleaseGil release(out.size());
    kernel(a, x.data(), xr.layout(), out.mutable_data(), o.layout());
}

// One part of lookup_parts: a [rows, cols] table of out's dtype (any aligned
// strides) and the index of its rows, repeating over out's `total` rows.
LookupPart lookup_part(const py::array& table, const py::array& index, const py::array& out, std::int64_t total,
                       const std::string& name) {
    if (!table.dtype().equal(out.dtype()) || table.ndim() != 2)
        throw std::invalid_argument(name + " must be a [rows, cols] array of out's dtype");
    const std::int64_t period = index.ndim() == 1 ? index.shape(0) : 0;
    if (total > 0 && (period == 0 || total % period != 0))
        throw std::invalid_argument(name + "'s index must repeat a whole number of times over out's rows");
    return {table.data(), table.shape(1), element_stride(table, 0, name.c_str()),
            element_stride(table, 1, name.c_str()), checked_positions(index, table.shape(0), name + "'s index"),
            period};
}

// out[..., cols] = tables[0][indices[0][k mod len]] ++ tables[1][...] ++ ... for out's rows k
// in C order; cols = the tables' columns summed. parts: (table, index) pairs.
void lookup_parts(const std::vector<std::pair<py::array, py::array>>& parts, py::array out) {
    require_writeable(out, "out");
    if (parts.empty() || parts.size() > static_cast<std::size_t>(kMaxLookupParts))
        throw std::invalid_argument("lookup_parts takes 1 to " + std::to_string(kMaxLookupParts) + " parts");
    const Rows o(out, "out");
    const std::int64_t total = o.empty() ? 0 : o.layout().batches * o.rows();
    LookupPart checked[kMaxLookupParts];
    std::int64_t cols = 0;
    for (std::size_t p = 0; p < parts.size(); ++p) {
        checked[p] = lookup_part(parts[p].first, parts[p].second, out, total, "part " + std::to_string(p));
        cols += checked[p].cols;
    }
    if (cols != o.cols()) throw std::invalid_argument("out's rows must hold the parts' columns, in order");
    int width = 0;
    switch (out.itemsize()) {
        case 1: width = 0; break;
        case 2: width = 1; break;
        case 4: width = 2; break;
        case 8: width = 3; break;
        default: throw py::type_error("out must have 1-, 2-, 4- or 8-byte elements");
    }
    if (o.empty()) return;
    const LookupPartsArgs a{checked, static_cast<int>(parts.size()), o.rows()};
    const auto kernel = learned_kernels().lookup_parts[width];
    const ReleaseGil release(out.size());
    kernel(a, out.mutable_data(), o.layout());
}

// out[num_positions, dim] (C-contiguous, grad's dtype) = scatter-add of grad's rows.
void grad(py::array grad_rows, py::array positions, py::array out) {
    const DType dt = float_dtype(grad_rows, "grad");
    if (float_dtype(out, "out") != dt) throw py::type_error("out must have the dtype of grad");
    require_writeable(out, "out");
    if (out.ndim() != 2 || !(out.flags() & py::array::c_style))
        throw std::invalid_argument("out must be a C-contiguous [num_positions, dim] array");
    const Rows g(grad_rows, "grad");
    const EmbeddingArgs a = args_of(g, positions, out.shape(0), out.shape(1));
    if (out.size() == 0) return;
    const auto kernel = learned_kernels().grad[static_cast<int>(dt)];
    const RowLayout layout = g.empty() ? RowLayout{nullptr, 0, 0, 1} : g.layout();
    const ReleaseGil release(grad_rows.size() + out.size());
    kernel(a, out.shape(0), grad_rows.data(), layout, out.mutable_data());
}

// out[outer, out_size, inner] = src[outer, in_size, inner] resampled along
// the middle axis with the taps index/weights [out_size, taps], taps 2 or 4.
// src and out are C-contiguous; src is the table's dtype or float64, and so
// is out (not both float64 unless the table is).
void resample(py::array src, py::array out, py::array index, py::array weights) {
    if (src.ndim() != 3 || out.ndim() != 3 || !(src.flags() & py::array::c_style) ||
        !(out.flags() & py::array::c_style))
        throw std::invalid_argument("src and out must be C-contiguous [outer, size, inner] arrays");
    require_writeable(out, "out");
    const DType s = float_dtype(src, "src"), d = float_dtype(out, "out");
    const std::int64_t outer = src.shape(0), in_size = src.shape(1), out_size = out.shape(1), inner = src.shape(2);
    if (out.shape(0) != outer || out.shape(2) != inner)
        throw std::invalid_argument("out must match src on the outer and inner axes");
    const std::int64_t taps = index.ndim() == 2 ? index.shape(1) : 0;
    if ((taps != 2 && taps != 4) || index.shape(0) != out_size || !holds<std::int64_t>(index) ||
        !(index.flags() & py::array::c_style))
        throw std::invalid_argument("index must be a C-contiguous int64 [out_size, 2 or 4] array");
    if (weights.ndim() != 2 || weights.shape(0) != out_size || weights.shape(1) != taps ||
        !holds<double>(weights) || !(weights.flags() & py::array::c_style))
        throw std::invalid_argument("weights must be a C-contiguous float64 array shaped like index");
    const auto* w = static_cast<const double*>(weights.data());
    const auto* j = static_cast<const std::int64_t*>(index.data());
    for (std::int64_t k = 0; k < out_size * taps; ++k)
        if (j[k] < 0 || j[k] >= in_size) throw std::out_of_range("resample index outside the source axis");
    const ResampleKernels& kernels = resample_kernels();
    ResampleFn kernel;
    if (s == d) kernel = kernels.same[static_cast<int>(s)];
    else if (d == DType::f64) kernel = kernels.to_double[static_cast<int>(s)];
    else if (s == DType::f64) kernel = kernels.from_double[static_cast<int>(d)];
    else throw py::type_error("src and out must share a dtype, or one of them must be float64");
    if (out.size() == 0) return;
    if (in_size == 0) throw std::invalid_argument("src has nothing to resample");
    const ResampleArgs a{outer, in_size, out_size, inner, j, w, taps};
    py::gil_scoped_release release;
    kernel(a, src.data(), out.mutable_data());
}

}  // namespace

void register_learned(py::module_& m) {
    m.def("embedding_lookup", &lookup, py::arg("table"), py::arg("positions"), py::arg("out"));
    m.def("embedding_add", &add, py::arg("x"), py::arg("table"), py::arg("positions"), py::arg("out"));
    m.def("lookup_parts", &lookup_parts, py::arg("parts"), py::arg("out"));
    m.def("embedding_grad", &grad, py::arg("grad"), py::arg("positions"), py::arg("out"));
    m.def("resample", &resample, py::arg("src"), py::arg("out"), py::arg("index"), py::arg("weights"));
}

}  // namespace posenc::bind
