"""Experiment outputs: metrics.json, report.md (model vs baselines per split kind and partition:
mean and 95 % interval over seeds, and every model paired seed by seed against the best
baseline) and PNG plots (predicted vs measured latency, per-run Kendall tau histogram, top-k
slowdown by k).

A :class:`ModelResult` is one model's predictions judged on one partition with one seed;
:func:`write_report` summarizes any number of them.
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

from train.metrics import evaluate, kendall_tau_per_run, topk_slowdown, validity_aware_score
from train.stats import LEVEL, paired, t_interval

HEADLINE = (
    "kendall_tau",
    "opa",
    "top1_slowdown",
    "top5_slowdown",
    "top1_failed",
    "mape",
    "validity_accuracy",
)
"""Metrics shown in report.md, in order (metrics.json has every one)."""

PAIRED_METRICS = ("kendall_tau", "top1_slowdown", "top5_slowdown")
"""Metrics of the paired comparison against the best baseline."""

BASELINE_NAMES = frozenset({"random", "default", "analytic", "tabular"})
"""Models that count as baselines when picking the one every model is paired against."""

PLOT_KS = tuple(range(1, 11))


@dataclass
class ModelResult:
    """One model on one partition ("val", "test", ...) of one seed's split.

    ``metrics``: :func:`train.metrics.evaluate`'s dict. ``run_taus``: Kendall tau per run.
    ``slowdown_by_k``: mean top-k slowdown for k in :data:`PLOT_KS`. ``measured_ms`` /
    ``predicted_ms``: per valid config, for the scatter plot (predicted_ms None when the model
    predicts only an order).
    """

    model: str
    partition: str
    seed: int
    metrics: dict[str, float]
    split_kind: str = "family"
    run_taus: dict[str, float] = field(default_factory=dict)
    slowdown_by_k: dict[int, float] = field(default_factory=dict)
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
        ks: Sequence[int] = (1, 5),
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
        return cls(
            model=model,
            partition=partition,
            seed=seed,
            metrics=metrics,
            split_kind=split_kind,
            run_taus=kendall_tau_per_run(run_ids, measured, score),
            slowdown_by_k={k: topk_slowdown(run_ids, measured, picks, k) for k in PLOT_KS},
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
        return cls(
            model=model,
            partition=partition,
            seed=seed,
            metrics=dict(metrics)
            if metrics is not None
            else evaluate(ids, measured, score, predicted_ms=ms),
            split_kind=split_kind,
            run_taus=kendall_tau_per_run(ids, measured, score),
            slowdown_by_k={k: topk_slowdown(ids, measured, score, k) for k in PLOT_KS},
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


def _number(value: float | None, metric: str) -> str:
    if value is None:
        return "–"
    return f"{value:.1f}" if metric == "mape" else f"{value:.3f}"


def _cell(stats: Mapping[str, Any] | None, metric: str) -> str:
    if not stats or stats.get("mean") is None:
        return "–"
    text = _number(stats["mean"], metric)
    if stats.get("low") is not None:
        text += f" [{_number(stats['low'], metric)}, {_number(stats['high'], metric)}]"
    return text + (" %" if metric == "mape" else "")


def markdown_table(
    summary: Mapping[str, Any],
    partition: str,
    metrics: Sequence[str] = HEADLINE,
    split_kind: str | None = None,
) -> str:
    """The report table of one partition (of ``split_kind``; the first kind when None): a row
    per model, 'mean [95 % interval]' per metric."""
    kinds = summary if split_kind is None else {split_kind: summary.get(split_kind, {})}
    partitions = next(iter(kinds.values()), {}) if kinds else {}
    lines = ["| model | " + " | ".join(metrics) + " |", "|---|" + "---|" * len(metrics)]
    for model, stats in partitions.get(partition, {}).items():
        lines.append(f"| {model} | " + " | ".join(_cell(stats.get(m), m) for m in metrics) + " |")
    return "\n".join(lines)


def paired_table(comparison: Mapping[str, Any], metrics: Sequence[str] = PAIRED_METRICS) -> str:
    """Markdown table of one partition's :func:`paired_comparisons` entry: per model, the mean
    difference to the best baseline with its 95 % interval, the paired t-test p-value and the
    seeds it is better / worse on."""
    against = comparison["against"]
    header = " | ".join(f"Δ {m} vs {against} | p | better/worse" for m in metrics)
    lines = [f"| model | {header} |", "|---|" + "---|---|---|" * len(metrics)]
    for model, per_metric in comparison["models"].items():
        cells = []
        for name in metrics:
            result = per_metric[name]
            diff = result["diff"]
            text = "–" if diff["mean"] is None else f"{diff['mean']:+.3f}"
            if diff["low"] is not None:
                text += f" [{diff['low']:+.3f}, {diff['high']:+.3f}]"
            p_value = "–" if result["p_value"] is None else f"{result['p_value']:.3f}"
            cells.append(f"{text} | {p_value} | {result['wins']}/{result['losses']}")
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _plot_partition(results: Sequence[ModelResult]) -> str | None:
    partitions = {r.partition for r in results}
    for preferred in ("test", "val", "train"):
        if preferred in partitions:
            return preferred
    return next(iter(sorted(partitions)), None)


def write_plots(out_dir: str, results: Sequence[ModelResult]) -> list[str]:
    """The three PNGs for the held-out partition (test when present): predicted vs measured
    latency (models that predict ms), per-run Kendall tau histogram, top-k slowdown by k."""
    try:
        import matplotlib
    except ImportError as exc:  # the optional extra is missing
        raise ImportError(
            "the report plots need matplotlib: pip install 'kernel-corpus[train]' (or plots=False)"
        ) from exc

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    partition = _plot_partition(results)
    chosen = [r for r in results if r.partition == partition]
    models = list(dict.fromkeys(r.model for r in chosen))
    paths = []

    fig, ax = plt.subplots(figsize=(5.5, 5))
    drawn = False
    for model in models:
        pairs = [
            (r.measured_ms, r.predicted_ms)
            for r in chosen
            if r.model == model and r.predicted_ms is not None
        ]
        if not pairs:
            continue
        measured = np.concatenate([p[0] for p in pairs])
        predicted = np.concatenate([p[1] for p in pairs])
        keep = np.isfinite(measured) & np.isfinite(predicted) & (measured > 0) & (predicted > 0)
        ax.scatter(measured[keep], predicted[keep], s=6, alpha=0.5, label=model)
        drawn = drawn or bool(keep.any())
    if drawn:
        ax.set_xscale("log")
        ax.set_yscale("log")
        low, high = ax.get_xlim()
        ax.plot([low, high], [low, high], color="grey", linewidth=0.8)
        ax.legend()
    else:
        ax.text(
            0.5,
            0.5,
            "no model predicts latency in ms",
            ha="center",
            va="center",
            transform=ax.transAxes,
        )
    ax.set_xlabel("measured median latency (ms)")
    ax.set_ylabel("predicted latency (ms)")
    ax.set_title(f"predicted vs measured ({partition})")
    paths.append(_save(fig, out_dir, "predicted_vs_measured.png"))

    fig, ax = plt.subplots(figsize=(6, 4))
    bins = np.linspace(-1, 1, 21)
    for model in models:
        taus = [
            t for r in chosen if r.model == model for t in r.run_taus.values() if math.isfinite(t)
        ]
        if taus:
            ax.hist(taus, bins=bins, histtype="step", linewidth=1.8, label=model)
    ax.set_xlabel("Kendall tau of a run (all seeds)")
    ax.set_ylabel("runs")
    ax.set_title(f"per-run Kendall tau ({partition})")
    ax.legend()
    paths.append(_save(fig, out_dir, "kendall_tau_hist.png"))

    fig, ax = plt.subplots(figsize=(6, 4))
    for model in models:
        curves = [
            [r.slowdown_by_k.get(k, math.nan) for k in PLOT_KS] for r in chosen if r.model == model
        ]
        ax.plot(
            PLOT_KS, np.nanmean(np.array(curves, dtype=np.float64), axis=0), marker="o", label=model
        )
    ax.set_xlabel("k (configs tried, in the model's order)")
    ax.set_ylabel("mean top-k slowdown vs best")
    ax.set_title(f"top-k slowdown ({partition})")
    ax.legend()
    paths.append(_save(fig, out_dir, "topk_slowdown.png"))
    return paths


def _save(fig: Any, out_dir: str, name: str) -> str:
    import matplotlib.pyplot as plt

    path = os.path.join(out_dir, name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _short(value: Any, limit: int = 300) -> str:
    """A meta value for report.md: JSON for structures, cut at ``limit`` characters."""
    text = json.dumps(value, default=str) if isinstance(value, Mapping | list) else str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


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


def write_report(
    out_dir: str | os.PathLike[str],
    results: Results,
    *,
    title: str = "Cost model vs baselines",
    meta: Mapping[str, Any] | None = None,
    plots: bool = True,
) -> dict[str, str]:
    """Write metrics.json, report.md and (``plots``) the PNGs into ``out_dir`` (created).

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
    summary = summarize(results)
    comparisons = paired_comparisons(results)
    payload = {
        "meta": meta,
        "summary": summary,
        "paired": comparisons,
        "results": [r.to_json() for r in results],
    }
    written = {"metrics.json": os.path.join(out_dir, "metrics.json")}
    _atomic_text(
        written["metrics.json"], json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n"
    )

    seeds = sorted({r.seed for r in results})
    lines = [f"# {title}", ""]
    lines += [f"- {key}: {_short(value)}" for key, value in meta.items()]
    lines += [
        f"- seeds: {', '.join(map(str, seeds))}; each cell is the mean over seeds and its "
        f"{LEVEL:.0%} Student-t interval [low, high] (none with one seed).",
        "- kendall_tau: per-run Kendall tau-b over the configs that ran, averaged over runs with "
        ">= 2 valid configs; opa: ordered-pair accuracy; topk_slowdown: (best latency among the "
        "model's first k picks - best) / best, picks taken from every config (configs predicted "
        "to fail last), a run whose k picks all fail costing its slowest valid config; "
        "top1_failed: share of runs whose first pick fails; mape: percent; validity_accuracy: "
        "predicted ok/failed vs status.",
        "- paired: per seed (same split, same held-out runs) each model minus the best "
        "baseline by mean Kendall tau; interval and p-value of the paired t-test over seeds; "
        "better/worse: seeds where the model is strictly better / worse.",
        "",
    ]
    order = ("test", "val", "train")
    for kind, partitions in summary.items():
        lines += [f"## {kind} split", ""]
        for partition in sorted(partitions, key=lambda p: order.index(p) if p in order else 3):
            lines += [
                f"### {partition}",
                "",
                markdown_table(summary, partition, split_kind=kind),
                "",
            ]
            comparison = comparisons.get(kind, {}).get(partition)
            if comparison and comparison["models"] and partition != "train":
                lines += [
                    f"Paired against {comparison['against']} ({partition}):",
                    "",
                    paired_table(comparison),
                    "",
                ]
    if plots:
        first_kind = results[0].split_kind
        lines.append(f"Plots: {first_kind} split.")
        lines.append("")
        for path in write_plots(out_dir, [r for r in results if r.split_kind == first_kind]):
            name = os.path.basename(path)
            written[name] = path
            lines.append(f"![{name}]({name})")
        lines.append("")
    written["report.md"] = os.path.join(out_dir, "report.md")
    _atomic_text(written["report.md"], "\n".join(lines))
    return written
