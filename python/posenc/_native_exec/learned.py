"""Native executors of the learned-table plans (kernels: cpp/src/learned.cpp and cpp/src/resample.cpp)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _api
from .._backend import native
from .._plans.learned import EmbeddingAdd, EmbeddingGrad, EmbeddingLookup, ResampleAxis, TableResize, run_steps
from ._memory import aligned, write


def rows(a: np.ndarray) -> np.ndarray:
    """``a`` with at least two axes (a single row gets a leading one), as the kernels take operands."""
    return a[np.newaxis] if a.ndim < 2 else a


@_api.native(EmbeddingLookup)
def lookup(plan: EmbeddingLookup) -> Any:
    table = aligned(plan.table)
    dest = write(plan.out, plan.shape, table.dtype,
                 lambda d: native.embedding_lookup(table, plan.positions, rows(d)))
    return _api.returned(plan.out, dest)


@_api.native(EmbeddingAdd)
def add(plan: EmbeddingAdd) -> Any:
    x, table = aligned(plan.x), aligned(plan.table)
    dest = write(plan.out, x.shape, x.dtype,
                 lambda d: native.embedding_add(rows(x), table, plan.positions, rows(d)))
    return _api.returned(plan.out, dest)


@_api.native(EmbeddingGrad)
def grad(plan: EmbeddingGrad) -> Any:
    result = np.empty(plan.shape, plan.grad.dtype)  # the kernel writes every element (zeros included)
    if result.size:
        native.embedding_grad(rows(aligned(plan.grad)), plan.positions, result)
    return result


def resample(values: np.ndarray, step: ResampleAxis) -> np.ndarray:
    """``values`` resampled along ``step.axis`` into a new C-contiguous array of ``step.dtype``."""
    src = np.ascontiguousarray(aligned(values))
    axis, out_size = step.axis, step.sources.shape[0]
    outer, inner = int(np.prod(src.shape[:axis])), int(np.prod(src.shape[axis + 1:]))
    dst = np.empty(src.shape[:axis] + (out_size,) + src.shape[axis + 1:], step.dtype)
    native.resample(src.reshape(outer, src.shape[axis], inner), dst.reshape(outer, out_size, inner),
                    step.sources, step.weights)
    return dst


@_api.native(TableResize)
def resize(plan: TableResize) -> Any:
    return run_steps(plan, resample)
