"""posenc.reference — NumPy-only twins of every public kernel, with the same signatures.

This is the specification in code. Each twin is the public function's own
plan builder (so it takes the same arguments and refuses the same ones)
followed by the NumPy executor of the plan (``reference/_<family>.py``),
which computes in float64 with plain NumPy and rounds once to the result
dtype, whatever backend is active. The native kernels are tested against it.
Functions without a kernel (frequencies, slopes) are the
public ones themselves.
"""

from typing import Any, List

from . import _learned, _relative, _rope, _rope_nd, _sinusoidal, _vision  # noqa: F401 (each registers its executors)


def _families() -> List[Any]:
    """The public family modules (imported when first needed: posenc/__init__ has loaded them by then)."""
    import posenc

    return [posenc._sinusoidal, posenc._learned, posenc._rope, posenc._rope_nd,
            posenc._rope_recipes, posenc._relative, posenc._vision]


def _public_functions() -> List[str]:
    return [n for m in _families() for n in m.__all__ if not isinstance(getattr(m, n), type)]


def __getattr__(name: str) -> Any:
    """The twin of ``posenc.<name>``: its own plan builder on the NumPy executor (made on first use).

    Functions without a kernel (frequencies, slopes) are shared
    as they are; classes have no twin (they are built from the functions).
    """
    if name == "__all__":
        return _public_functions()
    for module in _families():
        if name in module.__all__ and not isinstance(getattr(module, name), type):
            public = getattr(module, name)
            twin = getattr(public, "reference", public)
            globals()[name] = twin
            return twin
    raise AttributeError(f"module 'posenc.reference' has no attribute {name!r}")
