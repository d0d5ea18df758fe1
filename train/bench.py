"""``python -m train.bench``: how fast data gets to the model, and how training time scales.

On one dataset it prints:

- cold load (tables -> samples + encoded graphs) and cached load time;
- per dataset size (``--sizes``, configs; whole runs drawn in a seeded order until the size is
  reached): the data pipeline's rate (collating one epoch's run-grouped batches, samples/s),
  the time of one training epoch (collate + forward + backward + optimizer step, median of
  ``--passes``) and that time per 1,000 configs; then the growth check: epoch time per config
  at the largest size over that at the smallest must stay <= :data:`LINEAR_TOLERANCE`
  (training time grows no worse than linearly in configs);
- the pipeline / training-step ratio at the largest size (data loading must keep up: >=
  :data:`REQUIRED_RATIO`);
- per torch thread count (``--threads 1,2``): training-step samples/s at the largest size and
  its ratio to the first count, measured in this one run (the basis of ``python -m train``'s
  thread default); and the process's peak resident memory.

Exit status 1 when the growth check or the pipeline ratio fails. Datasets smaller than a size
are measured at their full size and say so. Figures on a loaded machine are distorted: quote
them with the load (``uptime``), and compare ratios from one run.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import polars as pl
import torch
from rich.console import Console
from rich.table import Table

from schemas import DatasetError
from schemas.argtypes import positive_int
from schemas.console import print_error
from train.data import GraphSamples, LoadedDataset, load_dataset
from train.experiment import NEURAL_MODES
from train.features import TabularFeatures
from train.graphs import GraphFeaturizer
from train.losses import LossWeights, total_loss
from train.model import CostModel, ModelConfig

REQUIRED_RATIO = 5.0
LINEAR_TOLERANCE = 1.25
"""Largest size's epoch time per config / the smallest size's: above this, training time grows
faster than linearly in configs."""
DEFAULT_SIZES = (500, 1000, 2000)
T = TypeVar("T")


@dataclass(frozen=True)
class BenchConfig:
    """What ``python -m train.bench`` measures on."""

    data: str
    level: str = "ttgir"
    model: str = "gnn"
    sizes: tuple[int, ...] = DEFAULT_SIZES
    runs_per_batch: int = 8
    passes: int = 3
    hidden: int = 64
    layers: int = 3
    threads: tuple[int, ...] = (1,)
    """torch intra-op thread counts: the first is used for the size sweep, all for the
    thread comparison."""


@dataclass(frozen=True)
class SizeResult:
    """One dataset size: configs (samples) and runs measured, pipeline samples/s, the median
    epoch time (s) and training-step samples/s (epoch minus its collation)."""

    requested: int
    samples: int
    runs: int
    pipeline_samples_per_s: float
    epoch_s: float
    step_samples_per_s: float

    @property
    def epoch_s_per_1000(self) -> float:
        return 1000.0 * self.epoch_s / self.samples


@dataclass(frozen=True)
class BenchResult:
    """Every figure of one benchmark run."""

    samples: int
    graphs: int
    cold_load_s: float
    cached_load_s: float
    sizes: list[SizeResult]
    step_by_threads: dict[int, float]
    peak_rss_bytes: int

    @property
    def growth(self) -> float:
        """Epoch time per config at the largest size / at the smallest (1.0 = linear)."""
        first, last = self.sizes[0], self.sizes[-1]
        return last.epoch_s_per_1000 / first.epoch_s_per_1000

    @property
    def ratio(self) -> float:
        """Pipeline / training-step samples/s at the largest size."""
        last = self.sizes[-1]
        return last.pipeline_samples_per_s / last.step_samples_per_s


def _timed(function: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[T, float]:
    begin = time.perf_counter()
    value = function(*args, **kwargs)
    return value, time.perf_counter() - begin


def subset_runs(samples: pl.DataFrame, configs: int, seed: int = 0) -> pl.DataFrame:
    """Rows of whole runs, drawn in a seeded order until at least ``configs`` rows (all rows
    when the dataset has fewer)."""
    sizes = samples.group_by("run_id").len().sort("run_id")
    order = np.random.default_rng(seed).permutation(sizes.height)
    counts = sizes["len"].to_numpy()[order]
    take = int(np.searchsorted(np.cumsum(counts), configs) + 1)
    chosen = sizes["run_id"].to_numpy()[order[:take]]
    return samples.filter(pl.col("run_id").is_in(chosen.tolist()))


def _prepare(
    loaded: LoadedDataset, requested: int, config: BenchConfig
) -> tuple[GraphSamples, CostModel]:
    """Samples of ``requested`` configs (featurizers fitted on them) and a fresh model."""
    frame = subset_runs(loaded.samples, requested)
    featurizer = GraphFeaturizer.fit(loaded.graphs, loaded.graph_indices(frame))
    tabular = TabularFeatures().fit(frame)
    mode = NEURAL_MODES[config.model]
    samples = GraphSamples(
        frame,
        featurizer.transform(loaded.graphs),
        tabular.transform(frame),
        config_sensitive=mode == "config",
    )
    torch.manual_seed(0)
    model = CostModel(
        ModelConfig(
            tuple(featurizer.vocab_sizes), featurizer.num_numeric, len(tabular.names),
            hidden=config.hidden, layers=config.layers, graph_mode=mode,
        )
    )  # fmt: skip
    return samples, model


def _epoch(
    samples: GraphSamples, model: CostModel, optimizer: Any, runs_per_batch: int, seed: int
) -> float:
    """Seconds of one training epoch (collation included)."""
    begin = time.perf_counter()
    model.train()
    for idx in samples.run_batches(runs_per_batch, shuffle=True, seed=seed):
        batch = samples.collate(idx)
        loss, _ = total_loss(model(batch), batch, LossWeights())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return time.perf_counter() - begin


def measure_size(loaded: LoadedDataset, requested: int, config: BenchConfig) -> SizeResult:
    """Pipeline rate and epoch time on ``requested`` configs of ``loaded``."""
    samples, model = _prepare(loaded, requested, config)
    batches = list(samples.run_batches(config.runs_per_batch, shuffle=True, seed=0))
    _, pipeline_s = _timed(lambda: [samples.collate(b) for b in batches])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    epochs = [
        _epoch(samples, model, optimizer, config.runs_per_batch, seed)
        for seed in range(config.passes)
    ]
    epoch_s = statistics.median(epochs)
    step_s = max(epoch_s - pipeline_s, 1e-9)
    return SizeResult(
        requested,
        len(samples),
        len(samples.run_ids),
        len(samples) / pipeline_s,
        epoch_s,
        len(samples) / step_s,
    )


def step_rate(loaded: LoadedDataset, requested: int, config: BenchConfig, threads: int) -> float:
    """Training-step samples/s (collation excluded) at ``requested`` configs with ``threads``
    intra-op threads (median of ``passes`` epochs)."""
    torch.set_num_threads(threads)
    samples, model = _prepare(loaded, requested, config)
    batches = [
        samples.collate(b) for b in samples.run_batches(config.runs_per_batch, shuffle=True, seed=0)
    ]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()
    rates = []
    for _ in range(config.passes):
        begin = time.perf_counter()
        for batch in batches:
            loss, _ = total_loss(model(batch), batch, LossWeights())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        rates.append(len(samples) / (time.perf_counter() - begin))
    return statistics.median(rates)


def run_bench(config: BenchConfig) -> BenchResult:
    """Measure on ``config.data`` (a private, fresh cache: the first load is cold)."""
    if not Path(config.data).exists() and "://" not in config.data:
        raise FileNotFoundError(
            f"--data {config.data}: no such dataset (run `make demo` or a harvest first)"
        )
    torch.set_num_threads(config.threads[0])
    with tempfile.TemporaryDirectory(prefix="train-bench-") as cache:
        loaded, cold = _timed(load_dataset, config.data, level=config.level, cache_dir=cache)
        loaded, cached = _timed(load_dataset, config.data, level=config.level, cache_dir=cache)
    assert loaded.from_cache
    sizes = [measure_size(loaded, n, config) for n in sorted(set(config.sizes))]
    largest = max(config.sizes)
    by_threads = {t: step_rate(loaded, largest, config, t) for t in config.threads}
    torch.set_num_threads(config.threads[0])
    return BenchResult(
        samples=loaded.samples.height,
        graphs=loaded.graphs.num_graphs,
        cold_load_s=cold,
        cached_load_s=cached,
        sizes=sizes,
        step_by_threads=by_threads,
        peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    )


def render(result: BenchResult, config: BenchConfig, console: Console) -> None:
    """Print the figures as tables."""
    console.print(
        f"train.bench: {result.samples} configs, {result.graphs} graphs in the dataset; model "
        f"{config.model}; {config.threads[0]} thread(s) for the size sweep; cold load "
        f"{result.cold_load_s:.2f} s, cached load {result.cached_load_s:.3f} s"
    )
    table = Table(title="epoch time by dataset size")
    for column in (
        "configs asked",
        "configs",
        "runs",
        "pipeline",
        "epoch",
        "epoch / 1,000 configs",
    ):
        table.add_column(column, justify="right")
    for size in result.sizes:
        note = "" if size.samples >= size.requested else " (all)"
        table.add_row(
            f"{size.requested:,}",
            f"{size.samples:,}{note}",
            f"{size.runs}",
            f"{size.pipeline_samples_per_s:,.0f} samples/s",
            f"{size.epoch_s:.2f} s",
            f"{size.epoch_s_per_1000:.2f} s",
        )
    console.print(table)
    growth_ok = result.growth <= LINEAR_TOLERANCE
    console.print(
        f"growth: epoch time per config at {result.sizes[-1].samples:,} configs / at "
        f"{result.sizes[0].samples:,} = {result.growth:.2f} "
        f"({'ok, no worse than linear' if growth_ok else f'above {LINEAR_TOLERANCE}: superlinear'})"
    )
    verdict = (
        "ok" if result.ratio >= REQUIRED_RATIO else f"below the required {REQUIRED_RATIO:.0f}x"
    )
    console.print(f"pipeline / training step at the largest size: {result.ratio:.1f}x ({verdict})")
    threads = Table(title=f"training step by torch threads ({result.sizes[-1].samples:,} configs)")
    for column in ("threads", "step", "vs first"):
        threads.add_column(column, justify="right")
    first = next(iter(result.step_by_threads.values()))
    for count, rate in result.step_by_threads.items():
        threads.add_row(str(count), f"{rate:,.0f} samples/s", f"{rate / first:.2f}x")
    console.print(threads)
    console.print(f"peak RSS {result.peak_rss_bytes / 2**20:.0f} MiB")


def _counts(text: str) -> tuple[int, ...]:
    items = tuple(positive_int(part) for part in text.split(",") if part.strip())
    if not items:
        raise argparse.ArgumentTypeError(f"expected comma-separated counts, got {text!r}")
    return items


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m train.bench",
        description="How fast data gets to the model, and how training time scales with the "
        "dataset's size and torch's thread count.",
    )
    parser.add_argument(
        "--data", default="demo-dataset", help="dataset directory (default: demo-dataset)"
    )
    parser.add_argument(
        "--level",
        choices=("ttgir", "ttir"),
        default="ttgir",
        help="IR level of the graphs (default ttgir)",
    )
    parser.add_argument(
        "--model",
        choices=tuple(NEURAL_MODES),
        default="gnn",
        help="the neural model whose training step is timed (default gnn)",
    )
    parser.add_argument(
        "--sizes",
        type=_counts,
        default=DEFAULT_SIZES,
        help="dataset sizes in configs, comma-separated (default 500,1000,2000)",
    )
    parser.add_argument(
        "--runs-per-batch",
        type=positive_int,
        default=8,
        help="runs per training batch (default 8)",
    )
    parser.add_argument(
        "--passes",
        type=positive_int,
        default=3,
        help="epochs per measurement, the median taken (default 3)",
    )
    parser.add_argument(
        "--threads",
        type=_counts,
        default=(1, 2),
        help="torch thread counts to compare, comma-separated; the first runs the size sweep "
        "(default 1,2)",
    )
    args = parser.parse_args(argv)
    config = BenchConfig(
        args.data,
        args.level,
        args.model,
        tuple(args.sizes),
        args.runs_per_batch,
        args.passes,
        threads=tuple(args.threads),
    )
    try:
        result = run_bench(config)
    except (FileNotFoundError, DatasetError) as exc:  # bad input: one line, no traceback
        print_error(Console(stderr=True), str(exc))
        return 2
    render(result, config, Console())
    return 0 if result.ratio >= REQUIRED_RATIO and result.growth <= LINEAR_TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
