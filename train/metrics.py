"""Ranking and regression metrics of a cost model, TpuGraphs / TenSet style.

Inputs are flat arrays over samples (one per measured config) with a ``run_ids`` array that
groups them into autotune runs. Conventions shared by every function:

- ``measured_ms``: measured median latency in ms; NaN (or non-finite) for configs that did
  not run (failed statuses). Ranking metrics use only configs with a finite latency.
- ``predicted`` / ``predicted_score``: the model's score; **lower means predicted faster**.
  Scores are compared only within a run, so any monotone scale works.
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


def topk_slowdown_per_run(
    run_ids: Sequence[str] | np.ndarray, measured_ms: ArrayLike, predicted: ArrayLike, k: int
) -> dict[str, float]:
    """Per run: (best measured latency among the model's k lowest-scored configs - the run's
    best) / the run's best. 0 means the best config is in the model's top k.

    Ties in the score are broken by position in the input (stable sort), so pass configs in
    an order that carries no information (e.g. sorted by config_id). Only configs with a finite
    latency take part; runs with none are left out.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1; got {k}")
    result: dict[str, float] = {}
    for run_id, measured, (predicted_run,) in _runs(run_ids, measured_ms, predicted):
        if len(measured) == 0:
            continue
        top = np.argsort(predicted_run, kind="stable")[:k]
        best = measured.min()
        result[run_id] = float((measured[top].min() - best) / best)
    return result


def topk_slowdown(
    run_ids: Sequence[str] | np.ndarray, measured_ms: ArrayLike, predicted: ArrayLike, k: int
) -> float:
    """:func:`topk_slowdown_per_run` averaged over runs (TpuGraphs tile metric, as a slowdown:
    0 is perfect, 0.25 means the configs picked are 25 % slower than the best on average)."""
    per_run = topk_slowdown_per_run(run_ids, measured_ms, predicted, k)
    return float(np.mean(list(per_run.values()))) if per_run else float("nan")


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
) -> dict[str, float]:
    """Every metric of one model on one set of samples.

    Keys: ``kendall_tau`` (mean per-run tau-b), ``kendall_tau_runs`` (runs it averages: those
    with >= 2 distinct finite latencies), ``opa``, ``top{k}_slowdown`` for each k, and, when
    their inputs are given, ``mape`` (percent) and ``validity_accuracy``. Missing ones are NaN
    so every model reports the same keys.
    """
    taus = kendall_tau_per_run(run_ids, measured_ms, predicted_score)
    result = {
        "kendall_tau": float(np.mean(list(taus.values()))) if taus else float("nan"),
        "kendall_tau_runs": float(len(taus)),
        "opa": opa(run_ids, measured_ms, predicted_score),
    }
    for k in ks:
        result[f"top{k}_slowdown"] = topk_slowdown(run_ids, measured_ms, predicted_score, k)
    result["mape"] = mape(measured_ms, predicted_ms) if predicted_ms is not None else float("nan")
    has_validity = valid_true is not None and valid_pred is not None
    result["validity_accuracy"] = (
        validity_accuracy(valid_true, valid_pred) if has_validity else float("nan")
    )  # type: ignore[arg-type]
    return result
