"""Regret curves of the replay (train.replay.curves, train.replay.strategies): exact expected
curves of static orders against brute force over every order, monotone curves, an oracle's
zero regret at one benchmark, failing configs that cost a benchmark and find nothing."""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest

from train.guide import EiSettings, Scores
from train.replay.curves import expected_curve, expected_needed, order_curve, order_needed
from train.replay.strategies import STRATEGIES, RunInputs, replay_run

INF = math.inf


def tie_orders(scores: np.ndarray):
    """Every order a static tuner with random tie-breaking can take, each equally likely."""
    groups = [np.flatnonzero(scores == value) for value in np.unique(scores)]
    for parts in itertools.product(*(itertools.permutations(g) for g in groups)):
        yield np.array([i for part in parts for i in part])


def brute_force(scores: np.ndarray, latency: np.ndarray, tolerance: float):
    orders = list(tie_orders(scores))
    curve = np.mean([order_curve(o, latency, len(latency)) for o in orders], axis=0)
    needed = np.mean([order_needed(o, latency, tolerance) for o in orders])
    return curve, needed


def toy_runs(count: int, seed: int = 0):
    """Small runs with ties in latency, failures, and tied scores."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(rng.integers(2, 7))
        latency = rng.choice([1.0, 1.01, 1.5, 2.0, 4.0, INF], size=n)
        if not np.isfinite(latency).any():
            latency[0] = 3.0
        scores = rng.integers(0, 3, size=n).astype(float)
        yield scores, latency


def test_random_curve_equals_its_closed_form_on_a_toy_run():
    latency = np.array([4.0, 1.0, INF, 2.0, 1.01])
    tied = np.zeros(5)
    curve, needed = brute_force(tied, latency, 0.02)
    assert np.allclose(expected_curve(tied, latency), curve, atol=1e-12)
    # Two configs are within 2% of the best among five: (n + 1) / (m + 1) = 6 / 3 draws.
    assert expected_needed(tied, latency, 0.02) == pytest.approx(needed) == pytest.approx(2.0)
    assert expected_needed(tied, latency, 0.0) == pytest.approx(3.0)
    # One benchmark: mean over the five configs, the failing one counted as the slowest (4.0).
    assert expected_curve(tied, latency)[0] == pytest.approx((3 + 0 + 3 + 1 + 0.01) / 5)


@pytest.mark.parametrize("tolerance", [0.05, 0.02, 0.0])
def test_tied_static_orders_match_brute_force(tolerance):
    for scores, latency in toy_runs(40):
        curve, needed = brute_force(scores, latency, tolerance)
        assert np.allclose(expected_curve(scores, latency), curve, atol=1e-12)
        assert expected_needed(scores, latency, tolerance) == pytest.approx(needed)


def test_curves_are_monotone_and_end_at_zero():
    for scores, latency in toy_runs(60, seed=1):
        curve = expected_curve(scores, latency)
        assert np.all(np.diff(curve) <= 1e-12) and curve[-1] == pytest.approx(0.0)
        for order in itertools.islice(tie_orders(scores), 5):
            realized = order_curve(order, latency, len(latency))
            assert np.all(np.diff(realized) <= 0) and realized[-1] == 0.0


def test_a_failing_config_costs_a_benchmark_and_finds_nothing():
    latency = np.array([INF, 2.0, 1.0])
    curve = order_curve(np.array([0, 1, 2]), latency, 3)
    assert curve.tolist() == [1.0, 1.0, 0.0]  # nothing found yet counts as the slowest (2.0)
    assert order_needed(np.array([0, 2, 1]), latency, 0.0) == 2.0
    assert order_needed(np.array([0, 1]), latency, 0.0) == INF  # a tuner that stopped early


def run_of(latency: np.ndarray, model_rank: np.ndarray, default: int = 0) -> RunInputs:
    n = len(latency)
    frame = pl.DataFrame(
        {
            "run_id": ["r"] * n,
            "family": ["toy"] * n,
            "config_params": [[{"name": "BLOCK", "value": 2**i}] for i in range(n)],
            "num_warps": [4] * n,
        }
    )
    model = Scores(model_rank, predicted_ms=np.where(np.isfinite(latency), latency, 9.0),
                   p_valid=np.isfinite(latency).astype(float))  # fmt: skip
    oracle = np.where(np.isfinite(latency), latency, INF)
    return RunInputs("r", "toy", frame, latency, default,
                     {"analytic": oracle, "tabular": oracle}, model)  # fmt: skip


def test_an_oracle_ranking_has_zero_regret_at_budget_one():
    latency = np.array([3.0, 2.5, INF, 1.0, 1.7, 2.2])
    oracle_rank = np.argsort(np.argsort(np.where(np.isfinite(latency), latency, INF))) + 1
    run = run_of(latency, oracle_rank)
    for name in ("analytic", "tabular", "model", "lfbo+model", "auto"):
        outcome = replay_run(name, run, seed=0, repeats=2, ei=EiSettings())
        assert outcome.curve[0] == 0.0, name
        assert outcome.needed == {0.05: 1.0, 0.02: 1.0, 0.0: 1.0}, name
    # random and default-first are not oracles: they pay in expectation.
    assert replay_run("random", run, seed=0, repeats=1, ei=EiSettings()).curve[0] > 0


def test_every_strategy_gives_a_monotone_curve_and_auto_stops():
    rng = np.random.default_rng(3)
    latency = rng.lognormal(0, 0.6, size=12)
    latency[4] = INF
    rank = rng.permutation(12) + 1
    run = run_of(latency, rank, default=2)
    for name in STRATEGIES:
        outcome = replay_run(name, run, seed=1, repeats=3, ei=EiSettings())
        assert len(outcome.curve) == 12
        assert np.all(np.diff(outcome.curve) <= 1e-12), name
        if name == "auto":
            assert outcome.spent is not None and 2 <= outcome.spent <= 12
        else:
            assert outcome.curve[-1] == pytest.approx(0.0), name
            assert 1 <= outcome.needed[0.0] <= 12
