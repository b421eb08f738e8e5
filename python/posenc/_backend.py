"""Which implementation runs: the compiled core ("native") or NumPy ("reference").

The compiled module is imported once. If it cannot be, posenc keeps working
on the reference backend and says so once with a RuntimeWarning, never
silently. ``POSENC_BACKEND`` picks the starting backend and ``POSENC_ISA``
lowers the instruction set the native kernels use (a CPU that lacks the ISA
asked for is a ValueError at import).
"""

from __future__ import annotations

import os
import warnings
from typing import Optional

__all__ = ["BACKENDS", "get_backend", "native", "set_backend", "use_native"]

BACKENDS = ("native", "reference")

try:
    from . import _native as native
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
