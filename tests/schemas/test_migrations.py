"""Version 1 -> 2: the committed version-1 fixture (written by version-1 code, never rewritten)
reads through every reader path with the derived values right."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from schemas import SCHEMA_VERSION, DatasetWriter, read_table, scan_table
from schemas.check import check_dataset
from schemas.compact import compact_dataset
from schemas.doc import render_schema_doc, table_changes
from schemas.history import declared_schema
from schemas.migrations import LIFTED, oldest_readable, upgrade
from schemas.tables import IR_NODE_INTEGER_ATTRIBUTES, TABLES

V1 = Path(__file__).resolve().parent / "fixtures" / "v1_dataset"


def _raw(table: str) -> pa.Table:
    """The fixture's rows as version 1 stored them (plain pyarrow, no reader)."""
    files = sorted((V1 / table).rglob("*.parquet"))
    assert files and all(
        pq.read_metadata(f).metadata[b"kernel_corpus.schema_version"] == b"1" for f in files
    )
    return pa.concat_tables(pq.read_table(f) for f in files)


def test_every_table_has_a_migration_from_version_1():
    assert SCHEMA_VERSION == 2
    assert all(oldest_readable(name) == 1 for name in TABLES)


@pytest.mark.parametrize("name", list(TABLES))
def test_fixture_reads_at_the_current_version(name):
    table = read_table(str(V1), name)
    assert table.schema.equals(TABLES[name].schema)
    assert set(table.column("schema_version").to_pylist()) == {SCHEMA_VERSION}
    key = list(TABLES[name].key)
    distinct = _raw(name).select(key).group_by(key).aggregate([]).num_rows
    assert table.num_rows == distinct  # one row per key


def test_schema_version_doc_says_what_each_reader_sees():
    # The raw files keep version 1, the reader reports lifted rows at the current version: the
    # field's doc ("this row was written under") sent consumers looking for version-1 rows in
    # the reader's output, where there are none.
    assert set(_raw("runs").column("schema_version").to_pylist()) == {1}
    assert set(read_table(str(V1), "runs").column("schema_version").to_pylist()) == {SCHEMA_VERSION}
    for name, spec in TABLES.items():
        doc = spec.schema.field("schema_version").metadata[b"doc"].decode()
        assert "plain Parquet reader" in doc and "lifts rows of older files to the current version" in doc, name


def test_runs_derived_columns():
    lifted = {r["run_id"]: r for r in read_table(str(V1), "runs").to_pylist()}
    raw = _raw("runs").to_pylist()
    assert len(raw) == len(lifted) == 4
    for old in raw:
        new = lifted[old["run_id"]]
        assert new["arithmetic_intensity"] == pytest.approx(old["flops"] / old["bytes_moved"])
        assert new["ir_target"] == json.loads(old["toolchain_json"])["ir_target"] == "sm_90"
        assert (new["source"], new["timer"], new["timing_passes"]) == ("harvest", "wall", 1)
        assert new["reps_per_pass"] == old["rep"]
        # not derivable without the suite: stay null
        assert (
            new["problem_dims"] is None
            and new["problem_flags"] is None
            and new["host_load_1m"] is None
        )
        assert {k: new[k] for k in old if k != "schema_version"} == {
            k: v for k, v in old.items() if k != "schema_version"
        }


def test_measurements_derived_columns():
    lifted = read_table(str(V1), "measurements").to_pylist()
    assert len(lifted) == 12
    for row in lifted:
        assert row["threads_per_program"] == row["num_warps"] * 32
        assert row["grid"] is None and row["num_programs"] is None and row["config_roles"] is None
        assert row["same_binary_as"] is None and row["binary_hash"] is None


def test_ir_graphs_lose_num_stages_and_ir_nodes_gain_typed_attributes():
    assert "num_stages" in _raw("ir_graphs").column_names
    assert "num_stages" not in read_table(str(V1), "ir_graphs").column_names
    raw = {
        (r["ir_id"], r["node_id"]): r["attrs_json"]
        for r in _raw("ir_nodes").select(["ir_id", "node_id", "attrs_json"]).to_pylist()
    }
    lifted = read_table(str(V1), "ir_nodes").to_pylist()
    seen = 0
    for row in lifted:
        attrs = json.loads(raw[(row["ir_id"], row["node_id"])] or "{}")
        expected = (
            int(attrs["tt.divisibility"].split(":")[0]) if "tt.divisibility" in attrs else None
        )
        assert row["divisibility"] == expected
        seen += expected is not None
    assert seen >= 100  # the fixture's kernels have many 16-divisible arguments


def test_scan_table_lifts_old_files_too():
    for name in ("runs", "measurements", "ir_nodes"):
        frame = scan_table(str(V1), name).collect()
        table = read_table(str(V1), name)
        assert frame.height == table.num_rows and frame.columns == table.column_names
    runs = (
        scan_table(str(V1), "runs").select("run_id", "arithmetic_intensity", "ir_target").collect()
    )
    expected = read_table(str(V1), "runs", columns=["run_id", "arithmetic_intensity", "ir_target"])
    assert runs.sort("run_id").rows() == pl.from_arrow(expected).sort("run_id").rows()
    divisible = (
        scan_table(str(V1), "ir_nodes")
        .filter(pl.col("divisibility") == 16)
        .select(pl.len())
        .collect()
        .item()
    )
    assert (
        divisible
        == read_table(str(V1), "ir_nodes", filters=[("divisibility", "=", 16)]).num_rows
        > 0
    )


def test_check_is_clean_on_the_fixture():
    report = check_dataset(str(V1))
    assert report.ok, report.problems
    assert report.rows["measurements"] == 12


def test_mixed_versions_read_together_and_compact_into_the_current_version(tmp_path):
    root = tmp_path / "mixed"
    shutil.copytree(V1, root)
    writer = DatasetWriter(str(root))
    run = read_table(str(root), "runs").slice(0, 1).to_pylist()[0]
    run |= {
        "harvest_id": "h-v2",
        "timer": "thread_cpu",
        "source": "harvest",
        "n_configs": 0,
        "n_ok": 0,
        "finished_at": datetime(2030, 1, 1, tzinfo=timezone.utc),
    }
    writer.commit_run([run])
    before = read_table(str(root), "runs")
    assert before.num_rows == 5 and before.column("timer").to_pylist().count("thread_cpu") == 1
    assert scan_table(str(root), "runs").collect().height == 5
    compact_dataset(str(root))
    versions = {
        pq.read_metadata(f).metadata[b"kernel_corpus.schema_version"]
        for f in (root / "runs").rglob("*.parquet")
    }
    assert versions == {str(SCHEMA_VERSION).encode()}
    after = read_table(str(root), "runs")
    key = ["run_id", "harvest_id"]
    assert after.sort_by([(k, "ascending") for k in key]).equals(
        before.sort_by([(k, "ascending") for k in key])
    )


def _v1_runs(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=declared_schema("runs", 1))


def test_runs_migration_edge_cases():
    base = {
        "schema_version": 1,
        "run_id": "r",
        "harvest_id": "h",
        "kernel_id": "k",
        "family": "f",
        "device_kind": "cuda",
    }
    table = _v1_runs(
        [
            base
            | {
                "arch": "sm_80",
                "flops": 10,
                "bytes_moved": 0,
                "toolchain_json": '{"triton":"3.6.0"}',
                "rep": 5,
            },
            base | {"arch": "interpreter", "flops": None, "bytes_moved": 4, "toolchain_json": None},
            base
            | {
                "arch": "interpreter",
                "flops": 8,
                "bytes_moved": 4,
                "toolchain_json": '{"ir_target":"sm_80"}',
            },
            base | {"arch": "gfx942", "flops": 0, "bytes_moved": 4, "toolchain_json": "not json"},
        ]
    )
    lifted = upgrade("runs", table, 1).to_pylist()
    intensities = [r["arithmetic_intensity"] for r in lifted]
    assert intensities == [None, None, 2.0, 0.0]  # bytes_moved 0 -> null, not inf
    assert [r["ir_target"] for r in lifted] == ["sm_80", None, "sm_80", None]
    assert [r["reps_per_pass"] for r in lifted] == [5, None, None, None]
    assert {r["schema_version"] for r in lifted} == {2}


def test_ir_nodes_migration_reads_op_specific_attributes():
    rows = [
        ("ttg.async_wait", '{"num":"2 : i32"}', {"num_pending": 2}),
        ("tt.other_op", '{"num":"2 : i32"}', {}),  # a generic name on another op is not read
        ("ttng.warp_group_dot_wait", '{"pendings":"1 : i32"}', {"num_pending": 1}),
        ("scf.for", '{"tt.num_stages":"3 : i32"}', {"loop_num_stages": 3}),
        ("ttg.async_copy_global_to_local", '{"contiguity":"8 : i32"}', {"contiguity": 8}),
        (
            "tt.func",
            '{"tt.contiguity":"1 : i64","tt.divisibility":"16 : i64"}',
            {"contiguity": 1, "divisibility": 16},
        ),
        ("tt.func", None, {}),
    ]
    table = pa.Table.from_pylist(
        [
            {
                "schema_version": 1,
                "ir_id": "i",
                "level": "ttgir",
                "node_id": n,
                "node_kind": "op",
                "op_name": op,
                "attrs_json": attrs,
            }
            for n, (op, attrs, _) in enumerate(rows)
        ],
        schema=declared_schema("ir_nodes", 1),
    )
    lifted = upgrade("ir_nodes", table, 1).to_pylist()
    for row, (_, _, expected) in zip(lifted, rows):
        assert {c: row[c] for c in IR_NODE_INTEGER_ATTRIBUTES} == {
            c: expected.get(c) for c in IR_NODE_INTEGER_ATTRIBUTES
        }


def test_lifted_notes_name_real_new_fields_and_reach_the_doc():
    added = {f"{c.table}.{field}" for c in table_changes(2) for field in c.added}
    assert set(LIFTED[2]) <= added  # a note for a field that is not new would be a lie
    removed = {(c.table, field) for c in table_changes(2) for field in c.removed}
    assert ("ir_graphs", "num_stages") in removed
    doc = render_schema_doc()
    section = doc[doc.index("## Changes from version 1") :]
    for name in added:
        table, field = name.split(".")
        assert f"- added `{field}`" in section[section.index(f"### `{table}`") :]
    assert "- removed `num_stages`" in section


def test_migrations_accept_files_without_optional_columns():
    """A version-1 file may omit nullable columns (other writers); derived ones become null."""
    required = {
        name: [f.name for f in declared_schema(name, 1) if not f.nullable] for name in TABLES
    }
    for name, columns in required.items():
        schema = pa.schema([declared_schema(name, 1).field(c) for c in columns])
        lifted = upgrade(name, schema.empty_table(), 1)
        assert lifted.num_rows == 0 and set(columns) <= set(lifted.column_names)
    runs_schema = pa.schema([declared_schema("runs", 1).field(c) for c in required["runs"]])
    row = {
        "schema_version": 1,
        "run_id": "r",
        "harvest_id": "h",
        "kernel_id": "k",
        "family": "f",
        "device_kind": "cuda",
        "arch": "sm_90",
    }
    (lifted,) = upgrade("runs", pa.Table.from_pylist([row], schema=runs_schema), 1).to_pylist()
    assert (lifted["ir_target"], lifted["arithmetic_intensity"], lifted["reps_per_pass"]) == (
        "sm_90",
        None,
        None,
    )
