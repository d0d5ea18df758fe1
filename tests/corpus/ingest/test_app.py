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
