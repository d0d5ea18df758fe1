"""The report's figures (train.plots), inspected as matplotlib objects, not pixels."""

from __future__ import annotations

import numpy as np
import pytest

from train.plots import DIAGONAL_LABEL, report_figures, write_plots
from train.report import ModelResult

pytest.importorskip("matplotlib")


def _results(configs: int = 4) -> list[ModelResult]:
    results = []
    for model, noise, ms in (("gnn", 0.2, True), ("mlp", 1.0, True), ("random", 9.0, False)):
        for seed in range(2):
            rng = np.random.default_rng(seed)
            run_ids = np.repeat(["a", "b", "c"], configs)
            measured = rng.uniform(0.01, 2.0, run_ids.size)
            score = measured + noise * rng.normal(size=run_ids.size)
            results.append(ModelResult.from_arrays(
                model, "test", seed, run_ids, measured, score,
                predicted_ms=measured * 1.2 if ms else None))  # fmt: skip
    return results


def _visible(figure):
    return [ax for ax in figure.axes if ax.get_visible()]


def test_tau_histograms_one_panel_per_model():
    figure = report_figures(_results())["kendall_tau_hist.png"]
    axes = _visible(figure)
    assert [ax.get_title().split("\n")[0] for ax in axes] == ["gnn", "mlp", "random"]
    for ax in axes:
        assert ax.get_xlim() == (-1, 1) and "6 runs" in ax.get_title()  # 3 runs x 2 seeds
        assert ax.patches  # filled bars, each model on its own axes
    # figure.texts rather than get_suptitle(), which matplotlib before 3.8 lacks (floor 3.7)
    assert any("seeds 0, 1" in text.get_text() for text in figure.texts)


def test_predicted_vs_measured_panels_diagonal_and_pooling():
    figure = report_figures(_results())["predicted_vs_measured.png"]
    axes = _visible(figure)
    # A panel per model that predicts milliseconds: the GNN is not drawn under the MLP.
    assert [ax.get_title() for ax in axes] == ["gnn", "mlp"]
    for ax in axes:
        labels = ax.get_legend_handles_labels()[1]
        assert DIAGONAL_LABEL in labels
        assert any("2 seeds pooled" in label for label in labels)
        assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
        assert "ms" in ax.get_xlabel() and "ms" in ax.get_ylabel()


def test_topk_curves_stop_at_the_largest_run_and_say_fraction():
    figure = report_figures(_results(configs=4))["topk_slowdown.png"]
    (ax,) = _visible(figure)
    assert [line.get_label() for line in ax.lines] == ["gnn", "mlp", "random"]
    for line in ax.lines:
        assert list(line.get_xdata()) == [1, 2, 3, 4]
        assert line.get_ydata()[-1] == 0  # all 4 configs tried: the best is among them
    assert "fraction" in ax.get_ylabel()


def test_write_plots_renames_into_place(tmp_path):
    written = write_plots(str(tmp_path), _results())
    assert sorted(written) == ["kendall_tau_hist.png", "predicted_vs_measured.png",
                               "topk_slowdown.png"]  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(written)
