"""Files whose schema or footer is wrong: refused by both readers, reported by check, never
merged by compact. Each damage kind is written the way a careless tool or operator would."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from schemas import DatasetError, read_table, scan_table
from schemas.check import check_dataset
from schemas.compact import compact_dataset
from schemas.errors import CorruptFileError, SchemaMismatchError
from schemas.storage import META_TABLE, META_VERSION

FIXTURE_V1 = Path(__file__).parent / "fixtures" / "v1_dataset"


def _first(dataset: str, table: str) -> Path:
    return sorted(Path(dataset, table).rglob("*.parquet"))[0]


def _rewrite(
    path: Path,
    change: Callable[[pa.Table], pa.Table],
    metadata: dict[bytes, bytes] | None = None,
    *,
    statistics: bool = True,
) -> None:
    """Rewrite ``path`` in place with ``change`` applied, keeping (or replacing) its footer;
    ``statistics=False`` writes it as a tool that stores no row-group statistics would."""
    original = pq.read_table(path)
    kv = dict(original.schema.metadata or {})
    kv.update(metadata or {})
    changed = change(original.replace_schema_metadata(None))
    pq.write_table(changed.replace_schema_metadata(kv), path, write_statistics=statistics)


def _drop_status(t: pa.Table) -> pa.Table:
    return t.drop_columns(["status"])


def _config_id_as_int(t: pa.Table) -> pa.Table:
    index = t.schema.get_field_index("config_id")
    return t.set_column(index, "config_id", pa.array(range(t.num_rows), pa.int64()))


def _extra_column(t: pa.Table) -> pa.Table:
    return t.append_column("my_note", pa.array(["x"] * t.num_rows))


def _version_99(t: pa.Table) -> pa.Table:
    index = t.schema.get_field_index("schema_version")
    return t.set_column(
        index,
        pa.field("schema_version", pa.int32(), nullable=False),
        pa.array([99] * t.num_rows, pa.int32()),
    )


DAMAGE = {
    "missing non-nullable status": (_drop_status, "'status' is missing"),
    "config_id stored as int64": (_config_id_as_int, "'config_id' is stored as int64"),
    "unknown extra column": (_extra_column, "unknown column(s) my_note"),
    "schema_version column 99 under footer 2": (_version_99, "holds 99 but the footer says 2"),
}


@pytest.fixture(params=sorted(DAMAGE))
def damaged(request, dataset) -> tuple[str, Path, str]:
    change, expected = DAMAGE[request.param]
    victim = _first(dataset, "measurements")
    _rewrite(victim, change)
    return dataset, victim, expected


def test_both_readers_refuse_naming_file_and_field(damaged):
    dataset, victim, expected = damaged
    for read in (
        lambda: read_table(dataset, "measurements"),
        lambda: read_table(dataset, "measurements", columns=["median_ms"]),
        lambda: scan_table(dataset, "measurements").collect(),
    ):
        with pytest.raises(SchemaMismatchError) as error:
            read()
        assert victim.name in str(error.value) and expected in str(error.value)


def test_check_reports_and_compact_refuses(damaged):
    dataset, victim, expected = damaged
    report = check_dataset(dataset)
    assert not report.ok
    assert any(victim.name in p and expected in p for p in report.problems), report.problems
    before = sorted(p.name for p in Path(dataset).rglob("*.parquet"))
    with pytest.raises(DatasetError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        compact_dataset(dataset)
    assert sorted(p.name for p in Path(dataset).rglob("*.parquet")) == before


def test_runs_file_under_measurements_is_refused(dataset):
    stray = Path(dataset, "measurements", "arch=sm_90", "part-stray.parquet")
    shutil.copy(_first(dataset, "runs"), stray)
    with pytest.raises(
        SchemaMismatchError, match="part-stray.parquet: the footer says this is a 'runs' file"
    ):
        read_table(dataset, "measurements")
    with pytest.raises(SchemaMismatchError, match="part-stray.parquet"):
        scan_table(dataset, "measurements")
    assert any("part-stray.parquet" in p for p in check_dataset(dataset).problems)


def test_runs_rows_without_a_footer_table_name_still_fail_on_schema(dataset):
    """The same stray file written by a tool that kept no table name: its columns give it away."""
    stray = Path(dataset, "measurements", "arch=sm_90", "part-stray.parquet")
    runs = pq.read_table(_first(dataset, "runs"))
    kv = {k: v for k, v in runs.schema.metadata.items() if k != META_TABLE}
    pq.write_table(runs.replace_schema_metadata(kv), stray)
    with pytest.raises(SchemaMismatchError, match="'config_id' is missing"):
        read_table(dataset, "measurements")


@pytest.mark.parametrize("value", [b"two", b"", b"2.0"])
def test_non_integer_footer_version_is_a_clear_error(dataset, value):
    victim = _first(dataset, "kernels")
    _rewrite(victim, lambda t: t, {META_VERSION: value})
    with pytest.raises(CorruptFileError, match=f"{victim.name}.*not an integer"):
        read_table(dataset, "kernels")
    assert any(victim.name in p and "not an integer" in p for p in check_dataset(dataset).problems)


@pytest.mark.parametrize("statistics", [True, False], ids=["with-statistics", "without-statistics"])
def test_nulls_in_a_non_nullable_column_are_refused(dataset, statistics):
    victim = _first(dataset, "measurements")

    def null_config(t: pa.Table) -> pa.Table:
        index = t.schema.get_field_index("config_id")
        values = pa.array([None, *t.column(index).to_pylist()[1:]], pa.string())
        return t.set_column(index, pa.field("config_id", pa.string()), values)

    _rewrite(victim, null_config, statistics=statistics)
    with pytest.raises(SchemaMismatchError, match="'config_id' must not be null but holds 1"):
        read_table(dataset, "measurements")
    with pytest.raises(SchemaMismatchError, match="'config_id' must not be null"):
        scan_table(dataset, "measurements")
    assert any(victim.name in p and "must not be null" in p for p in check_dataset(dataset).problems)


def test_representation_variants_pass(dataset):
    """large_string where string is declared holds the same values: not an error."""
    victim = _first(dataset, "kernels")
    _rewrite(
        victim,
        lambda t: t.cast(
            pa.schema(
                [f.with_type(pa.large_string()) if f.type == pa.string() else f for f in t.schema]
            )
        ),
    )
    assert read_table(dataset, "kernels").num_rows == 1
    assert check_dataset(dataset).ok


def test_version_one_fixture_is_valid(tmp_path):
    copy = tmp_path / "v1"
    shutil.copytree(FIXTURE_V1, copy)
    report = check_dataset(str(copy))
    assert report.ok, report.problems


def test_cli_check_names_the_file(damaged):
    dataset, victim, _ = damaged
    result = subprocess.run(
        [sys.executable, "-m", "schemas", "check", dataset],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert victim.name in result.stdout.replace("\n", "") and "Traceback" not in result.stderr
    result = subprocess.run(
        [sys.executable, "-m", "schemas", "compact", dataset],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2 and victim.name in result.stdout.replace("\n", "")


def test_a_file_under_another_partition_directory_is_refused(dataset):
    """The found gap: sm_80 rows moved under arch=sm_90/ were read as they were; tools that
    prune by directory name would pick different rows than the reader."""
    stray = sorted(Path(dataset, "measurements", "arch=sm_80").glob("*.parquet"))[0]
    moved = Path(dataset, "measurements", "arch=sm_90", stray.name)
    stray.rename(moved)
    message = rf"{moved.name}: column 'arch' holds sm_80 but the file is under arch=sm_90/"
    with pytest.raises(SchemaMismatchError, match=message):
        read_table(dataset, "measurements")
    with pytest.raises(SchemaMismatchError, match=message):
        scan_table(dataset, "measurements")
    assert any(moved.name in p and "arch=sm_90/" in p for p in check_dataset(dataset).problems)
    with pytest.raises(SchemaMismatchError):
        compact_dataset(dataset)


def test_a_directory_naming_no_partition_key_is_refused(dataset):
    source = _first(dataset, "kernels")
    odd = Path(dataset, "kernels", "arch=sm_90", source.name)
    odd.parent.mkdir()
    source.rename(odd)
    with pytest.raises(SchemaMismatchError, match=r"directory arch=sm_90/ names no partition key"):
        read_table(dataset, "kernels")


def _without_device_name(t: pa.Table) -> pa.Table:
    return t.drop_columns(["device_name"])  # nullable: a valid file may lack it


def _family_as_dictionary(t: pa.Table) -> pa.Table:
    index = t.schema.get_field_index("family")
    encoded = t.column(index).dictionary_encode()
    return t.set_column(index, pa.field("family", encoded.type, nullable=False), encoded)


@pytest.mark.parametrize("change", [_without_device_name, _family_as_dictionary])
def test_scan_table_reads_every_file_check_accepts(dataset, change):
    """check says OK only when both readers read the table: a valid file that polars' own scan
    cannot combine with the others (a nullable column left out, a dictionary-encoded string)
    is read through the conforming pyarrow path instead of failing at collect."""
    _rewrite(_first(dataset, "runs"), change)
    assert check_dataset(dataset).ok
    expected = read_table(dataset, "runs").sort_by("run_id").to_pylist()
    scanned = scan_table(dataset, "runs").sort("run_id").collect().to_arrow().to_pylist()
    assert scanned == expected


@pytest.mark.parametrize(
    "where, expected",
    [
        ("measurements/part-top.parquet", "sits at the table's top level, not directly under arch=<value>/"),
        ("measurements/arch=sm_90/x/part-deep.parquet", "sits at arch=sm_90/x/"),
        ("measurements/junk/part-junk.parquet", "sits at junk/"),
        ("measurements/arch=sm_90/copy.parquet", "does not start with 'part-'"),
        ("kernels/sub/part-k.parquet", "sits at sub/, not directly under the table's top level"),
    ],
)
def test_a_file_where_plain_readers_do_not_look_is_refused(dataset, where, expected):
    """The documented plain readers glob part-*.parquet one partition level down: a data file
    elsewhere was read by kernel-corpus only, so the two saw different rows."""
    table = where.split("/")[0]
    source = _first(dataset, table)
    target = Path(dataset, where)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(source, target)
    with pytest.raises(SchemaMismatchError, match=re.escape(expected)):
        read_table(dataset, table)
    assert any(target.name in p and expected in p for p in check_dataset(dataset).problems)


@pytest.mark.parametrize("hidden", ["_old", ".old", "arch=sm_90/.rsync-partial"])
def test_check_reports_data_files_in_hidden_directories(dataset, hidden):
    """A partition copied into a hidden directory (a backup before an edit, rsync's partial
    directory): kernel-corpus and pyarrow.dataset skip it, but the README's polars and duckdb
    globs (`runs/*/part-*.parquet`) read it, so its rows came out twice while check said OK."""
    import polars as pl

    runs = _first(dataset, "runs")
    copy = Path(dataset, "runs", hidden, runs.name)
    copy.parent.mkdir(parents=True)
    shutil.copy(runs, copy)
    assert read_table(dataset, "runs").num_rows == 3  # kernel-corpus's reader skips it
    if "/" not in hidden:  # what a plain glob of the README reads: the copied rows twice
        plain = pl.scan_parquet(f"{dataset}/runs/*/part-*.parquet", hive_partitioning=False).collect()
        assert plain.height == 3 + pq.read_metadata(runs).num_rows
    problems = check_dataset(dataset).problems
    assert any(
        "1 Parquet file(s) in hidden directories of tables" in p and f"runs/{hidden}/{runs.name}" in p for p in problems
    ), problems


def test_check_reports_files_that_are_not_parquet_data(dataset):
    """A .bak copy is invisible to kernel-corpus but doubles the rows of pyarrow.dataset."""
    runs = _first(dataset, "runs")
    shutil.copy(runs, runs.with_name(runs.name + ".bak"))
    report = check_dataset(dataset)
    assert any("1 file(s) in table directories that are not Parquet data" in p and ".bak" in p for p in report.problems)
    assert read_table(dataset, "runs").num_rows == 3
