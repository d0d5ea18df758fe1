"""Training the GNN (train.fit, train.model, train.losses) on a real harvest."""

from __future__ import annotations

import shutil

import numpy as np

from train.baselines import make_baseline
from train.data import load_dataset
from train.experiment import ExperimentConfig, run_gnn
from train.features import TabularFeatures
from train.fit import TrainConfig, predict_samples
from train.losses import pairwise_hinge, ranking_pairs
from train.metrics import evaluate
from train.splits import assign_splits, split_frame

MARGIN = 0.2
"""The GNN's mean per-run Kendall tau on held-out families must beat random ranking's by this
much (mean over 3 seeded family splits; measured ~0.5 vs ~0.0 on the test harvest)."""


def _parts(samples, seed):
    splits = assign_splits(samples, "family", seed)
    return splits, {p: split_frame(samples, splits, p) for p in ("train", "val", "test")}


def _measured(frame):
    return np.where(
        frame["valid"].to_numpy(), frame["median_ms"].fill_null(np.nan).to_numpy(), np.nan
    )


def test_a_few_epochs_lower_the_training_loss(harvested, cache_dir):
    loaded = load_dataset(harvested, cache_dir=cache_dir)
    _, parts = _parts(loaded.samples, 0)
    config = ExperimentConfig(
        data=harvested, out="", hidden=32, train=TrainConfig(epochs=8, patience=100)
    )
    checkpoint, _ = run_gnn(
        config, 0, {"train": parts["train"]}, TabularFeatures().fit(parts["train"]), loaded
    )
    history = checkpoint.extra["history"]
    assert len(history) == 8
    assert history[-1]["loss"] < history[0]["loss"]


def test_ranking_pairs_skip_other_runs_and_near_ties(harvested, cache_dir):
    loaded = load_dataset(harvested, cache_dir=cache_dir)
    _, parts = _parts(loaded.samples, 0)
    config = ExperimentConfig(data=harvested, out="", train=TrainConfig(epochs=1))
    _, samples = run_gnn(
        config, 0, {"train": parts["train"]}, TabularFeatures().fit(parts["train"]), loaded
    )
    batch = samples["train"].collate(np.arange(len(samples["train"])))
    fast, slow = ranking_pairs(batch)
    assert len(fast) > 0
    assert (batch.group[fast] == batch.group[slow]).all()
    assert (
        batch.log_latency[slow] - batch.log_latency[fast]
        > batch.tie_tol[fast] + batch.tie_tol[slow]
    ).all()
    # A perfect score (the latency itself) with margin 0 has zero loss; its reverse does not.
    assert float(pairwise_hinge(batch.log_latency, fast, slow, 0.0)) == 0.0
    assert float(pairwise_hinge(-batch.log_latency, fast, slow, 0.0)) > 0.0


def test_beats_random_on_held_out_families(harvested, cache_dir):
    loaded = load_dataset(harvested, cache_dir=cache_dir)
    gnn_taus, random_taus = [], []
    for seed in range(3):
        _, parts = _parts(loaded.samples, seed)
        tabular = TabularFeatures().fit(parts["train"])
        config = ExperimentConfig(data=harvested, out="", train=TrainConfig(epochs=15, seed=seed))
        checkpoint, samples = run_gnn(config, seed, parts, tabular, loaded)
        test = parts["test"]
        pred = predict_samples(checkpoint.model, samples["test"])
        gnn_taus.append(
            evaluate(test["run_id"].to_numpy(), _measured(test), pred.score)["kendall_tau"]
        )
        x = tabular.transform(test)
        random = make_baseline("random", seed).fit(
            parts["train"], tabular.transform(parts["train"])
        )
        random_taus.append(
            evaluate(test["run_id"].to_numpy(), _measured(test), random.predict(test, x))[
                "kendall_tau"
            ]
        )
    assert np.mean(gnn_taus) >= np.mean(random_taus) + MARGIN, (gnn_taus, random_taus)


def test_early_stopping_keeps_the_best_validation_epoch(harvested, cache_dir):
    loaded = load_dataset(harvested, cache_dir=cache_dir)
    _, parts = _parts(loaded.samples, 1)
    tabular = TabularFeatures().fit(parts["train"])
    config = ExperimentConfig(data=harvested, out="", train=TrainConfig(epochs=6, patience=2))
    checkpoint, samples = run_gnn(config, 1, parts, tabular, loaded)
    history = checkpoint.extra["history"]
    taus = [row["val_kendall_tau"] for row in history]
    best = checkpoint.extra["best_epoch"]
    assert taus[best - 1] == max(taus)
    assert len(history) <= 6 and len(history) - best <= 2
    # The returned weights are the best epoch's: re-evaluating gives its tau.
    val = parts["val"]
    pred = predict_samples(checkpoint.model, samples["val"])
    assert np.isclose(
        evaluate(val["run_id"].to_numpy(), _measured(val), pred.score)["kendall_tau"], max(taus)
    )


def test_a_dataset_without_ir_graphs_trains_on_side_features(harvested, tmp_path):
    copy = tmp_path / "no-ir"
    shutil.copytree(harvested, copy, ignore=shutil.ignore_patterns("ir_*"))
    loaded = load_dataset(str(copy), cache_dir=tmp_path / "cache")
    assert loaded.graphs.num_graphs == 0 and loaded.samples.height > 0
    _, parts = _parts(loaded.samples, 0)
    config = ExperimentConfig(data=str(copy), out="", train=TrainConfig(epochs=2))
    checkpoint, samples = run_gnn(config, 0, parts, TabularFeatures().fit(parts["train"]), loaded)
    assert (samples["test"].graph_index == -1).all()
    out = predict_samples(checkpoint.model, samples["test"])
    assert np.isfinite(out.score).all() and np.isfinite(out.latency_ms).all()
