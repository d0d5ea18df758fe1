"""Every train command refuses a directory that is no dataset with one line, ``error: ...``
(schemas.console.print_error), exit 2, no traceback, nothing else printed after it."""

from __future__ import annotations

import pytest

from train.baselines.__main__ import main as baselines_main
from train.bench import main as bench_main
from train.cli import main as train_main
from train.compare import main as compare_main


@pytest.mark.parametrize(
    "command",
    [
        lambda d, out: train_main(["--data", d, "--out", out, "--cache-dir", f"{out}-cache"]),
        lambda d, out: baselines_main(["--data", d]),
        lambda d, out: bench_main(["--data", d]),
        lambda d, out: compare_main([f"a={d}:gnn"]),
    ],
    ids=["train", "train.baselines", "train.bench", "train.compare"],
)
def test_not_a_dataset_is_one_error_line(tmp_path, capsys, command):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.md").write_text("no dataset here\n")
    assert command(str(tmp_path / "docs"), str(tmp_path / "out")) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(tmp_path / "docs") in lines[0]
    assert captured.out == ""


def test_baselines_on_data_a_split_cannot_divide_is_one_error_line(tmp_path, capsys):
    """One family cannot be split by family: one line and exit 2, as python -m train says it
    (it used to be a traceback)."""
    from tests.train.synthetic import write_dataset

    data = write_dataset(str(tmp_path / "data"), n_families=1).root
    assert baselines_main(["--data", data, "--seeds", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "needs at least 2" in err and len(err.splitlines()) == 1
