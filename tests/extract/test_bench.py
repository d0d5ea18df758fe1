"""The extraction benchmark runs and reports its figures."""

from __future__ import annotations

import io
from pathlib import Path

from extract.bench import BenchConfig, run_bench

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_bench_over_fixtures(fixture_dir: Path) -> None:
    out = io.StringIO()
    result = run_bench(BenchConfig(fixtures=fixture_dir, reps=1, only=("scan", "dot")), out)
    assert len(result.timings) == 8  # 2 cases x 2 targets x 2 levels
    summary = result.summary()
    assert summary["median_pct_of_compile"] is None and summary["nodes_per_s"] > 0
    assert "median extraction per graph" in out.getvalue()


def test_bench_with_compile_times() -> None:
    out = io.StringIO()
    config = BenchConfig(cases_file=REPO_ROOT / "tests/extract/kernels/cases.py", reps=1, only=("pointwise",))
    result = run_bench(config, out)
    assert [t.level for t in result.timings] == ["ttir", "ttgir"]
    assert all(t.compile_s and t.compile_s > 0 for t in result.timings)
    assert "extraction / triton.compile" in out.getvalue()
