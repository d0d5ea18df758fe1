"""Ranking and regression metrics of a cost model, TpuGraphs / TenSet style, validity-aware.

Inputs are flat arrays over samples (one per config) with a ``run_ids`` array that groups them
into autotune runs. Conventions shared by every function:

- ``measured_ms``: measured median latency in ms; NaN (or non-finite) for configs that did
  not run (failed statuses: compile errors, out of resources, timeouts, mismatches).
- ``predicted`` / ``predicted_score``: the model's score; **lower means predicted faster**.
  Scores are compared only within a run, so any monotone scale works.
- Kendall tau and OPA judge the *order of the configs that ran* (failed ones have no latency
  to order). Top-k slowdown judges *what a user gets*: the model's k first picks among **all**
  configs of a run, failed ones included. A pick that fails gives no timing; when every one of
  the k picks fails, the run costs :data:`FAILED_PICKS_COST` (the run's slowest valid config),
  so a model that ranks failing configs first is punished, not silently skipped.
- A model that predicts validity ranks by :func:`validity_aware_score`: configs it predicts
  to fail go after every config it predicts to run (the order ``train.predict`` returns).
- Per-run metrics are averaged over runs, each run weighing the same (TpuGraphs layout
  metric), not over configs.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import numpy as np
from scipy.stats import kendalltau

ArrayLike = Sequence[float] | np.ndarray


def _runs(
    run_ids: Sequence[str] | np.ndarray, measured_ms: ArrayLike, *others: ArrayLike
) -> Iterator[tuple[str, np.ndarray, list[np.ndarray]]]:
    """Yield (run_id, measured, [others...]) per run, restricted to finite measurements; the
    scores (``others``) of those must be finite."""
    ids = np.asarray(run_ids)
    measured = np.asarray(measured_ms, dtype=np.float64)
    arrays = [np.asarray(a, dtype=np.float64) for a in others]
    for array in (measured, *arrays):
        if array.shape != ids.shape:
            raise ValueError(f"arrays must all have shape {ids.shape}; got {array.shape}")
    finite = np.isfinite(measured)
    for array in arrays:
        bad = int((~np.isfinite(array[finite])).sum())
        if bad:
            raise ValueError(
                f"{bad} predicted score(s) of configs with a measured latency are NaN or infinite"
            )
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]]) if len(ids) else []
    bounds = [*list(starts), len(ids)]
    for begin, end in itertools.pairwise(bounds):
        rows = order[begin:end]
        rows = rows[finite[rows]]
        yield str(sorted_ids[begin]), measured[rows], [a[rows] for a in arrays]


def kendall_tau_per_run(
    run_ids: Sequence[str] | np.ndarray, measured_ms: ArrayLike, predicted: ArrayLike
) -> dict[str, float]:
    """Kendall's tau-b between measured latency and predicted score, per run.

    tau-b = (concordant - discordant) / sqrt((n0 - ties_measured) * (n0 - ties_predicted)) over
    the n0 = n(n-1)/2 pairs of a run's configs with a finite latency (``scipy.stats.kendalltau``,
    variant b). Ties in either ranking count as neither concordant nor discordant.

    Runs with fewer than 2 finite latencies, or whose measured latencies are all equal, have no
    ranking to judge and are left out of the result. A run whose predictions are all equal (a
    model that says nothing) scores 0.
    """
    taus: dict[str, float] = {}
    for run_id, measured, (predicted_run,) in _runs(run_ids, measured_ms, predicted):
        if len(measured) < 2 or np.all(measured == measured[0]):
            continue
        if np.all(predicted_run == predicted_run[0]):
            taus[run_id] = 0.0
            continue
        taus[run_id] = float(kendalltau(measured, predicted_run, variant="b").statistic)
    return taus


def opa(run_ids: Sequence[str] | np.ndarray, measured_ms: ArrayLike, predicted: ArrayLike) -> float:
    """Ordered-pair accuracy, averaged over runs.

    Within a run, over every pair of configs whose measured latencies differ, the fraction
    the model orders the same way (the faster one gets the lower score); a pair the model ties
    counts 1/2, so a constant model scores 0.5. Runs with no such pair are left out; NaN when
    no run is left.
    """
    scores = []
    for _, measured, (predicted_run,) in _runs(run_ids, measured_ms, predicted):
        dm = np.sign(measured[:, None] - measured[None, :])
        dp = np.sign(predicted_run[:, None] - predicted_run[None, :])
        pairs = dm > 0  # each unordered pair with distinct latencies, counted once (i slower)
        if not pairs.any():
            continue
        agree = np.where(dp[pairs] > 0, 1.0, np.where(dp[pairs] == 0, 0.5, 0.0))
        scores.append(float(agree.mean()))
    return float(np.mean(scores)) if scores else float("nan")


FAILED_PICKS_COST = "worst"
"""What a run costs when all of the model's k picks fail: the latency of the run's slowest
valid config (so the slowdown is (worst - best) / best). A user whose tuning budget went on
failing configs falls back to something that runs, and nothing guarantees it is good."""

VALIDITY_THRESHOLD = 0.5
"""A config is predicted to run when its predicted probability of status ok is >= this."""


def validity_aware_score(
    score: ArrayLike, p_valid: ArrayLike | None, threshold: float = VALIDITY_THRESHOLD
) -> np.ndarray:
    """``score`` with every config predicted to fail (``p_valid < threshold``) moved after every
    config predicted to run, keeping the order within each of the two classes (float64 [n]).

    ``p_valid`` None (a model without a validity head) returns ``score`` unchanged. The shift
    is one constant larger than the score range, so the result is a valid score for every
    metric here (lower = picked first) and its order within a run is what
    :func:`train.predict.rank_configs` returns.
    """
    values = np.asarray(score, dtype=np.float64)
    if p_valid is None:
        return values.copy()
    p = np.asarray(p_valid, dtype=np.float64)
    if p.shape != values.shape:
        raise ValueError(f"p_valid has shape {p.shape}; score {values.shape}")
    finite = values[np.isfinite(values)]
    span = float(finite.max() - finite.min()) if finite.size else 0.0
    return np.where(p >= threshold, values, values + span + 1.0)


def _all_runs(
    run_ids: Sequence[str] | np.ndarray, measured_ms: ArrayLike, predicted: ArrayLike
) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """(run_id, measured, predicted) per run over **every** config (failed ones NaN measured);
    NaN scores sort last."""
    ids = np.asarray(run_ids)
    measured = np.asarray(measured_ms, dtype=np.float64)
    scores = np.asarray(predicted, dtype=np.float64)
    for array in (measured, scores):
        if array.shape != ids.shape:
            raise ValueError(f"arrays must all have shape {ids.shape}; got {array.shape}")
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]]) if len(ids) else []
    for begin, end in itertools.pairwise([*list(starts), len(ids)]):
        rows = order[begin:end]
        yield str(sorted_ids[begin]), measured[rows], scores[rows]


def topk_slowdown_per_run(
    run_ids: Sequence[str] | np.ndarray, measured_ms: ArrayLike, predicted: ArrayLike, k: int
) -> dict[str, float]:
    """Per run: (best measured latency among the model's k lowest-scored configs - the run's
    best) / the run's best. 0 means the best config is in the model's top k.

    Every config of the run is a candidate pick, failed ones (NaN latency) included: a failed
    pick gives nothing, and when all k picks fail the run costs its slowest valid config
    (:data:`FAILED_PICKS_COST`). Ties in the score are broken by position in the input (stable
    sort), so pass configs in an order that carries no information (e.g. sorted by
    config_id). Runs without any valid config are left out (there is no best to miss).
    """
    if k < 1:
        raise ValueError(f"k must be >= 1; got {k}")
    result: dict[str, float] = {}
    for run_id, measured, predicted_run in _all_runs(run_ids, measured_ms, predicted):
        ok = np.isfinite(measured)
        if not ok.any():
            continue
        best = measured[ok].min()
        top = np.argsort(predicted_run, kind="stable")[:k]
        picked = measured[top][ok[top]]
        got = picked.min() if picked.size else measured[ok].max()
        result[run_id] = float((got - best) / best)
    return result


def topk_slowdown(
    run_ids: Sequence[str] | np.ndarray, measured_ms: ArrayLike, predicted: ArrayLike, k: int
) -> float:
    """:func:`topk_slowdown_per_run` averaged over runs (TpuGraphs tile metric, as a slowdown:
    0 is perfect, 0.25 means the configs picked are 25 % slower than the best on average)."""
    per_run = topk_slowdown_per_run(run_ids, measured_ms, predicted, k)
    return float(np.mean(list(per_run.values()))) if per_run else float("nan")


def topk_slowdown_curve(
    run_ids: Sequence[str] | np.ndarray,
    measured_ms: ArrayLike,
    predicted: ArrayLike,
    ks: Sequence[int],
) -> dict[int, float]:
    """:func:`topk_slowdown` for every k of ``ks`` at once (k -> mean over runs, NaN when no
    run has a valid config): one sort per run instead of one per run and k, the same picks,
    failed-pick cost and stable tie-break."""
    if any(k < 1 for k in ks):
        raise ValueError(f"every k must be >= 1; got {list(ks)}")
    wanted = np.asarray(sorted(set(ks)), dtype=np.int64)
    rows = []
    for _, measured, predicted_run in _all_runs(run_ids, measured_ms, predicted):
        ok = np.isfinite(measured)
        if not ok.any():
            continue
        best, worst = measured[ok].min(), measured[ok].max()
        in_order = measured[np.argsort(predicted_run, kind="stable")]
        # Best valid latency among the first j picks (inf while every pick so far failed).
        running = np.minimum.accumulate(np.where(np.isfinite(in_order), in_order, np.inf))
        got = running[np.minimum(wanted, len(in_order)) - 1]
        rows.append((np.where(np.isfinite(got), got, worst) - best) / best)
    if not rows:
        return {int(k): float("nan") for k in wanted}
    means = np.mean(np.asarray(rows, dtype=np.float64), axis=0)
    return {int(k): float(v) for k, v in zip(wanted, means, strict=True)}


def first_pick_failure_rate(
    run_ids: Sequence[str] | np.ndarray, measured_ms: ArrayLike, predicted: ArrayLike
) -> float:
    """Fraction of runs (with at least one valid config) whose first pick fails (NaN latency);
    NaN when there is no such run."""
    failed = [
        float(not np.isfinite(measured[np.argsort(predicted_run, kind="stable")[0]]))
        for _, measured, predicted_run in _all_runs(run_ids, measured_ms, predicted)
        if np.isfinite(measured).any()
    ]
    return float(np.mean(failed)) if failed else float("nan")


def mape(measured: ArrayLike, predicted_ms: ArrayLike) -> float:
    """Mean absolute percentage error of latency predictions, in percent:
    100 * mean(|predicted - measured| / measured) over samples with a finite positive measured
    latency and a finite prediction. NaN when none."""
    measured_a = np.asarray(measured, dtype=np.float64)
    predicted_a = np.asarray(predicted_ms, dtype=np.float64)
    if measured_a.shape != predicted_a.shape:
        raise ValueError(
            f"measured {measured_a.shape} and predicted {predicted_a.shape} differ in shape"
        )
    keep = np.isfinite(measured_a) & (measured_a > 0) & np.isfinite(predicted_a)
    if not keep.any():
        return float("nan")
    return float(100.0 * np.mean(np.abs(predicted_a[keep] - measured_a[keep]) / measured_a[keep]))


def validity_accuracy(
    valid_true: Sequence[bool] | np.ndarray, valid_pred: Sequence[bool] | np.ndarray
) -> float:
    """Fraction of configs whose predicted validity (will it run: status ok) is right. NaN for
    no configs."""
    truth = np.asarray(valid_true, dtype=bool)
    guess = np.asarray(valid_pred, dtype=bool)
    if truth.shape != guess.shape:
        raise ValueError(f"valid_true {truth.shape} and valid_pred {guess.shape} differ in shape")
    return float(np.mean(truth == guess)) if truth.size else float("nan")


def evaluate(
    run_ids: Sequence[str] | np.ndarray,
    measured_ms: ArrayLike,
    predicted_score: ArrayLike,
    predicted_ms: ArrayLike | None = None,
    valid_true: Sequence[bool] | np.ndarray | None = None,
    valid_pred: Sequence[bool] | np.ndarray | None = None,
    ks: Sequence[int] = (1, 5),
    p_valid: ArrayLike | None = None,
) -> dict[str, float]:
    """Every metric of one model on one set of samples.

    Keys: ``kendall_tau`` (mean per-run tau-b over the configs that ran), ``kendall_tau_runs``
    (runs it averages: those with >= 2 distinct finite latencies), ``opa``, ``top{k}_slowdown``
    for each k and ``top1_failed`` (fraction of runs whose first pick fails), both over every
    config in the validity-aware order (:func:`validity_aware_score` of ``p_valid`` when
    given), and, when their inputs are given, ``mape`` (percent) and ``validity_accuracy``.
    Missing ones are NaN so every model reports the same keys.
    """
    taus = kendall_tau_per_run(run_ids, measured_ms, predicted_score)
    picks = validity_aware_score(predicted_score, p_valid)
    result = {
        "kendall_tau": float(np.mean(list(taus.values()))) if taus else float("nan"),
        "kendall_tau_runs": float(len(taus)),
        "opa": opa(run_ids, measured_ms, predicted_score),
    }
    for k in ks:
        result[f"top{k}_slowdown"] = topk_slowdown(run_ids, measured_ms, picks, k)
    result["top1_failed"] = first_pick_failure_rate(run_ids, measured_ms, picks)
    result["mape"] = mape(measured_ms, predicted_ms) if predicted_ms is not None else float("nan")
    has_validity = valid_true is not None and valid_pred is not None
    result["validity_accuracy"] = (
        validity_accuracy(valid_true, valid_pred) if has_validity else float("nan")
    )  # type: ignore[arg-type]
    return result
