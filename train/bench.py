"""``python -m train.bench``: how fast data gets to the model, and how fast the model trains.

Prints cold load time (tables -> samples + encoded graphs), cached load time, featurization
time, samples/s of the data pipeline (collating run-grouped batches) and of a training step
(forward, backward, optimizer step on those batches), their ratio (data loading must keep up:
>= 5x the step rate), and the process's peak resident memory.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch
from rich.console import Console
from rich.table import Table

from train.data import GraphSamples, LoadedDataset, load_dataset
from train.features import TabularFeatures
from train.graphs import GraphFeaturizer
from train.losses import LossWeights, total_loss
from train.model import CostModel, ModelConfig

REQUIRED_RATIO = 5.0
T = TypeVar("T")


@dataclass(frozen=True)
class BenchConfig:
    """What ``python -m train.bench`` measures on."""

    data: str
    level: str = "ttgir"
    runs_per_batch: int = 8
    passes: int = 3
    hidden: int = 64
    layers: int = 3
    threads: int | None = None
    """torch intra-op threads for the training step (None: torch's default)."""


@dataclass(frozen=True)
class BenchResult:
    """Figures of one benchmark (seconds, samples per second, bytes)."""

    samples: int
    graphs: int
    cold_load_s: float
    cached_load_s: float
    featurize_s: float
    pipeline_samples_per_s: float
    step_samples_per_s: float
    peak_rss_bytes: int

    @property
    def ratio(self) -> float:
        return self.pipeline_samples_per_s / self.step_samples_per_s


def _timed(function: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[T, float]:
    begin = time.perf_counter()
    value = function(*args, **kwargs)
    return value, time.perf_counter() - begin


def run_bench(config: BenchConfig) -> BenchResult:
    """Measure on ``config.data`` (a private, fresh cache: the first load is cold)."""
    if not Path(config.data).exists() and "://" not in config.data:
        raise FileNotFoundError(
            f"--data {config.data}: no such dataset (run `make demo` or a harvest first)"
        )
    torch.manual_seed(0)
    if config.threads:
        torch.set_num_threads(config.threads)
    with tempfile.TemporaryDirectory(prefix="train-bench-") as cache:
        loaded, cold = _timed(load_dataset, config.data, level=config.level, cache_dir=cache)
        loaded, cached = _timed(load_dataset, config.data, level=config.level, cache_dir=cache)
    assert loaded.from_cache
    (samples, featurizer), featurize = _timed(_featurize, loaded)
    batches = list(samples.run_batches(config.runs_per_batch, shuffle=True, seed=0)) * config.passes
    n = sum(len(b) for b in batches)
    collated, pipeline_s = _timed(lambda: [samples.collate(b) for b in batches])
    model = CostModel(ModelConfig(tuple(featurizer.vocab_sizes), featurizer.num_numeric, samples.tab.shape[1],
                                  hidden=config.hidden, layers=config.layers))  # fmt: skip
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()

    def steps() -> None:
        for batch in collated:
            loss, _ = total_loss(model(batch), batch, LossWeights())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

    _, step_s = _timed(steps)
    return BenchResult(
        samples=len(samples),
        graphs=loaded.graphs.num_graphs,
        cold_load_s=cold,
        cached_load_s=cached,
        featurize_s=featurize,
        pipeline_samples_per_s=n / pipeline_s,
        step_samples_per_s=n / step_s,
        peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    )


def _featurize(loaded: LoadedDataset) -> tuple[GraphSamples, GraphFeaturizer]:
    featurizer = GraphFeaturizer.fit(loaded.graphs, np.arange(loaded.graphs.num_graphs))
    tabular = TabularFeatures().fit(loaded.samples)
    return GraphSamples(
        loaded.samples, featurizer.transform(loaded.graphs), tabular.transform(loaded.samples)
    ), featurizer


def render(result: BenchResult, console: Console) -> None:
    """Print the figures as a table."""
    threads = torch.get_num_threads()
    table = Table(
        title=f"train.bench: {result.samples} samples, {result.graphs} graphs, {threads} thread(s)"
    )
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("cold load (tables -> samples + graphs)", f"{result.cold_load_s:.2f} s")
    table.add_row(
        "cached load",
        f"{result.cached_load_s:.3f} s ({result.cold_load_s / result.cached_load_s:.0f}x faster)",
    )
    table.add_row("featurize (fit + transform)", f"{result.featurize_s:.3f} s")
    table.add_row("data pipeline", f"{result.pipeline_samples_per_s:,.0f} samples/s")
    table.add_row("training step", f"{result.step_samples_per_s:,.0f} samples/s")
    verdict = (
        "ok" if result.ratio >= REQUIRED_RATIO else f"below the required {REQUIRED_RATIO:.0f}x"
    )
    table.add_row("pipeline / step", f"{result.ratio:.1f}x ({verdict})")
    table.add_row("peak RSS", f"{result.peak_rss_bytes / 2**20:.0f} MiB")
    console.print(table)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.bench", description=__doc__)
    parser.add_argument(
        "--data", default="demo-dataset", help="dataset directory (default: demo-dataset)"
    )
    parser.add_argument("--level", choices=("ttgir", "ttir"), default="ttgir")
    parser.add_argument("--runs-per-batch", type=int, default=8)
    parser.add_argument(
        "--passes", type=int, default=3, help="epochs over the data per measurement"
    )
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads (default: torch's)"
    )
    args = parser.parse_args(argv)
    config = BenchConfig(
        args.data, args.level, args.runs_per_batch, args.passes, threads=args.threads
    )
    try:
        result = run_bench(config)
    except FileNotFoundError as exc:
        parser.error(str(exc))
    render(result, Console())
    return 0 if result.ratio >= REQUIRED_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
