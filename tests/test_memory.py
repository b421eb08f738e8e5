"""Memory: in-place kernels allocate nothing proportional to their input; no leaks across calls.

Each measurement runs in a fresh subprocess so that earlier tests' allocations
do not blur it:
- peak resident memory (VmHWM in /proc/self/status) before and after an
  in-place call on a 256 MiB input that is already resident: the increase
  counts every allocation, native (C++ scratch) or NumPy, that was touched;
- tracemalloc's peak during the call: every NumPy allocation, touched or not
  (an untouched np.empty would not show in VmHWM);
both must stay under 5% of the input. Leaks: RSS after warm-up, then after
10,000 more calls (errors included, which allocate exception objects), must
not grow by more than 1 MiB (a leak of 100 bytes per call shows).

Skipped under the sanitizer job (ASan's shadow memory and quarantine change
every figure) and without /proc.
"""

from __future__ import annotations

import json
import os

import pytest

import posenc

from conftest import NATIVE
from helpers import run_python

pytestmark = [
    pytest.mark.skipif(not NATIVE, reason="needs the compiled core"),
    pytest.mark.skipif(os.environ.get("POSENC_SANITIZED") == "1", reason="ASan changes memory figures"),
    pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc"),
]

MIB = 1 << 20
INPUT_BYTES = 256 * MIB

# name -> (setup creating `x` (the 256 MiB float32 input) and anything else, the in-place call)
IN_PLACE = {
    "add_sinusoidal": ("x = np.ones((16, 4096, 1024), np.float32)", "posenc.add_sinusoidal(x, offset=7, out=x)"),
    "apply_rope": ("x = np.ones((4096, 128, 128), np.float32)", "posenc.apply_rope(x, offset=7, out=x)"),
    "add_alibi": ("x = np.ones((16, 2048, 2048), np.float32)", "posenc.add_alibi(x, offset=5, out=x)"),
}


def _run(code: str) -> dict:
    r = run_python(code)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


_HELPERS = """
import json, tracemalloc, numpy as np, posenc
def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
"""


@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_in_place_kernels_allocate_no_input_sized_temporaries(name):
    if name not in posenc.__all__:
        pytest.skip(f"{name} is not exported yet")
    setup, call = IN_PLACE[name]
    got = _run(_HELPERS + f"""
{setup}
assert x.nbytes == {INPUT_BYTES}
{call.replace('x, ', 'x[:1, :8], ').replace('out=x', 'out=x[:1, :8]')}  # warm-up: caches, thread pool, code
hwm_before = status("VmHWM")
tracemalloc.start()
{call}
_, traced_peak = tracemalloc.get_traced_memory()
tracemalloc.stop()
print(json.dumps({{"hwm_increase": status("VmHWM") - hwm_before, "traced_peak": traced_peak}}))
""")
    limit = 0.05 * INPUT_BYTES
    print(f"[memory] {name}: peak RSS +{got['hwm_increase'] / MIB:.2f} MiB, NumPy peak {got['traced_peak'] / MIB:.3f} MiB "
          f"(limit {limit / MIB:.1f} MiB)")
    assert got["traced_peak"] < limit, f"{name}: NumPy allocated {got['traced_peak'] / MIB:.1f} MiB in the call"
    assert got["hwm_increase"] < limit, f"{name}: peak RSS grew by {got['hwm_increase'] / MIB:.1f} MiB in the call"


# Small calls of every kernel family that is exported, and a few that fail validation.
LEAK_CALLS = {
    "sinusoidal": "posenc.sinusoidal(pos, 64)",
    "add_sinusoidal": "posenc.add_sinusoidal(x, out=x)",
    "sinusoidal_2d": "posenc.sinusoidal_2d(4, 4, 8)",
    "apply_rope": "posenc.apply_rope(x4, out=x4)",
    "apply_rope_qk": "posenc.apply_rope_qk(x4, x4[:, :, :1])",
    "rope_cos_sin": "posenc.rope_cos_sin(pos, 64)",
    "add_alibi": "posenc.add_alibi(x4, out=x4)",
    "t5_bias": "posenc.t5_bias(t5, 8, 16)",
    "t5_bucket": "posenc.t5_bucket(pos - 8)",
    "embedding_lookup": "posenc.embedding_lookup(table, pos % 32)",
    "embedding_add": "posenc.embedding_add(x, table, pos % 32)",
    "embedding_grad": "posenc.embedding_grad(x, np.stack([pos, pos]) % 32, 32)",
}
LEAK_ERRORS = [
    "posenc.sinusoidal(pos.astype(np.float64) * np.nan, 64)",
    "posenc.add_sinusoidal(x, out=x[::-1].copy()[:, :, :63])",
    "posenc.sinusoidal(5, 3)",
]


@pytest.mark.slow
def test_no_leaks_across_ten_thousand_calls():
    calls = [c for n, c in LEAK_CALLS.items() if n in posenc.__all__]
    got = _run(_HELPERS + f"""
import gc
pos = np.arange(16)
x = np.ones((2, 16, 64), np.float32)
x4 = np.ones((1, 16, 2, 64), np.float32)
table = np.ones((32, 64), np.float32)
t5 = np.ones((32, 8), np.float32)
calls = {calls!r}
errors = {LEAK_ERRORS!r}
def once():
    for c in calls:
        eval(c)
    for e in errors:
        try:
            eval(e)
        except (ValueError, TypeError, IndexError):
            pass
for _ in range(2000):
    once()
gc.collect()
before = status("VmRSS")
for _ in range(10000):
    once()
gc.collect()
print(json.dumps({{"growth": status("VmRSS") - before, "calls": 10000 * (len(calls) + len(errors))}}))
""")
    print(f"[memory] RSS growth over {got['calls']} calls: {got['growth'] / 1024:.0f} KiB")
    assert got["growth"] < MIB, f"RSS grew by {got['growth'] / 1024:.0f} KiB over {got['calls']} calls"
