from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

from schemas import DatasetWriter, read_table, scan_table
from schemas.check import check_dataset
from schemas.compact import compact_dataset
from schemas.storage import META_REPLACES

from .conftest import write_run

REPO = Path(__file__).resolve().parents[2]


def _multiset(url: str, table: str) -> Counter:
    return Counter(
        tuple(sorted(row.items()))
        for row in read_table(url, table, committed_only=False).to_pylist()
    )


def test_compaction_keeps_the_multiset_of_rows(dataset):
    writer = DatasetWriter(dataset)
    for index in range(3, 8):
        write_run(writer, index)
    before = {t: _multiset(dataset, t) for t in ("runs", "measurements", "ir_nodes", "kernels")}
    files_before = len(list(Path(dataset).rglob("*.parquet")))
    results = compact_dataset(dataset)
    assert results
    files_after = len(list(Path(dataset).rglob("*.parquet")))
    assert files_after < files_before
    partitions = {p.parent for p in Path(dataset).rglob("*.parquet")}
    assert len(partitions) == files_after  # one file per partition
    for table, rows in before.items():
        assert _multiset(dataset, table) == rows
    assert check_dataset(dataset).ok


def test_crash_after_merge_before_delete_loses_and_doubles_nothing(dataset, tmp_path):
    """Simulate the crash window: the merged file exists and the old ones are still there."""
    measurements = Path(dataset, "measurements", "arch=sm_90")
    originals = {p: p.read_bytes() for p in measurements.glob("*.parquet")}
    before = _multiset(dataset, "measurements")
    compact_dataset(dataset)
    for path, data in originals.items():  # put the replaced files back, as if never deleted
        path.write_bytes(data)
    merged = [
        p
        for p in measurements.glob("*.parquet")
        if META_REPLACES in (pq.read_metadata(p).metadata or {})
    ]
    assert len(merged) == 1
    assert _multiset(dataset, "measurements") == before
    report = check_dataset(dataset)
    assert report.ok and any("superseded" in w for w in report.warnings)
    compact_dataset(dataset)  # a second pass cleans the leftovers
    assert set(measurements.glob("*.parquet")) & set(originals) == set()
    assert _multiset(dataset, "measurements") == before


COMPACT_LOOP = textwrap.dedent(
    """
    import sys
    from schemas import DatasetWriter
    from schemas.compact import compact_dataset
    from tests.schemas.conftest import write_run
    root, rounds = sys.argv[1], int(sys.argv[2])
    for r in range(rounds):
        writer = DatasetWriter(root)
        for index in range(4):
            write_run(writer, 100 + 4 * r + index)
        compact_dataset(root)
    """
)


def _compactor(root: str, rounds: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", COMPACT_LOOP, root, str(rounds)],
        cwd=REPO,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_readers_and_check_during_compaction_see_whole_runs(dataset):
    """While another process writes and compacts, every read sees committed runs whole."""
    proc = _compactor(dataset, 6)
    reads = 0
    while proc.poll() is None or reads == 0:
        runs = read_table(dataset, "runs", columns=["run_id", "n_configs"])
        measurements = read_table(dataset, "measurements", columns=["run_id"])
        assert measurements.num_rows >= sum(runs.column("n_configs").to_pylist())
        frame = scan_table(dataset, "measurements")  # holds its files: a later compaction is harmless
        assert frame.collect().height >= measurements.num_rows - 3 * 4
        report = check_dataset(dataset)
        assert report.ok, report.problems
        reads += 1
    assert proc.wait() == 0, proc.stderr.read()
    assert check_dataset(dataset).ok
    assert read_table(dataset, "runs").num_rows == 3 + 6 * 4


def test_two_compactions_at_once_both_succeed_without_doubling(dataset):
    writer = DatasetWriter(dataset)
    for index in range(3, 40):
        write_run(writer, index)
    before = _multiset(dataset, "measurements")
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "schemas", "compact", dataset],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, out + err
    assert _multiset(dataset, "measurements") == before
    assert check_dataset(dataset).ok


def test_compact_of_a_missing_dataset_fails(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "schemas", "compact", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "no dataset here" in result.stdout.replace("\n", " ") and "Traceback" not in result.stderr


def test_stale_temporaries_are_reported_and_removed_only_when_old(dataset):
    table_dir = Path(dataset, "measurements", "arch=sm_90")
    stale = table_dir / ".tmp-0123-part-killed.parquet"
    stale.write_bytes(b"half a file")
    fresh = table_dir / ".tmp-4567-part-writing.parquet"
    fresh.write_bytes(b"being written")
    old = time.time() - 2 * 3600
    os.utime(stale, (old, old))
    report = check_dataset(dataset)
    assert report.ok  # leftovers are invisible to readers: a warning, not a problem
    assert any("1 stale write temporary" in w and stale.name in w for w in report.warnings)
    fixed = check_dataset(dataset, fix=True)
    assert any(stale.name in line for line in fixed.fixed)
    assert not stale.exists() and fresh.exists()
    os.utime(fresh, (old, old))
    compact_dataset(dataset)
    assert not fresh.exists()
    future = table_dir / ".tmp-89ab-part-dated-ahead.parquet"  # a skewed clock or a touch
    future.write_bytes(b"never renamed")
    ahead = time.time() + 30 * 86400
    os.utime(future, (ahead, ahead))
    assert any(future.name in w for w in check_dataset(dataset).warnings)
    check_dataset(dataset, fix=True)
    assert not future.exists()  # it used to count as younger than any age, forever


def test_copies_of_a_kernel_with_another_source_are_refused_not_deduplicated(dataset):
    """Two rows with one kernel_id are only harmless copies if they hold the source that key
    hashes: one that differs used to win silently (first by path) and survive compaction."""
    import pytest

    from schemas import ConflictingCopiesError, DatasetError

    writer = DatasetWriter(dataset)
    writer.write("kernels", [{"kernel_id": "k1", "family": "add", "entry_name": "add_kernel", "source": "def add(): ..."}])
    assert read_table(dataset, "kernels").num_rows == 1  # an identical copy: deduplicated
    assert check_dataset(dataset).ok
    writer.write("kernels", [{"kernel_id": "k1", "family": "add", "entry_name": "add_kernel", "source": "# forged"}])
    files = sorted(p.name for p in Path(dataset, "kernels").glob("*.parquet"))

    for read in (lambda: read_table(dataset, "kernels"), lambda: scan_table(dataset, "kernels").collect()):
        with pytest.raises(ConflictingCopiesError, match="kernels: 1 copy.*entry_name, source.*kernel_id=k1"):
            read()
    problems = "\n".join(check_dataset(dataset).problems)
    assert "kernels: 1 copy(ies) of a key hold other values of entry_name, source" in problems
    assert "kernel_id=k1 is in 5 file(s)" in problems  # 3 runs wrote it, then the 2 copies
    with pytest.raises(DatasetError, match="not compacted: kernels"):
        compact_dataset(dataset)
    assert sorted(p.name for p in Path(dataset, "kernels").glob("*.parquet")) == files
