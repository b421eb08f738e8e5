"""Type stubs for posenc's compiled module ``posenc._native`` (internal).

Typed here: the module's own functions (ISA dispatch, threads, fork safety,
the benchmarks' memory pass), which code all over the package calls. The
kernels' bindings are not declared one by one: each is thin glue around one
kernel (it checks shapes, dtypes and strides so that a kernel never reads or
writes out of bounds, releases the GIL and runs), called only by its family's
executor ``python/posenc/_native_exec/<family>.py`` with arguments the plan
has already normalised; the module-level ``__getattr__`` (mypy's partial-stub
form) gives them the type ``Any``. Their calls are checked instead by
``tests/test_native_stub.py`` (every executor's call of a binding against the
binding's own signature, which pybind11 writes in its ``__doc__``: names,
arity, keywords) and at run time (a wrong type raises TypeError at once, and
the tests run every executor).
"""

from typing import Any, List

from numpy.typing import NDArray

__version__: str

# Dispatch, threads, fork safety.
def active_isa() -> str: ...
def available_isas() -> List[str]: ...
def select_isa(name: str) -> None: ...
def set_num_threads(n: int) -> None: ...
def get_num_threads() -> int: ...
def have_openmp() -> bool: ...
def after_fork_in_child() -> None: ...

# Memory ceilings for benchmarks: one pass ("fill" or "touch") with posenc's threads.
def memory_pass(a: NDArray[Any], kind: str) -> None: ...

# The kernels' bindings (posenc._native.apply_rope, ...): Any.
def __getattr__(name: str) -> Any: ...
