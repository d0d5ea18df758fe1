"""Intervals and paired comparisons over seeds (train.stats), against scipy and by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from train.stats import better, paired, t_interval


def test_t_interval_by_hand():
    # Values 1, 2, 3: mean 2, sd 1, t(0.975, 2) = 4.3027: half-width 4.3027 / sqrt(3).
    interval = t_interval([1.0, 2.0, 3.0])
    half = 4.302652729911275 / math.sqrt(3)
    assert interval.mean == 2.0 and interval.sd == pytest.approx(1.0) and interval.n == 3
    assert interval.low == pytest.approx(2.0 - half) and interval.high == pytest.approx(2.0 + half)
    # NaN values (a metric a seed could not compute) are left out, not averaged in.
    assert t_interval([1.0, float("nan"), 3.0]).n == 2
    one = t_interval([0.7])
    assert one.mean == 0.7 and one.low is None and one.sd is None
    assert t_interval([]).mean is None and t_interval([]).n == 0


def test_paired_matches_scipy_and_counts_seeds_by_direction():
    rng = np.random.default_rng(0)
    a = rng.normal(0.6, 0.1, 10)
    b = a - rng.normal(0.05, 0.02, 10)  # a is better on (almost) every seed
    result = paired(dict(enumerate(a)), dict(enumerate(b)), "kendall_tau")
    assert result.p_value == pytest.approx(scipy_stats.ttest_rel(a, b).pvalue)
    assert result.diff.mean == pytest.approx(float(np.mean(a - b)))
    assert result.diff.low > 0  # the interval excludes 0: p < 0.05
    assert result.wins == int((a > b).sum()) and result.losses == int((a < b).sum())
    # For a slowdown lower is better: the same numbers count the other way.
    slow = paired(dict(enumerate(a)), dict(enumerate(b)), "top1_slowdown")
    assert slow.wins == result.losses and slow.losses == result.wins


def test_paired_uses_only_seeds_both_have():
    result = paired({0: 0.5, 1: 0.6, 2: float("nan")}, {0: 0.4, 1: 0.4, 3: 0.1}, "opa")
    assert result.diff.n == 2 and result.diff.mean == pytest.approx(0.15)
    same = paired({0: 0.5, 1: 0.5}, {0: 0.5, 1: 0.5}, "opa")
    assert same.p_value == 1.0 and same.wins == same.losses == 0
    assert paired({0: 0.5}, {0: 0.4}, "opa").p_value is None
    # the same non-zero difference on every seed: no variance for a t-test, and two seeds are
    # no evidence (the exact sign test: 0.5 from 2 seeds, 0.0625 from 5)
    assert paired({0: 0.5, 1: 0.25}, {0: 1.0, 1: 0.75}, "kendall_tau").p_value == 0.5
    five = paired(dict.fromkeys(range(5), 0.5), dict.fromkeys(range(5), 0.25), "kendall_tau")
    assert five.p_value == pytest.approx(0.0625) and five.wins == 5


def test_better_follows_the_metric():
    assert better("kendall_tau", 0.5, 0.4) and not better("top1_slowdown", 0.5, 0.4)
