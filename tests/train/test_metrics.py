"""Metrics against values computed by hand (in the comments), ties included."""

from __future__ import annotations

import math

import numpy as np
import pytest

from train.metrics import (
    evaluate,
    first_pick_failure_rate,
    kendall_tau_per_run,
    mape,
    opa,
    topk_slowdown,
    topk_slowdown_curve,
    topk_slowdown_per_run,
    validity_accuracy,
    validity_aware_score,
)

NAN = float("nan")


def test_kendall_tau_b_with_prediction_ties():
    # 6 pairs; the predicted tie (2, 2) is neither concordant nor discordant, the other 5 are
    # concordant: tau_b = 5 / sqrt(6 * (6 - 1)).
    taus = kendall_tau_per_run(["a"] * 4, [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 2.0, 3.0])
    assert taus == {"a": pytest.approx(5 / math.sqrt(30))}


def test_kendall_tau_b_with_measured_ties_and_reversal():
    # Run m: measured tie (1, 1); 2 concordant pairs of 3: tau_b = 2 / sqrt((3 - 1) * 3).
    # Run r: fully reversed order: -1.
    ids = ["m", "m", "m", "r", "r", "r"]
    taus = kendall_tau_per_run(ids, [1.0, 1.0, 2.0, 1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 3.0, 2.0, 1.0])
    assert taus == {"m": pytest.approx(2 / math.sqrt(6)), "r": pytest.approx(-1.0)}


def test_kendall_tau_skips_failed_configs_and_degenerate_runs():
    ids = ["x", "x", "x", "one", "one", "flat", "flat", "const", "const"]
    measured = [1.0, NAN, 2.0, 1.0, NAN, 3.0, 3.0, 1.0, 2.0]
    predicted = [2.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 5.0, 5.0]
    # x: only (1, 2) with prediction (2, 1) is left: discordant, -1. "one" has a single finite
    # latency and "flat" equal latencies: left out. "const" predicts a tie: 0.
    assert kendall_tau_per_run(ids, measured, predicted) == {"x": -1.0, "const": 0.0}


def test_opa_counts_ties_half_and_averages_runs():
    # Run a: 6 pairs, 5 agree, 1 predicted tie: 5.5 / 6. Run b: measured tie (1, 1) is no
    # pair; pairs (0, 2), (1, 2) both reversed: 0. Mean over runs: (5.5/6 + 0) / 2.
    ids = ["a"] * 4 + ["b"] * 3
    measured = [1.0, 2.0, 3.0, 4.0, 1.0, 1.0, 2.0]
    predicted = [1.0, 2.0, 2.0, 3.0, 3.0, 2.0, 1.0]
    assert opa(ids, measured, predicted) == pytest.approx((5.5 / 6) / 2)
    assert opa(["c", "c"], [1.0, 2.0], [7.0, 7.0]) == 0.5
    assert math.isnan(opa(["c", "c"], [1.0, 1.0], [1.0, 2.0]))


def test_topk_slowdown_by_hand():
    # Run a: model order is configs 0, 1, 2, 3 with latencies 4, 2, 1, 3; best 1.
    # top1 -> 4: (4 - 1) / 1 = 3; top2 -> 2: 1; top3 -> 1: 0. Run b: model right: 0.
    ids = ["a"] * 4 + ["b"] * 2
    measured = [4.0, 2.0, 1.0, 3.0, 1.0, 2.0]
    predicted = [0.0, 1.0, 2.0, 3.0, 0.0, 1.0]
    assert topk_slowdown_per_run(ids, measured, predicted, 1) == {"a": 3.0, "b": 0.0}
    assert topk_slowdown(ids, measured, predicted, 1) == pytest.approx(1.5)
    assert topk_slowdown(ids, measured, predicted, 2) == pytest.approx(0.5)
    assert topk_slowdown(ids, measured, predicted, 3) == 0.0
    assert topk_slowdown(ids, measured, predicted, 10) == 0.0


def test_topk_slowdown_ties_and_failed_configs():
    # Tied scores: the first in input order is taken: latency 2 against best 1 -> 1.0.
    assert topk_slowdown(["a", "a"], [2.0, 1.0], [0.0, 0.0], 1) == 1.0
    # A failed config the model ranks first is a pick that gives nothing; with k = 1 every pick
    # failed: the run costs its slowest valid config, 3.0 against the best 1.0.
    assert topk_slowdown(["a"] * 4, [NAN, 2.0, 3.0, 1.0], [0.0, 1.0, 2.0, 3.0], 1) == 2.0
    # With k = 2 the second pick (2.0) ran: (2 - 1) / 1.
    assert topk_slowdown(["a"] * 4, [NAN, 2.0, 3.0, 1.0], [0.0, 1.0, 2.0, 3.0], 2) == 1.0
    # A run without any valid config has no best to miss: left out.
    assert topk_slowdown_per_run(["a", "b"], [NAN, 1.0], [0.0, 0.0], 1) == {"b": 0.0}
    with pytest.raises(ValueError, match="k must be"):
        topk_slowdown(["a"], [1.0], [0.0], 0)


def test_topk_slowdown_curve_matches_each_k():
    # The hand-checked runs above (run a 3, 1, 0 for k = 1, 2, 3; run b 0), a failed first
    # pick in run c (costs its slowest, 3 vs 1, until k reaches a config that ran), and a run
    # with nothing valid (left out).
    ids = ["a"] * 4 + ["b"] * 2 + ["c"] * 3 + ["d"]
    measured = [4.0, 2.0, 1.0, 3.0, 1.0, 2.0, NAN, 3.0, 1.0, NAN]
    predicted = [0.0, 1.0, 2.0, 3.0, 0.0, 1.0, 0.0, 1.0, 2.0, 0.0]
    curve = topk_slowdown_curve(ids, measured, predicted, [1, 2, 3, 4, 10])
    assert curve == pytest.approx({1: (3 + 0 + 2) / 3, 2: (1 + 0 + 2) / 3, 3: 0.0, 4: 0.0, 10: 0.0})
    for k, value in curve.items():
        assert topk_slowdown(ids, measured, predicted, k) == pytest.approx(value)
    assert math.isnan(topk_slowdown_curve(["a"], [NAN], [0.0], [1])[1])
    with pytest.raises(ValueError, match="every k must be"):
        topk_slowdown_curve(["a"], [1.0], [0.0], [0, 1])


def test_validity_aware_score_puts_predicted_failures_last():
    score = np.array([0.0, -5.0, 1.0, 3.0])
    aware = validity_aware_score(score, np.array([0.9, 0.1, 0.6, 0.4]))
    # Predicted to run: 0 (0.0), 2 (1.0); predicted to fail: 1 (-5.0), 3 (3.0), after them.
    assert list(np.argsort(aware, kind="stable")) == [0, 2, 1, 3]
    assert np.array_equal(validity_aware_score(score, None), score)
    # evaluate() picks in that order: the failing config no longer comes first.
    ids, measured = ["a"] * 4, [2.0, NAN, 1.0, NAN]
    assert evaluate(ids, measured, score)["top1_failed"] == 1.0
    picked = evaluate(ids, measured, score, p_valid=[0.9, 0.1, 0.6, 0.4])
    assert picked["top1_failed"] == 0.0 and picked["top1_slowdown"] == 1.0
    assert first_pick_failure_rate(ids, measured, aware) == 0.0


def test_mape_and_validity_accuracy():
    # (0.1/1 + 0.5/2 + 0/4) / 3 * 100; the failed config (NaN) is skipped.
    assert mape([1.0, 2.0, 4.0, NAN], [1.1, 1.5, 4.0, 3.0]) == pytest.approx(100 * 0.35 / 3)
    assert math.isnan(mape([NAN], [1.0]))
    assert validity_accuracy([True, True, False, False], [True, False, False, True]) == 0.5
    with pytest.raises(ValueError, match="shape"):
        validity_accuracy([True], [True, False])


def test_evaluate_reports_every_key():
    ids = np.array(["a"] * 4 + ["b"] * 2)
    measured = np.array([4.0, 2.0, 1.0, 3.0, 1.0, 2.0])
    score = np.array([0.0, 1.0, 2.0, 3.0, 0.0, 1.0])
    result = evaluate(ids, measured, score, ks=(1, 2))
    # Run a: of its 6 pairs only (1, 3) and (2, 3) are ordered right: tau = (2 - 4) / 6.
    # Run b: right, 1. Mean over the two runs: (1 - 1/3) / 2.
    assert result["kendall_tau"] == pytest.approx(1 / 3)
    assert result["kendall_tau_runs"] == 2
    assert result["top1_slowdown"] == pytest.approx(1.5)
    assert result["top2_slowdown"] == pytest.approx(0.5)
    assert math.isnan(result["mape"]) and math.isnan(result["validity_accuracy"])
    full = evaluate(
        ids,
        measured,
        score,
        predicted_ms=measured * 1.1,
        valid_true=[True] * 6,
        valid_pred=[True] * 5 + [False],
    )
    assert full["mape"] == pytest.approx(10.0)
    assert full["validity_accuracy"] == pytest.approx(5 / 6)


def test_a_perfect_and_a_reversed_model():
    rng = np.random.default_rng(0)
    ids = np.repeat(np.arange(5).astype(str), 8)
    measured = rng.uniform(1, 10, size=40)
    perfect = evaluate(ids, measured, np.log(measured))
    assert perfect["kendall_tau"] == pytest.approx(1.0)
    assert perfect["opa"] == 1.0 and perfect["top1_slowdown"] == 0.0
    reversed_ = evaluate(ids, measured, -measured)
    assert reversed_["kendall_tau"] == pytest.approx(-1.0)
    assert reversed_["opa"] == 0.0 and reversed_["top1_slowdown"] > 0


def test_mismatched_shapes_are_refused():
    with pytest.raises(ValueError, match="shape"):
        kendall_tau_per_run(["a", "a"], [1.0, 2.0], [1.0])


def test_non_finite_scores_are_refused():
    # A failed config's score is never used; a NaN score of a measured config is a model bug.
    assert kendall_tau_per_run(["a"] * 3, [1.0, 2.0, NAN], [0.0, 1.0, NAN]) == {"a": 1.0}
    with pytest.raises(ValueError, match="1 predicted score"):
        evaluate(["a"] * 3, [1.0, 2.0, 3.0], [0.0, NAN, 1.0])
