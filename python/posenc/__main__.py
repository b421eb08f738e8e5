"""The ``posenc`` command line (also ``python -m posenc``).

Commands: ``info`` (what posenc runs on), ``table`` (write an encoding as
``.npy``), ``plot`` (PNG figures), ``compare`` (properties of the encodings
side by side), ``bench`` (every kernel against the NumPy reference and
PyTorch). ``posenc COMMAND --help`` describes each.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable, Dict, NamedTuple, Optional, Sequence

import numpy as np


class TableKind(NamedTuple):
    describe: str
    build: Callable[[Any, argparse.Namespace], Any]


def _scaling(args: argparse.Namespace) -> Optional[Dict[str, Any]]:
    return json.loads(args.scaling) if args.scaling else None


TABLES: Dict[str, TableKind] = {
    "sinusoidal": TableKind(
        "[length, dim] sin/cos (interleaved; --split: sines then cosines)",
        lambda pe, a: pe.sinusoidal(a.length, a.dim, base=a.base, dtype=a.dtype, interleaved=not a.split)),
    "sinusoidal_2d": TableKind(
        "[length, width, dim] image grid",
        lambda pe, a: pe.sinusoidal_2d(a.length, a.width or a.length, a.dim, base=a.base, dtype=a.dtype)),
    "sinusoidal_3d": TableKind(
        "[depth, length, width, dim] video/volume grid",
        lambda pe, a: pe.sinusoidal_3d(a.depth, a.length, a.width or a.length, a.dim, base=a.base, dtype=a.dtype)),
    "rope": TableKind(
        "[2, length, dim/2]: cos then sin of every rotation angle (--scaling JSON)",
        lambda pe, a: np.stack(pe.rope_cos_sin(a.length, a.dim, base=a.base, scaling=_scaling(a), dtype=a.dtype))),
    "rope_inv_freq": TableKind(
        "[dim/2] float64 frequencies of a scaling scheme (--scaling JSON)",
        lambda pe, a: pe.rope_inv_freq(a.dim, base=a.base, scaling=_scaling(a))[0]),
    "alibi": TableKind(
        "[heads, length, length] ALiBi bias (causal)",
        lambda pe, a: pe.alibi_bias(a.heads, a.length, a.length, dtype=a.dtype)),
    "t5_buckets": TableKind(
        "[length, length] int32 T5 bucket of every (query, key)",
        lambda pe, a: pe.t5_buckets(a.length, a.length)),
    "relative": TableKind(
        "[length, length] int64 key minus query position",
        lambda pe, a: pe.relative_positions(a.length, a.length)),
    "learned": TableKind(
        "[length, dim] learned table at its initialisation (--seed)",
        lambda pe, a: pe.LearnedPositionalEmbedding(a.length, a.dim, seed=a.seed, dtype=a.dtype).weight),
}


def _dtype(name: str) -> Any:
    """A dtype by name; "bfloat16" through ml_dtypes (the ``bfloat16`` extra)."""
    if name == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:
            raise SystemExit("posenc: bfloat16 needs ml_dtypes: pip install 'posenc[bfloat16]'") from None
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _info(args: argparse.Namespace) -> int:
    import posenc

    print(json.dumps(posenc.info(), indent=2))
    return 0


def _table(args: argparse.Namespace) -> int:
    import posenc

    table = np.asarray(TABLES[args.kind].build(posenc, args))
    np.save(args.output, table)
    print(f"wrote {args.output}: {args.kind} {list(table.shape)} {table.dtype}")
    return 0


def _plot(args: argparse.Namespace) -> int:
    from . import _compare, _plot

    settings = _compare.Settings(length=args.length, dim=args.dim, heads=args.heads)
    try:
        paths = _plot.plot(args.kind, args.output, args.figure, settings)
    except (_plot.MissingMatplotlib, ValueError) as exc:
        print(f"posenc plot: {exc}", file=sys.stderr)
        return 2
    for path in paths:
        print(f"wrote {path}")
    return 0


def _compare_cmd(args: argparse.Namespace) -> int:
    from . import _compare

    settings = _compare.Settings(length=args.length, dim=args.dim, heads=args.heads, seed=args.seed)
    _compare.run(settings, markdown=args.markdown, as_json=args.json, only=args.only)
    return 0


def _bench(args: argparse.Namespace) -> int:
    from . import _bench
    from ._backend import native

    if native is None:
        print("posenc bench: the compiled core is not available", file=sys.stderr)
        return 2
    if args.alternate_dtypes and args.isa in ("all", "alternate"):
        print(f"posenc bench: --alternate-dtypes times one path, not --isa {args.isa}", file=sys.stderr)
        return 2
    dtype = args.dtype or ("all" if args.alternate_dtypes else "float32")
    dtypes = [d.strip() for d in dtype.split(",")]
    try:
        _bench.available_dtypes(dtypes)
    except ValueError as exc:
        print(f"posenc bench: {exc}", file=sys.stderr)
        return 2
    if args.alternate_dtypes:
        if args.isa:
            native.select_isa(args.isa)
        results: Any = _bench.run_dtypes_alternated(quick=args.quick, repeat=args.repeat, only=args.only,
                                                    dtypes=dtypes, progress=False if args.no_progress else None)
    elif args.isa == "all":
        forwarded = ["--repeat", str(args.repeat), "--dtype", dtype] + (["--quick"] if args.quick else [])
        forwarded += ["--only", args.only] if args.only else []
        results = _bench.run_isas(forwarded, rounds=args.rounds)
    elif args.isa == "alternate":
        results = _bench.run_isas_alternated(quick=args.quick, repeat=args.repeat, only=args.only, dtypes=dtypes,
                                             progress=False if args.no_progress else None)
    else:
        if args.isa:
            native.select_isa(args.isa)
        results = _bench.run(quick=args.quick, repeat=args.repeat, only=args.only, torch=not args.no_torch,
                             progress=False if args.no_progress else None, dtypes=dtypes,
                             baselines=args.baselines != "none", small_calls=not args.no_small)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


def _encoding_size_arguments(command: argparse.ArgumentParser) -> None:
    """--length, --dim, --heads: the encodings that plot and compare measure (posenc._compare.Settings)."""
    command.add_argument("--length", type=int, default=512, help="the training length L (default 512)")
    command.add_argument("--dim", type=int, default=64)
    command.add_argument("--heads", type=int, default=8)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="posenc", description="Transformer positional encodings for NumPy.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("info", help="version, ISA, threads and backend").set_defaults(run=_info)

    kinds = "\n".join(f"  {name:14s} {k.describe}" for name, k in TABLES.items())
    table = sub.add_parser("table", help="write an encoding table as .npy", epilog="kinds:\n" + kinds,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    table.add_argument("kind", choices=list(TABLES), metavar="KIND")
    table.add_argument("--length", type=int, default=512, help="positions (or height of a grid); default 512")
    table.add_argument("--width", type=int, default=None, help="width of a grid (default: length)")
    table.add_argument("--depth", type=int, default=8, help="depth of a 3-D grid")
    table.add_argument("--dim", type=int, default=64)
    table.add_argument("--heads", type=int, default=8)
    table.add_argument("--base", type=float, default=10000.0)
    table.add_argument("--dtype", default="float32", type=_dtype, help="float32, float64, float16 or bfloat16")
    table.add_argument("--split", action="store_true", help="sines then cosines instead of interleaved")
    table.add_argument("--scaling", default=None, help='RoPE scaling as JSON, e.g. \'{"type": "linear", "factor": 4}\'')
    table.add_argument("--seed", type=int, default=0)
    table.add_argument("-o", "--output", default="table.npy")
    table.set_defaults(run=_table)

    from ._plot import FIGURES, KINDS, VISION_KINDS

    plot = sub.add_parser("plot", help="PNG figures: table heatmap, similarity vs distance, RoPE spectrum")
    plot.add_argument("kind", choices=list(KINDS) + list(VISION_KINDS) + ["all"], metavar="KIND",
                      help=f"one of {', '.join(list(KINDS) + list(VISION_KINDS))}, or all (every similarity "
                           "curve in one figure); swin and detr have the heatmap only")
    plot.add_argument("-o", "--output", default=None,
                      help="the PNG (several figures: FILE's stem + _heatmap/_similarity/_spectrum); default KIND.png")
    plot.add_argument("--figure", default="all", choices=list(FIGURES) + ["all"])
    _encoding_size_arguments(plot)
    plot.set_defaults(run=_plot)

    compare = sub.add_parser("compare", help="properties of the encodings side by side (computed)")
    _encoding_size_arguments(compare)
    compare.add_argument("--seed", type=int, default=0)
    compare.add_argument("--only", nargs="*", default=None, help="encodings whose name contains one of these")
    compare.add_argument("--markdown", action="store_true", help="a Markdown table")
    compare.add_argument("--json", action="store_true", help="every number as JSON")
    compare.set_defaults(run=_compare_cmd)

    bench = sub.add_parser("bench", help="time every kernel against its memory ceiling, NumPy and PyTorch")
    bench.add_argument("--quick", action="store_true", help="smaller sizes")
    bench.add_argument("--repeat", type=int, default=10, help="timed rounds per case (the best one counts)")
    bench.add_argument("--only", default=None, help="only cases whose name contains this ('small': small calls only)")
    bench.add_argument("--dtype", default=None,
                       help="comma-separated float32, float16, bfloat16, float64, or all (adds the dtype table); "
                            "default float32 (all with --alternate-dtypes)")
    bench.add_argument("--alternate-dtypes", action="store_true",
                       help="posenc alone, each case's dtypes switched call by call in one process (a slow phase "
                            "of a shared machine then slows every dtype alike): the dtype table only")
    bench.add_argument("--isa", default=None,
                       help="run on one path (baseline, avx2, avx512), or 'all': every path the CPU has, "
                            "each in its own process, and posenc's default, side by side, or 'alternate': "
                            "the same paths switched call by call in one process (a slow phase of a shared "
                            "machine then slows every path alike)")
    bench.add_argument("--rounds", type=int, default=1, help="with --isa all: sweeps, keeping each best time")
    bench.add_argument("--baselines", default="all", choices=["all", "none"], help="time NumPy/PyTorch too")
    bench.add_argument("--no-torch", action="store_true", help="skip the PyTorch columns")
    bench.add_argument("--no-small", action="store_true", help="skip the small-call table")
    bench.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    bench.add_argument("--json", default=None, metavar="FILE", help="also write the results as JSON")
    bench.set_defaults(run=_bench)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(None if argv is None else list(argv))
    result: int = args.run(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
