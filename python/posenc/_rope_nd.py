"""Rotary embeddings on several axes (vision, video and diffusion transformers): the rotation, its tables, axial frequencies.

Each public function is its plan builder (see ``posenc._api``); the checks
and the plans are in ``posenc._plans.rope_nd``. Pair j of a token rotates by
θ_j = Σ_a coords[..., a]·freqs[a, j]: one primitive for FLUX's and Wan's
axial frequencies, Qwen2-VL's vision tower, Pixtral's row/column split and
RoPE-Mixed's dense, per-head learned frequencies (the model recipes are in
the docs).
"""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from . import _checks
from ._api import entry
from ._rope import rotated_x_doc
from ._plans.rope_nd import cos_sin_nd, rope_axial_freqs, rotation_nd

__all__ = ["apply_rope_nd", "rope_axial_freqs", "rope_nd_cos_sin"]


@entry
@rotated_x_doc
def apply_rope_nd(x: Any, coords: Any, freqs: Any, *, interleaved: bool = False, seq_axis: int = -3,
                  inverse: bool = False, out: Any = None) -> Any:
    """Rotate the feature pairs of ``x`` by angles summed over several coordinate axes (multi-axis RoPE).

    Pair j of each token rotates by ``θ_j = Σ_a coords[..., a]·freqs[a, j]``
    (``u' = u·cos θ − v·sin θ``, ``v' = v·cos θ + u·sin θ``), the angle
    evaluated in float64 (exact for coordinates far beyond 2^20 and for
    fractional ones). float32 data rotate in float32 with cos/sin rounded
    once (error below ``3·2^-24·|x|``), other dtypes in float64, rounded once.
    Features past ``2·pairs`` pass through.

    Parameters
    ----------
    x : array_like, floating, of shape [..., seq, heads, head_dim] (seq_axis=-3) or [..., heads, seq, head_dim] (-2)
        Any strides (a slice of a fused QKV buffer is rotated in place with
        ``out=x``). For seq_axis=-2 the heads axis may be absent
        (``[..., seq, head_dim]``) unless ``freqs`` is per head.
    coords : array_like of shape [seq, axes] or [batch, seq, axes]
        Each token's coordinates (time, row, column...), integers or finite
        floats (FLUX's float ids, normalised coordinates). ``[batch, seq, axes]``
        follows axis 0 of x (``[1, seq, axes]`` broadcasts).
    freqs : array_like of shape [axes, pairs] or [heads, axes, pairs]
        Real, finite; ``2·pairs <= head_dim``. Shared by every head, or one
        ``[axes, pairs]`` per head (RoPE-Mixed), matching x's heads axis.
        :func:`rope_axial_freqs` builds the axial ones.
    interleaved : bool
        False: pairs (j, j + pairs) (``rotate_half``; diffusers'
        ``apply_rotary_emb(use_real_unbind_dim=-2)``). True: pairs (2j, 2j+1)
        (FLUX: ``use_real_unbind_dim=-1``; code written with complex numbers).
    seq_axis : {-3, -2}
    inverse : bool
        Rotate by −θ (the transpose: the backward pass).
__ROTATED_X__ x, coords or freqs

    Examples
    --------
    >>> import numpy as np, posenc
    >>> freqs = posenc.rope_axial_freqs((4, 4))          # rows, columns: 2 pairs each
    >>> coords = np.array([[r, c] for r in range(2) for c in range(3)])   # a 2x3 patch grid
    >>> x = np.ones((1, 6, 2, 8), np.float32)            # [batch, seq, heads, head_dim]
    >>> y = posenc.apply_rope_nd(x, coords, freqs, out=x)
    >>> y is x, bool(np.allclose(x[0, 0], 1))           # token (0, 0) is not rotated
    (True, True)
    >>> back = posenc.apply_rope_nd(x, coords, freqs, inverse=True)
    >>> bool(np.allclose(back, 1, atol=1e-6))
    True
    """
    xa = _checks.float_array(x, "x")
    return rotation_nd(xa, coords, freqs, interleaved=interleaved, seq_axis=seq_axis, inverse=inverse, out=out)


@entry
def rope_nd_cos_sin(coords: Any, freqs: Any, *, dtype: Any = np.float32) -> Tuple[Any, Any]:
    """The cos and sin of multi-axis RoPE angles ``θ_j = Σ_a coords[..., a]·freqs[a, j]``.

    Parameters
    ----------
    coords : array_like of shape [..., seq, axes]
        Integers or finite floats.
    freqs : array_like of shape [axes, pairs] or [heads, axes, pairs]
        As in :func:`apply_rope_nd`.
    dtype : float32, float64, float16 or bfloat16
        Angles and trigonometry in float64, rounded once.

    Returns
    -------
    cos, sin : ndarrays of shape [..., seq, pairs] ([..., heads, seq, pairs] for per-head freqs)
        (FLUX's real ``freqs_cos`` of shape [seq, 2·pairs] is ``np.repeat(cos, 2, -1)``.)

    Examples
    --------
    >>> import numpy as np, posenc
    >>> c, s = posenc.rope_nd_cos_sin(np.array([[0, 1], [2, 0]]), np.array([[1.0], [0.5]]), dtype="float64")
    >>> c.shape, round(float(s[0, 0]), 6), round(float(c[1, 0]), 6)   # θ = 0.5 and 2.0
    ((2, 1), 0.479426, -0.416147)
    """
    return cos_sin_nd(coords, freqs, dtype)  # type: ignore[return-value]
