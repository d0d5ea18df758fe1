"""``python -m corpus.suite``'s refusals of a wrong argument: one line naming it, exit 2, before
any config runs (they used to be tracebacks, some after the whole check had run)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from corpus.suite.__main__ import main


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    text = (captured.out + captured.err).strip()
    assert "\n" not in text and "Traceback" not in text, text
    assert text.startswith("error: "), text
    return text


def test_check_refuses_a_json_path_it_cannot_write_before_checking(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "softmax", "--json", str(tmp_path)]) == 2
    assert f"--json {tmp_path}: a directory" in error_line(capsys)
    missing = tmp_path / "no" / "results.json"
    assert main(["check", "softmax", "--json", str(missing)]) == 2
    assert f"--json {missing}: no directory {missing.parent}" in error_line(capsys)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_check_on_cuda_without_a_gpu_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    for device in ("cuda", "cuda:1"):
        assert main(["check", "softmax", "--samples", "0", "--device", device]) == 2
        assert f"--device {device}: CUDA is not available here" in error_line(capsys)


def test_doc_refuses_a_missing_document_or_one_without_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "suite.md"
    assert main(["doc", "--path", str(missing)]) == 2
    assert f"--path {missing}: No such file or directory" in error_line(capsys)
    other = tmp_path / "notes.md"
    other.write_text("# my notes\n")
    assert main(["doc", "--path", str(other)]) == 2
    assert "families-table" in error_line(capsys)
    assert other.read_text() == "# my notes\n"


def test_suite_takes_a_comma_separated_list_as_the_harvest_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--suite a,b (the harvest's form) was imported as one module named 'a,b'."""
    assert main(["list", "--scale", "tiny", "--suite", "corpus.suite.kernels,corpus.suite.kernels"]) == 0
    assert "softmax" in capsys.readouterr().out
