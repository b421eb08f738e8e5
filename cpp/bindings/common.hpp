// bindings/common.hpp — turning NumPy arrays into what kernels take.
//
// Arrays arrive as plain py::array: never a force-casting py::array_t, which
// would silently copy a strided or mistyped `out` and leave the caller's
// array untouched. Everything here checks, nothing converts: the Python
// layer has already normalised arguments, and these checks are the last line
// that keeps a kernel from reading or writing out of bounds.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "posenc/dtype.hpp"
#include "posenc/positions.hpp"

namespace posenc::bind {

namespace py = pybind11;

// NumPy's largest number of dimensions (NPY_MAXDIMS, 64 since NumPy 2; 32 before).
constexpr std::size_t kMaxDims = 64;

// Whether `a` holds elements of type T. Compared by value (NumPy's EquivTypes),
// never by identity: an unpickled array (every array a dask.distributed worker
// receives) carries its own dtype object, equal to but not the canonical one.
template <class T>
bool holds(const py::array& a) {
    return py::isinstance<py::array_t<T>>(a);
}

// The storage type of a floating array; TypeError for anything else.
DType float_dtype(const py::array& a, const char* name);

// A writeable array; ValueError naming `name` otherwise.
void require_writeable(const py::array& a, const char* name);

// A float64, C-contiguous, 1-D array of exactly n elements.
const double* float64_vector(const py::array& a, std::int64_t n, const char* name);

// Optional positions: float64 of `rows` elements, or nullptr for start + k.
Positions positions_of(const std::optional<py::array>& values, double start, std::int64_t rows);

// Element offsets of the batches or units of an array (Rows, GroupedRows),
// each written once: unlike std::vector's, not zeroed first (in a profile of
// a float32 decode step, with its 1024 units, the zeroing took as many
// samples as the writing, 2.8% each).
class Offsets {
  public:
    void reset(std::int64_t n) {
        data_.reset(new std::int64_t[static_cast<std::size_t>(n)]);
        size_ = n;
    }
    std::int64_t* data() { return data_.get(); }
    const std::int64_t* data() const { return data_.get(); }
    std::int64_t size() const { return size_; }
    bool empty() const { return size_ == 0; }

  private:
    std::unique_ptr<std::int64_t[]> data_;
    std::int64_t size_ = 0;
};

// The [batch..., rows, cols] view of `a` (ndim ≥ 2) as offsets and strides in
// elements. Owns the batch offsets; every address it describes lies inside `a`.
class Rows {
  public:
    Rows(const py::array& a, const char* name);
    RowLayout layout() const { return {offsets_.data(), offsets_.size(), row_stride_, col_stride_}; }
    std::int64_t rows() const { return rows_; }
    std::int64_t cols() const { return cols_; }
    bool empty() const { return offsets_.empty() || rows_ == 0 || cols_ == 0; }

  private:
    Offsets offsets_;
    std::int64_t rows_, cols_, row_stride_, col_stride_;
};

// The [groups, units, rows, cols] view of `a` for kernels that share one row
// of work (angles, say) across many vectors: `rows` is axis `row_axis`,
// `cols` the last axis, units every other axis in C order, and groups
// axis 0 when `grouped` (then axis 0 is not `row_axis`). Owns the offsets of
// each (group, unit) vector's first element; every address lies inside `a`.
class GroupedRows {
  public:
    GroupedRows(const py::array& a, py::ssize_t row_axis, bool grouped, const char* name);
    const std::int64_t* offsets() const { return offsets_.data(); }
    std::int64_t groups() const { return groups_; }
    std::int64_t units() const { return units_; }
    std::int64_t rows() const { return rows_; }
    std::int64_t cols() const { return cols_; }
    std::int64_t row_stride() const { return row_stride_; }
    std::int64_t col_stride() const { return col_stride_; }
    // Whether rows are the larger stride than the innermost unit axis (walk rows first).
    bool rows_outer() const { return rows_outer_; }
    bool empty() const { return offsets_.empty() || rows_ == 0 || cols_ == 0; }

  private:
    Offsets offsets_;
    std::int64_t groups_ = 1, units_ = 0, rows_ = 0, cols_ = 0, row_stride_ = 0, col_stride_ = 0;
    bool rows_outer_ = true;
};

// Element stride of axis `axis`; ValueError if the array is not aligned to
// its itemsize (the Python layer copies those first).
std::int64_t element_stride(const py::array& a, py::ssize_t axis, const char* name);

// Same shape on every axis; ValueError naming both otherwise.
void require_same_shape(const py::array& a, const char* a_name, const py::array& b, const char* b_name);

// Releases the GIL around a kernel of `elements` elements, unless there are
// so few that releasing and re-taking it would cost more than the work (a
// decode step rotates a few hundred values in well under a microsecond). The
// kernel then runs on the calling thread either way; NumPy's ufuncs draw the
// same line (NPY_BEGIN_THREADS_THRESHOLDED).
class ReleaseGil {
  public:
    explicit ReleaseGil(std::int64_t elements) {
        if (elements >= kMinElements) release_.emplace();
    }

  private:
    static constexpr std::int64_t kMinElements = std::int64_t(1) << 14;
    std::optional<py::gil_scoped_release> release_;
};

}  // namespace posenc::bind
