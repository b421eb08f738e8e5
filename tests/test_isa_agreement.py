"""Every kernel gives the same bits on every instruction-set path the CPU has.

The kernels are compiled once per path (baseline SSE2, AVX2+FMA+F16C,
AVX-512) with the same operation order and without floating-point
contraction (``-ffp-contract=off``: an FMA rounds once where a multiply and
an add round twice), and their float16/bfloat16 conversions agree bit for bit
between the vector instructions and the portable code. So a result does not
depend on the CPU it was computed on: each case below runs on every path and
must match the baseline path exactly (NaN payloads included). Sizes cover
vector tails (odd lengths, rows shorter than a vector) and the inputs include
infinities, NaNs, signed zeros and subnormals.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

import numpy as np
import pytest

import posenc
from posenc import _backend

from conftest import requires_native
from helpers import FLOAT_DTYPES

pytestmark = requires_native


def _data(shape: Tuple[int, ...], dtype: Any, seed: int = 0) -> np.ndarray:
    """Normal values with infinities, NaNs, signed zeros, huge and subnormal values sprinkled in."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 3
    flat = x.reshape(-1)
    special = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-41, -3e-8, 6e4, 1e38, 2.0**-140, 1e-320]
    idx = rng.choice(flat.size, size=min(flat.size, 2 * len(special)), replace=False)
    flat[idx] = np.resize(special, idx.size)
    with np.errstate(over="ignore"):
        return x.astype(dtype)


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}")


CASES: Dict[str, Callable[[Any], Any]] = {
    "sinusoidal": lambda dt: posenc.sinusoidal(np.arange(3000, 3077), 98, dtype=dt),
    "sinusoidal split, float positions": lambda dt: posenc.sinusoidal(
        np.linspace(-5e5, 7e6, 41), 34, interleaved=False, dtype=dt),
    "sinusoidal_2d (rows cut short)": lambda dt: posenc.sinusoidal_2d(5, 7, 21, dtype=dt),
    "add_sinusoidal": lambda dt: posenc.add_sinusoidal(_data((3, 67, 42), dt), offset=9000, scale=2.5),
    "add_sinusoidal strided": lambda dt: posenc.add_sinusoidal(_data((3, 67, 84), dt)[:, ::-1, ::2]),
    "apply_rope": lambda dt: posenc.apply_rope(_data((2, 37, 3, 128), dt), offset=70000),
    "apply_rope GPT-J, rotary_dim": lambda dt: posenc.apply_rope(_data((2, 37, 3, 72), dt), interleaved=True,
                                                                 rotary_dim=38),
    "apply_rope per-batch positions, heads first": lambda dt: posenc.apply_rope(
        _data((3, 4, 19, 64), dt), np.array([[5], [70000], [123456]]) + np.arange(19), seq_axis=-2, inverse=True),
    "apply_rope yarn": lambda dt: posenc.apply_rope(_data((1, 33, 2, 96), dt), base=1e6, scaling={
        "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}),
    "apply_rope M-RoPE": lambda dt: posenc.apply_rope(
        _data((2, 11, 2, 32), dt), np.arange(2 * 3 * 11).reshape(3, 2, 11) * 7, mrope_section=(4, 6, 6)),
    "apply_rope_qk": lambda dt: posenc.apply_rope_qk(_data((2, 9, 4, 64), dt), _data((2, 9, 1, 64), dt, 1),
                                                     offset=31),
    "apply_rope strided": lambda dt: posenc.apply_rope(_data((2, 21, 3, 3, 64), dt)[:, :, 0, :, ::-1]),
    "rope_cos_sin": lambda dt: posenc.rope_cos_sin(np.array([0.5, 7.0, 1e6, 3e7]), 46, dtype=dt),
    "add_alibi": lambda dt: posenc.add_alibi(_data((2, 5, 13, 29), dt), offset=16),
    "add_alibi symmetric, strided": lambda dt: posenc.add_alibi(_data((5, 13, 58), dt)[:, :, ::2], symmetric=True),
    "alibi_bias": lambda dt: posenc.alibi_bias(6, 9, 17, dtype=dt),
    "add_t5_bias": lambda dt: posenc.add_t5_bias(_data((2, 3, 31, 47), dt), _data((32, 3), dt, 1), offset=5),
    "t5_bias": lambda dt: posenc.t5_bias(_data((32, 4), dt), 23, 200),
    "relative_embeddings": lambda dt: posenc.relative_embeddings(_data((9, 5), dt), 7, 11, 4),
    "embedding_lookup": lambda dt: posenc.embedding_lookup(_data((50, 33), dt), np.array([[3, 49], [0, 7]])),
    "embedding_add": lambda dt: posenc.embedding_add(_data((2, 19, 33), dt), _data((50, 33), dt, 1),
                                                     np.arange(19) + 4),
    "embedding_grad": lambda dt: posenc.embedding_grad(_data((41, 35), dt), np.arange(41) % 13, 15),
    "resize_table": lambda dt: posenc.resize_table(_data((17, 37), dt), 45),
    "resize_table_2d": lambda dt: posenc.resize_table_2d(_data((5, 6, 19), dt), 9, 4),
}


def _on_every_path(fn: Callable[[], Any]) -> Dict[str, List[np.ndarray]]:
    """fn's result(s) on each path, in a fresh call per path (inputs are rebuilt by fn)."""
    native = _backend.native
    previous = native.active_isa()
    results = {}
    try:
        for isa in native.available_isas():
            native.select_isa(isa)
            out = fn()
            results[isa] = [np.asarray(o) for o in (out if isinstance(out, tuple) else (out,))]
    finally:
        native.select_isa(previous)
    return results


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", list(CASES))
def test_every_path_gives_the_same_bits(case, dtype, native_backend):
    if len(_backend.native.available_isas()) < 2:
        pytest.skip("this CPU has one path only")
    with np.errstate(all="ignore"):
        results = _on_every_path(lambda: CASES[case](dtype))
    first, *others = results
    for isa in others:
        for a, b in zip(results[first], results[isa]):
            assert a.dtype == b.dtype and a.shape == b.shape
            differ = _bits(a) != _bits(b)
            assert not differ.any(), (
                f"{isa} differs from {first} at {differ.sum()} of {a.size} elements, first at "
                f"{np.unravel_index(differ.argmax(), a.shape)}: {a.reshape(-1)[differ.argmax()]!r} vs "
                f"{b.reshape(-1)[differ.argmax()]!r}")
