"""posenc.reference — NumPy-only twins of every public kernel, with the same signatures.

This is the specification in code. Each twin is the public function's own
plan builder (so it takes the same arguments and refuses the same ones)
followed by the NumPy executor of the plan (``reference/_<family>.py``),
which computes in float64 with plain NumPy and rounds once to the result
dtype, whatever backend is active. The native kernels are tested against it.
Functions without a kernel (frequencies, slopes, concatenation) are the
public ones themselves.
"""

from .. import _sinusoidal as _public_sinusoidal
from .._plans.sinusoidal import sinusoidal_frequencies
from . import _sinusoidal  # noqa: F401 (each module registers its family's executors)

from ._learned import embedding_add, embedding_grad, embedding_lookup, resize_table, resize_table_2d
from ._relative import (
    add_alibi,
    add_t5_bias,
    alibi_bias,
    alibi_slopes,
    clipped_relative_positions,
    relative_embeddings,
    relative_positions,
    t5_bias,
    t5_bucket,
    t5_buckets,
)
from ._rope import apply_rope, apply_rope_qk, positions_from_cu_seqlens, rope_cos_sin, rope_inv_freq

sinusoidal = _public_sinusoidal.sinusoidal.reference
add_sinusoidal = _public_sinusoidal.add_sinusoidal.reference
sinusoidal_2d = _public_sinusoidal.sinusoidal_2d.reference
sinusoidal_3d = _public_sinusoidal.sinusoidal_3d.reference
concat_positional = _public_sinusoidal.concat_positional

__all__ = [
    # absolute: sinusoidal
    "add_sinusoidal", "concat_positional", "sinusoidal", "sinusoidal_2d", "sinusoidal_3d",
    "sinusoidal_frequencies",
    # absolute: learned
    "embedding_add", "embedding_grad", "embedding_lookup", "resize_table", "resize_table_2d",
    # rotary
    "apply_rope", "apply_rope_qk", "positions_from_cu_seqlens", "rope_cos_sin", "rope_inv_freq",
    # relative positions
    "add_alibi", "add_t5_bias", "alibi_bias", "alibi_slopes", "clipped_relative_positions",
    "relative_embeddings", "relative_positions", "t5_bias", "t5_bucket", "t5_buckets",
]
