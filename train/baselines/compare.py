"""Run the baselines on seeded splits of a dataset and report them side by side."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from train.baselines import BASELINES, make_baseline
from train.baselines.base import Baseline
from train.clusters import cluster_families, family_op_sets
from train.data import load_dataset
from train.features import TabularFeatures
from train.report import ModelResult, write_report
from train.splits import assign_splits, split_frame
from train.tables import collapse_identical, load_samples


@dataclass(frozen=True)
class CompareConfig:
    """What ``python -m train.baselines`` runs."""

    data: str
    out: str | None = None
    split: str = "family"
    seeds: int = 5
    level: str = "ttgir"
    harvests: str = "latest"
    models: tuple[str, ...] = tuple(BASELINES)
    val_fraction: float = 0.2
    test_fraction: float = 0.2


@dataclass(frozen=True)
class FittedBaselines:
    """Baselines fitted on one split's training rows, as ``python -m train`` fits them."""

    train: pl.DataFrame
    """The rows they were fitted on (collapsed when asked)."""
    features: TabularFeatures
    """The tabular featurizer, fitted on :attr:`train`; transform each frame to judge with it."""
    models: dict[str, Baseline]
    """Fitted baselines by name."""


def fit_baselines(
    names: Sequence[str],
    train: pl.DataFrame,
    *,
    seed: int,
    collapse: bool = False,
    relative: bool = True,
) -> FittedBaselines:
    """Fit each named baseline on the training rows ``train`` (``collapse``: one config per
    distinct program, :func:`train.tables.collapse_identical`; features fitted there too,
    ``relative``: with run-relative copies). ``ValueError`` for an unknown name, before any
    fitting. The one way baselines are fitted: the evaluation and the replay
    (:mod:`train.replay`) both use it."""
    for name in names:
        make_baseline(name)  # refuse an unknown name before any fitting
    if collapse:
        train = collapse_identical(train)
    features = TabularFeatures(relative=relative).fit(train)
    x_train = features.transform(train)
    models = {name: make_baseline(name, seed).fit(train, x_train) for name in names}
    return FittedBaselines(train, features, models)


def evaluate_baselines(
    names: Sequence[str],
    frame: pl.DataFrame,
    splits: pl.DataFrame,
    *,
    seed: int,
    split_kind: str,
    partitions: Sequence[str] = ("val", "test"),
    collapse: bool = False,
    relative: bool = True,
) -> list[ModelResult]:
    """Fit each named baseline on the training runs of ``splits`` (:func:`fit_baselines`)
    and judge it on each of ``partitions`` (empty ones are skipped; ``train`` is judged on
    the rows it was fitted on)."""
    fitted = fit_baselines(
        names, split_frame(frame, splits, "train"), seed=seed, collapse=collapse, relative=relative
    )
    held_out = {
        p: fitted.train if p == "train" else split_frame(frame, splits, p) for p in partitions
    }
    results = []
    for name, model in fitted.models.items():
        for partition, part in held_out.items():
            if part.is_empty():
                continue
            x = fitted.features.transform(part)
            results.append(
                ModelResult.from_predictions(
                    name,
                    partition,
                    seed,
                    part,
                    model.predict(part, x),
                    predicted_ms=model.predict_ms(part, x),
                    p_valid=model.predict_p_valid(part, x),
                    split_kind=split_kind,
                )
            )
    return results


def compare_baselines(config: CompareConfig) -> list[ModelResult]:
    """Load ``config.data``, and for seeds 0..seeds-1 split it and evaluate every baseline;
    write the report to ``config.out`` when given. Returns every result."""
    for name in config.models:
        make_baseline(name)
    groups = None
    if config.split == "cluster":  # families grouped by their graphs' op sets
        loaded = load_dataset(config.data, level=config.level, harvests=config.harvests)
        frame = loaded.samples
        groups = cluster_families(family_op_sets(frame, loaded.graphs))
    else:
        frame = load_samples(config.data, level=config.level, harvests=config.harvests)
    results: list[ModelResult] = []
    for seed in range(config.seeds):
        splits = assign_splits(
            frame, config.split, seed, config.val_fraction, config.test_fraction, groups=groups
        )
        results += evaluate_baselines(  # fitted as python -m train fits them, by default
            config.models, frame, splits, seed=seed, split_kind=config.split, collapse=True
        )
    if config.out:
        meta = {
            "data": config.data,
            "level": config.level,
            "harvests": config.harvests,
            "samples": frame.height,
            "runs": frame["run_id"].n_unique(),
            "families": frame["family"].n_unique(),
        }
        write_report(config.out, results, title="Baselines", meta=meta)
    return results
