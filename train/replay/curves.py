"""Regret of a tuner after each benchmark, for one run.

A run's configs have latencies (ms; ``inf`` or NaN for a config that failed). A tuner
benchmarks them one at a time; after ``b`` benchmarks its *regret* is
``best_found / best - 1`` (0 = it holds the run's true best; 0.02 = 2 % slower). Before it has
found any config that runs, its regret is that of the run's slowest valid config (it has
nothing better to ship than the worst: a convention, stated wherever figures are shown).

Two kinds of tuner:

- A **static order** with ties (a model's scores; ``random`` is "every config tied", and
  ``default`` is "the default config, then the rest tied"): configs are taken group by group in
  score order, in uniformly random order within a group. Its *expected* regret curve and
  expected number of benchmarks to reach a tolerance are computed exactly
  (:func:`expected_curve`, :func:`expected_needed`), no sampling.
- A **realized order** (an adaptive tuner's sequence of benchmarks): :func:`order_curve`,
  :func:`order_needed`.
"""

from __future__ import annotations

import math

import numpy as np


def _valid(latency_ms: np.ndarray) -> np.ndarray:
    latency = np.asarray(latency_ms, dtype=np.float64)
    return np.isfinite(latency) & (latency > 0)


def _reference(latency_ms: np.ndarray) -> tuple[float, float]:
    """(best, worst) valid latency of a run; ``ValueError`` when no config is valid."""
    valid = _valid(latency_ms)
    if not valid.any():
        raise ValueError("a run without a valid config has no regret to measure")
    latency = np.asarray(latency_ms, dtype=np.float64)[valid]
    return float(latency.min()), float(latency.max())


def _none_left(size: int, blocked: int, picks: np.ndarray) -> np.ndarray:
    """P(a uniformly random ``picks``-subset of ``size`` items misses ``blocked`` given items):
    C(size - blocked, k) / C(size, k) for each k in ``picks``."""
    out = np.ones(len(picks))
    for i in range(blocked):
        out *= np.clip((size - i - picks) / (size - i), 0.0, None)
    return out


def _group_values(
    group_ms: np.ndarray, cap: float, fallback: float, picks: np.ndarray
) -> np.ndarray:
    """E[best latency held after k random picks from a group] for each k in ``picks``: the
    smallest of ``cap`` (the best found before the group; inf = nothing yet) and the picks'
    valid latencies, ``fallback`` when that is still nothing."""
    size = len(group_ms)
    valid = np.sort(group_ms[_valid(group_ms)])
    below = valid[valid < cap]
    expected = np.zeros(len(picks))
    miss_before = np.ones(len(picks))
    for j, value in enumerate(below):
        miss_after = _none_left(size, j + 1, picks)
        expected += (miss_before - miss_after) * value
        miss_before = miss_after
    return expected + miss_before * (cap if math.isfinite(cap) else fallback)


def _groups(scores: np.ndarray) -> list[np.ndarray]:
    """Config indices grouped by equal score, groups in ascending score order."""
    order = np.argsort(scores, kind="stable")
    ordered = np.asarray(scores)[order]
    cuts = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
    return np.split(order, cuts)


def expected_curve(scores: np.ndarray, latency_ms: np.ndarray) -> np.ndarray:
    """Expected regret after b = 1..n benchmarks (float [n]) of the static order that takes
    configs by ascending ``scores`` (float [n]), ties in uniformly random order."""
    latency = np.where(_valid(latency_ms), np.asarray(latency_ms, dtype=np.float64), math.inf)
    best, worst = _reference(latency)
    curve: list[np.ndarray] = []
    cap = math.inf
    for group in _groups(np.asarray(scores)):
        picks = np.arange(1, len(group) + 1)
        curve.append(_group_values(latency[group], cap, worst, picks) / best - 1.0)
        cap = min(cap, float(latency[group].min()))
    return np.concatenate(curve)


def _good(latency_ms: np.ndarray, tolerance: float) -> np.ndarray:
    best, _ = _reference(latency_ms)
    latency = np.asarray(latency_ms, dtype=np.float64)
    return _valid(latency) & (latency <= best * (1 + tolerance) * (1 + 1e-12))


def expected_needed(scores: np.ndarray, latency_ms: np.ndarray, tolerance: float) -> float:
    """Expected benchmarks until the static order of ``scores`` (ties random) holds a config
    within ``tolerance`` of the run's best (0: the best itself). A group of ``s`` configs of
    which ``m`` are good takes (s + 1) / (m + 1) draws in expectation to reach one."""
    good = _good(latency_ms, tolerance)
    before = 0.0
    for group in _groups(np.asarray(scores)):
        hits = int(good[group].sum())
        if hits:
            return before + (len(group) + 1) / (hits + 1)
        before += len(group)
    raise AssertionError("the best config is always good")


def order_curve(order: np.ndarray, latency_ms: np.ndarray, n_configs: int) -> np.ndarray:
    """Regret after b = 1..n_configs benchmarks of a realized order (config indices [m],
    m <= n_configs). A tuner that stopped after m keeps its regret at m."""
    latency = np.where(_valid(latency_ms), np.asarray(latency_ms, dtype=np.float64), math.inf)
    best, worst = _reference(latency)
    found = np.minimum.accumulate(latency[np.asarray(order, dtype=np.int64)])
    regret = np.where(np.isfinite(found), found, worst) / best - 1.0
    if len(regret) == 0:
        return np.full(n_configs, worst / best - 1.0)
    return np.concatenate([regret, np.full(n_configs - len(regret), regret[-1])])


def order_needed(order: np.ndarray, latency_ms: np.ndarray, tolerance: float) -> float:
    """Benchmarks a realized order took to hold a config within ``tolerance`` of the best;
    inf when it stopped before that."""
    good = _good(latency_ms, tolerance)
    hits = np.flatnonzero(good[np.asarray(order, dtype=np.int64)])
    return float(hits[0] + 1) if hits.size else math.inf
