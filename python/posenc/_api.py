"""How a public call runs: one plan, then the executor of the active backend.

Every public function is written once, as its *plan builder*: the function
with the public signature and docstring whose body parses and validates each
argument (``_checks``, ``_plans``) and returns a plan, a small named record
(``_plans/<family>.py``). :func:`entry` turns the builder into the public
function: build the plan, then run the executor registered for the plan's
type on the active backend:

- ``NATIVE``: ``_native_exec/<family>.py``, which hands the plan's arrays to
  the compiled kernels (``posenc._native``);
- ``REFERENCE``: ``reference/_<family>.py``, which computes the plan with
  NumPy in float64 and rounds once.

The same builder also gives the function's reference twin
(``posenc.reference.<name>``, always the NumPy executor): both backends
accept and refuse exactly the same arguments because they never see
arguments, only plans. An executor may assume its plan is valid.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Dict, Optional, Type, TypeVar

import numpy as np

from . import _backend
from ._checks import Out

Executor = Callable[[Any], Any]
NATIVE: Dict[type, Executor] = {}
REFERENCE: Dict[type, Executor] = {}
_TABLES = {"native": NATIVE, "reference": REFERENCE}

F = TypeVar("F", bound=Callable[..., Any])


def _register(table: Dict[type, Executor], plan_type: Type[Any]) -> Callable[[F], F]:
    def register(run: F) -> F:
        if plan_type in table:
            raise RuntimeError(f"two executors for {plan_type.__name__}")
        table[plan_type] = run
        return run
    return register


def native(plan_type: Type[Any]) -> Callable[[F], F]:
    """Register the native executor of ``plan_type`` (a decorator)."""
    return _register(NATIVE, plan_type)


def reference(plan_type: Type[Any]) -> Callable[[F], F]:
    """Register the NumPy executor of ``plan_type`` (a decorator)."""
    return _register(REFERENCE, plan_type)


def entry(builder: F) -> F:
    """The public function of a plan builder: same name, signature and docstring.

    The result has an attribute ``reference``: the same function on the
    NumPy executor whatever the active backend (``posenc.reference.<name>``),
    and ``planned``: the function without its small-call lane.

    A builder whose name has a lane in the compiled module
    (``posenc._native.lane_<name>``, cpp/bindings/lane.hpp) hands each call's
    arguments to it first on the native backend: the lane computes a decode
    step's common call (plain arguments, checked completely) with the kernel
    the native executor would call, or returns None and the plan runs.
    """

    @functools.wraps(builder)
    def planned(*args: Any, **kwargs: Any) -> Any:
        plan = builder(*args, **kwargs)
        return _TABLES[_backend._current][type(plan)](plan)

    lane = "lane_" + builder.__name__
    public = planned
    if hasattr(_backend.native, lane):
        # Looked up on every call, as the executors look up kernels: a test that replaces the module's
        # functions (tests/test_invariants.py) sees the lane's call too.
        @functools.wraps(builder)
        def public(*args: Any, **kwargs: Any) -> Any:
            if _backend._current == "native":
                result = getattr(_backend.native, lane)(args, kwargs)
                if result is not None:
                    return result
            return planned(*args, **kwargs)

    @functools.wraps(builder)
    def twin(*args: Any, **kwargs: Any) -> Any:
        plan = builder(*args, **kwargs)
        return REFERENCE[type(plan)](plan)

    twin.__doc__ = (f"NumPy reference of :func:`posenc.{builder.__name__}`: the same signature and checks "
                    "(the same plan), computed in float64 with NumPy and rounded once.")
    twin.__module__ = "posenc.reference"
    public.reference = twin  # type: ignore[attr-defined]
    public.planned = planned  # type: ignore[attr-defined]
    return public  # type: ignore[return-value]


# ------------------------------------------------------------------ helpers every executor uses

def target(out: Optional[Out], shape: Any, dtype: np.dtype) -> np.ndarray:
    """Where an executor writes: the caller's ``out``, or a new array."""
    return np.empty(shape, dtype) if out is None else out.array


def returned(out: Optional[Out], written: np.ndarray) -> Any:
    """What a public call returns: ``out`` as the caller passed it (a tensor stays a tensor), else the result."""
    return written if out is None else out.given


def store(out: Optional[Out], values: np.ndarray) -> Any:
    """A computed result, written into ``out`` when there is one (the NumPy executors' last step)."""
    if out is None:
        return values
    out.array[...] = values
    return out.given
