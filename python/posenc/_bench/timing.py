"""Timing: interleaved best-of runs, and the memory ceilings measured beside them.

Other programs share the machine, so a single run says little. Every
function of a case (posenc, its ceiling, the baselines) is run in turn,
round after round, and each keeps its fastest time: a burst of load slows
one round of every function instead of all rounds of one of them.
"""

from __future__ import annotations

import itertools
import time
from typing import Any, Callable, Dict, Optional, Sequence, Union

import numpy as np

Timed = Callable[[], object]


def clock(threads: int) -> Callable[[], float]:
    """The clock to time with: with one thread every library works on the calling thread, and its
    CPU time leaves out the slices the machine gave to other programs (much less noise on a shared
    machine); with more, wall time, since the other threads' work counts."""
    return time.thread_time if threads == 1 else time.perf_counter


def measure(fns: Dict[str, Timed], repeat: int, budget: float = 2.0, pause: float = 0.002,
            reset: Union[None, Timed, Dict[str, Optional[Timed]]] = None,
            now: Callable[[], float] = time.perf_counter) -> Dict[str, float]:
    """Fastest time in seconds of each function, over up to ``repeat`` interleaved rounds.

    A function leaves the rotation once it has run ``repeat`` times or spent
    ``budget`` seconds (a slow baseline then runs a few times while posenc
    runs ``repeat`` times). Each function is run once first, untimed.

    Between two runs the thread sleeps ``pause`` seconds: OpenMP workers spin
    for a while after a parallel region, and PyTorch's pool and posenc's are
    two runtimes, so without the pause one library's spinning workers would
    steal the cores the next timed call needs.

    Each round starts one function further along, so that no function
    always follows the same one: in a fixed order, of three calls of the
    same float16 sinusoidal table or sum after a call of the baseline path,
    the first took 1.6-5.1% longer than the third (AMD EPYC Zen 4, 2
    threads, two runs each; rotations showed no consistent order).

    ``reset`` (untimed) runs before every run: in-place work restores its
    operand, so repeated adds do not drift the data toward infinity (float16
    overflows within a few hundred ALiBi adds, and a kernel's speed may
    depend on its data); a dict gives each function its own (functions on
    different operands: one case in each dtype). ``now`` is the clock (see
    ``clock``).
    """
    resets = reset if isinstance(reset, dict) else {name: reset for name in fns}

    def restore(name: str) -> None:
        fn = resets.get(name)
        if fn is not None:
            fn()

    best = {name: float("inf") for name in fns}
    spent = {name: 0.0 for name in fns}
    runs = {name: 0 for name in fns}
    for name, fn in fns.items():
        restore(name)
        fn()
    active = list(fns)
    for round_ in itertools.count():
        if not active:
            break
        start = round_ % len(active)
        for name in active[start:] + active[:start]:
            restore(name)
            time.sleep(pause)
            t0 = now()
            fns[name]()
            dt = now() - t0
            best[name] = min(best[name], dt)
            spent[name] += dt
            runs[name] += 1
            if runs[name] >= repeat or spent[name] > budget:
                active.remove(name)
    return best


def measure_by_runtime(groups: Sequence[Dict[str, Timed]], repeat: int, reset: Optional[Timed] = None,
                       now: Callable[[], float] = time.perf_counter) -> Dict[str, float]:
    """``measure`` once per group of functions, the functions of a group interleaved among themselves.

    A group is the functions run by one threading runtime (posenc's OpenMP,
    PyTorch's; NumPy's one thread). After a parallel region each runtime's
    workers spin before they sleep (libgomp's default: 300,000 spins,
    8-11 ms of CPU on an AMD EPYC Zen 4; posenc's: 3,000, 30-100 µs, see
    ``_backend.SPIN_COUNT``). A call that follows another runtime's then
    shares the cores with its spinning workers, which ``measure``'s short
    pause does not outlast: on an Intel Xeon (2 threads, apply_rope [1,
    2048, 32, 128] float32) posenc took 1.1-1.5 ms timed in one rotation with
    PyTorch's calls and 0.73-0.75 ms without them. Calls of one runtime find
    its workers spinning for them instead. The other way round, a long call
    on the calling thread alone leaves a pool's workers idle long enough to
    be slow to wake (why is a guess: their virtual CPUs parked): on that
    Xeon posenc's float16 NeoX and GPT-J rotations took 1.06-1.34 ms timed
    in one rotation with NumPy's (20-90 ms each) and 0.96-1.07 ms apart, and
    a 30 ms busy loop on the calling thread before each float16
    embedding_add [4, 2048, 1024] made it 1.4-1.6x slower.
    """
    best: Dict[str, float] = {}
    for fns in groups:
        if fns:
            best.update(measure(fns, repeat, reset=reset, now=now))
    return best


def per_call(fn: Timed, calls: int = 2000, repeat: int = 7) -> float:
    """Seconds per call of a fast function: the best of ``repeat`` loops of ``calls`` calls."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def _words(a: np.ndarray) -> Optional[np.ndarray]:
    """``a``'s memory as 8-byte words (None if it is not one contiguous, aligned block of them)."""
    if not a.flags.c_contiguous or a.nbytes % 8 or a.ctypes.data % 8:
        return None
    return a.reshape(-1).view(np.uint8).view(np.uint64)


def ceiling(kind: str, target: Any) -> Timed:
    """One pass of the memory ceiling ``kind`` with posenc's thread count.

    ``fill``: write every byte of the array ``target`` (an ``out=`` the kernel
    writes); ``rmw``: read and write back every byte of ``target`` unchanged
    (in-place work); ``alloc``: allocate ``target`` bytes and write them (a
    function returning a new array, first-touch page faults included);
    ``read+alloc``: read every byte of the array ``target[0]``, then the
    ``alloc`` pass of ``target[1]`` bytes (a function that reads an input of
    its own into its new result: ``embedding_grad`` reads twice the bytes it
    writes, ``resize_table`` half, and ``alloc`` alone counts only the
    result's). The two run one
    after the other; bound by memory, that is their bytes over the
    bandwidth, which a kernel streaming its input into its result shares too.
    Passes run on the widest path the CPU has, whatever path posenc's kernels
    are forced to.
    """
    from .._backend import native

    if kind == "alloc":
        return lambda: native.memory_pass(np.empty(max(int(target) // 8, 1), np.uint64), "fill")
    if kind == "read+alloc":
        source, result_bytes = target
        read, alloc = _pass(source, "read"), ceiling("alloc", result_bytes)
        return lambda: (read(), alloc())
    return _pass(target, {"fill": "fill", "rmw": "touch"}[kind])


def _pass(a: np.ndarray, mode: str) -> Timed:
    """native.memory_pass(mode) over the words of the array ``a``."""
    from .._backend import native

    words = _words(a)
    if words is None:
        raise ValueError("a ceiling buffer must be C-contiguous and 8-byte aligned")
    return lambda: native.memory_pass(words, mode)


def torch_module(wanted: bool = True) -> Any:
    """PyTorch when installed and wanted (the optional baseline columns), else None."""
    if not wanted:
        return None
    try:
        import torch
    except ImportError:
        return None
    return torch
