"""The plug-in on Triton's interpreter outside ``python -m corpus.record`` with no ``do_bench``
given: Triton's own benchmarker fails there ("0 active drivers") and a user had to set the
private ``kernel._do_bench`` by hand; the provider now hands the autotuner a CPU-time bench,
keeps a user's own, and gives way to ``corpus.record``'s (tests/corpus/guide/
interpreter_bench_drive.py, in a process of its own)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def report(guide_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("interpreter-bench")
    env = {**{k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}, "TRITON_INTERPRET": "1",
           "PYTHONPATH": str(REPO)}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-m", "tests.corpus.guide.interpreter_bench_drive", str(out), str(guide_model)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads((out / "report.json").read_text())


def test_prune_configs_benchmarks_its_top_k_with_no_bench_given(report: dict) -> None:
    guided = report["guided"]
    assert guided == {"correct": True, "benchmarked": 2, "bench": "InterpreterBench"}


def test_an_attached_model_tunes_a_kernel_decorated_without_a_bench(report: dict) -> None:
    assert report["attached"] == {"correct": True, "benchmarked": 6}


def test_a_users_own_bench_is_kept(report: dict) -> None:
    assert report["users"] == {"correct": True, "calls": 6, "bench_kept": True}


def test_corpus_record_times_a_guided_kernel_with_its_own_bench(report: dict) -> None:
    # 2 benchmarked with every rep kept (rep=5), the 4 the model pruned skipped
    assert report["recorded"] == [["ok", 5], ["skipped", None]]
