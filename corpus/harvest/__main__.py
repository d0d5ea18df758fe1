"""``python -m corpus.harvest``: autotune the suite and write the dataset.

Every config of every selected (family, shape, dtype) is compiled for an explicit target in a
pool of GPU-less worker processes (IR graphs and SASS statistics extracted there), checked
against the family's torch reference, and timed on one benchmark worker per GPU — or, without
a GPU, in Triton's CPU interpreter timed by the worker's CPU time (device 'interpreter'; those
latencies say nothing about GPUs). A run's checked configs are timed in interleaved passes
(--passes x --rep reps each); configs with an identical binary and launch are timed once.
Committed runs are skipped, so rerunning the same command after a crash, Ctrl-C or SIGTERM completes
the rest; the files a finished harvest wrote are merged (--no-compact to keep them).
--shard splits the plan statically (balanced by estimated cost; 'auto' in a Slurm or
Kubernetes job array); --ray runs it on a Ray cluster, fed to one actor per GPU dynamically.
"""

from __future__ import annotations

import argparse
import shlex
import sys

from rich.console import Console

from corpus.destination import add_force_out
from corpus.harvest.app import (
    HarvestConfig,
    HarvestError,
    default_workers,
    run_harvest,
    runs_committed,
)
from corpus.harvest.selftest import exit_code, run_self_test, self_test_config
from corpus.harvest.settings import SettingsError, read_settings
from corpus.suite.registry import BUILTIN_SUITE
from corpus.suite.spec import SCALES
from corpus.terminal import PipeSafeStdout
from schemas import DatasetError
from schemas.argtypes import (
    integer,
    non_empty_csv,
    non_empty_text,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
)
from schemas.console import print_error, print_labelled
from schemas.helptext import plain
from schemas.signals import Terminated, stop_on_termination

DEVICES = "auto, cpu, cuda or cuda:N[,M...] (e.g. cuda:0,1)"


def _device(text: str) -> str:
    """``--device``: auto | cpu | cuda | cuda:0,1 (which GPUs exist is checked later)."""
    value = text.strip()
    listed = value.removeprefix("cuda:").split(",") if value.startswith("cuda:") else None
    if value in ("auto", "cpu", "cuda") or (listed and all(i.strip().isdigit() for i in listed)):
        return value
    raise argparse.ArgumentTypeError(f"expected {DEVICES}, got {text!r}")


def _shard(text: str) -> tuple[int, int] | str:
    if text == "auto":
        return text
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard {text!r}: expected i/N, e.g. 0/4") from None
    if count < 1 or not 0 <= index < count:
        raise argparse.ArgumentTypeError(f"--shard {text!r}: need 0 <= i < N")
    return index, count


def _box(text: str) -> tuple[int, int]:
    try:
        cores, gpus = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--estimate-for {text!r}: expected CORESxGPUS, e.g. 16x1") from None
    if cores < 1 or gpus < 1:
        raise argparse.ArgumentTypeError(f"--estimate-for {text!r}: need at least 1 core and 1 GPU")
    return cores, gpus


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m corpus.harvest", description=plain(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter)
    # List options add up when repeated (--families a --families b is a,b), as --suite does in
    # python -m corpus.suite; the last one alone used to win, silently.
    p.add_argument("--suite", type=non_empty_csv, action="extend", default=None, help="suite module(s) to load, comma-separated or repeated (default: the built-in suite)")
    p.add_argument("--families", "--kernels", type=non_empty_csv, action="extend", default=None, help="families to harvest, comma-separated or repeated (default: all)")
    p.add_argument("--scale", choices=SCALES, default="tiny", help="shape set per family (default: tiny, sized for the CPU interpreter)")
    p.add_argument("--dtypes", type=non_empty_csv, action="extend", default=None, help="dtypes to harvest, e.g. float16,bfloat16, comma-separated or repeated (default: each family's; bfloat16 is dropped on the interpreter)")
    p.add_argument("--max-configs", type=positive_int, default=None, help="seeded sample of N valid configs per run, default config included (default: every config, invalid ones recorded as skipped)")
    p.add_argument("--out", type=non_empty_text, default="dataset", help="dataset root: a directory or fsspec URL (default: ./dataset); a new or empty directory, or a dataset (see --force-out)")
    p.add_argument("--device", type=_device, default="auto", help="auto | cpu (Triton interpreter) | cuda | cuda:0,1 (default: auto)")
    p.add_argument("--target", default=None, help="compile target for IR and static stats, e.g. sm_90, sm_80 (default: the GPU's own arch, the only one a GPU accepts; sm_90 on CPU)")
    p.add_argument("--workers", type=positive_int, default=None, help=f"compile worker processes (default: CPU cores minus one per benchmark lane, at least 2, at most 16: {default_workers()} here with one lane)")
    p.add_argument("--shard", type=_shard, default=(0, 1), help="i/N: harvest only shard i of N, shards balanced by estimated cost (configs x problem size), the same on every machine; auto: i and N from a Slurm job array (SLURM_ARRAY_TASK_ID/_COUNT/_MIN) or a Kubernetes Indexed Job (JOB_COMPLETION_INDEX with KERNEL_CORPUS_SHARD_COUNT) (default: 0/1)")
    p.add_argument("--ray", nargs="?", const="auto", default=None, metavar="ADDRESS", help="run on a Ray cluster (pip install -e '.[ray]' in a clone): one benchmark actor per GPU fed runs longest-first, compiles as CPU tasks; ADDRESS: auto (the cluster this machine joined, the default), local (start one here) or ray://host:10001")
    p.add_argument("--no-resume", dest="resume", action="store_false", help="measure every planned config again, also those --out already holds with the same bench settings (old rows are kept; new rows get a new harvest_id)")
    p.add_argument("--warmup", type=non_negative_int, default=None, help="untimed launches per config before its first timed rep (default: 10 on GPU, 0 on the interpreter, where the correctness check already ran it)")
    p.add_argument("--passes", type=positive_int, default=None, help="interleaved timing passes: each pass times every checked config of a run in a seeded random order (default: 5 on GPU, 4 on the interpreter)")
    p.add_argument("--rep", type=positive_int, default=None, help="timed launches per config in each pass (default: 10 on GPU, 1 on the interpreter)")
    p.add_argument("--compile-timeout", type=positive_float, default=120.0, help="seconds before a compile's worker is killed (status compile_timeout; default: 120)")
    p.add_argument("--bench-timeout", type=positive_float, default=60.0, help="seconds per config (check + timing) before the benchmark worker is killed (status timeout; default: 60)")
    p.add_argument("--timer", choices=("auto", "cuda_event", "cuda_graph", "thread_cpu", "process_cpu", "wall"), default="auto", help="GPU: cuda_event (default) or cuda_graph; interpreter: thread_cpu (default: CPU time of the benchmark worker, immune to other processes), process_cpu or wall")
    p.add_argument("--no-l2-flush", dest="l2_flush", action="store_false", help="do not flush L2 (a 2x L2 buffer, at least 256 MiB) before each timed rep")
    p.add_argument("--recycle-runs", type=non_negative_int, default=200, help="replace a measure worker after it set up this many runs (0: never; default: 200)")
    p.add_argument("--recycle-rss-gb", type=non_negative_float, default=16.0, help="replace a measure worker whose resident host memory passes this many GiB when a run starts (0: no limit; default: 16)")
    p.add_argument("--no-static-stats", dest="static_stats", action="store_false", help="skip SASS statistics from the cubin")
    p.add_argument("--flush-every", type=non_negative_float, default=15.0, help="seconds between writes of finished runs (default: 15; a crash loses at most this much finished work)")
    p.add_argument("--seed", type=integer(minimum=0), default=0, help="seed of inputs, config sampling and benchmark order (default: 0)")
    p.add_argument("--dry-run", action="store_true", help="print the planned runs, config counts and estimated duration (from measured per-config costs), run nothing")
    p.add_argument("--estimate-for", type=_box, default=None, metavar="CORESxGPUS", help="with --dry-run: also estimate the duration on such a box, e.g. 16x1 (compile side measured, GPU lanes from assumed rates; default: this machine only)")
    p.add_argument("--allow-empty", action="store_true", help="exit 0 when the selection plans no runs (default: that is an error)")
    p.add_argument("--allow-repeat", action="store_true", help="run even while an identical harvest (same runs) is writing into the same --out; by default the second one stops")
    add_force_out(p, card=True)
    p.add_argument("--no-compact", dest="compact", action="store_false", help="leave the files this harvest wrote as they are (default: merge them per partition at the end)")
    p.add_argument("--self-test", action="store_true", help="check this machine instead of harvesting: device facts, copy bandwidth vs peak, the L2 flush, the compile-worker -> launch cache hit, each timer (the interpreter subset without a GPU); exit 1 if a check fails")
    p.add_argument("--rank-with", default=None, metavar="MODEL_DIR", help="a cost model (python -m train's OUT/checkpoint): compile every config, benchmark only the default and the model's choice (--budget), record the rest as skipped with the model named; a later harvest without --budget measures them")
    p.add_argument("--budget", default=None, metavar="K|P%|auto", help="with --rank-with: K >= 1 = the default plus the model's top K configs per run; P%% = K is P%% of the run's compiled configs; auto = one at a time until no config is expected to gain 1%%")
    p.add_argument("--allow-unseen-arch", action="store_true", help="with --rank-with: rank with a model that never saw this device's arch or the IR's --target (with a warning) instead of refusing the harvest")
    p.add_argument("--record-host", action="store_true", help="record the host name in runs.hostname (default: an anonymous id, stable per machine, so the dataset can be published as it is)")
    return p


def parse_args(parser: argparse.ArgumentParser, argv: list[str] | None = None) -> argparse.Namespace:
    """``parser``'s arguments, list options as tuples (unset: the built-in suite, no filter)."""
    args = parser.parse_args(argv)
    args.suite = tuple(args.suite or (BUILTIN_SUITE,))
    args.families = tuple(args.families or ())
    args.dtypes = tuple(args.dtypes or ())
    return args


def parse(argv: list[str] | None = None) -> HarvestConfig:
    parser = build_parser()
    args = parse_args(parser, argv)
    if args.estimate_for is not None and not args.dry_run:
        parser.error("--estimate-for estimates a plan: add --dry-run")
    return HarvestConfig(
        out=args.out,
        suite=args.suite,
        families=args.families,
        scale=args.scale,
        dtypes=args.dtypes,
        max_configs=args.max_configs,
        device=args.device,
        target=args.target,
        workers=args.workers,
        shard=args.shard,
        resume=args.resume,
        warmup=args.warmup,
        passes=args.passes,
        rep=args.rep,
        compile_timeout_s=args.compile_timeout,
        bench_timeout_s=args.bench_timeout,
        timer=args.timer,
        l2_flush=args.l2_flush,
        seed=args.seed,
        dry_run=args.dry_run,
        estimate_for=args.estimate_for,
        allow_empty=args.allow_empty,
        allow_repeat=args.allow_repeat,
        force_out=args.force_out,
        compact=args.compact,
        static_stats=args.static_stats,
        flush_every_s=args.flush_every,
        record_host=args.record_host,
        ray=args.ray,
        recycle_runs=args.recycle_runs,
        recycle_rss_gb=args.recycle_rss_gb,
        rank_with=args.rank_with,
        budget=args.budget,
        allow_unseen_arch=args.allow_unseen_arch,
        command=shlex.join(["python", "-m", "corpus.harvest", *(sys.argv[1:] if argv is None else argv)]),
    )

def kept(stop: KeyboardInterrupt) -> str:
    """What a stopped harvest kept, as it is: the runs it finished are committed, or it had
    finished none (it used to say "finished runs are committed" either way)."""
    count = runs_committed(stop)
    if count == 0:
        return "no run had finished, so none was committed; rerun the same command to harvest"
    return f"the {count} run(s) it finished are committed; rerun the same command to resume"


SELF_TEST_READS = ("self_test", "device", "suite", "help")
"""The options ``--self-test`` reads; it refuses the others rather than ignore them."""


def options_self_test_ignores(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The harvest options given (other than their defaults) that ``--self-test`` would not use."""
    return [
        action.option_strings[0]
        for action in parser._actions
        if action.dest not in SELF_TEST_READS and not _unset(getattr(args, action.dest, action.default), action.default)
    ]


def _unset(value: object, default: object) -> bool:
    return value == default or (default is None and value == ())  # list options: () when not given


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parse_args(parser, argv)
    console = Console(file=PipeSafeStdout())  # a harvest piped into `head` goes on to the end
    if args.self_test:
        if ignored := options_self_test_ignores(parser, args):
            print_error(
                console,
                f"--self-test checks this machine and harvests nothing: it takes --device and --suite, "
                f"not {', '.join(ignored)} (run those without --self-test)",
            )
            return 2
        try:
            settings = read_settings()
            return exit_code(run_self_test(self_test_config(args.device, args.suite, settings), settings, console))
        except (SettingsError, ValueError) as exc:
            print_error(console, str(exc))
            return 2
    config = parse(argv)
    try:
        with stop_on_termination():
            run_harvest(config, read_settings(), console)
    except (HarvestError, SettingsError, DatasetError, KeyError, ModuleNotFoundError, ValueError) as exc:
        print_error(console, str(exc))
        return 2
    except Terminated as stop:
        print_labelled(console, f"stopped by {stop.name}", "yellow", kept(stop))
        return stop.exit_code
    except KeyboardInterrupt as stop:
        print_labelled(console, "interrupted", "yellow", kept(stop))
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
