"""posenc inside a NumPy pipeline: steps of one posenc call and one BLAS matmul, as a layer runs them.

On few cores, posenc's OpenMP threads and NumPy's BLAS threads share the
cores, and each runtime's workers spin for a while after a call: a call of
one waits for the cores the other's workers spin on. A kernel timed alone
does not show this; a step does. Each round runs ``STEPS`` steps of
``[32, 4096] @ [4096, 512]`` float32 matmul and one of the cases of
``posenc bench`` (NeoX ``apply_rope`` in place, ``add_sinusoidal`` in
place), the case's operand restored before the round:

| row | step |
|---|---|
| `posenc` | posenc's call, then NumPy's matmul |
| `numpy` | the case's NumPy baseline (cached cos/sin or table), then NumPy's matmul |
| `torch` | the case's PyTorch baseline, then PyTorch's matmul (when PyTorch is installed) |

posenc loads its OpenMP runtime with a short spin (``posenc._backend.SPIN_COUNT``);
``GOMP_SPINCOUNT=300000 pytest benchmarks/bench_pipeline.py`` times libgomp's
own default instead. Threads: POSENC_BENCH_THREADS (default 2) for every
library (benchmarks/conftest.py).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pytest

from conftest import family_cases, torch

STEPS = 10
CASES = [("rope", "apply_rope"), ("sinusoidal", "add_sinusoidal")]


def _matmul(impl: str, quick: bool) -> Callable[[], object]:
    k, n = (1024, 256) if quick else (4096, 512)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((32, k), np.float32), rng.standard_normal((k, n), np.float32)
    if impl == "torch":
        at, bt = torch.from_numpy(a), torch.from_numpy(b)
        return lambda: at @ bt
    return lambda: a @ b


@pytest.mark.parametrize("impl", ["posenc", "numpy", "torch"])
@pytest.mark.parametrize("family,name", CASES, ids=[name for _, name in CASES])
def test_step_with_matmul(benchmark, quick, family, name, impl):
    if impl == "torch" and torch is None:
        pytest.skip("PyTorch absent")
    case = next(c for c in family_cases(family, "float32", quick) if c.kernel == name)
    call = case.posenc if impl == "posenc" else case.baselines.get(impl)
    if call is None:
        pytest.skip(f"no {impl} baseline for {name}")
    matmul = _matmul(impl, quick)

    def steps() -> None:
        for _ in range(STEPS):
            call()
            matmul()

    benchmark.group = f"{case.name} + matmul, {STEPS} steps"
    benchmark.extra_info.update(steps=STEPS)
    benchmark.pedantic(steps, setup=case.reset(), rounds=15, warmup_rounds=1)
