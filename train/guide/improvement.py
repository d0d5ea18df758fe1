"""Expected improvement from a cost model's latency estimates, calibrated on the configs
measured so far: what ``--budget auto`` stops on.

A config's true log latency is taken as Gaussian around ``a + b * log(predicted_ms)``.
Before anything is measured ``a = 0``, ``b = 1`` (the model taken at its word) and the spread
is :data:`EiSettings.prior_sigma`. Each measurement shows the model's error on this run: ``a``
and ``b`` are refitted by least squares of measured on predicted log latency, ``b`` shrunk
towards 1 (``prior_weight`` pseudo-observations) and kept >= 0 (a model whose order the
measurements contradict stops informing the order, and its spread shows up as uncertainty);
the residuals' spread (m - 1 degrees of freedom), pooled with the prior spread, becomes the
new sigma. A config's expected improvement over the best latency found is the Gaussian EI in
log space (a relative improvement: 0.01 = 1 % faster), times the model's probability that it
runs at all.
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


def expected_improvement(
    predicted_log_ms: np.ndarray, p_valid: np.ndarray, best_log_ms: float, calibration: Calibration
) -> np.ndarray:
    """EI (relative, log units) of each config over ``best_log_ms``: ``p_valid`` x
    sigma (z Phi(z) + phi(z)), z = (best - mean) / sigma, mean = offset + slope x prediction."""
    sigma = calibration.sigma
    mean = calibration.offset + calibration.slope * predicted_log_ms
    z = (best_log_ms - mean) / sigma
    gain = sigma * (z * norm.cdf(z) + norm.pdf(z))
    return np.clip(p_valid, 0.0, 1.0) * np.where(np.isfinite(gain), gain, 0.0)
