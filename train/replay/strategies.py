"""The tuners the replay compares, each turned into a regret curve on one held-out run.

Static orders (expected curves, exact; ties in random order):

- ``random``: every config tied.
- ``default``: the family's default config first, then the rest in random order.
- ``analytic``, ``tabular`` (LightGBM), ``model`` (the ``--model`` checkpoint): configs by the
  model's score, fitted on the seed's training runs (``model`` was trained on them).
- ``hedged``: the model's best first, then by expected improvement with each config already
  chosen taken as measured at the model's estimate (:func:`train.guide.hedged_order`): the
  model's order spread over the knob space, what the Triton plug-in's ``top_k`` benchmarks.
- ``budget``: what ``--budget K`` benchmarks for K = 1, 2, ...: the hedged order's first
  config, the default config (a harvest always measures it), then the rest of the hedged order.
- ``remeasured`` (only with ``--remeasured DIR``): configs by the latencies another harvest of
  the same runs measured. A ranking that knows every config's latency as measured once: judged
  on ``--data``'s own measurement, what it needs is the floor the labels' reproducibility sets.

Adaptive tuners (realized orders, averaged over ``repeats`` seeded draws):

- ``lfbo``: the default config, then Helion-style LFBO refit after every benchmark
  (:class:`train.guide.LfboPolicy`), random initial picks.
- ``lfbo+model``: the same with the offline model as prior: its order for the initial picks
  (no default first), its rank as a feature of the classifier, its order to break ties.
- ``ei``: ``--budget auto``'s policy (:class:`train.guide.EiPolicy`) without its stop: the
  model's best and the default config, then the highest expected improvement under the model's
  estimates corrected by what the run has measured (nearby knobs alike).
- ``auto``: the same policy, stopping when the expected improvement falls under the
  threshold. Judged by what it spends and the regret it stops at.

An adaptive replay stops simulating a run once it holds the true best (its regret stays 0), except
``auto``, whose stopping point is the measurement.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import numpy as np
import polars as pl

from train.guide import EiPolicy, EiSettings, LfboPolicy, Policy, Scores, hedged_order
from train.guide.encoding import config_matrix, knob_matrix
from train.replay.curves import expected_curve, expected_needed, order_curve, order_needed

REMEASURED = "remeasured"
BUDGET = "budget"
STATIC = ("random", "default", "analytic", "tabular", "model", "hedged", BUDGET, REMEASURED)
ADAPTIVE = ("lfbo", "lfbo+model", "ei")
AUTO = "auto"
KNOWN: tuple[str, ...] = (*STATIC, *ADAPTIVE, AUTO)
STRATEGIES: tuple[str, ...] = tuple(s for s in KNOWN if s != REMEASURED)
"""The tuners replayed by default (``remeasured`` needs a second measurement of the runs)."""
NEEDS_MODEL = frozenset({"model", "hedged", BUDGET, "lfbo+model", "ei", AUTO})
TOLERANCES = (0.05, 0.02, 0.0)
"""Regret levels whose cost (benchmarks to reach) the table reports: 5 %, 2 %, the best."""


@dataclass(frozen=True)
class RunOutcome:
    """One strategy on one held-out run (of one seed)."""

    seed: int
    run_id: str
    family: str
    strategy: str
    n_configs: int
    curve: np.ndarray
    """Expected (static) or mean realized (adaptive) regret after b = 1..n_configs benchmarks."""
    needed: dict[float, float]
    """Benchmarks to reach each of :data:`TOLERANCES` (expected or mean; inf: never, ``auto``)."""
    spent: float | None = None
    """``auto`` only: benchmarks spent before it stopped (mean over draws)."""


@dataclass(frozen=True)
class RunInputs:
    """What every strategy may use about one run: its rows (samples table), latencies (ms, inf
    for failed configs), the default config's index, and each static model's scores."""

    run_id: str
    family: str
    frame: pl.DataFrame
    latency_ms: np.ndarray
    default: int | None
    static_scores: Mapping[str, np.ndarray]
    model: Scores | None


def run_inputs(
    frame: pl.DataFrame, static_scores: Mapping[str, np.ndarray], model: Scores | None
) -> RunInputs:
    """Bundle one run's rows with its slices of the per-row scores (aligned with ``frame``)."""
    latency = np.where(
        frame["valid"].to_numpy().astype(bool),
        frame["median_ms"].fill_null(math.inf).to_numpy().astype(np.float64),
        math.inf,
    )
    defaults = np.flatnonzero(frame["is_default"].fill_null(False).to_numpy().astype(bool))
    return RunInputs(
        run_id=str(frame["run_id"][0]),
        family=str(frame["family"][0]),
        frame=frame,
        latency_ms=latency,
        default=int(defaults[0]) if defaults.size else None,
        static_scores=static_scores,
        model=model,
    )


def _static_scores(name: str, run: RunInputs, ei: EiSettings) -> np.ndarray:
    n = len(run.latency_ms)
    if name == "random":
        return np.zeros(n)
    if name == "default":
        scores = np.ones(n)
        if run.default is not None:
            scores[run.default] = 0.0
        return scores
    if name == "model":
        assert run.model is not None
        return run.model.rank.astype(np.float64)
    if name in ("hedged", BUDGET):
        assert run.model is not None
        order = hedged_order(
            run.model.predicted_ms,
            run.model.p_valid,
            run.model.rank,
            features=knob_matrix(run.frame),
            settings=ei,
        ).tolist()
        if name == BUDGET and run.default is not None and run.default not in order[:2]:
            order.remove(run.default)
            order.insert(1, run.default)
        scores = np.empty(n)
        scores[order] = np.arange(n)
        return scores
    return run.static_scores[name]


def drive(policy: Policy, latency_ms: np.ndarray, *, stop_at_best: bool) -> np.ndarray:
    """Let ``policy`` benchmark configs of a run until it stops (or, with ``stop_at_best``,
    until it holds the run's best); returns the indices it benchmarked, in order."""
    finite = np.isfinite(latency_ms)
    best = latency_ms[finite].min()
    measured: dict[int, float] = {}
    order: list[int] = []
    while (index := policy.next(measured)) is not None:
        if index in measured:
            raise RuntimeError(f"policy {type(policy).__name__} proposed config {index} twice")
        measured[index] = float(latency_ms[index])
        order.append(index)
        if stop_at_best and finite[index] and latency_ms[index] <= best:
            break
    return np.asarray(order, dtype=np.int64)


def _policy_factory(name: str, run: RunInputs, ei: EiSettings) -> Callable[[int], Policy]:
    if name in (AUTO, "ei"):
        assert run.model is not None
        model = run.model
        knobs = knob_matrix(run.frame)
        settings = ei if name == AUTO else replace(ei, threshold=0.0)
        return lambda seed: EiPolicy(
            model.predicted_ms,
            model.p_valid,
            model.rank,
            default=run.default,
            features=knobs,
            settings=settings,
        )
    features = config_matrix(run.frame)
    if name == "lfbo+model":
        assert run.model is not None
        rank = run.model.rank
        return lambda seed: LfboPolicy(features, default=None, prior_rank=rank, seed=seed)
    return lambda seed: LfboPolicy(features, default=run.default, seed=seed)


def replay_run(name: str, run: RunInputs, *, seed: int, repeats: int, ei: EiSettings) -> RunOutcome:
    """``name``'s outcome on ``run``: exact for static orders, the mean over ``repeats``
    seeded draws for adaptive ones (``auto``, ``ei`` and ``lfbo+model`` are deterministic: one
    draw)."""
    n = len(run.latency_ms)
    base = {"seed": seed, "run_id": run.run_id, "family": run.family, "strategy": name}
    if name in STATIC:
        scores = _static_scores(name, run, ei)
        return RunOutcome(
            **base,
            n_configs=n,
            curve=expected_curve(scores, run.latency_ms),
            needed={t: expected_needed(scores, run.latency_ms, t) for t in TOLERANCES},
        )
    make = _policy_factory(name, run, ei)
    draws = 1 if name in (AUTO, "ei", "lfbo+model") else repeats
    orders = [
        drive(make(seed * 1000 + draw), run.latency_ms, stop_at_best=name != AUTO)
        for draw in range(draws)
    ]
    return RunOutcome(
        **base,
        n_configs=n,
        curve=np.mean([order_curve(o, run.latency_ms, n) for o in orders], axis=0),
        needed={
            t: float(np.mean([order_needed(o, run.latency_ms, t) for o in orders]))
            for t in TOLERANCES
        },
        spent=float(np.mean([len(o) for o in orders])) if name == AUTO else None,
    )
