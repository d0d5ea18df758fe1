"""``python -m corpus.bench``: figures of the harvest machinery.

- ``harvest``: naive loop vs pipeline, sequential vs interleaved timing, compile scaling
  (see corpus/bench/harvest.py);
- ``repro A [B]``: label reproducibility of two harvests (two datasets, or the latest two
  harvests of each run in A); ``repro --harvest [--with-load]`` first harvests one tiny plan
  twice into a temporary directory (see corpus/bench/repro.py);
- ``cluster``: tail idle time of static shards vs dynamic scheduling on a local Ray cluster,
  simulated with sleeping lanes (see corpus/bench/cluster.py; needs ``kernel-corpus[ray]``);
- ``calibrate``: measure the per-config compile, static-stats and interpreter-lane costs behind
  the dry run's duration estimates and write corpus/harvest/calibration.py (see
  corpus/bench/calibrate.py).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from rich.console import Console

from corpus.bench.calibrate import CalibrateConfig, calibrate
from corpus.bench.cluster import ClusterBenchConfig, bench_cluster
from corpus.bench.harvest import HarvestBenchConfig, bench_harvest
from corpus.bench.repro import describe, reproducibility
from corpus.bench.repro_harvests import LoadHarvestFailed, ReproHarvestConfig, harvest_twice
from corpus.harvest.settings import read_settings
from schemas import DatasetError
from schemas.argtypes import (
    non_empty_csv,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
)
from schemas.console import print_error
from schemas.helptext import plain

REPRO_FAMILIES = "add_broadcast,softmax,layernorm_fwd,matmul,cumsum,row_reduce"


@dataclass(frozen=True)
class ReproDatasets:
    """Compare harvests already written: ``a`` with ``b``, or the latest two harvests in ``a``."""

    a: str
    b: str | None


BenchCommand = HarvestBenchConfig | ReproDatasets | ReproHarvestConfig | ClusterBenchConfig | CalibrateConfig


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m corpus.bench",
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    harvest = sub.add_parser(
        "harvest", help="naive loop vs pipeline; sequential vs interleaved timing; compile scaling"
    )
    harvest.add_argument(
        "--families",
        type=non_empty_csv,
        default="add_broadcast,softmax,matmul",
        help="families of the workload, comma-separated (default: add_broadcast,softmax,matmul)",
    )
    harvest.add_argument(
        "--max-configs", type=positive_int, default=4, help="configs per run of the workload (default: 4)"
    )
    harvest.add_argument(
        "--workers", type=positive_int, default=2, help="compile workers of the pipeline (default: 2)"
    )
    harvest.add_argument(
        "--compile-tasks",
        type=positive_int,
        default=64,
        help="compiles timed for the 1-vs-N worker scaling and the static-stats share; their "
        "cubins make one nvdisasm batch, as a harvest's batches of up to 256 (default: 64)",
    )
    harvest.add_argument(
        "--target", default="sm_90", help="compile target of the workload (default: sm_90)"
    )
    harvest.add_argument(
        "--timing-only", action="store_true", help="only sequential vs interleaved timing"
    )
    harvest.add_argument(
        "--timing-rounds",
        type=non_negative_int,
        default=2,
        help="alternating sequential/interleaved harvests per mode (default: 2; 0: skip)",
    )
    harvest.add_argument(
        "--rounds",
        type=positive_int,
        default=3,
        help="rounds of each comparison, sides alternating; medians reported (default: 3)",
    )
    harvest.add_argument(
        "--no-autotune",
        dest="autotune",
        action="store_false",
        help="skip the comparison with plain triton.autotune",
    )
    repro = sub.add_parser(
        "repro", help="per-run Kendall tau of two harvests' latencies; spread of repeated configs"
    )
    repro.add_argument(
        "datasets", nargs="*", help="A [B]: two datasets, or one holding two harvests of each run"
    )
    repro.add_argument(
        "--harvest",
        action="store_true",
        help="harvest one tiny plan twice into a temporary directory, then compare",
    )
    repro.add_argument(
        "--with-load",
        action="store_true",
        help="with --harvest: a third harvest runs beside the measured ones",
    )
    repro.add_argument(
        "--families", type=non_empty_csv, default=REPRO_FAMILIES, help=f"with --harvest (default: {REPRO_FAMILIES})"
    )
    repro.add_argument(
        "--max-configs", type=positive_int, default=6, help="with --harvest: configs per run (default: 6)"
    )
    repro.add_argument(
        "--passes",
        type=positive_int,
        default=None,
        help="with --harvest: timing passes (default: the harvest's)",
    )
    repro.add_argument(
        "--rep",
        type=positive_int,
        default=None,
        help="with --harvest: reps per pass (default: the harvest's)",
    )
    repro.add_argument(
        "--timer",
        default="auto",
        help="with --harvest: thread_cpu, process_cpu or wall (default: auto, thread_cpu)",
    )
    repro.add_argument(
        "--sequential",
        action="store_true",
        help="with --harvest: time each config's reps back to back (version 1), for comparison",
    )
    repro.add_argument(
        "--no-dedupe",
        action="store_true",
        help="with --harvest: time configs with identical binaries separately, for comparison",
    )
    repro.add_argument(
        "--root",
        default=None,
        help="with --harvest: where to write the datasets (default: a new temporary directory)",
    )
    cluster = sub.add_parser(
        "cluster",
        help="tail idle time of static shards vs dynamic scheduling (simulated on local Ray)",
    )
    cluster.add_argument("--lanes", type=positive_int, default=4, help="simulated GPUs (default: 4)")
    cluster.add_argument(
        "--work-s", type=positive_float, default=40.0, help="lane-seconds of the plan (default: 40)"
    )
    cluster.add_argument(
        "--noise",
        type=non_negative_float,
        default=0.5,
        help="sigma of the log-normal error of durations around estimates (default: 0.5)",
    )
    cluster.add_argument("--scale", default="default", help="plan scale (default: default)")
    cluster.add_argument(
        "--seed", type=non_negative_int, default=0, help="seed of the simulated durations (default: 0)"
    )
    cluster.add_argument(
        "--address", default="local", help="Ray address (default: local, start one here)"
    )
    calibrate_parser = sub.add_parser(
        "calibrate",
        help="measure per-config costs for the dry run's estimates; writes corpus/harvest/calibration.py",
    )
    calibrate_parser.add_argument("--families", type=non_empty_csv, default=(), help="families to measure, comma-separated (default: all)")
    calibrate_parser.add_argument("--compile-configs", type=positive_int, default=3, help="configs compiled per family (default: 3)")
    calibrate_parser.add_argument("--lane-configs", type=positive_int, default=2, help="configs per run of the tiny interpreter harvest (default: 2)")
    calibrate_parser.add_argument("--scale", default="default", help="scale whose shapes the compiles use (default: default)")
    calibrate_parser.add_argument("--workers", type=positive_int, default=2, help="compile workers (default: 2)")
    calibrate_parser.add_argument("--out", default=None, help="write the calibration module to this file (default: the package's corpus/harvest/calibration.py)")
    return parser


def parse(argv: list[str] | None = None) -> BenchCommand:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "harvest":
        if args.timing_only and not args.timing_rounds:
            parser.error("harvest: --timing-only needs --timing-rounds >= 1")
        return HarvestBenchConfig(
            args.families,
            args.max_configs,
            args.workers,
            args.compile_tasks,
            args.target,
            timing_only=args.timing_only,
            timing_rounds=args.timing_rounds,
            rounds=args.rounds,
            autotune=args.autotune,
        )
    if args.command == "calibrate":
        return CalibrateConfig(
            args.families, args.compile_configs, args.lane_configs, args.scale, args.workers, out=args.out
        )
    if args.command == "cluster":
        return ClusterBenchConfig(
            args.lanes, args.work_s, args.noise, args.scale, args.seed, args.address
        )
    if args.harvest:
        if args.datasets:
            parser.error("repro: give datasets or --harvest, not both")
        return ReproHarvestConfig(
            args.families,
            args.max_configs,
            passes=args.passes,
            rep=args.rep,
            timer=args.timer,
            with_load=args.with_load,
            root=args.root,
            interleave=not args.sequential,
            dedupe=not args.no_dedupe,
        )
    if not 1 <= len(args.datasets) <= 2:
        parser.error("repro: give one or two datasets (or --harvest)")
    if args.with_load:
        parser.error("repro: --with-load needs --harvest")
    return ReproDatasets(args.datasets[0], args.datasets[1] if len(args.datasets) == 2 else None)


def main(argv: list[str] | None = None) -> int:
    command = parse(argv)
    console = Console()
    try:
        if isinstance(command, HarvestBenchConfig):
            bench_harvest(command, read_settings(), console)
        elif isinstance(command, CalibrateConfig):
            calibrate(command, read_settings(), console)
        elif isinstance(command, ClusterBenchConfig):
            bench_cluster(command, console)
        elif isinstance(command, ReproHarvestConfig):
            harvest_twice(command, read_settings(), console)
        else:
            for line in describe(reproducibility(command.a, command.b)):
                console.print(line, markup=False)  # run labels: text
    except (DatasetError, LoadHarvestFailed) as exc:
        print_error(console, str(exc))  # not markup: a path may hold [brackets]
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
