"""``python -m train.baselines --data DIR [--out DIR] [--split family] [--seeds 3]``: every
baseline on seeded splits, the report table printed (and written with --out)."""

from __future__ import annotations

import argparse
import sys

from schemas.argtypes import positive_int
from train.baselines import BASELINES
from train.baselines.compare import CompareConfig, compare_baselines
from train.report import markdown_table, summarize
from train.splits import SPLIT_KINDS
from train.tables import HARVEST_MODES, LEVELS


def parse_args(argv: list[str] | None = None) -> CompareConfig:
    parser = argparse.ArgumentParser(prog="python -m train.baselines", description=__doc__)
    parser.add_argument("--data", required=True, help="dataset directory or fsspec URL")
    parser.add_argument("--out", help="write metrics.json, report.md and plots here")
    parser.add_argument(
        "--split",
        choices=SPLIT_KINDS,
        default="family",
        help="what is held out (default: whole families)",
    )
    parser.add_argument("--seeds", type=positive_int, default=5, help="splits 0..N-1 (default 5)")
    parser.add_argument(
        "--level", choices=LEVELS, default="ttgir", help="IR level of the graph counts"
    )
    parser.add_argument(
        "--harvests", choices=HARVEST_MODES, default="latest", help="how repeated harvests combine"
    )
    parser.add_argument(
        "--models",
        default=",".join(BASELINES),
        help=f"comma-separated subset of {','.join(BASELINES)}",
    )
    args = parser.parse_args(argv)
    models = tuple(m for m in args.models.split(",") if m)
    unknown = [m for m in models if m not in BASELINES]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(BASELINES)}")
    return CompareConfig(
        args.data, args.out, args.split, args.seeds, args.level, args.harvests, models
    )


def main(argv: list[str] | None = None) -> int:
    config = parse_args(argv)
    summary = summarize(compare_baselines(config))
    for partition in ("val", "test"):
        if partition in summary.get(config.split, {}):
            print(f"\n{partition} ({config.split} split, {config.seeds} seed(s))")
            print(markdown_table(summary, partition, split_kind=config.split))
    return 0


if __name__ == "__main__":
    sys.exit(main())
