"""The tabular baseline: LightGBM on the non-graph features plus graph summary counts.

Three gradient-boosted models share the :class:`~train.features.TabularFeatures` array:
a LambdaRank ranker with one query group per run (the score), a regressor on log latency
(milliseconds, for MAPE) and a classifier of validity (status ok). The strongest entries of
the TpuGraphs "Fast or Slow" competition show this kind of model is the bar a GNN has to
clear. Needs the optional ``train`` extra (``pip install kernel-corpus[train]``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from train.baselines.base import Baseline

RELEVANCE_LEVELS = 31
"""Relevance grades per run for LambdaRank: the fastest config gets 30, the slowest 0."""


@dataclass(frozen=True)
class TabularParams:
    """LightGBM settings. Small trees and subsampling: the data is a few thousand configs of
    a few dozen families, and held-out families punish memorizing."""

    num_boost_round: int = 300
    learning_rate: float = 0.05
    num_leaves: int = 15
    min_data_in_leaf: int = 10
    bagging_fraction: float = 0.8
    feature_fraction: float = 0.8
    lambda_l2: float = 1.0
    num_threads: int = 1

    def booster_params(self, objective: str, seed: int) -> dict[str, Any]:
        """Parameters of ``lightgbm.train`` (the native API: no scikit-learn needed)."""
        return {
            "objective": objective,
            "learning_rate": self.learning_rate,
            "num_leaves": self.num_leaves,
            "min_data_in_leaf": self.min_data_in_leaf,
            "bagging_fraction": self.bagging_fraction,
            "bagging_freq": 1,
            "feature_fraction": self.feature_fraction,
            "lambda_l2": self.lambda_l2,
            "num_threads": self.num_threads,
            "seed": seed,
            "deterministic": True,
            "force_row_wise": True,
            "verbosity": -1,
        }


def _lightgbm() -> Any:
    try:
        import lightgbm
    except ImportError as exc:  # the optional extra is missing
        raise ImportError(
            "the tabular baseline needs LightGBM: pip install 'kernel-corpus[train]'"
        ) from exc
    return lightgbm


def relevance_grades(run_ids: np.ndarray, median_ms: np.ndarray) -> np.ndarray:
    """Per-run integer grades 0..RELEVANCE_LEVELS-1 from where each config's log latency lies
    between its run's slowest (0) and fastest (top grade).

    Grading by value rather than by rank keeps magnitudes (a config 1 % off the best grades
    with it, one 10x slower does not) and turns near-ties, which timing noise could order
    either way, into ties. A run whose configs all take the same time grades them all top.
    """
    frame = pl.DataFrame(
        {"run": run_ids, "log_ms": np.log(np.asarray(median_ms, dtype=np.float64))}
    )
    worst = pl.col("log_ms").max().over("run")
    span = worst - pl.col("log_ms").min().over("run")
    position = pl.when(span > 0).then((worst - pl.col("log_ms")) / span).otherwise(1.0)
    return (
        (frame.select(position).to_series().to_numpy() * (RELEVANCE_LEVELS - 1))
        .round()
        .astype(np.int32)
    )


class TabularRanker(Baseline):
    """LightGBM LambdaRank (groups = runs) + log-latency regressor + validity classifier."""

    name = "tabular"

    def __init__(self, seed: int = 0, params: TabularParams | None = None) -> None:
        self.seed = seed
        self.params = params or TabularParams()
        self._ranker: Any = None
        self._regressor: Any = None
        self._classifier: Any = None
        self._constant_valid: bool | None = None

    def fit(self, train_frame: pl.DataFrame, X_train: np.ndarray) -> TabularRanker:
        """Fit on the training split: the ranker and regressor on valid configs of runs with
        at least two of them, the classifier on every row."""
        lgb = _lightgbm()
        if len(X_train) != train_frame.height:
            raise ValueError(f"X_train has {len(X_train)} rows, train_frame {train_frame.height}")
        valid = train_frame["valid"].to_numpy().astype(bool)
        runs = train_frame["run_id"].to_numpy()
        counts = pl.DataFrame({"run": runs[valid]}).group_by("run").len()
        rankable = set(counts.filter(pl.col("len") >= 2)["run"].to_list())
        use = valid & np.isin(runs, list(rankable))
        if not use.any():
            raise ValueError("the training split has no run with two valid configs to rank")
        order = np.flatnonzero(use)[np.argsort(runs[use], kind="stable")]
        ms = train_frame["median_ms"].to_numpy()
        _, group_sizes = np.unique(runs[order], return_counts=True)
        grades = relevance_grades(runs[order], ms[order])
        ranking = lgb.Dataset(X_train[order], grades, group=group_sizes, free_raw_data=True)
        rank_params = self.params.booster_params("lambdarank", self.seed)
        rank_params["label_gain"] = list(range(RELEVANCE_LEVELS))  # linear: every swap counts
        self._ranker = self._train(lgb, rank_params, ranking)
        regression = lgb.Dataset(X_train[use], np.log(ms[use]))
        self._regressor = self._train(
            lgb, self.params.booster_params("regression", self.seed), regression
        )
        if valid.all() or not valid.any():
            self._constant_valid = bool(valid[0])
        else:
            validity = lgb.Dataset(X_train, valid.astype(np.float64))
            self._classifier = self._train(
                lgb, self.params.booster_params("binary", self.seed), validity
            )
        return self

    def _train(self, lgb: Any, params: dict[str, Any], dataset: Any) -> Any:
        return lgb.train(params, dataset, num_boost_round=self.params.num_boost_round)

    def _fitted(self) -> None:
        if self._ranker is None:
            raise RuntimeError("TabularRanker used before fit")

    def predict(self, frame: pl.DataFrame, X: np.ndarray) -> np.ndarray:
        self._fitted()
        return -np.asarray(self._ranker.predict(X), dtype=np.float64)  # LightGBM: higher = better

    def predict_ms(self, frame: pl.DataFrame, X: np.ndarray) -> np.ndarray:
        self._fitted()
        return np.exp(np.asarray(self._regressor.predict(X), dtype=np.float64))

    def predict_p_valid(self, frame: pl.DataFrame, X: np.ndarray) -> np.ndarray:
        self._fitted()
        if self._classifier is None:
            return np.full(len(X), 1.0 if self._constant_valid else 0.0)
        return np.asarray(self._classifier.predict(X), dtype=np.float64)  # predicted P(ok)
