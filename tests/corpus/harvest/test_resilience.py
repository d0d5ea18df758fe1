"""End-to-end: a killed harvest leaves no workers, a failed run setup is one run-level outcome,
and resume works per (run_id, config_id)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import polars as pl
import pytest

from schemas import read_table
from schemas.check import check_dataset
from tests.corpus.harvest.conftest import (
    BASE_ARGS,
    REPO,
    harvest_command,
    harvest_in_process,
    measured_keys,
    run_harvest,
)
from tests.corpus.harvest.setup_kernels import REFERENCE_FAILURE, SETUP_FAILS_WHILE

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux /proc")


def children(pid: int) -> set[int]:
    """Direct child processes of ``pid`` (every thread's children)."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found.update(int(p) for p in (task / "children").read_text().split())
        except OSError:
            continue
    return found


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_sigkilled_harvest_leaves_no_worker_processes(tmp_path: Path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    harvest = subprocess.Popen(
        harvest_command(tmp_path / "out", *BASE_ARGS),
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while len(workers) < 3 and time.monotonic() < deadline:  # 2 compile + 1 benchmark
            workers |= children(harvest.pid)
            time.sleep(0.1)
        assert len(workers) >= 3, f"the harvest started only {sorted(workers)}"
        time.sleep(1.0)  # let them get busy
        harvest.send_signal(signal.SIGKILL)  # the harvest only: no process group kill
        harvest.wait()
        deadline = time.monotonic() + 15
        while any(running(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in workers if running(pid)], "workers outlived the killed harvest"
    finally:
        harvest.kill()
        for pid in workers:  # never leave our own orphans behind, even when the test fails
            if running(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_failed_setup_is_one_run_level_outcome(tmp_path: Path):
    out = tmp_path / "setup"
    result = run_harvest(
        out, "--suite", "tests.corpus.harvest.setup_kernels", "--families", "test_setup_fails",
        "--workers", "1", "--flush-every", "0",
    )  # fmt: skip
    # an error the classifier does not know replaces the worker, and the summary says so
    assert "measure worker replaced 1 time: error of unknown cause" in flat(result.stdout)
    [run] = read_table(str(out), "runs", columns=["run_id", "setup_error"]).to_pylist()
    assert REFERENCE_FAILURE in run["setup_error"]
    rows = read_table(
        str(out), "measurements", columns=["status", "error", "compile_time_s"]
    ).to_pylist()
    assert len(rows) == 2
    for row in rows:  # the compile outcome stays; nothing was benchmarked
        assert row["status"] == "skipped"
        assert row["error"].startswith("run setup failed: ") and REFERENCE_FAILURE in row["error"]
        assert row["compile_time_s"] is not None
    assert check_dataset(str(out)).ok


def test_a_run_whose_setup_failed_is_measured_by_the_next_harvest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gap: a failed setup writes every config as ``skipped`` (nothing benchmarked), and
    resume counted those rows as measured, so a setup that failed for a passing reason (memory
    another process held, a worker killed) was never retried: the run stayed without a label
    on every rerun. Now the next harvest measures it."""
    out = tmp_path / "setup"
    args = ["--suite", "tests.corpus.harvest.setup_kernels", "--families", "test_setup_fails_once"]
    args += ["--workers", "1", "--flush-every", "0"]
    monkeypatch.setenv(SETUP_FAILS_WHILE, "1")
    run_harvest(out, *args)  # a process of its own: its workers' fork server sees the variable
    statuses = read_table(str(out), "measurements", columns=["status"]).column("status").to_pylist()
    assert statuses == ["skipped", "skipped"]
    monkeypatch.delenv(SETUP_FAILS_WHILE)
    harvest_in_process(out, *args)
    latest = read_table(str(out), "measurements", columns=["status"], harvests="latest")
    assert latest.column("status").to_pylist() == ["ok", "ok"]
    assert read_table(str(out), "runs").num_rows == 2
    assert check_dataset(str(out)).ok


def flat(text: str) -> str:
    """Console output with the line wrapping undone."""
    return " ".join(text.split())


def test_resume_measures_only_the_configs_not_yet_measured(tmp_path: Path):
    out = tmp_path / "resume"
    args = ["--families", "softmax", "--dtypes", "float32", "--workers", "2", "--flush-every", "0"]
    harvest_in_process(out, *args, "--max-configs", "2")
    first = measured_keys(out)
    runs = {run_id for run_id, _ in first}
    assert len(first) == 2 * len(runs)
    printed = harvest_in_process(out, *args, "--max-configs", "4")
    assert f"{len(first):,} config(s) measured before with the same bench settings, not measured again" in flat(printed)
    table = read_table(str(out), "measurements", columns=["run_id", "config_id", "harvest_id"])
    keys = list(zip(table.column("run_id").to_pylist(), table.column("config_id").to_pylist()))
    assert len(keys) == len(set(keys)) == 4 * len(runs)  # 4 configs per run, none twice
    assert first < set(keys)
    assert len(set(table.column("harvest_id").to_pylist())) == 2
    again = harvest_in_process(out, *args, "--max-configs", "4")
    assert "0 run(s) to do" in flat(again)
    # and says so after its header, which was all it printed
    assert f"nothing to do: every planned run ({len(runs)}) is already committed in {out}; --no-resume" in flat(again)
    assert check_dataset(str(out)).ok

    # Other bench settings: every config is measured again, and the summary says why.
    remeasured = harvest_in_process(out, *args, "--max-configs", "4", "--rep", "3")
    assert f"{len(keys)} config(s) measured again (reps_per_pass" in flat(remeasured)
    latest = read_table(
        str(out), "measurements", columns=["run_id", "config_id"], harvests="latest"
    )
    assert latest.num_rows == len(keys)
    assert read_table(str(out), "measurements").num_rows == 2 * len(keys)


SUMMARY = ["n_configs", "n_ok", "best_config_id", "best_median_ms", "default_median_ms"]


def summaries_from(measurements: pl.DataFrame) -> pl.DataFrame:
    """Each run's SUMMARY columns as the harvest defines them, from one row per config."""
    ok = measurements.filter(pl.col("status") == "ok")
    best = ok.sort("median_ms", "config_id").group_by("run_id").first()
    best = best.select("run_id", best_config_id="config_id", best_median_ms="median_ms")
    default = ok.filter(pl.col("is_default")).select("run_id", default_median_ms="median_ms")
    counts = measurements.group_by("run_id").agg(
        n_configs=pl.len().cast(pl.Int32), n_ok=(pl.col("status") == "ok").sum().cast(pl.Int32)
    )
    return counts.join(best, on="run_id", how="left").join(default, on="run_id", how="left").sort("run_id")


def test_a_resumed_runs_row_summarizes_every_config_of_the_view(tmp_path: Path):
    """The gap: a run resumed config by config (2 configs, then 2 more by a second harvest)
    read ``runs`` with ``harvests='latest'`` as the second harvest stored it: n_configs 2 and
    the best of those 2, where the run's best measured config could be one of the first 2."""
    out = tmp_path / "resumed"
    args = ["--families", "add_broadcast", "--dtypes", "float32", "--workers", "2", "--flush-every", "0"]
    harvest_in_process(out, *args, "--max-configs", "2")
    harvest_in_process(out, *args, "--max-configs", "4")
    columns = ["run_id", "config_id", "status", "median_ms", "is_default"]
    for mode in ("latest", "pooled"):
        measurements = pl.from_arrow(read_table(str(out), "measurements", columns=columns, harvests=mode))
        runs = pl.from_arrow(read_table(str(out), "runs", columns=["run_id", *SUMMARY], harvests=mode))
        assert isinstance(measurements, pl.DataFrame) and isinstance(runs, pl.DataFrame)
        expected = summaries_from(measurements)
        assert expected["n_configs"].to_list() == [4, 4], mode
        assert runs.sort("run_id").equals(expected.select("run_id", *SUMMARY)), mode
    stored = read_table(str(out), "runs", columns=["n_configs"]).column("n_configs").to_pylist()
    assert stored == [2, 2, 2, 2]  # each harvest's own row summarizes its own configs


def test_a_harvest_whose_reader_left_goes_on_to_the_end(tmp_path: Path):
    """``python -m corpus.harvest ... | head -1``: the reader closes the pipe after a line; the
    harvest measures, commits and compacts everything, and exits 0."""
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    harvest = subprocess.Popen(
        harvest_command(out, *BASE_ARGS[2:], "--families", "add_broadcast"),  # repeated --families add up
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert harvest.stdout is not None and harvest.stdout.readline()
    harvest.stdout.close()  # as `head -1` does
    _, errors = harvest.communicate(timeout=600)
    assert harvest.returncode == 0, errors.decode()[-3000:]
    assert "BrokenPipeError" not in errors.decode()
    assert read_table(str(out), "runs").num_rows == 2  # add_broadcast's two tiny runs
    for partition in (out / "measurements").iterdir():
        assert len(list(partition.glob("part-*.parquet"))) == 1, partition  # compacted
    assert check_dataset(str(out)).ok
