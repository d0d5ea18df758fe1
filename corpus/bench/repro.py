"""Label reproducibility: do two harvests of the same plan rank each run's configs alike?

A cost model is trained to rank the configs of a run; it can never agree with the truth better
than two measurements of the truth agree with each other. For every run measured by both
harvests, :func:`reproducibility` takes the median latency of each config both measured ``ok``
and computes Kendall's tau-b between the two harvests (ties, e.g. configs timed once for an
identical binary, count as ties), and each config's relative difference
``|a - b| / ((a + b) / 2)``. The figures of merit are the mean per-run tau (goal: >= 0.8 on
the CPU interpreter, even on a loaded machine) and the median relative difference.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import polars as pl
from scipy.stats import kendalltau

from schemas import DatasetError, scan_table

Latencies = dict[str, float]
"""config_id -> median latency (ms) of one run in one harvest."""


@dataclass(frozen=True)
class RunAgreement:
    """How two harvests of one run agree."""

    run_id: str
    label: str
    """family shape dtype."""
    configs: int
    """Configs both harvests measured ok."""
    tau: float
    """Kendall tau-b of the two harvests' median latencies over those configs."""
    median_rel_diff: float
    """Median over those configs of |a - b| / mean(a, b)."""


@dataclass(frozen=True)
class Reproducibility:
    """Agreement of two harvests over the runs both measured."""

    runs: list[RunAgreement]
    rel_diffs: list[float]
    """|a - b| / mean(a, b) of every config measured ok by both, all runs pooled."""
    unranked: list[str]
    """Runs in both harvests without a tau: fewer than two common ok configs, or all tied."""

    @property
    def mean_tau(self) -> float:
        return statistics.fmean(r.tau for r in self.runs) if self.runs else math.nan

    @property
    def median_tau(self) -> float:
        return statistics.median(r.tau for r in self.runs) if self.runs else math.nan

    @property
    def median_rel_diff(self) -> float:
        return statistics.median(self.rel_diffs) if self.rel_diffs else math.nan

    @property
    def p90_rel_diff(self) -> float:
        if len(self.rel_diffs) < 2:
            return self.median_rel_diff
        return statistics.quantiles(self.rel_diffs, n=10, method="inclusive")[-1]


def agreement(a: Mapping[str, float], b: Mapping[str, float]) -> tuple[float, list[float]]:
    """(Kendall tau-b, relative differences) of two latency maps over their common configs;
    tau is NaN with fewer than two common configs or when either side is all ties."""
    common = sorted(set(a) & set(b))
    diffs = [abs(a[c] - b[c]) / ((a[c] + b[c]) / 2) for c in common if a[c] + b[c] > 0]
    if len(common) < 2:
        return math.nan, diffs
    tau = kendalltau([a[c] for c in common], [b[c] for c in common]).statistic
    return float(tau), diffs


def _harvests(url: str) -> pl.DataFrame:
    """One row per (run, harvest) with its label and finish time."""
    return (
        scan_table(url, "runs")
        .select("run_id", "harvest_id", "family", "shape_name", "dtype", "finished_at")
        .with_columns(label=pl.concat_str("family", "shape_name", "dtype", separator=" "))
        .collect()
    )


def _latencies(url: str) -> dict[tuple[str, str], Latencies]:
    """(run_id, harvest_id) -> config_id -> median_ms, ok configs only."""
    frame = (
        scan_table(url, "measurements")
        .filter(pl.col("status") == "ok")
        .select("run_id", "harvest_id", "config_id", "median_ms")
        .collect()
    )
    found: dict[tuple[str, str], Latencies] = {}
    for run_id, harvest_id, config_id, median in frame.iter_rows():
        found.setdefault((run_id, harvest_id), {})[config_id] = median
    return found


def _latest(harvests: pl.DataFrame, count: int) -> dict[str, list[str]]:
    """run_id -> its ``count`` most recent harvest_ids, oldest first."""
    ordered = harvests.sort("finished_at")
    chosen: dict[str, list[str]] = {}
    for run_id, harvest_id in ordered.select("run_id", "harvest_id").iter_rows():
        chosen.setdefault(run_id, []).append(harvest_id)
    return {run_id: ids[-count:] for run_id, ids in chosen.items()}


def _pairs(
    a_url: str, b_url: str | None
) -> tuple[list[tuple[str, Latencies, Latencies]], dict[str, str]]:
    """(run_id, latencies in harvest 1, in harvest 2) for every run both harvests measured."""
    harvests_a = _harvests(a_url)
    labels = dict(harvests_a.select("run_id", "label").iter_rows())
    latencies_a = _latencies(a_url)
    if b_url is None:  # two harvests in one dataset: each run's latest two
        pairs = [
            (run_id, latencies_a.get((run_id, ids[0]), {}), latencies_a.get((run_id, ids[1]), {}))
            for run_id, ids in _latest(harvests_a, 2).items()
            if len(ids) == 2
        ]
        return pairs, labels
    harvests_b = _harvests(b_url)
    latencies_b = _latencies(b_url)
    latest_b = _latest(harvests_b, 1)
    pairs = [
        (
            run_id,
            latencies_a.get((run_id, ids[-1]), {}),
            latencies_b.get((run_id, latest_b[run_id][-1]), {}),
        )
        for run_id, ids in _latest(harvests_a, 1).items()
        if run_id in latest_b
    ]
    return pairs, labels


def reproducibility(a_url: str, b_url: str | None = None) -> Reproducibility:
    """Agreement of the latest harvest of each run in dataset ``a_url`` with the latest in
    ``b_url``; without ``b_url``, of the latest two harvests of each run in ``a_url``."""
    pairs, labels = _pairs(a_url, b_url)
    if not pairs:  # nan for every figure would look like a result
        raise DatasetError(
            f"{a_url}: no run has two harvests to compare; repro A compares the latest two harvests "
            "of each run (harvest it again with --no-resume, or give a second dataset: repro A B)"
            if b_url is None
            else f"{a_url} and {b_url} have no run in common (the same kernels, shapes, dtypes, "
            "device and toolchain); nothing to compare"
        )
    runs: list[RunAgreement] = []
    unranked: list[str] = []
    pooled: list[float] = []
    for run_id, first, second in sorted(pairs):
        tau, diffs = agreement(first, second)
        pooled += diffs
        if math.isnan(tau):
            unranked.append(run_id)
            continue
        median_diff = statistics.median(diffs) if diffs else math.nan
        runs.append(
            RunAgreement(
                run_id, labels.get(run_id, run_id), len(set(first) & set(second)), tau, median_diff
            )
        )
    return Reproducibility(runs, pooled, unranked)


def describe(result: Reproducibility, *, worst: int = 5) -> Sequence[str]:
    """Lines of text summarizing ``result`` (the command prints them)."""
    lines = [
        f"runs compared: {len(result.runs)} (+{len(result.unranked)} without a ranking: fewer than 2 common ok configs or all tied)",
        f"per-run Kendall tau-b: mean {result.mean_tau:.3f}, median {result.median_tau:.3f}"
        + (f", min {min(r.tau for r in result.runs):.3f}" if result.runs else ""),
        f"repeated configs ({len(result.rel_diffs)}): median relative difference {100 * result.median_rel_diff:.2f}%, "
        f"90th percentile {100 * result.p90_rel_diff:.2f}%",
    ]
    for run in sorted(result.runs, key=lambda r: r.tau)[:worst]:
        lines.append(
            f"  tau {run.tau:+.3f}  {run.configs:3d} configs  median diff {100 * run.median_rel_diff:5.2f}%  {run.label}"
        )
    return lines
