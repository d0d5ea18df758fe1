"""Sequential tuners: given what has been measured of a run, which config to benchmark next.

A policy sees one run's configs by index (0..n-1) and the measurements so far as
``{index: latency_ms}`` (``inf`` for a config that failed: it cost a benchmark and found
nothing). :meth:`next` returns the next index, or None when the policy stops (everything is
measured, or ``--budget auto``'s expected improvement fell under its threshold). The offline
replay (:mod:`train.replay`) and the budgeted harvest drive the same objects.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Protocol

import numpy as np

from train.guide.improvement import ConfigSimilarity, EiSettings, belief, expected_improvement
from train.guide.surrogate import LfboSettings, good_probability

Measured = Mapping[int, float]
"""Config index -> measured latency in ms; ``math.inf`` for a config that failed."""


class Policy(Protocol):
    """A sequential tuner over one run's configs (see the module docstring)."""

    def next(self, measured: Measured) -> int | None:
        """Index of the config to benchmark next; None to stop."""


def _first_unmeasured(order: np.ndarray, measured: Measured) -> int | None:
    for index in order:
        if int(index) not in measured:
            return int(index)
    return None


def _log(values: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isfinite(values) & (values > 0), np.log(values), math.inf)


class LfboPolicy:
    """The default config first, then the classifier's most likely *good* config
    (:mod:`train.guide.surrogate`), refit after every measurement.

    Without a prior (``prior_rank`` None) the configs before the first fit come in a seeded
    random order, as Helion's random initial population; with one, they come in the offline
    model's order, the model's run-relative rank is a feature of the classifier, and it breaks
    the classifier's ties. ``features``: float [n, f] (:func:`train.guide.encoding.config_matrix`);
    ``prior_rank``: [n], 1 = the model's predicted fastest."""

    def __init__(
        self,
        features: np.ndarray,
        *,
        default: int | None,
        prior_rank: np.ndarray | None = None,
        seed: int = 0,
        initial: int = 2,
        settings: LfboSettings | None = None,
    ) -> None:
        n = len(features)
        self.seed = seed
        self.initial = initial
        self.settings = settings or LfboSettings()
        self.default = default
        if prior_rank is None:
            self.order = np.random.default_rng(seed).permutation(n)
            self.features = features
        else:
            self.order = np.argsort(prior_rank, kind="stable")
            relative = (np.asarray(prior_rank, dtype=np.float64) - 1) / max(1, n - 1)
            self.features = np.column_stack([features, relative])
        self.position = np.empty(n, dtype=np.int64)
        self.position[self.order] = np.arange(n)

    def next(self, measured: Measured) -> int | None:
        if len(measured) >= len(self.features):
            return None
        if not measured and self.default is not None:
            return self.default
        if len(measured) >= self.initial:
            indices = np.fromiter(measured, dtype=np.int64)
            log_ms = _log(np.array([measured[int(i)] for i in indices], dtype=np.float64))
            proba = good_probability(
                self.features,
                indices,
                log_ms,
                seed=self.seed + len(measured),
                settings=self.settings,
            )
            if proba is not None:
                open_ = np.array([i for i in range(len(self.features)) if i not in measured])
                best = np.lexsort((self.position[open_], -proba[open_]))[0]
                return int(open_[best])
        return _first_unmeasured(self.order, measured)


class EiPolicy:
    """The model's predicted best and the default config first (the harvest always measures
    the default: the reference its speed-ups are quoted against), then the config of highest
    expected improvement under the offline model's estimates, corrected by what the run has
    measured (:mod:`train.guide.improvement`); stops when that falls under
    ``settings.threshold`` (never, at 0). Until some config has run, configs come in the model's
    order and it never stops.

    ``predicted_ms``, ``p_valid``, ``rank``: [n] each, the model's verdict
    (:class:`train.guide.scoring.Scores`); ``features``: float [n, k], the configs' knobs
    (:func:`train.guide.encoding.knob_matrix`), which let a measurement inform its neighbours;
    None: it informs only the calibration."""

    def __init__(
        self,
        predicted_ms: np.ndarray,
        p_valid: np.ndarray,
        rank: np.ndarray,
        *,
        default: int | None,
        features: np.ndarray | None = None,
        settings: EiSettings | None = None,
    ) -> None:
        self.predicted_log_ms = _log(np.asarray(predicted_ms, dtype=np.float64))
        self.p_valid = np.asarray(p_valid, dtype=np.float64)
        self.order = np.argsort(rank, kind="stable")
        self.position = np.empty(len(self.order), dtype=np.int64)
        self.position[self.order] = np.arange(len(self.order))
        self.start = [int(self.order[0])] + (
            [default] if default not in (None, self.order[0]) else []
        )
        self.settings = settings or EiSettings()
        self.similarity = ConfigSimilarity(features, len(self.order), self.settings)
        self.last_ei: float | None = None
        """The largest expected improvement at the last decision (relative, log units)."""

    def next(self, measured: Measured) -> int | None:
        n = len(self.order)
        if len(measured) >= n:
            return None
        for index in self.start:
            if index not in measured:
                return index
        indices = np.fromiter(measured, dtype=np.int64)
        log_ms = _log(np.array([measured[int(i)] for i in indices], dtype=np.float64))
        if not np.isfinite(log_ms).any():
            return _first_unmeasured(self.order, measured)
        open_ = np.array([i for i in range(n) if i not in measured])
        believed = belief(
            self.predicted_log_ms, indices, log_ms, open_, self.similarity, self.settings
        )
        ei = expected_improvement(believed, self.p_valid[open_], float(log_ms.min()))
        self.last_ei = float(ei.max())
        if self.last_ei < math.log1p(self.settings.threshold):
            return None
        return int(open_[np.lexsort((self.position[open_], -ei))[0]])


def hedged_order(
    predicted_ms: np.ndarray,
    p_valid: np.ndarray,
    rank: np.ndarray,
    *,
    features: np.ndarray | None = None,
    settings: EiSettings | None = None,
) -> np.ndarray:
    """A static order (config indices, best first) for tuners that benchmark a fixed set of
    configs without looking at the results in between (``--budget K``, Triton's ``top_k``).

    The model's predicted best first; then, one at a time, the config of highest expected
    improvement (:class:`EiPolicy`, never stopping) with every config already chosen taken as
    measured at the model's own estimate. Such a "measurement" moves no belief, but it removes
    the uncertainty near the chosen configs: where the model's error is alike for nearby knobs,
    the next pick is a config nearly as promising in another part of the space rather than the
    neighbour of one already chosen, so one region the model is wrong about cannot take the
    whole budget. Arguments as :class:`EiPolicy`'s."""
    policy = EiPolicy(
        predicted_ms,
        p_valid,
        rank,
        default=None,
        features=features,
        settings=replace(settings or EiSettings(), threshold=0.0),
    )
    believed = np.exp(policy.predicted_log_ms)  # inf where the model gave no estimate
    chosen: dict[int, float] = {}
    while (index := policy.next(chosen)) is not None:
        chosen[index] = float(believed[index])
    return np.fromiter(chosen, dtype=np.int64, count=len(chosen))
