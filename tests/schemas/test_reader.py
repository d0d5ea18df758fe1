from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from schemas import (
    SCHEMA_VERSION,
    CorruptFileError,
    DatasetError,
    DatasetWriter,
    IncompleteRunError,
    ReadRequestError,
    RepeatedKeyError,
    SchemaVersionError,
    committed_runs,
    read_table,
    scan_table,
)
from schemas.check import check_dataset
from schemas.history import FROZEN
from schemas.migrations import MIGRATIONS
from schemas.reader import table_files
from schemas.storage import META_TABLE, META_VERSION, resolve
from tests.samesize import make_room, rewrite_keeping_size_and_mtime

from .conftest import sample_rows, write_run


def test_read_filters_and_columns(dataset):
    table = read_table(dataset, "measurements", columns=["config_id", "median_ms"], filters=[("status", "=", "ok")])
    assert table.column_names == ["config_id", "median_ms"]
    assert table.num_rows == 6
    assert min(table.column("median_ms").to_pylist()) == 2.0


def test_polars_scan_matches_pyarrow(dataset):
    frame = scan_table(dataset, "measurements").collect()
    table = read_table(dataset, "measurements")
    assert sorted(frame["config_id"].to_list()) == sorted(table.column("config_id").to_pylist())
    assert frame.height == 9


def test_uncommitted_measurements_are_hidden(dataset):
    writer = DatasetWriter(dataset)
    rows = sample_rows(99)
    writer.write("measurements", rows["measurements"])  # no runs row: crashed before commit
    assert read_table(dataset, "measurements").num_rows == 9
    assert read_table(dataset, "measurements", committed_only=False).num_rows == 12
    assert scan_table(dataset, "measurements").collect().height == 9
    writer.commit_run(rows["runs"])
    assert read_table(dataset, "measurements").num_rows == 12


def test_content_keyed_copies_are_deduplicated(dataset):
    writer = DatasetWriter(dataset)
    writer.write("ir_graphs", sample_rows(0)["ir_graphs"])
    assert read_table(dataset, "ir_graphs").num_rows == 3
    assert read_table(dataset, "ir_graphs", columns=["num_nodes"]).num_rows == 3
    assert scan_table(dataset, "ir_graphs").collect().height == 3


def test_content_keyed_ir_copies_that_differ_are_refused_not_deduplicated(dataset):
    """The gap: a foreign ir_nodes file with a stored ir_id and other node features was read
    as whichever copy came first by path; both readers now refuse the table, naming the key."""
    from schemas import ConflictingCopiesError

    DatasetWriter(dataset).write("ir_nodes", [{**row, "op_name": "tt.store"} for row in sample_rows(1)["ir_nodes"]])
    pattern = "ir_nodes: 2 copy.*op_name.*ir_id=ir00000000000001"
    with pytest.raises(ConflictingCopiesError, match=pattern):
        read_table(dataset, "ir_nodes")
    with pytest.raises(ConflictingCopiesError, match=pattern):
        read_table(dataset, "ir_nodes", columns=["node_id"], filters=[("level", "=", "ttir")])
    with pytest.raises(ConflictingCopiesError, match=pattern):
        scan_table(dataset, "ir_nodes").collect()


def test_content_keyed_ir_copies_that_differ_in_a_list_column_are_refused(dataset):
    """The gap: list columns (a node's shape, its layout's warps_per_cta) were left out of the
    comparison of copies, so a copy with another shape was taken for the same row and both
    readers read whichever copy came first by path. Copies that agree in them are still read once."""
    from schemas import ConflictingCopiesError

    writer = DatasetWriter(dataset)
    shaped = [{**row, "shape": [1, 1024], "warps_per_cta": [4, 1]} for row in sample_rows(5)["ir_nodes"]]
    writer.write("ir_nodes", shaped)
    writer.write("ir_nodes", shaped)  # the same rows again: a retried write
    assert read_table(dataset, "ir_nodes").num_rows == 8  # the dataset's 6 and these 2
    writer.write("ir_nodes", [{**row, "shape": [2, 2048]} for row in shaped])
    pattern = "ir_nodes: 2 copy.*shape.*ir_id=ir00000000000005"
    with pytest.raises(ConflictingCopiesError, match=pattern):
        read_table(dataset, "ir_nodes")
    with pytest.raises(ConflictingCopiesError, match=pattern):
        read_table(dataset, "ir_nodes", columns=["node_id"])
    with pytest.raises(ConflictingCopiesError, match=pattern):
        scan_table(dataset, "ir_nodes").collect()


def test_list_values_compare_equal_only_when_equal_whatever_their_layout():
    """The string form copies of a list column are compared by: null, [], [None] and [0] are
    four values; a value reads the same from a slice, another chunking, a large_list or a
    list_view (other writers' representations), as rows of a file read in batches come."""
    from schemas.keys import value_strings

    values = pa.array([[1, 2], [], None, [None], [0], [12]], pa.list_(pa.int64()))
    whole = value_strings(values).to_pylist()
    assert len(set(whole)) == len(whole)
    assert value_strings(values.slice(2, 3)).to_pylist() == whole[2:5]
    assert value_strings(pa.chunked_array([values.slice(3), values.slice(0, 3)])).to_pylist() == whole[3:] + whole[:3]
    assert value_strings(values.cast(pa.large_list(pa.int64()))).to_pylist() == whole
    assert value_strings(pa.array(values.to_pylist(), pa.list_view(pa.int64()))).to_pylist() == whole
    nested = pa.array([[[1, 2]], [[1], [2]], [[]], []], pa.list_(pa.list_(pa.int64())))
    assert len(set(value_strings(nested).to_pylist())) == 4


def test_content_keyed_ir_copies_differing_only_in_locations_are_deduplicated(dataset):
    """Copies compiled from another path or line: the same IR (ir_id hashes it without source
    locations), read once; the check of the copies is remembered for the file set."""
    writer = DatasetWriter(dataset)
    writer.write("ir_nodes", [{**row, "loc_line": 9, "var_name": "y"} for row in sample_rows(1)["ir_nodes"]])
    writer.write("ir_nodes", sample_rows(2)["ir_nodes"])  # a retried write
    for _ in range(2):
        assert read_table(dataset, "ir_nodes").num_rows == 6
        assert read_table(dataset, "ir_nodes", columns=["node_id"]).num_rows == 6
        assert scan_table(dataset, "ir_nodes").collect().height == 6


def test_missing_table_is_a_clear_error(tmp_path):
    with pytest.raises(DatasetError, match="table directory 'runs' not found"):
        read_table(str(tmp_path), "runs")
    with pytest.raises(KeyError, match="unknown table 'run'"):
        read_table(str(tmp_path), "run")


@pytest.mark.parametrize(
    ("given", "says"),
    [
        # the path a plain Parquet reader takes: the reader wants the root and the table's name
        ("ds/measurements", "ds/measurements is the 'measurements' table's directory: pass the dataset root, 'ds'"),
        ("ds/measurements/arch=sm_90", "is a partition of the 'measurements' table: pass the dataset root, 'ds'"),
        ("file://{tmp}/ds/runs", "is the 'runs' table's directory: pass the dataset root, 'file://{tmp}/ds'"),
        ("no-such-ds", "({tmp}/no-such-ds does not exist)"),
        ("ds/measurements/arch=sm_90/{part}", "is a file, not a dataset directory)"),
    ],
)
def test_a_path_that_is_no_dataset_root_says_what_it_is(dataset, tmp_path, monkeypatch, given, says):
    monkeypatch.chdir(tmp_path)  # relative paths, as a consumer types them
    part = next(Path(dataset, "measurements", "arch=sm_90").glob("part-*.parquet")).name
    given, says = (text.format(tmp=tmp_path, part=part) for text in (given, says))
    for read in (read_table, lambda url, table: scan_table(url, table).collect()):
        with pytest.raises(DatasetError) as caught:
            read(given, "measurements")
        assert "table directory 'runs' not found" in str(caught.value)
        assert says in str(caught.value)


def test_a_pathlib_path_reads_as_its_string(dataset):
    # pyarrow and polars take a pathlib.Path; the reader raised "argument of type 'PosixPath'
    # is not iterable" on one.
    root = Path(dataset)
    assert read_table(root, "measurements").equals(read_table(dataset, "measurements"))
    assert scan_table(root, "measurements").collect().equals(scan_table(dataset, "measurements").collect())
    assert read_table(root, "runs", harvests="latest").num_rows == 3
    assert committed_runs(root).num_rows == 3
    assert check_dataset(root).ok


def test_an_http_root_is_not_called_a_file(dataset):
    # Over HTTP every path that answers is a "file" to fsspec, a dataset's directory too.
    pytest.importorskip("aiohttp")  # fsspec's HTTP backend
    import functools
    import http.server
    import threading

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=dataset)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(DatasetError) as caught:
            read_table(f"http://127.0.0.1:{server.server_address[1]}", "runs")
    finally:
        server.shutdown()
        server.server_close()
    assert "table directory 'runs' not found" in str(caught.value)
    assert "is a file" not in str(caught.value)


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        ({"columns": ["median"]}, "measurements has no column 'median'"),
        ({"filters": [("stat", "=", "ok")]}, "measurements has no column 'stat'"),
        ({"filters": [[("status", "=", "ok")], [("bogus", "=", 1)]]}, "no column 'bogus'"),
        ({"filters": [("median_ms", ">", "3")]}, "cannot read the columns or filters asked for .*the files are sound"),
    ],
    ids=["column", "filter", "dnf-filter", "filter-type"],
)
def test_a_request_that_does_not_fit_the_table_is_no_corrupt_file(dataset, request_, message):
    with pytest.raises(ReadRequestError, match=message) as raised:
        read_table(dataset, "measurements", **request_)
    assert not isinstance(raised.value, CorruptFileError) and isinstance(raised.value, ValueError)


def test_truncated_file_is_named(dataset):
    victim = sorted(Path(dataset, "measurements").rglob("*.parquet"))[0]
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    with pytest.raises(CorruptFileError, match=victim.name):
        read_table(dataset, "measurements")


def _write_versioned(path: Path, table: pa.Table, name: str, version: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    metadata = {META_VERSION: str(version).encode(), META_TABLE: name.encode()}
    pq.write_table(table.replace_schema_metadata(metadata), path)


def test_newer_schema_version_is_refused_naming_file(dataset):
    newer = Path(dataset, "kernels", "part-future.parquet")
    table = pa.table({"schema_version": pa.array([SCHEMA_VERSION + 1], pa.int32()), "kernel_id": ["k9"]})
    _write_versioned(newer, table, "kernels", SCHEMA_VERSION + 1)
    with pytest.raises(SchemaVersionError) as error:
        read_table(dataset, "kernels")
    message = str(error.value)
    assert "part-future.parquet" in message and f"schema_version {SCHEMA_VERSION + 1}" in message
    assert f"..{SCHEMA_VERSION})" in message


def test_older_version_goes_through_registered_migration(dataset, monkeypatch):
    """A synthetic version-0 kernels file that called `family` `name`, lifted by a migration
    (then by the real 1 -> 2 one)."""
    monkeypatch.setitem(
        FROZEN, 0, {"kernels": (("schema_version", pa.int32(), False), ("kernel_id", pa.string(), False), ("name", pa.string()), ("entry_name", pa.string()))}
    )
    old = Path(dataset, "kernels", "part-old.parquet")
    table = pa.table({"schema_version": pa.array([0], pa.int32()), "kernel_id": ["k0"], "name": ["legacy"], "entry_name": ["e"]})
    _write_versioned(old, table, "kernels", 0)
    with pytest.raises(SchemaVersionError, match="no migration"):
        read_table(dataset, "kernels")

    def rename_name_to_family(t: pa.Table) -> pa.Table:
        return t.rename_columns(["family" if c == "name" else c for c in t.column_names])

    monkeypatch.setitem(MIGRATIONS, ("kernels", 0), rename_name_to_family)
    kernels = read_table(dataset, "kernels")
    row = next(r for r in kernels.to_pylist() if r["kernel_id"] == "k0")
    assert row["family"] == "legacy"
    assert row["schema_version"] == SCHEMA_VERSION
    assert scan_table(dataset, "kernels").collect().filter(family="legacy").height == 1


def _measurement_files_of(dataset: str, run_id: str) -> list[Path]:
    files = sorted(Path(dataset, "measurements").rglob("*.parquet"))
    return [f for f in files if run_id in pq.read_table(f, columns=["run_id"]).column("run_id").to_pylist()]


def test_a_committed_run_that_lost_its_rows_is_refused_by_readers_and_check(dataset):
    """A measurement file deleted after its run committed: readers used to return the other
    runs' rows as if the dataset were whole (check said n_configs differs)."""
    read_table(dataset, "measurements")  # a verdict on the whole dataset, remembered
    (victim,) = _measurement_files_of(dataset, "run0000000000001")
    victim.unlink()
    with pytest.raises(IncompleteRunError, match=r"run_id=run0000000000001 \(harvest h0\) has 0 of 3"):
        read_table(dataset, "measurements", columns=["median_ms"], filters=[("status", "=", "ok")])
    with pytest.raises(IncompleteRunError):
        scan_table(dataset, "measurements").collect()
    assert read_table(dataset, "measurements", committed_only=False).num_rows == 6  # the raw rows
    problems = check_dataset(dataset).problems
    assert any("run_id=run0000000000001 (harvest h0) has 0 of 3" in p for p in problems), problems


def test_a_run_that_lost_one_of_its_two_files_is_refused(dataset):
    """A run whose rows span two files (two flushes) loses one of them."""
    writer = DatasetWriter(dataset)
    rows = sample_rows(5)
    writer.write("measurements", rows["measurements"][:2])
    writer.write("measurements", rows["measurements"][2:])
    writer.commit_run(rows["runs"])
    assert read_table(dataset, "measurements").num_rows == 12
    assert scan_table(dataset, "measurements").collect().height == 12
    _measurement_files_of(dataset, "run0000000000005")[-1].unlink()  # one of its two files
    with pytest.raises(IncompleteRunError, match="has 2 of 3"):
        read_table(dataset, "measurements")


def test_a_scan_leaves_the_commit_join_out_only_when_no_row_can_be_uncommitted(dataset):
    """scan_table skips its semi join when the files hold exactly the committed runs' rows.
    Here a lost file and an uncommitted run balance the count (9 rows, 9 configs committed):
    the scan must still refuse, not return the uncommitted run's rows."""
    writer = DatasetWriter(dataset)
    assert scan_table(dataset, "measurements").collect().height == 9  # every row committed
    writer.write("measurements", sample_rows(6)["measurements"])  # uncommitted: 3 rows
    assert scan_table(dataset, "measurements").collect().height == 9
    assert "run0000000000006" not in scan_table(dataset, "measurements").collect()["run_id"]
    (victim,) = _measurement_files_of(dataset, "run0000000000001")
    victim.unlink()  # 9 rows again, 3 of them uncommitted
    with pytest.raises(IncompleteRunError, match="has 0 of 3"):
        scan_table(dataset, "measurements").filter(pl.col("run_id") == "run0000000000006").collect()


def test_a_scan_filtered_to_nothing_still_refuses_a_run_that_lost_its_rows(dataset):
    """The lazy checks ran on the first batch, so a filter that left no row skipped them: a
    scan for the rows of a run whose file was lost returned an empty frame without a word
    (read_table with the same filter raises), and so did any filter the lost rows would match."""
    (victim,) = _measurement_files_of(dataset, "run0000000000001")
    victim.unlink()
    with pytest.raises(IncompleteRunError, match="run0000000000001"):
        read_table(dataset, "measurements", filters=[("run_id", "=", "run0000000000001")])
    frame = scan_table(dataset, "measurements")
    with pytest.raises(IncompleteRunError, match="run0000000000001"):
        frame.filter(pl.col("run_id") == "run0000000000001").collect()
    with pytest.raises(IncompleteRunError):
        frame.filter(pl.col("median_ms") > 100).collect(engine="streaming")
    with pytest.raises(IncompleteRunError):
        frame.filter(pl.col("run_id") == "no such run").select(pl.len()).collect()
    assert frame.head(0).collect().height == 0  # no row asked for: nothing to refuse


def test_a_scan_of_measurement_files_holding_no_row_refuses_the_committed_runs(dataset):
    """Every measurement file replaced by one with no row: polars scanned nothing, called no
    function, and the scan returned an empty table for three committed runs."""
    files = sorted(Path(dataset, "measurements").rglob("*.parquet"))
    pq.write_table(pq.read_table(files[0]).slice(0, 0), files[0].with_name("part-empty.parquet"))
    for path in files:
        path.unlink()
    with pytest.raises(IncompleteRunError, match="3 committed run"):
        scan_table(dataset, "measurements").collect()


def test_a_scan_filtered_to_nothing_still_refuses_repeated_keys(dataset):
    DatasetWriter(dataset).write("measurements", sample_rows(0)["measurements"])  # a repeat lands
    with pytest.raises(RepeatedKeyError, match=r"check DIR` names the files and `--fix` drops"):
        scan_table(dataset, "measurements").filter(pl.col("median_ms") > 100).collect()


# -- the key check runs once per set of files -------------------------------------------------


@pytest.fixture
def counted_checks(monkeypatch, tmp_path):
    """Count the key checks (reads of a table's keys to check them); verdicts in a private
    cache."""
    from schemas import reader, verdicts

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    verdicts.forget_all()
    calls: list[str] = []
    real = reader.distinct_by_hash

    def counting(table, key):
        calls.append(",".join(key))
        return real(table, key)

    monkeypatch.setattr(reader, "distinct_by_hash", counting)
    yield calls
    verdicts.forget_all()


def test_keys_are_checked_once_per_file_set(dataset, counted_checks, tmp_path):
    from schemas import verdicts

    read_table(dataset, "measurements", committed_only=False)
    assert counted_checks == ["run_id,harvest_id,config_id"]
    read_table(dataset, "measurements", columns=["median_ms"], filters=[("status", "=", "ok")], committed_only=False)
    scan_table(dataset, "measurements", committed_only=False).collect()
    assert len(counted_checks) == 1  # remembered for this set of files
    verdicts.forget_all()  # a new process: the verdict is in the user cache
    read_table(dataset, "measurements", committed_only=False)
    assert len(counted_checks) == 1 and list((tmp_path / "cache" / "kernel-corpus" / "verified").iterdir())
    DatasetWriter(dataset).write("measurements", sample_rows(0)["measurements"])  # a repeat lands
    with pytest.raises(RepeatedKeyError):
        read_table(dataset, "measurements", committed_only=False)  # a new file set: checked again
    assert len(counted_checks) == 2


def test_a_file_rewritten_keeping_its_name_size_and_mtime_is_checked_again(dataset, counted_checks):
    """A data file overwritten in place by rows of the same size, its mtime set back (`cp -p`
    of a same-size file over it, an edit then `touch -r`): path, size and mtime were the file
    set's identity, so the verdict remembered for the old rows was served and the new rows'
    repeated key read without a word, in this process and the next."""
    from schemas import verdicts

    (victim,) = _measurement_files_of(dataset, "run0000000000001")
    make_room(victim)
    assert read_table(dataset, "measurements").num_rows == 9  # sound, remembered
    rows = pq.read_table(victim)
    doubled = pa.concat_tables([rows.slice(0, 1), rows.slice(0, 1), rows.slice(2)])  # 3 rows, 2 keys
    rewrite_keeping_size_and_mtime(victim, doubled)
    with pytest.raises(RepeatedKeyError, match="run0000000000001"):
        read_table(dataset, "measurements")
    verdicts.forget_all()  # a new process: only the user cache's verdict
    with pytest.raises(RepeatedKeyError, match="run0000000000001"):
        scan_table(dataset, "measurements").collect()


def test_an_object_written_over_at_the_same_size_is_checked_again(tmp_path, counted_checks):
    """On an fsspec store pyarrow reports no mtime (its wrapper passes on only an ``mtime``
    entry, which S3, GCS and the memory store do not have), so a file set was known by paths
    and sizes alone: an object uploaded again at the same size, now with a repeated key, was
    read on the remembered verdict without a word."""
    import uuid

    import fsspec

    url = f"memory://same-size-{uuid.uuid4().hex}"
    writer = DatasetWriter(url)
    for index in range(3):
        write_run(writer, index)
    store = fsspec.filesystem("memory")
    remote = next(p for p in store.find(url.removeprefix("memory://") + "/measurements") if "part-" in p)
    local = tmp_path / Path(remote).name
    local.write_bytes(store.cat_file(remote))
    make_room(local)
    store.pipe_file(remote, local.read_bytes())
    rows = read_table(url, "measurements")  # sound, remembered
    assert rows.num_rows == 9
    mine = pq.read_table(local)
    rewrite_keeping_size_and_mtime(local, pa.concat_tables([mine.slice(0, 1), mine.slice(0, 1), mine.slice(2)]))
    store.pipe_file(remote, local.read_bytes())  # the same path and size, other rows
    with pytest.raises(RepeatedKeyError):
        read_table(url, "measurements")


def test_scan_table_checks_keys_when_collected_not_when_made(dataset, counted_checks):
    frame = scan_table(dataset, "measurements", committed_only=False)
    assert counted_checks == []
    assert frame.select("config_id").collect().height == 9
    assert frame.collect().height == 9
    assert counted_checks == ["run_id,harvest_id,config_id"]


def test_check_never_relies_on_a_remembered_verdict(dataset, counted_checks):
    read_table(dataset, "runs")
    victim = sorted(Path(dataset, "runs", "arch=sm_90").glob("*.parquet"))[0]
    twin = victim.with_name("part-copy.parquet")
    twin.write_bytes(victim.read_bytes())
    assert any("runs: 1 row(s) repeat a key" in p for p in check_dataset(dataset).problems)


def test_a_data_file_that_became_a_broken_link_is_refused_not_skipped(dataset, tmp_path):
    """A table entry linked to a file that was moved away: the listing used to skip it as no
    file at all, hiding its rows (check said OK)."""
    victim = sorted(Path(dataset, "runs", "arch=sm_90").glob("*.parquet"))[0]
    victim.unlink()
    victim.symlink_to(tmp_path / "moved-away.parquet")
    with pytest.raises(CorruptFileError, match="symbolic link whose target is gone"):
        read_table(dataset, "runs")
    with pytest.raises(CorruptFileError):
        scan_table(dataset, "measurements").collect()
    problems = check_dataset(dataset).problems
    assert any(victim.name in p and "not a file" in p for p in problems), problems


def test_a_broken_link_beside_the_data_is_a_stray(dataset, tmp_path):
    (Path(dataset, "runs") / "notes.txt").symlink_to(tmp_path / "gone.txt")
    assert any("notes.txt" in p for p in check_dataset(dataset).problems)


def test_a_flipped_bit_inside_a_page_is_refused_not_read(dataset):
    """Storage damage that still decompresses (found for some bit of the ``median_ms`` page's
    data): a reader without page checksums returns other latencies without a word."""
    victim = sorted(Path(dataset, "measurements").rglob("*.parquet"))[0]
    original = victim.read_bytes()
    group = pq.ParquetFile(victim).metadata.row_group(0)
    (chunk,) = [group.column(i) for i in range(group.num_columns) if group.column(i).path_in_schema == "median_ms"]
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    # from the chunk's end: the page's data, which its checksum covers (its header is not)
    for offset in reversed(range(start, start + chunk.total_compressed_size)):
        damaged = bytearray(original)
        damaged[offset] ^= 0x10
        victim.write_bytes(bytes(damaged))
        try:
            unchecked = pq.read_table(victim, columns=["median_ms"]).column("median_ms").to_pylist()
        except (OSError, pa.ArrowException):
            continue  # the decompressor noticed this one anyway
        if unchecked != pq.read_table(pa.BufferReader(original), columns=["median_ms"]).column("median_ms").to_pylist():
            break
    else:
        pytest.fail("no flip went through unnoticed without checksums: nothing to test here")
    with pytest.raises(CorruptFileError, match=victim.name):
        read_table(dataset, "measurements", columns=["median_ms"], committed_only=False)
    assert any(victim.name in p for p in check_dataset(dataset).problems)


def _patch_footer(path: Path, old: bytes, new: bytes, *, takes: Callable[[pq.FileMetaData], bool]) -> None:
    """Rewrite the first occurrence of ``old`` in the footer of ``path`` (Thrift compact
    encoding) to ``new`` after which ``takes(footer)`` holds: a footer that disagrees with the
    data it describes, as a bit flip or another writer would leave it (no checksum covers it)."""
    original = path.read_bytes()
    start = len(original) - 8 - int.from_bytes(original[-8:-4], "little")
    offset = original.find(old, start)
    while offset >= 0:
        path.write_bytes(original[:offset] + new + original[offset + len(old):])
        try:
            if takes(pq.ParquetFile(path).metadata):
                return
        except (OSError, pa.ArrowException):
            pass
        offset = original.find(old, offset + 1)
    pytest.fail(f"no {old!r} in the footer of {path.name} whose change gives the footer wanted")


def _understate_file_rows(path: Path) -> None:
    """FileMetaData.num_rows (field 3, an i64: 0x16, zigzag varint) one less than the rows
    its row groups hold."""
    rows = pq.ParquetFile(path).metadata.num_rows
    _patch_footer(path, bytes([0x16, rows * 2]), bytes([0x16, rows * 2 - 2]), takes=lambda m: m.num_rows == rows - 1)


def _understate_group_rows(path: Path) -> None:
    """The first row group's num_rows one less than its column chunks' values."""
    rows = pq.ParquetFile(path).metadata.num_rows
    _patch_footer(
        path,
        bytes([0x16, rows * 2]),
        bytes([0x16, rows * 2 - 2]),
        takes=lambda m: m.num_rows == rows and m.row_group(0).num_rows == rows - 1,
    )


@pytest.mark.parametrize("understate", [_understate_file_rows, _understate_group_rows], ids=["file", "row-group"])
def test_a_footer_that_counts_fewer_rows_than_its_data_is_refused(dataset, understate):
    """The gap: scan_table took the footers' row counts for the rows stored, so a file whose
    footer said one row less than it holds let an uncommitted row through (the semi join on
    committed runs was left out as needless); a row group saying one row less made both
    readers drop its last row. Both are footer damage, caught from the footer alone."""
    victim = sorted(Path(dataset, "measurements").rglob("*.parquet"))[0]
    understate(victim)
    for read in (
        lambda: read_table(dataset, "measurements"),
        lambda: read_table(dataset, "measurements", columns=["median_ms"], committed_only=False),
        lambda: scan_table(dataset, "measurements").collect(),
    ):
        with pytest.raises(CorruptFileError, match=f"{victim.name}.*rows"):
            read()
    assert any(victim.name in p and "rows" in p for p in check_dataset(dataset).problems)


def test_footer_statistics_that_do_not_hold_the_data_are_refused(dataset):
    """The gap: a file whose row-group statistics say the status column holds values up to
    'oa' (its data: 'ok') passed `check`, and a read filtered on status == 'ok' skipped the
    row group by those statistics: two committed rows vanished from the filtered read
    without a word. The statistics are now checked against the data before they are trusted."""
    victim = sorted(Path(dataset, "measurements").rglob("*.parquet"))[0]
    group = pq.ParquetFile(victim).metadata.row_group(0)
    status = next(i for i in range(group.num_columns) if group.column(i).path_in_schema == "status")
    _patch_footer(victim, b"\x02ok", b"\x02oa", takes=lambda m: m.row_group(0).column(status).statistics.max == "oa")
    assert pq.read_table(victim, filters=[("status", "=", "ok")]).num_rows == 0  # what a plain read now sees
    problems = [p for p in check_dataset(dataset).problems if victim.name in p]
    assert len(problems) == 1 and "'status'" in problems[0] and "statistics" in problems[0], problems
    pattern = f"{victim.name}.*statistics of column 'status'"
    with pytest.raises(CorruptFileError, match=pattern):
        read_table(dataset, "measurements", filters=[("status", "=", "ok")])
    with pytest.raises(CorruptFileError, match=pattern):
        scan_table(dataset, "measurements").filter(pl.col("status") == "ok").collect()


def _statistics_of(metadata: pq.FileMetaData, column: str, group: int = 0) -> pq.Statistics:
    row_group = metadata.row_group(group)
    return next(
        row_group.column(i).statistics for i in range(row_group.num_columns) if row_group.column(i).path_in_schema == column
    )


def _rewrite_first_row(path: Path, column: str, value: object) -> None:
    """Write ``path`` again as another writer would (pyarrow's defaults, the footer's table and
    version kept) with ``column`` of its first row set to ``value``; the column is stored
    nullable where ``value`` is None (kernel-corpus's writer stores a required column as
    REQUIRED Parquet, so its own files cannot hold a null there; another writer's can)."""
    table = pq.read_table(path)
    index = table.schema.get_field_index(column)
    field = table.schema.field(index).with_nullable(value is None or table.schema.field(index).nullable)
    values = table.column(column).to_pylist()
    values[0] = value
    pq.write_table(table.set_column(index, field, pa.array(values, field.type)), path)


def _hide_the_null(path: Path) -> None:
    """The status statistics' null_count (field 3, an i64 after no min/max fields: 0x36) 1 -> 0."""
    _patch_footer(path, b"\x36\x02", b"\x36\x00", takes=lambda m: _statistics_of(m, "status").null_count == 0)


def _hide_the_other_partition(path: Path) -> None:
    _patch_footer(path, b"sm_80", b"sm_90", takes=lambda m: _statistics_of(m, "arch").min == "sm_90")


def _hide_the_other_version(path: Path) -> None:
    """schema_version's min_value (a 4-byte binary, after the deprecated min the writer also
    stores for signed types) from 1 to the footer's version."""
    version = SCHEMA_VERSION.to_bytes(4, "little")
    _patch_footer(
        path, b"\x04" + (1).to_bytes(4, "little"), b"\x04" + version,
        takes=lambda m: _statistics_of(m, "schema_version").min == SCHEMA_VERSION,
    )


@pytest.mark.parametrize(
    ("column", "value", "forge"),
    [("status", None, _hide_the_null), ("arch", "sm_80", _hide_the_other_partition), ("schema_version", 1, _hide_the_other_version)],
    ids=["null-in-required-column", "row-of-another-partition", "row-of-another-version"],
)
def test_validation_does_not_take_footer_statistics_on_trust(dataset, column, value, forge):
    """The gap: validation reads a file's null counts, partition values and schema_version from
    its footer's statistics, which a foreign writer or a damaged footer can make say what the
    data does not. A file under arch=sm_90/ whose statistics say 0 nulls / arch sm_90 / version
    2 over a first row holding a null status / sm_80 / version 1 passed validation, and
    unfiltered read_table (train's loader among its callers) returned that row without a word,
    while filtered reads and scan_table refused the file. Every gated read now verifies them."""
    victim = sorted(Path(dataset, "measurements", "arch=sm_90").glob("*.parquet"))[0]
    _rewrite_first_row(victim, column, value)
    forge(victim)
    table_files(resolve(dataset), "measurements")  # the footer alone passes: it lies
    pattern = f"{victim.name}.*statistics of column '{column}'"
    for read in (
        lambda: read_table(dataset, "measurements"),
        lambda: read_table(dataset, "measurements", committed_only=False),
        lambda: read_table(dataset, "measurements", columns=["run_id", "config_id", column], harvests="latest"),
        lambda: scan_table(dataset, "measurements").collect(),
    ):
        with pytest.raises(CorruptFileError, match=pattern):
            read()
    assert any(victim.name in p and f"'{column}'" in p for p in check_dataset(dataset).problems)


def test_check_finds_a_lie_in_one_column_of_one_row_group_of_a_later_file(dataset):
    """check verifies a current-version file's statistics against its slice of the rows it
    read for the table (each file read once), so the slices must line up with the files and
    their row groups: the last file listed, rewritten with one row per row group (another
    writer's layout, which alone is no problem), whose footer then says row group 1's status
    values go up to 'oa' (the data: 'ok'), is named for that row group and column only."""
    found = table_files(resolve(dataset), "measurements")
    victim = Path(found.current[-1])
    assert len(found.current) > 1 and victim != Path(found.current[0])
    pq.write_table(pq.read_table(victim), victim, row_group_size=1)
    assert pq.ParquetFile(victim).metadata.num_row_groups == 3
    assert check_dataset(dataset).ok, check_dataset(dataset).problems
    _patch_footer(
        victim, b"\x02ok", b"\x02oa",
        takes=lambda m: _statistics_of(m, "status", group=1).max == "oa" and _statistics_of(m, "status", group=2).max == "ok",
    )
    problems = check_dataset(dataset).problems
    assert len(problems) == 1, problems
    assert victim.name in problems[0] and "row group 1: " in problems[0] and "column 'status'" in problems[0]


def test_check_verifies_the_statistics_of_an_older_version_file(tmp_path, monkeypatch):
    """An older file's rows are lifted to the current schema when check reads the table, so its
    statistics are verified against the file read again as stored; a current-version file
    beside it is verified from the rows already read (not read again)."""
    from schemas import check

    read_again: list[str] = []
    real = check.file_statistics_problems
    monkeypatch.setattr(check, "file_statistics_problems", lambda loc, path: read_again.append(path) or real(loc, path))
    root = tmp_path / "ds"
    shutil.copytree(Path(__file__).parent / "fixtures" / "v1_dataset", root)
    (older,) = Path(root, "measurements").rglob("*.parquet")
    DatasetWriter(str(root)).write("measurements", sample_rows(7)["measurements"])
    found = table_files(resolve(str(root)), "measurements")
    assert list(found.older) == [str(older)] and len(found.current) == 1
    assert check_dataset(str(root)).ok
    _patch_footer(older, b"\x02ok", b"\x02oa", takes=lambda m: _statistics_of(m, "status").max == "oa")
    read_again.clear()
    problems = check_dataset(str(root)).problems
    assert len(problems) == 1 and older.name in problems[0] and "column 'status'" in problems[0], problems
    assert str(older) in read_again and found.current[0] not in read_again  # every v1 file is read again


def test_check_verifies_a_file_changed_since_it_was_listed_from_the_file(dataset, monkeypatch):
    """Files never change once written, but one written over in place (by hand) between check's
    listing and its read of the rows leaves rows that its listed footer does not describe:
    then the statistics are verified against each file read again, which names the lie."""
    from schemas import check

    victim = Path(table_files(resolve(dataset), "measurements").current[-1])
    real = check._read_files

    def written_over_meanwhile(loc, table, found, columns, expression):
        if table == "measurements" and pq.ParquetFile(victim).metadata.num_rows == 3:
            pq.write_table(pq.read_table(victim).slice(0, 2), victim)
            _patch_footer(victim, b"\x02ok", b"\x02oa", takes=lambda m: _statistics_of(m, "status").max == "oa")
        return real(loc, table, found, columns, expression)

    monkeypatch.setattr(check, "_read_files", written_over_meanwhile)
    problems = check_dataset(dataset).problems
    assert any(victim.name in p and "column 'status'" in p for p in problems), problems


def test_a_conflicting_copy_whose_key_statistics_lie_is_refused(dataset):
    """The key check looks for copies with a filter on the repeated keys, which skips row
    groups by the key's statistics: a conflicting copy of ir_id ...01 in a file whose footer
    says its ir_id are all ...09 escaped that comparison. Readers verify the key's statistics
    (a required column's, which validation's verdict covers) before the rows are used; before,
    read_table(columns=...) returned the rows with the copy dropped, and after compact (which
    its replacement check stopped) had remembered "the copies agree", the whole read did too."""
    from schemas.compact import compact

    before = set(Path(dataset, "ir_nodes").rglob("*.parquet"))
    DatasetWriter(dataset).write("ir_nodes", [{**row, "op_name": "tt.store"} for row in sample_rows(1)["ir_nodes"]])
    (victim,) = set(Path(dataset, "ir_nodes").rglob("*.parquet")) - before
    for bound in ("min", "max"):
        _patch_footer(
            victim, b"ir00000000000001", b"ir00000000000009",
            takes=lambda m, bound=bound: getattr(_statistics_of(m, "ir_id"), bound) == "ir00000000000009",
        )
    pattern = f"{victim.name}.*statistics of column 'ir_id'"
    with pytest.raises(DatasetError, match=f"not compacted: .*{pattern}"):
        compact(dataset)  # its key check compared the copies without the lying file's
    assert victim.exists()
    for read in (
        lambda: scan_table(dataset, "ir_nodes").collect(),
        lambda: read_table(dataset, "ir_nodes"),
        lambda: read_table(dataset, "ir_nodes", columns=["node_id"]),
    ):
        with pytest.raises(CorruptFileError, match=pattern):
            read()


def _write_lying_file(dataset: str) -> Path:
    """Another run's measurements (not committed: read with ``committed_only=False``) in a new
    file whose footer says its status values go up to 'oa' (the data: 'ok'): a filter on
    status == 'ok' skips its row group unless the statistics are verified first."""
    before = set(Path(dataset, "measurements").rglob("*.parquet"))
    DatasetWriter(dataset).write("measurements", sample_rows(7)["measurements"])
    (lying,) = set(Path(dataset, "measurements").rglob("*.parquet")) - before
    status = lambda m: _statistics_of(m, "status").max == "oa"  # noqa: E731
    _patch_footer(lying, b"\x02ok", b"\x02oa", takes=status)
    return lying


def test_files_replaced_or_added_after_the_statistics_verdict_are_never_pruned_unverified(dataset, monkeypatch):
    """A filtered read whose file set's statistics verdict is known reads exactly the files of
    that listing. Between the verdict and the read, a compact replaces them all and another
    writer adds a file whose statistics lie: the read meets a vanished file, lists again and
    verifies the new set, refusing the lying file rather than pruning its rows; a file added
    with nothing replaced is not read at all until a later listing, which verifies it first."""
    from schemas import reader
    from schemas.compact import compact

    ok = [("status", "=", "ok")]
    assert read_table(dataset, "measurements", filters=ok, committed_only=False).num_rows == 6  # the verdict is known now
    real_read_files = reader._read_files
    injected: list[Path] = []

    def concurrent(event: Callable[[], None]) -> Callable[..., pa.Table]:
        def read_files(loc, table, found, columns, expression):
            if table == "measurements" and expression is not None and not injected:
                event()
            return real_read_files(loc, table, found, columns, expression)

        return read_files

    monkeypatch.setattr(reader, "_read_files", concurrent(lambda: injected.append(_write_lying_file(dataset))))
    assert read_table(dataset, "measurements", filters=ok, committed_only=False).num_rows == 6  # the listing's files, whole
    (lying,) = injected
    with pytest.raises(CorruptFileError, match=f"{lying.name}.*statistics of column 'status'"):
        read_table(dataset, "measurements", filters=ok, committed_only=False)
    lying.unlink()
    assert read_table(dataset, "measurements", filters=ok, committed_only=False).num_rows == 6
    injected.clear()

    def compact_and_add() -> None:
        compact(dataset)
        injected.append(_write_lying_file(dataset))

    monkeypatch.setattr(reader, "_read_files", concurrent(compact_and_add))
    with pytest.raises(CorruptFileError) as refused:
        read_table(dataset, "measurements", filters=ok, committed_only=False)
    (lying,) = injected
    assert lying.name in str(refused.value) and "statistics of column 'status'" in str(refused.value)
    assert len(list(Path(dataset, "measurements").rglob("*.parquet"))) == 3  # two merged, one lying


def test_a_scan_made_on_a_verified_file_set_reads_only_those_files(dataset):
    """scan_table pushes filters into the scan only for a file set whose statistics verdict
    is known, and the frame holds that set's files open: a compact and a lying file arriving
    before it is collected change nothing it reads; a scan made afterwards verifies the new
    set when collected (filters stay above that check) and refuses the lying file."""
    from schemas.compact import compact

    ok = pl.col("status") == "ok"
    assert scan_table(dataset, "measurements", committed_only=False).filter(ok).collect().height == 6  # verdicts known now
    frame = scan_table(dataset, "measurements", committed_only=False).filter(ok)
    compact(dataset)
    lying = _write_lying_file(dataset)
    assert frame.collect().height == 6
    later = scan_table(dataset, "measurements", committed_only=False).filter(ok)
    with pytest.raises(CorruptFileError, match=f"{lying.name}.*statistics of column 'status'"):
        later.collect()


def test_filtered_reads_do_not_prune_by_a_page_index(dataset):
    """kernel-corpus writes no page index (nor bloom filters), and its statistics check covers
    only the footer's row-group statistics: this pins that pyarrow and polars, in the readers'
    filtered reads, do not skip pages by another writer's page index either. A file written
    with one, whose column index says its status pages hold 'oa' (the data: 'ok'), still gives
    its rows; if an upgrade starts pruning by page indexes, they must be verified too."""
    victim = sorted(Path(dataset, "measurements", "arch=sm_90").glob("*.parquet"))[0]
    table = pq.read_table(victim)
    pq.write_table(table, victim, write_page_index=True, max_rows_per_page=1, use_dictionary=False)
    metadata = pq.ParquetFile(victim).metadata
    assert metadata.row_group(0).column(0).has_column_index
    raw = victim.read_bytes()
    group = metadata.row_group(0)
    data_end = max(group.column(i).data_page_offset + group.column(i).total_compressed_size for i in range(group.num_columns))
    footer = len(raw) - 8 - int.from_bytes(raw[-8:-4], "little")
    index = raw[data_end:footer]  # the column and offset indexes sit between the data and the footer
    assert index.count(b"\x02ok") == 2 * 2  # min and max of the two 'ok' pages
    victim.write_bytes(raw[:data_end] + index.replace(b"\x02ok", b"\x02oa") + raw[footer:])
    assert read_table(dataset, "measurements", filters=[("status", "=", "ok")]).num_rows == 6
    assert scan_table(dataset, "measurements").filter(pl.col("status") == "ok").collect().height == 6


def _flip_a_chunk_type(path: Path) -> None:
    """Flip one footer bit so that the first BYTE_ARRAY column chunk's physical type is no
    type at all (storage damage in the footer, which no checksum covers). In the footer's
    Thrift compact encoding a ColumnChunk's meta_data (field 3, a struct: 0x1c) starts with
    its type (field 1, an i32: 0x15) whose zigzag value BYTE_ARRAY (6) is 0x0c."""
    original = path.read_bytes()
    footer_start = len(original) - 8 - int.from_bytes(original[-8:-4], "little")
    offset = original.index(b"\x1c\x15\x0c", footer_start) + 2
    damaged = bytearray(original)
    damaged[offset] ^= 0x01  # 6 -> -7
    path.write_bytes(bytes(damaged))
    metadata = pq.ParquetFile(path).metadata
    group = metadata.row_group(0)
    assert [group.column(i).physical_type for i in range(group.num_columns)].count("UNKNOWN") == 1


def test_a_footer_whose_chunk_type_was_flipped_is_refused_not_a_crash(dataset):
    """One flipped bit in a footer's column chunk type made pyarrow abort the process (a C++
    exception it does not catch, 'ColumnMetaData type does not match ColumnDescriptor'):
    every reader and `python -m schemas check` died with no word about the file."""
    victim = sorted(Path(dataset, "measurements").rglob("*.parquet"))[0]
    _flip_a_chunk_type(victim)
    script = (
        "import sys\n"
        "from schemas import read_table, scan_table, CorruptFileError\n"
        "for read in (lambda: read_table(sys.argv[1], 'measurements'),\n"
        "             lambda: read_table(sys.argv[1], 'measurements', filters=[('status', '=', 'ok')]),\n"
        "             lambda: scan_table(sys.argv[1], 'measurements').collect()):\n"
        "    try:\n"
        "        read()\n"
        "    except CorruptFileError as exc:\n"
        "        print('refused:', exc)\n"
    )
    env = {**__import__("os").environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    readers = subprocess.run([sys.executable, "-c", script, dataset], capture_output=True, text=True, env=env)
    assert readers.returncode == 0, readers.stderr[-500:]
    assert readers.stdout.count(f"refused: {victim}") == 3, readers.stdout
    check = subprocess.run([sys.executable, "-m", "schemas", "check", dataset], capture_output=True, text=True, env=env)
    assert check.returncode == 1, check.stderr[-500:]
    assert victim.name in check.stdout + check.stderr
