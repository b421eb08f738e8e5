// Bindings of the relative-position kernels: shape checks, then the kernel without the GIL.
#include "bindings/common.hpp"
#include "bindings/lane.hpp"
#include "bindings/register.hpp"
#include "posenc/relative.hpp"

#include <cstring>

namespace posenc::bind {

namespace {

Width width_of(const py::array& a, const char* name) {
    switch (a.itemsize()) {
        case 1: return Width::w1;
        case 2: return Width::w2;
        case 4: return Width::w4;
        case 8: return Width::w8;
        default:
            throw py::type_error(std::string(name) + " must have 1-, 2-, 4- or 8-byte elements, got " +
                                 py::str(a.dtype()).cast<std::string>());
    }
}

// The lookup rows for an operand whose [rows, cols·step] rows are `o`: C-contiguous,
// the operand's dtype, [lut_rows, (rows + cols − 1)·step], and lut_rows dividing the batches.
ToeplitzArgs args_of(const py::array& operand, const Rows& o, const py::array& lut, std::int64_t step) {
    if (!lut.dtype().equal(operand.dtype())) throw py::type_error("lut must have the dtype of the operand");
    if (step < 1 || o.cols() % step != 0)
        throw std::invalid_argument("rows of " + std::to_string(o.cols()) + " elements are not whole steps of " +
                                    std::to_string(step));
    const std::int64_t rows = o.rows(), cols = o.cols() / step;
    const std::int64_t len = rows + cols > 0 ? (rows + cols - 1) * step : 0;
    if (lut.ndim() != 2 || lut.shape(1) != len || lut.shape(0) < 1 || !(lut.flags() & py::array::c_style))
        throw std::invalid_argument("lut must be a C-contiguous [heads, " + std::to_string(len) + "] array");
    const std::int64_t lut_rows = lut.shape(0);
    const std::int64_t batches = o.layout().batches;
    if (!o.empty() && batches % lut_rows != 0)
        throw std::invalid_argument(std::to_string(batches) + " batches are not a whole number of " +
                                    std::to_string(lut_rows) + " heads");
    if (reinterpret_cast<std::uintptr_t>(lut.data()) % static_cast<std::uintptr_t>(lut.itemsize()) != 0)
        throw std::invalid_argument("lut is not aligned to its itemsize");
    return {lut.data(), lut_rows, rows, cols, step};
}

// out[..., rows, cols·step] ← rows of the lookup table (any dtype: a copy).
void toeplitz_copy(py::array out, py::array lut, std::int64_t step) {
    const Width w = width_of(out, "out");
    require_writeable(out, "out");
    const Rows o(out, "out");
    const ToeplitzArgs a = args_of(out, o, lut, step);
    if (o.empty()) return;
    const auto kernel = relative_kernels().copy[static_cast<int>(w)];
    const ReleaseGil release(out.size());
    kernel(a, out.mutable_data(), o.layout());
}

// out[..., heads, q, k] = x + bias rows; out may be x itself.
void toeplitz_add(py::array x, py::array out, py::array lut) {
    const DType dt = float_dtype(x, "scores");
    if (float_dtype(out, "out") != dt) throw py::type_error("out must have the dtype of scores");
    require_writeable(out, "out");
    require_same_shape(x, "scores", out, "out");
    if (x.ndim() < 3 || x.shape(x.ndim() - 3) != lut.shape(0))
        throw std::invalid_argument("scores must be [..., heads, q, k] with one lookup row per head");
    const Rows xr(x, "scores"), o(out, "out");
    const ToeplitzArgs a = args_of(x, o, lut, 1);
    if (o.empty()) return;
    const auto kernel = relative_kernels().add[static_cast<int>(dt)];
    const ReleaseGil release(out.size());
    kernel(a, x.data(), xr.layout(), out.mutable_data(), o.layout());
}

// The lookup rows of a bucketed bias (T5): row h holds table[buckets[m], h] for each entry m of a lookup row
// of buckets, copied as they are (U: an unsigned integer of the table's element width). Built here in one
// pass, where NumPy's gather and transposed copy were two calls that, right after a kernel streamed a large
// score tensor through the caches, took ~100 µs for [16, 2047] (AMD EPYC Zen 4).
template <class U>
void gather_rows(const py::array& table, const std::int32_t* buckets, std::int64_t length, void* rows) {
    const auto* t = static_cast<const char*>(table.data());
    U* out = static_cast<U*>(rows);
    for (std::int64_t h = 0; h < table.shape(1); ++h, out += length) {
        const char* column = t + h * table.strides(1);
        for (std::int64_t m = 0; m < length; ++m)
            std::memcpy(out + m, column + buckets[m] * table.strides(0), sizeof(U));
    }
}
using GatherRows = void (*)(const py::array&, const std::int32_t*, std::int64_t, void*);
constexpr GatherRows kGatherRows[] = {gather_rows<std::uint8_t>, gather_rows<std::uint16_t>,
                                      gather_rows<std::uint32_t>, gather_rows<std::uint64_t>};  // by Width

// bucket_rows(table [num_buckets, heads], buckets int32 [length]) -> [heads, length] in the table's dtype.
py::array bucket_rows(py::array table, py::array buckets) {
    if (table.ndim() != 2) throw std::invalid_argument("table must be [num_buckets, heads]");
    if (!holds<std::int32_t>(buckets) || buckets.ndim() != 1 || !(buckets.flags() & py::array::c_style))
        throw py::type_error("buckets must be a C-contiguous 1-D int32 array");
    const Width w = width_of(table, "table");
    const std::int64_t size = table.itemsize(), num_buckets = table.shape(0), length = buckets.shape(0);
    if (reinterpret_cast<std::uintptr_t>(table.data()) % static_cast<std::uintptr_t>(size) != 0 ||
        table.strides(0) % size != 0 || table.strides(1) % size != 0)
        throw std::invalid_argument("table is not aligned to its itemsize");
    const auto* b = static_cast<const std::int32_t*>(buckets.data());
    for (std::int64_t m = 0; m < length; ++m)
        if (b[m] < 0 || b[m] >= num_buckets)
            throw std::invalid_argument("bucket " + std::to_string(b[m]) + " is outside the table's " +
                                        std::to_string(num_buckets) + " rows");
    py::array rows(table.dtype(), {table.shape(1), length});
    kGatherRows[static_cast<int>(w)](table, b, length, rows.mutable_data());
    return rows;
}

// ALiBi's lookup rows (the kernels' alibi_rows): lut [heads, length] ← slope_h·d for the distances
// d = first, first + 1, … (−slope_h·|d| when symmetric), rounded once to lut's dtype. The one
// evaluation of those rows on the native side: alibi_bias streams them, alibi_add adds them.
void alibi_rows(py::array slopes, py::array lut, std::int64_t first, bool symmetric) {
    const DType dt = float_dtype(lut, "lut");
    require_writeable(lut, "lut");
    if (lut.ndim() != 2 || !(lut.flags() & py::array::c_style) ||
        reinterpret_cast<std::uintptr_t>(lut.data()) % static_cast<std::uintptr_t>(lut.itemsize()) != 0)
        throw std::invalid_argument("lut must be a C-contiguous, aligned [heads, length] array");
    const std::int64_t heads = lut.shape(0), length = lut.shape(1);
    const double* s = float64_vector(slopes, heads, "slopes");
    constexpr std::int64_t kMaxDistance = std::int64_t(1) << 54;  // |first| + length: no overflow below 2**63
    if (first < -kMaxDistance || first > kMaxDistance || length > kMaxDistance)
        throw std::invalid_argument("distances must lie within 2**54");
    relative_kernels().alibi_rows[static_cast<int>(dt)](s, heads, first, length, symmetric, lut.mutable_data());
}

// out[..., heads, q, k] = x + ALiBi bias of query positions offset + i, the bias rounded once to the
// scores' dtype (alibi_rows) and the sum rounded once.
void alibi_add(py::array x, py::array out, py::array slopes, std::int64_t offset, bool symmetric) {
    float_dtype(x, "scores");
    if (x.ndim() < 3) throw std::invalid_argument("scores must be [..., heads, q, k]");
    const std::int64_t heads = x.shape(x.ndim() - 3), rows = x.shape(x.ndim() - 2), cols = x.shape(x.ndim() - 1);
    constexpr std::int64_t kMaxPosition = std::int64_t(1) << 53;
    if (offset < -kMaxPosition || offset > kMaxPosition || rows > kMaxPosition || cols > kMaxPosition)
        throw std::invalid_argument("offset and lengths must lie within 2**53");
    py::array lut(x.dtype(), {heads, rows + cols > 0 ? rows + cols - 1 : 0});
    alibi_rows(slopes, lut, -(rows - 1) - offset, symmetric);
    toeplitz_add(x, out, lut);
}

py::array_t<std::int64_t> t5_thresholds(std::int64_t half, std::int64_t max_exact, std::int64_t max_distance) {
    if (max_exact < 1 || half < 2 * max_exact || max_distance <= max_exact || max_distance > (std::int64_t(1) << 62))
        throw std::invalid_argument("t5_thresholds needs 1 <= max_exact <= half/2 and max_exact < max_distance <= 2**62");
    py::array_t<std::int64_t> out(half - max_exact - 1);
    std::int64_t* data = out.mutable_data();
    const auto kernel = relative_kernels().t5_thresholds;
    py::gil_scoped_release release;
    kernel(half, max_exact, max_distance, data);
    return out;
}

// add_alibi(scores, offset=, symmetric=, out=) in the small-call lane (bindings/lane.hpp): scores
// [..., heads, q, k] with the authors' slopes, out None or scores itself.
const lane::Signature& add_alibi_signature() {
    static const auto* s = new lane::Signature("add_alibi", {"scores", "offset", "symmetric", "slopes", "num_heads",
                                                             "out"}, 1);
    return *s;
}

py::object lane_add_alibi(py::handle args, py::handle kwargs) {
    PyObject* v[6] = {};
    const auto s = add_alibi_signature().bind(args, kwargs, v) ? lane::float_array(v[0]) : std::nullopt;
    if (!s || s->array.ndim() < 3) return py::none();
    const py::array& x = s->array;
    const std::int64_t heads = x.shape(x.ndim() - 3), q = x.shape(x.ndim() - 2), k = x.shape(x.ndim() - 1);
    constexpr std::int64_t kMaxLength = std::int64_t(1) << 53;  // _checks.length
    const auto offset = lane::integer(v[1], 0);
    const auto symmetric = lane::flag(v[2], false);
    PyObject* out = v[5];
    if (!offset || !symmetric || !lane::is_none(v[3]) || !lane::is_none(v[4]) || heads == 0 || q > kMaxLength ||
        k > kMaxLength || !lane::exact_positions(*offset, q) || !(lane::is_none(out) || lane::in_place(out, x)))
        return py::none();
    const py::object slopes = lane::alibi_slopes().get(heads);
    if (!slopes) return py::none();
    try {
        py::array dest = lane::is_none(out) ? lane::result_like(x) : x;
        alibi_add(x, dest, slopes, *offset, *symmetric);
        return lane::own(dest);
    } catch (const std::exception&) {  // a check the lane missed: nothing was written, the Python layer decides
        return py::none();
    }
}

}  // namespace

void register_relative(py::module_& m) {
    m.def("toeplitz_copy", &toeplitz_copy, py::arg("out"), py::arg("lut"), py::arg("step"));
    m.def("toeplitz_add", &toeplitz_add, py::arg("x"), py::arg("out"), py::arg("lut"));
    m.def("bucket_rows", &bucket_rows, py::arg("table"), py::arg("buckets"));
    add_alibi_signature();  // published now (lane.hpp)
    m.def("lane_add_alibi", &lane_add_alibi, py::arg("args"), py::arg("kwargs"));
    m.def("alibi_rows", &alibi_rows, py::arg("slopes"), py::arg("lut"), py::arg("first"), py::arg("symmetric"));
    m.def("alibi_add", &alibi_add, py::arg("x"), py::arg("out"), py::arg("slopes"), py::arg("offset"),
          py::arg("symmetric"));
    m.def("t5_thresholds", &t5_thresholds, py::arg("half"), py::arg("max_exact"), py::arg("max_distance"));
}

}  // namespace posenc::bind
