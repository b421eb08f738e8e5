"""``posenc compare``: properties of the encodings, computed side by side.

Every number is computed here from the encodings posenc produces (nothing
is a quoted or asserted property). Two kinds of encoding are compared:

- *Position vectors* (sinusoidal in both layouts, a triangle-wave variant of
  the multi-frequency idea, a learned table at its random initialisation,
  RoPE, Qwen2-VL's 2-D vision RoPE along one row of patches): ``E[p]`` is the
  vector that stands for position ``p``. For RoPE it is a fixed unit query
  rotated to position ``p`` (``apply_rope``; ``apply_rope_nd`` at patch
  ``(0, p)`` for the 2-D one), the part of attention that carries the position.
- *Attention biases* (ALiBi, T5): the bias ``b_h(d)`` that head ``h`` adds to
  the logit of a key ``d`` positions before the query. These encode no
  absolute position, so "positions" below are relative distances ``d``.

The properties, for a training length ``L`` (``--length``):

``min dist``
    Uniqueness: the smallest Euclidean distance between the encodings of two
    different positions in ``[0, L)`` (vectors over heads for biases), divided
    by the encodings' mean norm so that scales compare. 0 means two
    positions cannot be told apart.
``decay``
    Whether similarity falls monotonically as distance grows, for distances
    in ``[0, L)``: the mean cosine similarity of ``E[p]`` and ``E[p + d]``
    (for biases, the head-averaged bias ``b(d)``). "no (d=9)" gives the first
    distance where it rises.
``shift``
    The relative property: whether one fixed linear map ``M_k`` sends every
    ``E[p]`` to ``E[p + k]``. Reported as the worst relative residual of the
    least-squares ``M_k`` over k in (1, 5, 37); ~1e-14 means exact. For biases:
    the largest ``|S[i + k, j + k] - S[i, j]|`` of the score bias (0: it
    depends on ``j - i`` alone).
``beyond L``
    Extrapolation to ``4L``: whether those positions are defined at all;
    ``min dist`` over ``[0, 4L)``; ``drift``, the largest change of the
    similarity-vs-distance profile measured beyond ``L`` against the one
    inside ``[0, L)`` (0: the geometry is the same past ``L``); and ``unseen``,
    how far the encodings of positions in ``[0, 4L)`` lie from every encoding
    a model trained on ``[0, L)`` has seen (the largest nearest-neighbour
    distance, divided by the mean norm; for a scaling scheme, against plain
    RoPE on ``[0, L)``). 0 means nothing new reaches the model up to ``4L``;
    large values are inputs it was never trained on.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, TextIO

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]

SHIFTS = (1, 5, 37)


@dataclass
class Settings:
    length: int = 512  # the training length L
    dim: int = 64
    heads: int = 8
    seed: int = 0


@dataclass
class Encoding:
    """One row of the comparison.

    ``vectors(positions)`` returns ``[n, dim]`` float64 (position-vector kinds);
    ``bias(q_len, k_len, offset)`` returns ``[heads, q, k]`` float64 (bias kinds).
    """

    name: str
    kind: str  # "vector" or "bias"
    note: str
    vectors: Optional[Callable[[NDArray[np.int64]], Array]] = None
    bias: Optional[Callable[[int, int, int], Array]] = None
    # What a model trained on [0, L) saw, when that differs from ``vectors`` (a scaling
    # scheme applied at inference to a model trained without it).
    trained: Optional[Callable[[NDArray[np.int64]], Array]] = None
    causal: bool = False  # a bias meant for keys j <= i only


@dataclass
class Result:
    name: str
    kind: str
    note: str
    min_dist: float = float("nan")
    decays: bool = False
    first_rise: Optional[int] = None
    shift_residual: float = float("nan")
    defined_beyond: bool = False
    beyond_note: str = ""
    min_dist_beyond: float = float("nan")
    drift: float = float("nan")
    unseen: float = float("nan")
    similarity: List[float] = field(default_factory=list)


def triangle(positions: NDArray[Any], dim: int, base: float = 10000.0) -> Array:
    """The multi-frequency idea with triangle waves instead of sin/cos (interleaved layout).

    ``tri(x) = (2/π)·arcsin(sin x)`` has the period, phase and range of
    ``sin x`` but is piecewise linear; its quarter-period shift stands in for
    the cosine. Same frequencies ``base^(-2i/dim)`` as the sinusoidal table.
    """
    omega = base ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)
    angles = np.asarray(positions, np.float64)[:, None] * omega
    out = np.empty((angles.shape[0], dim))
    out[:, 0::2] = (2 / np.pi) * np.arcsin(np.sin(angles))
    out[:, 1::2] = (2 / np.pi) * np.arcsin(np.cos(angles))
    return out


def encodings(s: Settings) -> List[Encoding]:
    """The encodings compared, in table order."""
    import posenc

    rng = np.random.default_rng(s.seed)
    query = np.ones(s.dim) / np.sqrt(s.dim)  # a fixed unit query: RoPE rotates it to each position

    def sinusoidal(interleaved: bool) -> Callable[[NDArray[np.int64]], Array]:
        return lambda p: np.asarray(posenc.sinusoidal(p, s.dim, interleaved=interleaved, dtype=np.float64))

    learned_state: Dict[str, Any] = {}

    def learned(p: NDArray[np.int64]) -> Array:
        if "table" not in learned_state:  # the table has L rows: a position >= L is an IndexError
            learned_state["table"] = posenc.LearnedPositionalEmbedding(s.length, s.dim, seed=s.seed, dtype=np.float64)
        return np.asarray(learned_state["table"].lookup(p), np.float64)

    yarn = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": s.length}

    def rope(p: NDArray[np.int64], scaling: Optional[Dict[str, Any]] = None) -> Array:
        x = np.broadcast_to(query, (p.shape[0], 1, s.dim)).copy()
        return np.asarray(posenc.apply_rope(x, p, scaling=scaling), np.float64)[:, 0, :]

    def vision_row(p: NDArray[np.int64]) -> Array:
        # Qwen2-VL's vision tower along one row of patches: coordinates (0, p); rows own the first half of the
        # pairs, columns the second, each with base^(-2i/(dim/2)) (features past 4·(dim // 4) pass through)
        half = 2 * (s.dim // 4)
        coords = np.stack([np.zeros_like(p), p], axis=-1)
        x = np.broadcast_to(query, (p.shape[0], 1, s.dim)).copy()
        return np.asarray(posenc.apply_rope_nd(x, coords, posenc.rope_axial_freqs((half, half))), np.float64)[:, 0, :]

    t5_table = rng.standard_normal((32, s.heads))  # T5's learned table at a random initialisation

    def alibi(q: int, k: int, offset: int) -> Array:
        return np.asarray(posenc.alibi_bias(s.heads, q, k, offset=offset, dtype=np.float64), np.float64)

    def t5(q: int, k: int, offset: int) -> Array:
        return np.asarray(posenc.t5_bias(t5_table, q, k, offset=offset), np.float64)

    deberta_table = rng.standard_normal((512, s.heads))  # DeBERTa's 2·att_span relative rows, random init

    def deberta(q: int, k: int, offset: int) -> Array:
        # DeBERTa v2/v3 c2p index: clamp(bucket(query - key) + att_span, 0, 2·att_span - 1), att_span 256
        index = np.clip(posenc.deberta_buckets(q, k, offset=offset) + 256, 0, 511)
        return np.ascontiguousarray(np.moveaxis(deberta_table[index], -1, 0))

    return [
        Encoding("sinusoidal", "vector", "sin/cos interleaved (Vaswani)", vectors=sinusoidal(True)),
        Encoding("sinusoidal split", "vector", "sines then cosines (Transformer-XL)",
                 vectors=sinusoidal(False)),
        Encoding("triangle waves", "vector", "same frequencies, piecewise-linear waves",
                 vectors=lambda p: triangle(p, s.dim)),
        Encoding("learned (init)", "vector", "N(0, 0.02²) table of L rows",
                 vectors=learned),
        Encoding("RoPE", "vector", "unit query rotated to p (base 10000)", vectors=rope),
        Encoding("RoPE + YaRN x4", "vector",
                 "YaRN (factor 4, original length L) at inference on a model trained with plain RoPE",
                 vectors=lambda p: rope(p, yarn), trained=rope),
        Encoding("Qwen2-VL vision (a row)", "vector",
                 "2-D RoPE, unit query at patch (0, p): column pairs rotate, row pairs stay", vectors=vision_row),
        Encoding("ALiBi", "bias", f"{s.heads} heads, causal", bias=alibi, causal=True),
        Encoding("T5 (init)", "bias", f"32 buckets, max_distance 128, N(0, 1) table, {s.heads} heads",
                 bias=t5),
        Encoding("DeBERTa (init)", "bias",
                 f"log buckets (256, 512) into an N(0, 1) [512, {s.heads}] table (its c2p index)", bias=deberta),
    ]


def _min_pairwise(vectors: Array) -> float:
    """Smallest distance between two different rows (via the Gram matrix, exact enough at these sizes)."""
    sq = np.einsum("ij,ij->i", vectors, vectors)
    d2 = sq[:, None] + sq[None, :] - 2.0 * (vectors @ vectors.T)
    np.fill_diagonal(d2, np.inf)
    i, j = np.unravel_index(np.argmin(d2), d2.shape)
    return float(np.linalg.norm(vectors[i] - vectors[j]))  # recomputed directly: no cancellation


def _mean_norm(vectors: Array) -> float:
    return float(np.mean(np.linalg.norm(vectors, axis=1)))


def _unseen(seen: Array, new: Array) -> float:
    """Largest distance from a row of ``new`` to its nearest row of ``seen``."""
    d2 = (np.einsum("ij,ij->i", new, new)[:, None] + np.einsum("ij,ij->i", seen, seen)[None, :]
          - 2.0 * (new @ seen.T))
    return float(np.sqrt(max(float(np.max(np.min(d2, axis=1))), 0.0)))


def _cosine_profile(vectors: Array, first: int, last: int, span: int) -> Array:
    """Mean cosine similarity of rows p and p + d for p, p + d in [first, last), d in [0, span)."""
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-300)
    block = unit[first:last]
    return np.array([np.mean(np.einsum("ij,ij->i", block[: block.shape[0] - d], block[d:])) for d in range(span)])


def _decay(profile: Array) -> Optional[int]:
    """The first distance where the profile rises (None: monotonically non-increasing)."""
    rises = np.nonzero(np.diff(profile) > 1e-12 * max(1.0, float(np.abs(profile).max())))[0]
    return int(rises[0]) + 1 if rises.size else None


def _shift_residual(vectors: Array) -> float:
    """Worst relative residual of the least-squares linear map E[p] -> E[p + k]."""
    worst = 0.0
    for k in (k for k in SHIFTS if k < vectors.shape[0] // 2):
        a, b = vectors[:-k], vectors[k:]
        m, *_ = np.linalg.lstsq(a, b, rcond=None)
        worst = max(worst, float(np.linalg.norm(a @ m - b) / np.linalg.norm(b)))
    return worst


def _measure_vectors(enc: Encoding, s: Settings, result: Result) -> None:
    assert enc.vectors is not None
    length = s.length
    inside = enc.vectors(np.arange(length))
    norm = _mean_norm(inside)
    result.min_dist = _min_pairwise(inside) / norm
    profile = _cosine_profile(inside, 0, length, length)
    result.similarity = [float(v) for v in profile]
    result.first_rise = _decay(profile)
    result.decays = result.first_rise is None
    result.shift_residual = _shift_residual(inside)
    try:
        extended = enc.vectors(np.arange(4 * length))
    except (IndexError, ValueError) as exc:
        result.beyond_note = type(exc).__name__
        return
    result.defined_beyond = True
    result.min_dist_beyond = _min_pairwise(extended) / norm
    beyond = _cosine_profile(extended, length, 4 * length, length)
    result.drift = float(np.max(np.abs(beyond - profile)))
    seen = inside if enc.trained is None else enc.trained(np.arange(length))
    result.unseen = _unseen(seen, extended) / _mean_norm(seen)


def _measure_bias(enc: Encoding, s: Settings, result: Result) -> None:
    assert enc.bias is not None
    length = s.length
    # One query row at position 4L - 1 over keys [0, 4L): b[:, d] is the bias of a key d positions back.
    row = enc.bias(1, 4 * length, 4 * length - 1)[:, 0, ::-1]
    by_distance = np.ascontiguousarray(row.T)  # [4L, heads]
    norm = _mean_norm(by_distance[:length])
    result.min_dist = _min_pairwise(by_distance[:length]) / norm
    profile = row[:, :length].mean(axis=0)
    result.similarity = [float(v) for v in profile]
    result.first_rise = _decay(profile)
    result.decays = result.first_rise is None
    block = enc.bias(length, length, 0)
    result.shift_residual = max(float(np.max(np.abs(block[:, k:, k:] - block[:, :-k, :-k])))
                                for k in SHIFTS if k < length)
    result.defined_beyond = True
    result.min_dist_beyond = _min_pairwise(by_distance) / norm
    result.unseen = _unseen(by_distance[:length], by_distance[length:]) / norm
    q = min(64, length)
    within = enc.bias(q, length, length - q)
    past = enc.bias(q, 4 * length, 4 * length - q)[:, :, 3 * length:]
    result.drift = float(np.max(np.abs(past - within)))


def compare(settings: Optional[Settings] = None, only: Optional[Sequence[str]] = None) -> List[Result]:
    """Compute every property for every encoding."""
    s = settings or Settings()
    results = []
    for enc in encodings(s):
        if only and not any(o.lower() in enc.name.lower() for o in only):
            continue
        result = Result(enc.name, enc.kind, enc.note)
        if enc.kind == "vector":
            _measure_vectors(enc, s, result)
        else:
            _measure_bias(enc, s, result)
        results.append(result)
    return results


def _fmt(value: float) -> str:
    if np.isnan(value):
        return "-"
    if value == 0:
        return "0"
    return f"{value:.2g}" if abs(value) < 1e-2 else f"{value:.3f}"


def rows(results: Sequence[Result], length: int) -> List[List[str]]:
    header = ["encoding", "min dist", "decays", "shift residual", f"to {4 * length}",
              f"min dist <{4 * length}", "drift", "unseen"]
    out = [header]
    for r in results:
        decay = "yes" if r.decays else f"no (d={r.first_rise})"
        defined = "yes" if r.defined_beyond else f"no ({r.beyond_note})"
        out.append([r.name, _fmt(r.min_dist), decay, _fmt(r.shift_residual), defined, _fmt(r.min_dist_beyond),
                    _fmt(r.drift), _fmt(r.unseen)])
    return out


def render(table: List[List[str]], markdown: bool = False) -> str:
    widths = [max(len(row[c]) for row in table) for c in range(len(table[0]))]
    if markdown:
        lines = ["| " + " | ".join(cell for cell in row) + " |" for row in table]
        lines.insert(1, "|" + "|".join("---" for _ in widths) + "|")
        return "\n".join(lines)
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def run(settings: Settings, markdown: bool = False, as_json: bool = False, only: Optional[Sequence[str]] = None,
        stream: TextIO = sys.stdout) -> List[Result]:
    results = compare(settings, only)
    if as_json:
        print(json.dumps({"settings": asdict(settings), "results": [asdict(r) for r in results]}), file=stream)
        return results
    print(f"Trained length L = {settings.length}, dim = {settings.dim}, {settings.heads} heads (biases). "
          "min dist and unseen are relative to the mean norm;\ndefinitions: `python -m pydoc posenc._compare`.",
          file=stream)
    print(render(rows(results, settings.length), markdown), file=stream)
    for r in results:
        print(f"  {r.name}: {r.note}", file=stream)
    return results
