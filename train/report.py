"""Experiment outputs: metrics.json, report.md (model vs baselines, mean ± std over seeds, per
partition) and PNG plots (predicted vs measured latency, per-run Kendall tau histogram, top-k
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

from train.metrics import evaluate, kendall_tau_per_run, topk_slowdown

HEADLINE = ("kendall_tau", "opa", "top1_slowdown", "top5_slowdown", "mape", "validity_accuracy")
"""Metrics shown in report.md, in order (metrics.json has every one)."""

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
        split_kind: str = "family",
        ks: Sequence[int] = (1, 5),
    ) -> ModelResult:
        """Judge predictions for the rows of ``frame`` (a samples table: ``run_id``,
        ``median_ms``, ``valid``). ``score``: lower = predicted faster, one per row; invalid
        rows take part only in the validity accuracy."""
        score = np.asarray(score, dtype=np.float64)
        if score.shape != (frame.height,):
            raise ValueError(f"score has shape {score.shape}; the frame has {frame.height} rows")
        valid = frame["valid"].to_numpy().astype(bool)
        run_ids = frame["run_id"].to_numpy()
        measured = np.where(valid, frame["median_ms"].fill_null(np.nan).to_numpy(), np.nan)
        metrics = evaluate(
            run_ids,
            measured,
            score,
            predicted_ms=predicted_ms,
            valid_true=valid if valid_pred is not None else None,
            valid_pred=valid_pred,
            ks=ks,
        )
        return cls(
            model=model,
            partition=partition,
            seed=seed,
            metrics=metrics,
            split_kind=split_kind,
            run_taus=kendall_tau_per_run(run_ids, measured, score),
            slowdown_by_k={k: topk_slowdown(run_ids, measured, score, k) for k in PLOT_KS},
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


def summarize(
    results: Sequence[ModelResult],
) -> dict[str, dict[str, dict[str, dict[str, float | int | None]]]]:
    """partition -> model -> metric -> {mean, std, n}: mean and population std over seeds of
    the finite values (n = how many)."""
    summary: dict[str, dict[str, dict[str, dict[str, float | int | None]]]] = {}
    for result in results:
        summary.setdefault(result.partition, {}).setdefault(result.model, {})
    for partition, models in summary.items():
        for model in models:
            mine = [r for r in results if r.partition == partition and r.model == model]
            names = sorted({k for r in mine for k in r.metrics})
            for name in names:
                values = np.array([r.metrics.get(name, math.nan) for r in mine], dtype=np.float64)
                values = values[np.isfinite(values)]
                models[model][name] = {
                    "mean": float(values.mean()) if values.size else None,
                    "std": float(values.std()) if values.size else None,
                    "n": int(values.size),
                }
    return summary


def _cell(stats: Mapping[str, Any] | None, metric: str) -> str:
    if not stats or stats.get("mean") is None:
        return "–"
    unit = " %" if metric == "mape" else ""
    return f"{stats['mean']:.3f} ± {stats['std']:.3f}{unit}"


def markdown_table(
    summary: Mapping[str, Any], partition: str, metrics: Sequence[str] = HEADLINE
) -> str:
    """The report table of one partition: a row per model, 'mean ± std' per metric."""
    lines = ["| model | " + " | ".join(metrics) + " |", "|---|" + "---|" * len(metrics)]
    for model, stats in summary.get(partition, {}).items():
        lines.append(f"| {model} | " + " | ".join(_cell(stats.get(m), m) for m in metrics) + " |")
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
    payload = {
        "meta": meta,
        "summary": summary,
        "results": [r.to_json() for r in results],
    }
    written = {"metrics.json": os.path.join(out_dir, "metrics.json")}
    _atomic_text(
        written["metrics.json"], json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n"
    )

    seeds = sorted({r.seed for r in results})
    kinds = sorted({r.split_kind for r in results})
    lines = [f"# {title}", ""]
    lines += [f"- {key}: {_short(value)}" for key, value in meta.items()]
    lines += [
        f"- split: {', '.join(kinds)}; seeds: {', '.join(map(str, seeds))} (mean ± std over seeds)",
        "- kendall_tau: per-run Kendall tau-b averaged over runs with >= 2 valid configs; opa: "
        "ordered-pair accuracy; topk_slowdown: (best latency among the model's top k - best) / best; "
        "mape: percent; validity_accuracy: predicted ok/failed vs status.",
        "",
    ]
    for partition in sorted(
        summary,
        key=lambda p: ("test", "val", "train").index(p) if p in ("test", "val", "train") else 3,
    ):
        lines += [f"## {partition}", "", markdown_table(summary, partition), ""]
    if plots:
        for path in write_plots(out_dir, results):
            name = os.path.basename(path)
            written[name] = path
            lines.append(f"![{name}]({name})")
        lines.append("")
    written["report.md"] = os.path.join(out_dir, "report.md")
    _atomic_text(written["report.md"], "\n".join(lines))
    return written
