"""posenc.reference — NumPy-only twins of every public kernel, with the same signatures.

This is the specification in code: each function validates its arguments
exactly as the public one does, computes in float64 with plain NumPy, and
rounds once to the result dtype. The native kernels are tested against it.
"""

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
    # absolute: sinusoidal
    "add_sinusoidal", "axis_frequencies", "concat_positional", "sinusoidal", "sinusoidal_2d", "sinusoidal_3d",
    "sinusoidal_frequencies",
    # absolute: learned
    "embedding_add", "embedding_grad", "embedding_lookup", "resize_table", "resize_table_2d",
    # rotary
    "apply_rope", "apply_rope_qk", "positions_from_cu_seqlens", "rope_cos_sin", "rope_inv_freq",
    # relative positions
    "add_alibi", "add_t5_bias", "alibi_bias", "alibi_slopes", "clipped_relative_positions",
    "relative_embeddings", "relative_positions", "t5_bias", "t5_bucket", "t5_buckets",
]
