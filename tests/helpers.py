"""Strategies and comparisons shared by the test modules."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
from typing import Any, Callable, Optional

import numpy as np
import pytest

from posenc._checks import BFLOAT16, is_bfloat16

class Peer:
    """An optional package (torch, transformers, diffusers, jax, timm), imported when a test first
    uses it, not when its module is collected: together they take ~15 s to import, which every pytest
    process collecting the module (each xdist worker, each of tests/mutation.py's runs) paid whether or
    not it ran a test that uses them. A test that uses one is marked ``@needs(peer, ...)``: its setup
    imports them (tests/conftest.py), and it is skipped when one is missing, failed under
    POSENC_REQUIRE_PEERS=1. Attributes are the module's (``torch.tensor``), imported on first use."""

    def __init__(self, name: str, loader: Optional[Callable[[], Any]] = None) -> None:
        # Instance attributes are prefixed: every other name is looked up on the module (torch.load).
        self._peer_name = name
        self._peer_loader = loader or (lambda: importlib.import_module(name))
        self._peer_module: Any = None

    def __getattr__(self, attr: str) -> Any:
        # Not for the probes of a collector (pytest looks for _mock_name, __wrapped__, pytestmark ...
        # on every module-level object): a private name is looked up only once a test loaded the peer.
        if self.__dict__.get("_peer_module") is None and attr.startswith(("_", "pytest")):
            raise AttributeError(attr)
        return getattr(load_peer(self), attr)

    def __repr__(self) -> str:
        return f"Peer({self._peer_name!r})"


def load_peer(peer: Peer) -> Any:
    """The peer's module; ImportError when it is not installed."""
    if peer._peer_module is None:
        peer._peer_module = peer._peer_loader()
    return peer._peer_module


def have_peer(peer: Peer) -> bool:
    """Whether the peer imports (importing it)."""
    try:
        load_peer(peer)
    except ImportError:
        return False
    return True


def needs(*peers: Peer) -> Any:
    """Mark: the test uses these peers (imported at its setup; see :class:`Peer`)."""
    return pytest.mark.needs(*peers)


def python(*argv: str, cwd: Optional[str] = None, timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
    """``python *argv`` in a fresh interpreter, output captured; POSENC_BACKEND/POSENC_ISA are
    unset (a forced CI stage must not leak into it) unless given in ``env``."""
    environ = {k: v for k, v in os.environ.items() if k not in ("POSENC_BACKEND", "POSENC_ISA")}
    environ.update(env)
    return subprocess.run([sys.executable, *argv], cwd=cwd, env=environ, capture_output=True, text=True,
                          timeout=timeout)


def run_python(code: str, *argv: str, **kwargs: Any) -> subprocess.CompletedProcess:
    """``python -c code *argv`` (code dedented) in a fresh interpreter: see :func:`python`."""
    return python("-c", textwrap.dedent(code), *argv, **kwargs)


_rng = np.random.default_rng(4321)


def rand(*shape: int, dtype=np.float32) -> np.ndarray:
    """Standard normal values of ``shape`` in ``dtype`` (one seeded stream for the whole run)."""
    return _rng.standard_normal(shape).astype(dtype)


FLOAT_DTYPES = [np.float32, np.float64, np.float16] + ([BFLOAT16] if BFLOAT16 is not None else [])


def strided_view(base: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A view of ``base``'s data with a random mix of reversed and stepped axes of the same shape."""
    index = []
    big_shape = []
    for n in base.shape:
        step = int(rng.integers(1, 3))
        big_shape.append(n * step)
        index.append(slice(None, None, -step) if rng.random() < 0.3 else slice(None, None, step))
    big = np.zeros(big_shape, base.dtype)
    view = big[tuple(index)]
    view[...] = base
    return view


def eps(dtype) -> float:
    """Machine epsilon of any float dtype posenc supports (bfloat16 included)."""
    return 2.0**-7 if is_bfloat16(dtype) else float(np.finfo(dtype).eps)


def assert_close_to_float64(actual: np.ndarray, exact: np.ndarray, atol_f64: float = 0.0) -> None:
    """``actual`` within one rounding (half an ulp of the value) of the float64 ``exact``, plus ``atol_f64``."""
    actual64 = actual.astype(np.float64)
    if actual.dtype == np.float64:
        tol = atol_f64 + 4 * np.finfo(np.float64).eps * np.abs(exact)
    else:
        tiny = float(np.finfo(actual.dtype).smallest_subnormal) if not is_bfloat16(actual.dtype) else 2.0**-133
        tol = atol_f64 + 0.5 * eps(actual.dtype) * np.abs(exact) * (1 + 1e-9) + tiny
    err = np.abs(actual64 - exact)
    bad = err > tol
    assert not bad.any(), f"{bad.sum()} elements off; worst {err.max():.3g} at {np.unravel_index(err.argmax(), err.shape)}"


# --- added by learned
def assert_bitwise_equal(got: np.ndarray, expected: np.ndarray) -> None:
    """Same shape, dtype and bit patterns (signed zeros and NaN payloads included)."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, got.shape, expected.dtype, expected.shape)
    unsigned = f"u{got.dtype.itemsize}"
    np.testing.assert_array_equal(np.ascontiguousarray(got).view(unsigned), np.ascontiguousarray(expected).view(unsigned))
