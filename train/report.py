"""Experiment outputs: metrics.json, report.md and the PNG plots.

A :class:`ModelResult` is one model's predictions judged on one partition with one seed;
:func:`summarize` gives per split kind, partition and model the mean of every metric over
seeds with its 95 % interval, :func:`paired_comparisons` every model paired seed by seed
against the best baseline, and :func:`write_report` writes them: metrics.json (every number,
:func:`report_payload`), report.md (:mod:`train.report_doc`, which also prints the report in
the terminal) and the plots (:mod:`train.plots`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from train.metrics import (
    evaluate,
    kendall_tau_per_run,
    topk_slowdown_curve,
    validity_aware_score,
)
from train.plots import write_plots
from train.report_doc import build_report, to_markdown
from train.stats import paired, t_interval

REPORT_KS = (1, 2, 3, 5)
"""k of the ``top{k}_slowdown`` metrics every result carries; the report shows k = 1 and the
largest of the others that is below the typical run's config count (a top-5 of runs with 4
configs is always 0)."""

PAIRED_METRICS = ("kendall_tau", *(f"top{k}_slowdown" for k in REPORT_KS))
"""Metrics of the paired comparison against the best baseline."""

BASELINE_NAMES = frozenset({"random", "default", "analytic", "tabular"})
"""Models that count as baselines when picking the one every model is paired against."""

MAX_PLOT_K = 32
"""The top-k slowdown curve (``slowdown_by_k``) runs from k = 1 to the largest run's config
count, at most this."""


def _run_sizes(run_ids: np.ndarray) -> dict[str, int]:
    names, counts = np.unique(np.asarray(run_ids).astype(str), return_counts=True)
    return {str(n): int(c) for n, c in zip(names, counts, strict=True)}


def _curve_ks(sizes: Mapping[str, int]) -> list[int]:
    return list(range(1, min(max(sizes.values(), default=1), MAX_PLOT_K) + 1))


@dataclass
class ModelResult:
    """One model on one partition ("val", "test", ...) of one seed's split.

    ``metrics``: :func:`train.metrics.evaluate`'s dict (``top{k}_slowdown`` for k in
    :data:`REPORT_KS`). ``run_taus``: Kendall tau per run. ``slowdown_by_k``: mean top-k
    slowdown for k = 1 up to the largest run's config count (at most :data:`MAX_PLOT_K`).
    ``run_sizes``: configs per run (failed ones included). ``failed``: configs judged that did
    not run. ``measured_ms`` / ``predicted_ms``: per valid config, for the scatter plot
    (predicted_ms None when the model predicts only an order).
    """

    model: str
    partition: str
    seed: int
    metrics: dict[str, float]
    split_kind: str = "family"
    run_taus: dict[str, float] = field(default_factory=dict)
    slowdown_by_k: dict[int, float] = field(default_factory=dict)
    run_sizes: dict[str, int] = field(default_factory=dict)
    failed: int = 0
    measured_ms: np.ndarray | None = None
    predicted_ms: np.ndarray | None = None

    @classmethod
    def from_predictions(
        cls,
        model: str,
        partition: str,
        seed: int,
        frame: pl.DataFrame,
        score: np.ndarray,
        *,
        predicted_ms: np.ndarray | None = None,
        valid_pred: np.ndarray | None = None,
        p_valid: np.ndarray | None = None,
        split_kind: str = "family",
        ks: Sequence[int] = REPORT_KS,
    ) -> ModelResult:
        """Judge predictions for the rows of ``frame`` (a samples table: ``run_id``,
        ``median_ms``, ``valid``). ``score``: lower = predicted faster, one per row.
        ``p_valid``: predicted probability that each config runs (``valid_pred``, booleans, is
        read as 0/1 when ``p_valid`` is absent). Kendall tau and OPA order the valid rows; top-k
        picks come from every row in the validity-aware order
        (:func:`train.metrics.validity_aware_score`), failed picks costing what the metrics
        module defines."""
        score = np.asarray(score, dtype=np.float64)
        if score.shape != (frame.height,):
            raise ValueError(f"score has shape {score.shape}; the frame has {frame.height} rows")
        if p_valid is None and valid_pred is not None:
            p_valid = np.asarray(valid_pred, dtype=np.float64)
        valid = frame["valid"].to_numpy().astype(bool)
        run_ids = frame["run_id"].to_numpy()
        measured = np.where(valid, frame["median_ms"].fill_null(np.nan).to_numpy(), np.nan)
        metrics = evaluate(
            run_ids,
            measured,
            score,
            predicted_ms=predicted_ms,
            valid_true=valid if p_valid is not None else None,
            valid_pred=None if p_valid is None else np.asarray(p_valid) >= 0.5,
            ks=ks,
            p_valid=p_valid,
        )
        picks = validity_aware_score(score, p_valid)
        sizes = _run_sizes(run_ids)
        return cls(
            model=model,
            partition=partition,
            seed=seed,
            metrics=metrics,
            split_kind=split_kind,
            run_taus=kendall_tau_per_run(run_ids, measured, score),
            slowdown_by_k=topk_slowdown_curve(run_ids, measured, picks, _curve_ks(sizes)),
            run_sizes=sizes,
            failed=int((~valid).sum()),
            measured_ms=measured[valid],
            predicted_ms=None
            if predicted_ms is None
            else np.asarray(predicted_ms, dtype=np.float64)[valid],
        )

    @classmethod
    def from_arrays(
        cls,
        model: str,
        partition: str,
        seed: int,
        run_ids: Sequence[str] | np.ndarray,
        measured_ms: Sequence[float] | np.ndarray,
        predicted_score: Sequence[float] | np.ndarray,
        *,
        predicted_ms: Sequence[float] | np.ndarray | None = None,
        metrics: Mapping[str, float] | None = None,
        split_kind: str = "family",
    ) -> ModelResult:
        """Rebuild a result from flat per-config arrays (``measured_ms`` NaN for failed
        configs); ``metrics`` are recomputed with :func:`train.metrics.evaluate` when absent."""
        ids = np.asarray(run_ids)
        measured = np.asarray(measured_ms, dtype=np.float64)
        score = np.asarray(predicted_score, dtype=np.float64)
        ms = None if predicted_ms is None else np.asarray(predicted_ms, dtype=np.float64)
        finite = np.isfinite(measured)
        sizes = _run_sizes(ids)
        return cls(
            model=model,
            partition=partition,
            seed=seed,
            metrics=dict(metrics)
            if metrics is not None
            else evaluate(ids, measured, score, predicted_ms=ms, ks=REPORT_KS),
            split_kind=split_kind,
            run_taus=kendall_tau_per_run(ids, measured, score),
            slowdown_by_k=topk_slowdown_curve(ids, measured, score, _curve_ks(sizes)),
            run_sizes=sizes,
            failed=int((~finite).sum()),
            measured_ms=measured[finite],
            predicted_ms=None if ms is None else ms[finite],
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "partition": self.partition,
            "seed": self.seed,
            "split_kind": self.split_kind,
            "metrics": {k: _finite(v) for k, v in self.metrics.items()},
            "run_taus": {k: _finite(v) for k, v in self.run_taus.items()},
            "slowdown_by_k": {str(k): _finite(v) for k, v in self.slowdown_by_k.items()},
            "run_sizes": dict(self.run_sizes),
            "failed": self.failed,
        }


def _finite(value: float) -> float | None:
    """JSON has no NaN: unknown metrics are null."""
    return None if value is None or not math.isfinite(value) else float(value)


Summary = dict[str, dict[str, dict[str, dict[str, dict[str, float | int | None]]]]]
"""split kind -> partition -> model -> metric -> interval (mean, low, high, sd, n)."""


def summarize(results: Sequence[ModelResult]) -> Summary:
    """split kind -> partition -> model -> metric -> {mean, low, high, sd, n}: the mean over
    seeds of the finite values with its 95 % Student-t interval and sample standard deviation
    (:func:`train.stats.t_interval`; low/high/sd None with one seed)."""
    summary: Summary = {}
    grouped: dict[tuple[str, str, str], list[ModelResult]] = {}
    for result in results:
        grouped.setdefault((result.split_kind, result.partition, result.model), []).append(result)
    for (kind, partition, model), mine in grouped.items():
        names = sorted({k for r in mine for k in r.metrics})
        summary.setdefault(kind, {}).setdefault(partition, {})[model] = {
            name: t_interval([r.metrics.get(name, math.nan) for r in mine]).to_json()
            for name in names
        }
    return summary


def best_baseline(summary_partition: Mapping[str, Any], metric: str = "kendall_tau") -> str | None:
    """The baseline (:data:`BASELINE_NAMES`) with the best mean ``metric`` in one partition's
    summary, or None when no baseline has a value."""
    scored = [
        (stats[metric]["mean"], model)
        for model, stats in summary_partition.items()
        if model in BASELINE_NAMES and stats.get(metric, {}).get("mean") is not None
    ]
    return max(scored)[1] if scored else None


def paired_comparisons(
    results: Sequence[ModelResult], metrics: Sequence[str] = PAIRED_METRICS
) -> dict[str, dict[str, dict[str, Any]]]:
    """split kind -> partition -> {"against": best baseline, "models": model -> metric ->
    :class:`train.stats.Paired` JSON}: every other model minus the best baseline (by mean
    Kendall tau), seed by seed (same split, same held-out runs)."""
    summary = summarize(results)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for kind, partitions in summary.items():
        for partition, models in partitions.items():
            against = best_baseline(models)
            if against is None:
                continue
            by_seed: dict[tuple[str, str], dict[int, float]] = {}
            for r in results:
                if r.split_kind == kind and r.partition == partition:
                    for name in metrics:
                        by_seed.setdefault((r.model, name), {})[r.seed] = r.metrics.get(
                            name, math.nan
                        )
            out.setdefault(kind, {})[partition] = {
                "against": against,
                "models": {
                    model: {
                        name: paired(
                            by_seed[(model, name)], by_seed[(against, name)], name
                        ).to_json()
                        for name in metrics
                    }
                    for model in models
                    if model != against
                },
            }
    return out


def _atomic_text(path: str, text: str) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


Results = Sequence[ModelResult] | Mapping[str, Any]


def coerce_results(results: Results) -> tuple[list[ModelResult], dict[str, Any]]:
    """(results, meta) from either a sequence of :class:`ModelResult` or a mapping with a
    ``results`` list of plain records (model, partition, seed, metrics, run_ids, measured_ms,
    predicted_score, predicted_ms; e.g. dataclasses.asdict of an experiment's results) whose
    other keys become meta."""
    if not isinstance(results, Mapping):
        return list(results), {}
    meta = {k: v for k, v in results.items() if k != "results"}
    default_kind = (meta.get("config") or {}).get("split", "family")
    converted = []
    for record in results.get("results", []):
        if isinstance(record, ModelResult):
            converted.append(record)
            continue
        converted.append(
            ModelResult.from_arrays(
                record["model"],
                record["partition"],
                int(record["seed"]),
                record["run_ids"],
                np.asarray(record["measured_ms"], dtype=np.float64),
                record["predicted_score"],
                predicted_ms=record.get("predicted_ms"),
                metrics=record.get("metrics"),
                split_kind=record.get("split_kind") or default_kind,
            )
        )
    return converted, meta


def report_payload(
    results: Sequence[ModelResult], meta: Mapping[str, Any], title: str = "Cost model vs baselines"
) -> dict[str, Any]:
    """What metrics.json holds (and what :func:`train.report_doc.build_report` reads): the
    title, ``meta``, :func:`summarize`, :func:`paired_comparisons` and every result's JSON."""
    return {
        "title": title,
        "meta": dict(meta),
        "summary": summarize(results),
        "paired": paired_comparisons(results),
        "results": [r.to_json() for r in results],
    }


def write_report(
    out_dir: str | os.PathLike[str],
    results: Results,
    *,
    title: str = "Cost model vs baselines",
    meta: Mapping[str, Any] | None = None,
    plots: bool = True,
) -> dict[str, str]:
    """Write metrics.json, (``plots``) the PNGs and report.md into ``out_dir`` (created).

    ``results``: :class:`ModelResult` objects, or a mapping as :func:`coerce_results` reads.
    ``meta``: anything worth recording with the numbers (dataset, split kind, seeds, level,
    versions); it goes into both files. Returns name -> path of what was written.
    """
    results, found_meta = coerce_results(results)
    meta = {**found_meta, **(meta or {})}
    if not results:
        raise ValueError("write_report needs at least one model result")
    out_dir = os.fspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    payload = report_payload(results, meta, title)
    written = {"metrics.json": os.path.join(out_dir, "metrics.json")}
    _atomic_text(
        written["metrics.json"], json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n"
    )
    if plots:
        written.update(write_plots(out_dir, results))
    written["report.md"] = os.path.join(out_dir, "report.md")
    _atomic_text(written["report.md"], to_markdown(build_report(payload, out_dir)))
    return written
