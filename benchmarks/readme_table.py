"""The README's performance table, from the JSON of one ``posenc bench`` run.

    python -m posenc bench --dtype all --json bench1.json     # as many runs as you like
    python benchmarks/readme_table.py bench1.json [bench2.json ...] > table.md

One row per float32 case (the README's table; the dtype axis follows it as a
second table): posenc's time, its share of the memory ceiling measured in the
same run on the same buffer with the same threads, each baseline's time, and
how many times faster posenc is than the fastest baseline. Then the small
calls, in multiples of one tiny NumPy ufunc call.

Given several runs, each row comes whole from the run in which posenc was
fastest on it (its ceiling and baselines from that same run): on a shared
machine one busy moment then costs a row, not the table.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Dict, List, Optional


def _ms(seconds: Optional[float]) -> str:
    if seconds is None:
        return "—"
    return f"{seconds * 1e3:.3g} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.3g} µs"


def case_table(rows: List[Dict[str, Any]]) -> List[str]:
    lines = ["| case (float32, 2 threads) | posenc | of ceiling | NumPy | PyTorch | Hugging Face | fastest other ÷ posenc |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("kind") == "small" or r["dtype"] != "float32":
            continue
        t = r["posenc_s"]
        others = [s for s in r["baselines"].values() if s is not None]
        best = f"{min(others) / t:.2f}×" if others else "—"
        share = f"{r['ceiling_s'] / t:.2f} of {r['ceiling']}"
        b = r["baselines"]
        lines.append(f"| `{r['case']}` | {_ms(t)} | {share} | {_ms(b.get('numpy'))} | {_ms(b.get('torch'))} "
                     f"| {_ms(b.get('HF'))} | {best} |")
    return lines if len(lines) > 2 else []  # (no float32 case: a run of small calls only)


def dtype_table(rows: List[Dict[str, Any]]) -> List[str]:
    times: Dict[str, Dict[str, float]] = {}
    for r in rows:
        if r.get("kind") != "small":
            times.setdefault(r["case"], {})[r["dtype"]] = r["posenc_s"]
    dtypes = [d for d in ("float16", "bfloat16", "float64") if any(d in v for v in times.values())]
    if not dtypes:
        return []
    lines = ["| case | float32 | " + " | ".join(f"{d} ÷ float32" for d in dtypes) + " |",
             "|---|---|" + "---|" * len(dtypes)]
    for case, t in times.items():
        if "float32" in t:
            ratios = " | ".join(f"{t[d] / t['float32']:.2f}" if d in t else "—" for d in dtypes)
            lines.append(f"| `{case}` | {_ms(t['float32'])} | {ratios} |")
    return lines


def small_table(rows: List[Dict[str, Any]]) -> List[str]:
    small = [r for r in rows if r.get("kind") == "small"]
    if not small:
        return []
    lines = ["| small call | dtype | posenc | × one tiny ufunc call (same run) | without the small-call lane "
             "| kernel binding alone |",
             "|---|---|---|---|---|---|"]

    def cell(seconds: Any, unit: float) -> str:
        return f"{seconds * 1e6:.2f} µs ({seconds / unit:.1f}×)" if seconds is not None else "—"

    for r in small:
        unit = r["ufunc_s"]
        lines.append(f"| `{r['case']}` | {r.get('dtype', 'float32')} | {r['public_s'] * 1e6:.2f} µs | {r['public_s'] / unit:.1f}× | "
                     f"{cell(r.get('planned_s'), unit)} | {cell(r['native_s'], unit)} |")
    return lines


def best_rows(paths: List[str]) -> List[Dict[str, Any]]:
    """Per (case, dtype, kind), the row of the run in which posenc took the least time, in first-run order."""
    best: Dict[Any, Dict[str, Any]] = {}
    for path in paths:
        with open(path) as f:
            rows = json.load(f)
        if isinstance(rows, dict):
            sys.exit(f"{path} is the JSON of `--isa all`; run posenc bench without --isa for the README table")
        for r in rows:
            key = (r["case"], r.get("dtype"), r.get("kind"))
            time = r["public_s"] if r.get("kind") == "small" else r["posenc_s"]
            held = best.get(key)
            if held is None or time < (held["public_s"] if held.get("kind") == "small" else held["posenc_s"]):
                best[key] = r
    return list(best.values())


def main(paths: List[str]) -> None:
    rows = best_rows(paths)
    for table in (case_table(rows), dtype_table(rows), small_table(rows)):
        if table:
            print("\n".join(table) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
