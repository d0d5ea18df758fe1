"""The experiment: splits, GNN and baselines per seed, metrics, checkpoint, report.

:func:`run_experiment` is what ``python -m train`` runs. For every seed it draws a split
(:func:`train.splits.assign_splits`, runs kept whole), fits the tabular and graph featurizers
on the training runs only, trains the GNN (early stopping on the validation runs) and fits
the baselines on the same training runs, then scores every model on the training, validation
and test runs (:func:`train.metrics.evaluate`; train beside val/test shows overfitting).
Outputs in ``out``: ``splits.parquet`` (seed, run_id, split), ``checkpoint/`` (the first
seed's GNN), ``checkpoints/seed-N/`` (seed N's, N >= 1, for :mod:`train.replay`), and what
:func:`train.report.write_report` writes (metrics.json, report.md, plots).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl
import torch
import torch.distributed as dist

from train.baselines import BASELINES
from train.baselines.compare import evaluate_baselines
from train.checkpoint import Checkpoint, save_checkpoint
from train.data import GraphSamples, LoadedDataset, load_dataset
from train.features import TabularFeatures
from train.fit import TrainConfig, predict_samples, train_model
from train.graphs import FeaturizedGraphs, GraphFeaturizer
from train.model import ModelConfig
from train.report import ModelResult, write_report
from train.splits import assign_splits, split_frame
from train.tables import ranked_runs

GNN = "gnn"
SIDE_MLP = "mlp"
"""The GNN's network without its graph branch (side features only): an ablation that shows
what the IR graphs add."""
NEURAL = (GNN, SIDE_MLP)
MODELS: tuple[str, ...] = (GNN, SIDE_MLP, *BASELINES)
PARTITIONS = ("train", "val", "test")
"""Every model is judged on all three: train next to val/test shows how much it overfits."""


@dataclass(frozen=True)
class ExperimentConfig:
    """Everything ``python -m train`` controls."""

    data: str
    out: str
    split: str = "family"
    level: str = "ttgir"
    seeds: int = 3
    models: tuple[str, ...] = MODELS
    harvests: str = "latest"
    val_fraction: float = 0.2
    test_fraction: float = 0.2
    cache_dir: str | None = None
    hidden: int = 64
    layers: int = 3
    dropout: float = 0.1
    threads: int | None = None
    """torch intra-op threads; None keeps torch's default. Small graph batches gain little from
    them, and on a busy machine 1 is often several times faster (scale out with torchrun)."""
    train: TrainConfig = field(default_factory=TrainConfig)


def check_config(config: ExperimentConfig) -> None:
    """Refuse bad options before any work starts (message names the option at fault)."""
    if "://" not in config.data and not Path(config.data).is_dir():
        raise ValueError(f"--data {config.data}: no such dataset directory")
    unknown = [m for m in config.models if m not in MODELS]
    if unknown:
        raise ValueError(
            f"--models: unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}"
        )
    if config.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {config.seeds}")
    if config.train.epochs < 1:
        raise ValueError(f"--epochs must be >= 1, got {config.train.epochs}")
    if config.threads is not None and config.threads < 1:
        raise ValueError(f"--threads must be >= 1, got {config.threads}")
    if config.level not in ("ttgir", "ttir"):
        raise ValueError(f"--level must be ttgir or ttir, got {config.level!r}")


def _is_main() -> bool:
    return not (dist.is_available() and dist.is_initialized()) or dist.get_rank() == 0


def run_gnn(
    config: ExperimentConfig,
    seed: int,
    parts: dict[str, pl.DataFrame],
    tabular: TabularFeatures,
    loaded: LoadedDataset,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
    *,
    use_graph: bool = True,
) -> tuple[Checkpoint, dict[str, GraphSamples]]:
    """Fit the graph featurizer on the training graphs, train the GNN (``use_graph=False``:
    its side-feature MLP alone), return it as a checkpoint with the samples of every
    partition."""
    featurizer = GraphFeaturizer.fit(loaded.graphs, loaded.graph_indices(parts["train"]))
    featurized: FeaturizedGraphs = featurizer.transform(loaded.graphs)
    samples = {
        p: GraphSamples(f, featurized, tabular.transform(f)) for p, f in parts.items() if f.height
    }
    model_config = ModelConfig(
        vocab_sizes=tuple(featurizer.vocab_sizes),
        num_numeric=featurizer.num_numeric,
        num_tab=len(tabular.names),
        hidden=config.hidden,
        layers=config.layers,
        dropout=config.dropout,
        use_graph=use_graph,
    )
    train_config = replace(config.train, seed=seed)
    fit = train_model(
        samples["train"], samples.get("val"), model_config, train_config, on_epoch=on_epoch
    )
    extra = {
        "train": asdict(train_config),
        "split": config.split,
        "seed": seed,
        "best_epoch": fit.best_epoch,
        "best_val_kendall_tau": fit.best_val,
        "history": fit.history,
        "dataset_key": loaded.key,
        "data": config.data,
    }
    return Checkpoint(fit.model, featurizer, tabular, config.level, extra), samples


def run_experiment(
    config: ExperimentConfig, *, on_event: Callable[[str, dict[str, Any]], None] | None = None
) -> list[ModelResult]:
    """Run the whole experiment; returns every :class:`train.report.ModelResult`.

    ``on_event(kind, info)`` is called with ("loaded", ...), ("epoch", ...), ("model", ...)
    for progress displays.
    """
    check_config(config)
    if config.threads:
        torch.set_num_threads(config.threads)
    emit = on_event or (lambda kind, info: None)
    loaded = load_dataset(
        config.data, level=config.level, harvests=config.harvests, cache_dir=config.cache_dir
    )
    samples = loaded.samples
    rankable = ranked_runs(samples)
    if not rankable:
        raise ValueError(f"{config.data}: no run has two valid configs; nothing to rank")
    emit(
        "loaded",
        {
            "samples": samples.height,
            "graphs": loaded.graphs.num_graphs,
            "runs": len(rankable),
            "from_cache": loaded.from_cache,
        },
    )
    out = Path(config.out)
    results: list[ModelResult] = []
    split_rows = []
    baselines = [m for m in config.models if m not in NEURAL]
    for seed in range(config.seeds):
        splits = assign_splits(
            samples, config.split, seed, config.val_fraction, config.test_fraction
        )
        split_rows.append(splits.with_columns(pl.lit(seed).alias("seed")))
        parts = {p: split_frame(samples, splits, p) for p in PARTITIONS}
        tabular = TabularFeatures().fit(parts["train"])
        for name in (m for m in NEURAL if m in config.models):
            checkpoint, neural_samples = run_gnn(
                config,
                seed,
                parts,
                tabular,
                loaded,
                lambda row, s=seed, n=name: emit("epoch", {"seed": s, "model": n, **row}),
                use_graph=name == GNN,
            )
            for partition, part_samples in neural_samples.items():
                pred = predict_samples(checkpoint.model, part_samples)
                results.append(
                    ModelResult.from_predictions(
                        name,
                        partition,
                        seed,
                        parts[partition],
                        pred.score,
                        predicted_ms=pred.latency_ms,
                        valid_pred=pred.p_valid > 0.5,
                        split_kind=config.split,
                    )
                )
            if name == GNN and _is_main():
                # Every seed's model, so a replay (python -m train.replay) has one per split.
                where = "checkpoint" if seed == 0 else f"checkpoints/seed-{seed}"
                save_checkpoint(out / where, checkpoint)
            emit("model", {"seed": seed, "model": name})
        if baselines and _is_main():
            results += evaluate_baselines(
                baselines,
                samples,
                splits,
                seed=seed,
                split_kind=config.split,
                partitions=PARTITIONS,
            )
            for name in baselines:
                emit("model", {"seed": seed, "model": name})
    if _is_main():
        out.mkdir(parents=True, exist_ok=True)
        pl.concat(split_rows).write_parquet(out / "splits.parquet")
        meta = {
            "data": config.data,
            "dataset_key": loaded.key,
            "split": config.split,
            "level": config.level,
            "seeds": config.seeds,
            "samples": samples.height,
            "rankable_runs": len(rankable),
            "epochs": config.train.epochs,
        }
        write_report(str(out), results, meta=meta)
    return results
