"""posenc — transformer positional encodings for NumPy, computed by a SIMD/OpenMP C++ core.

Absolute (sinusoidal, 2-D/3-D), with rotary and relative schemes built on the
same core. Every function has a NumPy twin in :mod:`posenc.reference`;
``set_backend("reference")`` routes every call there.
"""

from __future__ import annotations

from typing import Any, Dict

from . import (_backend, _checks, _learned, _native_exec, _relative, _rope, _rope_nd, _rope_recipes, _sinusoidal, _vision,
               reference)
from ._backend import get_backend, set_backend
from ._learned import *  # noqa: F401,F403 (each family module lists its public names in __all__)
from ._relative import *  # noqa: F401,F403
from ._rope import *  # noqa: F401,F403
from ._rope_nd import *  # noqa: F401,F403
from ._rope_recipes import *  # noqa: F401,F403
from ._sinusoidal import *  # noqa: F401,F403
from ._vision import *  # noqa: F401,F403
from ._version import __version__

__all__ = [
    "__version__",
    # runtime
    "get_backend", "get_num_threads", "info", "set_backend", "set_num_threads",
    # the families, each module's public names
    *_sinusoidal.__all__, *_learned.__all__, *_rope.__all__, *_rope_nd.__all__, *_rope_recipes.__all__,
    *_relative.__all__, *_vision.__all__,
]


def set_num_threads(n: Any) -> None:
    """Use at most ``n`` OpenMP threads in posenc's kernels (``None`` restores the default).

    The default follows OpenMP: ``OMP_NUM_THREADS`` and
    ``threadpoolctl.threadpool_limits`` (which limits posenc together with
    NumPy's BLAS). Small inputs always run on the calling thread. Results do
    not depend on the thread count.

    Parameters
    ----------
    n : int >= 1 or None

    Examples
    --------
    >>> import posenc
    >>> posenc.set_num_threads(1)
    >>> posenc.get_num_threads()
    1
    >>> posenc.set_num_threads(None)  # back to OpenMP's default
    >>> from threadpoolctl import threadpool_limits  # doctest: +SKIP
    >>> with threadpool_limits(limits=1):  # doctest: +SKIP
    ...     posenc.get_num_threads()
    1
    """
    value = 0 if n is None else _checks.integer(n, "n", minimum=1, maximum=2**31 - 1)
    if _backend.native is not None:
        _backend.native.set_num_threads(value)


def get_num_threads() -> int:
    """The number of threads posenc's kernels may use now (1 on the reference backend).

    Examples
    --------
    >>> import posenc
    >>> posenc.get_num_threads() >= 1
    True
    """
    if _backend.native is None or not _backend.use_native():
        return 1
    return int(_backend.native.get_num_threads())


def info() -> Dict[str, Any]:
    """What posenc runs on: version, ISA chosen and available, threads, backend, and whether
    bfloat16 results are rounded with AVX512_BF16's conversions (on the avx512 path of CPUs that
    have them and were measured faster with them: Intel's and AMD's Zen 4, not yet Zen 5; the same
    bits either way). ``openmp_spin`` says what sets how long idle OpenMP workers spin before they
    sleep: ``"posenc"`` (a short spin, see the guide's threads section), ``"environment"``
    (GOMP_SPINCOUNT or OMP_WAIT_POLICY), ``"libgomp loaded before posenc"`` (by PyTorch, say: its
    settings), or None where that is not known.

    Examples
    --------
    >>> import posenc
    >>> sorted(posenc.info())
    ['backend', 'bfloat16_instructions', 'isa', 'isas_available', 'native', 'openmp', 'openmp_spin', 'threads', 'version']
    """
    native = _backend.native
    return {
        "version": __version__,
        "backend": get_backend(),
        "native": native is not None,
        "isa": native.active_isa() if native is not None else None,
        "isas_available": list(native.available_isas()) if native is not None else [],
        "bfloat16_instructions": native is not None and native.active_isa() == "avx512"
        and bool(native.bfloat16_instructions()),
        "openmp": bool(native.have_openmp()) if native is not None else False,
        "threads": get_num_threads(),
        "openmp_spin": _backend.spin_setting,
    }
