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
from typing import Any, Callable, Dict, List, NamedTuple, Optional, TextIO

import numpy as np


class Case(NamedTuple):
    """One timed operation. Families append factories ``quick -> [Case, ...]`` to CASE_FACTORIES."""

    name: str
    ceiling: str  # "fill", "rmw" or "alloc"
    nbytes: int  # bytes the operation moves
    native: Callable[[], object]
    reference: Callable[[], object]
    torch: Optional[Callable[[], object]] = None  # the same operation in PyTorch, when installed


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


def _torch() -> Any:
    """PyTorch, when installed (the optional third column), else None."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def sinusoidal_cases(quick: bool) -> List[Case]:
    import posenc
    from posenc import reference as ref

    n, dim = (2048, 512) if quick else (8192, 1024)
    table = np.empty((n, dim), np.float32)
    x = np.random.default_rng(0).standard_normal((4, n // 2, dim), dtype=np.float32)
    torch = _torch()
    torch_table: Optional[Callable[[], object]] = None
    torch_add: Optional[Callable[[], object]] = None
    if torch is not None:
        table_t, x_t = torch.from_numpy(table), torch.from_numpy(x)

        def torch_pe() -> Any:  # the PyTorch tutorial's formula, in float32
            pos = torch.arange(n, dtype=torch.float32)[:, None]
            div = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-np.log(10000.0) / dim))
            pe = torch.empty(n, dim)
            pe[:, 0::2] = torch.sin(pos * div)
            pe[:, 1::2] = torch.cos(pos * div)
            return pe

        def fill_table() -> object:
            return table_t.copy_(torch_pe())

        def add_table() -> object:
            return x_t.add_(torch_pe()[: x.shape[1]])

        torch_table, torch_add = fill_table, add_table

    return [
        Case(f"sinusoidal [{n}, {dim}] out=", "fill", table.nbytes,
             lambda: posenc.sinusoidal(n, dim, out=table), lambda: ref.sinusoidal(n, dim, out=table), torch_table),
        Case(f"add_sinusoidal {list(x.shape)} in place", "rmw", 2 * x.nbytes,
             lambda: posenc.add_sinusoidal(x, out=x), lambda: ref.add_sinusoidal(x, out=x), torch_add),
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
    torch = _torch()
    t_add: Optional[Callable[[], object]] = None
    t_grad: Optional[Callable[[], object]] = None
    if torch is not None:  # nn.Embedding's forward (a gather) added in place, and its backward (index_add_)
        x_t, table_t, pos_t = torch.from_numpy(x), torch.from_numpy(table), torch.from_numpy(pos)
        grad_t, gpos_t = torch.from_numpy(grad), torch.from_numpy(gpos)
        t_add = lambda: x_t.add_(table_t[pos_t])
        t_grad = lambda: torch.zeros(n, dim).index_add_(0, gpos_t, grad_t)
    return [
        Case(f"embedding_add {list(x.shape)} in place", "rmw", 2 * x.nbytes,
             lambda: posenc.embedding_add(x, table, pos, out=x), lambda: ref.embedding_add(x, table, pos, out=x),
             t_add),
        Case(f"embedding_grad {2 * n} rows -> [{n}, {dim}]", "alloc", grad.nbytes + table.nbytes,
             lambda: posenc.embedding_grad(grad, gpos, n), lambda: ref.embedding_grad(grad, gpos, n), t_grad),
    ]


def rope_cases(quick: bool) -> List[Case]:
    import posenc
    from posenc import reference as ref

    seq = 1024 if quick else 4096
    x = np.random.default_rng(0).standard_normal((1, seq, 32, 128), dtype=np.float32)
    d = np.random.default_rng(1).standard_normal((32, 1, 32, 128), dtype=np.float32)
    pos = (np.arange(32) * 997 + 100)[:, None]
    torch = _torch()
    t_neox: Optional[Callable[[], object]] = None
    t_gptj: Optional[Callable[[], object]] = None
    t_decode: Optional[Callable[[], object]] = None
    if torch is not None:  # Hugging Face's recipe: cos/sin from inv_freq each call, then rotate_half / every-two
        x_t, d_t = torch.from_numpy(x), torch.from_numpy(d)
        inv_freq = torch.from_numpy(ref.rope_inv_freq(128)[0]).float()

        def rotate(t: Any, positions: Any, interleaved: bool) -> object:
            freqs = positions.float()[..., None] * inv_freq  # [..., seq, 64]
            if interleaved:
                cos, sin = freqs.cos().repeat_interleave(2, -1), freqs.sin().repeat_interleave(2, -1)
                u, v = t[..., 0::2], t[..., 1::2]
                turned = torch.stack((-v, u), -1).flatten(-2)
            else:
                cos, sin = torch.cat((freqs, freqs), -1).cos(), torch.cat((freqs, freqs), -1).sin()
                turned = torch.cat((-t[..., 64:], t[..., :64]), -1)
            cos, sin = cos[..., None, :], sin[..., None, :]  # over heads
            return t.copy_(t * cos + turned * sin)

        seq_pos, decode_pos = torch.arange(seq), torch.from_numpy(pos)
        t_neox = lambda: rotate(x_t, seq_pos, False)
        t_gptj = lambda: rotate(x_t, seq_pos, True)
        t_decode = lambda: rotate(d_t, decode_pos, False)
    return [
        Case(f"apply_rope {list(x.shape)} in place", "rmw", 2 * x.nbytes,
             lambda: posenc.apply_rope(x, out=x), lambda: ref.apply_rope(x, out=x), t_neox),
        Case(f"apply_rope {list(x.shape)} GPT-J in place", "rmw", 2 * x.nbytes,
             lambda: posenc.apply_rope(x, interleaved=True, out=x), lambda: ref.apply_rope(x, interleaved=True, out=x),
             t_gptj),
        Case("apply_rope decode [32, 1, 32, 128] per-batch", "rmw", 2 * d.nbytes,
             lambda: posenc.apply_rope(d, pos, out=d), lambda: ref.apply_rope(d, pos, out=d), t_decode),
    ]


# Families add their cases here.
CASE_FACTORIES: List[Callable[[bool], List[Case]]] = [sinusoidal_cases]
CASE_FACTORIES.append(learned_cases)
CASE_FACTORIES.append(rope_cases)


class _Progress:
    """A one-line status on stderr while a case runs (only when stderr is a terminal)."""

    def __init__(self, total: int, enabled: Optional[bool] = None) -> None:
        self.total, self.start = total, time.perf_counter()
        self.enabled = sys.stderr.isatty() if enabled is None else enabled

    def show(self, index: int, name: str, phase: str) -> None:
        if self.enabled:
            elapsed = time.perf_counter() - self.start
            line = f"[{index}/{self.total}] {name}: {phase}  ({elapsed:.0f}s)"
            print(f"\r{line[:100]:100s}", end="", file=sys.stderr, flush=True)

    def clear(self) -> None:
        if self.enabled:
            print(f"\r{'':100s}\r", end="", file=sys.stderr, flush=True)


def run(
    quick: bool = False,
    repeat: int = 10,
    only: Optional[str] = None,
    stream: TextIO = sys.stdout,
    progress: Optional[bool] = None,
    torch: bool = True,
) -> List[Dict[str, Any]]:
    """Time every case; print one row per case to ``stream``; return the rows as dicts.

    Columns: milliseconds of posenc (native backend), the NumPy reference and
    PyTorch (``-`` when not installed or the case has no PyTorch twin), the
    speed-up over the reference, posenc's throughput in GB/s and its share of
    the memory ceiling that bounds the operation.
    """
    import posenc

    info = posenc.info()
    torch_mod = _torch() if torch else None
    torch_note = f"torch={torch_mod.__version__} ({torch_mod.get_num_threads()} threads)" if torch_mod else "torch=absent"
    print(f"posenc {info['version']}  backend={info['backend']}  isa={info['isa']}  threads={info['threads']}  "
          f"{torch_note}", file=stream)
    cases = [c for factory in CASE_FACTORIES for c in factory(quick) if only is None or only in c.name]
    results: List[Dict[str, Any]] = []
    width = max([44] + [len(c.name) for c in cases])
    print(f"{'case':{width}s} {'posenc ms':>10s} {'ref ms':>10s} {'torch ms':>9s} {'vs ref':>7s} "
          f"{'GB/s':>6s} {'of ceiling':>16s}", file=stream)
    bar = _Progress(len(cases), progress)
    for i, case in enumerate(cases, 1):
        bar.show(i, case.name, "memory ceiling")
        ceiling = ceilings(case.nbytes if case.ceiling != "rmw" else case.nbytes // 2, repeat)[case.ceiling]
        bar.show(i, case.name, "posenc")
        t_native = best_time(case.native, repeat)
        bar.show(i, case.name, "reference")
        t_ref = best_time(case.reference, max(2, repeat // 4))
        t_torch = None
        if torch_mod is not None and case.torch is not None:
            bar.show(i, case.name, "torch")
            t_torch = best_time(case.torch, repeat)
        bar.clear()
        rate = case.nbytes / t_native
        results.append(dict(case=case.name, native_s=t_native, reference_s=t_ref, torch_s=t_torch,
                            bytes_per_s=rate, ceiling=case.ceiling, ceiling_bytes_per_s=ceiling))
        torch_ms = f"{t_torch * 1e3:9.3f}" if t_torch is not None else f"{'-':>9s}"
        print(f"{case.name:{width}s} {t_native * 1e3:10.3f} {t_ref * 1e3:10.3f} {torch_ms} {t_ref / t_native:6.1f}x "
              f"{rate / 1e9:6.1f} {rate / ceiling:6.0%} of {case.ceiling:5s}", file=stream, flush=True)
    return results

from ._bench_relative import relative_cases  # noqa: E402  (needs Case, defined above)
CASE_FACTORIES.append(relative_cases)
