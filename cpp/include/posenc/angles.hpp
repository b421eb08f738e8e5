// posenc/angles.hpp — sin and cos of position·ω_i, row after row, at the cost of a multiply.
//
// Evaluating sin/cos for every (position, frequency) is the hidden cost of
// every positional kernel. Consecutive positions differ by one, so
//   sin((p+1)ω) = sin(pω)·cos ω + cos(pω)·sin ω,  cos((p+1)ω) = cos(pω)·cos ω − sin(pω)·sin ω
// advances a row with four multiplies per frequency. Each step adds a few
// ulp of rounding; to keep that from accumulating, the row is evaluated
// exactly (trig.hpp) at every row index that is a multiple of kAnchorRows and
// wherever positions are not consecutive. After at most 31 steps the error
// is below 1e-14, far under a float32 ulp, and since anchors sit at fixed row
// indices the result does not depend on how rows are split over threads.
//
// A row is kept split, [s0 s1 ... | c0 c1 ...]: the recurrence then reads and
// writes whole vectors. (Kept interleaved, as a Vaswani encoding row is laid
// out, it needs a shuffle per vector and was measured 1.3-2.7x slower; the
// consumer interleaves while it converts instead.)
#pragma once

#include <cstdint>

#include "posenc/positions.hpp"
#include "posenc/target.hpp"
#include "posenc/trig.hpp"

POSENC_BEGIN_TARGET

constexpr std::int64_t kAnchorRows = 32;

inline double position_at(const Positions& p, std::int64_t row) {
    return p.values ? p.values[row] : p.start + static_cast<double>(row);
}

// One step of the recurrence: (s, c), the sine and cosine at p, become those
// at p + 1 for the step's sine sw and cosine cw. On doubles and on registers
// of them (advance, below; sinusoidal.cpp's tables), so that every loop
// steps with the same operations and gets the same bits: where the path has
// FMA, s·cw + (c·sw rounded) and c·cw − (s·sw rounded) each rounded once, as
// GCC contracts the expression in a vectorised loop (which scalar code, the
// same expression unrolled, did not always do).
inline __attribute__((always_inline)) double fused_step(double a, double b, double c) {
#if defined(__FMA__)
    return __builtin_fma(a, b, c);
#else
    return a * b + c;
#endif
}
template <class V>
inline __attribute__((always_inline)) void rotate_by_step(V& s, V& c, V sw, V cw) {
    const V s0 = s, c0 = c;
    s = s0 * cw + c0 * sw;
    c = c0 * cw - s0 * sw;
}
inline __attribute__((always_inline)) void rotate_by_step(double& s, double& c, double sw, double cw) {
    const double s0 = s, c0 = c;
    s = fused_step(s0, cw, c0 * sw);
    c = fused_step(c0, cw, -(s0 * sw));
}

// The rotation by one position step, shared by all threads of a call.
struct AngleStep {
    const double* sin_w;
    const double* cos_w;
};

// The step's sines and cosines, written to buf (2·half doubles) only when a
// row will advance from the one before it (rows > 1): a decode step's call
// evaluates one row and would waste as much again on the step.
inline AngleStep angle_step(const double* inv_freq, std::int64_t half, std::int64_t rows, double* buf) {
    if (rows > 1) sincos_scaled(1.0, inv_freq, buf, buf + half, half);
    return {buf, buf + half};
}

// Per-thread state: `row` (2·half doubles) holds sin(position(row)·ω_i) at
// s()[i] and the cosine at c()[i] = s()[half + i], for the last row sought.
class AngleRows {
  public:
    AngleRows(const Positions& positions, const double* inv_freq, std::int64_t half, AngleStep step, double* row)
        : positions_(positions), inv_freq_(inv_freq), half_(half), step_(step), row_(row) {}

    // Makes the row hold the angles of `row`.
    void seek(std::int64_t row) {
        const double p = position_at(positions_, row);
        if (steps_to_next(row)) advance();
        else sincos_scaled(p, inv_freq_, s(), c(), half_);
        last_ = row;
        position_ = p;
    }

    // Whether seeking rows r0, r0 + 1, ..., r1 - 1 in turn evaluates r0 and
    // steps to each of the others (the rows of an anchor block, r0 < r1,
    // whose positions are consecutive).
    bool steps_through(std::int64_t r0, std::int64_t r1) const {
        double p = position_at(positions_, r0);
        for (std::int64_t row = r0 + 1; row < r1; ++row) {
            const double next = position_at(positions_, row);
            if (!steps_to(row, next, p)) return false;
            p = next;
        }
        return true;
    }

    // Whether seek(row) would step the row held to `row` (rather than evaluate it).
    bool steps_to_next(std::int64_t row) const {
        return row == last_ + 1 && steps_to(row, position_at(positions_, row), position_);
    }
    // Records that the caller stepped the row held to `row` itself (as
    // advance does: rotate_by_step on every frequency), in place of seek.
    void stepped_to(std::int64_t row) {
        last_ = row;
        position_ = position_at(positions_, row);
    }

    double* s() const { return row_; }
    double* c() const { return row_ + half_; }
    AngleStep step() const { return step_; }

  private:
    // Whether `row`, at position p, follows the row before it (at `before`) by a step. The
    // difference, not `before + 1.0`: from 2^53 on that sum rounds (to before itself at 2^64, to
    // before + 2 at 2^53 + 2), and equal or farther positions were stepped by one (the fuzzer's
    // sinusoidal_nd at 2^64; exact when the difference is 1).
    static bool steps_to(std::int64_t row, double p, double before) {
        return row % kAnchorRows != 0 && p - before == 1.0;
    }

    void advance() {
        double* __restrict s = this->s();
        double* __restrict c = this->c();
        const double* __restrict ss = step_.sin_w;
        const double* __restrict cs = step_.cos_w;
#pragma omp simd
        for (std::int64_t i = 0; i < half_; ++i) rotate_by_step(s[i], c[i], ss[i], cs[i]);
    }

    Positions positions_;
    const double* inv_freq_;
    std::int64_t half_;
    AngleStep step_;
    double* row_;
    std::int64_t last_ = -2;
    double position_ = 0.0;
};

POSENC_END_TARGET
