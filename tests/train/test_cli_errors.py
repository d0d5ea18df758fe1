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


@pytest.mark.parametrize("via", ["--cache-dir", "$KERNEL_CORPUS_TRAIN_CACHE", "train's cache"])
def test_a_cache_path_that_is_a_file_is_one_error_line_before_work(tmp_path, capsys, monkeypatch, via):
    """A cache root that is a regular file, set by the option, the variable or
    XDG_CACHE_HOME: one line naming the path, exit 2, no --out (it was a FileExistsError
    traceback once the dataset was loaded)."""
    from tests.train.synthetic import write_dataset

    data = write_dataset(str(tmp_path / "data"), n_families=4).root
    blocker = tmp_path / "cache-file"
    blocker.write_text("not a directory\n")
    argv = ["--data", data, "--out", str(tmp_path / "out"), "--models", "default", "--seeds", "1"]
    monkeypatch.delenv("KERNEL_CORPUS_TRAIN_CACHE", raising=False)
    if via == "--cache-dir":
        argv += ["--cache-dir", str(blocker)]
    elif via.startswith("$"):
        monkeypatch.setenv("KERNEL_CORPUS_TRAIN_CACHE", str(blocker))
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert train_main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {via} {blocker}")
    assert "not a directory" in lines[0].lower()
    assert not (tmp_path / "out").exists()


def test_final_model_without_final_is_refused(tmp_path, capsys):
    """--final-model alone used to be ignored: the run shipped another model without a word."""
    from tests.train.synthetic import write_dataset

    data = write_dataset(str(tmp_path / "data"), n_families=4).root
    out = tmp_path / "out"
    assert train_main(["--data", data, "--out", str(out), "--final-model", "mlp", "--models", "mlp"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == ["error: --final-model mlp: names the model --final trains; add --final"]
    assert not out.exists()
