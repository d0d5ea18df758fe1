"""``python -m corpus.bench harvest``: harvest throughput figures (see corpus/bench/harvest.py)."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from corpus.bench.harvest import HarvestBenchConfig, bench_harvest
from corpus.settings import read_settings


def parse(argv: list[str] | None = None) -> HarvestBenchConfig:
    parser = argparse.ArgumentParser(prog="python -m corpus.bench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    harvest = sub.add_parser("harvest", help="naive loop vs pipeline; compile scaling 1 vs N workers")
    harvest.add_argument("--families", default="add_broadcast,softmax,matmul")
    harvest.add_argument("--max-configs", type=int, default=4)
    harvest.add_argument("--workers", type=int, default=2)
    harvest.add_argument("--compile-tasks", type=int, default=16)
    harvest.add_argument("--target", default="sm_90")
    args = parser.parse_args(argv)
    families = tuple(f for f in args.families.split(",") if f)
    return HarvestBenchConfig(families, args.max_configs, args.workers, args.compile_tasks, args.target)


def main(argv: list[str] | None = None) -> int:
    bench_harvest(parse(argv), read_settings(), Console())
    return 0


if __name__ == "__main__":
    sys.exit(main())
