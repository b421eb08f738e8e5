// bindings/lane.hpp — the small-call lane: a public call's common arguments, straight to a kernel.
//
// A decode step calls posenc once per layer per token on a few hundred
// values, where the Python layer's argument checks cost several times the
// kernel. A public function with a lane (`lane_<name>` in posenc._native)
// hands its (args, kwargs) to the lane first. The lane either takes the call,
// or declines it by returning None and runs nothing; the Python layer then
// runs the call with all its checks and error messages. The lane takes a call
// only when every argument is a plain value (an exact ndarray, an int, a
// bool) it has checked completely, and it then makes the same kernel call the
// native executor would make, so the bits are the same. A lane never raises:
// whatever it cannot prove valid it declines.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "posenc/dtype.hpp"

namespace posenc::bind::lane {

namespace py = pybind11;

// A public function's parameters, as the lane binds a call's (args, kwargs) to them. Constructed once per
// lane at registration; `name` and the names are published in posenc._native.LANE_PARAMETERS, which a
// test compares with the Python signature.
class Signature {
  public:
    Signature(const char* name, const std::vector<const char*>& names, std::size_t positional);
    // value[i]: the argument given for names[i], or nullptr. False when the call passes anything the
    // signature would not bind: an unknown keyword, too many positionals, a parameter twice.
    bool bind(py::handle args, py::handle kwargs, PyObject** value) const;

  private:
    std::vector<PyObject*> names_;  // interned
    std::size_t positional_;        // how many may come by position
};

// An exact ndarray (no subclass) the kernels read as it is: aligned, of a dtype the bindings take
// (float_dtype: float32/64/16, bfloat16, native byte order).
struct FloatArray {
    py::array array;  // a borrowed view of the caller's object, no conversion
    DType dtype;
};
std::optional<FloatArray> float_array(PyObject* value);

// Whether value is an exact ndarray (no subclass).
bool is_array(PyObject* value);

// The lane's reading of the plain arguments: absent takes the default; any other type declines (nullopt).
bool is_none(PyObject* value);                                         // absent or None
std::optional<bool> flag(PyObject* value, bool absent);                // exactly True or False
std::optional<std::int64_t> integer(PyObject* value, std::int64_t absent);  // an exact int that fits
std::optional<double> real(PyObject* value, double absent);            // an exact int or float, finite

// Whether `out` is `x` itself and may be written in place as it is: writeable and contiguous
// (the Python layer's rule, `_checks._whole`).
bool in_place(PyObject* out, const py::array& x);

// Whether positions offset + k, k < count, stay exact in float64 (`_checks.offset`).
bool exact_positions(std::int64_t offset, std::int64_t count);

// Whether a and b certainly share no byte: their address ranges do not meet (views that interleave
// without sharing count as overlapping; the lane then declines and the Python layer decides exactly).
bool disjoint(const py::array& a, const py::array& b);

// A table a lane asks its Python helper for (frequencies, slopes), kept while the key repeats, as it does
// from one decode step to the next. The helper is the very function the Python layer calls, so the lane
// uses its exact values; get() is an empty object when the helper is not set or raised (error cleared).
class Memo {
  public:
    // helper(a).
    py::object get(std::int64_t a);
    // helper(a, b): b as the caller gave it (`b_given`; nullptr: the float b, a default), its value the key.
    py::object get(std::int64_t a, double b, PyObject* b_given);
    void set_helper(py::object helper);

  private:
    py::object helper_, value_;
    std::int64_t a_ = 0;
    double b_ = 0.0;
    bool holds(std::int64_t a, double b) const;
    py::object call(std::int64_t a, double b, py::handle b_given);
};

// What the lane returns for a call it took: the caller's object itself, or a new C-order array like x
// (the Python layer's np.empty).
py::object own(const py::array& a);
py::array result_like(const py::array& x);

// Registers what every lane shares: `lane_helpers(...)`, which the Python layer calls once with its helpers.
void register_lanes(py::module_& m);

// The memo of each family's helper (set once by lane_helpers).
Memo& rope_frequencies();
Memo& sinusoid_frequencies();
Memo& alibi_slopes();

}  // namespace posenc::bind::lane
