"""Writers under concurrency and SIGKILL: no collisions, no partial files, nothing lost."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from schemas import DatasetError, DatasetWriter, read_table, scan_table
from schemas.check import check_dataset
from schemas.compact import compact_dataset
from schemas.errors import RepeatedKeyError, WriteFailedError

from ..faultfs import FaultPlan, faulty_storage, faulty_url
from .conftest import sample_rows, write_run

WRITER_SCRIPT = textwrap.dedent(
    """
    import sys
    from schemas import DatasetWriter
    root, tag, count, width = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    writer = DatasetWriter(root)
    for i in range(count):
        rows = [{"kernel_id": f"{tag}-{i}-{j}", "family": "f", "entry_name": "e", "source": "x" * 2000} for j in range(width)]
        writer.write("kernels", rows)
        print(i, flush=True)
    """
)


def _spawn(root: Path, tag: str, count: int, width: int = 50) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER_SCRIPT, str(root), tag, str(count), str(width)],
        stdout=subprocess.PIPE,
        text=True,
    )


def test_two_writer_processes_at_once_lose_nothing(tmp_path):
    procs = [_spawn(tmp_path, tag, 30) for tag in ("a", "b")]
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    ids = read_table(str(tmp_path), "kernels").column("kernel_id").to_pylist()
    assert len(ids) == len(set(ids)) == 2 * 30 * 50
    assert len(list((tmp_path / "kernels").glob("*.parquet"))) == 60


def test_sigkill_mid_write_leaves_no_partial_file(tmp_path):
    (tmp_path / "kernels").mkdir()
    # Large rows make each write take long enough to be killed inside it.
    proc = _spawn(tmp_path, "k", 10_000, width=20_000)
    first = proc.stdout.readline()  # one whole file has landed
    assert first.strip() == "0"
    time.sleep(0.3)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    # The killed writer's hidden temporary (".tmp-...") may remain; only named files count.
    visible = [
        p for p in (tmp_path / "kernels").glob("*.parquet") if not p.name.startswith((".", "_"))
    ]
    assert visible
    table = read_table(str(tmp_path), "kernels")
    assert table.num_rows == 20_000 * len(visible)
    report = check_dataset(str(tmp_path))
    assert not [p for p in report.problems if "kernels" in p and "not found" not in p]


# -- failing storage: a write that fails part-way hands back exactly what did not land -------


def test_partial_write_hands_back_only_unwritten_partitions(tmp_path):
    rows = (
        sample_rows(0, arch="sm_90")["measurements"] + sample_rows(1, arch="sm_80")["measurements"]
    )
    with faulty_storage(FaultPlan(fail={2})) as plan:
        writer = DatasetWriter(faulty_url(tmp_path))
        with pytest.raises(WriteFailedError) as error:
            writer.write("measurements", rows)
        failure = error.value
        assert len(failure.written) == 1 and plan.failed
        assert failure.remaining.num_rows == 3  # the second partition only
        assert "could not write table 'measurements'" in str(failure)
        assert "No space left on device" in str(failure) and "committed before is intact" in str(
            failure
        )
        writer.write("measurements", failure.remaining)  # the retry
    written = read_table(str(tmp_path), "measurements", committed_only=False)
    assert sorted(written.column("run_id").to_pylist()) == sorted(r["run_id"] for r in rows)


def test_repeated_measurements_are_refused_by_readers_and_named_by_check(dataset):
    """What a non-idempotent retried flush leaves behind: a committed run's rows twice."""
    rows = sample_rows(0)["measurements"]
    DatasetWriter(dataset).write("measurements", rows)
    frame = scan_table(dataset, "measurements")  # lazy: the key check runs when collected
    for read in (
        lambda: read_table(dataset, "measurements"),
        frame.collect,
        lambda: read_table(dataset, "measurements", committed_only=False, filters=[("status", "=", "never")]),
    ):
        with pytest.raises(
            RepeatedKeyError,
            match=r"measurements: 3 row\(s\) repeat a key \(run_id, harvest_id, config_id\)",
        ):
            read()  # the verdict is the table's, whatever a query selects
    report = check_dataset(dataset)
    problem = next(p for p in report.problems if "repeat a key" in p)
    assert "in 2 file(s)" in problem and ".parquet" in problem


def test_compaction_on_a_full_disk_changes_nothing(tmp_path):
    root = tmp_path / "ds"
    writer = DatasetWriter(str(root))
    for index in range(3):
        write_run(writer, index)
    before = sorted(p.name for p in root.rglob("*.parquet"))
    rows = read_table(str(root), "measurements").num_rows
    with faulty_storage(FaultPlan(fail_from=1)), pytest.raises(DatasetError) as error:
        compact_dataset(faulty_url(root))
    assert "could not write the merged file (No space left on device)" in str(error.value)
    assert "intact" in str(error.value) and "\n" not in str(error.value)
    assert sorted(p.name for p in root.rglob("*.parquet")) == before
    assert read_table(str(root), "measurements").num_rows == rows
