"""From per-run outcomes to the replay's tables: per strategy, per family, with intervals over
seeds.

Per seed, every figure is the mean over that seed's held-out runs (each run weighs the same).
Across seeds: the mean and a 95 % Student-t interval (half-width shown after ``±``); one seed
has no interval. ``vs random`` is, per seed, the strategy's mean benchmarks to reach 2 %
regret divided by random's, then averaged over seeds (the goal for model-guided tuners:
<= 0.25).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import t as student_t

from train.replay.strategies import AUTO, TOLERANCES, RunOutcome

FRACTIONS = (0.01, 0.05, 0.10, 0.20)
"""Budgets, as fractions of a run's configs, at which regret is reported (at least 1 config)."""
GOAL = 0.25


def budget_of(fraction: float, n_configs: int) -> int:
    """Benchmarks a budget of ``fraction`` of a run's ``n_configs`` allows: ceil, at least 1."""
    return max(1, math.ceil(fraction * n_configs - 1e-9))


def one_benchmark_note(n_configs: Iterable[int]) -> str:
    """A note for runs so small that every budget of :data:`FRACTIONS` is one benchmark (at
    most 5 configs: 20 % of 5), where the *regret @ p%* columns all repeat the regret after the
    first benchmark and read as a bug; '' otherwise. ``n_configs``: each replayed run's."""
    sizes = list(n_configs)
    if not sizes or any(budget_of(max(FRACTIONS), n) > 1 for n in sizes):
        return ""
    shares = " to ".join(f"{f:.0%}" for f in (min(FRACTIONS), max(FRACTIONS)))
    return (
        f"runs have at most {max(sizes)} configs: {shares} of a run's configs is one benchmark "
        "in every run, so each regret @ p% column is the regret after the first benchmark"
    )


def regret_at(outcome: RunOutcome, fraction: float) -> float:
    """The outcome's regret after :func:`budget_of` benchmarks."""
    return float(outcome.curve[budget_of(fraction, outcome.n_configs) - 1])


@dataclass(frozen=True)
class Estimate:
    """A figure over seeds: mean, 95 % half-width (None with one seed), seeds."""

    mean: float
    half_width: float | None
    seeds: int

    def format(self, digits: int = 2, percent: bool = False) -> str:
        scale, unit = (100.0, "%") if percent else (1.0, "")
        if not math.isfinite(self.mean):
            return "-"
        text = f"{self.mean * scale:.{digits}f}{unit}"
        if self.half_width is not None and math.isfinite(self.half_width):
            text += f" ± {self.half_width * scale:.{digits}f}"
        return text

    def to_dict(self) -> dict[str, float | int | None]:
        return {"mean": self.mean, "ci95_half_width": self.half_width, "seeds": self.seeds}


def estimate(per_seed: Sequence[float]) -> Estimate:
    """Mean and 95 % t-interval half-width of per-seed values (non-finite values dropped)."""
    values = np.asarray([v for v in per_seed if math.isfinite(v)], dtype=np.float64)
    if values.size == 0:
        return Estimate(math.nan, None, 0)
    if values.size == 1:
        return Estimate(float(values[0]), None, 1)
    half = student_t.ppf(0.975, values.size - 1) * values.std(ddof=1) / math.sqrt(values.size)
    return Estimate(float(values.mean()), float(half), int(values.size))


def _per_seed(outcomes: Sequence[RunOutcome], value) -> dict[int, float]:
    seeds: dict[int, list[float]] = {}
    for outcome in outcomes:
        seeds.setdefault(outcome.seed, []).append(value(outcome))
    return {seed: float(np.mean(values)) for seed, values in sorted(seeds.items())}


@dataclass(frozen=True)
class StrategyRow:
    """One strategy's line of the report, each figure over seeds: runs replayed, benchmarks to
    reach each of :data:`TOLERANCES`, that count at 2 % over random's, and the regret at each of
    :data:`FRACTIONS` of a run's configs."""

    strategy: str
    runs: int
    needed: dict[float, Estimate]
    vs_random: Estimate | None
    regret: dict[float, Estimate]
    spent: Estimate | None = None
    """``auto``: benchmarks spent per run (and, below, as a fraction of the run's configs)."""
    spent_fraction: Estimate | None = None
    final_regret: Estimate | None = None
    """Regret after the tuner's last benchmark (0 unless it stops early: ``auto``)."""


def strategy_rows(outcomes: Sequence[RunOutcome], strategies: Sequence[str]) -> list[StrategyRow]:
    """One row per strategy present in ``outcomes`` (in ``strategies`` order)."""
    random_needed = _per_seed(
        [o for o in outcomes if o.strategy == "random"], lambda o: o.needed[0.02]
    )
    rows = []
    for name in strategies:
        mine = [o for o in outcomes if o.strategy == name]
        if not mine:
            continue
        needed2 = _per_seed(mine, lambda o: o.needed[0.02])
        ratios = [needed2[s] / random_needed[s] for s in needed2 if s in random_needed]
        rows.append(
            StrategyRow(
                strategy=name,
                runs=len(mine),
                needed={
                    t: estimate(list(_per_seed(mine, lambda o, t=t: o.needed[t]).values()))
                    for t in TOLERANCES
                },
                vs_random=estimate(ratios) if ratios else None,
                regret={
                    f: estimate(list(_per_seed(mine, lambda o, f=f: regret_at(o, f)).values()))
                    for f in FRACTIONS
                },
                spent=estimate(list(_per_seed(mine, lambda o: o.spent or 0.0).values()))
                if name == AUTO
                else None,
                spent_fraction=estimate(
                    list(_per_seed(mine, lambda o: (o.spent or 0.0) / o.n_configs).values())
                )
                if name == AUTO
                else None,
                final_regret=estimate(list(_per_seed(mine, lambda o: float(o.curve[-1])).values())),
            )
        )
    return rows


def family_table(
    outcomes: Sequence[RunOutcome], strategies: Sequence[str]
) -> list[dict[str, object]]:
    """Per held-out family (pooled over the seeds that held it out): runs, and each strategy's
    mean benchmarks to reach 2 % regret."""
    families = sorted({o.family for o in outcomes})
    table = []
    for family in families:
        mine = [o for o in outcomes if o.family == family]
        row: dict[str, object] = {"family": family, "runs": len({(o.seed, o.run_id) for o in mine})}
        for name in strategies:
            values = [o.needed[0.02] for o in mine if o.strategy == name]
            row[name] = (
                float(np.mean(values)) if values and all(map(math.isfinite, values)) else None
            )
        table.append(row)
    return table


def seed_table(outcomes: Sequence[RunOutcome], strategies: Sequence[str]) -> list[dict[str, object]]:
    """Per seed (what the intervals are over): held-out runs and families, and each strategy's
    benchmarks to 2 % regret over random's on that seed (the ratio ``vs random`` averages).
    A strategy without random on the seed, or that never reaches 2 %, is None."""
    random_needed = _per_seed([o for o in outcomes if o.strategy == "random"], lambda o: o.needed[0.02])
    table = []
    for seed in sorted({o.seed for o in outcomes}):
        mine = [o for o in outcomes if o.seed == seed]
        row: dict[str, object] = {
            "seed": seed,
            "runs": len({o.run_id for o in mine}),
            "families": sorted({o.family for o in mine}),
        }
        for name in strategies:
            needed = _per_seed([o for o in mine if o.strategy == name], lambda o: o.needed[0.02])
            ratio = needed[seed] / random_needed[seed] if seed in needed and seed in random_needed else None
            row[name] = ratio if ratio is not None and math.isfinite(ratio) else None
        table.append(row)
    return table


def mean_curves(outcomes: Sequence[RunOutcome], strategies: Sequence[str]) -> dict[str, np.ndarray]:
    """Per strategy: mean regret after b = 1..max(n) benchmarks over all runs and seeds (a run
    with fewer configs keeps its last value: it is fully measured)."""
    longest = max((o.n_configs for o in outcomes), default=0)
    curves = {}
    for name in strategies:
        mine = [o.curve for o in outcomes if o.strategy == name]
        if mine:
            padded = [np.concatenate([c, np.full(longest - len(c), c[-1])]) for c in mine]
            curves[name] = np.mean(padded, axis=0)
    return curves


def fraction_curves(
    outcomes: Sequence[RunOutcome], strategies: Sequence[str], fractions: np.ndarray
) -> dict[str, np.ndarray]:
    """Per strategy: mean regret over all runs and seeds at each budget in ``fractions`` of a
    run's configs (:func:`budget_of`)."""
    curves = {}
    for name in strategies:
        mine = [o for o in outcomes if o.strategy == name]
        if mine:
            curves[name] = np.array([np.mean([regret_at(o, f) for o in mine]) for f in fractions])
    return curves
