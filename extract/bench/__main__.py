"""``python -m extract.bench [--cases FILE | --fixtures DIR] [--target sm_90] [--reps N]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from extract.bench import DEFAULT_CASES, BenchConfig, run_bench
from schemas.argtypes import positive_int
from schemas.helptext import plain


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m extract.bench", description=plain(__doc__))
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES, help=f"cases file (default: {DEFAULT_CASES})")
    parser.add_argument(
        "--fixtures", type=Path, help="time the IR files in this directory instead of compiling (default: compile the cases)"
    )
    parser.add_argument("--target", default="sm_90", help="compile target of the cases (default: sm_90)")
    parser.add_argument("--reps", type=positive_int, default=7, help="extractions per graph, the median taken (default: 7)")
    parser.add_argument("--only", default="", help="comma-separated case names (default: every case)")
    args = parser.parse_args(argv)
    config = BenchConfig(
        cases_file=args.cases,
        fixtures=args.fixtures,
        target=args.target,
        reps=args.reps,
        only=tuple(name for name in args.only.split(",") if name),
    )
    run_bench(config)
    return 0


if __name__ == "__main__":
    sys.exit(main())
