"""Every kernel of ``posenc bench`` under pytest-benchmark: posenc beside NumPy, PyTorch and Hugging Face.

The cases, their baselines (what users write: cached tables, BLOOM's
broadcast, PyTorch's complex-multiply RoPE) and ceilings are those of
``posenc bench`` (``python/posenc/_bench/cases.py``); one group per case and
dtype, one row per implementation. Compare the rows of one run:
``pytest benchmarks --benchmark-group-by=group --benchmark-columns=min,median``.
"""

from __future__ import annotations

import pytest

from posenc._bench import available_dtypes, cases

from conftest import family_cases, torch

IMPLS = ["posenc", *cases.BASELINES]
# Each family's kernels, named from a small build (the same list at every size and dtype).
KERNELS = [(f.__name__, i) for f in cases.FAMILIES for i in range(len(f(True, cases.dtype_of("float32"), None)))]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", available_dtypes(["all"]))
@pytest.mark.parametrize("family,index", KERNELS, ids=[f"{f}{i}" for f, i in KERNELS])
def test_kernel(benchmark, record, quick, family, index, dtype, impl):
    built = family_cases(family, dtype, quick)
    if index >= len(built):
        pytest.skip(f"{family} has no case {index} at {dtype}")
    case = built[index]
    benchmark.group = f"{case.name} {case.dtype}"
    fn = case.posenc if impl == "posenc" else case.baselines.get(impl)
    if fn is None:
        pytest.skip(f"no {impl} baseline here" + ("" if torch is not None or impl == "numpy" else " (PyTorch absent)"))
    reset = case.reset()  # in place: every round starts from the same operand
    rounds = 15 if impl == "posenc" else 3
    benchmark.pedantic(fn, setup=reset, rounds=rounds, warmup_rounds=1)
    if impl == "posenc":
        record(case)
