"""The ``posenc`` command line: ``info``, ``table``, ``bench``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional

import numpy as np


def _info(args: argparse.Namespace) -> int:
    import posenc

    print(json.dumps(posenc.info(), indent=2))
    return 0


def _table(args: argparse.Namespace) -> int:
    import posenc

    if args.kind == "sinusoidal":
        table = posenc.sinusoidal(args.length, args.dim, base=args.base, dtype=args.dtype,
                                  interleaved=not args.split)
    elif args.kind == "sinusoidal_2d":
        table = posenc.sinusoidal_2d(args.length, args.width or args.length, args.dim, base=args.base, dtype=args.dtype)
    else:
        raise SystemExit(f"posenc table: unknown kind {args.kind!r}")
    np.save(args.output, table)
    print(f"wrote {args.output}: {args.kind} {list(table.shape)} {table.dtype}")
    return 0


def _bench(args: argparse.Namespace) -> int:
    from . import _bench

    _bench.run(quick=args.quick, repeat=args.repeat, only=args.only)
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="posenc", description="Transformer positional encodings for NumPy.")
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("info", help="version, ISA, threads and backend").set_defaults(run=_info)

    table = sub.add_parser("table", help="write an encoding table as .npy")
    table.add_argument("kind", choices=["sinusoidal", "sinusoidal_2d"])
    table.add_argument("--length", type=int, default=512, help="positions (or height)")
    table.add_argument("--width", type=int, default=None, help="width of a 2-D grid")
    table.add_argument("--dim", type=int, default=64)
    table.add_argument("--base", type=float, default=10000.0)
    table.add_argument("--dtype", default="float32")
    table.add_argument("--split", action="store_true", help="sines then cosines instead of interleaved")
    table.add_argument("-o", "--output", default="table.npy")
    table.set_defaults(run=_table)

    bench = sub.add_parser("bench", help="time every kernel against the reference")
    bench.add_argument("--quick", action="store_true", help="smaller sizes")
    bench.add_argument("--repeat", type=int, default=10)
    bench.add_argument("--only", default=None, help="only cases whose name contains this")
    bench.set_defaults(run=_bench)

    args = parser.parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
