"""Run the baselines on seeded splits of a dataset and report them side by side."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from train.baselines import BASELINES, make_baseline
from train.features import TabularFeatures
from train.report import ModelResult, write_report
from train.splits import assign_splits, split_frame
from train.tables import load_samples


@dataclass(frozen=True)
class CompareConfig:
    """What ``python -m train.baselines`` runs."""

    data: str
    out: str | None = None
    split: str = "family"
    seeds: int = 3
    level: str = "ttgir"
    harvests: str = "latest"
    models: tuple[str, ...] = tuple(BASELINES)
    val_fraction: float = 0.2
    test_fraction: float = 0.2


def evaluate_baselines(
    names: Sequence[str],
    frame: pl.DataFrame,
    splits: pl.DataFrame,
    *,
    seed: int,
    split_kind: str,
    partitions: Sequence[str] = ("val", "test"),
) -> list[ModelResult]:
    """Fit each named baseline on the training runs of ``splits`` (features fitted there too)
    and judge it on each of ``partitions`` (empty ones are skipped)."""
    for name in names:
        make_baseline(name)  # refuse an unknown name before any fitting
    train = split_frame(frame, splits, "train")
    features = TabularFeatures().fit(train)
    x_train = features.transform(train)
    held_out = {p: split_frame(frame, splits, p) for p in partitions}
    results = []
    for name in names:
        model = make_baseline(name, seed).fit(train, x_train)
        for partition, part in held_out.items():
            if part.is_empty():
                continue
            x = features.transform(part)
            results.append(
                ModelResult.from_predictions(
                    name,
                    partition,
                    seed,
                    part,
                    model.predict(part, x),
                    predicted_ms=model.predict_ms(part, x),
                    valid_pred=model.predict_valid(part, x),
                    split_kind=split_kind,
                )
            )
    return results


def compare_baselines(config: CompareConfig) -> list[ModelResult]:
    """Load ``config.data``, and for seeds 0..seeds-1 split it and evaluate every baseline;
    write the report to ``config.out`` when given. Returns every result."""
    for name in config.models:
        make_baseline(name)
    frame = load_samples(config.data, level=config.level, harvests=config.harvests)
    results: list[ModelResult] = []
    for seed in range(config.seeds):
        splits = assign_splits(frame, config.split, seed, config.val_fraction, config.test_fraction)
        results += evaluate_baselines(
            config.models, frame, splits, seed=seed, split_kind=config.split
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
