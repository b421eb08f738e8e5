"""Does each family's test module notice a wrong kernel? A small mutation check.

Each mutant wraps one function of the compiled module ``posenc._native`` so that
its result is subtly wrong. The mutants are not listed by hand: they are derived
from the built module and the executors that call it, so a new kernel gets its
mutants without an edit here.

- **Which functions, which family.** Every function of ``posenc._native`` that
  ``python/posenc/_native_exec/<family>.py`` calls belongs to that family (to
  each family whose executor calls it: ``sinusoidal_table`` is sinusoidal's and
  vision's). A family's tests are ``tests/test_<family>.py`` and
  ``tests/test_<family>_*.py``, except the modules of a longer family name
  (``tests/test_rope_nd*.py`` are rope_nd's, ``tests/test_rope_qk.py`` rope's).
- **Which mutants.** The function's own signature (pybind11 writes it on the
  first line of its ``__doc__``) gives them: every output argument (the bindings
  name outputs ``out`` or ``out_<what>``) gets one element nudged after the call;
  every ``bool`` argument is negated (sin/cos layout swapped, the rotation
  reversed, ALiBi's symmetry flipped…); a returned array gets one element nudged
  (a T5 bucket boundary moved by one).

``python tests/mutation.py`` first runs every family's tests unmutated (they must
pass), then once per mutant with ``POSENC_MUTANT=<family>:<function>:<mutant>``
set, which tests/conftest.py applies before any test runs; the run must fail
(pytest exit code 1). A mutant that survives, or that no test ever applies (an
output never given, as ``out_k`` without a ``k``), fails the check. ``--list``
prints the derived mutants without running them.

Usage: python tests/mutation.py [--no-baseline] [--list] [family ...]      (from the repository root)
(--no-baseline: skip the unmutated runs, when the whole suite has just passed, as in CI)
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

HERE = Path(__file__).resolve().parent
EXECUTORS = HERE.parent / "python" / "posenc" / "_native_exec"

# Mutants that cannot change any result, each with the reason; everything else generated must be killed.
EXCLUDED: Dict[str, str] = {}


class Parameter(NamedTuple):
    name: str
    type: str  # as pybind11 prints it: "bool", "numpy.ndarray", "numpy.ndarray | None", ...
    optional: bool  # has a default


class Signature(NamedTuple):
    parameters: List[Parameter]
    returns: str


def _split_top_level(text: str) -> List[str]:
    """``text`` split at the commas outside brackets."""
    parts, depth, current = [], 0, ""
    for ch in text + ",":
        depth += ch in "[("
        depth -= ch in "])"
        if ch == "," and depth == 0:
            if current.strip():
                parts.append(current.strip())
            current = ""
        else:
            current += ch
    return parts


def signature(doc: str) -> Signature:
    """A pybind11 function's signature, read from the first line of its ``__doc__``."""
    line = doc.strip().splitlines()[0]
    inside, returns = line[line.index("(") + 1: line.rindex(") -> ")], line[line.rindex(") -> ") + 5:]
    parameters = []
    for part in _split_top_level(inside):
        declared, _, default = part.partition(" = ")
        name, _, kind = declared.partition(":")
        parameters.append(Parameter(name.strip(), kind.strip(), bool(default)))
    return Signature(parameters, returns.strip())


def native_signatures(module: Any) -> Dict[str, Signature]:
    """Every function of the compiled module ``module`` and its signature."""
    functions = {n: getattr(module, n) for n in dir(module) if not n.startswith("_")}
    return {n: signature(f.__doc__) for n, f in functions.items() if callable(f)}


def called_by_executors() -> Dict[str, List[str]]:
    """The functions of ``posenc._native`` each executor module ``_native_exec/<family>.py`` calls, by family."""
    families = {}
    for path in sorted(EXECUTORS.glob("[!_]*.py")):
        tree = ast.parse(path.read_text())
        families[path.stem] = sorted({node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                                      and isinstance(node.value, ast.Name) and node.value.id == "native"})
    return families


def family_tests(family: str, families: List[str]) -> List[str]:
    """``tests/test_<family>.py`` and ``tests/test_<family>_*.py``, minus those of a longer family name,
    smallest first: a mutant's run stops at its first failing test, and the tests before it all pass."""
    longer = [f for f in families if f != family and f.startswith(family + "_")]
    modules = [p for p in sorted(HERE.glob(f"test_{family}*.py"), key=lambda p: (p.stat().st_size, p.name))
               if p.stem == f"test_{family}" or p.stem.startswith(f"test_{family}_")]
    return [f"tests/{p.name}" for p in modules
            if not any(p.stem == f"test_{f}" or p.stem.startswith(f"test_{f}_") for f in longer)]


def mutants_of(sig: Signature) -> List[str]:
    """The mutants of one signature: ``nudge-<output>``, ``flip-<bool>``, ``nudge-result``."""
    names = [f"nudge-{p.name}" for p in sig.parameters if p.name == "out" or p.name.startswith("out_")]
    names += [f"flip-{p.name}" for p in sig.parameters if p.type == "bool"]
    if "ndarray" in sig.returns or "NDArray" in sig.returns:
        names.append("nudge-result")
    return names


class Job(NamedTuple):
    family: str
    function: str
    mutant: str

    @property
    def spec(self) -> str:
        return f"{self.family}:{self.function}:{self.mutant}"


def derive(module: Any) -> Tuple[Dict[str, List[str]], List[Job]]:
    """Each family's test modules, and every mutant (minus EXCLUDED) of every function its executor calls."""
    signatures, calls = native_signatures(module), called_by_executors()
    tests = {family: family_tests(family, list(calls)) for family in calls}
    jobs = []
    for family, functions in calls.items():
        if functions and not tests[family]:
            raise SystemExit(f"_native_exec/{family}.py calls posenc._native, and no tests/test_{family}*.py tests it")
        for function in functions:
            if function not in signatures:
                raise SystemExit(f"_native_exec/{family}.py calls posenc._native.{function}, which does not exist")
            jobs += [Job(family, function, m) for m in mutants_of(signatures[function])
                     if f"{function}:{m}" not in EXCLUDED]
    return tests, jobs


def nudge(array: Any) -> bool:
    """Make the middle element of ``array`` wrong (floats by ~1% + 0.01, integers by one); False if it is empty."""
    import numpy as np

    a = np.asarray(array)
    if a.size == 0:
        return False
    index = np.unravel_index(a.size // 2, a.shape)
    a[index] = a[index] + 1 if a.dtype.kind in "iu" else a[index] * 1.01 + 0.01
    return True


def apply(spec: str) -> Callable[[], int]:
    """Install the mutant ``family:function:mutant`` into posenc._native; return how often it took effect."""
    from posenc import _backend

    _, function, mutant = spec.split(":")
    native = _backend.native
    original = getattr(native, function)
    sig = signature(original.__doc__)
    if mutant not in mutants_of(sig):
        raise SystemExit(f"{function} has no mutant {mutant} (its signature: {sig})")
    kind, _, target = mutant.partition("-")
    names = [p.name for p in sig.parameters]
    effective = [0]

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        bound = dict(zip(names, args), **kwargs)
        if kind == "flip":
            bound[target] = not bound[target]
            effective[0] += 1
        result = original(**bound)
        written = result if target == "result" else bound.get(target)
        if kind == "nudge" and written is not None and nudge(written):
            effective[0] += 1
        return result

    setattr(native, function, wrapped)
    # The small-call lanes (cpp/bindings/lane.hpp) reach kernels without the bindings: under a mutant they
    # decline, so that every call runs the executors' path through the mutated binding. (The lanes'
    # own results are checked against that path by tests/test_lanes.py.)
    for name in dir(native):
        if name.startswith("lane_") and name != "lane_helpers":
            setattr(native, name, lambda args, kwargs: None)
    return lambda: effective[0]


def _pytest(modules: List[str], mutant: Optional[str]) -> Tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("POSENC_BACKEND", "POSENC_ISA", "POSENC_MUTANT")}
    if mutant:
        env["POSENC_MUTANT"] = mutant
        # A mutant wraps the binding, which every ISA path goes through alike: the ISA-parametrised
        # tests run on the default path only (tests/conftest.py), once instead of once per path.
        env["POSENC_ISA"] = _default_isa()
    # One run per core at a time, each with OpenMP (posenc's, torch's) on every core: threads that
    # spin while they wait took the cores from the other run (a relative mutant: 45 s, 16 s passive).
    env.setdefault("OMP_WAIT_POLICY", "passive")
    r = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                        "--hypothesis-profile=default", *modules], cwd=HERE.parent, env=env, capture_output=True,
                       text=True, timeout=1800)
    return r.returncode, r.stdout + r.stderr


def _default_isa() -> str:
    from posenc import _backend

    return str(_backend.native.active_isa())


def _run(modules: List[str], job: Job) -> Tuple[str, bool]:
    """One mutant's run of its family's tests: (the report line, whether it survived or erred)."""
    start = time.perf_counter()
    code, output = _pytest(modules, job.spec)
    took = time.perf_counter() - start
    killer = re.search(r"^FAILED (\S+)", output, re.M)
    if code == 1 and killer and "mutant never called" not in output:
        outcome, failed = f"killed in {took:.0f} s by {killer.group(1)[:70]}", False
    elif code == 0:
        outcome, failed = "SURVIVED: every test passed", True
    else:
        outcome, failed = f"ERROR (exit {code}): {output.strip().splitlines()[-1][:80] if output.strip() else ''}", True
    return f"{job.family:<11} {job.function + ':' + job.mutant:<45} {outcome}", failed


def main(argv: List[str]) -> int:
    from posenc import _backend

    if _backend.native is None:
        print("posenc._native is not built: nothing to mutate")
        return 1
    tests, jobs = derive(_backend.native)
    families = [a for a in argv if not a.startswith("--")] or [f for f in tests if tests[f]]
    jobs = [job for job in jobs if job.family in families]
    if "--list" in argv:
        for family in families:
            print(f"{family}: {' '.join(tests[family])}")
            print("".join(f"    {job.function}:{job.mutant}\n" for job in jobs if job.family == family), end="")
        return 0
    for family in families if "--no-baseline" not in argv else []:
        code, output = _pytest(tests[family], None)
        if code != 0:
            print(output[-3000:])
            print(f"{family}: {' '.join(tests[family])} fail unmutated (exit {code}): fix that first")
            return 1
    print(f"{'family':<11} {'mutant':<45} outcome")
    # Each mutant runs in its own pytest process: one per core at a time, reported in order.
    failures = []
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        for (line, failed), job in zip(pool.map(lambda job: _run(tests[job.family], job), jobs), jobs):
            print(line, flush=True)
            if failed:
                failures.append(job.spec)
    print(f"\nfamilies covered: {', '.join(families)}; {len(jobs)} mutants, {len(failures)} not killed"
          + "".join(f"\n  not killed: {spec}" for spec in failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
