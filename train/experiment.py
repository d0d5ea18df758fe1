"""The experiment: splits, GNN and baselines per seed, metrics, checkpoint, report.

:func:`run_experiment` is what ``python -m train`` runs. For every seed it draws a split
(:func:`train.splits.assign_splits`, runs kept whole), fits the tabular and graph featurizers
on the training runs only, trains the GNN (early stopping on the validation runs) and fits
the baselines on the same training runs, then scores every model on the validation and test
runs with :func:`train.metrics.evaluate`. Outputs in ``out``: ``splits.parquet`` (seed,
run_id, split), ``checkpoint/`` (the first seed's GNN), and what
:func:`train.report.write_report` writes (metrics.json, report.md, plots).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
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
MODELS: tuple[str, ...] = (GNN, *BASELINES)
EVAL_PARTITIONS = ("val", "test")


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
    train: TrainConfig = field(default_factory=TrainConfig)


def check_config(config: ExperimentConfig) -> None:
    """Refuse bad options before any work starts (message names the option at fault)."""
    unknown = [m for m in config.models if m not in MODELS]
    if unknown:
        raise ValueError(
            f"--models: unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}"
        )
    if config.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {config.seeds}")
    if config.train.epochs < 1:
        raise ValueError(f"--epochs must be >= 1, got {config.train.epochs}")
    if config.level not in ("ttgir", "ttir"):
        raise ValueError(f"--level must be ttgir or ttir, got {config.level!r}")


def _is_main() -> bool:
    return not (dist.is_available() and dist.is_initialized()) or dist.get_rank() == 0


def graph_indices(frame: pl.DataFrame, graphs: LoadedDataset) -> np.ndarray:
    """Graph indices (into ``graphs.graphs``) of the IRs the rows of ``frame`` compiled to."""
    index = graphs.graphs.index_of()
    return np.array(
        sorted({index[i] for i in frame["ir_id"].drop_nulls().to_list() if i in index}),
        dtype=np.int64,
    )


def run_gnn(
    config: ExperimentConfig,
    seed: int,
    parts: dict[str, pl.DataFrame],
    tabular: TabularFeatures,
    loaded: LoadedDataset,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
) -> tuple[Checkpoint, dict[str, GraphSamples]]:
    """Fit the graph featurizer on the training graphs, train the GNN, return it as a
    checkpoint with the samples of every partition."""
    featurizer = GraphFeaturizer.fit(loaded.graphs, graph_indices(parts["train"], loaded))
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
    baselines = [m for m in config.models if m != GNN]
    for seed in range(config.seeds):
        splits = assign_splits(
            samples, config.split, seed, config.val_fraction, config.test_fraction
        )
        split_rows.append(splits.with_columns(pl.lit(seed).alias("seed")))
        parts = {p: split_frame(samples, splits, p) for p in ("train", *EVAL_PARTITIONS)}
        if GNN in config.models:
            tabular = TabularFeatures().fit(parts["train"])
            checkpoint, gnn_samples = run_gnn(
                config,
                seed,
                parts,
                tabular,
                loaded,
                lambda row, s=seed: emit("epoch", {"seed": s, **row}),
            )
            for partition in EVAL_PARTITIONS:
                if partition in gnn_samples:
                    pred = predict_samples(checkpoint.model, gnn_samples[partition])
                    results.append(
                        ModelResult.from_predictions(
                            GNN,
                            partition,
                            seed,
                            parts[partition],
                            pred.score,
                            predicted_ms=pred.latency_ms,
                            valid_pred=pred.p_valid > 0.5,
                            split_kind=config.split,
                        )
                    )
            if seed == 0 and _is_main():
                save_checkpoint(out / "checkpoint", checkpoint)
            emit("model", {"seed": seed, "model": GNN})
        if baselines and _is_main():
            results += evaluate_baselines(
                baselines, samples, splits, seed=seed, split_kind=config.split
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
