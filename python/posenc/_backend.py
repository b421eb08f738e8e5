"""Which implementation runs: the compiled core ("native") or NumPy ("reference").

The compiled module is imported once. If it cannot be, posenc keeps working
on the reference backend and says so once with a RuntimeWarning, never
silently. ``POSENC_BACKEND`` picks the starting backend and ``POSENC_ISA``
lowers the instruction set the native kernels use (a CPU that lacks the ISA
asked for is a ValueError at import).
"""

from __future__ import annotations

import importlib
import os
import warnings
from types import ModuleType
from typing import Callable, Optional, Set

__all__ = ["BACKENDS", "get_backend", "native", "set_backend", "use_native"]

BACKENDS = ("native", "reference")

# How many times an idle OpenMP worker of posenc's spins before it sleeps,
# unless the environment says (GOMP_SPINCOUNT, OMP_WAIT_POLICY). libgomp's own
# default, 300,000 spins, kept a worker busy for 8-11 ms of CPU after every
# call on an AMD EPYC Zen 4 (2 vCPUs), on the core that the next call of
# another runtime needs: a loop of float32 apply_rope [1, 2048, 32, 128] (or
# add_sinusoidal [4, 2048, 1024]) and a NumPy (OpenBLAS) matmul [32, 4096] @
# [4096, 512] took 8.0 ms a step; in the same runs, with 3,000 spins (30-100 µs)
# 1.9-2.5 (2.1-3.1), with 10,000 2.7-3.0 (3.3-4.0), with none
# (OMP_WAIT_POLICY=passive) 2.1-2.7 (2.8-3.0). Calls back to back still find
# the worker spinning: the table, add_sinusoidal and apply_rope took
# 0.86-1.09x libgomp's default's time (six runs, processes alternated; with
# none, 1.01-1.12x, one run 1.5-1.8x). A call that starts after its input was
# copied in (~1 ms) wakes the worker: add_sinusoidal 1.03-1.09x in five of the
# six.
SPIN_COUNT = "3000"


def _libgomp_files() -> Set[str]:
    """The libgomp files mapped into this process (Linux; elsewhere none known)."""
    try:
        with open("/proc/self/maps") as maps:
            return {line.split()[-1] for line in maps if "libgomp" in line}
    except OSError:
        return set()


# What governs the spin of posenc's workers (info()["openmp_spin"]): "posenc"
# (SPIN_COUNT), "environment", "libgomp loaded before posenc", or None
# (unknown: no /proc/self/maps, or no libgomp).
spin_setting: Optional[str] = None


def load_with_spin_count(load: Callable[[], ModuleType]) -> ModuleType:
    """``load()`` (which loads libgomp with the compiled core) with GOMP_SPINCOUNT at ``SPIN_COUNT``.

    libgomp reads its settings once, as it is loaded; the variable is
    removed again afterwards, so that nothing else the process starts or
    loads sees it. A setting of the caller's (GOMP_SPINCOUNT or
    OMP_WAIT_POLICY in the environment) is left alone. So is a libgomp
    that something loaded before posenc: its settings then hold (PyTorch's
    wheels bring a libgomp.so.1 of their own, which posenc's core then shares).
    Sets ``spin_setting`` to which of these holds.
    """
    global spin_setting
    if "GOMP_SPINCOUNT" in os.environ or "OMP_WAIT_POLICY" in os.environ:
        spin_setting = "environment"
        return load()
    before = _libgomp_files()
    os.environ["GOMP_SPINCOUNT"] = SPIN_COUNT
    try:
        module = load()
    finally:
        del os.environ["GOMP_SPINCOUNT"]
    after = _libgomp_files()
    spin_setting = "posenc" if after - before else "libgomp loaded before posenc" if after else None
    return module


try:
    native = load_with_spin_count(lambda: importlib.import_module("._native", __package__))
    _import_error: Optional[BaseException] = None
except ImportError as exc:  # pragma: no cover - exercised by a test in a subprocess
    # Typed as the module on purpose: kernels are reached only when
    # use_native() is True, which a failed import rules out for good, so the
    # call sites need no None checks; code that must know tests `native is None`.
    native = None  # type: ignore[assignment]
    _import_error = exc

if native is not None:
    native.select_isa(os.environ.get("POSENC_ISA", "").strip().lower())
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=native.after_fork_in_child)


def _initial() -> str:
    requested = os.environ.get("POSENC_BACKEND", "").strip().lower() or "native"
    if requested not in BACKENDS:
        raise ValueError(f"POSENC_BACKEND must be one of {BACKENDS}, got {requested!r}")
    if native is None:
        warnings.warn(
            f"posenc: the compiled core could not be imported ({_import_error}); "
            "using the slower NumPy reference backend",
            RuntimeWarning,
            stacklevel=3,
        )
        return "reference"
    return requested


_current = _initial()


def set_backend(name: str) -> None:
    """Select ``"native"`` (the compiled core) or ``"reference"`` (NumPy) for every call.

    Raises ``ValueError`` for an unknown name and ``RuntimeError`` when the
    compiled core is not available. ``POSENC_BACKEND`` sets the backend at
    import.

    Examples
    --------
    >>> import posenc
    >>> previous = posenc.get_backend()
    >>> posenc.set_backend("reference")  # every call now runs the NumPy twin
    >>> posenc.sinusoidal(2, 4).tolist()[0]
    [0.0, 1.0, 0.0, 1.0]
    >>> posenc.set_backend(previous)
    """
    global _current
    if name not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {name!r}")
    if name == "native" and native is None:
        raise RuntimeError(f"the compiled core is not available: {_import_error}")
    _current = name


def get_backend() -> str:
    """The backend in use: ``"native"`` or ``"reference"``.

    Examples
    --------
    >>> import posenc
    >>> posenc.get_backend() in ("native", "reference")
    True
    """
    return _current


def use_native() -> bool:
    return _current == "native"
