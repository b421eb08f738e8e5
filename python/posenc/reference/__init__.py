"""posenc.reference — NumPy-only twins of every public kernel, with the same signatures.

This is the specification in code: each function validates its arguments
exactly as the public one does, computes in float64 with plain NumPy, and
rounds once to the result dtype. The native kernels are tested against it.
"""

from ._rope import apply_rope, apply_rope_qk, positions_from_cu_seqlens, rope_cos_sin, rope_inv_freq
from ._sinusoidal import (
    add_sinusoidal,
    axis_frequencies,
    concat_positional,
    sinusoidal,
    sinusoidal_2d,
    sinusoidal_3d,
    sinusoidal_frequencies,
)

__all__ = [
    "apply_rope", "apply_rope_qk", "positions_from_cu_seqlens", "rope_cos_sin", "rope_inv_freq",
    "add_sinusoidal",
    "axis_frequencies",
    "concat_positional",
    "sinusoidal",
    "sinusoidal_2d",
    "sinusoidal_3d",
    "sinusoidal_frequencies",
]
