"""What every native executor does before and after a kernel: aligned operands, a result to write.

Kernels address arrays element by element, so an operand whose data pointer
or strides are not aligned to its itemsize (``np.frombuffer`` at an odd
offset) is copied once before the call, and a misaligned ``out`` is written
through an aligned twin. NumPy's ALIGNED flag covers the pointer and every
stride; for posenc's dtypes the alignment is the itemsize.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from .._checks import Out


def aligned(a: np.ndarray) -> np.ndarray:
    """``a`` itself, or an aligned copy of it."""
    return a if a.flags.aligned else a.copy()


def write(out: Optional[Out], shape: Any, dtype: np.dtype, kernel: Callable[[np.ndarray], object]) -> np.ndarray:
    """Run ``kernel(dest)`` to fill the caller's ``out`` (or a new array) and return what it filled."""
    target = np.empty(shape, dtype) if out is None else out.array
    if target.flags.aligned:
        kernel(target)
    else:
        twin = np.empty(target.shape, target.dtype)
        kernel(twin)
        target[...] = twin
    return target
