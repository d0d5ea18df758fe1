"""Expected improvement from a cost model's latency estimates, corrected by the configs
measured so far: what ``--budget auto`` stops on.

A config's true log latency is taken as ``a + b * log(predicted_ms) + e(config)``: the model's
estimate, calibrated on the run, plus an error that varies smoothly over the configs' knobs.

- **Calibration.** Before anything is measured ``a = 0``, ``b = 1`` (the model taken at its
  word) and the error's spread is :data:`EiSettings.prior_sigma`. Each measurement shows the
  model's error on this run: ``a`` and ``b`` are refitted by least squares of measured on
  predicted log latency, ``b`` shrunk towards 1 (``prior_weight`` pseudo-observations) and kept
  >= 0 (a model whose order the measurements contradict stops informing the order); the
  residuals' spread (m - 1 degrees of freedom), pooled with the prior spread, becomes sigma.
- **The error over configs.** ``e`` is a Gaussian process of that sigma whose correlation
  between two configs falls with the distance of their knobs (:class:`ConfigSimilarity`):
  a config measured slower than calibrated makes its neighbours expected slower too, and
  uncertainty shrinks near what was measured. So where the model is wrong about a whole region
  of the space (a kernel unlike any it was trained on), the tuner moves away from it instead
  of working down the model's order. Without knobs to compare (``features`` None) configs'
  errors are independent and only the calibration learns.

A config's expected improvement over the best latency found is the Gaussian EI in log space
(a relative improvement: 0.01 = 1 % faster), times the model's probability that it runs at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm


@dataclass(frozen=True)
class EiSettings:
    """When ``--budget auto`` stops, and what it assumes before it has measured anything."""

    threshold: float = 0.01
    """Stop when no unmeasured config is expected to improve the best by this fraction."""
    prior_sigma: float = 0.5
    """Spread (std of log latency) of the model's error assumed before any measurement: 0.5 is
    a factor of 1.65 either way."""
    prior_weight: float = 2.0
    """How many measurements the prior spread counts as when pooled with observed residuals."""
    lengthscale: float = 1.0
    """Knob distance (root mean square over knobs of the difference in each knob's standard
    deviations across the run) at which two configs' errors are correlated exp(-1/2) = 0.61."""
    noise_sigma: float = 0.05
    """Benchmark noise (std of a measured log latency) assumed: 0.05 is about 5 %."""


@dataclass(frozen=True)
class Calibration:
    """The model's error on one run, from its measured configs (log-latency units): true log
    latency ~ N(offset + slope * predicted, sigma^2)."""

    offset: float
    slope: float
    sigma: float


def calibrate(
    predicted_log_ms: np.ndarray, measured_log_ms: np.ndarray, settings: EiSettings
) -> Calibration:
    """Fit the model's error on a run from the measured configs' predicted and measured log
    latencies (float [m] each; non-finite measurements, failed configs, are ignored)."""
    finite = np.isfinite(measured_log_ms) & np.isfinite(predicted_log_ms)
    x, y = predicted_log_ms[finite], measured_log_ms[finite]
    if y.size == 0:
        return Calibration(0.0, 1.0, settings.prior_sigma)
    dx, dy = x - x.mean(), y - y.mean()
    shrink = settings.prior_weight * max(float((dx**2).mean()), 1e-12)
    slope = max(0.0, float((dx * dy).sum() + shrink) / float((dx**2).sum() + shrink))
    offset = float(y.mean() - slope * x.mean())
    residuals = y - (offset + slope * x)
    spread = settings.prior_weight * settings.prior_sigma**2 + float((residuals**2).sum())
    # The offset absorbs one measurement's worth of residual: m - 1 degrees of freedom.
    return Calibration(offset, slope, math.sqrt(spread / (settings.prior_weight + y.size - 1)))


class ConfigSimilarity:
    """Correlation of the model's error between the configs of one run:
    ``exp(-d^2 / (2 lengthscale^2))``, d the root mean square over ``features`` (float [n, f],
    :func:`train.guide.encoding.knob_matrix`) of their difference in units of that feature's
    standard deviation over the run; features constant over the run are ignored. Configs are
    only alike to themselves when ``features`` is None or nothing varies. Blocks are computed
    on demand (:meth:`between`): a tuner needs measured x unmeasured, never n x n."""

    def __init__(self, features: np.ndarray | None, n: int, settings: EiSettings) -> None:
        self.lengthscale = settings.lengthscale
        self.scaled: np.ndarray | None = None
        if features is None:
            return
        values = np.asarray(features, dtype=np.float64).reshape(n, -1)
        spread = values.std(axis=0)
        varying = spread > 1e-9
        if varying.any():
            self.scaled = (values[:, varying] - values[:, varying].mean(axis=0)) / spread[varying]

    def between(self, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """float [len(rows), len(columns)]: the correlation of each pair of config indices."""
        if self.scaled is None:
            return (rows[:, None] == columns[None, :]).astype(np.float64)
        a, b = self.scaled[rows], self.scaled[columns]
        squared = np.zeros((len(rows), len(columns)))
        for feature in range(a.shape[1]):  # one [rows, columns] block at a time, not x features
            squared += (a[:, feature, None] - b[None, :, feature]) ** 2
        squared /= a.shape[1]
        return np.exp(-0.5 * squared / self.lengthscale**2)


@dataclass(frozen=True)
class Belief:
    """What the tuner believes of the unmeasured configs' log latency: Gaussian, float [k]
    means and standard deviations."""

    mean: np.ndarray
    sigma: np.ndarray


def belief(
    predicted_log_ms: np.ndarray,
    measured: np.ndarray,
    measured_log_ms: np.ndarray,
    candidates: np.ndarray,
    similarity: ConfigSimilarity,
    settings: EiSettings,
) -> Belief:
    """The belief about ``candidates`` (int [k], config indices) given the configs ``measured``
    (int [m]) and their log latencies (float [m], inf for a failure, which says nothing of its
    latency): the calibrated model plus the Gaussian-process posterior of its error.
    ``predicted_log_ms``: float [n] over every config."""
    calibration = calibrate(predicted_log_ms[measured], measured_log_ms, settings)
    prior_mean = calibration.offset + calibration.slope * predicted_log_ms[candidates]
    known = np.isfinite(measured_log_ms) & np.isfinite(predicted_log_ms[measured])
    seen = measured[known]
    variance = calibration.sigma**2
    if seen.size == 0:
        return Belief(prior_mean, np.full(candidates.shape, calibration.sigma))
    errors = measured_log_ms[known] - (calibration.offset + calibration.slope * predicted_log_ms[seen])
    gram = variance * similarity.between(seen, seen) + settings.noise_sigma**2 * np.eye(seen.size)
    cross = variance * similarity.between(candidates, seen)
    weights = np.linalg.solve(gram, cross.T)  # [m', k]
    mean = prior_mean + weights.T @ errors
    remaining = variance - np.einsum("km,mk->k", cross, weights)
    return Belief(mean, np.sqrt(np.clip(remaining, 1e-12, None)))


def expected_improvement(belief: Belief, p_valid: np.ndarray, best_log_ms: float) -> np.ndarray:
    """EI (relative, log units) of each believed config over ``best_log_ms``: ``p_valid`` x
    sigma (z Phi(z) + phi(z)), z = (best - mean) / sigma."""
    z = (best_log_ms - belief.mean) / belief.sigma
    gain = belief.sigma * (z * norm.cdf(z) + norm.pdf(z))
    return np.clip(p_valid, 0.0, 1.0) * np.where(np.isfinite(gain), gain, 0.0)
