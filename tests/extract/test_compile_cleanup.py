"""A failed compile leaves nothing behind and says why in one line, before any work when the
target is one the installed Triton cannot build."""

from __future__ import annotations

import stat
import tempfile
from pathlib import Path

import pytest
import torch
from triton.backends.nvidia.compiler import get_ptxas

from extract.cli import main as extract_main
from extract.compile import check_target, compile_call
from tests.extract.kernels.pointwise import add_kernel

POINTWISE = str(Path(__file__).resolve().parent / "kernels" / "pointwise.py") + ":add_kernel"


def _args() -> dict:
    tensor = torch.empty(4096, dtype=torch.float16, device="meta")
    return {"x_ptr": tensor, "y_ptr": tensor, "out_ptr": tensor, "n_elements": 4096, "BLOCK": 256}


def test_an_unknown_target_is_refused_before_compiling(capfd) -> None:
    """The found defect: sm_1000 went through LLVM (a warning per function) and ptxas, whose
    failure made Triton print the whole PTX: ~200 lines before the error."""
    with pytest.raises(ValueError, match="cannot compile for sm_1000 .its ptxas knows sm_"):
        check_target("sm_1000")
    with pytest.raises(ValueError, match="cannot compile for sm_1000"):
        compile_call(add_kernel, _args(), target="sm_1000", always_compile=True)
    printed = capfd.readouterr()
    assert "not a recognized processor" not in printed.out + printed.err
    assert check_target("sm_90").arch == 90


def test_extract_compile_for_an_unknown_target_prints_no_compiler_output(tmp_path, capfd) -> None:
    code = extract_main(
        ["compile", POINTWISE, "--signature", "*fp16,*fp16,*fp16,i32:16", "--constexpr", "BLOCK=256",
         "--target", "sm_1000", "--out", str(tmp_path / "out")]
    )  # fmt: skip
    printed = capfd.readouterr()
    assert code != 0 and printed.out == ""
    assert "cannot compile for sm_1000" in printed.err and len(printed.err.splitlines()) < 6


def test_a_failed_ptxas_leaves_no_temporary_files(tmp_path, monkeypatch) -> None:
    """Triton keeps its tmp*.ptx when ptxas fails (for the repro command); compile_call puts
    Python temporaries in a private directory it removes. The fault: a ptxas that refuses
    every compile (it answers --version and --help as the real one, which Triton asks)."""
    real = get_ptxas(80).path
    fake = tmp_path / "ptxas"
    fake.write_text(
        f'#!/bin/sh\ncase "$1" in --version|--help) exec {real} "$@";; esac\n'
        'echo "ptxas: refusing" >&2\nexit 3\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("TRITON_PTXAS_PATH", str(fake))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    with pytest.raises(Exception, match="ptxas: refusing"):
        compile_call(add_kernel, _args(), target="sm_80", always_compile=True)
    assert list(scratch.iterdir()) == []
    assert tempfile.gettempdir() == str(scratch)  # restored
