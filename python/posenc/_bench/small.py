"""Small calls: what a decode step pays per call, public function and compiled kernel alone.

A generated token calls these once per layer, on a handful of elements:
there the cost is the call itself. Each is timed three ways: through the
public function (its small-call lane, cpp/bindings/lane.hpp), through the
same function without the lane (``planned``: the Python layer's checks and
plan, then the executor), and as the bare kernel binding that path calls,
with the arguments it passed (recorded once). Reported in microseconds and
as a multiple of one NumPy ufunc call on a tiny array (``np.add`` of 8
float32, timed in turn with the case's calls).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from .timing import Timed, per_call


class SmallCase(NamedTuple):
    name: str
    public: Timed
    planned: Timed  # the same call without the small-call lane


def _case(name: str, function: Any, *args: Any, **kwargs: Any) -> SmallCase:
    return SmallCase(name, lambda: function(*args, **kwargs), lambda: function.planned(*args, **kwargs))


def cases(dtype: Any = np.float32) -> List[SmallCase]:
    """The calls of a decode step, on arrays of ``dtype`` (bfloat16 and float16 are what models decode in)."""
    import posenc

    x = np.ones((1, 1, 1, 128), dtype)
    q, k = np.ones((1, 1, 32, 128), dtype), np.ones((1, 1, 8, 128), dtype)
    pos = np.array([[4000]])
    scores = np.zeros((1, 1, 1, 8), dtype)
    h = np.ones((1, 1, 64), dtype)
    # A model's embedding (Llama 3's frequencies) on Hugging Face's [batch, heads, seq, head_dim].
    llama3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
              "original_max_position_embeddings": 8192}
    rope = posenc.RotaryEmbedding(128, base=500000.0, scaling=llama3)
    qh, kh = np.ones((1, 32, 1, 128), dtype), np.ones((1, 8, 1, 128), dtype)
    qk: Any = posenc.apply_rope_qk  # its `planned`: the same call without the lane
    embedding = SmallCase(
        "RotaryEmbedding(llama3) [1, 32, 1, 128] + [1, 8, 1, 128] seq_axis=-2, positions [[p]]",
        lambda: rope(qh, kh, pos, seq_axis=-2, out_q=qh, out_k=kh),
        lambda: qk.planned(qh, kh, pos, base=rope.base, inv_freq=rope.inv_freq,
                           attention_scaling=rope.attention_scaling, rotary_dim=rope.rotary_dim, seq_axis=-2,
                           out_q=qh, out_k=kh))
    return [
        _case("apply_rope [1, 1, 1, 128] offset=4000", posenc.apply_rope, x, offset=4000, out=x),
        _case("apply_rope_qk decode [1, 1, 32, 128] + [1, 1, 8, 128], positions [[p]]", posenc.apply_rope_qk, q, k,
              pos, out_q=q, out_k=k),
        _case("add_alibi [1, 1, 1, 8] offset=7", posenc.add_alibi, scores, offset=7, out=scores),
        _case("add_sinusoidal [1, 1, 64] offset=4000", posenc.add_sinusoidal, h, offset=4000, out=h),
        embedding,
    ]


def native_call(public: Timed) -> Optional[Timed]:
    """The compiled-kernel call(s) ``public`` makes, replayed with the same arguments (None if none).

    The module's functions are wrapped in place for one call (every executor
    reaches them as attributes of the one module object), then restored.
    """
    from .._backend import native

    calls: List[Tuple[Callable[..., Any], Tuple[Any, ...], Dict[str, Any]]] = []
    originals = {name: getattr(native, name) for name in dir(native)
                 if not name.startswith("_") and callable(getattr(native, name))}

    def recording(fn: Callable[..., Any]) -> Callable[..., Any]:
        def record(*args: Any, **kwargs: Any) -> Any:
            calls.append((fn, args, kwargs))
            return fn(*args, **kwargs)

        return record

    try:
        for name, fn in originals.items():
            setattr(native, name, recording(fn))
        public()
    finally:
        for name, fn in originals.items():
            setattr(native, name, fn)
    if not calls:
        return None

    def replay() -> None:
        for fn, args, kwargs in calls:
            fn(*args, **kwargs)

    return replay


def tiny_ufunc() -> Timed:
    """``np.add`` on 8 float32 into an existing array: the unit of the table."""
    a, b = np.ones(8, np.float32), np.empty(8, np.float32)
    return lambda: np.add(a, a, out=b)


def run(progress: Callable[[str], None], dtypes: Sequence[np.dtype] = (np.dtype(np.float32),),
        rounds: int = 7) -> List[Dict[str, Any]]:
    # Each case's calls and the unit are timed in turn, round after round, each keeping its best: on a
    # shared machine a busy moment then slows one round of each instead of the unit alone or the call
    # alone (either would skew the ratio). Each row has the unit measured beside it.
    rows = []
    unit = tiny_ufunc()
    for dtype, case in ((d, c) for d in dtypes for c in cases(d)):
        progress(f"{case.name} {dtype.name}")
        native = native_call(case.planned)
        timed = dict(ufunc_s=unit, public_s=case.public, planned_s=case.planned, native_s=native)
        best = {key: float("inf") for key, fn in timed.items() if fn is not None}
        for _ in range(rounds):
            for key in best:
                best[key] = min(best[key], per_call(timed[key], calls=1000, repeat=1))  # type: ignore[arg-type]
        rows.append({"case": case.name, "dtype": dtype.name, "native_s": None, **best})
    return rows
