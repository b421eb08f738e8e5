"""Relative positions: T5 buckets, T5 bias and ALiBi added into scores, against the reference, NumPy and PyTorch.

Every output here depends on j - i only, so posenc builds one lookup row per
head and streams rows out of it; the ceilings are the memory ceilings of
conftest.py measured in the same run: ``alloc`` for functions that return a
new array, ``rmw`` for in-place adds into scores. Ratios are read from one
run: ``pytest benchmarks/bench_relative.py --benchmark-group-by=group``.

Targets (issue): t5_buckets(4096, 4096) >= 60% of alloc, >= 25x the NumPy
formula, >= 50x the Hugging Face PyTorch function; add_alibi / add_t5_bias in
place on [1, 32, 2048, 2048] float32 >= 80% of rmw.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import posenc
from posenc import reference

from conftest import torch

Q = K = 4096
SCORES = (1, 32, 2048, 2048)


def numpy_buckets(q, k, num_buckets=32, max_distance=128):
    """The T5 formula as a NumPy port writes it (bidirectional, float32 log, over the full matrix)."""
    rp = np.arange(k)[None, :] - np.arange(q)[:, None]
    nb = num_buckets // 2
    ret = (rp > 0).astype(np.int64) * nb
    n = np.abs(rp)
    max_exact = nb // 2
    with np.errstate(divide="ignore", invalid="ignore"):  # log(0) for the exact range, masked below
        large = max_exact + (
            np.log(n.astype(np.float32) / max_exact) / np.float32(math.log(max_distance / max_exact)) * (nb - max_exact)
        ).astype(np.int64)
    large = np.minimum(large, nb - 1)
    return (ret + np.where(n < max_exact, n, large)).astype(np.int32)


def torch_buckets(q, k, num_buckets=32, max_distance=128):
    """Hugging Face T5Attention._relative_position_bucket on the full [q, k] matrix (as compute_bias calls it)."""
    try:
        from transformers.models.t5.modeling_t5 import T5Attention

        bucket = T5Attention._relative_position_bucket
    except ImportError:  # the same function, verbatim, in tests/test_relative.py
        import sys
        import pathlib

        sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "tests"))
        from test_relative import hf_bucket as bucket
    rp = torch.arange(k)[None, :] - torch.arange(q)[:, None]
    return bucket(rp, True, num_buckets, max_distance)


@pytest.mark.benchmark(group="t5_buckets(4096, 4096) int32")
@pytest.mark.parametrize("impl", ["posenc new", "posenc out=", "reference", "numpy formula", "torch (Hugging Face)"])
def test_t5_buckets(benchmark, throughput, impl):
    nbytes = Q * K * 4
    if impl == "posenc new":
        benchmark(posenc.t5_buckets, Q, K)
        throughput("alloc", nbytes)
    elif impl == "posenc out=":
        out = np.empty((Q, K), np.int32)
        benchmark(posenc.t5_buckets, Q, K, out=out)
        throughput("fill", nbytes)
    elif impl == "reference":
        benchmark.pedantic(reference.t5_buckets, (Q, K), rounds=2)
        throughput("alloc", nbytes)
    elif impl == "numpy formula":
        benchmark.pedantic(numpy_buckets, (Q, K), rounds=2)
        throughput("alloc", nbytes)
    else:
        if torch is None:
            pytest.skip("PyTorch not installed")
        benchmark.pedantic(torch_buckets, (Q, K), rounds=2)
        throughput("alloc", nbytes)


def torch_deberta_buckets(q, k):
    """Transformers' DeBERTa v2/v3 build_relative_position (make_log_bucket_position over the full matrix)."""
    from transformers.models.deberta_v2.modeling_deberta_v2 import build_relative_position

    return build_relative_position(torch.zeros(q, 1), torch.zeros(k, 1), bucket_size=256, max_position=512)


# Target (issue 15): >= 0.6 of alloc, >= 25x Transformers' function in PyTorch (2 threads).
@pytest.mark.benchmark(group="deberta_buckets(4096, 4096) int64")
@pytest.mark.parametrize("impl", ["posenc new", "posenc out=", "reference", "torch (Transformers)"])
def test_deberta_buckets(benchmark, throughput, impl):
    nbytes = Q * K * 8
    if impl == "posenc new":
        benchmark(posenc.deberta_buckets, Q, K)
        throughput("alloc", nbytes)
    elif impl == "posenc out=":
        out = np.empty((Q, K), np.int64)
        benchmark(posenc.deberta_buckets, Q, K, out=out)
        throughput("fill", nbytes)
    elif impl == "reference":
        benchmark.pedantic(reference.deberta_buckets, (Q, K), rounds=2)
        throughput("alloc", nbytes)
    else:
        if torch is None:
            pytest.skip("PyTorch not installed")
        pytest.importorskip("transformers")
        benchmark.pedantic(torch_deberta_buckets, (Q, K), rounds=2)
        throughput("alloc", nbytes)


def _scores():
    return np.random.default_rng(0).standard_normal(SCORES, dtype=np.float32)


def numpy_alibi_add(scores):
    """What a NumPy port writes: build the [heads, q, k] bias from the formula, then add."""
    heads, q, k = scores.shape[-3:]
    slopes = posenc.alibi_slopes(heads)
    rel = (np.arange(k)[None, :] - np.arange(q)[:, None]).astype(np.float32)
    scores += slopes[:, None, None] * rel
    return scores


@pytest.mark.benchmark(group="add_alibi [1, 32, 2048, 2048] float32 in place")
@pytest.mark.parametrize("impl", ["posenc in place", "reference", "numpy formula", "torch"])
def test_add_alibi(benchmark, throughput, impl):
    scores = _scores()
    if impl == "posenc in place":
        benchmark(posenc.add_alibi, scores, out=scores)
    elif impl == "reference":
        benchmark.pedantic(reference.add_alibi, (scores,), dict(out=scores), rounds=1)
    elif impl == "numpy formula":
        benchmark.pedantic(numpy_alibi_add, (scores,), rounds=3)
    else:
        if torch is None:
            pytest.skip("PyTorch not installed")
        t = torch.from_numpy(scores)
        heads, q, k = SCORES[1:]
        slopes = torch.from_numpy(posenc.alibi_slopes(heads))

        def run():
            rel = (torch.arange(k)[None, :] - torch.arange(q)[:, None]).float()
            return t.add_(slopes[:, None, None] * rel)

        benchmark.pedantic(run, rounds=3)
    throughput("rmw", scores.nbytes)


@pytest.mark.benchmark(group="add_t5_bias [1, 32, 2048, 2048] float32 in place")
@pytest.mark.parametrize("impl", ["posenc in place", "reference", "numpy formula", "torch (Hugging Face)"])
def test_add_t5_bias(benchmark, throughput, impl):
    scores = _scores()
    heads, q, k = SCORES[1:]
    table = np.random.default_rng(1).standard_normal((32, heads)).astype(np.float32)
    if impl == "posenc in place":
        benchmark(posenc.add_t5_bias, scores, table, out=scores)
    elif impl == "reference":
        benchmark.pedantic(reference.add_t5_bias, (scores, table), dict(out=scores), rounds=1)
    elif impl == "numpy formula":
        benchmark.pedantic(lambda: np.add(scores, np.moveaxis(table[numpy_buckets(q, k)], -1, 0), out=scores),
                           rounds=3)
    else:
        if torch is None:
            pytest.skip("PyTorch not installed")
        t = torch.from_numpy(scores)
        emb = torch.from_numpy(table)

        def run():  # T5Attention.compute_bias, then the add
            return t.add_(emb[torch_buckets(q, k)].permute(2, 0, 1))

        benchmark.pedantic(run, rounds=3)
    throughput("rmw", scores.nbytes)


@pytest.mark.benchmark(group="alibi_bias / t5_bias [32, 2048, 2048] float32 new")
@pytest.mark.parametrize("impl", ["alibi_bias", "t5_bias"])
def test_bias_tables(benchmark, throughput, impl):
    heads, q, k = SCORES[1:]
    if impl == "alibi_bias":
        benchmark(posenc.alibi_bias, heads, q, k)
    else:
        table = np.random.default_rng(1).standard_normal((32, heads)).astype(np.float32)
        benchmark(posenc.t5_bias, table, q, k)
    throughput("alloc", heads * q * k * 4)
