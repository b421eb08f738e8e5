"""Does each family's test module notice a wrong kernel? A small mutation check.

Each mutant wraps one function of the compiled module ``posenc._native`` so that
its result is subtly wrong: one element of the output nudged, a flag flipped
(sin/cos swapped, the rotation direction or the pairing reversed), a bucket
boundary moved by one. ``python tests/mutation.py`` first runs every family's
test module unmutated (it must pass), then once per mutant with
``POSENC_MUTANT=<family>:<name>`` set, which tests/conftest.py applies before
any test runs; the run must fail (pytest exit code 1). A mutant that survives,
or that no test ever calls, fails the check. Arguments are matched by the
parameter names of python/posenc/_native.pyi, the module's own signature file.

Usage: python tests/mutation.py [--no-baseline] [family ...]      (from the repository root)
(--no-baseline: skip the unmutated runs, when the whole suite has just passed, as in CI)
"""

from __future__ import annotations

import ast
import dataclasses
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
STUB = HERE.parent / "python" / "posenc" / "_native.pyi"


@dataclasses.dataclass(frozen=True)
class Mutant:
    function: str  # a function of posenc._native
    name: str
    out: Optional[str] = None  # nudge one element of this output argument after the call
    flip: Optional[str] = None  # call with this boolean argument negated
    result: bool = False  # nudge one element of the returned array


# Every family's test module, and the mutants it must kill.
FAMILIES: Dict[str, Tuple[str, List[Mutant]]] = {
    "sinusoidal": ("tests/test_sinusoidal.py", [
        Mutant("sinusoidal_table", "one-element", out="out"),
        Mutant("sinusoidal_table", "sin-cos-layout-swapped", flip="interleaved"),
        Mutant("add_sinusoidal", "one-element", out="out"),
        Mutant("add_sinusoidal", "layout-swapped", flip="interleaved"),
    ]),
    "rope": ("tests/test_rope.py", [
        Mutant("apply_rope", "one-element", out="out"),
        Mutant("apply_rope", "direction-reversed", flip="inverse"),
        Mutant("apply_rope", "pairing-swapped", flip="interleaved"),
        Mutant("apply_rope", "one-element-of-k", out="out_k"),
        Mutant("rope_cos_sin", "one-element-of-sin", out="sin"),
    ]),
    "rope_nd": ("tests/test_rope_nd.py", [
        Mutant("apply_rope_nd", "one-element", out="out"),
        Mutant("apply_rope_nd", "direction-reversed", flip="inverse"),
        Mutant("apply_rope_nd", "pairing-swapped", flip="interleaved"),
        Mutant("rope_nd_cos_sin", "one-element-of-sin", out="sin"),
        Mutant("apply_rope_tables", "one-element", out="out"),
        Mutant("apply_rope_tables", "direction-reversed", flip="inverse"),
        Mutant("apply_rope_tables", "one-element-of-k", out="out_k"),
    ]),
    "rope_qk": ("tests/test_rope_qk.py", [  # offset arrays, caller cos/sin tables, xPos
        Mutant("apply_rope", "one-element", out="out"),
        Mutant("apply_rope_tables", "one-element", out="out"),
        Mutant("apply_rope_tables", "direction-reversed", flip="inverse"),
        Mutant("apply_rope_tables", "pairing-swapped", flip="interleaved"),
        Mutant("apply_rope_tables", "one-element-of-k", out="out_k"),
    ]),
    "relative": ("tests/test_relative.py", [
        Mutant("toeplitz_copy", "one-element", out="out"),
        Mutant("toeplitz_add", "one-element", out="out"),
        Mutant("alibi_add", "one-element", out="out"),
        Mutant("alibi_add", "symmetric-flipped", flip="symmetric"),
        Mutant("t5_thresholds", "boundary-moved", result=True),
    ]),
    "vision": ("tests/test_vision.py", [
        Mutant("swin_bias", "one-element", out="out"),
        Mutant("sinusoidal_table", "one-element", out="out"),
        Mutant("sinusoidal_table", "sin-cos-layout-swapped", flip="interleaved"),
        Mutant("toeplitz_copy", "one-element", out="out"),
        Mutant("detr_gather", "one-element", out="out"),
    ]),
    "learned": ("tests/test_learned.py", [
        Mutant("embedding_lookup", "one-element", out="out"),
        Mutant("embedding_add", "one-element", out="out"),
        Mutant("embedding_grad", "one-element", out="out"),
        Mutant("resample", "one-element", out="dst"),
    ]),
}


def parameters() -> Dict[str, List[str]]:
    """Parameter names of each function in the compiled module's stub file."""
    tree = ast.parse(STUB.read_text())
    return {f.name: [a.arg for a in f.args.args] for f in tree.body if isinstance(f, ast.FunctionDef)}


def nudge(array: Any) -> None:
    """Make the middle element of ``array`` wrong (floats by ~1% + 0.01, integers by one)."""
    import numpy as np

    a = np.asarray(array)
    if a.size == 0:
        return
    index = np.unravel_index(a.size // 2, a.shape)
    a[index] = a[index] + 1 if a.dtype.kind in "iu" else a[index] * 1.01 + 0.01


def apply(spec: str) -> Callable[[], int]:
    """Install the mutant ``family:function:name`` into posenc._native; return its call counter."""
    from posenc import _backend

    family, function, name = spec.split(":")
    mutant = next(m for m in FAMILIES[family][1] if m.function == function and m.name == name)
    native = _backend.native
    original = getattr(native, mutant.function)
    names = parameters()[mutant.function]
    calls = [0]

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        bound = dict(zip(names, args), **kwargs)
        if mutant.flip is not None:
            bound[mutant.flip] = not bound[mutant.flip]
        result = original(**bound)
        if mutant.out is not None and bound.get(mutant.out) is not None:
            nudge(bound[mutant.out])
        if mutant.result:
            nudge(result)
        calls[0] += 1
        return result

    setattr(native, mutant.function, wrapped)
    return lambda: calls[0]


def _pytest(module: str, mutant: Optional[str]) -> Tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("POSENC_BACKEND", "POSENC_ISA", "POSENC_MUTANT")}
    if mutant:
        env["POSENC_MUTANT"] = mutant
    r = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                        "--hypothesis-profile=default", module], cwd=HERE.parent, env=env, capture_output=True,
                       text=True, timeout=1800)
    return r.returncode, r.stdout + r.stderr


def _run(family: str, m: Mutant) -> Tuple[str, str, bool]:
    """One mutant's run of its family's tests: (the report line, the mutant, whether it survived or erred)."""
    spec = f"{family}:{m.function}:{m.name}"
    start = time.perf_counter()
    code, output = _pytest(FAMILIES[family][0], spec)
    took = time.perf_counter() - start
    killer = re.search(r"^FAILED (\S+)", output, re.M)
    if code == 1 and killer and "mutant never called" not in output:
        outcome, failed = f"killed in {took:.0f} s by {killer.group(1).split('::', 1)[-1][:60]}", False
    elif code == 0:
        outcome, failed = "SURVIVED: every test passed", True
    else:
        outcome, failed = f"ERROR (exit {code}): {output.strip().splitlines()[-1][:80] if output.strip() else ''}", True
    return f"{family:<11} {m.function + ':' + m.name:<45} {outcome}", spec, failed


def main(argv: List[str]) -> int:
    baseline = "--no-baseline" not in argv
    families = [a for a in argv if a != "--no-baseline"] or list(FAMILIES)
    for family in families if baseline else []:
        module = FAMILIES[family][0]
        code, output = _pytest(module, None)
        if code != 0:
            print(output[-3000:])
            print(f"{family}: {module} fails unmutated (exit {code}): fix that first")
            return 1
    print(f"{'family':<11} {'mutant':<45} outcome")
    # Each mutant runs in its own pytest process: one per core at a time, reported in order.
    jobs = [(family, m) for family in families for m in FAMILIES[family][1]]
    failures = []
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        for line, spec, failed in pool.map(lambda job: _run(*job), jobs):
            print(line, flush=True)
            if failed:
                failures.append(spec)
    print(f"\nfamilies covered: {', '.join(families)}; {len(jobs)} mutants, {len(failures)} not killed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
