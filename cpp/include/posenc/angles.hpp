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
        const bool consecutive = row == last_ + 1 && row % kAnchorRows != 0 && p == position_ + 1.0;
        if (consecutive) advance();
        else sincos_scaled(p, inv_freq_, s(), c(), half_);
        last_ = row;
        position_ = p;
    }

    double* s() const { return row_; }
    double* c() const { return row_ + half_; }

  private:
    void advance() {
        double* __restrict s = this->s();
        double* __restrict c = this->c();
        const double* __restrict ss = step_.sin_w;
        const double* __restrict cs = step_.cos_w;
#pragma omp simd
        for (std::int64_t i = 0; i < half_; ++i) {
            const double s0 = s[i], c0 = c[i];
            s[i] = s0 * cs[i] + c0 * ss[i];
            c[i] = c0 * cs[i] - s0 * ss[i];
        }
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
