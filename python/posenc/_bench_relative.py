"""``posenc bench`` cases of the relative family (appended to ``_bench.CASE_FACTORIES``)."""

from __future__ import annotations

from typing import List

import numpy as np

from ._bench import Case


def relative_cases(quick: bool) -> List[Case]:
    import posenc
    from posenc import reference as ref

    n = 1024 if quick else 4096
    heads, q = (8, 1024) if quick else (32, 2048)
    buckets = np.empty((n, n), np.int32)
    scores = np.random.default_rng(0).standard_normal((1, heads, q, q), dtype=np.float32)
    table = np.random.default_rng(1).standard_normal((32, heads)).astype(np.float32)
    return [
        Case(f"t5_buckets({n}, {n}) new", "alloc", buckets.nbytes,
             lambda: posenc.t5_buckets(n, n), lambda: ref.t5_buckets(n, n)),
        Case(f"add_alibi {list(scores.shape)} in place", "rmw", 2 * scores.nbytes,
             lambda: posenc.add_alibi(scores, out=scores), lambda: ref.add_alibi(scores, out=scores)),
        Case(f"add_t5_bias {list(scores.shape)} in place", "rmw", 2 * scores.nbytes,
             lambda: posenc.add_t5_bias(scores, table, out=scores),
             lambda: ref.add_t5_bias(scores, table, out=scores)),
    ]
