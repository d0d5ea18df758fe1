"""Command line of ``python -m train``: argument parsing, progress display, the report printed
for the terminal (:mod:`train.report_doc`)."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from schemas import DatasetError
from schemas.argtypes import non_empty_csv, number, positive_float, positive_int
from schemas.console import fill_markup, print_error
from schemas.signals import stop_on_termination, stopped
from train.clusters import DEFAULT_DISTANCE
from train.experiment import (
    DEFAULT_MODELS,
    DEFAULT_SEEDS,
    MODELS,
    NEURAL,
    ExperimentConfig,
    UsageError,
    check_config,
    prepare_experiment,
    run_experiment,
)
from train.fit import TrainConfig
from train.layout import replays_in
from train.losses import RANKING_LOSSES, LossWeights
from train.report_doc import build_report, print_report
from train.settings import distributed_world
from train.splits import SPLIT_KINDS

DESCRIPTION = (
    "Train the cost models and the baselines on seeded splits of a dataset (runs kept whole, "
    "families held out by default), judge them with 95% intervals over seeds and paired "
    "against the best baseline; write checkpoint/, metrics.json, report.md, plots and "
    "splits.parquet to --out, and print the report. --final then trains the model to ship on "
    "every run. Under torchrun the neural models train with DDP."
)


def _split_kinds(text: str) -> str:
    kinds = non_empty_csv(text)
    bad = [k for k in kinds if k not in SPLIT_KINDS]
    if bad:
        raise argparse.ArgumentTypeError(
            f"unknown split kind(s) {', '.join(bad)}; choose from {', '.join(SPLIT_KINDS)}"
        )
    return ",".join(kinds)


def _models(text: str) -> tuple[str, ...]:
    models = non_empty_csv(text)
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown {', '.join(unknown)}; choose from {', '.join(MODELS)}"
        )
    return models


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (every numeric option range-checked at parse time)."""
    parser = argparse.ArgumentParser(prog="python -m train", description=DESCRIPTION)
    parser.add_argument("--data", required=True, help="dataset directory or fsspec URL (required)")
    parser.add_argument(
        "--out",
        required=True,
        help="output directory (checkpoint, metrics, report): built beside it and swapped in "
        "when finished, so an interrupted run leaves it as it was; refused when it holds files "
        "python -m train does not write",
    )
    parser.add_argument(
        "--epochs",
        type=positive_int,
        default=40,
        help="maximum epochs per model and seed; training stops earlier when the validation "
        "runs' tau stops improving (default 40)",
    )
    parser.add_argument(
        "--split",
        type=_split_kinds,
        default="family",
        help=f"what is held out, one or several comma-separated of {', '.join(SPLIT_KINDS)} "
        "(default family; cluster: families grouped by IR op-set similarity, the honest "
        "unseen-kernel split)",
    )
    parser.add_argument(
        "--level",
        choices=("ttgir", "ttir"),
        default="ttgir",
        help="IR level of the graphs the models read: ttgir (with layouts, per target) or ttir "
        "(default ttgir)",
    )
    parser.add_argument(
        "--seeds",
        type=positive_int,
        default=DEFAULT_SEEDS,
        help=f"seeds 0..K-1: one split + training per seed (default {DEFAULT_SEEDS})",
    )
    parser.add_argument(
        "--device",
        default="cpu",
        help="cpu or cuda; under torchrun each process takes cuda:LOCAL_RANK (default cpu)",
    )
    parser.add_argument(
        "--models",
        type=_models,
        default=DEFAULT_MODELS,
        help=f"comma-separated subset of {','.join(MODELS)} (default {','.join(DEFAULT_MODELS)})",
    )
    parser.add_argument(
        "--harvests",
        choices=("latest", "pooled", "all"),
        default="latest",
        help="a run harvested more than once: its latest harvest's rows, the samples of every "
        "repeat timed as the latest one pooled (statistics recomputed), or every row (all); a "
        "run whose configs were timed in different ways is refused (default latest)",
    )
    parser.add_argument(
        "--hidden", type=positive_int, default=64, help="width of the neural models' layers (default 64)"
    )
    parser.add_argument(
        "--layers", type=positive_int, default=3, help="graph layers of the GNNs (default 3)"
    )
    parser.add_argument(
        "--lr", type=positive_float, default=2e-3, help="Adam learning rate (default 0.002)"
    )
    parser.add_argument(
        "--runs-per-batch",
        type=positive_int,
        default=8,
        help="runs per training batch, each with all its configs (the ranking loss compares "
        "configs within a run) (default 8)",
    )
    parser.add_argument(
        "--patience",
        type=positive_int,
        default=10,
        help="epochs without a better validation tau before a model stops (default 10)",
    )
    parser.add_argument(
        "--loss",
        choices=RANKING_LOSSES,
        default="pairwise",
        help="ranking loss of the neural models (default pairwise)",
    )
    parser.add_argument(
        "--prior",
        action="store_true",
        help="neural scores = the analytic rule's estimate + a learned residual (default off)",
    )
    parser.add_argument(
        "--no-collapse",
        action="store_true",
        help="train on every config, even those compiling to one program (default: one "
        "training row per distinct program)",
    )
    parser.add_argument(
        "--no-relative",
        action="store_true",
        help="no run-relative copies of the config features, an ablation (default: with them)",
    )
    parser.add_argument(
        "--cluster-distance",
        type=number(0.0, 1.0, exclusive_minimum=True),
        default=DEFAULT_DISTANCE,
        help=f"Jaccard distance at which the cluster split cuts (default {DEFAULT_DISTANCE})",
    )
    parser.add_argument(
        "--final",
        action="store_true",
        help="after the evaluation, train the model to ship on every run into OUT/checkpoint "
        "(default off: OUT/checkpoint holds the first split's seed-0 model)",
    )
    parser.add_argument(
        "--refit",
        action="store_true",
        help="after each seed's models are fitted on its train runs (neural ones early-stopped on "
        "its val runs), fit them again on train + val (neural ones for the epochs they stopped "
        "at) and judge and save those on the test runs (with the default fractions, a third more runs to learn from); val "
        "figures stay the first fit's, and python -m train.replay refuses --partition val "
        "(default off)",
    )
    parser.add_argument(
        "--final-model",
        choices=NEURAL,
        default=None,
        help="model --final trains, only with --final (default: the best neural model by mean "
        "test tau)",
    )
    parser.add_argument(
        "--exclude-families",
        type=non_empty_csv,
        default=(),
        help="comma-separated families left out of everything, the final model included (to "
        "check it on kernels it never saw) (default none)",
    )
    parser.add_argument(
        "--threads",
        type=positive_int,
        default=None,
        help="torch intra-op threads (default: 1 on CPU, see the README; torch's on CUDA)",
    )
    parser.add_argument(
        "--cache-dir",
        default=None,
        help="processed-data cache (default ~/.cache/kernel-corpus/train)",
    )
    return parser


def parse_args(argv: Sequence[str] | None = None) -> ExperimentConfig:
    """Parse ``argv`` into an :class:`ExperimentConfig`."""
    args = build_parser().parse_args(argv)
    train = TrainConfig(
        epochs=args.epochs,
        lr=args.lr,
        runs_per_batch=args.runs_per_batch,
        patience=args.patience,
        device=args.device,
        loss=LossWeights(ranking=args.loss),
    )
    return ExperimentConfig(
        data=args.data,
        out=args.out,
        split=args.split,
        level=args.level,
        seeds=args.seeds,
        models=tuple(args.models),
        harvests=args.harvests,
        cache_dir=args.cache_dir,
        hidden=args.hidden,
        layers=args.layers,
        threads=args.threads,
        prior=args.prior,
        collapse=not args.no_collapse,
        relative=not args.no_relative,
        cluster_distance=args.cluster_distance,
        final=args.final,
        refit=args.refit,
        final_model=args.final_model,
        exclude_families=tuple(args.exclude_families),
        train=train,
    )


def _init_distributed(config: ExperimentConfig) -> ExperimentConfig:
    """Join the torchrun process group (gloo on CPU, nccl on CUDA) when WORLD_SIZE > 1."""
    rank, local_rank, world = distributed_world()
    if world <= 1:
        return config
    cuda = config.train.device.startswith("cuda")
    dist.init_process_group(backend="nccl" if cuda else "gloo", rank=rank, world_size=world)
    if cuda:
        torch.cuda.set_device(local_rank)
        return replace(config, train=replace(config.train, device=f"cuda:{local_rank}"))
    return config


def _directory_identity(path: str) -> tuple[int, int] | None:
    """(device, inode) of ``path``, None when it does not exist: the finished run swaps in a
    new directory, so a changed identity says ``--out`` is this run's."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


def kept_after_interrupt(out: str, before: tuple[int, int] | None) -> str:
    """What an interrupted run leaves in ``out`` (whose identity at the start was
    ``before``), for the one line Ctrl-C prints."""
    now = _directory_identity(out)
    if now is None:
        return f"nothing; no --out {out} was written"
    if now == before:
        return f"--out {out} as it was before this run (nothing of this run)"
    return f"this run's finished output in {out} (its report was not printed)"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the experiment with a progress bar; print the report table. Returns the exit code
    (2 with a one-line message for a bad option or a dataset that cannot be trained on; 130
    after Ctrl-C, 143 after SIGTERM and 129 after SIGHUP (a scheduler's preemption, a closed
    terminal), with one line saying what ``--out`` holds instead of a traceback)."""
    config = parse_args(argv)
    before = _directory_identity(config.out)
    try:
        with stop_on_termination():  # SIGTERM/SIGHUP take Ctrl-C's path: staging removed
            return _run(config)
    except KeyboardInterrupt as stop:
        what, code = stopped(stop)
        if distributed_world()[0] == 0:
            sys.stderr.write(f"{what}: {kept_after_interrupt(config.out, before)}\n")
        return code


def _run(config: ExperimentConfig) -> int:
    """:func:`main` after parsing: the run, its progress and its report."""
    try:
        check_config(config)
        config = _init_distributed(config)
        prepared = prepare_experiment(config)
    except (UsageError, DatasetError) as exc:  # bad input: one line, no traceback
        print_error(Console(stderr=True), str(exc))
        return 2
    main_rank = distributed_world()[0] == 0
    console = Console(stderr=True, quiet=not main_rank)
    replays = replays_in(config.out)
    if replays:  # deleted with the old output once this run is swapped in: say so while it can be saved
        console.print(
            fill_markup(
                "[bold yellow]note:[/] --out {out} holds python -m train.replay results ({replays}) "
                "that judged the models this run replaces: they are deleted when it finishes; copy "
                "them elsewhere now to keep them",
                out=config.out,
                replays=", ".join(replays),
            ),
            highlight=False,
            soft_wrap=True,
        )
    neural = [m for m in config.models if m in NEURAL]
    per_seed = len(neural) * config.train.epochs + len(config.models) - len(neural)
    total = len(config.split_kinds) * config.seeds * per_seed
    total += config.train.epochs if config.final else 0
    # Where stderr is no terminal (a Slurm log, a pipe) a bar would be drawn once, at the end,
    # naming the last model trained: a line per seed whose models are all trained says how far
    # a long run has come instead, and the bar is off (as the harvest's is there).
    log_lines = main_rank and not console.is_terminal
    seeds_total = len(config.split_kinds) * config.seeds
    models_done = 0
    begin = time.monotonic()
    with Progress(
        TextColumn("{task.description}", markup=False),  # model names: text
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
        disable=not main_rank or log_lines,
    ) as progress:
        task = progress.add_task("train", total=total)

        def on_event(kind: str, info: dict[str, Any]) -> None:
            nonlocal models_done
            if kind == "model" and log_lines:
                models_done += 1
                if models_done % len(config.models) == 0:  # the seed's last model
                    elapsed = timedelta(seconds=round(time.monotonic() - begin))
                    console.print(
                        f"{info['kind']} split seed {info['seed']}: {len(config.models)} models "
                        f"trained, {models_done // len(config.models)}/{seeds_total} seeds done, "
                        f"{elapsed} elapsed",
                        highlight=False,
                    )
            if kind == "loaded":
                source = "cache" if info["from_cache"] else "tables"
                console.print(
                    f"loaded {info['samples']} samples, {info['graphs']} graphs, "
                    f"{info['runs']} rankable runs from {source}"
                )
            elif kind == "notice":
                console.print(fill_markup("[bold yellow]note:[/] {text}", text=info["text"]))
            elif kind == "final":
                console.print(
                    f"final model: {info['model']} ({info['reason']}), {info['epochs']} epochs "
                    "on every run"
                )
            elif kind == "epoch":
                tau = info.get("val_kendall_tau")
                # the final model trains on every run: no validation runs, no tau to show
                judged = "" if tau is None or math.isnan(tau) else f" val tau {tau:.3f}"
                refit = " refit on train + val," if info.get("refit") else ""
                description = (
                    f"{info['kind']} seed {info['seed']} {info['model']}{refit} epoch "
                    f"{int(info['epoch'])} loss {info['loss']:.3f}{judged}"
                )
                # a refit's epochs are beyond the bar's count (it does not know them ahead)
                progress.update(task, advance=0 if refit else 1, description=description)
            elif kind == "model" and info["model"] in neural:
                # Early stopping ends a model before its last epoch: jump to its share's end.
                kind_index = config.split_kinds.index(info["kind"])
                done = (kind_index * config.seeds + info["seed"]) * per_seed + (
                    neural.index(info["model"]) + 1
                ) * config.train.epochs
                progress.update(task, completed=done)
            elif kind == "model":
                progress.update(
                    task,
                    advance=1,
                    description=f"{info['kind']} seed {info['seed']} {info['model']}",
                )

        run_experiment(config, on_event=on_event, prepared=prepared)
    if main_rank:
        payload = json.loads((Path(config.out) / "metrics.json").read_text())
        print_report(Console(), build_report(payload, config.out))
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
    return 0
