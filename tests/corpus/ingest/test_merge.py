"""One log imported into two datasets that are then merged (their partition files copied into
one): the copies share their content-derived keys and differ only in when and where each import
ran, and ``check --fix`` keeps one of them; genuinely different rows under one key are still
refused. Real imports of the tritonparse fixture (made by tritonparse's own code)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpus.ingest.app import IngestConfig, ingest
from schemas import read_table
from schemas.check import check_dataset
from schemas.errors import RepeatedKeyError
from schemas.tables import TABLES

TRACE = Path(__file__).resolve().parent / "fixtures" / "tritonparse" / "gelu.ndjson"
OTHER_MACHINE = "anon-0123456789abcdef"


def _import(out: Path) -> None:
    ingest(IngestConfig(format="tritonparse", log=TRACE, out=str(out)))


def _rewrite(root: Path, table: str, **values: Any) -> None:
    """Fault injection: set ``values`` in the first row of ``table``'s files, as another
    machine or a damaged copy would have written them."""
    for path in sorted((root / table).rglob("*.parquet")):
        _rewrite_file(path, values)


def _rewrite_file(path: Path, values: dict[str, Any]) -> None:
    """``values`` in the first row of the file at ``path`` (footer metadata and page checksums
    kept)."""
    rows = pq.read_table(path)
    for column, value in values.items():
        stored = rows.column(column).to_pylist()
        stored[0] = value
        index = rows.schema.get_field_index(column)
        field = rows.schema.field(index)
        rows = rows.set_column(index, field, pa.array(stored, field.type))
    pq.write_table(rows, path, write_page_checksum=True)


def _merge(into: Path, *others: Path) -> None:
    """The datasets' table files copied into ``into`` (file names carry their writer's id, so
    they never collide), as a user merges datasets by hand."""
    for other in others:
        for table in TABLES:
            for path in (other / table).rglob("*.parquet"):
                target = into / path.relative_to(other)
                target.parent.mkdir(parents=True, exist_ok=True)
                assert not target.exists()
                shutil.copy2(path, target)


@pytest.fixture
def imported_twice(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(merged, first, second): the trace imported into ``first``, then into ``second`` on
    "another machine", both merged into ``merged``."""
    first, second, merged = tmp_path / "first", tmp_path / "second", tmp_path / "merged"
    _import(first)
    _import(second)
    _rewrite(second, "runs", hostname=OTHER_MACHINE)
    merged.mkdir()
    _merge(merged, first, second)
    return merged, first, second


def _files(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for table in TABLES for p in (root / table).rglob("*.parquet")}


def test_one_log_imported_into_two_datasets_and_merged_is_repaired(imported_twice) -> None:  # type: ignore[no-untyped-def]
    """The probe's finding: the merged dataset was refused by readers, and ``check --fix``
    refused to repair it (the copies differ in started_at, finished_at and hostname)."""
    merged, first, second = imported_twice
    ours, theirs = (read_table(str(d), "runs").to_pylist()[0] for d in (first, second))
    assert {k for k in ours if ours[k] != theirs[k]} == {"started_at", "finished_at", "hostname"}
    assert ours["finished_at"] < theirs["finished_at"]
    with pytest.raises(RepeatedKeyError):
        read_table(str(merged), "runs")
    before = _files(merged)

    report = check_dataset(str(merged), fix=True)

    assert report.ok, report.problems
    runs_line = next(line for line in report.fixed if line.startswith("runs/"))
    assert "dropped 1 repeated row(s) (1 of them the same import of a log done again" in runs_line
    assert "the earliest import kept" in runs_line
    assert any(line.startswith("measurements/") and "dropped 2 repeated row(s);" in line for line in report.fixed)
    runs = read_table(str(merged), "runs").to_pylist()
    assert runs == [ours]  # the earliest import, whichever file name sorted first
    assert read_table(str(merged), "measurements").equals(read_table(str(first), "measurements"))
    assert check_dataset(str(merged)).ok

    # a crash after the merged files were written, before the copies were deleted: the merged
    # runs file's claim on the later import's file holds (its finished_at is the import's clock)
    for path, data in before.items():
        if not path.exists():
            path.write_bytes(data)
    assert read_table(str(merged), "runs").to_pylist() == [ours]
    assert check_dataset(str(merged)).ok


def _rewrite_merged(merged: Path, second: Path, table: str, *, every_copy: bool = False, **values: Any) -> None:
    """Fault injection into the merged dataset: ``values`` in its copies of ``second``'s
    ``table`` files (``every_copy``: in all its ``table`` files)."""
    names = {p.name for p in (second / table).rglob("*.parquet")}
    for path in (merged / table).rglob("*.parquet"):
        if every_copy or path.name in names:
            _rewrite_file(path, values)


def test_different_measurements_under_one_imported_key_are_still_refused(imported_twice) -> None:  # type: ignore[no-untyped-def]
    merged, _, second = imported_twice
    _rewrite_merged(merged, second, "measurements", median_ms=123.0)  # the same key, another timing
    before = _files(merged)

    report = check_dataset(str(merged), fix=True)

    assert not report.ok
    refused = [p for p in report.problems if p.startswith("not repaired:")]
    assert refused and "measurements: rows with key" in refused[0] and "differ in median_ms" in refused[0]
    assert _files(merged) == before  # refused before anything changed, runs included


@pytest.mark.parametrize(
    ("change", "every_copy", "differing"),
    [
        ({"best_median_ms": 9.0}, False, "best_median_ms"),  # an outcome, not the import's clock
        # harvested runs: their times are the measurement's own, so a differing one is refused
        ({"source": "harvest"}, True, "finished_at"),
    ],
)
def test_runs_copies_differing_beyond_the_import_are_refused(
    imported_twice, change: dict[str, Any], every_copy: bool, differing: str
) -> None:  # type: ignore[no-untyped-def]
    merged, _, second = imported_twice
    _rewrite_merged(merged, second, "runs", every_copy=every_copy, **change)
    before = _files(merged)

    report = check_dataset(str(merged), fix=True)

    refused = [p for p in report.problems if p.startswith("not repaired: runs: rows with key")]
    assert refused and differing in refused[0].split("differ in ")[1].split(" (files")[0]
    assert _files(merged) == before


def test_one_tuning_imported_under_two_run_ids_and_merged_is_a_problem(tmp_path: Path) -> None:
    """The found defect: a trace imported into one dataset before the tuned call's ``launch``
    event (its run_id without the call's arguments) and whole into another, both merged, held
    the tuning twice under two run_ids (and two harvest_ids): no key repeats, readers returned
    its measurements twice, and check said OK. Now check names both runs and their files."""
    lines = TRACE.read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if '"launch"' in line[:40])
    early = tmp_path / "early.ndjson"
    early.write_text("".join(lines[:cut]))
    first, second, merged = tmp_path / "first", tmp_path / "second", tmp_path / "merged"
    ingest(IngestConfig(format="tritonparse", log=early, out=str(first)))
    _import(second)
    merged.mkdir()
    _merge(merged, first, second)
    runs = read_table(str(merged), "runs", columns=["run_id", "harvest_id"]).to_pylist()
    assert len({r["run_id"] for r in runs}) == 2  # the one tuning, under two run_ids

    report = check_dataset(str(merged))

    assert not report.ok
    [problem] = [p for p in report.problems if "imported tuning(s) stored under more than one run_id" in p]
    for run in runs:
        assert f"run_id={run['run_id']} (harvest {run['harvest_id']}, in part-" in problem
    assert check_dataset(str(first)).ok and check_dataset(str(second)).ok  # each alone is sound
