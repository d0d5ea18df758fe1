from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from schemas import SCHEMA_VERSION, DatasetError, DatasetWriter, read_table
from schemas.storage import META_VERSION


def test_files_are_hive_partitioned_and_carry_version(dataset):
    files = sorted(Path(dataset).rglob("*.parquet"))
    measurement_dirs = {f.parent.name for f in files if "measurements" in f.parts}
    assert measurement_dirs == {"arch=sm_90", "arch=sm_80"}
    for path in files:
        metadata = pq.read_metadata(path).metadata
        assert int(metadata[META_VERSION]) == SCHEMA_VERSION
        assert pq.read_table(path).column("schema_version").to_pylist() == [SCHEMA_VERSION] * pq.read_metadata(path).num_rows
    assert not [f for f in Path(dataset).rglob("*") if f.name.startswith(".tmp")]


def test_writers_never_reuse_a_file_name(tmp_path):
    root = str(tmp_path)
    first, second = DatasetWriter(root), DatasetWriter(root)
    rows = [{"kernel_id": "k", "family": "f", "entry_name": "e"}]
    names = [Path(p).name for w in (first, second, first) for p in w.write("kernels", rows)]
    assert len(set(names)) == 3
    assert first.writer_id != second.writer_id


def test_unknown_column_is_rejected_and_nothing_written(tmp_path):
    writer = DatasetWriter(str(tmp_path))
    with pytest.raises(DatasetError, match="unknown column.*kernel_idd"):
        writer.write("kernels", [{"kernel_idd": "k", "family": "f", "entry_name": "e"}])
    assert not any(tmp_path.rglob("*.parquet"))


def test_missing_required_field_names_table_and_column(tmp_path):
    writer = DatasetWriter(str(tmp_path))
    with pytest.raises(DatasetError, match="'kernels'.*'family'"):
        writer.write("kernels", [{"kernel_id": "k", "entry_name": "e"}])


def test_unsafe_partition_value_rejected(tmp_path):
    writer = DatasetWriter(str(tmp_path))
    with pytest.raises(DatasetError, match="partition value arch='../x'"):
        writer.write("runs", [{"run_id": "r", "harvest_id": "h", "kernel_id": "k", "family": "f", "device_kind": "cuda", "arch": "../x"}])


def test_memory_url_round_trip():
    url = f"memory://writer-test-{os.getpid()}"
    writer = DatasetWriter(url)
    writer.write("kernels", [{"kernel_id": "k", "family": "f", "entry_name": "e"}])
    assert read_table(url, "kernels").column("family").to_pylist() == ["f"]
