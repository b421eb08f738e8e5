"""float64 values rounded once to a result dtype by the compiled kernels (cpp/include/posenc/rounding.hpp).

The native executors' counterpart of ``_rounding.round_once``, which the NumPy
reference keeps: the same bits, in one pass where NumPy needs half a dozen for
bfloat16 (ml_dtypes rounds float64 through float32, so the exact NumPy rounding
goes through float32 rounded to odd).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._backend import native


def rounded(values: Any, dtype: Any) -> np.ndarray:
    """float64 ``values`` rounded once to ``dtype``: a new C-contiguous array of their shape."""
    out = np.empty(np.shape(values), dtype)
    native.round_once(np.ascontiguousarray(values, dtype=np.float64), out)
    return out
