"""Sequential tuners and budgets (train.guide): LFBO's labels as Helion defines them, the
expected-improvement stop of ``--budget auto``, budget parsing."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from train.guide import EiPolicy, EiSettings, LfboPolicy, hedged_order, parse_budget
from train.guide.encoding import knob_matrix
from train.guide.improvement import ConfigSimilarity, belief, calibrate
from train.guide.surrogate import labels_and_weights

INF = math.inf


def test_lfbo_labels_the_best_quantile_good_and_failures_bad():
    log_ms = np.log(np.array([1.0, 1.2, 2.0, 4.0, INF, 8.0, 1.1, 3.0, 5.0, 6.0]))
    labels, weights = labels_and_weights(log_ms, quantile=0.2, min_weight=1e-5)
    threshold = np.quantile(log_ms[np.isfinite(log_ms)], 0.2)
    assert labels.tolist() == [int(v <= threshold) for v in log_ms]
    assert labels[4] == 0  # the failed config teaches "bad"
    assert weights[labels == 1].mean() == pytest.approx(1.0)
    assert weights[0] > weights[6]  # the further under the threshold, the heavier
    assert np.all(weights[labels == 0] == 1.0)
    # All failed: nothing is good.
    assert labels_and_weights(np.array([INF, INF]), 0.1, 1e-5)[0].tolist() == [0, 0]


def drive(policy, latency):
    measured: dict[int, float] = {}
    while (index := policy.next(measured)) is not None:
        assert index not in measured
        measured[index] = float(latency[index])
    return list(measured)


def test_lfbo_visits_every_config_once_default_first():
    rng = np.random.default_rng(0)
    features = rng.normal(size=(10, 3))
    latency = np.exp(features[:, 0])
    order = drive(LfboPolicy(features, default=7, seed=0), latency)
    assert order[0] == 7 and sorted(order) == list(range(10))
    prior = np.argsort(np.argsort(latency)) + 1
    guided = drive(LfboPolicy(features, default=None, prior_rank=prior, seed=0), latency)
    assert guided[0] == int(np.argmin(latency))  # the prior's first pick


def test_auto_stops_early_when_the_model_is_right_and_explores_when_it_is_wrong():
    latency = np.array([1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0])
    rank = np.arange(1, 9)
    exact = EiPolicy(latency, np.ones(8), rank, default=5)
    assert drive(exact, latency) == [0, 5]  # the predicted best, the default, then nothing to gain
    assert exact.last_ei is not None and exact.last_ei < math.log1p(0.01)
    inverted = EiPolicy(latency[::-1].copy(), np.ones(8), rank[::-1].copy(), default=5)
    spent = drive(inverted, latency)
    assert len(spent) > 2 and 0 in spent  # measurements contradict the model: it keeps looking


def drive_to_best(policy, latency):
    measured: dict[int, float] = {}
    while (index := policy.next(measured)) is not None:
        measured[index] = float(latency[index])
        if latency[index] <= latency.min():
            break
    return list(measured)


def test_measurements_move_the_belief_about_configs_with_near_knobs_most():
    settings = EiSettings()
    knobs = np.arange(8.0)[:, None]
    predicted = np.log(np.linspace(1.0, 2.0, 8))
    open_ = np.arange(1, 7)
    # The two ends measured: config 0 4x slower than the model says, config 7 as it says.
    measured = np.array([0, 7])
    log_ms = predicted[measured] + np.log([4.0, 1.0])
    near = belief(predicted, measured, log_ms, open_, ConfigSimilarity(knobs, 8, settings), settings)
    alone = belief(predicted, measured, log_ms, open_, ConfigSimilarity(None, 8, settings), settings)
    # Independent errors: only the calibration learns; every open config is as uncertain.
    calibration = calibrate(predicted[measured], log_ms, settings)
    line = calibration.offset + calibration.slope * predicted[open_]
    assert alone.mean == pytest.approx(line) and np.all(alone.sigma == calibration.sigma)
    # With knobs: what the calibration leaves unexplained (0 slower than the line, 7 faster)
    # carries over to each one's neighbours, and every open config is better known.
    correction = near.mean - line
    assert correction[0] > 0 > correction[-1] and np.all(np.diff(correction) < 0)
    assert np.all(near.sigma < alone.sigma)


def test_expected_improvement_moves_away_from_knobs_the_model_got_wrong():
    knobs = np.arange(16.0)
    latency = np.exp(-0.15 * knobs)  # the largest knob is fastest...
    predicted, rank = np.exp(0.15 * knobs), np.arange(1, 17)  # ...the model believes the opposite
    never_stop = EiSettings(threshold=0.0)
    blind = EiPolicy(predicted, np.ones(16), rank, default=None, settings=never_stop)
    assert drive_to_best(blind, latency) == list(range(16))  # only the calibration learns
    seeing = EiPolicy(
        predicted, np.ones(16), rank, default=None, features=knobs[:, None], settings=never_stop
    )
    spent = drive_to_best(seeing, latency)
    assert spent[0] == 0 and spent[-1] == 15 and len(spent) <= 6


def test_the_hedged_order_spreads_the_models_top_picks_over_the_knob_space():
    # Two regions of knobs: the model ranks region A's four configs best, region B's close behind.
    knobs = np.array([0.0, 0.1, 0.2, 0.3, 5.0, 5.1, 5.2, 5.3])[:, None]
    predicted = np.array([1.00, 1.01, 1.02, 1.03, 1.05, 1.06, 1.07, 1.08])
    rank = np.arange(1, 9)
    order = hedged_order(predicted, np.ones(8), rank, features=knobs).tolist()
    assert sorted(order) == list(range(8))  # a permutation: every config once
    assert order[0] == 0  # the model's best first
    assert order[1] == 4  # then region B's best, not A's second
    # Without knobs to compare, errors are independent: nothing to hedge, the model's order.
    assert hedged_order(predicted, np.ones(8), rank).tolist() == list(range(8))


def test_knobs_are_the_same_numbers_wherever_the_rows_come_from():
    frame = pl.DataFrame(
        {
            "config_params": [[{"name": "BLOCK", "value": 64}], [{"name": "BLOCK", "value": 256}]],
            "num_warps": [4, 8],
            "num_stages": [2, 3],
            "num_programs": [15, None],
            "n_regs": [32, 40],  # compiled code: not a knob
        }
    )
    assert knob_matrix(frame).tolist() == [[6.0, 2.0 + math.log2(5 / 4), 2.0, 4.0], [8.0, 3.0 + math.log2(9 / 8), 3.0, -1.0]]


def test_calibration_fits_the_models_error_on_the_run():
    settings = EiSettings(prior_sigma=0.5, prior_weight=2.0)
    # One measurement: the model's order is kept (slope 1), shifted by its error.
    one = calibrate(np.log([2.0]), np.log([4.0]), settings)
    assert (one.offset, one.slope, one.sigma) == (pytest.approx(math.log(2.0)), 1.0, 0.5)
    # Twice too slow everywhere: a pure shift, no residual, the prior spread pooled away.
    shift = calibrate(np.log([1.0, 2.0, 4.0]), np.log([2.0, 4.0, 8.0]), settings)
    assert shift.slope == pytest.approx(1.0) and shift.offset == pytest.approx(math.log(2.0))
    assert shift.sigma == pytest.approx(math.sqrt(2 * 0.25 / 4))
    # Measurements ordered against the model: the slope is floored at 0.
    assert calibrate(np.log([1.0, 2.0, 4.0]), np.log([8.0, 4.0, 2.0]), settings).slope == 0.0
    # Only failures: the prior.
    assert calibrate(np.log([1.0]), np.array([INF]), settings).sigma == 0.5


@pytest.mark.parametrize(
    ("text", "count", "percent", "extra_of_16"),
    [("4", 4, None, 4), ("25%", None, 25.0, 4), ("1%", None, 1.0, 1), ("auto", None, None, None)],
)
def test_budgets_parse(text, count, percent, extra_of_16):
    budget = parse_budget(text)
    assert (budget.count, budget.percent, budget.extra_configs(16)) == (count, percent, extra_of_16)
    assert budget.auto == (text == "auto")


@pytest.mark.parametrize("text", ["", "-1", "0%", "150%", "four", "4.5", "auto%"])
def test_bad_budgets_are_refused_with_one_line(text):
    with pytest.raises(ValueError, match="--budget") as error:
        parse_budget(text)
    assert "\n" not in str(error.value)
