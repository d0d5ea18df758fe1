"""The training report for the terminal and report.md (train.report_doc): widths, what is
shown and what is said, from real ModelResults."""

from __future__ import annotations

import io

import numpy as np
import pytest
from rich.console import Console

from train.report import ModelResult, report_payload, write_report
from train.report_doc import (
    build_report,
    few_seeds_p_note,
    p_cell,
    print_report,
    shown_ks,
    to_markdown,
)


def _result(model: str, seed: int, kind: str, runs: int, configs: int, noise: float,
            partition: str = "test") -> ModelResult:  # fmt: skip
    rng = np.random.default_rng(seed * 100 + len(model))
    run_ids = np.repeat([f"r{i}" for i in range(runs)], configs)
    measured = rng.uniform(1.0, 5.0, run_ids.size)
    score = measured + noise * rng.normal(size=run_ids.size)
    return ModelResult.from_arrays(model, partition, seed, run_ids, measured, score,
                                   predicted_ms=measured * 1.1, split_kind=kind)  # fmt: skip


def _results(runs: int = 4, configs: int = 4, kinds=("family", "cluster")) -> list[ModelResult]:
    return [
        _result(model, seed, kind, runs, configs, noise, partition)
        for kind in kinds
        for model, noise in (("gnn", 0.3), ("mlp", 1.0), ("random", 50.0), ("analytic", 2.0))
        for seed in range(3)
        for partition in ("test", "val")
    ]


def _printed(doc, width: int) -> list[str]:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    print_report(console, doc)
    return console.file.getvalue().splitlines()


@pytest.mark.parametrize("width", [80, 160])
def test_terminal_report_fits_the_width_without_trailing_blanks(width):
    payload = report_payload(_results(), {"data": "somewhere", "dataset_key": "abc123"})
    lines = _printed(build_report(payload), width)
    assert max(map(len, lines)) <= width
    assert all(line == line.rstrip() for line in lines)
    text = "\n".join(lines)
    # Every model's row, both split kinds in the order they ran, the paired comparison.
    assert text.index("family split, test runs") < text.index("cluster split, test runs")
    assert "each model minus analytic" in text
    for model in ("gnn", "mlp", "random", "analytic"):
        assert any(line.startswith(model) for line in lines)
    # Said once each; the cache key is not shown; the val tables stay in report.md.
    assert sum(line.startswith("split ") for line in lines) == 1
    assert "dataset_key" not in text and "abc123" not in text
    assert "val runs:" not in text
    # Tiny data: the numbers are said to be noise.
    assert "too few" in text


def test_wide_terminal_puts_a_model_per_paired_row():
    payload = report_payload(_results(kinds=("family",)), {"data": "x"})
    doc = build_report(payload)
    narrow, wide = _printed(doc, 80), _printed(doc, 200)
    paired_rows = [line for line in wide if line.startswith("gnn") and "/" in line]
    assert len(paired_rows) == 1 and paired_rows[0].count("/") >= 2  # tau and top-k wins
    # At 80 columns: a row per metric (the model named on its first only).
    assert sum(line.lstrip().startswith("top-") for line in narrow) >= 2


def _tau_row(markdown: str, model: str) -> list[str]:
    """The cells of ``model``'s tau row in the paired table of report.md."""
    (row,) = [line for line in markdown.splitlines() if line.startswith(f"| {model} | tau | ")]
    return [cell.strip() for cell in row.strip("|").split("|")]


def _ranker(model: str, seed: int, reversed_runs: int, swapped_runs: int, runs: int = 1000) -> ModelResult:
    """``model`` on ``runs`` runs of 3 configs, ranking the first ``reversed_runs`` backwards
    (tau -1), the next ``swapped_runs`` with its two fastest swapped (tau 1/3), the rest right."""
    run_ids = np.repeat([f"r{i}" for i in range(runs)], 3)
    measured = np.tile([1.0, 2.0, 3.0], runs)
    order = [[3.0, 2.0, 1.0]] * reversed_runs + [[2.0, 1.0, 3.0]] * swapped_runs
    score = np.concatenate([np.ravel(order), measured[len(order) * 3 :]])
    return ModelResult.from_arrays(model, "test", seed, run_ids, measured, score, split_kind="family")


@pytest.mark.parametrize(("seeds", "runs"), [(2, 1000), (8, 100)])
def test_a_p_value_is_printed_for_what_it_can_say(seeds, runs):
    """A perfect ranker against one with half its runs backwards: per-seed differences that
    nearly agree. From 2 seeds the paired t-test's p printed as 0.000, which reads as strong evidence
    from two replicates; now it is n/a with a note saying why, and from 5 seeds up a p below
    0.001 reads <0.001. metrics.json keeps the p-value as computed either way."""
    results = [_ranker("gnn", seed, 0, 0, runs) for seed in range(seeds)]
    results += [_ranker("random", seed, runs // 2, seed + 1, runs) for seed in range(seeds)]
    payload = report_payload(results, {"data": "x"})
    p_value = payload["paired"]["family"]["test"]["models"]["gnn"]["kendall_tau"]["p_value"]
    assert 0 < p_value < 0.001  # what used to print as 0.000
    markdown = to_markdown(build_report(payload))
    _, _, _, p, wins = _tau_row(markdown, "gnn")
    assert wins == f"{seeds}/0"
    if seeds < 5:
        assert p == f"n/a ({seeds} seeds)" and f"p is n/a with {seeds} seeds" in markdown
    else:
        assert p == "<0.001" and "p is n/a" not in markdown


def test_p_cells_and_the_note_follow_the_seed_count():
    assert [p_cell(None, 5), p_cell(0.0004, 5), p_cell(0.0004, 4), p_cell(0.01234, 10)] == [
        "–", "<0.001", "n/a (4 seeds)", "0.012",
    ]  # fmt: skip
    assert p_cell(0.001, 5) == "0.001"  # the smallest p printed as a number
    assert few_seeds_p_note(1) == few_seeds_p_note(5) == ""  # no p at all; a p shown
    assert "fewer than 5 per-seed differences" in few_seeds_p_note(4)


def test_topk_shown_only_below_the_runs_config_count():
    small = report_payload(_results(configs=4, kinds=("family",)), {"data": "x"})
    records = [r for r in small["results"] if r["partition"] == "test"]
    assert shown_ks(records) == ([1, 3], 4)
    markdown = to_markdown(build_report(small))
    assert "top-3 slowdown" in markdown and "top-5 slowdown" not in markdown
    assert "median of 4 configs" in markdown
    large = report_payload(_results(configs=12, kinds=("family",)), {"data": "x"})
    assert shown_ks([r for r in large["results"] if r["partition"] == "test"]) == ([1, 5], 12)


def test_report_md_links_its_plots_relative(tmp_path):
    written = write_report(tmp_path / "out", _results(kinds=("family",)), meta={"data": "x"})
    report = (tmp_path / "out" / "report.md").read_text()
    for name in ("predicted_vs_measured.png", "kendall_tau_hist.png", "topk_slowdown.png"):
        assert f"![{name}]({name})" in report and name in written
    assert "[metrics.json](metrics.json)" in report
    assert "### val runs" in report and "### test runs" in report
    assert not any(line != line.rstrip() for line in report.splitlines())


def test_interpreter_timings_are_said_from_the_checkpoints_arches(tmp_path):
    payload = report_payload(_results(kinds=("family",)), {"data": "x"})
    assert "interpreter" not in to_markdown(build_report(payload, tmp_path))
    (tmp_path / "checkpoint").mkdir()
    (tmp_path / "checkpoint" / "checkpoint.json").write_text('{"seen": {"arches": ["interpreter"]}}')
    markdown = to_markdown(build_report(payload, tmp_path))
    assert "arch interpreter" in markdown and "CPU times of Triton's interpreter" in markdown
