"""``posenc plot KIND``: PNG figures of an encoding (matplotlib, the ``plot`` extra).

Figures, each its own PNG:

``heatmap``
    The encoding table: ``E[p, feature]`` for position vectors, the bias
    ``S[i, j]`` of a few heads for attention biases.
``similarity``
    Similarity against distance: the mean cosine similarity of ``E[p]`` and
    ``E[p + d]`` (for biases: the bias of a key ``d`` positions back, per head).
    The quantities are those of ``posenc compare``.
``spectrum``
    Rotary schemes only: the rotation frequency of every feature pair under
    each scaling scheme (none, linear, dynamic NTK, YaRN, Llama 3, LongRoPE)
    for the same model, against the wavelength of the original context.

``KIND`` ``all`` overlays every encoding's similarity curve in one figure.

Two 2-D kinds have the heatmap figure only (their positions are not a line):
``swin`` (Swin's relative position index and the bias of two heads of a
random table, window ``(7, 7)``: the Toeplitz-block-Toeplitz pattern) and
``detr`` (DETR's sine features of a batch of two images padded to one size:
the padding mask and a few y and x channels).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from . import _compare

KINDS: Dict[str, str] = {
    "sinusoidal": "sinusoidal",
    "sinusoidal-split": "sinusoidal split",
    "triangle": "triangle waves",
    "learned": "learned (init)",
    "rope": "RoPE",
    "alibi": "ALiBi",
    "t5": "T5 (init)",
}
FIGURES = ("heatmap", "similarity", "spectrum")
VISION_KINDS: Dict[str, str] = {
    "swin": "Swin relative position bias (window 7)",
    "detr": "DETR sine embedding (ragged padding mask)",
}


class MissingMatplotlib(RuntimeError):
    pass


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise MissingMatplotlib(
            "posenc plot needs matplotlib, which is not installed: pip install 'posenc[plot]' "
            "(or pip install matplotlib)"
        ) from None
    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt

    return plt


def _encoding(kind: str, settings: _compare.Settings) -> _compare.Encoding:
    name = KINDS[kind]
    return next(e for e in _compare.encodings(settings) if e.name == name)


def spectrum_schemes(dim: int, original: int = 2048, factor: float = 4.0) -> Dict[str, Optional[Dict[str, Any]]]:
    """One model (``dim``, trained on ``original`` positions) extended ``factor``× by each scheme."""
    half = dim // 2
    return {
        "none": None,
        "linear": {"type": "linear", "factor": factor},
        "dynamic NTK": {"type": "dynamic", "factor": factor, "original_max_position_embeddings": original,
                        "seq_len": int(factor * original)},
        "YaRN": {"type": "yarn", "factor": factor, "original_max_position_embeddings": original},
        "Llama 3": {"type": "llama3", "factor": factor, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                    "original_max_position_embeddings": original},
        "LongRoPE": {"type": "longrope", "short_factor": [1.0] * half,
                     "long_factor": list(np.linspace(1.0, factor, half)),
                     "original_max_position_embeddings": original, "factor": factor,
                     "seq_len": int(factor * original)},
    }


def _heatmap(plt: Any, enc: _compare.Encoding, s: _compare.Settings, path: Path) -> None:
    fig, axes = plt.subplots(1, 1 if enc.kind == "vector" else 3, figsize=(8, 4.5) if enc.kind == "vector" else (11, 3.6),
                             squeeze=False)
    if enc.kind == "vector":
        assert enc.vectors is not None
        table = enc.vectors(np.arange(s.length))
        image = axes[0, 0].imshow(table, aspect="auto", cmap="RdBu_r", vmin=-np.abs(table).max(),
                                  vmax=np.abs(table).max(), interpolation="nearest")
        axes[0, 0].set(xlabel="feature", ylabel="position", title=f"{enc.name}: E[position, feature]")
        fig.colorbar(image, ax=axes[0, 0])
    else:
        assert enc.bias is not None
        n = min(s.length, 64)
        bias = enc.bias(n, n, 0)
        if enc.causal:  # future keys are masked out in use: leave them blank
            bias = np.where(np.arange(n)[None, :] > np.arange(n)[:, None], np.nan, bias)
        for ax, head in zip(axes[0], (0, s.heads // 2, s.heads - 1)):
            image = ax.imshow(bias[head], cmap="viridis", interpolation="nearest")
            ax.set(xlabel="key j", ylabel="query i", title=f"head {head}")
            fig.colorbar(image, ax=ax, shrink=0.7)
        fig.suptitle(f"{enc.name}: bias S[i, j] added to attention logits" + (" (causal: j <= i)" if enc.causal else ""))
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def _similarity(plt: Any, encs: Sequence[_compare.Encoding], s: _compare.Settings, path: Path) -> None:
    vectors = [e for e in encs if e.kind == "vector"]
    biases = [e for e in encs if e.kind == "bias"]
    panels = [p for p in (vectors, biases) if p]
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4), squeeze=False)
    for ax, group in zip(axes[0], panels):
        for enc in group:
            result = _compare.Result(enc.name, enc.kind, enc.note)
            if enc.kind == "vector":
                _compare._measure_vectors(enc, s, result)
                ax.plot(result.similarity, label=enc.name, lw=1)
            else:
                _compare._measure_bias(enc, s, result)
                assert enc.bias is not None
                row = enc.bias(1, s.length, s.length - 1)[:, 0, ::-1]
                for head in range(row.shape[0]) if len(group) == 1 else ():
                    ax.plot(row[head], lw=0.8, label=f"head {head}")
                if len(group) > 1:
                    ax.plot(result.similarity, label=f"{enc.name} (mean over heads)", lw=1)
        kind = group[0].kind
        ax.set(xlabel="distance d (positions)",
               ylabel="mean cosine similarity of E[p], E[p+d]" if kind == "vector" else "bias of a key d back",
               title=(f"{group[0].name}: " if len(group) == 1 else "")
               + ("position vectors" if kind == "vector" else "attention biases"))
        ax.axhline(0, color="grey", lw=0.5)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def _spectrum(plt: Any, s: _compare.Settings, path: Path) -> None:
    import posenc

    dim, original, factor = 128, 2048, 4.0
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, scaling in spectrum_schemes(dim, original, factor).items():
        inv_freq, attention = posenc.rope_inv_freq(dim, scaling=scaling)
        suffix = f", attention ×{attention:.3f}" if attention != 1.0 else ""
        ax.semilogy(2 * np.pi / np.asarray(inv_freq), label=label + suffix, lw=1)
    ax.axhline(original, color="grey", ls="--", lw=0.8, label=f"trained length {original}")
    ax.axhline(factor * original, color="grey", ls=":", lw=0.8, label=f"target length {int(factor * original)}")
    ax.set(xlabel="feature pair i", ylabel="wavelength 2π/ω_i (positions)",
           title=f"RoPE frequencies by scaling scheme (head_dim {dim}, ×{factor:g})")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def _vision_heatmap(plt: Any, kind: str, path: Path) -> None:
    """The heatmap figure of a 2-D kind (``VISION_KINDS``)."""
    import posenc

    if kind == "swin":
        window = 7
        table = np.random.default_rng(0).standard_normal(((2 * window - 1) ** 2, 2)).astype(np.float32)
        panels = [(posenc.swin_relative_position_index(window), "relative_position_index[n1, n2]", "viridis"),
                  *[(b, f"bias of head {h} (random table)", "RdBu_r") for h, b in enumerate(posenc.swin_bias(table, window))]]
        labels = ("key token n2", "query token n1")
    else:
        valid = np.zeros((2, 24, 32), bool)
        valid[0, :18, :32] = True
        valid[1, :24, :20] = True
        pe = posenc.detr_sine(valid, num_pos_feats=16, normalize=True)
        panels = [(valid[1].astype(np.float32), "image 1: valid pixels", "gray"),
                  (pe[1, :, :, 0], "image 1: y feature 0", "RdBu_r"),
                  (pe[1, :, :, 16], "image 1: x feature 0", "RdBu_r"),
                  (pe[0, :, :, 16 + 6], "image 0: x feature 6", "RdBu_r")]
        labels = ("x (pixel column)", "y (pixel row)")
    fig, axes = plt.subplots(1, len(panels), figsize=(3.8 * len(panels), 3.6), squeeze=False)
    for ax, (image, title, cmap) in zip(axes[0], panels):
        im = ax.imshow(image, cmap=cmap, interpolation="nearest")
        ax.set(xlabel=labels[0], ylabel=labels[1], title=title)
        fig.colorbar(im, ax=ax, shrink=0.7)
    fig.suptitle(VISION_KINDS[kind])
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def _paths(output: Optional[str], kind: str, figures: Sequence[str]) -> Dict[str, Path]:
    """-o FILE names the file of a single figure; with several, each gets FILE's stem + _figure."""
    target = Path(output) if output else Path(f"{kind}.png")
    if target.suffix.lower() != ".png":
        target = target.with_name(target.name + ".png")
    if len(figures) == 1:
        return {figures[0]: target}
    return {f: target.with_name(f"{target.stem}_{f}.png") for f in figures}


def plot(kind: str, output: Optional[str] = None, figure: str = "all",
         settings: Optional[_compare.Settings] = None) -> List[Path]:
    """Write the figures of ``kind``; return their paths.

    Raises ``MissingMatplotlib`` without matplotlib, ``ValueError`` for an
    unknown kind or figure.
    """
    s = settings or _compare.Settings()
    if kind in VISION_KINDS:
        if figure not in ("heatmap", "all"):
            raise ValueError(f"KIND {kind!r} has the heatmap figure only, not {figure!r}")
        path = _paths(output, kind, ["heatmap"])["heatmap"]
        plt = _pyplot()
        path.parent.mkdir(parents=True, exist_ok=True)
        _vision_heatmap(plt, kind, path)
        return [path]
    if kind != "all" and kind not in KINDS:
        raise ValueError(f"KIND must be one of {', '.join(list(KINDS) + list(VISION_KINDS) + ['all'])}, got {kind!r}")
    rotary = kind in ("rope", "all")
    wanted = [f for f in FIGURES if f != "spectrum" or rotary] if figure == "all" else [figure]
    if figure not in FIGURES + ("all",):
        raise ValueError(f"figure must be one of {', '.join(FIGURES + ('all',))}, got {figure!r}")
    if "spectrum" in wanted and not rotary:
        raise ValueError(f"the spectrum figure is for rotary schemes (KIND rope), not {kind!r}")
    if kind == "all" and "heatmap" in wanted:
        wanted.remove("heatmap")  # one heatmap per encoding: ask for each KIND
    plt = _pyplot()
    encs = _compare.encodings(s) if kind == "all" else [_encoding(kind, s)]
    written = []
    for fig_name, path in _paths(output, kind, wanted).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if fig_name == "heatmap":
            _heatmap(plt, encs[0], s, path)
        elif fig_name == "similarity":
            _similarity(plt, encs, s, path)
        else:
            _spectrum(plt, s, path)
        written.append(path)
    return written
