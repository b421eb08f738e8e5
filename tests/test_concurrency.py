"""Threads and fork: kernels called from many Python threads at once (the GIL is released while
they run) agree with serial calls; set_num_threads in one thread does not disturb calls in
another; a process forked after (or during) multithreaded calls does not hang.

The kernel calls come from KERNEL_CALLS, one per public kernel; names not exported yet are
skipped, so each family is covered as soon as it lands.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict

import numpy as np
import pytest

import posenc

from conftest import NATIVE

pytestmark = pytest.mark.skipif(not NATIVE, reason="needs the compiled core")
# Under the ASan job one fork test hung once (120 s timeout, not reproduced in 2 retries nor in
# the plain build): a fork while an exiting OpenMP worker still frees memory can inherit ASan's
# allocator lock held, which glibc's own malloc resets at fork and ASan's does not. The plain
# runs (every CI test stage) cover fork; the sanitizer job skips it.
fork_tests = pytest.mark.skipif(not hasattr(os, "fork") or os.environ.get("POSENC_SANITIZED") == "1",
                                reason="needs fork (and not under ASan)")

_rng = np.random.default_rng(7)
# Shared, read-only inputs; large enough that the kernels go parallel (OpenMP) too.
X = _rng.standard_normal((4, 512, 8, 64)).astype(np.float32)  # [batch, seq, heads, head_dim]
SCORES = _rng.standard_normal((2, 8, 256, 256)).astype(np.float32)  # [batch, heads, q, k]
TABLE = _rng.standard_normal((2048, 64)).astype(np.float32)
POS = _rng.integers(0, 2048, size=(4, 512))
for _a in (X, SCORES, TABLE, POS):
    _a.flags.writeable = False

# name -> call(out) writing a private output and returning it.
KERNEL_CALLS: Dict[str, Callable[[Any], Any]] = {
    "sinusoidal": lambda out: posenc.sinusoidal(POS[0], 256, out=out),
    "add_sinusoidal": lambda out: posenc.add_sinusoidal(X.reshape(4, 512, 512), offset=3, out=out),
    "apply_rope": lambda out: posenc.apply_rope(X, offset=5, out=out),
    "add_alibi": lambda out: posenc.add_alibi(SCORES, out=out),
    "alibi_bias": lambda out: posenc.alibi_bias(8, 256, 256, out=out),
    "t5_bias": lambda out: posenc.t5_bias(TABLE[:32, :8], 256, 256, out=out),
    "add_t5_bias": lambda out: posenc.add_t5_bias(SCORES, TABLE[:32, :8], out=out),
    "embedding_lookup": lambda out: posenc.embedding_lookup(TABLE, POS, out=out),
    "embedding_add": lambda out: posenc.embedding_add(X.reshape(4, 512, 512)[..., :64], TABLE, POS[0], out=out),
}
AVAILABLE = {name: call for name, call in KERNEL_CALLS.items() if name in posenc.__all__}


def _serial() -> Dict[str, np.ndarray]:
    posenc.set_num_threads(1)
    try:
        return {name: np.array(call(None)) for name, call in AVAILABLE.items()}
    finally:
        posenc.set_num_threads(None)


def test_every_exported_kernel_is_exercised():
    # The families' in-place kernels must be in KERNEL_CALLS once exported.
    for name in ("apply_rope", "add_alibi", "add_sinusoidal", "add_t5_bias", "embedding_add"):
        if name in posenc.__all__:
            assert name in AVAILABLE


@pytest.mark.parametrize("workers", [4, 16])
def test_many_threads_agree_with_serial(workers):
    want = _serial()
    names = sorted(AVAILABLE) * 4

    def work(i: int):
        name = names[i % len(names)]
        out = np.full_like(want[name], np.nan)
        got = AVAILABLE[name](out)
        assert got is out
        return name, out

    with ThreadPoolExecutor(workers) as pool:
        for name, out in pool.map(work, range(len(names) * 2)):
            np.testing.assert_array_equal(out, want[name], err_msg=name)


def test_set_num_threads_from_another_thread_does_not_corrupt_calls():
    want = _serial()
    stop = threading.Event()

    def churn():
        n = 0
        while not stop.is_set():
            posenc.set_num_threads([1, 2, 3, None, 7][n % 5])
            n += 1

    changer = threading.Thread(target=churn)
    changer.start()
    try:
        def work(i: int):
            name = sorted(AVAILABLE)[i % len(AVAILABLE)]
            return name, AVAILABLE[name](None)

        with ThreadPoolExecutor(4) as pool:
            for name, got in pool.map(work, range(12 * len(AVAILABLE))):
                np.testing.assert_array_equal(got, want[name], err_msg=name)
    finally:
        stop.set()
        changer.join()
        posenc.set_num_threads(None)


def _python_progress_during_a_kernel() -> tuple:
    x = np.zeros((24, 2048, 512), np.float32)  # about a tenth of a second of add_sinusoidal
    running = threading.Event()
    stamps = []

    def spin():
        last = 0.0
        while running.is_set():
            now = time.perf_counter()
            if now - last > 1e-3:
                stamps.append(now)
                last = now

    running.set()
    t = threading.Thread(target=spin)
    t.start()
    try:
        time.sleep(0.01)
        enter = time.perf_counter()
        posenc.add_sinusoidal(x, out=x)
        leave = time.perf_counter()
    finally:
        running.clear()
        t.join()
    margin = 0.2 * (leave - enter)
    return leave - enter, [s for s in stamps if enter + margin < s < leave - margin]


def test_gil_is_released_while_a_kernel_runs():
    """A Python thread keeps running while another thread is inside a long kernel.

    With the GIL held for the whole call, the spinner could not take a single
    time stamp strictly inside the call. The kernel runs on one OpenMP thread
    so the spinner has a core; a few attempts absorb a machine busy elsewhere.
    """
    posenc.set_num_threads(1)
    try:
        for _ in range(3):
            took, inside = _python_progress_during_a_kernel()
            if inside:
                break
    finally:
        posenc.set_num_threads(None)
    assert took > 0.02, "the kernel was too quick to tell"
    assert inside, f"no Python progress during a {took:.3f} s kernel call"


def _run(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("POSENC_BACKEND", "POSENC_ISA")}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=env)


@fork_tests
def test_fork_after_multithreaded_calls_does_not_hang():
    r = _run(
        """
        import os, threading, numpy as np, posenc
        x = np.ones((4, 2048, 128), np.float32)
        def work():
            for _ in range(3):
                posenc.add_sinusoidal(x, offset=1)  # parallel regions from several Python threads
        threads = [threading.Thread(target=work) for _ in range(4)]
        [t.start() for t in threads]; [t.join() for t in threads]
        codes = []
        for _ in range(3):
            pid = os.fork()
            if pid == 0:
                y = posenc.add_sinusoidal(x, offset=1)
                ok = np.array_equal(y, posenc.add_sinusoidal(x[:1], offset=1)[0][None].repeat(4, 0))
                os._exit(0 if ok else 1)
            _, status = os.waitpid(pid, 0)
            codes.append(os.waitstatus_to_exitcode(status))
        print(codes)
        """
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[0, 0, 0]"


@fork_tests
def test_fork_while_another_thread_is_inside_a_kernel_does_not_hang():
    r = _run(
        """
        import os, threading, numpy as np, posenc
        x = np.ones((4, 2048, 128), np.float32)
        stop = threading.Event()
        def work():
            while not stop.is_set():
                posenc.add_sinusoidal(x, out=x)
        t = threading.Thread(target=work); t.start()
        codes = []
        for _ in range(5):
            pid = os.fork()
            if pid == 0:
                y = posenc.add_sinusoidal(np.zeros((2, 1000, 128), np.float32))
                os._exit(0 if y.shape == (2, 1000, 128) else 1)
            _, status = os.waitpid(pid, 0)
            codes.append(os.waitstatus_to_exitcode(status))
        stop.set(); t.join()
        print(codes)
        """
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[0, 0, 0, 0, 0]"


@fork_tests
def test_multiprocessing_fork_pool_after_parallel_call():
    r = _run(
        """
        import multiprocessing as mp, numpy as np, posenc
        posenc.sinusoidal(8000, 256)  # the OpenMP pool exists in the parent
        def f(n):
            return float(posenc.sinusoidal(4000, 128)[n].sum())
        with mp.get_context("fork").Pool(2) as pool:
            got = pool.map(f, range(6))
        want = [float(posenc.sinusoidal(4000, 128)[n].sum()) for n in range(6)]
        print(got == want)
        """
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True"
