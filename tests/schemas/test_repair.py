"""``check --fix`` repairs the repeated keys of the old non-idempotent flush."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from schemas import DatasetWriter, read_table
from schemas.check import check_dataset
from schemas.cli import run_check
from schemas.errors import DatasetError, RepeatedKeyError
from schemas.repair import repair_repeats
from schemas.storage import META_REPLACES
from tests.faultfs import FaultPlan, faulty_storage, faulty_url

from .conftest import sample_rows, write_run

RUN = 7
V1_DATASET = Path(__file__).parent / "fixtures" / "v1_dataset"


def _flush_twice(root: str, *, change: dict | None = None) -> None:
    """What a retried flush of the old writer left: measurement rows written twice (the
    second copy altered by ``change`` to model a differing repeat), then the runs row."""
    rows = sample_rows(RUN)
    writer = DatasetWriter(root)
    for table in ("kernels", "ir_graphs", "ir_nodes", "ir_edges", "measurements"):
        writer.write(table, rows[table])
    again = [dict(row) for row in rows["measurements"]]
    if change:
        again[1].update(change)
    DatasetWriter(root).write("measurements", again)
    writer.commit_run(rows["runs"])


def _measurement_files(root: str) -> set[Path]:
    return set(Path(root, "measurements").rglob("*.parquet"))


def test_check_fix_repairs_an_identical_repeat(dataset):
    _flush_twice(dataset)
    before = check_dataset(dataset)
    assert not before.ok
    problem = next(p for p in before.problems if p.startswith("measurements:"))
    assert "file(s)" in problem and ".parquet" in problem
    with pytest.raises(RepeatedKeyError):
        read_table(dataset, "measurements")
    n_configs = sample_rows(RUN)["runs"][0]["n_configs"]

    fixed = check_dataset(dataset, fix=True)

    assert fixed.ok, fixed.problems
    assert any(f"dropped {n_configs} repeated row(s)" in line for line in fixed.fixed)
    assert check_dataset(dataset).ok
    table = read_table(dataset, "measurements")
    keys = list(zip(*(table.column(c).to_pylist() for c in ("run_id", "config_id", "harvest_id"))))
    assert len(keys) == len(set(keys)) == 3 * 3 + n_configs  # fixture runs, then the repaired one
    assert repair_repeats(dataset) == []  # nothing left to repair


def test_differing_repeat_is_refused_naming_key_and_files(dataset):
    _flush_twice(dataset, change={"median_ms": 99.0})
    files = _measurement_files(dataset)
    with pytest.raises(DatasetError, match=r"differ in median_ms \(files part-.*\.parquet, part-"):
        repair_repeats(dataset)
    assert _measurement_files(dataset) == files  # refused before anything changed
    report = check_dataset(dataset, fix=True)
    assert any(p.startswith("not repaired: measurements: rows with key") for p in report.problems)
    assert run_check(dataset, fix=True) == 1


def test_crash_between_merged_write_and_delete_leaves_a_readable_dataset(dataset):
    _flush_twice(dataset)
    originals = {p: p.read_bytes() for p in _measurement_files(dataset)}
    repair_repeats(dataset)
    for path, data in originals.items():  # as if the process died before deleting them
        path.write_bytes(data)
    merged = [
        p
        for p in _measurement_files(dataset)
        if META_REPLACES in (pq.read_metadata(p).metadata or {})
    ]
    assert merged
    table = read_table(dataset, "measurements")
    assert table.num_rows == 3 * 3 + 3
    assert check_dataset(dataset).ok


def test_a_failed_merged_write_changes_nothing(tmp_path):
    root = tmp_path / "ds"
    writer = DatasetWriter(str(root))
    write_run(writer, 1)
    _flush_twice(str(root))
    files = _measurement_files(str(root))
    with (
        faulty_storage(FaultPlan(fail_from=1)),
        pytest.raises(DatasetError, match="could not write the merged file"),
    ):
        repair_repeats(faulty_url(root))
    assert _measurement_files(str(root)) == files
    assert not check_dataset(str(root)).ok
    assert check_dataset(str(root), fix=True).ok


def test_a_repeat_across_schema_versions_is_repaired(tmp_path):
    """A v1 file and a v2 rewrite of the same rows (a retry after an upgrade) are copies."""
    root = str(tmp_path / "ds")
    shutil.copytree(V1_DATASET, root)
    rows = read_table(root, "measurements", committed_only=False)
    DatasetWriter(root).write("measurements", rows.to_pylist())
    assert not check_dataset(root).ok

    results = repair_repeats(root)

    assert [(r.table, r.rows_dropped) for r in results] == [("measurements", rows.num_rows)]
    assert check_dataset(root).ok
    assert read_table(root, "measurements", committed_only=False).equals(rows)


def test_every_failing_write_or_delete_of_the_fix_leaves_a_whole_dataset(tmp_path):
    """Storage drills for ``check --fix``: its N-th write, or its N-th delete, fails; the
    dataset reads the same rows (those it could read before), and a fix on healthy storage
    then completes the repair."""
    template = tmp_path / "template"
    write_run(DatasetWriter(str(template)), 1)
    _flush_twice(str(template))
    expected = None
    for plan_index, plan in enumerate(
        [FaultPlan(fail={1}), FaultPlan(fail_from=1), FaultPlan(fail_delete={1}), FaultPlan(fail_delete={2})]
    ):
        root = tmp_path / f"case{plan_index}"
        shutil.copytree(template, root)
        with faulty_storage(plan), pytest.raises(DatasetError, match="could not"):
            check_dataset(faulty_url(root), fix=True)
        assert plan.failed
        after = check_dataset(str(root))
        if plan.fail_delete:  # the merged file landed: readers skip the files it replaced
            assert after.ok, after.problems
        else:  # nothing changed: still the repeats, reported
            assert not after.ok and any("repeat a key" in p for p in after.problems)
        fixed = check_dataset(str(root), fix=True)
        assert fixed.ok, fixed.problems
        rows = read_table(str(root), "measurements").sort_by("config_id").to_pylist()
        assert expected is None or rows == expected
        expected = rows
    assert len(expected) == 3 + 3
