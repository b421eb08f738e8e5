"""The tables ``posenc bench`` prints, from the rows it measured (plain dicts, also its JSON)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, TextIO, Tuple

from .cases import BASELINES

Row = Dict[str, Any]


def _ms(seconds: Optional[float], width: int = 9) -> str:
    return f"{seconds * 1e3:{width}.3f}" if seconds is not None else f"{'-':>{width}s}"


def case_header(width: int) -> str:
    others = " ".join(f"{name + ' ms':>9s}" for name in BASELINES)
    return (f"{'case':{width}s} {'dtype':8s} {'posenc ms':>9s} {'GB/s':>6s} {'ceiling ms':>10s} {'of ceiling':>19s} "
            f"{others} {'best other':>10s}")


def case_line(row: Row, width: int) -> str:
    """One case: posenc, its ceiling and share of it, each baseline, and the best baseline's time ÷ posenc's."""
    t = row["posenc_s"]
    share = f"{row['ceiling_s'] / t:5.0%} of {row['ceiling']:10s}"
    others = " ".join(_ms(row["baselines"].get(name)) for name in BASELINES)
    times = [s for s in row["baselines"].values() if s is not None]
    best = f"{min(times) / t:9.2f}x" if times else f"{'-':>10s}"
    return (f"{row['case']:{width}s} {row['dtype']:8s} {_ms(t)} {row['nbytes'] / t / 1e9:6.1f} {_ms(row['ceiling_s'], 10)} "
            f"{share:>19s} {others} {best}")


def dtype_table(rows: Sequence[Row], stream: TextIO, how: str = "each dtype's cases in turn") -> None:
    """Per case, each dtype's time ÷ float32's (the goal for float16/bfloat16: at most 1.0); ``how``
    says how the dtypes were timed."""
    by_case: Dict[str, Dict[str, float]] = {}
    for row in rows:
        by_case.setdefault(row["case"], {})[row["dtype"]] = row["posenc_s"]
    dtypes = [d for d in ("float16", "bfloat16", "float64") if any(d in v for v in by_case.values())]
    if not dtypes:
        return
    width = max(len(c) for c in by_case)
    print(f"\ndtype axis: time / float32 time ({how})\n{'case':{width}s} {'float32 ms':>10s} "
          + " ".join(f"{d:>9s}" for d in dtypes), file=stream)
    for case, times in by_case.items():
        if "float32" not in times:
            continue
        ratios = " ".join(f"{times[d] / times['float32']:8.2f}x" if d in times else f"{'-':>9s}" for d in dtypes)
        print(f"{case:{width}s} {_ms(times['float32'], 10)} {ratios}", file=stream)


def small_table(rows: Sequence[Row], stream: TextIO) -> None:
    if not rows:
        return
    units = [r["ufunc_s"] * 1e6 for r in rows]
    width = max(len(r["case"]) for r in rows)
    print(f"\nsmall calls: µs per call, and in tiny-ufunc calls (np.add of 8 float32, timed beside each call: "
          f"{min(units):.3f}-{max(units):.3f} µs); public: through the small-call lane, planned: without it, "
          "kernel: the bare binding alone", file=stream)
    print(f"{'call':{width}s} {'dtype':8s} " + " ".join(f"{c + ' µs':>11s} {'x ufunc':>8s}"
                                                       for c in ("public", "planned", "kernel")), file=stream)
    def cell(seconds: Any, unit: float) -> str:
        return f"{seconds * 1e6:11.3f} {seconds / unit:7.1f}x" if seconds is not None else f"{'-':>11s} {'-':>8s}"

    for r in rows:
        print(f"{r['case']:{width}s} {r.get('dtype', 'float32'):8s} "
              + " ".join(cell(r.get(k), r["ufunc_s"]) for k in ("public_s", "planned_s", "native_s")), file=stream)


def isa_table(runs: Dict[str, List[Row]], stream: TextIO, how: str = "each in its own process") -> None:
    """Per case and dtype, each path's time and its ratio to the fastest (1.00 = fastest).

    ``runs`` maps a path ("baseline", "avx2", "avx512", "default": posenc's
    own choice) to its rows; ``how`` says how the paths were timed.
    """
    paths = list(runs)
    keyed: Dict[Tuple[str, str], Dict[str, float]] = {}
    for path, rows in runs.items():
        for row in rows:
            keyed.setdefault((row["case"], row["dtype"]), {})[path] = row["posenc_s"]
    width = max([4] + [len(case) for case, _ in keyed])
    print(f"\nISA axis: ms on each path ({how}) and / the fastest", file=stream)
    print(f"{'case':{width}s} {'dtype':8s} " + " ".join(f"{p + ' ms':>11s}" for p in paths) + " "
          + " ".join(f"{p:>8s}" for p in paths), file=stream)
    for (case, dtype), times in keyed.items():
        fastest = min(times.values())
        ms = " ".join(_ms(times.get(p), 11) for p in paths)
        rel = " ".join(f"{times[p] / fastest:8.2f}" if p in times else f"{'-':>8s}" for p in paths)
        print(f"{case:{width}s} {dtype:8s} {ms} {rel}", file=stream)
