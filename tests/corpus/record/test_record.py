"""Recording a CPU workload's autotuning: rows, joins, IR, cache hits, interrupts, hooks.

The scenarios run once per session in their own process (:mod:`tests.corpus.record.drive`);
these tests assert on the datasets they wrote and on the driver's report.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow.compute as pc
import pytest

from corpus.record.__main__ import main
from schemas import read_table
from schemas.check import check_dataset
from schemas.identity import config_id, kernel_id

from .conftest import REPO, WORKLOAD

Recorded = tuple[Path, dict]


def _measurements_by_family(out: str) -> tuple[dict[str, dict], dict[str, list[dict]]]:
    runs = {row["family"]: row for row in read_table(out, "runs").to_pylist()}
    family_of = {row["run_id"]: family for family, row in runs.items()}
    grouped: dict[str, list[dict]] = {}
    for row in read_table(out, "measurements").to_pylist():
        grouped.setdefault(family_of[row["run_id"]], []).append(row)
    return runs, grouped


def test_records_two_autotuned_kernels_with_ir_and_a_cache_hit(recorded: Recorded) -> None:
    root, report = recorded
    out = str(root / "full")
    # the second row_scale call is an in-memory cache hit: no event, nothing written
    assert report["full"] == {"runs": 2, "in_memory_hits": 1, "failures": []}
    checked = check_dataset(out)
    assert checked.ok, checked.problems

    runs, measurements = _measurements_by_family(out)
    assert set(runs) == {"row_scale_kernel", "gelu_kernel"}
    for row in runs.values():
        assert (row["source"], row["timer"], row["arch"], row["ir_target"]) == (
            "record",
            "thread_cpu",
            "interpreter",
            "sm_90",
        )
        assert row["autotune_cache_hit"] is False and row["rep"] == 2
    assert runs["row_scale_kernel"]["problem_json"] == '{"n_cols":30}'
    assert runs["row_scale_kernel"]["arg_shapes"][:3] == [[4, 30], [30], [4, 30]]
    assert runs["gelu_kernel"]["arg_names"] == ["x_ptr", "out_ptr", "n_elements"]  # BLOCK is tuned

    row_scale, gelu = measurements["row_scale_kernel"], measurements["gelu_kernel"]
    assert sorted(m["status"] for m in row_scale) == ["ok", "ok"]
    assert sorted(m["status"] for m in gelu) == ["ok", "ok", "skipped"]
    skipped = next(m for m in gelu if m["status"] == "skipped")
    assert skipped["config_id"] == config_id({"BLOCK": 1024}, num_warps=4, num_stages=3)
    assert (
        "pruned" in skipped["error"] and skipped["median_ms"] is None and skipped["ttir_id"] is None
    )
    for m in row_scale + gelu:
        if m["status"] != "ok":
            continue
        assert m["n_reps"] == 2 and len(m["samples_ms"]) == 2 and m["median_ms"] > 0
        assert m["ttir_id"] and m["ttgir_id"] and m["compile_time_s"] > 0
        # static stats of the sm_90 cubin, the SASS listing's columns filled per event
        assert m["n_regs"] and m["sass_instructions"] and m["sass_mix"] and m["stats_note"] is None
    assert {tuple(m["grid"]) for m in row_scale} == {(4,)}
    assert {tuple(m["grid"]) for m in gelu if m["status"] == "ok"} == {
        (7,),
        (2,),
    }  # cdiv(100, 16|64)
    for family, rows in measurements.items():
        ok = [m for m in rows if m["status"] == "ok"]
        assert runs[family]["best_config_id"] == min(ok, key=lambda m: m["median_ms"])["config_id"]
        assert runs[family]["n_configs"] == len(rows) and runs[family]["n_ok"] == len(ok)

    nodes = read_table(out, "ir_nodes", columns=["ir_id", "op_name"])
    gelu_graph = next(m["ttir_id"] for m in gelu if m["ttir_id"])
    ops = nodes.filter(pc.equal(nodes.column("ir_id"), gelu_graph)).column("op_name").to_pylist()
    assert "math.erf" in ops and "tt.store" in ops

    kernels = {row["entry_name"]: row for row in read_table(out, "kernels").to_pylist()}
    assert kernels["gelu_kernel"]["source"] == WORKLOAD.read_text()
    assert kernels["gelu_kernel"]["kernel_id"] == kernel_id(WORKLOAD.read_text(), "gelu_kernel")
    assert runs["gelu_kernel"]["kernel_id"] == kernels["gelu_kernel"]["kernel_id"]
    assert kernels["gelu_kernel"]["source_path"] == "tests/corpus/record/workload.py"


def test_hooks_chain_and_are_restored(recorded: Recorded) -> None:
    _, report = recorded
    assert report["hooks"] == {
        "run_wrapped": True,
        "compile_chained": True,
        "run_restored": True,
        "compile_restored": True,
        "autotune_restored": True,
        "check_problems": [],  # compile_ir=False wrote no IR graph; the table directories exist
    }


def test_interrupted_recording_leaves_committed_runs_only(recorded: Recorded) -> None:
    root, report = recorded
    out = str(root / "interrupted")
    assert report["interrupted"] == {"interrupted": True, "run_restored": True}
    runs = read_table(out, "runs")
    assert runs.column("family").to_pylist() == ["row_scale_kernel"]
    measurements = read_table(out, "measurements")  # the reader drops the uncommitted run's rows
    assert set(measurements.column("run_id").to_pylist()) == set(runs.column("run_id").to_pylist())
    assert measurements.num_rows == 2
    checked = check_dataset(out)
    assert checked.ok, checked.problems


def test_recording_twice_gives_the_same_run_ids(recorded: Recorded) -> None:
    """Identity is content-derived: a second recording of the same workload has the same run
    ids under a new harvest id (both through the autotuner wrapper, the path of Triton
    versions without ``knobs.autotuning.listener``)."""
    root, _ = recorded
    runs = read_table(str(root / "twice"), "runs")
    ids = runs.column("run_id").to_pylist()
    assert len(ids) == 4 and len(set(ids)) == 2
    assert len(set(runs.column("harvest_id").to_pylist())) == 2


def test_cli_refuses_what_it_cannot_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "d")
    assert main(["--out", out, "--", "bash", "workload.sh"]) == 2
    assert "'bash' is not a Python interpreter" in capsys.readouterr().err
    assert main(["--out", out, "--", "python", str(tmp_path / "missing.py")]) == 2
    assert "no such workload script" in capsys.readouterr().err
    assert main(["--out", out, "--rep", "0", "--", "python", str(WORKLOAD)]) == 2
    assert "rep must be >= 1" in capsys.readouterr().err
    assert main(["--out", out, "--target", "volta", "--", "python", str(WORKLOAD)]) == 2
    assert "unrecognised GPU target" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()


def test_cli_records_a_script_as_written(tmp_path: Path) -> None:
    """``python -m corpus.record --out D -- python workload.py`` without a GPU and without
    TRITON_INTERPRET: the recorder selects the interpreter itself."""
    out = tmp_path / "dataset"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    completed = subprocess.run(
        [sys.executable, "-m", "corpus.record", "--out", str(out), "--rep", "1", "--no-ir", "--",
         "python", str(WORKLOAD), "--calls", "3"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    assert "recorded 2 run(s), 5 measurement(s)" in completed.stderr
    assert "2 already tuned in this process" in completed.stderr
    runs = read_table(str(out), "runs")
    assert runs.num_rows == 2 and set(runs.column("device_kind").to_pylist()) == {"interpreter"}
