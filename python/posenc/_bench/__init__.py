"""``posenc bench``: every kernel beside the memory ceiling and what users write instead.

For each case (``cases.py``) posenc and the memory ceiling run
interleaved, round after round (``timing.measure``), each keeping its best
time; then the NumPy baseline in rounds of its own, then the PyTorch
baselines interleaved among themselves (``timing.measure_by_runtime`` says
why). The ceiling is a plain pass
over the very buffer posenc works on, with posenc's thread count, in the
same run: ``fill`` for writing an ``out=``, ``rmw`` (read and write back)
for in-place work, ``alloc`` (allocate and write) for a function returning
a new array, ``read+alloc`` for one that also reads an input of its own. Baselines run with the same
thread count (PyTorch is set to it; NumPy's ufuncs use one thread).

``isas=["all"]`` runs the cases once per instruction-set path the CPU has,
each in its own process, plus once with posenc's own choice, and prints each
path's time relative to the fastest. ``run_isas_alternated`` times the same
paths in one process, switching path call by call, and
``run_dtypes_alternated`` the dtypes of each case.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, Iterator, List, Optional, Sequence, TextIO

from . import cases as _cases
from . import report, small
from .timing import ceiling, clock, measure, measure_by_runtime, torch_module

DTYPES = ("float32", "float16", "bfloat16", "float64")


class _Progress:
    """A one-line status on stderr while a case runs (only when stderr is a terminal)."""

    def __init__(self, enabled: Optional[bool] = None) -> None:
        self.start = time.perf_counter()
        self.enabled = sys.stderr.isatty() if enabled is None else enabled

    def show(self, what: str) -> None:
        if self.enabled:
            line = f"{what}  ({time.perf_counter() - self.start:.0f}s)"
            print(f"\r{line[:100]:100s}", end="", file=sys.stderr, flush=True)

    def clear(self) -> None:
        if self.enabled:
            print(f"\r{'':100s}\r", end="", file=sys.stderr, flush=True)


def available_dtypes(names: Sequence[str]) -> List[str]:
    """``names`` ("all" = every dtype), without bfloat16 when ml_dtypes is absent."""
    wanted = list(DTYPES) if "all" in names else list(names)
    unknown = [d for d in wanted if d not in DTYPES]
    if unknown:
        raise ValueError(f"dtype must be one of {DTYPES} or 'all', got {unknown}")
    try:
        import ml_dtypes  # noqa: F401
    except ImportError:
        wanted = [d for d in wanted if d != "bfloat16"]
    return wanted


def selected_cases(quick: bool, dtypes: Sequence[str], only: Optional[str], torch_mod: Any) -> Iterator[_cases.Case]:
    """The cases of every family for each dtype (``available_dtypes``), those whose name contains ``only``."""
    for dtype in available_dtypes(dtypes):
        for family in _cases.FAMILIES:
            for case in family(quick, _cases.dtype_of(dtype), torch_mod):
                if only is None or only in case.name:
                    yield case


def run(quick: bool = False, repeat: int = 10, only: Optional[str] = None, stream: TextIO = sys.stdout,
        progress: Optional[bool] = None, torch: bool = True, dtypes: Sequence[str] = ("float32",),
        baselines: bool = True, small_calls: bool = True) -> List[Dict[str, Any]]:
    """Time every case on the active path; print the tables to ``stream``; return the rows as dicts.

    ``only`` keeps the cases whose name contains it; ``baselines=False``
    times posenc and its ceiling only (the ISA axis does that).
    """
    import numpy as np

    import posenc
    from .._backend import native

    info = posenc.info()
    threads = posenc.get_num_threads()
    torch_mod = torch_module(torch and baselines)
    torch_threads = torch_mod.get_num_threads() if torch_mod is not None else None
    if torch_mod is not None:
        torch_mod.set_num_threads(threads)
    torch_note = f"torch {torch_mod.__version__}" if torch_mod is not None else "torch absent"
    now = clock(threads)
    clock_note = "thread CPU time" if threads == 1 else "wall time"
    print(f"posenc {info['version']}  isa={info['isa']}  threads={threads} (torch too)  numpy {np.__version__}  "
          f"{torch_note}  clock: {clock_note}", file=stream)
    bar = _Progress(progress)
    rows: List[Dict[str, Any]] = []
    width = 54
    print(report.case_header(width), file=stream, flush=True)
    try:
        for case in selected_cases(quick, dtypes, only, torch_mod):
            bar.show(f"{case.name} {case.dtype}")
            # posenc and its ceiling (one thread pool) timed apart from NumPy's
            # long one-thread calls and from PyTorch's, which leave its
            # workers spinning (measure_by_runtime).
            ours = {"posenc": case.posenc, "ceiling": ceiling(case.ceiling, case.target)}
            numpy_calls: Dict[str, Any] = {}
            torch_calls: Dict[str, Any] = {}
            if baselines:
                for k, fn in case.baselines.items():
                    (numpy_calls if k == "numpy" else torch_calls)[f"base {k}"] = fn
            best = measure_by_runtime([ours, numpy_calls, torch_calls], repeat, reset=case.reset(), now=now)
            row = dict(case=case.name, kernel=case.kernel, dtype=case.dtype, isa=native.active_isa(),
                       threads=threads, posenc_s=best["posenc"], ceiling=case.ceiling,
                       ceiling_s=best["ceiling"], nbytes=case.nbytes,
                       baselines={k: best.get(f"base {k}") for k in _cases.BASELINES})
            rows.append(row)
            bar.clear()
            print(report.case_line(row, width), file=stream, flush=True)
        report.dtype_table(rows, stream)
        if small_calls and (only is None or only == "small"):
            small_rows = small.run(lambda name: bar.show(name), [_cases.dtype_of(d) for d in available_dtypes(dtypes)])
            bar.clear()
            report.small_table(small_rows, stream)
            rows.extend(dict(r, kind="small") for r in small_rows)
    finally:
        bar.clear()
        if torch_mod is not None:
            torch_mod.set_num_threads(torch_threads)
    return rows


def run_isas_alternated(quick: bool = False, repeat: int = 10, only: Optional[str] = None,
                        dtypes: Sequence[str] = ("float32",), stream: TextIO = sys.stdout,
                        progress: Optional[bool] = None) -> Dict[str, List[Dict[str, Any]]]:
    """Every path the CPU has, and posenc's default, switched call by call in one process.

    On this project's shared machines the same path timed in two processes
    differed by up to 1.3x, more than the 1.1x a dispatch choice is judged
    by: a process can land in a slower phase of the machine. Here every path
    runs on the same buffers, round after round (``timing.measure``), so a
    slow phase slows all of them. Selecting a path costs well under a
    microsecond and is inside the timed call. Prints the ISA table and
    returns the rows per path, as ``run_isas`` does.
    """
    import posenc
    from .._backend import native

    paths = list(native.available_isas()) + ["default"]
    runs: Dict[str, List[Dict[str, Any]]] = {path: [] for path in paths}
    threads = posenc.get_num_threads()
    now = clock(threads)
    chosen = native.active_isa()
    bar = _Progress(progress)

    def on(path: str, fn: Any) -> Any:
        isa = "" if path == "default" else path

        def call() -> object:
            native.select_isa(isa)
            return fn()

        return call

    try:
        for case in selected_cases(quick, dtypes, only, None):
            bar.show(f"{case.name} {case.dtype}")
            best = measure({path: on(path, case.posenc) for path in paths}, repeat, reset=case.reset(), now=now)
            for path in paths:
                runs[path].append(dict(case=case.name, kernel=case.kernel, dtype=case.dtype, isa=path,
                                       threads=threads, posenc_s=best[path]))
            bar.clear()
    finally:
        bar.clear()
        native.select_isa(chosen)
    report.isa_table(runs, stream, how="alternated call by call in one process")
    return runs


def run_dtypes_alternated(quick: bool = False, repeat: int = 10, only: Optional[str] = None,
                          dtypes: Sequence[str] = DTYPES, stream: TextIO = sys.stdout,
                          progress: Optional[bool] = None) -> List[Dict[str, Any]]:
    """Each case in every dtype, switched call by call in one process: the dtype axis without the drift.

    ``run`` times a case's dtypes minutes apart, and on this project's shared
    machines one float32 rotation took 0.71-1.05 ms across the runs of one
    session, so its time ÷ float32 time carried that drift. Here the dtypes
    of one case run round after round on their own operands (each restored
    before each call, ``timing.measure``), so a slow phase of the machine
    slows them alike. posenc only, on the active path; prints the dtype table
    and returns one row per case and dtype.
    """
    import posenc
    from .._backend import native

    threads = posenc.get_num_threads()
    now = clock(threads)
    print(f"posenc {posenc.info()['version']}  isa={native.active_isa()}  threads={threads}  "
          f"clock: {'thread CPU time' if threads == 1 else 'wall time'}", file=stream)
    bar = _Progress(progress)
    names = available_dtypes(dtypes)
    rows: List[Dict[str, Any]] = []
    try:
        for family in _cases.FAMILIES:
            by_name: Dict[str, Dict[str, _cases.Case]] = {}
            for dtype in names:
                for case in family(quick, _cases.dtype_of(dtype), None):
                    if only is None or only in case.name:
                        by_name.setdefault(case.name, {})[dtype] = case
            for name, per_dtype in by_name.items():
                if len(per_dtype) < 2:  # nothing to compare (t5_buckets is float32 only)
                    continue
                bar.show(name)
                best = measure({d: c.posenc for d, c in per_dtype.items()}, repeat,
                               reset={d: c.reset() for d, c in per_dtype.items()}, now=now)
                rows.extend(dict(case=name, kernel=c.kernel, dtype=d, isa=native.active_isa(), threads=threads,
                                 posenc_s=best[d]) for d, c in per_dtype.items())
                bar.clear()
    finally:
        bar.clear()
    report.dtype_table(rows, stream, how="dtypes alternated call by call in one process")
    return rows


def run_isas(argv: Sequence[str], rounds: int = 1, stream: TextIO = sys.stdout) -> Dict[str, List[Dict[str, Any]]]:
    """Run ``posenc bench argv`` once per path the CPU has and once with posenc's default, each in its own process.

    ``rounds`` > 1 repeats the sweep and keeps each case's best time per path.
    Prints the ISA table and returns the rows per path.
    """
    from .._backend import native

    paths = list(native.available_isas()) + ["default"]
    runs: Dict[str, List[Dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            for path in paths:
                target = os.path.join(tmp, f"{path}.json")
                env = {k: v for k, v in os.environ.items() if k != "POSENC_ISA"}
                if path != "default":
                    env["POSENC_ISA"] = path
                cmd = [sys.executable, "-m", "posenc", "bench", *argv, "--baselines", "none", "--no-small",
                       "--no-progress", "--json", target]
                print(f"[round {r + 1}/{rounds}] {path}: {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
                done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                if done.returncode != 0:
                    raise RuntimeError(f"posenc bench on {path} failed:\n{done.stderr}")
                with open(target) as f:
                    rows = json.load(f)
                if path in runs:  # keep the best of the rounds
                    for old, new in zip(runs[path], rows):
                        old["posenc_s"] = min(old["posenc_s"], new["posenc_s"])
                else:
                    runs[path] = rows
    report.isa_table(runs, stream)
    return runs
