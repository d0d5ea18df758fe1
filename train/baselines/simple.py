"""Baselines that know nothing about performance: the floor any model must clear."""

from __future__ import annotations

import numpy as np
import polars as pl

from train.baselines.base import Baseline


class RandomBaseline(Baseline):
    """A seeded random order of every run's configs (expected Kendall tau 0, OPA 0.5)."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def predict(self, frame: pl.DataFrame, X: np.ndarray) -> np.ndarray:
        return np.random.default_rng(self.seed).random(frame.height)


class DefaultConfigBaseline(Baseline):
    """The spec's untuned default config first, the others in a seeded random order: what a
    user gets without tuning (its top-1 slowdown is the default's gap to the best)."""

    name = "default"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def predict(self, frame: pl.DataFrame, X: np.ndarray) -> np.ndarray:
        rest = 1.0 + np.random.default_rng(self.seed).random(frame.height)
        is_default = frame["is_default"].fill_null(False).to_numpy().astype(bool)
        return np.where(is_default, 0.0, rest)
