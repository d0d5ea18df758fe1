"""``python -m extract FILE`` refuses bad input before parsing: exit 2 and one line naming the
file or the option at fault."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from extract.cli import main
from tests.extract.conftest import HANDWRITTEN

README_EXAMPLE = HANDWRITTEN / "readme_example.ttir"  # TTIR: names no target


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """The one error line of a command refused as bad input (exit 2, nothing on stdout)."""
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("error: ") and captured.err.count("\n") == 1, captured.err
    return captured.err


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "the file is empty"),
        (b"  \n\n", "the file is empty"),
        (b"\x7fELF\x02\x01\x01\x00\xff\xfe binary", "not a text file (byte 8 is not UTF-8)"),
    ],
)
def test_empty_or_binary_file_is_refused_naming_it(tmp_path, capsys, content, expected):
    """Before: exit 1, as if the IR had been read and found invalid."""
    path = tmp_path / "kernel.ttgir"
    path.write_bytes(content)
    err = _refused(capsys, [str(path)])
    assert err.startswith(f"error: {path}: ") and expected in err


def test_a_missing_file_or_a_directory_is_refused_naming_it(tmp_path, capsys):
    """Before: exit 1 with Python's '[Errno 2] No such file or directory: ...'."""
    missing = tmp_path / "missing.ttgir"
    assert _refused(capsys, [str(missing)]) == f"error: {missing}: no such file (expected a .ttir or .ttgir file)\n"
    assert _refused(capsys, [str(tmp_path)]).startswith(f"error: {tmp_path}: is a directory")
    in_a_file = tmp_path / "a.ttir"
    in_a_file.write_text("x")
    err = _refused(capsys, [str(in_a_file / "b.ttir")])
    assert err.startswith(f"error: {in_a_file / 'b.ttir'}: cannot be read (Not a directory)")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_an_unreadable_file_is_refused_naming_it(tmp_path, capsys):
    path = tmp_path / "k.ttir"
    path.write_text(README_EXAMPLE.read_text())
    path.chmod(0)
    assert _refused(capsys, [str(path)]) == f"error: {path}: cannot be read (Permission denied)\n"


def test_a_bad_target_is_refused(capsys):
    """Before: any --target text was recorded as the graph's target, silently."""
    err = _refused(capsys, [str(README_EXAMPLE), "--target", "sm_bogus"])
    assert err.startswith("error: --target sm_bogus: unrecognised GPU target 'sm_bogus'")


def test_a_target_the_ir_contradicts_is_refused(fixture_dir: Path, capsys):
    """Before: --target cuda:80 on IR compiled for cuda:90 recorded cuda:80, against the help
    text ('to record when the IR has none')."""
    path = fixture_dir / "dot.sm_90.ttgir"
    err = _refused(capsys, [str(path), "--target", "sm_80"])
    assert err == f"error: --target sm_80: {path} was compiled for cuda:90 (its ttg.target); leave --target out\n"
    assert main([str(path), "--target", "cuda:90"]) == 0  # the same target is no contradiction
    assert json.loads(capsys.readouterr().out)["graph"]["target"] == "cuda:90"


def test_the_target_of_ttir_is_recorded_in_canonical_form(capsys):
    """Before: 'sm_90' was recorded as written, not as the dataset's 'cuda:90'."""
    assert main([str(README_EXAMPLE), "--target", "sm_90"]) == 0
    assert json.loads(capsys.readouterr().out)["graph"]["target"] == "cuda:90"


def test_the_module_entry_exits_2_with_one_line(tmp_path):
    """Smoke test of ``python -m extract`` as a process: the exit code reaches the shell."""
    import subprocess
    import sys

    missing = tmp_path / "missing.ttgir"
    completed = subprocess.run(
        [sys.executable, "-m", "extract", str(missing)],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 2 and completed.stdout == ""
    assert completed.stderr == f"error: {missing}: no such file (expected a .ttir or .ttgir file)\n"
