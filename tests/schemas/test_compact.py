from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

from schemas import DatasetWriter, read_table
from schemas.check import check_dataset
from schemas.compact import compact_dataset
from schemas.storage import META_REPLACES

from .conftest import write_run


def _multiset(url: str, table: str) -> Counter:
    return Counter(tuple(sorted(row.items())) for row in read_table(url, table, committed_only=False).to_pylist())


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
    merged = [p for p in measurements.glob("*.parquet") if META_REPLACES in (pq.read_metadata(p).metadata or {})]
    assert len(merged) == 1
    assert _multiset(dataset, "measurements") == before
    report = check_dataset(dataset)
    assert report.ok and any("superseded" in w for w in report.warnings)
    compact_dataset(dataset)  # a second pass cleans the leftovers
    assert set(measurements.glob("*.parquet")) & set(originals) == set()
    assert _multiset(dataset, "measurements") == before
