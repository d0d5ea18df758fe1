"""The suite contract applied to any --suite, and suites that fail to import."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from corpus.suite.__main__ import main
from corpus.suite.contract import contract_problems
from corpus.suite.registry import load_suite

BROKEN = "tests.corpus.suite.user_suites.broken"
REPO_ROOT = Path(__file__).resolve().parents[3]


def test_contract_problems_name_family_shape_and_cause() -> None:
    specs = load_suite(BROKEN)
    assert list(specs) == ["test_broken_scale_rows"]
    problems = [str(p) for p in contract_problems(specs["test_broken_scale_rows"])]
    assert (
        "test_broken_scale_rows tiny M4_N200 float32: the default config is invalid: BLOCK 128 < row length 200"
        in problems
    )
    missing = [
        p for p in problems if "bind does not bind every kernel parameter: missing ['eps']" in p
    ]
    assert len(missing) == 2  # the tiny and the default shape
    assert not any("default M1024_N100 float32: the default config" in p for p in problems)


def test_builtin_family_keeps_the_contract() -> None:
    specs = load_suite("corpus.suite.kernels")
    assert contract_problems(specs["softmax"]) == []


def test_suite_that_needs_a_missing_dependency_names_both(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["list", "--suite", "tests.corpus.suite.user_suites.needs_dependency"]) == 2
    err = capsys.readouterr().out
    assert (
        "suite module 'tests.corpus.suite.user_suites.needs_dependency.fused_ops' cannot be imported"
        in err
    )
    assert "missing dependency: kernel_corpus_absent_project" in err


def test_check_command_applies_the_contract_to_a_user_suite() -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    completed = subprocess.run(
        [sys.executable, "-m", "corpus.suite", "check", "--suite", BROKEN, "--samples", "0"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert (
        "CONTRACT test_broken_scale_rows tiny M4_N200 float32: the default config is invalid"
        in completed.stdout
    )
    assert "3 contract problem(s)" in completed.stdout
