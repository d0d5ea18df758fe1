"""Command line of ``python -m train.replay``: arguments into a :class:`ReplayConfig`, the run,
the report printed."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from schemas import DatasetError
from schemas.argtypes import number, positive_int
from schemas.signals import stop_on_termination, stopped
from train.guide import EiSettings
from train.layout import META, out_problem
from train.replay.app import (
    HELD_OUT,
    REPLAY_HARVESTS,
    REPLAYABLE,
    ReplayConfig,
    check_config,
    default_out,
    missing_seeds,
    other_data_problem,
    run_replay,
    select_checkpoints,
)
from train.replay.report import ReplayDoc, print_replay, to_markdown, write_outputs
from train.replay.strategies import KNOWN, REMEASURED, STRATEGIES

DESCRIPTION = (
    "Replay tuners on the held-out runs of a trained model (no GPU: the dataset's measurements "
    "are the ground truth). Each strategy benchmarks configs one at a time in its own order -- "
    "random; default (the default config first); analytic (the rule); tabular (LightGBM); model "
    "(the checkpoint's order); hedged (the model's best, then its order spread over the knob "
    "space, what the Triton plug-in benchmarks); budget (what --budget K benchmarks); lfbo and "
    "lfbo+model (an in-loop surrogate without and with the model as prior); ei and auto "
    "(--budget auto's expected-improvement policy, never stopping and as it stops); remeasured "
    "(another harvest's order, with --remeasured) -- and the report gives the configs each needs to get within 5%/2%/0% of the run's best and "
    "its regret at 1/5/10/20% of the configs, per strategy and per family, with 95% intervals "
    "over seeds (one checkpoint per seed: python -m train saves every seed's model of every "
    "split kind; pick one with --model-name and --split). Writes replay.md, replay.json, "
    "runs.parquet and regret.png to --out."
)


def parse_args(argv: Sequence[str] | None = None) -> ReplayConfig:
    """Parse ``argv`` into a :class:`ReplayConfig` (errors exit 2 with one line)."""
    parser = argparse.ArgumentParser(prog="python -m train.replay", description=DESCRIPTION)
    parser.add_argument("--data", required=True, help="dataset directory the model was trained on")
    parser.add_argument(
        "--model",
        required=True,
        help="python -m train --out directory (its per-seed models of one neural model and split "
        "kind are the seeds) or one checkpoint directory",
    )
    parser.add_argument(
        "--model-name",
        help="neural model of a python -m train output: gnn, gnn-plain or mlp (default: the one "
        "its checkpoint/ ships, else the first of gnn, gnn-plain, mlp it holds)",
    )
    parser.add_argument(
        "--split",
        help="split kind of a python -m train output: family, cluster, ... (default: the first "
        "kind it ran)",
    )
    parser.add_argument(
        "--out",
        help="write the report, tables and plot here (default: MODEL/replay/NAME-SPLIT for a "
        "python -m train output, CHECKPOINT/replay for one checkpoint; a replay of other data "
        "than the one there is refused without --out)",
    )
    parser.add_argument(
        "--strategies",
        default=",".join(STRATEGIES),
        help=f"comma-separated subset of {','.join(KNOWN)} (default: all but remeasured, which "
        "--remeasured adds; random is always added: 'vs random' divides by it)",
    )
    parser.add_argument(
        "--remeasured",
        metavar="DIR",
        help="another harvest of the same runs (same run_id and config_id): adds the strategy "
        "remeasured, the configs in the order DIR measured them, judged on --data's "
        "measurements (the floor the labels' reproducibility sets); replays only the held-out "
        "runs DIR measured (default: none)",
    )
    parser.add_argument(
        "--repeats", type=positive_int, default=3, help="seeded draws per run of the lfbo tuner (default: 3)"
    )
    parser.add_argument(
        "--harvests",
        choices=REPLAY_HARVESTS,
        default="latest",
        help="which harvest's rows of a repeated run to replay (default: latest)",
    )
    parser.add_argument(
        "--ei-threshold",
        type=number(minimum=0.0, maximum=1.0, exclusive_minimum=True, exclusive_maximum=True),
        default=0.01,
        help="auto stops when no config is expected to improve the best by this fraction (default: 0.01)",
    )
    parser.add_argument(
        "--ei-lengthscale",
        type=number(minimum=0.0, exclusive_minimum=True),
        default=EiSettings().lengthscale,
        help="knob distance at which ei and auto take two configs' model errors as 0.61 alike "
        f"(default: {EiSettings().lengthscale:g})",
    )
    parser.add_argument(
        "--ei-noise",
        type=number(minimum=0.0, exclusive_minimum=True),
        default=EiSettings().noise_sigma,
        help=f"benchmark noise ei and auto assume, std of log latency (default: {EiSettings().noise_sigma:g})",
    )
    parser.add_argument(
        "--partition",
        choices=REPLAYABLE,
        default=HELD_OUT,
        help="replay the test runs (default) or the val runs, to choose --ei-* settings on runs "
        "the test figures do not include",
    )
    parser.add_argument(
        "--threads", type=positive_int, default=None, help="torch intra-op threads (default: torch's)"
    )
    parser.add_argument(
        "--allow-unseen-arch",
        action="store_true",
        help="replay runs of an arch the model never saw (with a warning) instead of refusing",
    )
    args = parser.parse_args(argv)
    strategies = tuple(s.strip() for s in args.strategies.split(",") if s.strip())
    if args.remeasured is not None and REMEASURED not in strategies:
        strategies += (REMEASURED,)
    if strategies and "random" not in strategies:
        # what "vs random", the column the goal is judged by, divides by (exact and cheap)
        strategies = ("random", *strategies)
    config = ReplayConfig(
        data=args.data,
        model=args.model,
        out=args.out,
        model_name=args.model_name,
        split=args.split,
        strategies=strategies,
        repeats=args.repeats,
        harvests=args.harvests,
        threads=args.threads,
        ei_threshold=args.ei_threshold,
        ei_lengthscale=args.ei_lengthscale,
        ei_noise=args.ei_noise,
        partition=args.partition,
        allow_unseen_arch=args.allow_unseen_arch,
        remeasured=args.remeasured,
    )
    try:
        check_config(config)
    except ValueError as exc:
        parser.error(str(exc))
    problem = None
    if config.out is None:
        selection = select_checkpoints(Path(config.model), config.model_name, config.split)
        config = replace(
            config, out=str(default_out(Path(config.model), selection, config.partition, config.remeasured))
        )
        problem = other_data_problem(Path(config.out), config.data)
    problem = problem or _out_clash(config) or out_problem(config.out)
    if problem is not None:  # before the replay, not after it
        parser.error(problem)
    return config


def show(console: Console, doc: ReplayDoc) -> None:
    """The report on ``console``: tables sized for it on a terminal (the replay's has a dozen
    columns); elsewhere (a pipe, a log) replay.md's Markdown, which reads and greps as it is."""
    if console.is_terminal:
        print_replay(console, doc)
    else:
        print(to_markdown(doc), file=console.file)


def _out_clash(config: ReplayConfig) -> str | None:
    """Why ``--out`` would mix the replay's files into the dataset or into the ``python -m
    train`` output it replays, or None. In the dataset they lay a ``runs.parquet`` beside its
    ``runs`` table; in the train output they are files a rerun of ``python -m train`` refuses
    to delete, so the rerun stops until they are removed by hand."""
    assert config.out is not None
    out = Path(config.out).resolve()
    if "://" not in config.data and out == Path(config.data).resolve():
        return f"--out {config.out}: is the dataset --data; name a directory of its own"
    model = Path(config.model).resolve()
    if out == model and not (model / META).is_file():
        selection = select_checkpoints(model, config.model_name, config.split)
        return (
            f"--out {config.out}: is the python -m train output --model, which its next run "
            "would refuse to replace holding the replay's files; without --out the replay goes "
            f"to {default_out(model, selection, config.partition, config.remeasured)}"
        )
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the replay, write its outputs, print the report. Returns the exit code: 2 after
    bad input; 130 after Ctrl-C, 143 after SIGTERM and 129 after SIGHUP, with one line instead
    of a traceback."""
    config = parse_args(argv)
    writing: list[bool] = []  # set once the outputs are being written
    try:
        with stop_on_termination():
            return _replay(config, writing)
    except KeyboardInterrupt as stop:
        what, code = stopped(stop)
        left = f"--out {config.out} may hold part of its files" if writing else "nothing written"
        print(f"{what}: {left}", file=sys.stderr)
        return code


def _replay(config: ReplayConfig, writing: list[bool]) -> int:
    """:func:`main` after parsing (``writing`` gets an item when the outputs are written)."""
    selection = select_checkpoints(Path(config.model), config.model_name, config.split)
    print(
        f"replaying {selection.name} on {'the ' + selection.kind if selection.kind else 'no'} "
        f"split: {len(selection.paths)} checkpoint(s) under {config.model}",
        file=sys.stderr,
    )
    absent = missing_seeds(Path(config.model), selection)
    if absent:
        print(
            f"warning: seed(s) {', '.join(map(str, absent))} of the {selection.kind} split have "
            f"no {selection.name} checkpoint under {config.model}/checkpoints: left out",
            file=sys.stderr,
        )
    try:
        outcomes, meta = run_replay(
            config,
            on_seed=lambda seed, runs: print(
                f"seed {seed}: {runs} held-out run(s) replayed", file=sys.stderr
            ),
        )
    except (DatasetError, ValueError, ImportError) as exc:
        print(f"python -m train.replay: error: {exc}", file=sys.stderr)
        return 2
    if not outcomes:
        why = "; ".join(meta.get("notes", [])) if isinstance(meta, dict) else ""
        print(
            "python -m train.replay: error: no held-out run to replay: --data holds no run the "
            "model's split held out with two configs that ran and every config measured"
            + (f" ({why})" if why else ""),
            file=sys.stderr,
        )
        return 2
    assert config.out is not None
    writing.append(True)
    show(Console(), write_outputs(Path(config.out), outcomes, config.strategies, meta))
    print(f"wrote {config.out}/replay.md, replay.json, runs.parquet, regret.png", file=sys.stderr)
    return 0
