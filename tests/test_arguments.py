"""Hostile input over the whole public API: one table, generated from ``posenc.__all__``.

Every public name must have an entry in SPECS (a function building its cases
from the argument roles in tests/hostile.py; each family's specs live in
tests/test_<family>.py); a name added to ``__all__`` without one fails
``test_every_public_name_has_hostile_cases`` and yields a failing
``<name>-no-cases`` row, and a spec whose name left ``__all__`` fails too.
Every public method of a public class has rows ``<Class>-<method>-...``.
Each case runs on both backends: the reference must refuse and accept exactly
what the native core does.

Outcomes (README, "Conventions" and "Bad input"): ``TypeError`` for a
wrong kind, ``ValueError`` for a wrong value or shape (huge sizes:
``ValueError`` or ``MemoryError``), ``IndexError`` for a position outside a
table, the message naming the argument, any ``out`` untouched after an error;
odd layouts compute what the reference computes on a clean copy.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Dict, List

import numpy as np
import pytest

import posenc
from posenc import reference

from conftest import NATIVE, using
from helpers import run_python
import test_learned
import test_relative
import test_rope
import test_rope_nd
import test_rope_nd_recipes
import test_sinusoidal
import test_vision
from hostile import SANITIZED, Case, Check, Raises, Same, Spec, memory_guard

# ------------------------------------------------------------------ plumbing

def spec_set_num_threads() -> Spec:
    s = Spec("set_num_threads", n=2)
    for id, v, exc in [("zero", 0, ValueError), ("negative", -1, ValueError), ("float", 2.0, TypeError),
                       ("bool", True, TypeError), ("str", "2", TypeError)]:
        s.raises(f"n-{id}", exc, "n", n=v)
    s.raises("n-huge", ValueError, "n", n=2**63)
    s.custom("n-none-restores-default", lambda api: (api.set_num_threads(1), api.set_num_threads(None),
                                                       api.get_num_threads())[-1], Check(_default_threads))
    return s


# OpenMP's default, read at import before any test sets a count (native even on the reference backend).
_DEFAULT_THREADS = posenc._backend.native.get_num_threads() if NATIVE else 1


def _default_threads(result: Any) -> None:
    expected = _DEFAULT_THREADS if posenc.get_backend() == "native" else 1
    assert result == expected, f"get_num_threads() is {result} after set_num_threads(None), expected {expected}"


def _info(result: Any) -> None:
    assert result["version"] == posenc.__version__ and result["backend"] == posenc.get_backend()
    assert result["native"] == NATIVE and result["isa"] in result["isas_available"] + ([] if NATIVE else [None])
    assert isinstance(result["threads"], int) and result["threads"] == posenc.get_num_threads() >= 1


def spec_set_backend() -> Spec:
    s = Spec("set_backend", name="native" if NATIVE else "reference")
    for id, v in [("unknown", "gpu"), ("empty", ""), ("upper", "NATIVE"), ("none", None), ("int", 1)]:
        s.raises(f"name-{id}", ValueError, "backend", name=v)
    for name in ["reference"] + (["native"] if NATIVE else []):
        s.custom(f"name-{name}-is-used", lambda api, name=name: (api.set_backend(name), api.get_backend())[-1],
                 Check(lambda r, name=name: _equal(r, name)))
    return s


def _equal(result: Any, expected: Any) -> None:
    assert result == expected, f"{result!r} != {expected!r}"


def spec_no_arguments(name: str, check: Callable[[Any], None]) -> Callable[[], Spec]:
    def build() -> Spec:
        s = Spec(name)
        s.check("call", check)
        s.custom("extra-argument", lambda api: getattr(api, name)(1), Raises(TypeError, ""))
        return s
    return build


SPECS: Dict[str, Callable[[], Spec]] = {
    "set_num_threads": spec_set_num_threads,
    "set_backend": spec_set_backend,
    "get_backend": spec_no_arguments("get_backend", lambda r: _equal(r, posenc._backend._current)),
    "get_num_threads": spec_no_arguments("get_num_threads", lambda r: _equal(r, posenc.info()["threads"])),
    "info": spec_no_arguments("info", _info),
}
NOT_CALLABLE = {"__version__"}

# Each family's specs live beside its tests (tests/test_<family>.py: SPECS, and LARGE, the calls
# tests/test_invariants.py runs big enough to go parallel).
LARGE: Dict[str, Callable[[Any], Any]] = {}
for _family in (test_sinusoidal, test_rope, test_rope_nd, test_rope_nd_recipes, test_relative, test_learned,
                test_vision):
    SPECS.update(_family.SPECS)
    LARGE.update(_family.LARGE)


def _cases() -> List[Any]:
    rows = []
    for name in sorted(n for n in posenc.__all__ if n not in NOT_CALLABLE):
        if name not in SPECS:
            rows.append(pytest.param(Case(f"{name}-no-cases", name, {}, Raises(Exception, "")), id=f"{name}-no-cases"))
            continue
        for case in SPECS[name]().cases:
            rows.append(pytest.param(case, id=case.id))
    ids = [r.id for r in rows]
    assert len(ids) == len(set(ids)), f"duplicate case ids: {sorted({i for i in ids if ids.count(i) > 1})}"
    return rows


CASES = _cases()
BACKENDS = ["native", "reference"] if NATIVE else ["reference"]


def test_every_public_name_has_hostile_cases():
    missing = sorted(n for n in posenc.__all__ if n not in NOT_CALLABLE and n not in SPECS)
    assert not missing, f"public names without hostile-input cases (add a spec to tests/test_<family>.py): {missing}"
    # A spec whose name left __all__ is a public function that disappeared: fail, never skip.
    unexported = sorted(set(SPECS) - set(posenc.__all__))
    assert not unexported, f"specs of names posenc no longer exports: {unexported}"


def _public_methods(cls: type) -> List[str]:
    """The methods a user calls on an instance of a public class ("call" for __call__)."""
    names = [n for n, v in vars(cls).items() if callable(v) and not n.startswith("_")]
    return names + (["call"] if "__call__" in vars(cls) else [])


def test_every_public_method_has_hostile_cases():
    """Each method of a public class has rows ``<Class>-<method>-...`` in the table."""
    ids = [c.id for name in SPECS for c in SPECS[name]().cases]
    missing = [f"{name}.{method}" for name in posenc.__all__ if isinstance(getattr(posenc, name), type)
               for method in _public_methods(getattr(posenc, name))
               if not any(i.startswith(f"{name}-{method}-") for i in ids)]
    assert not missing, f"public methods without hostile-input cases: {missing}"
    for name in posenc.__all__:
        if name in NOT_CALLABLE:
            continue
        kinds = {type(c.expect) for c in SPECS[name]().cases}
        assert kinds & {Same, Check} and (Raises in kinds or name in ("get_backend", "get_num_threads", "info")), (
            f"{name}: needs both refused and accepted cases")


def _call(api: Any, case: Case) -> Any:
    with memory_guard():
        if case.call is not None:
            return case.call(api)
        return getattr(api, case.func)(*case.args, **case.kwargs)


def _snapshot(kwargs: Dict[str, Any]) -> Dict[str, bytes]:
    return {k: np.asarray(v).tobytes() for k, v in kwargs.items()
            if k.startswith("out") and isinstance(v, np.ndarray) and v.flags.writeable}


def _tolerance(dtype: np.dtype) -> float:
    if dtype.kind != "f" and dtype.name != "bfloat16":
        return 0.0
    return {8: 1e-12, 4: 2e-6, 2: 2e-3}[dtype.itemsize] if dtype.name != "bfloat16" else 2e-2


def assert_same(got: Any, want: Any, where: str = "result") -> None:
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), f"{where}: expected a tuple of {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{where}[{i}]")
        return
    if isinstance(want, dict):
        assert got.keys() == want.keys()
        return
    if hasattr(want, "__dict__") and not isinstance(want, np.ndarray):  # an object: compare its numeric state
        assert type(got) is type(want)
        for key, value in vars(want).items():
            if isinstance(value, (np.ndarray, float, int, tuple)) and not key.startswith("_"):
                assert_same(getattr(got, key), value, f"{where}.{key}")
        return
    if not isinstance(want, np.ndarray):
        if isinstance(want, float):
            assert math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-12), f"{where}: {got} != {want}"
        else:
            assert got == want, f"{where}: {got!r} != {want!r}"
        return
    got = np.asarray(got)
    assert got.shape == want.shape, f"{where}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{where}: dtype {got.dtype} != {want.dtype}"
    tol = _tolerance(want.dtype)
    g, w = got.astype(np.float64), want.astype(np.float64)
    if tol == 0.0:
        np.testing.assert_array_equal(g, w, err_msg=where)
    else:
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * max(1.0, float(np.abs(w).max(initial=0))), err_msg=where)


@pytest.mark.parametrize("backend_name", BACKENDS)
@pytest.mark.parametrize("case", CASES)
def test_hostile(case: Case, backend_name: str) -> None:
    if case.id.endswith("-no-cases"):
        pytest.fail(f"posenc.{case.func} is public but has no hostile-input spec: add one to SPECS")
    # Fresh arrays for every run: an in-place case must not see another run's writes.
    case = next(c for c in SPECS[case.func]().cases if c.id == case.id)
    with using(backend_name):
        expect = case.expect
        if isinstance(expect, Raises):
            before = _snapshot(case.kwargs)
            start = time.perf_counter()
            with pytest.raises(expect.exc) as info:
                _call(posenc, case)
            # Refused before any work: a huge size must not be computed on first.
            assert SANITIZED or time.perf_counter() - start < 5.0, "took seconds to refuse"
            if expect.match:
                assert expect.match.lower() in str(info.value).lower(), (
                    f"message {str(info.value)!r} does not name {expect.match!r}")
            assert _snapshot(case.kwargs) == before, "out was written before the error"
        elif isinstance(expect, Check):
            try:
                result = _call(posenc, case)
            except expect.refuse as exc:
                assert expect.match.lower() in str(exc).lower(), f"message {str(exc)!r} does not name {expect.match!r}"
                return
            expect.fn(result)
        else:
            out = {k: v for k, v in case.kwargs.items() if k.startswith("out") and v is not None}
            result = _call(posenc, case)
            clean = {**case.kwargs, **{k: None for k in out}, **(expect.clean or {})}
            api = reference if hasattr(reference, expect.name or case.func) else posenc
            with using("reference"):
                want = getattr(api, expect.name or case.func)(*case.args, **clean)
            assert_same(result, want)
            for value in out.values():
                if isinstance(result, tuple):  # (q, k) of apply_rope_qk: out_q / out_k among them
                    assert any(r is value for r in result), "out= must be returned as passed"
                else:
                    assert result is value, "out= must be returned as passed"
                    assert_same(np.asarray(value), want, "out")


@pytest.mark.slow
def test_a_public_function_without_cases_fails_the_suite():
    """Add a function to posenc.__all__ without a spec (in a subprocess): the table must fail."""
    import os
    code = (
        "import sys, pytest, posenc\n"
        "posenc.brand_new_kernel = lambda x: x\n"
        "posenc.__all__.append('brand_new_kernel')\n"
        "sys.exit(pytest.main(['-q', '-p', 'no:warnings', '-p', 'no:cacheprovider', 'test_arguments.py',\n"
        "                      '-k', 'brand_new or every_public_name']))\n"
    )
    here = os.path.dirname(os.path.abspath(__file__))
    r = run_python(code, cwd=here)
    assert r.returncode != 0, r.stdout
    assert "brand_new_kernel-no-cases" in r.stdout and "3 failed" in r.stdout, r.stdout[-2000:]
