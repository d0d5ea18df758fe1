"""An in-loop surrogate refit on what a tuner has measured so far: likelihood-free Bayesian
optimization (LFBO; Song et al. 2022) as Helion's ``LFBOPatternSearch`` uses it.

The tuner does not regress latency. It labels each measured config *good* when its latency is
within the best ``quantile`` of the finite latencies measured so far (Helion's default 0.1),
every other config and every failed one *bad*, weighs good configs by how far they beat the
threshold (normalized to mean 1; bad ones weigh 1), and fits a random-forest classifier
(``criterion="log_loss"``, 100 trees, as Helion does). P(good) of an unmeasured config then
orders the next benchmark: maximizing it maximizes expected improvement under LFBO's recipe,
and a failed config teaches the classifier as well as a slow one does.

Differences from Helion's, and why: latencies are compared in log space (weights are relative
improvements, so runs of any latency scale weigh alike); configs are benchmarked one at a time
from a finite list (the run's configs), so Helion's neighbour generation and batch diversity
penalty have nothing to do here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LfboSettings:
    """Knobs of the classifier (defaults: Helion's)."""

    quantile: float = 0.1
    """Finite latencies at or under this quantile of those measured are *good*."""
    trees: int = 100
    min_weight: float = 1e-5
    """Floor of a good config's margin, so all-equal latencies still weigh (Helion's clip)."""


def labels_and_weights(
    log_ms: np.ndarray, quantile: float, min_weight: float
) -> tuple[np.ndarray, np.ndarray]:
    """LFBO's training targets for measured configs: ``log_ms`` float [n] (inf = failed) ->
    (labels int [n], 1 = good; sample weights float [n]). Good configs weigh their margin under
    the threshold, normalized to mean 1; bad ones weigh 1. Without a finite latency every
    label is 0."""
    finite = np.isfinite(log_ms)
    if not finite.any():
        return np.zeros(len(log_ms), dtype=np.int64), np.ones(len(log_ms))
    threshold = np.quantile(log_ms[finite], quantile)
    good = finite & (log_ms <= threshold)
    margin = np.where(good, np.maximum(min_weight, threshold - np.where(finite, log_ms, 0.0)), 0.0)
    weights = np.where(good, margin / margin[good].mean(), 1.0)
    return good.astype(np.int64), weights


def good_probability(
    features: np.ndarray,
    measured: np.ndarray,
    log_ms: np.ndarray,
    *,
    seed: int,
    settings: LfboSettings | None = None,
) -> np.ndarray | None:
    """P(good) of every row of ``features`` (float [n_configs, n_features]) from a classifier
    fitted on the rows ``measured`` (int indices [m]) with their ``log_ms`` (float [m], inf for
    a failed config). None when the labels hold one class only (nothing to learn yet)."""
    try:
        from sklearn.ensemble import RandomForestClassifier
    except ImportError:  # an optional dependency: say how to get it
        raise ImportError(
            "the LFBO surrogate needs scikit-learn: pip install -e '.[train]'"
        ) from None

    settings = settings or LfboSettings()
    labels, weights = labels_and_weights(log_ms, settings.quantile, settings.min_weight)
    if labels.min() == labels.max():
        return None
    forest = RandomForestClassifier(
        n_estimators=settings.trees, criterion="log_loss", random_state=seed, n_jobs=1
    )
    forest.fit(features[measured], labels, sample_weight=weights)
    column = list(forest.classes_).index(1)
    return np.asarray(forest.predict_proba(features))[:, column]
