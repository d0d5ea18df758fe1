"""Baselines a learned cost model is compared with, on the same splits and features:
random, the spec's default config, an analytic rule and a tabular LightGBM ranker.

Common interface (:class:`Baseline`): ``fit(train_frame, X_train) -> self``,
``predict(frame, X) -> scores`` (lower = predicted faster), ``predict_ms``, ``predict_valid``.
"""

from __future__ import annotations

from collections.abc import Callable

from train.baselines.analytic import AnalyticBaseline
from train.baselines.base import Baseline
from train.baselines.simple import DefaultConfigBaseline, RandomBaseline
from train.baselines.tabular import TabularRanker

BASELINES: dict[str, Callable[[int], Baseline]] = {
    "random": RandomBaseline,
    "default": DefaultConfigBaseline,
    "analytic": AnalyticBaseline,
    "tabular": TabularRanker,
}
"""Baseline classes by name; each is constructed with the seed (``cls(seed=...)``)."""


def make_baseline(name: str, seed: int = 0) -> Baseline:
    """A fresh baseline by name; ``ValueError`` naming the known ones otherwise."""
    try:
        factory = BASELINES[name]
    except KeyError:
        raise ValueError(f"unknown baseline {name!r}; known: {', '.join(BASELINES)}") from None
    return factory(seed)


__all__ = [
    "BASELINES",
    "AnalyticBaseline",
    "Baseline",
    "DefaultConfigBaseline",
    "RandomBaseline",
    "TabularRanker",
    "make_baseline",
]
