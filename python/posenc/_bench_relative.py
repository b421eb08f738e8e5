"""``posenc bench`` cases of the relative family (appended to ``_bench.CASE_FACTORIES``)."""

from __future__ import annotations

from typing import Any, Callable, List, Optional

import numpy as np

from ._bench import Case, _torch


def relative_cases(quick: bool) -> List[Case]:
    import posenc
    from posenc import reference as ref

    n = 1024 if quick else 4096
    heads, q = (8, 1024) if quick else (32, 2048)
    buckets = np.empty((n, n), np.int32)
    scores = np.random.default_rng(0).standard_normal((1, heads, q, q), dtype=np.float32)
    table = np.random.default_rng(1).standard_normal((32, heads)).astype(np.float32)
    t_buckets: Optional[Callable[[], object]] = None
    t_alibi: Optional[Callable[[], object]] = None
    t_t5: Optional[Callable[[], object]] = None
    torch = _torch()
    if torch is not None:  # the usual PyTorch code: the full [q, k] distance matrix, then the formula
        scores_t, table_t = torch.from_numpy(scores), torch.from_numpy(table)
        slopes_t = torch.from_numpy(ref.alibi_slopes(heads))

        def t5_bucket(q_len: int, k_len: int) -> Any:  # Hugging Face's T5Attention._relative_position_bucket
            rel = torch.arange(k_len)[None, :] - torch.arange(q_len)[:, None]
            half, exact = 16, 8
            out = (rel > 0).long() * half
            rel = rel.abs()
            large = exact + (torch.log(rel.float() / exact) / np.log(128 / exact) * (half - exact)).long()
            return out + torch.where(rel < exact, rel, torch.clamp(large, max=half - 1))

        def alibi() -> object:
            rel = torch.arange(q)[None, :] - torch.arange(q)[:, None]
            return scores_t.add_(slopes_t[:, None, None] * rel)

        t_buckets = lambda: t5_bucket(n, n)  # noqa: E731
        t_alibi = alibi
        t_t5 = lambda: scores_t.add_(table_t[t5_bucket(q, q)].permute(2, 0, 1))  # noqa: E731
    return [
        Case(f"t5_buckets({n}, {n}) new", "alloc", buckets.nbytes,
             lambda: posenc.t5_buckets(n, n), lambda: ref.t5_buckets(n, n), t_buckets),
        Case(f"add_alibi {list(scores.shape)} in place", "rmw", 2 * scores.nbytes,
             lambda: posenc.add_alibi(scores, out=scores), lambda: ref.add_alibi(scores, out=scores), t_alibi),
        Case(f"add_t5_bias {list(scores.shape)} in place", "rmw", 2 * scores.nbytes,
             lambda: posenc.add_t5_bias(scores, table, out=scores),
             lambda: ref.add_t5_bias(scores, table, out=scores), t_t5),
    ]
