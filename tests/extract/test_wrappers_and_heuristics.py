"""extract compile on production-style kernels (issue 18): any ``.fn`` wrapper chain, heuristics
evaluated on given values only (their num_warps honoured), TensorDescriptor signatures, and a
real flag-gems ``@libentry()`` kernel when the thirdparty extra is installed."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from extract.cli import main
from extract.kernel_args import parse_type, split_signature

REPO = Path(__file__).resolve().parents[2]
BYOK = REPO / "tests" / "extract" / "kernels" / "byok" / "ops.py"


def test_fn_wrappers_are_unwrapped_and_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["compile", f"{BYOK}:wrapped_row_kernel", "--signature", "*fp32,*fp32,n_cols:i32=200"]
    assert main([*args, "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "wrapped_row_kernel: unwrapped KernelEntry -> Heuristics -> JITFunction" in printed
    assert "@triton.heuristics chose BLOCK_N=256, num_warps=8" in printed
    stats = json.loads((tmp_path / "wrapped_row_kernel.stats.json").read_text())
    assert stats["num_warps"] == 8  # the heuristic's, not the CLI default 4
    assert "tt.make_range {end = 256 : i32" in (tmp_path / "wrapped_row_kernel.ttir").read_text()


def test_heuristic_without_its_input_is_an_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the heuristic ran on a placeholder n_cols (3) and compiled BLOCK_N=16 silently."""
    args = ["compile", f"{BYOK}:wrapped_row_kernel", "--signature", "*fp32,*fp32,i32"]
    assert main([*args, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "the @triton.heuristics value of BLOCK_N reads n_cols, which has no value" in err
    assert "--signature n_cols:TYPE=VALUE" in err and not list(tmp_path.iterdir())


def test_descriptor_signature(tmp_path: Path) -> None:
    if importlib.util.find_spec("triton.tools.tensor_descriptor") is None:
        pytest.skip("this Triton has no host TensorDescriptor")
    signature = "desc:tensordesc<fp16[64, 32]>,*fp16"
    assert split_signature(signature) == ["desc:tensordesc<fp16[64, 32]>", "*fp16"]
    args = ["compile", f"{BYOK}:desc_kernel", "--signature", signature, "--constexpr", "BLOCK=64"]
    assert main([*args, "--out", str(tmp_path)]) == 0
    ttir = (tmp_path / "desc_kernel.ttir").read_text()
    # Triton 3.9 prints !tt.tensordesc<64x32xf16>, 3.6 !tt.tensordesc<tensor<64x32xf16>>
    assert re.search(r"%desc: !tt\.tensordesc<(tensor<)?64x32xf16>", ttir) and "tt.descriptor_load" in ttir


def test_bad_descriptor_and_value_types() -> None:
    with pytest.raises(ValueError, match="unknown element type 'fp12'"):
        parse_type("tensordesc<fp12[16]>", "d:tensordesc<fp12[16]>")
    with pytest.raises(ValueError, match="only a scalar type without hint takes '=VALUE'"):
        parse_type("*fp16=3", "x:*fp16=3")
    with pytest.raises(ValueError, match="'abc' is not a i32 value"):
        parse_type("i32=abc", "n:i32=abc")


def test_flag_gems_libentry_kernel_compiles_from_the_cli(tmp_path: Path) -> None:
    if importlib.util.find_spec("flag_gems") is None:  # importing it here would need the env below
        pytest.skip("the thirdparty extra (flag-gems) is not installed")
    # flag-gems picks its vendor backend at import time and asks the GPU for its name unless
    # told both; on a machine without a GPU these two variables are how it imports
    env = {**os.environ, "GEMS_VENDOR": "nvidia", "FLAGGEMS_DB_URL": f"sqlite:///{tmp_path}/gems.db"}
    command = [sys.executable, "-W", "ignore", "-m", "extract", "compile",
               "flag_gems.ops.softmax:softmax_kernel_inner", "--signature", "*fp32,*fp32,M:i32,N:i32=4096",
               "--target", "sm_90", "--out", str(tmp_path / "out")]  # fmt: skip
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "unwrapped LibEntry -> Heuristics -> JITFunction" in done.stdout
    stats = json.loads((tmp_path / "out" / "softmax_kernel_inner.stats.json").read_text())
    assert stats["num_warps"] == 16  # softmax_heur_num_warps_inner for TILE_N=4096
    assert "tt.make_range {end = 4096 : i32" in (tmp_path / "out" / "softmax_kernel_inner.ttir").read_text()
