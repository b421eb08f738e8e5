"""Rounding a float64 result once to any result dtype: the last step of every reference computation.

The kernels compute in float64 and round once when they store; the NumPy
executor must round the same way to agree with them bit for bit.
"""

from __future__ import annotations

import numpy as np

from ._checks import is_bfloat16


def round_once(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """float64 ``values`` rounded to ``dtype`` once, to nearest even (what the kernels' store does).

    NumPy rounds float64 to float32 and float16 directly. ml_dtypes rounds
    float64 to bfloat16 through float32, which can round twice (1 + 2^-8 +
    2^-30 becomes 1, not 1 + 2^-7). So bfloat16 goes through float32 rounded
    *to odd* (truncate, then set the last bit if anything was dropped), after
    which one round-to-nearest to bfloat16 is exact (Boldo & Melquiond,
    "Emulation of FMA and correctly rounded sums: proved algorithms using
    rounding to odd", 2008).
    """
    dtype = np.dtype(dtype)
    with np.errstate(over="ignore"):  # past the dtype's range is ±inf, as the kernels give it
        if not is_bfloat16(dtype):
            return values.astype(dtype)
        f = values.astype(np.float32)
    wide = f.astype(np.float64)
    with np.errstate(invalid="ignore"):
        inexact = (wide != values) & ~np.isnan(values)
        over = inexact & (np.abs(wide) > np.abs(values))
    f[over] = np.nextafter(f[over], np.float32(0))
    f.view(np.uint32)[inexact] |= np.uint32(1)
    return f.astype(dtype)
