"""Replacement claims (``kernel_corpus.replaces``): only a file holding every key of the files
it names may retire them; a malformed footer is an error naming the file."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from schemas import CorruptFileError, DatasetWriter, read_table, scan_table
from schemas.__main__ import main
from schemas.check import check_dataset
from schemas.compact import compact_dataset
from schemas.errors import ReplacementError
from schemas.storage import META_REPLACES
from schemas.tables import TABLES
from schemas.writer import with_file_metadata

from .conftest import write_run


def _runs_file(dataset: str) -> Path:
    return sorted(Path(dataset, "runs", "arch=sm_90").glob("part-*.parquet"))[0]


def _claim(path: Path, rows: pa.Table, table: str, replaces: object) -> None:
    """Write ``rows`` to ``path`` with a footer claiming to replace ``replaces``."""
    raw = replaces if isinstance(replaces, bytes) else json.dumps(replaces).encode()
    pq.write_table(with_file_metadata(rows, TABLES[table], {META_REPLACES: raw}), path)


def test_an_empty_file_cannot_retire_the_real_runs_file(dataset: str) -> None:
    """The found defect: an empty runs file "replacing" the real one hid every run, check said
    OK, and compact deleted the real file."""
    real = _runs_file(dataset)
    runs_before = read_table(dataset, "runs").num_rows
    empty = TABLES["runs"].schema.empty_table()
    _claim(real.parent / "part-empty.parquet", empty, "runs", [real.name])

    with pytest.raises(ReplacementError, match=rf"part-empty.parquet.*replaces {real.name}.*key"):
        read_table(dataset, "runs")
    with pytest.raises(ReplacementError):
        read_table(dataset, "measurements")  # its commit gate reads runs
    with pytest.raises(ReplacementError):
        scan_table(dataset, "runs")
    report = check_dataset(dataset)
    assert not report.ok and any("part-empty.parquet" in p and "not honoured" in p for p in report.problems)
    with pytest.raises(ReplacementError):
        compact_dataset(dataset)
    assert real.exists()  # compact refused before deleting anything

    (real.parent / "part-empty.parquet").unlink()  # a person removes the wrong file
    assert read_table(dataset, "runs").num_rows == runs_before


def test_a_file_holding_only_some_keys_cannot_retire_the_other(dataset: str) -> None:
    real = sorted(Path(dataset, "measurements", "arch=sm_90").glob("part-*.parquet"))[0]
    rows = pq.read_table(real).replace_schema_metadata(None)
    assert rows.num_rows == 3
    _claim(real.parent / "part-partial.parquet", rows.slice(0, 1), "measurements", [real.name])
    with pytest.raises(ReplacementError, match=r"2 of that file.s rows are not in it"):
        read_table(dataset, "measurements")


def test_a_file_with_the_same_keys_but_other_timings_cannot_retire_the_real_one(dataset: str) -> None:
    """A forged claim whose keys match but whose median_ms does not would swap every timing:
    readers, check and compact must not honour it (compact used to delete the real file)."""
    real = sorted(Path(dataset, "measurements", "arch=sm_90").glob("part-*.parquet"))[0]
    rows = pq.read_table(real).replace_schema_metadata(None)
    index = rows.schema.get_field_index("median_ms")
    forged = rows.set_column(index, rows.schema.field(index), pa.array([999.0] * rows.num_rows))
    _claim(real.parent / "part-forged.parquet", forged, "measurements", [real.name])

    with pytest.raises(ReplacementError, match=r"3 of that file.s rows are not in it .*median_ms"):
        read_table(dataset, "measurements")
    report = check_dataset(dataset)
    assert any("part-forged.parquet" in p and "not honoured" in p for p in report.problems)
    with pytest.raises(ReplacementError):
        compact_dataset(dataset)
    assert real.exists()
    (real.parent / "part-forged.parquet").unlink()
    assert 999.0 not in read_table(dataset, "measurements").column("median_ms").to_pylist()


@pytest.mark.parametrize(
    ("stored", "claimed", "honoured"),
    [("harvest", "harvest", False), ("harvest", "helion", False), ("tritonparse", "tritonparse", True)],
)
def test_a_claim_with_other_finished_at_is_honoured_for_imported_runs_only(
    dataset: str, stored: str, claimed: str, honoured: bool
) -> None:
    """An imported run's finished_at is when the import ran (two imports of one log differ in
    it, and ``check --fix`` keeps the earliest), so a claim is not checked on it; a harvested
    run's is its measurement's, and a claim that changes it is refused, also when the claiming
    file calls the run imported (``source`` is compared)."""
    real = _runs_file(dataset)
    rows = pq.read_table(real).replace_schema_metadata(None)

    def with_values(source: str, finished: datetime) -> pa.Table:
        changed = rows.set_column(rows.schema.get_field_index("source"), "source", pa.array([source]))
        index = changed.schema.get_field_index("finished_at")
        return changed.set_column(index, changed.schema.field(index), pa.array([finished], changed.schema.field(index).type))

    earlier, later = (datetime(2026, 11, 24, hour, tzinfo=timezone.utc) for hour in (11, 12))
    assert rows.num_rows == 1
    pq.write_table(with_file_metadata(with_values(stored, earlier), TABLES["runs"], {}), real)
    _claim(real.parent / "part-later.parquet", with_values(claimed, later), "runs", [real.name])

    if honoured:
        assert read_table(dataset, "runs", filters=[("source", "=", claimed)]).column("finished_at").to_pylist() == [later]
        assert check_dataset(dataset).ok
    else:
        with pytest.raises(ReplacementError, match=r"1 of that file.s rows are not in it .*finished_at, source"):
            read_table(dataset, "runs")


def test_files_replacing_each_other_in_a_cycle_retire_nothing(dataset: str) -> None:
    real = _runs_file(dataset)
    rows = pq.read_table(real)
    _claim(real.parent / "part-a.parquet", rows, "runs", ["part-b.parquet"])
    _claim(real.parent / "part-b.parquet", rows, "runs", ["part-a.parquet"])
    real.unlink()
    with pytest.raises(ReplacementError, match="cycle"):
        read_table(dataset, "runs")
    assert any("cycle" in p for p in check_dataset(dataset).problems)


def test_a_chain_of_replacements_left_by_crashes_reads_each_row_once(dataset: str) -> None:
    """scrub's rewrite, then a compaction of it, both interrupted before deleting: every file
    is still on disk and readers see each row once."""
    writer = DatasetWriter(dataset)
    write_run(writer, 5)
    before = Counter(tuple(r.values()) for r in read_table(dataset, "runs").to_pylist())
    directory = _runs_file(dataset).parent
    originals = sorted(directory.glob("part-*.parquet"))
    first, rest = originals[0], originals[1:]
    rewrite = directory / "part-scrub-x.parquet"
    _claim(rewrite, pq.read_table(first).replace_schema_metadata(None), "runs", [first.name])
    merged_rows = pa.concat_tables([pq.read_table(p).replace_schema_metadata(None) for p in [rewrite, *rest]])
    _claim(directory / "part-compact-y.parquet", merged_rows, "runs", sorted(p.name for p in [rewrite, *rest]))
    after = Counter(tuple(r.values()) for r in read_table(dataset, "runs").to_pylist())
    assert after == before
    report = check_dataset(dataset)
    assert report.ok, report.problems
    compact_dataset(dataset)  # removes the retired files
    assert sorted(p.name for p in directory.glob("part-*.parquet")) == ["part-compact-y.parquet"]
    assert Counter(tuple(r.values()) for r in read_table(dataset, "runs").to_pylist()) == before


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (b"[not json", "not a JSON list"),
        (b'{"a": 1}', "not a JSON list"),
        (b"[1, 2]", "not a JSON list"),
        (b'["../../runs/arch=sm_90/x.parquet"]', "not another visible Parquet file"),
        (b'[".tmp-hidden.parquet"]', "not another visible Parquet file"),
    ],
)
def test_a_malformed_replaces_footer_is_an_error_naming_the_file(
    dataset: str, capsys: pytest.CaptureFixture[str], raw: bytes, why: str
) -> None:
    real = _runs_file(dataset)
    victim = real.parent / "part-victim.parquet"
    _claim(victim, pq.read_table(real).replace_schema_metadata(None), "runs", raw)
    real.unlink()
    with pytest.raises(CorruptFileError, match=f"part-victim.parquet.*{why}"):
        read_table(dataset, "runs")
    assert any("part-victim.parquet" in p and why in p for p in check_dataset(dataset).problems)
    for command in (["check", dataset, "--fix"], ["compact", dataset], ["check", dataset]):
        capsys.readouterr()
        code = main(command)
        printed = capsys.readouterr().out
        assert code in (1, 2) and "part-victim.parquet" in printed.replace("\n", "")
        assert "Traceback" not in printed and "JSONDecodeError" not in printed
