// Bindings of the rotary kernels: shape checks, then the kernel without the GIL.
#include "bindings/common.hpp"
#include "bindings/lane.hpp"
#include "bindings/register.hpp"
#include "posenc/rope.hpp"

#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

namespace posenc::bind {

namespace {

// Checks positions ([axes, groups, rows] float64, C order), pair axes and
// frequencies against the first operand's view.
RopeArgs args_of(const GroupedRows& x, const std::optional<py::array>& positions, double start,
                 const py::array& inv_freq, const std::optional<py::array>& pair_axis, double scale,
                 bool interleaved, bool inverse) {
    const std::int64_t half = inv_freq.ndim() == 1 ? inv_freq.shape(0) : -1;
    const double* w = float64_vector(inv_freq, half, "inv_freq");
    if (half < 1 || 2 * half > x.cols())
        throw std::invalid_argument("rotary_dim = 2·len(inv_freq) = " + std::to_string(2 * half) +
                                    " does not fit head_dim " + std::to_string(x.cols()));
    std::int64_t axes = 1;
    const double* pos = nullptr;
    if (positions) {
        const py::array& p = *positions;
        if (!holds<double>(p) || p.ndim() != 3 || !(p.flags() & py::array::c_style) ||
            p.shape(1) != x.groups() || p.shape(2) != x.rows() || p.shape(0) < 1)
            throw std::invalid_argument("positions must be a C-contiguous float64 [axes, " +
                                        std::to_string(x.groups()) + ", " + std::to_string(x.rows()) + "] array");
        axes = p.shape(0);
        pos = static_cast<const double*>(p.data());
    } else if (x.groups() != 1) {
        throw std::invalid_argument("per-batch groups need positions");
    }
    const std::int64_t* pa = nullptr;
    if (pair_axis) {
        const py::array& p = *pair_axis;
        if (!holds<std::int64_t>(p) || p.ndim() != 1 || p.shape(0) != half ||
            !(p.flags() & py::array::c_style))
            throw std::invalid_argument("pair_axis must be a contiguous int64 vector of length len(inv_freq)");
        pa = static_cast<const std::int64_t*>(p.data());
        for (std::int64_t j = 0; j < half; ++j)
            if (pa[j] < 0 || (pos && pa[j] >= axes))
                throw std::invalid_argument("pair_axis entries must index the positions' axes");
    }
    return {x.groups(), x.rows(), pos, start, w, half, pa, scale, interleaved, inverse};
}

// The views of one (x, out) pair; they must outlive the kernel call.
struct Operand {
    GroupedRows x, out;
    RopeOperand op;
    std::int64_t size;
};

Operand operand_of(const py::array& x, py::array& out, DType dt, py::ssize_t seq_axis, bool grouped,
                   const char* x_name, const char* out_name) {
    if (float_dtype(x, x_name) != dt) throw py::type_error(std::string(x_name) + " must have the dtype of x");
    if (float_dtype(out, out_name) != dt)
        throw py::type_error(std::string(out_name) + " must have the dtype of " + x_name);
    require_writeable(out, out_name);
    require_same_shape(x, x_name, out, out_name);
    Operand o{GroupedRows(x, seq_axis, grouped, x_name), GroupedRows(out, seq_axis, grouped, out_name), {},
              static_cast<std::int64_t>(out.size())};
    o.op = RopeOperand{x.data(), {o.x.offsets(), o.x.row_stride(), o.x.col_stride()}, out.mutable_data(),
                       {o.out.offsets(), o.out.row_stride(), o.out.col_stride()}, o.x.units(), o.x.cols(),
                       x.data() != out.data(), o.x.rows_outer()};
    return o;
}

// The optional second operand (k into out_k, both or neither): x's dtype, batch and rows, and a head_dim
// that holds the rotated pairs.
std::optional<Operand> second_of(const Operand& a, DType dt, const std::optional<py::array>& k,
                                 std::optional<py::array>& out_k, py::ssize_t seq_axis, bool grouped,
                                 std::int64_t half) {
    if (k.has_value() != out_k.has_value()) throw std::invalid_argument("k and out_k come together");
    if (!k) return std::nullopt;
    std::optional<Operand> b(operand_of(*k, *out_k, dt, seq_axis, grouped, "k", "out_k"));
    if (a.x.groups() != b->x.groups() || a.x.rows() != b->x.rows())
        throw std::invalid_argument("x and k must have the same batch and seq length");
    if (2 * half > b->x.cols())
        throw std::invalid_argument("2·pairs = " + std::to_string(2 * half) + " does not fit k's head_dim " +
                                    std::to_string(b->x.cols()));
    return b;
}

// Rotates the checked operands by args in one kernel call: with two (q and k), each row's cos/sin serve
// the heads of both.
void rotate(const RopeArgs& args, const Operand& a, const std::optional<Operand>& b, DType dt) {
    RopeOperand ops[2];
    int n = 0;
    if (!a.x.empty()) ops[n++] = a.op;
    if (b && !b->x.empty()) ops[n++] = b->op;
    if (n == 0) return;
    const auto kernel = rope_kernels().apply[static_cast<int>(dt)];
    const ReleaseGil release(a.size + (b ? b->size : 0));
    kernel(args, ops, n);
}

// Rotates x into out (out may be x), and k into out_k when given. seq_axis counts from 0; grouped: axis 0
// is the batch that positions' second axis follows.
void apply(py::array x, py::array out, py::ssize_t seq_axis, bool grouped, std::optional<py::array> positions,
           double start, py::array inv_freq, std::optional<py::array> pair_axis, double scale, bool interleaved,
           bool inverse, std::optional<py::array> k, std::optional<py::array> out_k) {
    const DType dt = float_dtype(x, "x");
    const Operand a = operand_of(x, out, dt, seq_axis, grouped, "x", "out");
    const RopeArgs args = args_of(a.x, positions, start, inv_freq, pair_axis, scale, interleaved, inverse);
    rotate(args, a, second_of(a, dt, k, out_k, seq_axis, grouped, args.half), dt);
}

// A float64, C-contiguous array of exactly `shape`; ValueError naming `name` otherwise.
const double* float64_block(const py::array& a, std::initializer_list<std::int64_t> shape, const char* name) {
    bool ok = holds<double>(a) && (a.flags() & py::array::c_style) && a.ndim() == static_cast<py::ssize_t>(shape.size());
    py::ssize_t i = 0;
    std::string want;
    for (const std::int64_t n : shape) {
        ok = ok && a.shape(i++) == n;
        want += (want.empty() ? "" : ", ") + std::to_string(n);
    }
    if (!ok) throw std::invalid_argument(std::string(name) + " must be a C-contiguous float64 [" + want + "] array");
    return static_cast<const double*>(a.data());
}

// Multi-axis angles of x's view: coords [groups, rows, axes], freqs [axes, half] or, per head, [heads, axes,
// half] (x's innermost unit axis is then its heads axis: unit u takes freqs[u mod heads]).
RopeArgs nd_args(const GroupedRows& x, const py::array& coords, const py::array& freqs, bool interleaved,
                 bool inverse) {
    const py::ssize_t nd = freqs.ndim();
    const std::int64_t heads = nd == 3 ? freqs.shape(0) : 0;
    const std::int64_t axes = nd == 2 || nd == 3 ? freqs.shape(nd - 2) : -1, half = nd >= 2 ? freqs.shape(nd - 1) : -1;
    if (axes < 1 || half < 1 || 2 * half > x.cols() || (nd == 3 && (heads < 1 || x.units() % heads != 0)))
        throw std::invalid_argument("freqs must be a [axes, pairs] or [heads, axes, pairs] array with 2·pairs <= "
                                    "head_dim " + std::to_string(x.cols()) + " and heads dividing x's units");
    RopeArgs args{x.groups(), x.rows(), nullptr, 0.0, nullptr, half, nullptr, 1.0, interleaved, inverse};
    args.freqs = nd == 3 ? float64_block(freqs, {heads, axes, half}, "freqs") : float64_block(freqs, {axes, half}, "freqs");
    args.freq_heads = heads;
    args.coords = float64_block(coords, {x.groups(), x.rows(), axes}, "coords");
    args.axes = axes;
    return args;
}

// Caller tables of x's view: cos and sin [groups, rows, half].
RopeArgs table_args(const GroupedRows& x, const py::array& cos, const py::array& sin, double scale, bool interleaved,
                    bool inverse) {
    const std::int64_t half = cos.ndim() == 3 ? cos.shape(2) : -1;
    if (half < 1 || 2 * half > x.cols())
        throw std::invalid_argument("cos must be a [groups, rows, pairs] array with 2·pairs <= head_dim " +
                                    std::to_string(x.cols()));
    RopeArgs args{x.groups(), x.rows(), nullptr, 0.0, nullptr, half, nullptr, scale, interleaved, inverse};
    args.cos_table = float64_block(cos, {x.groups(), x.rows(), half}, "cos");
    args.sin_table = float64_block(sin, {x.groups(), x.rows(), half}, "sin");
    return args;
}

// x rotated by θ_j = Σ_a coords[a]·freqs[a, j] (out may be x).
void apply_nd(py::array x, py::array out, py::ssize_t seq_axis, bool grouped, py::array coords, py::array freqs,
              bool interleaved, bool inverse) {
    const DType dt = float_dtype(x, "x");
    const Operand a = operand_of(x, out, dt, seq_axis, grouped, "x", "out");
    rotate(nd_args(a.x, coords, freqs, interleaved, inverse), a, std::nullopt, dt);
}

// x (and k when given) rotated by the caller's float64 cos/sin tables [groups, rows, half], times scale.
void apply_tables(py::array x, py::array out, py::ssize_t seq_axis, bool grouped, py::array cos, py::array sin,
                  double scale, bool interleaved, bool inverse, std::optional<py::array> k,
                  std::optional<py::array> out_k) {
    const DType dt = float_dtype(x, "x");
    const Operand a = operand_of(x, out, dt, seq_axis, grouped, "x", "out");
    const RopeArgs args = table_args(a.x, cos, sin, scale, interleaved, inverse);
    rotate(args, a, second_of(a, dt, k, out_k, seq_axis, grouped, args.half), dt);
}

// out_cos/out_sin [rows, half] of coords [rows, axes] and freqs [axes, half], contiguous, of one dtype.
void nd_cos_sin(py::array out_cos, py::array out_sin, py::array coords, py::array freqs) {
    const DType dt = float_dtype(out_cos, "out_cos");
    if (float_dtype(out_sin, "out_sin") != dt) throw py::type_error("out_cos and out_sin must have one dtype");
    require_writeable(out_cos, "out_cos");
    require_writeable(out_sin, "out_sin");
    require_same_shape(out_cos, "out_cos", out_sin, "out_sin");
    const std::int64_t axes = freqs.ndim() == 2 ? freqs.shape(0) : -1, half = freqs.ndim() == 2 ? freqs.shape(1) : -1;
    if (axes < 1 || half < 1) throw std::invalid_argument("freqs must be a [axes, pairs] array");
    if (out_cos.ndim() != 2 || out_cos.shape(1) != half || !(out_cos.flags() & py::array::c_style) ||
        !(out_sin.flags() & py::array::c_style))
        throw std::invalid_argument("out_cos and out_sin must be C-contiguous [rows, pairs] arrays");
    const std::int64_t rows = out_cos.shape(0);
    RopeArgs args{1, rows, nullptr, 0.0, nullptr, half, nullptr, 1.0, false, false};
    args.freqs = float64_block(freqs, {axes, half}, "freqs");
    args.coords = float64_block(coords, {rows, axes}, "coords");
    args.axes = axes;
    if (rows == 0) return;
    const auto kernel = rope_kernels().cos_sin[static_cast<int>(dt)];
    const ReleaseGil release(2 * out_cos.size());
    kernel(args, out_cos.mutable_data(), out_sin.mutable_data());
}

// out_cos/out_sin: the cos/sin tables [rows, half], contiguous, of one dtype.
void cos_sin(py::array out_cos, py::array out_sin, std::optional<py::array> positions, double start,
             py::array inv_freq, double scale) {
    const DType dt = float_dtype(out_cos, "out_cos");
    if (float_dtype(out_sin, "out_sin") != dt) throw py::type_error("out_cos and out_sin must have one dtype");
    require_writeable(out_cos, "out_cos");
    require_writeable(out_sin, "out_sin");
    require_same_shape(out_cos, "out_cos", out_sin, "out_sin");
    const std::int64_t half = inv_freq.ndim() == 1 ? inv_freq.shape(0) : -1;
    const double* w = float64_vector(inv_freq, half, "inv_freq");
    if (out_cos.ndim() != 2 || out_cos.shape(1) != half || !(out_cos.flags() & py::array::c_style) ||
        !(out_sin.flags() & py::array::c_style))
        throw std::invalid_argument("out_cos and out_sin must be C-contiguous [rows, len(inv_freq)] arrays");
    const std::int64_t rows = out_cos.shape(0);
    const Positions p = positions_of(positions, start, rows);
    const RopeArgs args{1, rows, p.values, p.start, w, half, nullptr, scale, false, false};
    if (rows == 0 || half == 0) return;
    const auto kernel = rope_kernels().cos_sin[static_cast<int>(dt)];
    const ReleaseGil release(2 * out_cos.size());
    kernel(args, out_cos.mutable_data(), out_sin.mutable_data());
}

// ------------------------------------------------------------------ the small-call lane (bindings/lane.hpp)

// The parameters apply_rope and apply_rope_qk share, in signature order after their operands.
const std::vector<const char*> kRotationParameters = {
    "positions", "base", "scaling", "inv_freq", "attention_scaling", "rotary_dim", "interleaved", "seq_axis",
    "offset", "inverse", "mrope_section", "mrope_interleaved", "cos", "sin"};
enum Shared { kPositions, kBase, kScaling, kInvFreq, kAttentionScaling, kRotaryDim, kInterleaved, kSeqAxis,
              kOffset, kInverse, kMropeSection, kMropeInterleaved, kCos, kSin, kShared };

std::vector<const char*> with_rotation_parameters(std::vector<const char*> before, std::vector<const char*> after) {
    before.insert(before.end(), kRotationParameters.begin(), kRotationParameters.end());
    before.insert(before.end(), after.begin(), after.end());
    return before;
}

const lane::Signature& apply_rope_signature() {
    static const auto* s = new lane::Signature("apply_rope", with_rotation_parameters({"x"}, {"out"}), 2);
    return *s;
}

const lane::Signature& apply_rope_qk_signature() {
    static const auto* s = new lane::Signature(
        "apply_rope_qk", with_rotation_parameters({"q", "k"}, {"xpos_scale_base", "xpos_center", "out_q", "out_k"}), 3);
    return *s;
}

// Values of a 2-D strided view (rows × cols, byte strides rs and cs) of Stored, as float64 into out
// (rows × cols, C order): NumPy's astype (the cast rounds to nearest as C's does).
template <class Stored>
void to_doubles(const char* data, py::ssize_t rs, py::ssize_t cs, std::int64_t rows, std::int64_t cols,
                double* out) {
    const auto load = [](const char* p) {
        Stored v;
        std::memcpy(&v, p, sizeof v);  // no alignment asked of the caller's array
        return static_cast<double>(v);
    };
    if (cs == static_cast<py::ssize_t>(sizeof(Stored)) && (rows == 1 || rs == cols * cs)) {
        for (std::int64_t k = 0; k < rows * cols; ++k) out[k] = load(data + k * cs);  // contiguous: vectorised
        return;
    }
    for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j) out[i * cols + j] = load(data + i * rs + j * cs);
}

// An exact ndarray of integers (any size; with `floats`, also float32/float64), native byte order, whose
// last two axes are rows × cols (a 1-D one: a single row), as float64 into out (rows × cols). False for
// anything else, before anything is written.
bool real_values(PyObject* value, std::int64_t rows, std::int64_t cols, bool floats, double* out) {
    if (!lane::is_array(value)) return false;
    const auto a = py::reinterpret_borrow<py::array>(value);
    const py::dtype dt = a.dtype();
    const char kind = dt.kind();
    const py::ssize_t n = a.ndim();
    const bool shaped = n == 1 ? rows == 1 && a.shape(0) == cols : n == 2 && a.shape(0) == rows && a.shape(1) == cols;
    if (!shaped || (dt.byteorder() != '=' && dt.byteorder() != '|') ||
        !(kind == 'i' || kind == 'u' || (floats && kind == 'f')))
        return false;
    const auto* data = static_cast<const char*>(a.data());
    const py::ssize_t cs = a.strides(n - 1), rs = n == 2 ? a.strides(0) : 0;
    switch (kind == 'f' ? -dt.itemsize() : kind == 'i' ? dt.itemsize() : 16 + dt.itemsize()) {
        case 1: to_doubles<std::int8_t>(data, rs, cs, rows, cols, out); return true;
        case 2: to_doubles<std::int16_t>(data, rs, cs, rows, cols, out); return true;
        case 4: to_doubles<std::int32_t>(data, rs, cs, rows, cols, out); return true;
        case 8: to_doubles<std::int64_t>(data, rs, cs, rows, cols, out); return true;
        case 17: to_doubles<std::uint8_t>(data, rs, cs, rows, cols, out); return true;
        case 18: to_doubles<std::uint16_t>(data, rs, cs, rows, cols, out); return true;
        case 20: to_doubles<std::uint32_t>(data, rs, cs, rows, cols, out); return true;
        case 24: to_doubles<std::uint64_t>(data, rs, cs, rows, cols, out); return true;
        case -4: to_doubles<float>(data, rs, cs, rows, cols, out); return true;
        case -8: to_doubles<double>(data, rs, cs, rows, cols, out); return true;
        default: return false;  // float16, longdouble, ...: the Python layer converts them
    }
}

// The largest magnitude among v[0, n), not finite (infinity or a NaN) when one is not. Magnitudes compare
// as their bit patterns do, so the scan is an integer maximum (vectorised, NaN-proof).
double largest_magnitude(const double* v, std::int64_t n) {
    std::uint64_t top = 0;
    for (std::int64_t k = 0; k < n; ++k) {
        std::uint64_t u;
        std::memcpy(&u, v + k, sizeof u);
        u &= ~(std::uint64_t(1) << 63);
        top = u > top ? u : top;
    }
    double m;
    std::memcpy(&m, &top, sizeof m);
    return m;
}

// A rotation's shared arguments where the lane takes them (the Python layer's `_common_case`): the default
// frequencies of `base` or the caller's `inv_freq` (an exact ndarray [head_dim/2] of integers or
// float32/float64, finite: what RotaryEmbedding holds for any scheme), an `attention_scaling` (a finite
// float or int), every feature of head_dim rotated (`rotary_dim` absent, None or head_dim), positions
// offset + arange(seq), one integer row ([seq] or [1, seq]: real_values) shared by the batch, or one row
// per batch entry ([batch, seq], batch > 1 the operands' axis 0: a batched decode step), everything else
// at its default.
struct LaneAngles {
    py::ssize_t seq_axis = -3;  // as given: -3 or -2
    bool interleaved = false, inverse = false;
    double start = 0.0;
    bool given = false;  // positions given (else start + arange)
    std::int64_t groups = 1;  // rows of positions given: > 1 when they follow the operands' axis 0
    std::vector<double> positions;
    PyObject* given_positions = nullptr;  // the caller's array (an exact ndarray) when given
    py::object freqs;  // held for the call: the memo may move on while the kernel runs without the GIL
    std::vector<double> given_freqs;  // the caller's inv_freq as float64, when given (else freqs)
    PyObject* given_inv_freq = nullptr;  // the caller's inv_freq array
    double scale = 1.0;  // attention_scaling

    // Whether an operand written in place shares no byte with the positions or inv_freq given (the Python
    // layer refuses the overlap, though the lane reads them first).
    bool apart_from(const py::array& written) const {
        const auto apart = [&](PyObject* read) {
            return read == nullptr || lane::disjoint(written, py::reinterpret_borrow<py::array>(read));
        };
        return apart(given ? given_positions : nullptr) && apart(given_inv_freq);
    }

    bool grouped() const { return groups > 1; }

    // Whether an operand has the batch the positions' rows follow: with a row per batch
    // entry, an axis 0 of that many before the sequence axis (the Python layer's `_rows`).
    bool fits(const py::array& x) const {
        return !grouped() || (x.ndim() + seq_axis > 0 && x.shape(0) == groups);
    }

    RopeArgs args(const GroupedRows& x) const {
        const std::int64_t half = x.cols() / 2;
        return {x.groups(), x.rows(), given ? positions.data() : nullptr, start,
                given_inv_freq ? given_freqs.data() : float64_vector(freqs, half, "inv_freq"), half, nullptr, scale,
                interleaved, inverse};
    }
};

// v: the kShared arguments; false when the Python layer must take the call.
bool lane_angles(PyObject* const* v, const py::array& x, LaneAngles& a) {
    for (const int i : {kScaling, kMropeSection, kCos, kSin})
        if (!lane::is_none(v[i])) return false;
    const auto interleaved = lane::flag(v[kInterleaved], false), inverse = lane::flag(v[kInverse], false);
    const auto mrope_interleaved = lane::flag(v[kMropeInterleaved], false);
    const auto seq_axis = lane::integer(v[kSeqAxis], -3), offset = lane::integer(v[kOffset], 0);
    const auto base = lane::real(v[kBase], 10000.0);
    if (!interleaved || !inverse || !mrope_interleaved || *mrope_interleaved || !seq_axis || !offset || !base ||
        (*seq_axis != -3 && *seq_axis != -2) || x.ndim() < -*seq_axis)
        return false;
    const std::int64_t dim = x.shape(x.ndim() - 1), seq = x.shape(x.ndim() + *seq_axis);
    if (dim == 0 || dim % 2 != 0) return false;
    if (!lane::is_none(v[kRotaryDim])) {
        const auto rotary_dim = lane::integer(v[kRotaryDim], dim);
        if (!rotary_dim || *rotary_dim != dim) return false;
    }
    if (!lane::is_none(v[kAttentionScaling])) {
        const auto scale = lane::real(v[kAttentionScaling], 1.0);
        if (!scale) return false;
        a.scale = *scale;
    }
    if (lane::is_none(v[kPositions])) {
        if (!lane::exact_positions(*offset, seq)) return false;
        a.start = static_cast<double>(*offset);
    } else {
        // One row, or a row per batch entry (fits() checks the operands' batch).
        if (lane::is_array(v[kPositions])) {
            const auto p = py::reinterpret_borrow<py::array>(v[kPositions]);
            a.groups = p.ndim() == 2 && p.shape(0) > 1 ? p.shape(0) : 1;
        }
        a.positions.resize(static_cast<std::size_t>(a.groups * seq));
        if (*offset != 0 || !real_values(v[kPositions], a.groups, seq, false, a.positions.data())) return false;
        a.given = true;
        a.given_positions = v[kPositions];
    }
    a.seq_axis = *seq_axis;
    a.interleaved = *interleaved;
    a.inverse = *inverse;
    if (lane::is_none(v[kInvFreq])) {
        a.freqs = lane::rope_frequencies().get(dim, *base, v[kBase]);
        return static_cast<bool>(a.freqs);
    }
    // The caller's frequencies, as `_given_frequencies` takes them; the base is still checked (`_checks.base`).
    if (!(*base > 0.0) || *base == 1.0 || !lane::is_array(v[kInvFreq]) ||
        py::reinterpret_borrow<py::array>(v[kInvFreq]).ndim() != 1)
        return false;
    a.given_freqs.resize(static_cast<std::size_t>(dim / 2));
    if (!real_values(v[kInvFreq], 1, dim / 2, true, a.given_freqs.data()) ||
        !std::isfinite(largest_magnitude(a.given_freqs.data(), dim / 2)))
        return false;
    a.given_inv_freq = v[kInvFreq];
    return true;
}

// apply_rope(x, positions, ..., out) in the lane: out None or x itself.
py::object lane_apply_rope(py::handle args, py::handle kwargs) {
    PyObject* v[kShared + 2] = {};
    const auto x = apply_rope_signature().bind(args, kwargs, v) ? lane::float_array(v[0]) : std::nullopt;
    LaneAngles angles;
    PyObject* out = v[kShared + 1];
    if (!x || !lane_angles(v + 1, x->array, angles) || !angles.fits(x->array) ||
        !(lane::is_none(out) || (lane::in_place(out, x->array) && angles.apart_from(x->array))))
        return py::none();
    try {
        py::array dest = lane::is_none(out) ? lane::result_like(x->array) : x->array;
        const Operand a = operand_of(x->array, dest, x->dtype, x->array.ndim() + angles.seq_axis, angles.grouped(),
                                     "x", "out");
        rotate(angles.args(a.x), a, std::nullopt, x->dtype);
        return lane::own(dest);
    } catch (const std::exception&) {  // a check the lane missed: nothing was written, the Python layer decides
        return py::none();
    }
}

// apply_rope_qk(q, k, positions, ..., out_q, out_k) in the lane: one pass (one dtype and rank), head_dim and
// seq shared, xPos off, each out None or its own operand, q and k apart when either is written.
py::object lane_apply_rope_qk(py::handle args, py::handle kwargs) {
    PyObject* v[kShared + 6] = {};
    const bool bound = apply_rope_qk_signature().bind(args, kwargs, v);
    const auto q = bound ? lane::float_array(v[0]) : std::nullopt, k = bound ? lane::float_array(v[1]) : std::nullopt;
    LaneAngles angles;
    if (!q || !k || q->dtype != k->dtype || q->array.ndim() != k->array.ndim() || !lane_angles(v + 2, q->array, angles) ||
        !angles.fits(q->array) || !angles.fits(k->array))
        return py::none();
    const py::array &qa = q->array, &ka = k->array;
    const py::ssize_t nd = qa.ndim();
    const auto center = lane::real(v[kShared + 3], 0.0);
    PyObject *out_q = v[kShared + 4], *out_k = v[kShared + 5];
    if (ka.shape(nd - 1) != qa.shape(nd - 1) || ka.shape(nd + angles.seq_axis) != qa.shape(nd + angles.seq_axis) ||
        !lane::is_none(v[kShared + 2]) || !center || *center != 0.0 ||
        !(lane::is_none(out_q) || (lane::in_place(out_q, qa) && angles.apart_from(qa))) ||
        !(lane::is_none(out_k) || (lane::in_place(out_k, ka) && angles.apart_from(ka))) ||
        ((!lane::is_none(out_q) || !lane::is_none(out_k)) && !lane::disjoint(qa, ka)))
        return py::none();
    try {
        py::array dest_q = lane::is_none(out_q) ? lane::result_like(qa) : qa;
        std::optional<py::array> dest_k(lane::is_none(out_k) ? lane::result_like(ka) : ka);
        const py::ssize_t seq_axis = nd + angles.seq_axis;
        const Operand a = operand_of(qa, dest_q, q->dtype, seq_axis, angles.grouped(), "q", "out_q");
        const RopeArgs rope = angles.args(a.x);
        rotate(rope, a,
               second_of(a, q->dtype, std::optional<py::array>(ka), dest_k, seq_axis, angles.grouped(), rope.half),
               q->dtype);
        return py::make_tuple(dest_q, *dest_k);
    } catch (const std::exception&) {
        return py::none();
    }
}

const lane::Signature& apply_rope_nd_signature() {
    static const auto* s = new lane::Signature(
        "apply_rope_nd", {"x", "coords", "freqs", "interleaved", "seq_axis", "inverse", "out"}, 3);
    return *s;
}

// Σ_a max_j |freqs[a, j]| of freqs [axes, pairs] (C order): the angles' reach per unit of coordinate, as
// the Python layer's overflow check bounds it; not finite when an entry is not.
double freqs_reach(const double* f, std::int64_t axes, std::int64_t pairs) {
    double reach = 0.0;
    for (std::int64_t a = 0; a < axes; ++a) reach += largest_magnitude(f + a * pairs, pairs);
    return reach;
}

// apply_rope_nd(x, coords, freqs, ..., out) in the lane: coords one [seq, axes] array of integers or
// floats shared by the batch, freqs shared by the heads (a C-contiguous float64 [axes, pairs] array), out
// None or x itself. A diffusion or vision transformer calls it for q and k of every layer: a FLUX step
// spends ~0.1-0.3 ms per call in the Python layer's checks, 5-15% of the rotation.
py::object lane_apply_rope_nd(py::handle args, py::handle kwargs) {
    enum { kX, kCoords, kFreqs, kInterleaved, kSeqAxis, kInverse, kOut, kCount };
    PyObject* v[kCount] = {};
    const auto x = apply_rope_nd_signature().bind(args, kwargs, v) ? lane::float_array(v[kX]) : std::nullopt;
    const auto freqs = x ? lane::float_array(v[kFreqs]) : std::nullopt;
    const auto interleaved = lane::flag(v[kInterleaved], false), inverse = lane::flag(v[kInverse], false);
    const auto seq_axis = lane::integer(v[kSeqAxis], -3);
    if (!freqs || freqs->dtype != DType::f64 || !interleaved || !inverse || !seq_axis ||
        (*seq_axis != -3 && *seq_axis != -2))
        return py::none();
    const py::array &xa = x->array, &fa = freqs->array;
    if (xa.ndim() < -*seq_axis || fa.ndim() != 2 || !(fa.flags() & py::array::c_style)) return py::none();
    const std::int64_t axes = fa.shape(0), pairs = fa.shape(1), seq = xa.shape(xa.ndim() + *seq_axis);
    if (axes < 1 || pairs < 1 || 2 * pairs > xa.shape(xa.ndim() - 1)) return py::none();
    PyObject* const given = v[kCoords], *const out = v[kOut];
    if (!lane::is_array(given) || py::reinterpret_borrow<py::array>(given).ndim() != 2 ||
        !(lane::is_none(out) || (lane::in_place(out, xa) && lane::disjoint(xa, fa) &&
                                 lane::disjoint(xa, py::reinterpret_borrow<py::array>(given)))))
        return py::none();
    try {
        py::array_t<double> coords({py::ssize_t{1}, static_cast<py::ssize_t>(seq), static_cast<py::ssize_t>(axes)});
        double* const c = coords.mutable_data();
        // Angles far from float64's range: the Python layer's overflow check passes too. Non-finite
        // coordinates or frequencies make the product infinite or NaN: declined, the Python layer says which.
        if (!real_values(given, seq, axes, true, c) ||
            !(largest_magnitude(c, seq * axes) * freqs_reach(static_cast<const double*>(fa.data()), axes, pairs) <
              0x1p1000))
            return py::none();
        py::array dest = lane::is_none(out) ? lane::result_like(xa) : xa;
        const Operand a = operand_of(xa, dest, x->dtype, xa.ndim() + *seq_axis, false, "x", "out");
        rotate(nd_args(a.x, coords, fa, *interleaved, *inverse), a, std::nullopt, x->dtype);
        return lane::own(dest);
    } catch (const std::exception&) {  // a check the lane missed: nothing was written, the Python layer decides
        return py::none();
    }
}

}  // namespace

void register_rope(py::module_& m) {
    // One entry per angle source: k and out_k, when given, are rotated in the same pass as x.
    m.def("apply_rope", &apply, py::arg("x"), py::arg("out"), py::arg("seq_axis"), py::arg("grouped"),
          py::arg("positions"), py::arg("start"), py::arg("inv_freq"), py::arg("pair_axis"), py::arg("scale"),
          py::arg("interleaved"), py::arg("inverse"), py::arg("k") = py::none(), py::arg("out_k") = py::none());
    m.def("apply_rope_nd", &apply_nd, py::arg("x"), py::arg("out"), py::arg("seq_axis"), py::arg("grouped"),
          py::arg("coords"), py::arg("freqs"), py::arg("interleaved"), py::arg("inverse"));
    m.def("apply_rope_tables", &apply_tables, py::arg("x"), py::arg("out"), py::arg("seq_axis"), py::arg("grouped"),
          py::arg("cos"), py::arg("sin"), py::arg("scale"), py::arg("interleaved"), py::arg("inverse"),
          py::arg("k") = py::none(), py::arg("out_k") = py::none());
    m.def("rope_nd_cos_sin", &nd_cos_sin, py::arg("out_cos"), py::arg("out_sin"), py::arg("coords"),
          py::arg("freqs"));
    // The small-call lanes (bindings/lane.hpp), their signatures published now.
    apply_rope_signature();
    apply_rope_qk_signature();
    apply_rope_nd_signature();
    m.def("lane_apply_rope", &lane_apply_rope, py::arg("args"), py::arg("kwargs"));
    m.def("lane_apply_rope_qk", &lane_apply_rope_qk, py::arg("args"), py::arg("kwargs"));
    m.def("lane_apply_rope_nd", &lane_apply_rope_nd, py::arg("args"), py::arg("kwargs"));
    m.def("rope_cos_sin", &cos_sin, py::arg("out_cos"), py::arg("out_sin"), py::arg("positions"), py::arg("start"),
          py::arg("inv_freq"), py::arg("scale"));
}

}  // namespace posenc::bind
