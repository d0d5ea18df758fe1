"""What ``python -m corpus.ingest`` refuses before any work: non-UTF-8 input, an ``--out``
that cannot take the dataset (issue 19, item 10)."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpus.ingest.__main__ import main


@pytest.mark.parametrize("fmt", ["helion", "tritonparse"])
def test_non_utf8_input_is_one_line_naming_the_file(
    fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "log.csv"
    log.write_bytes(b"run_id,timestamp_s\n" + b"\xff\xfe" * 10)
    log.with_suffix(".meta.jsonl").write_text("")
    assert main([fmt, str(log), "--out", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(log) in err and "not UTF-8" in err and "byte 19" in err
    assert not (tmp_path / "d").exists()  # refused before anything was written


def test_unwritable_out_is_refused_before_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "trace.ndjson"
    log.write_text("{not json\n")  # never read: the --out probe comes first
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["tritonparse", str(log), "--out", str(blocker / "d"), "--strict"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --out") and "cannot write the dataset there" in err


TRACE = Path(__file__).resolve().parent / "fixtures" / "tritonparse" / "gelu.ndjson"


def _project(root: Path) -> Path:
    """A directory of someone's project: no dataset, a README.md of its own."""
    root.mkdir()
    (root / "README.md").write_text("# My project\n")
    (root / "main.py").write_text("print('hi')\n")
    return root


def test_out_that_is_no_dataset_is_refused_as_the_harvest_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The gap: ingest probed only that --out could take files, so a project directory got the
    dataset's tables beside its own files; the harvest refuses it, and so must ingest (one
    check, corpus.destination.probe_out, one override flag)."""
    project = _project(tmp_path / "project")
    assert main(["tritonparse", str(TRACE), "--out", str(project)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert err.startswith("error: --out") and "a non-empty directory that holds no dataset (README.md, main.py)" in err
    assert "--force-out" in err
    assert sorted(p.name for p in project.iterdir()) == ["README.md", "main.py"]  # nothing made

    dataset = tmp_path / "ds"  # a dataset whose README.md its owner wrote
    (dataset / "runs").mkdir(parents=True)
    (dataset / "README.md").write_text("notes of mine\n")
    assert main(["tritonparse", str(TRACE), "--out", str(dataset)]) == 2
    assert "README.md was not written by kernel-corpus" in capsys.readouterr().err

    with pytest.raises(SystemExit) as stop:  # an unset variable in a script: not the cwd
        main(["tritonparse", str(TRACE), "--out", ""])
    assert stop.value.code == 2 and "--out: expected a non-empty value" in capsys.readouterr().err

    assert main(["tritonparse", str(TRACE), "--out", str(project), "--force-out"]) == 0  # told to
    assert "imported 1 run(s)" in capsys.readouterr().out
    assert (project / "README.md").read_text() == "# My project\n"


def test_a_missing_sidecar_or_a_directory_as_log_is_refused_before_out_is_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Helion CSV without its .meta.jsonl used to be refused only after --out was created
    (an empty dataset left behind); a directory given as the log was called missing."""
    log = tmp_path / "a.csv"
    log.write_text("run_id,timestamp_s\n")
    out = tmp_path / "d"
    assert main(["helion", str(log), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: no Helion metadata sidecar {tmp_path / 'a.meta.jsonl'} (give --meta)"
    assert not out.exists()
    for fmt in ("helion", "tritonparse"):
        assert main([fmt, str(tmp_path), "--out", str(out)]) == 2
        err = " ".join(capsys.readouterr().err.split())
        assert err == f"error: {tmp_path}: a directory; give the {fmt} log file in it"
        assert not out.exists()
