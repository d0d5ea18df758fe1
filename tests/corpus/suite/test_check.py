"""The planning helpers of ``corpus.suite.check``: sampled interpreter cases and the compile
plan (one job per distinct binary, knob-covering subsets); what ``check`` says it checked."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from rich.console import Console

from corpus.suite.check import (
    CheckResult,
    check_suite,
    limit_jobs,
    on_device,
    plan_cases,
    plan_compiles,
)
from corpus.suite.report import check_table
from corpus.suite.spec import KernelSpec

REPO_ROOT = Path(__file__).resolve().parents[3]


def knob_values(configs: list) -> set[tuple[str, object]]:
    return {item for c in configs for item in {**c.kwargs, **c.compile_options()}.items()}


def test_plan_cases_has_default_everywhere_and_seeded_samples(specs: dict[str, KernelSpec]) -> None:
    spec = specs["add_broadcast"]
    cases = plan_cases(spec, "tiny", dtypes=("float32",), samples=5, seed=3)
    defaults = [c for c in cases if c.is_default]
    assert len(defaults) == len(spec.shapes_for("tiny"))
    assert len(cases) == len(defaults) + 5
    assert cases == plan_cases(spec, "tiny", dtypes=("float32",), samples=5, seed=3), (
        "seeded: same plan"
    )
    assert cases != plan_cases(spec, "tiny", dtypes=("float32",), samples=5, seed=4)
    every = plan_cases(spec, "tiny", dtypes=("float32",), every_config=True)
    assert len(every) == sum(len(spec.valid_configs(d, "float32")) for d in spec.shapes_for("tiny"))


def test_compile_plan_covers_every_valid_config_once(specs: dict[str, KernelSpec]) -> None:
    for name in ("row_reduce", "transpose"):
        spec = specs[name]
        plan = plan_compiles(spec, "default")
        assert sum(job.covers for job in plan.jobs) == plan.valid == plan.space - len(plan.invalid)
        for job in plan.jobs:
            assert spec.invalid_reason(job.config, job.dims, job.dtype) is None


def test_limit_jobs_keeps_default_and_covers_every_knob_value(specs: dict[str, KernelSpec]) -> None:
    spec = specs["long_row_reduce"]
    full = plan_compiles(spec, "default")
    limited = limit_jobs(full, 12, default=spec.default_config())
    assert len(limited.jobs) == 12 and limited.distinct == len(full.jobs)
    assert limited.jobs[0].config == spec.default_config()
    assert knob_values([j.config for j in limited.jobs]) == knob_values(
        [j.config for j in full.jobs]
    )
    assert limit_jobs(full, 0).jobs == full.jobs


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_check_on_a_second_gpu_launches_there(specs: dict[str, KernelSpec]) -> None:
    """Triton launches on torch's current device, not the arguments': the check of ``cuda:1``
    must make it current, or its kernels read device 1's memory from device 0."""
    results = check_suite({"add_broadcast": specs["add_broadcast"]}, "tiny", "cuda:1", samples=1)
    assert results and all(r.ok for r in results), [r.error for r in results if not r.ok]
    assert torch.cuda.current_device() == 0  # put back afterwards


def test_only_an_indexed_cuda_device_becomes_current() -> None:
    for device in ("cpu", "cuda"):  # nothing to make current (no CUDA touched)
        with on_device(device):
            pass
    assert isinstance(on_device("cuda:1"), torch.cuda.device)


def _result(shape: str, dtype: str, is_default: bool, ok: bool = True) -> CheckResult:
    return CheckResult("softmax", shape, dtype, "w4 s1", is_default, ok, None, 0.01)


def _rendered(results: list[CheckResult], every_config: bool = False) -> list[str]:
    console = Console(width=80, record=True, file=io.StringIO())
    console.print(check_table(results, every_config))
    return console.export_text().splitlines()


def test_check_table_splits_the_count_into_default_grid_and_sampled() -> None:
    """'checked 9' for softmax did not say what the 9 were: the table now shows the default
    config on 3 shapes x 2 dtypes (6) and the 3 sampled configs, within 80 columns."""
    grid = [(s, d) for s in ("M4_N1024", "M7_N1000", "M5_N1536") for d in ("float16", "float32")]
    results = [_result(s, d, True) for s, d in grid]
    results += [_result("M4_N1024", "float32", False), _result("M7_N1000", "float16", False, False)]
    results += [_result("M5_N1536", "float32", False)]
    lines = _rendered(results)
    assert any("sampled" in line for line in lines)
    row = next(line for line in lines if "softmax" in line)
    assert [cell.strip() for cell in row.split("│")[1:6]] == ["softmax", "3 x 2", "6", "3", "1"]
    assert all(len(line) <= 80 for line in lines)
    assert any("(all)" in line for line in _rendered(results, every_config=True))


def test_check_output_says_what_the_readme_says_it_checks() -> None:
    """The README's 'python -m corpus.suite check softmax': the default config on every tiny
    shape x dtype (3 x 2 in the interpreter) plus 3 sampled configs, 9 launches in all."""
    done = subprocess.run(
        [sys.executable, "-m", "corpus.suite", "check", "softmax"],
        cwd=REPO_ROOT,
        env={**os.environ, "COLUMNS": "80"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if "softmax" in line)
    assert [cell.strip() for cell in row.split("│")[1:5]] == ["softmax", "3 x 2", "6", "3"]
    summary = " ".join(done.stdout.split())
    assert "9 checked in 1 family: 9 passed, 0 failed (the default config on every tiny shape x dtype" in summary
    assert "plus 3 other configs per family, each on a sampled shape x dtype)" in summary
