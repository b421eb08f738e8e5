#include "bindings/lane.hpp"

#include <cmath>
#include <cstring>
#include <utility>

#include "bindings/common.hpp"

namespace posenc::bind::lane {

namespace {
using npy = py::detail::npy_api;

py::dict& parameters() {
    static py::dict* d = new py::dict();  // never freed: outlives the interpreter's teardown order
    return *d;
}

// [lowest, highest) byte addresses a's elements occupy (empty: lowest == highest).
struct ByteRange {
    std::uintptr_t lowest, highest;
};

ByteRange byte_range(const py::array& a) {
    auto lowest = reinterpret_cast<std::uintptr_t>(a.data()), highest = lowest;
    for (py::ssize_t i = 0; i < a.ndim(); ++i) {
        if (a.shape(i) == 0) return {lowest, lowest};
        const auto span = static_cast<std::intptr_t>(a.shape(i) - 1) * static_cast<std::intptr_t>(a.strides(i));
        (span < 0 ? lowest : highest) += static_cast<std::uintptr_t>(span);
    }
    return {lowest, highest + static_cast<std::uintptr_t>(a.itemsize())};
}
}  // namespace

Signature::Signature(const char* name, const std::vector<const char*>& names, std::size_t positional)
    : positional_(positional) {
    py::tuple described(names.size());
    std::size_t i = 0;
    for (const char* n : names) {
        PyObject* s = PyUnicode_InternFromString(n);  // kept for good: compared by identity on every call
        if (s == nullptr) throw py::error_already_set();
        names_.push_back(s);
        described[i++] = py::reinterpret_borrow<py::str>(s);
    }
    parameters()[name] = py::make_tuple(described, positional);
}

bool Signature::bind(py::handle args, py::handle kwargs, PyObject** value) const {
    if (!PyTuple_Check(args.ptr()) || !PyDict_Check(kwargs.ptr())) return false;
    const auto given = static_cast<std::size_t>(PyTuple_GET_SIZE(args.ptr()));
    if (given > positional_) return false;
    for (std::size_t i = 0; i < names_.size(); ++i) value[i] = i < given ? PyTuple_GET_ITEM(args.ptr(), i) : nullptr;
    Py_ssize_t at = 0;
    PyObject *key = nullptr, *item = nullptr;
    while (PyDict_Next(kwargs.ptr(), &at, &key, &item)) {
        std::size_t i = 0;
        while (i < names_.size() && names_[i] != key) ++i;  // keywords of a call are interned: identity first
        if (i == names_.size()) {
            if (!PyUnicode_Check(key)) return false;
            i = 0;
            while (i < names_.size() && PyUnicode_Compare(names_[i], key) != 0) ++i;
            if (PyErr_Occurred()) PyErr_Clear();
        }
        if (i == names_.size() || value[i] != nullptr) return false;
        value[i] = item;
    }
    return true;
}

bool is_array(PyObject* value) { return value != nullptr && Py_TYPE(value) == npy::get().PyArray_Type_; }

std::optional<FloatArray> float_array(PyObject* value) {
    if (!is_array(value)) return std::nullopt;
    if (!(py::detail::array_proxy(value)->flags & npy::NPY_ARRAY_ALIGNED_)) return std::nullopt;
    auto array = py::reinterpret_borrow<py::array>(value);
    try {  // the bindings' own reading of the dtype (a TypeError for anything else: declined)
        const DType dt = float_dtype(array, "x");
        return FloatArray{std::move(array), dt};
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

bool is_none(PyObject* value) { return value == nullptr || value == Py_None; }

std::optional<bool> flag(PyObject* value, bool absent) {
    if (value == nullptr) return absent;
    if (value == Py_True) return true;
    if (value == Py_False) return false;
    return std::nullopt;
}

std::optional<std::int64_t> integer(PyObject* value, std::int64_t absent) {
    if (value == nullptr) return absent;
    if (!PyLong_CheckExact(value)) return std::nullopt;  // bool is a subclass: refused here, as `type(v) is int`
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow != 0 || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return std::nullopt;
    }
    return static_cast<std::int64_t>(v);
}

std::optional<double> real(PyObject* value, double absent) {
    if (value == nullptr) return absent;
    double v = 0.0;
    if (PyFloat_CheckExact(value)) {
        v = PyFloat_AS_DOUBLE(value);
    } else if (PyLong_CheckExact(value)) {
        v = PyLong_AsDouble(value);  // correctly rounded, as float(int)
        if (v == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return std::nullopt;
        }
    } else {
        return std::nullopt;
    }
    if (!std::isfinite(v)) return std::nullopt;
    return v;
}

bool in_place(PyObject* out, const py::array& x) {
    const int flags = py::detail::array_proxy(x.ptr())->flags;
    return out == x.ptr() && (flags & npy::NPY_ARRAY_WRITEABLE_) &&
           (flags & (npy::NPY_ARRAY_C_CONTIGUOUS_ | npy::NPY_ARRAY_F_CONTIGUOUS_));
}

bool exact_positions(std::int64_t offset, std::int64_t count) {
    constexpr std::int64_t kMax = std::int64_t(1) << 53;  // _checks.MAX_EXACT_POSITION
    if (offset < -kMax || offset > kMax) return false;
    const std::int64_t last = offset + (count > 1 ? count - 1 : 0);  // no overflow: |offset| <= 2**53, count < 2**62
    return last >= -kMax && last <= kMax;
}

bool disjoint(const py::array& a, const py::array& b) {
    const ByteRange ra = byte_range(a), rb = byte_range(b);
    return ra.lowest == ra.highest || rb.lowest == rb.highest || ra.highest <= rb.lowest || rb.highest <= ra.lowest;
}

bool Memo::holds(std::int64_t a, double b) const {
    return value_ && a == a_ && std::memcmp(&b, &b_, sizeof b) == 0;
}

py::object Memo::get(std::int64_t a) { return holds(a, 0.0) ? value_ : call(a, 0.0, py::handle()); }

py::object Memo::get(std::int64_t a, double b, PyObject* b_given) {
    if (holds(a, b)) return value_;
    if (b_given != nullptr) return call(a, b, b_given);
    const py::float_ value(b);
    return call(a, b, value);
}

py::object Memo::call(std::int64_t a, double b, py::handle b_given) {
    if (!helper_) return {};
    try {
        py::object v = b_given ? helper_(a, b_given) : helper_(a);
        value_ = v;
        a_ = a;
        b_ = b;
        return v;
    } catch (const py::error_already_set&) {  // the error is the Python layer's to raise, with its message
        return {};
    }
}

void Memo::set_helper(py::object helper) {
    helper_ = std::move(helper);
    value_ = py::object();
}

Memo& rope_frequencies() {
    static Memo* m = new Memo();  // never freed (see parameters())
    return *m;
}

Memo& sinusoid_frequencies() {
    static Memo* m = new Memo();
    return *m;
}

Memo& alibi_slopes() {
    static Memo* m = new Memo();
    return *m;
}

py::object own(const py::array& a) { return py::reinterpret_borrow<py::object>(a); }

py::array result_like(const py::array& x) {
    std::vector<py::ssize_t> shape(x.shape(), x.shape() + x.ndim());
    return py::array(x.dtype(), shape);  // C order, as the Python layer's np.empty
}

void register_lanes(py::module_& m) {
    m.def("lane_helpers", [](py::object rope, py::object sinusoid, py::object alibi) {
        rope_frequencies().set_helper(std::move(rope));
        sinusoid_frequencies().set_helper(std::move(sinusoid));
        alibi_slopes().set_helper(std::move(alibi));
    }, py::arg("rope_frequencies"), py::arg("sinusoid_frequencies"), py::arg("alibi_slopes"));
    m.attr("LANE_PARAMETERS") = parameters();
}

}  // namespace posenc::bind::lane
