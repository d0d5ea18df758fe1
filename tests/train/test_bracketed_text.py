"""Paths and names from outside the code, printed by python -m train, are text: rich read
"[x]" in them as a style (it vanished) and "[/b]" as a closing tag (a MarkupError traceback)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from tests.train.synthetic import write_dataset
from train.cli import main
from train.report import ModelResult, report_payload
from train.report_doc import build_report, print_report

ODD = "[x][/b]"


def test_train_names_a_bracketed_data_and_out_as_they_are(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write_dataset(str(tmp_path / f"data{ODD}"), n_families=4).root
    out = tmp_path / f"runs{ODD}" / "out"
    argv = ["--data", data, "--out", str(out), "--epochs", "1", "--threads", "1", "--models", "default",
            "--seeds", "1", "--cache-dir", str(tmp_path / f"cache{ODD}")]  # fmt: skip
    assert main(argv) == 0
    (out / "replay" / "gnn-family[bold]").mkdir(parents=True)  # a replay the rerun deletes: said first
    capsys.readouterr()
    assert main(argv) == 0
    captured = capsys.readouterr()
    err, printed = " ".join(captured.err.split()), captured.out
    assert f"note: --out {out} holds python -m train.replay results (replay/gnn-family[bold])" in err, err
    unfolded = "".join(printed.split())  # a long path folds at the console's width; paths hold no blanks
    assert str(out) in unfolded and data in unfolded, printed  # the report's facts and files


def _result(model: str, seed: int) -> ModelResult:
    rng = np.random.default_rng(seed)
    run_ids = np.repeat([f"r{i}" for i in range(4)], 4)
    measured = rng.uniform(1.0, 5.0, run_ids.size)
    return ModelResult.from_arrays(model, "test", seed, run_ids, measured, measured + rng.normal(size=run_ids.size),
                                   predicted_ms=measured, split_kind="family")  # fmt: skip


def test_the_reports_tables_show_bracketed_model_names_as_they_are() -> None:
    """train.compare labels its entries as the user typed them (LABEL=DIR:MODEL)."""
    results = [_result(model, seed) for model in (f"a{ODD}", "random") for seed in range(3)]
    console = Console(file=io.StringIO(), width=200, color_system=None)
    print_report(console, build_report(report_payload(results, {"data": f"/d{ODD}"})))
    printed = console.file.getvalue()
    assert any(line.startswith(f"a{ODD}") for line in printed.splitlines()), printed
    assert f"/d{ODD}" in printed
