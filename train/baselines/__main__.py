"""``python -m train.baselines --data DIR [--out DIR] [--split family] [--seeds 5]``: every
baseline on seeded splits, the report printed (and written with --out)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console

from schemas import DatasetError
from schemas.argtypes import positive_int
from schemas.console import print_error
from train.baselines import BASELINES
from train.baselines.compare import CompareConfig, compare_baselines
from train.report import report_payload
from train.report_doc import build_report, print_report
from train.splits import SPLIT_KINDS
from train.tables import HARVEST_MODES, LEVELS


def parse_args(argv: list[str] | None = None) -> CompareConfig:
    parser = argparse.ArgumentParser(
        prog="python -m train.baselines",
        description="Every baseline on seeded splits of a dataset, judged like python -m "
        "train's models; the report is printed (and written with --out).",
    )
    parser.add_argument("--data", required=True, help="dataset directory or fsspec URL (required)")
    parser.add_argument(
        "--out", help="write metrics.json, report.md and plots here (default: only printed)"
    )
    parser.add_argument(
        "--split",
        choices=SPLIT_KINDS,
        default="family",
        help="what is held out (default family: whole families)",
    )
    parser.add_argument("--seeds", type=positive_int, default=5, help="splits 0..N-1 (default 5)")
    parser.add_argument(
        "--level",
        choices=LEVELS,
        default="ttgir",
        help="IR level of the graph counts (default ttgir)",
    )
    parser.add_argument(
        "--harvests",
        choices=HARVEST_MODES,
        default="latest",
        help="how repeated harvests of a run combine (default latest)",
    )
    parser.add_argument(
        "--models",
        default=",".join(BASELINES),
        help=f"comma-separated subset of {','.join(BASELINES)} (default all of them)",
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
    try:
        results = compare_baselines(config)
    except (DatasetError, ValueError) as exc:  # bad input or data it cannot split: one line
        print_error(Console(stderr=True), str(exc))
        return 2
    if config.out:  # the report as written, meta included
        payload = json.loads((Path(config.out) / "metrics.json").read_text())
    else:
        payload = report_payload(results, {"data": config.data}, title="Baselines")
    print_report(Console(), build_report(payload, config.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
