"""Command line of ``python -m train``: argument parsing, progress display, report table."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from schemas import DatasetError
from train.experiment import MODELS, NEURAL, ExperimentConfig, check_config, run_experiment
from train.fit import TrainConfig
from train.settings import distributed_world
from train.splits import SPLIT_KINDS

DESCRIPTION = (
    "Train the GNN cost model and the baselines on seeded splits of a dataset (runs kept whole, "
    "families held out by default); write checkpoint/, metrics.json, report.md, plots and "
    "splits.parquet to --out, and print the report. Under torchrun the GNN trains with DDP."
)


def parse_args(argv: Sequence[str] | None = None) -> ExperimentConfig:
    """Parse ``argv`` into an :class:`ExperimentConfig`."""
    parser = argparse.ArgumentParser(prog="python -m train", description=DESCRIPTION)
    parser.add_argument("--data", required=True, help="dataset directory or fsspec URL")
    parser.add_argument(
        "--out", required=True, help="output directory (checkpoint, metrics, report)"
    )
    parser.add_argument(
        "--epochs", type=int, default=40, help="maximum epochs per seed (default 40)"
    )
    parser.add_argument("--split", choices=SPLIT_KINDS, default="family")
    parser.add_argument("--level", choices=("ttgir", "ttir"), default="ttgir")
    parser.add_argument(
        "--seeds", type=int, default=3, help="seeds 0..K-1: one split + training per seed"
    )
    parser.add_argument(
        "--device", default="cpu", help="cpu or cuda (cuda:LOCAL_RANK under torchrun)"
    )
    parser.add_argument(
        "--models", default=",".join(MODELS), help=f"comma-separated subset of {','.join(MODELS)}"
    )
    parser.add_argument("--harvests", choices=("latest", "pooled", "all"), default="latest")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--runs-per-batch", type=int, default=8)
    parser.add_argument(
        "--patience", type=int, default=10, help="epochs without a better val tau before stopping"
    )
    parser.add_argument(
        "--threads", type=int, default=None, help="torch intra-op threads (default: torch's)"
    )
    parser.add_argument(
        "--cache-dir",
        default=None,
        help="processed-data cache (default ~/.cache/kernel-corpus/train)",
    )
    args = parser.parse_args(argv)
    models = tuple(m.strip() for m in args.models.split(",") if m.strip())
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        parser.error(f"--models: unknown {', '.join(unknown)}; choose from {', '.join(MODELS)}")
    train = TrainConfig(
        epochs=args.epochs,
        lr=args.lr,
        runs_per_batch=args.runs_per_batch,
        patience=args.patience,
        device=args.device,
    )
    return ExperimentConfig(
        data=args.data,
        out=args.out,
        split=args.split,
        level=args.level,
        seeds=args.seeds,
        models=models,
        harvests=args.harvests,
        cache_dir=args.cache_dir,
        hidden=args.hidden,
        layers=args.layers,
        threads=args.threads,
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
        device = f"cuda:{local_rank}"
        from dataclasses import replace

        return replace(config, train=replace(config.train, device=device))
    return config


def main(argv: Sequence[str] | None = None) -> int:
    """Run the experiment with a progress bar; print the report table. Returns the exit code."""
    config = parse_args(argv)
    try:
        check_config(config)
    except ValueError as exc:
        print(f"python -m train: error: {exc}", file=sys.stderr)
        return 2
    config = _init_distributed(config)
    main_rank = distributed_world()[0] == 0
    console = Console(stderr=True, quiet=not main_rank)
    neural = [m for m in config.models if m in NEURAL]
    per_seed = len(neural) * config.train.epochs + len(config.models) - len(neural)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
        disable=not main_rank,
    ) as progress:
        task = progress.add_task("train", total=config.seeds * per_seed)

        def on_event(kind: str, info: dict[str, Any]) -> None:
            if kind == "loaded":
                source = "cache" if info["from_cache"] else "tables"
                console.print(
                    f"loaded {info['samples']} samples, {info['graphs']} graphs, "
                    f"{info['runs']} rankable runs from {source}"
                )
            elif kind == "epoch":
                tau = info.get("val_kendall_tau", float("nan"))
                description = (
                    f"seed {info['seed']} {info['model']} epoch {int(info['epoch'])} "
                    f"loss {info['loss']:.3f} val tau {tau:.3f}"
                )
                progress.update(task, advance=1, description=description)
            elif kind == "model" and info["model"] in neural:
                # Early stopping ends a model before its last epoch: jump to its share's end.
                done = (
                    info["seed"] * per_seed
                    + (neural.index(info["model"]) + 1) * config.train.epochs
                )
                progress.update(task, completed=done)
            elif kind == "model":
                progress.update(task, advance=1, description=f"seed {info['seed']} {info['model']}")

        try:
            run_experiment(config, on_event=on_event)
        except DatasetError as exc:  # unreadable or inconsistent dataset: say which file
            console.print(f"python -m train: error: {exc}")
            return 2
    if main_rank:
        report = Path(config.out) / "report.md"
        if report.exists():
            print(report.read_text())
        else:
            print(json.dumps({"out": config.out}))
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
    return 0
