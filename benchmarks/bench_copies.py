"""Copies: concat_positional against what a user writes instead.

posenc writes each result row whole in one pass (the learned family's row
gather, lookup_parts, which DETR's features and the grids use too); NumPy's two strided
assignments and PyTorch's ``torch.cat`` of x and the broadcast table are the
alternatives, with the fill ceiling of the result at posenc's thread count.
Ratios are read from one run:
``pytest benchmarks/bench_copies.py --benchmark-group-by=group``.
"""

from __future__ import annotations

import numpy as np
import pytest

import posenc
from posenc._bench import available_dtypes, cases

from conftest import torch

SHAPES = {"[4, 2048, 512] + [2048, 512]": ((4, 2048), 512, 512), "[32, 256, 256] + [256, 64]": ((32, 256), 256, 64)}
DTYPES = available_dtypes(["all"])  # bfloat16 only with ml_dtypes


@pytest.mark.parametrize("impl", ["posenc out=", "numpy assignments", "torch cat"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", list(SHAPES))
def test_concat_positional(benchmark, throughput, shape, dtype, impl):
    lead, dim, pe_dim = SHAPES[shape]
    dt = cases.dtype_of(dtype)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(lead + (dim,)).astype(dt)
    pe = rng.standard_normal((lead[-1], pe_dim)).astype(dt)
    out = np.empty(lead + (dim + pe_dim,), dt)
    benchmark.group = f"concat_positional {shape} {dtype}"
    if impl == "posenc out=":
        benchmark(posenc.concat_positional, x, pe, out=out)
    elif impl == "numpy assignments":
        def assign():
            out[..., :dim] = x
            out[..., dim:] = pe

        benchmark(assign)
    else:
        if torch is None:
            pytest.skip("PyTorch not installed")
        bits = {2: np.int16, 4: np.int32, 8: np.int64}[dt.itemsize]
        tdt = getattr(torch, dtype)
        tx, tpe = (torch.from_numpy(a.view(bits)).view(tdt) for a in (x, pe))
        tout = torch.empty(out.shape, dtype=tdt)
        benchmark(lambda: torch.cat([tx, tpe.expand(lead + (pe_dim,))], dim=-1, out=tout))
    throughput("fill", out.nbytes)
