"""``python -m extract compile`` refuses bad input before compiling anything: exit 2, nothing on
stdout, one line on stderr naming the thing at fault."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from extract.cli import main

REPO = Path(__file__).resolve().parents[2]
BYOK = REPO / "tests" / "extract" / "kernels" / "byok" / "ops.py"


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """The one error line of a compile refused as bad input."""
    assert main(["compile", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("error: ") and captured.err.count("\n") == 1, captured.err
    return captured.err


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('import triton\nraise RuntimeError("no GPU found")\n', "RuntimeError: no GPU found (at {path}:2)"),
        ("def kernel(:\n", "SyntaxError: invalid syntax (broken.py, line 1)"),
        ("import no_such_dependency_xyz\n", "ModuleNotFoundError: No module named 'no_such_dependency_xyz' (at {path}:1)"),
        ("import sys\nsys.exit(3)\n", "SystemExit: 3 (at {path}:2)"),
    ],
)
def test_a_kernel_file_that_fails_to_import_is_refused_naming_it(
    source: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the module's exception escaped with a traceback (exit 1), or its sys.exit ended
    the command with the module's own code."""
    path = tmp_path / "broken.py"
    path.write_text(source)
    err = _refused(capsys, [f"{path}:kernel", "--signature", "*fp32", "--out", str(tmp_path / "out")])
    assert err == f"error: importing {path} failed: {expected.format(path=path)}\n"
    assert not (tmp_path / "out").exists()


def test_traceback_shows_where_a_kernel_module_failed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "broken.py"
    path.write_text('raise RuntimeError("no GPU found")\n')
    argv = ["compile", f"{path}:kernel", "--signature", "*fp32", "--out", str(tmp_path), "--traceback"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and err.rstrip().endswith("no GPU found (at " + f"{path}:1)")


def test_a_missing_kernel_file_or_a_malformed_kernel_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = ["--signature", "*fp32", "--out", str(tmp_path / "out")]
    missing = tmp_path / "nope.py"
    assert _refused(capsys, [f"{missing}:k", *out]) == f"error: KERNEL '{missing}:k': no such kernel file: {missing}\n"
    directory = tmp_path / "pkg.py"
    directory.mkdir()
    assert f"{directory} is a directory" in _refused(capsys, [f"{directory}:k", *out])
    assert "expected path/to/file.py:NAME or package.module:NAME" in _refused(capsys, [str(BYOK), *out])


def test_a_bad_constexpr_value_names_the_constexpr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [f"{BYOK}:row_cast_kernel", "--signature", "*fp32,*fp32,i32", "--constexpr", "OUT_DTYPE=tl.float17"]
    err = _refused(capsys, [*argv, "--out", str(tmp_path)])
    assert err.startswith("error: --constexpr OUT_DTYPE=tl.float17: 'tl.float17' is not a Triton dtype")


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["--target", "sm_bogus"], "error: --target sm_bogus: unrecognised GPU target 'sm_bogus'"),
        (["--target", "sm_1000"], "error: --target sm_1000: the installed Triton cannot compile for sm_1000"),
        (["--num-warps", "3"], "error: --num-warps 3: Triton needs a power of 2"),
        (["--num-ctas", "2", "--target", "sm_80"], "error: --num-ctas 2: CTA clusters need sm_90 or newer; the target is cuda:80"),
        (["--constexpr", "BLOCK"], "error: --constexpr 'BLOCK': expected NAME=VALUE"),
        (["--constexpr", "=4"], "error: --constexpr '=4': expected NAME=VALUE"),
        (["--constexpr", "BLOCK=16", "--constexpr", "BLOCK=32"], "error: --constexpr BLOCK is given twice (16 and 32)"),
        (["--signature", "*fp32,,i32"], "error: --signature '*fp32,,i32': entry 2 of 3 is empty"),
        (["--signature", "*fp32,i32,"], "error: --signature '*fp32,i32,': entry 3 of 3 is empty"),
    ],
)
def test_option_values_that_cannot_be_right_are_refused_before_loading_the_kernel(
    options: list[str], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a bad target, warp count or CTA count failed inside Triton's compile (exit 1, three
    lines), a --constexpr without '=' ended the command with a bare message (exit 1), a
    repeated --constexpr took the last value silently, and an empty --signature entry was
    dropped, moving the later positional types onto the wrong parameters."""
    missing_module = tmp_path / "not_imported.py"  # refused before the kernel is looked for
    argv = [f"{missing_module}:k", "--signature", "*fp32", *options, "--out", str(tmp_path / "out")]
    assert _refused(capsys, argv).startswith(expected)


def test_an_out_path_that_cannot_be_a_directory_is_refused_before_compiling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the kernel compiled, then writing failed with '[Errno 17] File exists' (exit 1)."""
    in_the_way = tmp_path / "out"
    in_the_way.write_text("a file")
    argv = [f"{BYOK}:typed_kernel", "--signature", "*fp16,i32,*i8"]
    err = _refused(capsys, [*argv, "--out", str(in_the_way)])
    assert err == f"error: --out {in_the_way}: {in_the_way} is a file, not a directory\n"
    err = _refused(capsys, [*argv, "--out", str(in_the_way / "sub")])
    assert err == f"error: --out {in_the_way / 'sub'}: {in_the_way} is a file, not a directory\n"


def test_an_all_configs_subdirectory_in_the_way_is_refused_before_compiling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "config_01").write_text("a file")
    argv = [f"{BYOK}:scale_kernel", "--signature", "*fp32,*fp32,fp32,i32:16", "--all-configs"]
    err = _refused(capsys, [*argv, "--out", str(tmp_path)])
    assert err == f"error: --out {tmp_path}: {tmp_path / 'config_01'} is a file, not a directory\n"
    assert not (tmp_path / "config_00").exists()  # nothing compiled, nothing written


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into any directory")
def test_an_out_directory_that_is_not_writable_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    argv = [f"{BYOK}:typed_kernel", "--signature", "*fp16,i32,*i8", "--out", str(locked / "out")]
    assert _refused(capsys, argv) == f"error: --out {locked / 'out'}: {locked} is not writable\n"
