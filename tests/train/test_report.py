from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest

from tests.terminal import as_terminal, unstyled
from tests.train.synthetic import write_dataset
from train.baselines.__main__ import main, parse_args
from train.baselines.compare import CompareConfig, compare_baselines
from train.compare import main as compare_main
from train.report import ModelResult, coerce_results, summarize, write_report

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _result(model: str, seed: int, tau_shift: float, partition: str = "test") -> ModelResult:
    # Two runs of three configs; the score is the latency plus a model-specific twist.
    run_ids = np.array(["a", "a", "a", "b", "b", "b"])
    measured = np.array([1.0, 2.0, 3.0, 1.0, 2.0, np.nan])
    score = measured + tau_shift * np.array([3.0, 0.0, -3.0, 0.0, 0.0, 0.0])
    return ModelResult.from_arrays(
        model, partition, seed, run_ids, measured, np.nan_to_num(score), predicted_ms=measured * 1.5
    )


def test_summary_mean_and_t_interval_over_seeds():
    results = [_result("good", 0, 0.0), _result("good", 1, 1.0)]
    # Seed 0 ranks both runs right (tau 1); seed 1 reverses run a (tau -1, run b 1): mean 0.
    assert results[0].metrics["kendall_tau"] == pytest.approx(1.0)
    assert results[1].metrics["kendall_tau"] == pytest.approx(0.0)
    stats = summarize(results)["family"]["test"]["good"]["kendall_tau"]
    # Two values 1 and 0: sd (ddof 1) = sqrt(0.5); t(0.975, 1) = 12.706; half = 12.706 * 0.5.
    half = 12.7062047 * math.sqrt(0.5) / math.sqrt(2)
    assert stats["mean"] == pytest.approx(0.5) and stats["n"] == 2
    assert stats["sd"] == pytest.approx(math.sqrt(0.5))
    assert stats["low"] == pytest.approx(0.5 - half) and stats["high"] == pytest.approx(0.5 + half)
    assert summarize(results)["family"]["test"]["good"]["mape"]["mean"] == pytest.approx(50.0)
    one = summarize([_result("good", 0, 0.0)])["family"]["test"]["good"]["kendall_tau"]
    assert one["low"] is None and one["high"] is None and one["n"] == 1


def test_write_report_files(tmp_path):
    results = [
        _result(m, s, shift) for m, shift in (("model", 0.0), ("random", 1.0)) for s in (0, 1)
    ]
    results.append(_result("model", 0, 0.0, partition="val"))
    written = write_report(tmp_path / "out", results, meta={"data": "somewhere", "level": "ttgir"})
    assert set(written) == {
        "metrics.json",
        "report.md",
        "predicted_vs_measured.png",
        "kendall_tau_hist.png",
        "topk_slowdown.png",
    }
    payload = json.loads(
        (tmp_path / "out" / "metrics.json").read_text(),
        parse_constant=lambda c: pytest.fail(f"{c} in JSON"),
    )
    assert payload["meta"]["data"] == "somewhere"
    assert len(payload["results"]) == 5
    assert payload["summary"]["family"]["test"]["random"]["kendall_tau"]["mean"] == pytest.approx(
        0.0
    )
    # "model" is not a baseline; random is the only one, so every model is paired against it.
    paired = payload["paired"]["family"]["test"]
    assert paired["against"] == "random"
    assert paired["models"]["model"]["kendall_tau"]["diff"]["mean"] == pytest.approx(1.0)
    assert paired["models"]["model"]["kendall_tau"]["wins"] == 2
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## family split" in report and "### test runs" in report and "### val runs" in report
    assert report.index("### test runs") < report.index("### val runs")
    # mean ±half-interval per cell: seeds agree, so the interval is 0.
    assert "| model | 1.000 ±0.000 | 1.000 ±0.000 |" in report
    assert "each model minus random (the best baseline by tau), paired" in report
    # the same difference on both seeds: no t-test; the exact sign test's p from 2 seeds, 0.5,
    # kept in metrics.json; the report prints no p from fewer than 5 seeds, and says why
    assert paired["models"]["model"]["kendall_tau"]["p_value"] == pytest.approx(0.5)
    assert "| model | tau | +1.000 ±0.000 | n/a (2 seeds) | 2/0 |" in report
    assert "p is n/a with 2 seeds" in report
    assert "![topk_slowdown.png](topk_slowdown.png)" in report
    for name in ("predicted_vs_measured.png", "kendall_tau_hist.png", "topk_slowdown.png"):
        data = (tmp_path / "out" / name).read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 2000


def test_plain_records_are_accepted(tmp_path):
    # An experiment driver may hand its own records (dataclasses.asdict) in a mapping.
    source = _result("gnn", 0, 1.0)
    record = {
        "model": "gnn",
        "seed": 0,
        "partition": "test",
        "metrics": source.metrics,
        "run_ids": ["a", "a", "a", "b", "b", "b"],
        "measured_ms": [1.0, 2.0, 3.0, 1.0, 2.0, float("nan")],
        "predicted_score": [4.0, 2.0, 0.0, 1.0, 2.0, 0.0],
        "predicted_ms": None,
    }
    results, meta = coerce_results({"config": {"split": "shape"}, "results": [record]})
    assert meta == {"config": {"split": "shape"}}
    assert results[0].split_kind == "shape"
    assert results[0].run_taus == pytest.approx({"a": -1.0, "b": 1.0})
    write_report(tmp_path, {"config": {"split": "shape"}, "results": [record]}, plots=False)
    assert "config" in json.loads((tmp_path / "metrics.json").read_text())["meta"]


def test_from_predictions_orders_valid_rows_and_picks_from_all():
    frame = pl.DataFrame(
        {"run_id": ["r"] * 3, "median_ms": [1.0, None, 2.0], "valid": [True, False, True]}
    )
    score = np.array([0.0, -5.0, 1.0])  # the failing config scored fastest
    result = ModelResult.from_predictions(
        "m", "test", 0, frame, score, valid_pred=np.array([True, True, True])
    )
    # Tau orders the configs that ran; the first pick is the failing one: it costs the slowest
    # valid config (2.0 against the best 1.0).
    assert result.metrics["kendall_tau"] == 1.0
    assert result.metrics["top1_slowdown"] == 1.0 and result.metrics["top1_failed"] == 1.0
    assert result.metrics["validity_accuracy"] == pytest.approx(2 / 3)
    # Predicted to fail: ranked after the others, so the first pick is the best config.
    aware = ModelResult.from_predictions(
        "m", "test", 0, frame, score, p_valid=np.array([0.9, 0.2, 0.9])
    )
    assert aware.metrics["top1_slowdown"] == 0.0 and aware.metrics["top1_failed"] == 0.0
    assert aware.metrics["validity_accuracy"] == 1.0
    assert aware.slowdown_by_k[1] == 0.0
    assert math.isnan(result.metrics["mape"])
    with pytest.raises(ValueError, match="score has shape"):
        ModelResult.from_predictions("m", "test", 0, frame, np.zeros(2))


def test_empty_results_are_refused(tmp_path):
    with pytest.raises(ValueError, match="at least one"):
        write_report(tmp_path, [])


def test_compare_baselines_end_to_end(tmp_path):
    data = write_dataset(str(tmp_path / "d"), n_families=5, shapes_per_family=2)
    config = CompareConfig(data.root, str(tmp_path / "out"), seeds=2, models=("random", "analytic"))
    results = compare_baselines(config)
    assert {(r.model, r.partition, r.seed) for r in results} == {
        (m, p, s) for m in ("random", "analytic") for p in ("val", "test") for s in (0, 1)
    }
    summary = json.loads((tmp_path / "out" / "metrics.json").read_text())["summary"]["family"]
    assert (
        summary["test"]["analytic"]["kendall_tau"]["mean"]
        > summary["test"]["random"]["kendall_tau"]["mean"]
    )


def test_cli(tmp_path, capsys):
    data = write_dataset(str(tmp_path / "d"), n_families=5, shapes_per_family=1)
    assert main(["--data", data.root, "--seeds", "1", "--models", "default,analytic"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0] for line in out.splitlines() if line.strip()}
    assert {"analytic", "default"} <= rows and "test runs" in out
    with pytest.raises(SystemExit):
        parse_args(["--data", data.root, "--models", "random,gnn"])
    assert "unknown model(s) gnn" in capsys.readouterr().err


def test_compare_pairs_models_across_outputs(tmp_path, capsys):
    for name, shift in (("base", 0.0), ("variant", 1.0)):
        results = [_result("m", s, shift + 0.1 * s) for s in (0, 1, 2)]
        write_report(tmp_path / name, results, plots=False)
    argv = [f"a={tmp_path / 'base'}:m", f"b={tmp_path / 'variant'}:m", "--metrics", "kendall_tau"]
    assert compare_main(argv) == 0
    out = capsys.readouterr().out
    rows = {
        line.split(" | ")[0].strip("| "): line
        for line in out.splitlines()
        if line.startswith("| a") or line.startswith("| b")
    }
    # Seed by seed b reverses run a where a does not (or less): b is worse on every seed.
    assert "0/3" in rows["b"] and "3 seeds (0, 1, 2), paired." in out
    # Other held-out runs for a seed: not a pair.
    other = [_result("m", s, 0.0) for s in (0, 1, 2)]
    other[1] = ModelResult.from_arrays(
        "m", "test", 1, ["x", "x", "y", "y"], [1.0, 2.0, 1.0, 3.0], [0.0, 1.0, 0.0, 1.0]
    )
    write_report(tmp_path / "other", other, plots=False)
    assert compare_main([f"a={tmp_path / 'base'}:m", f"c={tmp_path / 'other'}:m"]) == 2
    assert "seed 1" in capsys.readouterr().err
    assert compare_main([f"a={tmp_path / 'base'}:nope"]) == 2
    assert compare_main(["no-equals-sign"]) == 2
    assert compare_main([f"a={tmp_path / 'base'}:m", "--metrics", "kendal_tau"]) == 2
    assert "--metrics: kendal_tau not in these results" in capsys.readouterr().err
    # The same held-out runs, learnt from other measurements (another harvest of the runs).
    for name, key in (("harvest1", "a" * 32), ("harvest2", "b" * 32)):
        results = [_result("m", s, 0.1 * s) for s in (0, 1, 2)]
        write_report(tmp_path / name, results, plots=False, meta={"rows_key": key})
    argv = [f"a={tmp_path / 'harvest1'}:m", f"b={tmp_path / 'harvest2'}:m"]
    assert compare_main(argv) == 2
    assert "learnt from other measurements" in capsys.readouterr().err


def test_compare_shows_the_top_k_the_report_shows_and_says_why(tmp_path, capsys):
    """On runs of 4 configs train's report said top-5 is 0 by construction and showed top-1 and
    top-3, while train.compare showed top5_slowdown (0.000 for every model). By default both
    now show the same k (here runs of 3: top-1 and top-2), and compare says why."""
    for name, shift in (("base", 0.0), ("variant", 1.0)):
        write_report(tmp_path / name, [_result("m", s, shift + 0.1 * s) for s in (0, 1, 2)], plots=False)
    assert compare_main([f"a={tmp_path / 'base'}:m", f"b={tmp_path / 'variant'}:m"]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0]
    assert "top1_slowdown" in header and "top2_slowdown" in header
    assert "top3_slowdown" not in header and "top5_slowdown" not in header
    assert (
        "Note: runs have a median of 3 configs: top-3 picks hold most runs whole (slowdown 0 by "
        "construction), so the table shows top-1 and top-2"
    ) in out
    report = (tmp_path / "base" / "report.md").read_text()
    assert "top-1 slowdown | top-2 slowdown |" in report and "top-5 slowdown" not in report
    # Asked for by name, a trivial k is shown, without the default's note.
    assert compare_main([f"a={tmp_path / 'base'}:m", "--metrics", "kendall_tau,top5_slowdown"]) == 0
    out = capsys.readouterr().out
    assert "top5_slowdown" in out.splitlines()[0] and "Note:" not in out  # one entry: no p either


@pytest.mark.parametrize("width", [80, 200])
def test_compare_prints_tables_that_fit_the_terminal(tmp_path, capsys, monkeypatch, width):
    """On a terminal train.compare printed its Markdown table, 13 columns on 150 characters
    for 3 metrics; now tables that fit as python -m train's report prints them: at 80 columns
    a row per entry and metric, on a wide terminal a row per entry. Piped, it is Markdown."""
    for name, shift in (("base", 0.0), ("variant", 1.0)):
        write_report(tmp_path / name, [_result("m", s, shift + 0.1 * s) for s in (0, 1, 2)], plots=False)
    argv = [f"a={tmp_path / 'base'}:m", f"b={tmp_path / 'variant'}:m"]
    assert compare_main(argv) == 0
    piped = capsys.readouterr().out
    assert piped.startswith("| entry | kendall_tau |") and max(map(len, piped.splitlines())) > 100
    as_terminal(monkeypatch, width)
    assert compare_main(argv) == 0
    lines = unstyled(capsys.readouterr().out)
    assert max(map(len, lines)) <= width
    assert not any(line.startswith("|") for line in lines)
    words = " ".join(" ".join(lines).split())
    assert "family split, test runs" in words and "each entry minus a" in words
    table = lines[: next(i for i, line in enumerate(lines) if line.startswith("note "))]
    b_rows = [line for line in table if "/" in line and not line.startswith(("a ", "entry"))]
    assert any("0/3" in line for line in b_rows)  # b worse on every seed in tau
    if width == 80:  # a row per entry and metric, the entry named on its first
        assert len(b_rows) == 3 and b_rows[0].startswith("b ") and "kendall_tau" in b_rows[0]
        assert all("n/a (3 seeds)" in line for line in b_rows)  # 3 seeds: too few for a p
    else:
        assert len(b_rows) == 1 and b_rows[0].count(" 0/3") + b_rows[0].count(" 3/0") == 3
        assert b_rows[0].count("n/a (3 seeds)") == 3
    assert "note runs have a median of 3 configs" in words and "shows top-1 and top-2" in words


def test_rows_key_follows_the_rows_not_their_order_or_columns():
    from train.experiment import rows_key

    rows = pl.DataFrame({"run_id": ["r1", "r1", "r2"], "config_id": ["c1", "c2", "c1"],
                         "harvest_id": ["h", "h", "h"], "status": ["ok", "ok", "timeout"],
                         "median_ms": [1.0, 2.0, None]})  # fmt: skip
    assert rows_key(rows) == rows_key(rows.reverse().drop("median_ms"))
    assert rows_key(rows) != rows_key(rows.with_columns(pl.lit("h2").alias("harvest_id")))


def test_seeds_with_nothing_rankable_held_out_are_named_in_a_note():
    """A seed whose test runs all failed has no tau: the ranking columns average over the
    others, which the report used to leave unsaid ("over 1 seed" for --seeds 3)."""
    from train.report_doc import report_notes

    def record(seed: int, taus: dict) -> dict:
        return {"split_kind": "family", "partition": "test", "seed": seed, "model": "mlp",
                "run_taus": taus, "metrics": {}}  # fmt: skip

    payload = {
        "meta": {},
        "summary": {"family": {"test": {}}},
        "results": [record(0, {}), record(1, {"r1": 0.5, "r2": 0.1, "r3": 1.0}), record(2, {})],
    }
    notes = "\n".join(report_notes(payload))
    assert "seed(s) 0, 2: no test run with two configs that ran ok" in notes
    assert "average over the other 1 seed" in notes
