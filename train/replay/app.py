"""``python -m train.replay``: replay tuners on the held-out runs of a trained model.

``--model DIR`` is a checkpoint directory (``checkpoint.json`` + weights) or a ``python -m
train`` output directory; every checkpoint found there (``DIR``, ``DIR/*``, ``DIR/*/*``) is
one seed. A checkpoint records its split kind and seed; its held-out runs are the ``test``
runs of that seed in the ``splits.parquet`` beside it (the checkpoint's directory, its parent
or grandparent), else of the same split recomputed from ``--data`` with default fractions. A
checkpoint without a split (a model trained on everything) treats every run of ``--data`` as
held out, and the report says so.

Per seed, the baselines that learn (LightGBM) are fitted on the seed's training runs, and every
strategy of :mod:`train.replay.strategies` tunes every held-out run with at least two valid
configs. Nothing runs on a GPU; no benchmark is repeated: the dataset's measurements are the
ground truth.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from train.baselines import make_baseline
from train.data import read_ir_tables
from train.features import TabularFeatures
from train.guide import EiSettings, GuideModel, Scores, load_model, score_candidates
from train.replay.strategies import (
    NEEDS_MODEL,
    STRATEGIES,
    RunOutcome,
    replay_run,
    run_inputs,
)
from train.splits import assign_splits, split_frame
from train.tables import HARVEST_MODES, load_samples, ranked_runs

SPLITS_FILE = "splits.parquet"
HELD_OUT = "test"
"""The partition replayed: val runs chose the model's best epoch, so only test runs are unseen."""


@dataclass(frozen=True)
class ReplayConfig:
    """Everything ``python -m train.replay`` controls."""

    data: str
    model: str
    out: str | None = None
    strategies: tuple[str, ...] = STRATEGIES
    repeats: int = 3
    """Seeded draws per run of the randomized adaptive tuner (``lfbo``)."""
    harvests: str = "latest"
    threads: int | None = None
    ei_threshold: float = EiSettings().threshold


def check_config(config: ReplayConfig) -> None:
    """Refuse bad options before any work starts (``ValueError`` naming the option)."""
    if "://" not in config.data and not Path(config.data).is_dir():
        raise ValueError(f"--data {config.data}: no such dataset directory")
    if not Path(config.model).is_dir():
        raise ValueError(f"--model {config.model}: no such directory")
    if not checkpoint_dirs(Path(config.model)):
        raise ValueError(
            f"--model {config.model}: no checkpoint.json in it or its subdirectories "
            "(give a python -m train --out directory or its checkpoint/)"
        )
    unknown = [s for s in config.strategies if s not in STRATEGIES]
    if unknown:
        raise ValueError(
            f"--strategies: unknown {', '.join(unknown)}; known: {', '.join(STRATEGIES)}"
        )
    if config.repeats < 1:
        raise ValueError(f"--repeats must be >= 1, got {config.repeats}")
    if config.harvests not in HARVEST_MODES:
        raise ValueError(f"--harvests must be one of {', '.join(HARVEST_MODES)}")
    if not 0 < config.ei_threshold < 1:
        raise ValueError(f"--ei-threshold must be in (0, 1), got {config.ei_threshold}")


def checkpoint_dirs(root: Path) -> list[Path]:
    """Directories holding a ``checkpoint.json``: ``root`` itself, else its children and
    grandchildren (sorted by path)."""
    if (root / "checkpoint.json").is_file():
        return [root]
    return sorted(
        p.parent
        for pattern in ("*/checkpoint.json", "*/*/checkpoint.json")
        for p in root.glob(pattern)
    )


@dataclass(frozen=True)
class SeedModel:
    """One checkpoint and the split it was trained on."""

    path: Path
    model: GuideModel
    split: str | None
    seed: int


def seed_models(root: Path) -> list[SeedModel]:
    """Every checkpoint under ``root``, one per (split, seed): the first in path order wins
    (``python -m train`` writes seed 0's to ``OUT/checkpoint``, seed N's to
    ``OUT/checkpoints/seed-N``)."""
    chosen: dict[tuple[str | None, int], SeedModel] = {}
    for path in checkpoint_dirs(root):
        model = load_model(path)
        extra = model.checkpoint.extra
        split = extra.get("split")
        seed = int(extra.get("seed", 0))
        chosen.setdefault((split, seed), SeedModel(path, model, split, seed))
    return list(chosen.values())


def _splits_near(path: Path) -> Path | None:
    for directory in (path, path.parent, path.parent.parent):
        if (directory / SPLITS_FILE).is_file():
            return directory / SPLITS_FILE
    return None


def partitions(
    samples: pl.DataFrame, seed_model: SeedModel
) -> tuple[pl.DataFrame, pl.DataFrame, str | None]:
    """(training rows, held-out rows, a note for the report or None) of one seed."""
    if seed_model.split is None:
        return (
            samples.clear(),
            samples,
            (
                f"{seed_model.path.name} records no split (trained on everything?): every run of "
                "--data counts as held out"
            ),
        )
    stored = _splits_near(seed_model.path)
    splits = None
    if stored is not None:
        table = pl.read_parquet(stored)
        if "seed" in table.columns:
            table = table.filter(pl.col("seed") == seed_model.seed)
        if table.height and samples.join(table, on="run_id", how="semi").height:
            splits = table.select("run_id", "split")
    note = None
    if splits is None:
        splits = assign_splits(samples, seed_model.split, seed_model.seed)
        note = (
            f"seed {seed_model.seed}: no {SPLITS_FILE} matching --data beside the checkpoint; the "
            f"{seed_model.split} split was recomputed with default fractions"
        )
    return split_frame(samples, splits, "train"), split_frame(samples, splits, HELD_OUT), note


def static_scores(
    names: Sequence[str], train: pl.DataFrame, held: pl.DataFrame, seed: int
) -> dict[str, np.ndarray]:
    """Scores (lower = predicted faster) of the analytic rule and LightGBM on ``held``, fitted
    on ``train`` as ``python -m train`` fits them (LightGBM is left out without training runs)."""
    wanted = [
        n
        for n in ("analytic", "tabular")
        if n in names and not (n == "tabular" and train.is_empty())
    ]
    if not wanted:
        return {}
    # The analytic rule learns nothing; without training runs its features are fitted on the
    # held-out rows, which holds no label.
    features = TabularFeatures().fit(held if train.is_empty() else train)
    x_train, x_held = features.transform(train), features.transform(held)
    return {
        name: np.asarray(
            make_baseline(name, seed).fit(train, x_train).predict(held, x_held), dtype=np.float64
        )
        for name in wanted
    }


def replay_seed(
    config: ReplayConfig,
    samples: pl.DataFrame,
    seed_model: SeedModel,
    ir_tables: tuple[pl.DataFrame, pl.DataFrame],
) -> tuple[list[RunOutcome], str | None]:
    """Every strategy on every replayable held-out run of one seed."""
    train, held, note = partitions(samples, seed_model)
    held = held.filter(pl.col("run_id").is_in(ranked_runs(held))).sort("run_id", "config_id")
    if held.is_empty():
        return [], f"seed {seed_model.seed}: no held-out run with two valid configs"
    scores = static_scores(config.strategies, train, held, seed_model.seed)
    strategies = [s for s in config.strategies if s != "tabular" or "tabular" in scores]
    model = None
    if NEEDS_MODEL & set(config.strategies):
        model = score_candidates(seed_model.model, held, *ir_tables)
    ei = EiSettings(threshold=config.ei_threshold)
    outcomes = []
    bounds = (
        held.with_row_index("__i")
        .group_by("run_id", maintain_order=True)
        .agg(pl.col("__i").min().alias("start"), pl.len().alias("n"))
    )
    for start, n in bounds.select("start", "n").iter_rows():
        rows = slice(start, start + n)
        run = run_inputs(
            held.slice(start, n),
            {name: values[rows] for name, values in scores.items()},
            None
            if model is None
            else Scores(model.rank[rows], model.predicted_ms[rows], model.p_valid[rows]),
        )
        for name in strategies:
            outcomes.append(
                replay_run(name, run, seed=seed_model.seed, repeats=config.repeats, ei=ei)
            )
    return outcomes, note


def run_replay(
    config: ReplayConfig, *, on_seed: Callable[[int, int], None] | None = None
) -> tuple[list[RunOutcome], dict[str, Any]]:
    """Replay every seed; returns the outcomes and the report's metadata. ``on_seed(seed,
    runs)`` is called after each seed (progress)."""
    check_config(config)
    if config.threads:
        import torch

        torch.set_num_threads(config.threads)
    models = seed_models(Path(config.model))
    level = models[0].model.level
    samples = load_samples(config.data, level=level, harvests=config.harvests)
    ir_tables = read_ir_tables(config.data, level)
    outcomes: list[RunOutcome] = []
    notes = []
    for seed_model in sorted(models, key=lambda m: m.seed):
        mine, note = replay_seed(config, samples, seed_model, ir_tables)
        outcomes += mine
        if note:
            notes.append(note)
        if on_seed:
            on_seed(seed_model.seed, len({o.run_id for o in mine}))
    runs = {(o.seed, o.run_id): o.n_configs for o in outcomes}
    meta = {
        "data": config.data,
        "model": ", ".join(m.model.name for m in models),
        "split": ", ".join(sorted({str(m.split) for m in models})),
        "seeds": sorted(m.seed for m in models),
        "runs": len(runs),
        "configs": int(sum(runs.values())),
        "repeats": config.repeats,
        "ei_threshold": config.ei_threshold,
        "strategies": list(config.strategies),
        "notes": notes,
    }
    return outcomes, meta
