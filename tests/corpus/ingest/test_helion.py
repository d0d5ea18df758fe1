"""Importing Helion autotune logs: rows, ids, joins, the device-IR graph, layouts, bad lines."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import networkx as nx
import pyarrow.compute as pc
import pytest

from corpus.ingest.__main__ import main
from corpus.ingest.app import IngestConfig, ingest
from corpus.ingest.helion import parse_config
from corpus.ingest.problems import IngestError
from schemas import read_table
from schemas.check import check_dataset
from schemas.identity import kernel_id

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "helion"
CSV = FIXTURES / "row_sum.csv"


def _ingest(out: Path, log: Path = CSV, **options: object) -> object:
    return ingest(IngestConfig(format="helion", log=log, out=str(out), **options))  # type: ignore[arg-type]


def test_rows_ids_and_joins(tmp_path: Path) -> None:
    out = tmp_path / "d"
    summary = _ingest(out)
    assert (summary.runs, summary.measurements, summary.ir_graphs, summary.kernels) == (2, 7, 2, 1)
    assert summary.problems.total == 0
    checked = check_dataset(str(out))
    assert checked.ok, checked.problems

    runs = {r["source_ref"]: r for r in read_table(str(out), "runs").to_pylist()}
    assert set(runs) == {
        "5f1e0a0b9d6c4e21",
        "a7c3d2e1f0b94c88",
    }  # Helion's own run ids, as provenance
    small = runs["5f1e0a0b9d6c4e21"]
    assert (
        small["run_id"] not in runs and small["source"] == "helion" and small["timer"] == "external"
    )
    assert (small["arch"], small["device_name"], small["sm_count"]) == (
        "sm_90",
        "NVIDIA H100 80GB HBM3",
        132,
    )
    assert small["problem_json"] == '{"arg0.0":1024,"arg0.1":512}' and small["dtype"] == "float32"
    assert small["arg_types"] == ["*fp32"] and small["arg_shapes"] == [[1024, 512]]

    measurements = read_table(str(out), "measurements").to_pylist()
    mine = [m for m in measurements if m["run_id"] == small["run_id"]]
    by_ref = {m["source_ref"]: m for m in mine}
    assert {ref: m["status"] for ref, m in by_ref.items()} == {
        "c0a1": "ok",
        "c0b2": "ok",
        "c0c3": "compile_error",
        "c0d4": "ok",
    }
    assert by_ref["c0b2"]["median_ms"] == pytest.approx(0.0158) and by_ref["c0b2"][
        "compile_time_s"
    ] == pytest.approx(1.35)
    assert by_ref["c0b2"]["launch"].startswith("helion.Config(block_sizes=[64, 128]")
    assert {p["name"]: p["value"] for p in by_ref["c0b2"]["config_params"]} == {
        "block_sizes.0": 64,
        "block_sizes.1": 128,
    }
    assert (by_ref["c0b2"]["num_warps"], by_ref["c0b2"]["num_stages"]) == (8, 2)
    assert small["best_config_id"] == by_ref["c0b2"]["config_id"] and small["n_ok"] == 3
    timeout = [
        m
        for m in measurements
        if m["run_id"] == runs["a7c3d2e1f0b94c88"]["run_id"] and m["source_ref"] == "c0c3"
    ]
    assert timeout[0]["status"] == "timeout"

    source = next(iter(read_table(str(out), "kernels").to_pylist()))
    assert source["kernel_id"] == small["kernel_id"] == kernel_id(source["source"], "row_sum")


def test_device_ir_lands_as_helion_fx(tmp_path: Path) -> None:
    out = tmp_path / "d"
    _ingest(out)
    run = read_table(str(out), "runs").to_pylist()[0]
    graphs = read_table(str(out), "ir_graphs")
    assert set(graphs.column("level").to_pylist()) == {"helion_fx"}
    assert run["device_ir_id"] in graphs.column("ir_id").to_pylist()
    nodes = read_table(
        str(out), "ir_nodes", filters=[("ir_id", "=", run["device_ir_id"])]
    ).to_pylist()
    edges = read_table(
        str(out), "ir_edges", filters=[("ir_id", "=", run["device_ir_id"])]
    ).to_pylist()
    by_name = {n["var_name"]: n for n in nodes}
    loop = by_name["_for_loop"]
    body = [n for n in nodes if n["parent_id"] == loop["node_id"]]
    assert {n["var_name"] for n in body} == {
        "acc_1",
        "x",
        "block_size_1",
        "load",
        "sum_1",
        "add",
        "output",
    }
    assert all(n["depth"] == 2 and n["region_index"] == 0 for n in body) and loop["depth"] == 1
    assert by_name["acc_1"]["node_kind"] == "block_arg" and by_name["acc_1"]["arg_index"] == 0
    assert (
        by_name["sum_1"]["dialect"] == "aten"
        and '"reduction_type":"sum"' in by_name["sum_1"]["attrs_json"]
    )
    assert by_name["x"]["shape"] == [1024, 512] and by_name["x"]["numel"] == 1024 * 512
    region = [e for e in edges if e["kind"] == "region"]
    assert [(e["src"], e["dst"]) for e in region] == [
        (by_name["full"]["node_id"], by_name["acc_1"]["node_id"])
    ]
    graph = nx.MultiDiGraph([(e["src"], e["dst"]) for e in edges if e["kind"] == "data"])
    assert nx.is_directed_acyclic_graph(graph) and graph.number_of_edges() == 10


def test_imports_are_repeatable_and_the_sample_id_layout_reads_the_same(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    _ingest(first)
    _ingest(first)  # a second import: same run ids, a new harvest id
    runs = read_table(str(first), "runs")
    assert (
        len(set(runs.column("run_id").to_pylist())) == 2
        and len(set(runs.column("harvest_id").to_pylist())) == 2
    )

    older = tmp_path / "older" / "row_sum.csv"
    older.parent.mkdir()
    shutil.copy(FIXTURES / "row_sum.meta.jsonl", older.with_suffix(".meta.jsonl"))
    with CSV.open() as source, older.open("w", newline="") as target:
        writer = csv.writer(target)
        writer.writerow(
            [
                "run_id",
                "kernel_id",
                "sample_id",
                "timestamp_s",
                "config_index",
                "generation",
                "status",
                "perf_ms",
                "compile_time_s",
                "decorator",
                "config",
            ]
        )
        for index, row in enumerate(csv.DictReader(source)):
            writer.writerow(
                [
                    row["run_id"],
                    "k",
                    row["config_id"],
                    row["timestamp_s"],
                    index,
                    row["generation"],
                    row["status"],
                    row["perf_ms"],
                    row["compile_time_s"],
                    "",
                    row["config"],
                ]
            )
    _ingest(second, log=older)
    assert sorted(read_table(str(second), "runs").column("run_id").to_pylist()) == sorted(
        set(runs.column("run_id").to_pylist())
    )
    medians = read_table(str(second), "measurements").column("median_ms")
    assert pc.sum(medians).as_py() == pytest.approx(
        pc.sum(read_table(str(first), "measurements").column("median_ms")).as_py() / 2
    )


def _broken_copy(tmp_path: Path) -> Path:
    log = tmp_path / "broken" / "row_sum.csv"
    log.parent.mkdir()
    shutil.copy(FIXTURES / "row_sum.meta.jsonl", log.with_suffix(".meta.jsonl"))
    lines = CSV.read_text().splitlines()
    lines[4] = lines[4].replace(",ok,", ",exploded,")  # unknown status (line 5)
    lines.append("5f1e0a0b9d6c4e21,9.00,c0e5,2,ok")  # too few fields (line 16)
    lines.append(
        'ffffffffffffffff,9.50,c0a1,0,ok,0.5,1.0,"Config(block_sizes=[8], num_stages=1, num_warps=1)"'
    )  # no metadata
    log.write_text("\n".join(lines) + "\n")
    return log


def test_malformed_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    summary = _ingest(tmp_path / "d", log=_broken_copy(tmp_path))
    out = str(tmp_path / "d")
    assert summary.runs == 2 and summary.measurements == 7
    # c0b2's terminal row was refused: only its 'started' row is left, so it never finished
    lost = read_table(out, "measurements", filters=[("source_ref", "=", "c0b2")]).to_pylist()
    assert sorted(m["status"] for m in lost) == ["ok", "runtime_error"]
    assert summary.problems.skipped == {
        "unknown Helion status 'exploded'": 1,
        "5 fields, the header has 8": 1,
        "run_id ffffffffffffffff has no record in row_sum.meta.jsonl": 1,
    }
    assert any(
        example.endswith(":5: unknown Helion status 'exploded'")
        for example in summary.problems.examples
    )


def test_strict_stops_at_the_first_bad_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _broken_copy(tmp_path)
    with pytest.raises(IngestError, match=r"row_sum\.csv:5: unknown Helion status 'exploded'"):
        _ingest(tmp_path / "d", log=log, strict=True)
    assert not (tmp_path / "d").exists()  # the bad line came before any run was written
    assert main(["helion", str(log), "--out", str(tmp_path / "d"), "--strict"]) == 2
    assert "row_sum.csv:5" in capsys.readouterr().err


def test_unknown_header_and_missing_files_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "x.csv"
    log.write_text("when,what\n1,2\n")
    shutil.copy(FIXTURES / "row_sum.meta.jsonl", log.with_suffix(".meta.jsonl"))
    with pytest.raises(
        IngestError,
        match=r"x\.csv:1: unknown Helion CSV header 'when,what'; known layouts: run_id,timestamp_s,config_id",
    ):
        _ingest(tmp_path / "d", log=log)
    assert main(["helion", str(tmp_path / "none.csv"), "--out", str(tmp_path / "d")]) == 2
    assert "no such helion log" in capsys.readouterr().err


def test_cli_prints_the_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "helion",
                str(CSV),
                "--meta",
                str(FIXTURES / "row_sum.meta.jsonl"),
                "--out",
                str(tmp_path / "d"),
            ]
        )
        == 0
    )
    assert (
        "imported 2 run(s), 7 measurement(s), 2 new IR graph(s), 1 new kernel(s)"
        in capsys.readouterr().out
    )


@pytest.mark.parametrize(
    "text,kwargs,warps,stages",
    [
        (
            "Config(block_sizes=[64, 32], num_warps=4, num_stages=3)",
            {"block_sizes.0": 64, "block_sizes.1": 32},
            4,
            3,
        ),
        (
            "helion.Config(block_sizes=[16], indexing='block_ptr', num_stages=1, num_warps=2)",
            {"block_sizes.0": 16, "indexing": "block_ptr"},
            2,
            1,
        ),
    ],
)
def test_parse_config(text: str, kwargs: dict, warps: int, stages: int) -> None:
    config = parse_config(text)
    assert (dict(config.kwargs), config.num_warps, config.num_stages) == (kwargs, warps, stages)
    with pytest.raises(ValueError, match="lacks num_stages"):
        parse_config("Config(block_sizes=[16], num_warps=2)")
