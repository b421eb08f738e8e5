#include "bindings/common.hpp"

#include <array>
#include <atomic>
#include <cstring>

namespace posenc::bind {

namespace {
std::string shape_of(const py::array& a) {
    std::string s = "(";
    for (py::ssize_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
    return s + (a.ndim() == 1 ? ",)" : ")");
}

// The type number NumPy gave ml_dtypes' bfloat16 when it was registered, once known (0 before). A
// registered type keeps its number, at least NPY_USERDEF (256), for the life of the process, so the
// name is read only until a bfloat16 array has been seen. The name is a Python-level property, and a
// call reads up to three dtypes: bfloat16 apply_rope [1, 1, 1, 128] took 3.6 µs with the name read
// every time and 1.1 µs with the number (float32: 1.0; AMD EPYC Zen 4). Written under the GIL;
// atomic so that no reader sees it torn.
std::atomic<int> g_bfloat16_num{0};
constexpr int kFirstUserType = 256;  // NPY_USERDEF

bool is_bfloat16(const py::dtype& dt) {
    if (dt.itemsize() != 2) return false;
    const int num = dt.num();
    if (num >= kFirstUserType && num == g_bfloat16_num.load(std::memory_order_relaxed)) return true;
    if (py::str(dt.attr("name")).cast<std::string>() != "bfloat16") return false;
    if (num >= kFirstUserType) g_bfloat16_num.store(num, std::memory_order_relaxed);
    return true;
}
}  // namespace

DType float_dtype(const py::array& a, const char* name) {
    // By kind and size (NumPy's EquivTypes would compare casting tables: a tenth of a decode step's call).
    const py::dtype dt = a.dtype();
    if (dt.byteorder() == '>') throw py::type_error(std::string(name) + " must be in native byte order");
    if (dt.kind() == 'f' && dt.itemsize() == 4) return DType::f32;
    if (dt.kind() == 'f' && dt.itemsize() == 8) return DType::f64;
    if (dt.kind() == 'f' && dt.itemsize() == 2) return DType::f16;
    if (is_bfloat16(dt)) return DType::bf16;
    throw py::type_error(std::string(name) + " must be float32, float64, float16 or bfloat16, got " +
                         py::str(dt).cast<std::string>());
}

void require_writeable(const py::array& a, const char* name) {
    if (!a.writeable()) throw std::invalid_argument(std::string(name) + " is read-only");
}

namespace {
// a's itemsize, to which its data pointer must be aligned (the Python layer copies misaligned arrays first).
std::int64_t aligned_itemsize(const py::array& a, const char* name) {
    const auto item = static_cast<std::int64_t>(a.itemsize());
    if (reinterpret_cast<std::uintptr_t>(a.data()) % static_cast<std::uintptr_t>(item) != 0)
        throw std::invalid_argument(std::string(name) + " is not aligned to its itemsize");
    return item;
}

std::int64_t stride_in_items(const py::array& a, py::ssize_t axis, std::int64_t item, const char* name) {
    const auto stride = static_cast<std::int64_t>(a.strides(axis));
    if (stride % item != 0) throw std::invalid_argument(std::string(name) + " is not aligned to its itemsize");
    return stride / item;
}

// offsets[k] for k < count (the product of the extents): the element offset of the k-th
// index, in C order, of axes with these extents and strides. The last axis's offsets
// follow each other by its stride, so each of its runs is one plain loop; the axes
// before it advance like an odometer once per run. (An odometer step for every
// element was 7.6% of a profile of a float32 decode step [32, 1, 32, 128], whose
// 1024 unit vectors each need one; this form took such steps to 0.91-0.97x their time.)
void odometer_offsets(std::int64_t* offsets, std::int64_t count, std::size_t n_axes, const std::int64_t* extent,
                      const std::int64_t* stride) {
    if (n_axes == 0) {
        if (count > 0) offsets[0] = 0;
        return;
    }
    const std::int64_t inner = extent[n_axes - 1], step = stride[n_axes - 1];
    std::array<std::int64_t, kMaxDims> index;
    for (std::size_t i = 0; i + 1 < n_axes; ++i) index[i] = 0;
    std::int64_t base = 0;
    for (std::int64_t k = 0; k < count; k += inner) {
        for (std::int64_t j = 0; j < inner; ++j) offsets[k + j] = base + j * step;
        for (std::size_t i = n_axes - 1; i-- > 0;) {
            base += stride[i];
            if (++index[i] < extent[i]) break;
            base -= stride[i] * index[i];
            index[i] = 0;
        }
    }
}
}  // namespace

std::int64_t element_stride(const py::array& a, py::ssize_t axis, const char* name) {
    return stride_in_items(a, axis, aligned_itemsize(a, name), name);
}

const double* float64_vector(const py::array& a, std::int64_t n, const char* name) {
    // Aligned too: a misaligned view (np.frombuffer at an odd offset) is C-contiguous.
    if (!holds<double>(a) || a.ndim() != 1 || a.shape(0) != n ||
        !(a.flags() & py::array::c_style) || reinterpret_cast<std::uintptr_t>(a.data()) % alignof(double) != 0)
        throw std::invalid_argument(std::string(name) + " must be a contiguous float64 vector of length " +
                                    std::to_string(n) + ", got shape " + shape_of(a));
    return static_cast<const double*>(a.data());
}

Positions positions_of(const std::optional<py::array>& values, double start, std::int64_t rows) {
    if (!values) return {nullptr, start};
    return {float64_vector(*values, rows, "positions"), 0.0};
}

Rows::Rows(const py::array& a, const char* name) {
    const py::ssize_t nd = a.ndim();
    if (nd < 2) throw std::invalid_argument(std::string(name) + " must have at least 2 dimensions, got shape " + shape_of(a));
    if (nd > static_cast<py::ssize_t>(kMaxDims)) throw std::invalid_argument(std::string(name) + " has too many dimensions");
    const std::int64_t item = aligned_itemsize(a, name);
    rows_ = a.shape(nd - 2);
    cols_ = a.shape(nd - 1);
    row_stride_ = stride_in_items(a, nd - 2, item, name);
    col_stride_ = stride_in_items(a, nd - 1, item, name);
    std::int64_t batches = 1;
    for (py::ssize_t i = 0; i < nd - 2; ++i) batches *= a.shape(i);
    if (batches == 0 || rows_ == 0 || cols_ == 0) return;
    offsets_.reset(batches);
    const std::size_t leading = static_cast<std::size_t>(nd > 2 ? nd - 2 : 0);
    std::array<std::int64_t, kMaxDims> stride, extent;  // the first `leading` entries only
    for (std::size_t i = 0; i < leading; ++i) {
        stride[i] = stride_in_items(a, static_cast<py::ssize_t>(i), item, name);
        extent[i] = a.shape(static_cast<py::ssize_t>(i));
    }
    odometer_offsets(offsets_.data(), batches, leading, extent.data(), stride.data());
}

GroupedRows::GroupedRows(const py::array& a, py::ssize_t row_axis, bool grouped, const char* name) {
    const py::ssize_t nd = a.ndim();
    if (nd > static_cast<py::ssize_t>(kMaxDims)) throw std::invalid_argument(std::string(name) + " has too many dimensions");
    if (nd < 2 || row_axis < 0 || row_axis >= nd - 1 || (grouped && row_axis == 0))
        throw std::invalid_argument(std::string(name) + " of shape " + shape_of(a) + " has no such row axis");
    const std::int64_t item = aligned_itemsize(a, name);
    rows_ = a.shape(row_axis);
    cols_ = a.shape(nd - 1);
    row_stride_ = stride_in_items(a, row_axis, item, name);
    col_stride_ = stride_in_items(a, nd - 1, item, name);
    // Only the first n_axes entries are used (not zero-filled whole: a decode step's call builds two of these).
    std::array<std::int64_t, kMaxDims> stride, extent;
    std::size_t n_axes = 0;
    std::int64_t count = 1;
    for (py::ssize_t i = 0; i < nd - 1; ++i) {
        if (i == row_axis) continue;
        stride[n_axes] = stride_in_items(a, i, item, name);
        extent[n_axes] = a.shape(i);
        count *= extent[n_axes++];
    }
    groups_ = grouped ? a.shape(0) : 1;
    units_ = groups_ > 0 ? count / groups_ : 0;
    if (n_axes > 0) {
        const std::int64_t inner = stride[n_axes - 1] < 0 ? -stride[n_axes - 1] : stride[n_axes - 1];
        rows_outer_ = (row_stride_ < 0 ? -row_stride_ : row_stride_) >= inner;
    }
    if (count == 0 || rows_ == 0 || cols_ == 0) return;
    offsets_.reset(count);
    odometer_offsets(offsets_.data(), count, n_axes, extent.data(), stride.data());
}

void require_same_shape(const py::array& a, const char* a_name, const py::array& b, const char* b_name) {
    bool same = a.ndim() == b.ndim();
    for (py::ssize_t i = 0; same && i < a.ndim(); ++i) same = a.shape(i) == b.shape(i);
    if (!same)
        throw std::invalid_argument(std::string(a_name) + " has shape " + shape_of(a) + " but " + b_name +
                                    " has shape " + shape_of(b));
}

}  // namespace posenc::bind
