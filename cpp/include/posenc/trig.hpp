// posenc/trig.hpp — sine and cosine in double precision, in a form compilers vectorise.
//
// Why not libm: glibc's sincos costs ~19 ns a call here, which alone would
// keep a [8192, 1024] table from the fill bandwidth. This is the classic
// fdlibm scheme written without branches, so `omp simd` loops turn it into
// 4- or 8-lane code:
//   1. q = nearest integer to x·2/π, by the 1.5·2^52 rounding trick.
//   2. r = x − q·π/2 with π/2 split in four parts (Cody–Waite). The first
//      three parts have 27 significant bits, so q·part is exact for
//      |q| < 2^26 with or without FMA, and the reduction error stays a few
//      ulp of r. Together the parts carry ~134 bits of π/2.
//   3. sin and cos of r ∈ [−π/4, π/4] by fdlibm's __kernel_sin/__kernel_cos
//      polynomials (Sun Microsystems, 1993, freely redistributable; error
//      below 2^-58 relative on that interval).
//   4. the quadrant q mod 4 swaps and negates.
// Accuracy: absolute error below 4e-16 for |x| ≤ kSinCosMaxArg (2.2e-16 seen
// against long double over 2e6 random arguments up to 3e7, AVX2 and AVX-512);
// tests/test_sinusoidal.py::test_trig_core_against_libm holds every path to
// 1e-15 against NumPy's libm sin/cos up to |x| = 1e15. Larger |x| (never reached by
// positions below ~10^7 times a frequency ≤ 1) go through libm's sincos in
// sincos_scaled's fix-up pass, so every finite argument is handled.
#pragma once

#include <cmath>
#include <cstdint>

#include "posenc/bits.hpp"
#include "posenc/target.hpp"

POSENC_BEGIN_TARGET

// Beyond this |x|, q may reach 2^26 and step 2 is no longer exact.
constexpr double kSinCosMaxArg = 0x1p25;

// Branch-free sin and cos of x for |x| ≤ kSinCosMaxArg.
inline void sincos_reduced(double x, double& s, double& c) {
    constexpr double kTwoOverPi = 0x1.45f306dc9c883p-1;
    constexpr double kRound = 0x1.8p52;  // adding it rounds to an integer
    constexpr double kPio2A = 0x1.921fb54000000p+0;
    constexpr double kPio2B = 0x1.10b4610000000p-30;
    constexpr double kPio2C = 0x1.a626330000000p-58;
    constexpr double kPio2D = 0x1.45c06e0e68948p-86;
    // fdlibm k_sin.c / k_cos.c coefficients.
    constexpr double S1 = -1.66666666666666324348e-01, S2 = 8.33333333332248946124e-03,
                     S3 = -1.98412698298579493134e-04, S4 = 2.75573137070700676789e-06,
                     S5 = -2.50507602534068634195e-08, S6 = 1.58969099521155010221e-10;
    constexpr double C1 = 4.16666666666666019037e-02, C2 = -1.38888888888741095749e-03,
                     C3 = 2.48015872894767294178e-05, C4 = -2.75573143513906633035e-07,
                     C5 = 2.08757232129817482790e-09, C6 = -1.13596475577881948265e-11;

    const double shifted = x * kTwoOverPi + kRound;
    const std::uint64_t quadrant = bits_of(shifted);  // low bits hold q mod 2^51
    const double q = shifted - kRound;
    double r = x - q * kPio2A;
    r = r - q * kPio2B;
    r = r - q * kPio2C;
    r = r - q * kPio2D;

    const double z = r * r;
    const double sin_r = r + r * z * (S1 + z * (S2 + z * (S3 + z * (S4 + z * (S5 + z * S6)))));
    const double cos_r = 1.0 - 0.5 * z + z * z * (C1 + z * (C2 + z * (C3 + z * (C4 + z * (C5 + z * C6)))));

    // Quadrant k: sin(r + kπ/2) is sin r, cos r, −sin r, −cos r for k = 0..3.
    const bool swap = (quadrant & 1) != 0;
    const double s0 = swap ? cos_r : sin_r;
    const double c0 = swap ? sin_r : cos_r;
    s = (quadrant & 2) ? -s0 : s0;
    c = ((quadrant + 1) & 2) ? -c0 : c0;
}

// s[i], c[i] = sin(p·w[i]), cos(p·w[i]) for every finite product p·w[i].
inline void sincos_scaled(double p, const double* w, double* s, double* c, std::int64_t n) {
    // A bitwise-or reduction: `||` short-circuits, which GCC treats as
    // control flow and then leaves the whole loop scalar.
    int any_large = 0;
#pragma omp simd reduction(| : any_large)
    for (std::int64_t i = 0; i < n; ++i) {
        const double x = p * w[i];
        sincos_reduced(x, s[i], c[i]);
        any_large |= std::fabs(x) <= kSinCosMaxArg ? 0 : 1;
    }
    if (any_large) {
        for (std::int64_t i = 0; i < n; ++i) {
            const double x = p * w[i];
            if (!(std::fabs(x) <= kSinCosMaxArg)) {
                s[i] = std::sin(x);
                c[i] = std::cos(x);
            }
        }
    }
}

POSENC_END_TARGET
