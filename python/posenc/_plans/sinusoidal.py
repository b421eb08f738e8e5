"""Plans of the sinusoidal family, and its shared maths: the frequencies ω_i.

An encoding row for position p holds sin(p·ω_i) and cos(p·ω_i), interleaved
(``[s0 c0 s1 c1 ...]``, Vaswani) or split (``[s0 s1 ... c0 c1 ...]``). Both
executors take ω from here, in float64, so they evaluate the same angles.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple, Optional, Tuple

import numpy as np

from .. import _checks
from .._checks import Out

FREQ_RULES = ("vaswani", "t2t")


class SinusoidalTable(NamedTuple):
    """``sinusoidal``: ``n`` rows of sin/cos."""

    positions: Optional[np.ndarray]  # float64 [n]; None: arange(n)
    n: int
    inv_freq: np.ndarray  # float64 [dim / 2], read-only (cached)
    interleaved: bool
    dtype: np.dtype
    out: Optional[Out]


class SinusoidalAdd(NamedTuple):
    """``add_sinusoidal``: ``scale·x + PE`` over ``x[..., seq, dim]``."""

    x: np.ndarray
    positions: Optional[np.ndarray]  # float64 [seq]; None: start + arange(seq)
    start: float
    inv_freq: np.ndarray
    interleaved: bool
    scale: float
    out: Optional[Out]


class SinusoidalGrid(NamedTuple):
    """``sinusoidal_2d`` / ``sinusoidal_3d``: per-axis interleaved blocks of ``channels``, cut to ``dim``."""

    shape: Tuple[int, ...]  # the grid, without the channel axis
    dim: int
    inv_freq: np.ndarray  # float64 [channels / 2], shared by every axis
    channels: int
    dtype: np.dtype
    out: Optional[Out]


class ConcatPositional(NamedTuple):
    """``concat_positional``: x's features, then pe's, pe broadcast over x's leading axes (or x over pe's)."""

    x: np.ndarray  # [..., seq, dim]
    pe: np.ndarray  # [..., seq, pe_dim]
    shape: Tuple[int, ...]  # the result: the broadcast leading axes + (dim + pe_dim,)
    dtype: np.dtype  # np.result_type(x, pe)
    out: Optional[Out]


def concat_into(result: np.ndarray, x: np.ndarray, pe: np.ndarray) -> np.ndarray:
    """``result[..., :dim] = x`` and ``result[..., dim:] = pe`` by NumPy's assignment (converting, broadcasting)."""
    dim = x.shape[-1]
    result[..., :dim] = x
    result[..., dim:] = pe
    return result


def sinusoidal_frequencies(dim: int, base: float = 10000.0, freq_rule: str = "vaswani") -> np.ndarray:
    """The ``dim // 2`` angular frequencies ω_i of a sinusoidal encoding, float64.

    ``"vaswani"``: ω_i = base^(-2i/dim) (Vaswani et al. 2017, the PyTorch
    tutorial). ``"t2t"``: ω_i = exp(-i·ln(base)/(dim/2 - 1)) (tensor2tensor's
    ``get_timing_signal_1d`` and fairseq's ``SinusoidalPositionalEmbedding``),
    whose last frequency is exactly 1/base; it needs dim >= 4.

    Parameters
    ----------
    dim : int
        Even, > 0.
    base : float
        > 0, not 1.
    freq_rule : {"vaswani", "t2t"}

    Returns
    -------
    ndarray float64 of shape [dim / 2]

    Examples
    --------
    >>> import posenc
    >>> [float(w) for w in posenc.sinusoidal_frequencies(8)]
    [1.0, 0.1, 0.01, 0.001]
    """
    return frequencies(_checks.even_dim(dim), _checks.base(base), _checks.choice(freq_rule, "freq_rule", FREQ_RULES)).copy()


@functools.lru_cache(maxsize=64)
def frequencies(dim: int, base: float, freq_rule: str) -> np.ndarray:
    """:func:`sinusoidal_frequencies` of validated arguments; cached and read-only (calls share it)."""
    half = dim // 2
    i = np.arange(half, dtype=np.float64)
    if freq_rule == "vaswani":
        w = base ** (-2.0 * i / dim)
    else:
        if half < 2:
            raise ValueError(f"freq_rule='t2t' needs dim >= 4 (it divides by dim/2 - 1), got dim={dim}")
        w = np.exp(-i * (math.log(base) / (half - 1)))
    w.flags.writeable = False
    return w


@functools.lru_cache(maxsize=64)
def x_frequencies(dim: int, base: float) -> np.ndarray:
    """``add_sinusoidal``'s frequencies of ``x.shape[-1] = dim`` and a ``base`` of type float or int, both
    checked here (the errors name them), cached: a decode step neither recomputes nor rechecks them (a base
    of another type is checked first: ``Fraction(10000) == 10000`` must not find the int's entry)."""
    return frequencies(_checks.even_dim(dim, "x.shape[-1]"), _checks.base(base), "vaswani")


# SinusoidalAdd without NamedTuple's keyword handling (every field, in order): a decode step builds one per call.
new_add = functools.partial(tuple.__new__, SinusoidalAdd)


def axis_frequencies(dim: int, axes: int, base: float) -> Tuple[np.ndarray, int]:
    """Frequencies and channel count per axis of the 2-D/3-D layouts (validated ``dim`` and ``base``).

    As in the ``positional-encodings`` package (PositionalEncoding2D/3D): each
    axis gets c = 2·ceil(dim / (2·axes)) channels of interleaved sin/cos with
    ω_i = base^(-2i/c).
    """
    channels = 2 * math.ceil(dim / (2 * axes))
    return frequencies(channels, base, "vaswani"), channels
