"""The compiled module ``posenc._native`` against its stub and its callers.

python/posenc/_native.pyi types the module's own functions and leaves the kernels' bindings to a
module-level ``__getattr__`` (``Any``), so that a new kernel needs no stub edit. What mypy no longer
checks for the bindings is checked here from the built module's own signatures (pybind11's
``__doc__``, read by tests/mutation.py): every call of a binding in python/posenc/_native_exec/ names
a binding that exists, with an arity and keywords it accepts.
"""

from __future__ import annotations

import ast
from pathlib import Path

import posenc
from posenc import _backend

from conftest import requires_native
from mutation import EXECUTORS, called_by_executors, native_signatures

STUB = Path(posenc.__file__).with_name("_native.pyi")


def _stub_functions():
    tree = ast.parse(STUB.read_text())
    return {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}


@requires_native
def test_stub_types_the_module_functions_with_their_parameters():
    stubbed, compiled = _stub_functions(), native_signatures(_backend.native)
    assert "__getattr__" in stubbed, "the kernels' bindings are typed by the stub's module-level __getattr__"
    del stubbed["__getattr__"]
    for name, function in stubbed.items():
        assert name in compiled, f"python/posenc/_native.pyi declares {name}, which posenc._native lacks"
        assert [a.arg for a in function.args.args] == [p.name for p in compiled[name].parameters], name


@requires_native
def test_every_untyped_function_is_a_kernel_binding_an_executor_calls():
    """What the stub leaves to __getattr__ is exactly the bindings the executors call (which the tests run)."""
    untyped = set(native_signatures(_backend.native)) - set(_stub_functions())
    called = {f for functions in called_by_executors().values() for f in functions}
    assert not untyped - called, f"neither typed in the stub nor called by an executor: {sorted(untyped - called)}"
    assert not called - untyped, f"kernel bindings re-declared in the stub: {sorted(called - untyped)}"


def _binding_calls():
    """Every ``native.<binding>(...)`` call in the executors: (where, binding, positional count, keywords)."""
    for path in sorted(EXECUTORS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "native"):
                assert not any(isinstance(a, ast.Starred) for a in node.args), "spell a binding's arguments out"
                assert all(k.arg is not None for k in node.keywords), "spell a binding's arguments out"
                yield f"{path.name}:{node.lineno}", node.func.attr, len(node.args), [k.arg for k in node.keywords]


@requires_native
def test_executors_call_bindings_with_arguments_they_accept():
    signatures = native_signatures(_backend.native)
    for where, name, positional, keywords in _binding_calls():
        assert name in signatures, f"{where}: posenc._native has no {name}"
        parameters = signatures[name].parameters
        names = [p.name for p in parameters]
        assert positional <= len(names), f"{where}: {name} takes {len(names)} arguments"
        assert set(keywords) <= set(names[positional:]), f"{where}: {name}({', '.join(names)}) given {keywords}"
        missing = [p.name for p in parameters[positional:] if not p.optional and p.name not in keywords]
        assert not missing, f"{where}: {name} is not given {missing}"
