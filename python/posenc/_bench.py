"""``posenc bench``: each kernel against the NumPy reference (and PyTorch when installed).

Throughput is reported as bytes moved per second next to the memory ceiling
that matches the operation, measured in the same run on the same bytes:
``fill`` (writing an existing buffer), ``rmw`` (``np.multiply(a, 1, out=a)``,
read and write) or ``alloc`` (allocating and filling a new array, first-touch
page faults included).
"""

from __future__ import annotations

import sys
import time
from typing import Callable, Dict, List, NamedTuple, Optional

import numpy as np


class Case(NamedTuple):
    name: str
    ceiling: str  # "fill", "rmw" or "alloc"
    nbytes: int  # bytes the operation moves
    native: Callable[[], object]
    reference: Callable[[], object]


def best_time(fn: Callable[[], object], repeat: int, budget: float = 2.0) -> float:
    """Fastest of ``repeat`` runs (stops early once ``budget`` seconds are spent)."""
    fn()
    best, spent = float("inf"), 0.0
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        best, spent = min(best, dt), spent + dt
        if spent > budget:
            break
    return best


def ceilings(nbytes: int, repeat: int) -> Dict[str, float]:
    """Bytes per second of the three memory ceilings, on ``nbytes`` of float32."""
    a = np.ones(nbytes // 4, np.float32)
    return {
        "fill": nbytes / best_time(lambda: a.fill(1.0), repeat),
        "rmw": 2 * nbytes / best_time(lambda: np.multiply(a, 1, out=a), repeat),
        "alloc": nbytes / best_time(lambda: np.full(a.shape, 1.0, np.float32), repeat),
    }


def sinusoidal_cases(quick: bool) -> List[Case]:
    import posenc
    from posenc import reference as ref

    n, dim = (2048, 512) if quick else (8192, 1024)
    table = np.empty((n, dim), np.float32)
    x = np.random.default_rng(0).standard_normal((4, n // 2, dim), dtype=np.float32)
    return [
        Case(f"sinusoidal [{n}, {dim}] out=", "fill", table.nbytes,
             lambda: posenc.sinusoidal(n, dim, out=table), lambda: ref.sinusoidal(n, dim, out=table)),
        Case(f"add_sinusoidal {list(x.shape)} in place", "rmw", 2 * x.nbytes,
             lambda: posenc.add_sinusoidal(x, out=x), lambda: ref.add_sinusoidal(x, out=x)),
    ]


def learned_cases(quick: bool) -> List[Case]:
    import posenc
    from posenc import reference as ref

    n, dim, seq = (2048, 512, 1024) if quick else (8192, 1024, 4096)
    rng = np.random.default_rng(0)
    table = rng.standard_normal((n, dim), dtype=np.float32)
    x = rng.standard_normal((4, seq, dim), dtype=np.float32)
    pos = np.arange(seq)
    grad = rng.standard_normal((2 * n, dim), dtype=np.float32)
    gpos = rng.integers(0, n, 2 * n)
    return [
        Case(f"embedding_add {list(x.shape)} in place", "rmw", 2 * x.nbytes,
             lambda: posenc.embedding_add(x, table, pos, out=x), lambda: ref.embedding_add(x, table, pos, out=x)),
        Case(f"embedding_grad {2 * n} rows -> [{n}, {dim}]", "alloc", grad.nbytes + table.nbytes,
             lambda: posenc.embedding_grad(grad, gpos, n), lambda: ref.embedding_grad(grad, gpos, n)),
    ]


def rope_cases(quick: bool) -> List[Case]:
    import posenc
    from posenc import reference as ref

    seq = 1024 if quick else 4096
    x = np.random.default_rng(0).standard_normal((1, seq, 32, 128), dtype=np.float32)
    d = np.random.default_rng(1).standard_normal((32, 1, 32, 128), dtype=np.float32)
    pos = (np.arange(32) * 997 + 100)[:, None]
    return [
        Case(f"apply_rope {list(x.shape)} in place", "rmw", 2 * x.nbytes,
             lambda: posenc.apply_rope(x, out=x), lambda: ref.apply_rope(x, out=x)),
        Case(f"apply_rope {list(x.shape)} GPT-J in place", "rmw", 2 * x.nbytes,
             lambda: posenc.apply_rope(x, interleaved=True, out=x), lambda: ref.apply_rope(x, interleaved=True, out=x)),
        Case("apply_rope decode [32, 1, 32, 128] per-batch", "rmw", 2 * d.nbytes,
             lambda: posenc.apply_rope(d, pos, out=d), lambda: ref.apply_rope(d, pos, out=d)),
    ]


# Families add their cases here.
CASE_FACTORIES: List[Callable[[bool], List[Case]]] = [sinusoidal_cases]
CASE_FACTORIES.append(learned_cases)
CASE_FACTORIES.append(rope_cases)


def run(quick: bool = False, repeat: int = 10, only: Optional[str] = None, stream=sys.stdout) -> List[dict]:
    import posenc

    info = posenc.info()
    print(f"posenc {info['version']}  backend={info['backend']}  isa={info['isa']}  threads={info['threads']}", file=stream)
    cases = [c for factory in CASE_FACTORIES for c in factory(quick) if only is None or only in c.name]
    results = []
    print(f"{'case':44s} {'native ms':>10s} {'ref ms':>10s} {'speedup':>8s} {'GB/s':>7s} {'ceiling':>14s}", file=stream)
    for i, case in enumerate(cases, 1):
        print(f"[{i}/{len(cases)}] {case.name}...", end="\r", file=stream, flush=True)
        ceiling = ceilings(case.nbytes if case.ceiling != "rmw" else case.nbytes // 2, repeat)[case.ceiling]
        t_native = best_time(case.native, repeat)
        t_ref = best_time(case.reference, max(2, repeat // 4))
        rate = case.nbytes / t_native
        row = dict(case=case.name, native_s=t_native, reference_s=t_ref, bytes_per_s=rate,
                   ceiling=case.ceiling, ceiling_bytes_per_s=ceiling)
        results.append(row)
        print(f"{case.name:44s} {t_native * 1e3:10.3f} {t_ref * 1e3:10.3f} {t_ref / t_native:7.1f}x "
              f"{rate / 1e9:7.1f} {rate / ceiling:6.0%} of {case.ceiling:5s}", file=stream)
    return results

from ._bench_relative import relative_cases  # noqa: E402  (needs Case, defined above)
CASE_FACTORIES.append(relative_cases)
