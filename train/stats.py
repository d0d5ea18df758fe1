"""Statistics over seeds: means with 95 % intervals and paired comparisons of two models.

Every seed draws its own split (and its own training run), so the seeds of one experiment are
independent replicates and two models judged on the same seeds form *pairs*: same held-out
runs, same training runs. A paired comparison removes the split-to-split spread (0.07-0.10 in
Kendall tau between seeds on the tiny harvests) that an unpaired one would have to beat.

Intervals are Student-t intervals (two-sided, 95 %): ``mean ± t(0.975, n-1) * s / sqrt(n)``
with the sample standard deviation ``s`` (ddof 1). For paired comparisons the same interval is
taken over the per-seed differences, and the p-value is the paired t-test's (two-sided), so a
difference whose interval excludes 0 is the one with p < 0.05. With one seed there is no
interval (``None``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

LEVEL = 0.95
"""Confidence level of every interval."""

HIGHER_IS_BETTER = frozenset({"kendall_tau", "opa", "validity_accuracy"})
"""Metrics where a larger value is better; for every other one (slowdowns, MAPE, failure
rates) smaller is better."""


@dataclass(frozen=True)
class Interval:
    """Mean of ``n`` values with its Student-t interval (``low``/``high`` None when n < 2) and
    the sample standard deviation ``sd`` (ddof 1; None when n < 2)."""

    mean: float | None
    low: float | None
    high: float | None
    sd: float | None
    n: int

    def to_json(self) -> dict[str, float | int | None]:
        return {"mean": self.mean, "low": self.low, "high": self.high, "sd": self.sd, "n": self.n}


def t_interval(values: Sequence[float] | np.ndarray, level: float = LEVEL) -> Interval:
    """Mean and two-sided Student-t interval of the finite ``values`` (NaN/inf are dropped)."""
    array = np.asarray(values, dtype=np.float64)
    array = array[np.isfinite(array)]
    n = int(array.size)
    if n == 0:
        return Interval(None, None, None, None, 0)
    mean = float(array.mean())
    if n < 2:
        return Interval(mean, None, None, None, n)
    sd = float(array.std(ddof=1))
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, sd, n)


@dataclass(frozen=True)
class Paired:
    """Model A minus model B over the seeds both have a finite value for.

    ``diff``: interval of the per-seed differences A - B; ``p_value``: two-sided paired t-test
    (None with fewer than 2 pairs, 1.0 when every difference is 0; when every difference is the
    same non-zero value the t-test is undefined, and the exact two-sided sign test's
    ``2 ** (1 - n)`` stands in: 0.5 from 2 seeds, not a misleading 0); ``wins``: seeds where A is
    strictly better (by the metric's direction), ``losses`` where it is strictly worse.
    """

    diff: Interval
    p_value: float | None
    wins: int
    losses: int

    def to_json(self) -> dict[str, object]:
        return {
            "diff": self.diff.to_json(),
            "p_value": self.p_value,
            "wins": self.wins,
            "losses": self.losses,
        }


def paired(
    a_by_seed: dict[int, float], b_by_seed: dict[int, float], metric: str, level: float = LEVEL
) -> Paired:
    """Compare two models seed by seed on ``metric`` (see :class:`Paired`)."""
    seeds = sorted(
        s
        for s in set(a_by_seed) & set(b_by_seed)
        if math.isfinite(a_by_seed[s]) and math.isfinite(b_by_seed[s])
    )
    diffs = np.array([a_by_seed[s] - b_by_seed[s] for s in seeds], dtype=np.float64)
    sign = 1.0 if metric in HIGHER_IS_BETTER else -1.0
    wins = int((sign * diffs > 0).sum())
    losses = int((sign * diffs < 0).sum())
    p_value: float | None = None
    if len(diffs) >= 2:
        if np.all(diffs == diffs[0]):
            p_value = 1.0 if diffs[0] == 0 else min(1.0, 2.0 ** (1 - len(diffs)))
        else:
            p_value = float(stats.ttest_1samp(diffs, 0.0).pvalue)
    return Paired(t_interval(diffs, level), p_value, wins, losses)


def better(metric: str, a: float, b: float) -> bool:
    """Whether value ``a`` of ``metric`` is better than ``b``."""
    return a > b if metric in HIGHER_IS_BETTER else a < b
