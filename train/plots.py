"""The figures of a cost model's evaluation, one module for ``python -m train``'s report and
``notebooks/02_cost_model.ipynb``.

- :func:`tau_histograms`: Kendall tau per held-out run, one panel per model (shared axes, the
  mean marked), so no model's bars hide another's;
- :func:`predicted_vs_measured`: predicted against measured latency per config on log axes,
  one panel per model (so none hides under another), the ``predicted = measured`` diagonal
  labelled, and the legend saying what each point set pools (seeds, partitions);
- :func:`topk_curves`: mean top-k slowdown by k, k only up to the configs the runs have, the y
  axis a fraction of the run's best latency (0.1 = 10 % slower).

Figures are :class:`matplotlib.figure.Figure` objects made without pyplot: nothing touches
the global backend (a notebook keeps its inline display) and nothing stays open; the report
saves them (:func:`write_plots`), a notebook shows one by ending a cell with it. The helpers
:func:`taus_by_model` and :func:`slowdown_by_model` read the ``results`` records of
``metrics.json`` (or :meth:`train.report.ModelResult.to_json`), so both callers plot the same
numbers. matplotlib is imported when a figure is drawn (the ``train`` extra installs it).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from train.report import ModelResult

PLOT_FILES = ("predicted_vs_measured.png", "kendall_tau_hist.png", "topk_slowdown.png")
"""What :func:`write_plots` writes, in the order the report shows them."""

EMPHASIZED = "gnn"
"""The model drawn with a heavier line when present (the project's cost model)."""

DIAGONAL_LABEL = "predicted = measured"

Points = tuple[np.ndarray, np.ndarray]
"""(measured ms, predicted ms) of the configs one series shows."""


def _figure(width: float, height: float) -> Figure:
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # the optional extra is missing
        raise ImportError(
            "the plots need matplotlib: pip install 'kernel-corpus[train]' (or plots=False)"
        ) from exc
    return Figure(figsize=(width, height), dpi=110, layout="constrained")


def palette(models: Iterable[str]) -> dict[str, str]:
    """model -> matplotlib color (``C0``, ``C1``, ... in the order given), so a model has
    one color in every figure of a report."""
    return {model: f"C{i % 10}" for i, model in enumerate(dict.fromkeys(models))}


def _grid(figure: Figure, panels: int, **shared: Any) -> list[Axes]:
    """``panels`` axes on a grid of at most 3 columns (the unused cells hidden)."""
    ncols = max(1, min(3, panels))
    nrows = max(1, -(-panels // ncols))
    axes = figure.subplots(nrows, ncols, squeeze=False, **shared).flatten().tolist()
    for ax in axes[panels:]:
        ax.set_visible(False)
    return axes[:panels]


def _style(ax: Axes) -> None:
    ax.grid(True, alpha=0.3)
    ax.tick_params(labelsize=8)


def tau_histograms(
    taus: Mapping[str, Sequence[float]],
    *,
    what: str,
    colors: Mapping[str, str] | None = None,
) -> Figure:
    """One histogram of per-run Kendall tau per model (bins of 0.2 over [-1, 1], shared axes,
    the model's mean as a dashed line, its run count in the panel title). ``taus``: model ->
    tau of each run (non-finite values are left out); ``what``: what the runs are, e.g.
    ``"test runs, family split, seeds 0-2 pooled"`` (the figure's title)."""
    colors = colors or palette(taus)
    figure = _figure(3.2 * min(3, max(1, len(taus))), 2.5 * max(1, -(-len(taus) // 3)) + 0.4)
    axes = _grid(figure, len(taus), sharex=True, sharey=True)
    bins = np.linspace(-1, 1, 11)
    for ax, (model, values) in zip(axes, taus.items(), strict=True):
        finite = [float(t) for t in values if t is not None and math.isfinite(t)]
        ax.hist(finite, bins=bins, color=colors.get(model, "C0"), edgecolor="white")
        mean = float(np.mean(finite)) if finite else math.nan
        if finite:
            ax.axvline(mean, color="black", lw=1, ls="--")
        ax.set_title(f"{model}\nmean {mean:.2f} over {len(finite)} runs", fontsize=8)
        ax.set_xlabel("Kendall tau of a run", fontsize=8)
        ax.set_xlim(-1, 1)
        ax.set_xticks([-1, -0.5, 0, 0.5, 1])
        _style(ax)
    for ax in axes[:: min(3, max(1, len(taus)))]:
        ax.set_ylabel("runs", fontsize=8)
    figure.suptitle(f"Kendall tau per run: 1 = configs in the right order\n({what})", fontsize=9)
    return figure


def _log_axis_plain(ax: Axes) -> None:
    """Plain numbers at 1, 2, 5 x 10^n on both log axes, no crowded minor labels."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(subs=(1, 2, 5)))
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(NullFormatter())


def predicted_vs_measured(
    panels: Mapping[str, Mapping[str, Points]],
    *,
    what: str,
    colors: Mapping[str, str] | None = None,
) -> Figure:
    """Predicted against measured latency (ms, log axes), one panel per key of ``panels``
    (e.g. a model), each holding labelled point sets (e.g. ``"test configs, 3 seeds
    pooled"``, or one per partition). Every panel has the same limits and the labelled
    ``predicted = measured`` diagonal. A series takes ``colors[series]``, else
    ``colors[panel]``, else C0, C1, ... by its place in the panel. Points that are not finite
    and positive are left out. ``what``: the figure's title line."""
    colors = colors or {}
    kept: dict[str, dict[str, Points]] = {}
    for panel, series in panels.items():
        for label, (measured, predicted) in series.items():
            m = np.asarray(measured, dtype=np.float64)
            p = np.asarray(predicted, dtype=np.float64)
            keep = np.isfinite(m) & np.isfinite(p) & (m > 0) & (p > 0)
            kept.setdefault(panel, {})[label] = (m[keep], p[keep])
    count = max(1, len(kept))
    figure = _figure(3.6 * min(3, count), 3.5 * -(-count // 3) + 0.5)
    axes = _grid(figure, count, sharex=True, sharey=True)
    values = [a for series in kept.values() for pts in series.values() for a in pts if a.size]
    if not values:
        axes[0].text(0.5, 0.5, "no model predicts latency in ms", ha="center", va="center",
                     transform=axes[0].transAxes)  # fmt: skip
        axes[0].set_xlabel("measured latency, ms")
        axes[0].set_ylabel("predicted latency, ms")
        figure.suptitle(f"Predicted vs measured latency per config\n({what})", fontsize=9)
        return figure
    low = min(float(a.min()) for a in values) * 0.8
    high = max(float(a.max()) for a in values) * 1.25
    for ax, (panel, series) in zip(axes, kept.items(), strict=True):
        for i, (label, (measured, predicted)) in enumerate(series.items()):
            color = colors.get(label) or colors.get(panel) or f"C{i}"
            ax.scatter(measured, predicted, s=12, alpha=0.7, color=color, label=label)
        ax.plot([low, high], [low, high], color="black", lw=0.8, label=DIAGONAL_LABEL)
        ax.set(xscale="log", yscale="log", xlim=(low, high), ylim=(low, high))
        _log_axis_plain(ax)
        ax.set_title(panel, fontsize=9)
        ax.set_xlabel("measured latency, ms", fontsize=8)
        ax.set_ylabel("predicted latency, ms", fontsize=8)
        ax.legend(fontsize=7, loc="upper left")
        _style(ax)
    figure.suptitle(f"Predicted vs measured latency per config\n({what})", fontsize=9)
    return figure


def topk_curves(
    curves: Mapping[str, Mapping[int, float]],
    *,
    what: str,
    max_k: int | None = None,
    colors: Mapping[str, str] | None = None,
) -> Figure:
    """Mean top-k slowdown by k per model: how much slower the best of the model's first k
    picks is than the run's best, as a fraction (0.1 = 10 % slower; 0 = the best is among
    them). ``curves``: model -> k -> value; k runs up to ``max_k`` (the largest run's config
    count: past it every curve is flat), or every k given. Integer ticks on x."""
    from matplotlib.ticker import MaxNLocator

    colors = colors or palette(curves)
    figure = _figure(6.5, 4)
    ax = figure.subplots()
    top = 0.0
    for model, curve in curves.items():
        ks = sorted(k for k in curve if max_k is None or k <= max_k)
        y = [curve[k] if curve[k] is not None else math.nan for k in ks]
        top = max([top, *(v for v in y if math.isfinite(v))])
        emphasized = model == EMPHASIZED  # drawn thicker and on top: curves meet at 0
        ax.plot(ks, y, marker="o", ms=4, color=colors.get(model, "C0"), lw=2.2 if emphasized else 1.2,
                zorder=3 if emphasized else 2, label=model)  # fmt: skip
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("k: configs timed, in the model's order")
    ax.set_ylabel("slowdown vs the run's best\n(fraction: 0.1 = 10 % slower)")
    ax.set_ylim(bottom=-0.03 * (top or 1))
    ax.set_title(f"Top-k slowdown, lower is better\n({what})", fontsize=9)
    ax.legend(fontsize=8)
    _style(ax)
    return figure


def _chosen(records: Iterable[Mapping[str, Any]], partition: str, split_kind: str | None):
    return [
        r
        for r in records
        if r["partition"] == partition and (split_kind is None or r["split_kind"] == split_kind)
    ]


def taus_by_model(
    records: Iterable[Mapping[str, Any]], partition: str = "test", split_kind: str | None = None
) -> dict[str, list[float]]:
    """model -> Kendall tau of every run of ``partition`` over every seed (records of
    metrics.json's ``results``; ``split_kind`` None: all kinds)."""
    taus: dict[str, list[float]] = {}
    for r in _chosen(records, partition, split_kind):
        taus.setdefault(r["model"], []).extend(
            float(t) for t in r["run_taus"].values() if t is not None
        )
    return taus


def slowdown_by_model(
    records: Iterable[Mapping[str, Any]], partition: str = "test", split_kind: str | None = None
) -> dict[str, dict[int, float]]:
    """model -> k -> mean over seeds of the top-k slowdown on ``partition`` (records of
    metrics.json's ``results``)."""
    by_k: dict[str, dict[int, list[float]]] = {}
    for r in _chosen(records, partition, split_kind):
        for k, value in r["slowdown_by_k"].items():
            if value is not None:
                by_k.setdefault(r["model"], {}).setdefault(int(k), []).append(float(value))
    return {
        model: {k: float(np.mean(v)) for k, v in sorted(curve.items())}
        for model, curve in by_k.items()
    }


def largest_run(records: Iterable[Mapping[str, Any]], partition: str = "test") -> int | None:
    """Configs of the largest run of ``partition`` (None when the records do not say)."""
    sizes = [n for r in records if r["partition"] == partition for n in r.get("run_sizes", {}).values()]
    return max(sizes) if sizes else None


def seed_range(seeds: Iterable[int]) -> str:
    """``0``, ``0-4``, ``0, 2, 5``."""
    ordered = sorted(set(seeds))
    if len(ordered) > 2 and ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"{ordered[0]}-{ordered[-1]}"
    return ", ".join(map(str, ordered))


def seeds_text(seeds: Iterable[int]) -> str:
    """``seed 0``, ``seeds 0-4``, ``seeds 0, 2, 5``."""
    ordered = sorted(set(seeds))
    return f"seed{'' if len(ordered) == 1 else 's'} {seed_range(ordered)}"


def plot_partition(partitions: Iterable[str]) -> str | None:
    """The partition the plots show: test, else val, else train, else the first name."""
    present = set(partitions)
    for preferred in ("test", "val", "train"):
        if preferred in present:
            return preferred
    return min(present, default=None)


def report_figures(results: Sequence[ModelResult]) -> dict[str, Figure]:
    """The report's figures (file name -> figure, :data:`PLOT_FILES`) for the held-out
    partition (test when present) of the first split kind in ``results``."""
    if not results:
        return {}
    kind = results[0].split_kind
    mine = [r for r in results if r.split_kind == kind]
    partition = plot_partition(r.partition for r in mine)
    chosen = [r for r in mine if r.partition == partition]
    records = [r.to_json() for r in chosen]
    colors = palette(r.model for r in chosen)
    seeds = sorted({r.seed for r in chosen})
    what = f"{partition} runs of the {kind} split, {seeds_text(seeds)}"
    panels: dict[str, dict[str, Points]] = {}
    for model in colors:
        pairs = [
            (r.measured_ms, r.predicted_ms)
            for r in chosen
            if r.model == model and r.predicted_ms is not None and r.measured_ms is not None
        ]
        if pairs:
            measured = np.concatenate([p[0] for p in pairs])
            label = f"{measured.size} configs ({len(pairs)} seeds pooled)"
            panels[model] = {label: (measured, np.concatenate([p[1] for p in pairs]))}
    return {
        "predicted_vs_measured.png": predicted_vs_measured(
            panels, what=f"{what}: a config once per seed", colors=colors
        ),
        "kendall_tau_hist.png": tau_histograms(
            taus_by_model(records, partition, kind), what=f"{what} pooled", colors=colors
        ),
        "topk_slowdown.png": topk_curves(
            slowdown_by_model(records, partition, kind),
            what=f"{what}: mean over the runs, then over the seeds",
            max_k=largest_run(records, partition),
            colors=colors,
        ),
    }


def write_plots(out_dir: str, results: Sequence[ModelResult]) -> dict[str, str]:
    """Save :func:`report_figures` as PNGs in ``out_dir`` (written under a temporary name,
    then renamed); returns file name -> path."""
    written = {}
    for name, figure in report_figures(results).items():
        path = os.path.join(out_dir, name)
        tmp = f"{path}.tmp-{os.getpid()}.png"
        figure.savefig(tmp)
        os.replace(tmp, path)
        written[name] = path
    return written
