"""The interface every baseline (and any model compared beside them) follows."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
import polars as pl


class Baseline(ABC):
    """A cost model over the samples table.

    ``frame`` is a samples table (:func:`train.tables.load_samples`) and ``X`` its
    :class:`train.features.TabularFeatures` array, row for row. Scores follow the metrics'
    convention: **lower = predicted faster**, compared only within a run.
    """

    name: str = "baseline"

    def fit(self, train_frame: pl.DataFrame, X_train: np.ndarray) -> Baseline:
        """Learn from the training split (rows of every status). Returns ``self``."""
        return self

    @abstractmethod
    def predict(self, frame: pl.DataFrame, X: np.ndarray) -> np.ndarray:
        """Score per row, float64 [n_rows]; lower = faster."""

    def predict_ms(self, frame: pl.DataFrame, X: np.ndarray) -> np.ndarray | None:
        """Predicted latency per row in ms, or None when the baseline predicts only an order."""
        return None

    def predict_p_valid(self, frame: pl.DataFrame, X: np.ndarray) -> np.ndarray:
        """Predicted probability that each row's config runs (status ok), float64 [n_rows];
        default: every config runs (1.0)."""
        return np.ones(frame.height, dtype=np.float64)

    def predict_valid(self, frame: pl.DataFrame, X: np.ndarray) -> np.ndarray:
        """Predicted validity per row, bool [n_rows]: ``predict_p_valid >= 0.5``."""
        return self.predict_p_valid(frame, X) >= 0.5
