"""End-to-end harvests on CPU (Triton interpreter), through the real CLI and workers."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pyarrow.compute as pc

from schemas import read_table, scan_table
from schemas.check import check_dataset

from .conftest import (
    BASE_ARGS,
    REPO,
    harvest_command,
    harvest_in_process,
    measured_keys,
    run_harvest,
)


def test_tiny_harvest_is_valid_and_joins_fully(reference_dataset: Path):
    report = check_dataset(str(reference_dataset))
    assert report.ok, report.problems
    out = str(reference_dataset)
    runs = read_table(out, "runs")
    measurements = read_table(out, "measurements")
    graphs = read_table(out, "ir_graphs", columns=["ir_id", "level", "num_nodes"])
    nodes = read_table(out, "ir_nodes", columns=["ir_id"])
    assert set(runs.column("family").to_pylist()) == {"add_broadcast", "softmax"}
    assert runs.num_rows >= 4
    assert measurements.num_rows == sum(runs.column("n_configs").to_pylist())
    joined = scan_table(out, "measurements").join(scan_table(out, "runs"), on=["run_id", "harvest_id"], how="inner")
    graphs_lf = scan_table(out, "ir_graphs").select("ir_id", "num_nodes")
    joined = joined.join(graphs_lf, left_on="ttgir_id", right_on="ir_id", how="inner").collect()
    assert joined.height == measurements.num_rows
    ok = measurements.filter(pc.equal(measurements.column("status"), "ok"))
    assert ok.num_rows == measurements.num_rows
    assert all(m > 0 for m in ok.column("median_ms").to_pylist())
    assert all(len(s) == 4 for s in ok.column("samples_ms").to_pylist())  # 4 passes x 1 rep
    graph_ids = set(graphs.column("ir_id").to_pylist())
    for column in ("ttir_id", "ttgir_id"):
        assert set(ok.column(column).to_pylist()) <= graph_ids
    assert graph_ids == set(nodes.column("ir_id").to_pylist())
    assert set(graphs.column("level").to_pylist()) == {"ttir", "ttgir"}
    assert set(runs.column("arch").to_pylist()) == {"interpreter"}
    assert set(runs.column("timer").to_pylist()) == {"thread_cpu"}
    assert set(runs.column("timing_passes").to_pylist()) == {4}
    assert sum(ok.column("is_default").to_pylist()) == runs.num_rows
    assert read_table(out, "kernels").num_rows == 2


def test_rerun_resumes_with_nothing_left(reference_dataset: Path, tmp_path: Path):
    result = run_harvest(reference_dataset, *BASE_ARGS)
    assert "0 run(s) to do" in result.stdout
    assert check_dataset(str(reference_dataset)).ok


def test_failures_are_rows_and_the_harvest_finishes(tmp_path: Path):
    out = tmp_path / "faulty"
    run_harvest(
        out,
        "--suite", "tests.corpus.harvest.faulty_kernels",
        "--bench-timeout", "8",
        "--workers", "1",
        "--flush-every", "0",
    )
    table = read_table(str(out), "measurements", columns=["run_id", "status", "error", "max_abs_error"])
    runs = read_table(str(out), "runs", columns=["run_id", "family"])
    family = dict(zip(runs.column("run_id").to_pylist(), runs.column("family").to_pylist()))
    statuses: dict[str, set[str]] = {}
    for row in table.to_pylist():
        statuses.setdefault(family[row["run_id"]], set()).add(row["status"])
        if row["status"] == "mismatch":
            assert abs(row["max_abs_error"] - 1.0) < 1e-6
        assert row["error"]
    assert statuses == {
        "test_broken_compile": {"compile_error"},
        "test_wrong_output": {"mismatch"},
        "test_never_ends": {"timeout"},
    }
    assert check_dataset(str(out)).ok


def test_sigkill_at_random_points_then_resume_equals_uninterrupted(reference_dataset: Path, tmp_path: Path):
    out = tmp_path / "killed"
    rng = random.Random(1234)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for _ in range(3):
        proc = subprocess.Popen(
            harvest_command(out, *BASE_ARGS), cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        time.sleep(rng.uniform(6.0, 20.0))
        os.killpg(proc.pid, signal.SIGKILL)  # the harvest and its workers, mid-flight
        proc.wait()
    run_harvest(out, *BASE_ARGS)
    assert measured_keys(out) == measured_keys(reference_dataset)
    report = check_dataset(str(out))
    assert report.ok, report.problems


def test_two_shards_equal_one_unsharded_harvest(reference_dataset: Path, tmp_path: Path):
    out = tmp_path / "sharded"
    harvest_in_process(out, *BASE_ARGS, "--shard", "0/2")
    first = measured_keys(out)
    harvest_in_process(out, *BASE_ARGS, "--shard", "1/2")
    assert first and first != measured_keys(out)
    assert measured_keys(out) == measured_keys(reference_dataset)
    assert check_dataset(str(out)).ok
