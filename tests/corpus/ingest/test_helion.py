"""Importing Helion autotune logs written by Helion's own code (see helion_log.py): rows, ids,
the device-IR graph, repeated tunings, .sources.csv, bad lines."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from corpus.ingest.__main__ import main
from corpus.ingest.app import IngestConfig, ingest
from corpus.ingest.helion import CODEGEN_SETTINGS, parse_config
from corpus.ingest.helion_graph import op_name
from corpus.ingest.problems import IngestError
from schemas import read_table
from schemas.check import check_dataset
from schemas.identity import kernel_id

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Helion's logs (a, b, c, d of helion_log.py), written once per session in a process of their
    own (Helion on Triton's interpreter, which must be chosen before Triton is imported)."""
    pytest.importorskip("helion", reason="the thirdparty extra (helion) is not installed")
    out = tmp_path_factory.mktemp("helion-logs")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HELION_", "TRITON_INTERPRET"))}
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-m", "tests.corpus.ingest.helion_log", str(out)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    return out


def _ingest(out: Path, log: Path, **options: object):  # type: ignore[no-untyped-def]
    return ingest(IngestConfig(format="helion", log=log, out=str(out), **options))  # type: ignore[arg-type]


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_real_log_imports_with_graphs_device_and_provenance(logs: Path, tmp_path: Path) -> None:
    out = tmp_path / "d"
    summary = _ingest(out, logs / "a.csv")
    # three tunings: the (32, 64) input twice (one Helion run_id), the (16, 128) input once
    assert (summary.runs, summary.ir_graphs, summary.kernels, summary.repeats) == (3, 2, 1, 1)
    assert summary.measurements == 12 and summary.problems.total == 0
    checked = check_dataset(str(out))
    assert checked.ok, checked.problems

    records = _records(logs / "a.meta.jsonl")
    assert all("schema_version" not in r["ir_graph"] for r in records)  # Helion writes none
    runs = read_table(str(out), "runs").to_pylist()
    assert {r["source_ref"] for r in runs} == {r["run_id"] for r in records}  # Helion's ids
    assert len({r["run_id"] for r in runs}) == 2 and len({r["harvest_id"] for r in runs}) == 3  # one per tuning
    assert {(r["device_kind"], r["arch"], r["source"], r["timer"]) for r in runs} == {
        ("interpreter", "interpreter", "helion", "external")
    }  # Helion logged hardware '' (no accelerator): its Triton code ran on the interpreter
    assert all(r["device_ir_id"] for r in runs)
    big = next(r for r in runs if r["problem_json"] == '{"arg0.0":32,"arg0.1":64}')
    assert big["arg_types"] == ["*fp32"] and big["dtype"] == "float32"

    measurements = read_table(str(out), "measurements").to_pylist()
    mine = [m for m in measurements if m["run_id"] == big["run_id"] and m["harvest_id"] == big["harvest_id"]]
    statuses = sorted(m["status"] for m in mine)
    assert statuses == ["compile_error", "compile_error", "ok", "ok"]
    ok = [m for m in mine if m["status"] == "ok"]
    assert {(m["num_warps"], m["num_stages"]) for m in ok} == {(2, 1), (4, 2)}  # Helion's defaults
    assert big["best_config_id"] == min(ok, key=lambda m: m["median_ms"])["config_id"]
    assert all(m["source_ref"] in records[0]["configs"] for m in mine)
    source = read_table(str(out), "kernels").to_pylist()[0]
    assert source["kernel_id"] == big["kernel_id"] == kernel_id(records[0]["kernel_source"], "row_sum")


def test_two_kernels_in_one_log_are_two_kernels_with_their_own_runs(logs: Path, tmp_path: Path) -> None:
    """Helion appends every kernel's tunings to the one log its settings name: each run keeps
    its own kernel, inputs (all tensor arguments, in order) and configs."""
    out = tmp_path / "d"
    summary = _ingest(out, logs / "e.csv", strict=True)
    assert (summary.runs, summary.kernels, summary.measurements) == (3, 2, 10)
    records = {r["run_id"]: r for r in _records(logs / "e.meta.jsonl")}
    runs = read_table(str(out), "runs").to_pylist()
    assert sorted((r["family"], r["dtype"]) for r in runs) == [
        ("row_sum", "float32"), ("scale_add", "float16"), ("scale_add", "float32")
    ]
    half = next(r for r in runs if r["dtype"] == "float16")
    assert half["arg_types"] == ["*fp16", "*fp16"] and half["arg_shapes"] == [[16, 32], [16, 32]]
    assert half["problem_json"] == '{"arg0.0":16,"arg0.1":32,"arg1.0":16,"arg1.1":32}'
    measurements = read_table(str(out), "measurements").to_pylist()
    for run in runs:
        record = records[run["source_ref"]]
        assert run["kernel_id"] == kernel_id(record["kernel_source"], run["family"])
        mine = {m["source_ref"] for m in measurements if m["run_id"] == run["run_id"]}
        assert mine == set(record["configs"])  # each run's configs, none of the other kernel's
    assert check_dataset(str(out)).ok


def test_device_ir_is_imported_with_normalized_op_names(logs: Path, tmp_path: Path) -> None:
    out = tmp_path / "d"
    _ingest(out, logs / "a.csv")
    run = read_table(str(out), "runs").to_pylist()[0]
    nodes = read_table(str(out), "ir_nodes", filters=[("ir_id", "=", run["device_ir_id"])]).to_pylist()
    edges = read_table(str(out), "ir_edges", filters=[("ir_id", "=", run["device_ir_id"])]).to_pylist()
    ops = {n["op_name"] for n in nodes if n["node_kind"] == "op"}
    assert {"aten.sum.dim_IntList", "aten.add.Tensor", "helion.language.memory_ops.load"} <= ops
    assert not any("::" in op for op in ops)
    by_name = {n["var_name"]: n for n in nodes if n["op_name"] != "aten.add.Tensor"}
    loop = by_name["_for_loop"]
    body = [n for n in nodes if n["parent_id"] == loop["node_id"]]
    assert body and all(n["depth"] == 2 for n in body) and loop["depth"] == 1
    assert by_name["sum_1"]["dialect"] == "aten"
    assert '"reduction_type":"sum"' in by_name["sum_1"]["attrs_json"]
    assert any(e["kind"] == "region" for e in edges)


def test_op_name() -> None:
    assert op_name("torch._ops.aten.aten::sum.dim_IntList") == "aten.sum.dim_IntList"
    assert op_name("torch._ops.prims.prims::iota.default") == "prims.iota.default"
    assert op_name("helion.language.memory_ops.load") == "helion.language.memory_ops.load"


def test_the_same_thing_logged_twice_has_one_run_id(logs: Path, tmp_path: Path) -> None:
    """b is a's first tuning again, logged to another path with another seed: Helion's settings
    differ in the log path, the seed and function reprs, never in what run_id hashes."""
    first, again = _records(logs / "a.meta.jsonl")[0], _records(logs / "b.meta.jsonl")[0]
    differing = {k for k in first["settings"] if first["settings"][k] != again["settings"].get(k)}
    assert {"autotune_log", "autotune_random_seed"} <= differing
    assert not differing & set(CODEGEN_SETTINGS)
    out = tmp_path / "d"
    _ingest(out, logs / "a.csv")
    _ingest(out, logs / "b.csv")
    runs = read_table(str(out), "runs").to_pylist()
    assert len(runs) == 4 and len({r["run_id"] for r in runs}) == 2
    signature = json.loads(runs[0]["signature_json"])
    assert "autotune_log" not in json.dumps(signature) and str(logs) not in runs[0]["signature_json"]
    assert set(signature["codegen_settings"]) == set(CODEGEN_SETTINGS)


def test_importing_a_log_again_writes_only_what_was_appended(logs: Path, tmp_path: Path) -> None:
    """Helion appends to its log: importing it after each tuning must not write the earlier
    tunings again (each tuning's harvest_id is derived from what the log says of it)."""
    lines = (logs / "a.csv").read_text().splitlines(keepends=True)
    records = (logs / "a.meta.jsonl").read_text().splitlines(keepends=True)
    per_tuning, rest = divmod(len(lines) - 1, len(records))  # three tunings, four configs each
    assert rest == 0
    early = tmp_path / "early"
    early.mkdir()
    (early / "a.csv").write_text("".join(lines[: 1 + per_tuning]))  # the log after its first tuning
    (early / "a.meta.jsonl").write_text(records[0])
    out = tmp_path / "d"
    assert _ingest(out, early / "a.csv").runs == 1
    later = _ingest(out, logs / "a.csv")
    assert (later.runs, later.measurements, later.already_imported) == (2, 8, 1)
    again = _ingest(out, logs / "a.csv")
    assert (again.runs, again.already_imported) == (0, 3)
    assert "3 run(s) already imported" in " ".join(again.lines(str(out)))
    assert read_table(str(out), "runs").num_rows == 3 and read_table(str(out), "measurements").num_rows == 12
    checked = check_dataset(str(out))
    assert checked.ok, checked.problems


@pytest.mark.parametrize("truncated_first", [True, False], ids=["truncated-first", "complete-first"])
def test_a_log_without_its_first_tuning_imports_no_tuning_twice(
    logs: Path, tmp_path: Path, truncated_first: bool
) -> None:
    """A copy of Helion's log that lost its first tuning (Helion's header kept: the log trimmed
    to its recent tunings, or Helion's new file after the old one was moved away) and the
    complete log, imported in either order. The gap: a tuning's id counted all tunings of its
    run before it, so the copy's second tuning of the (32, 64) run was "the first" there and its
    four configs were imported twice (under two harvest_ids)."""
    lines = (logs / "a.csv").read_text().splitlines(keepends=True)
    per_tuning = (len(lines) - 1) // 3  # three tunings, four configs each
    trimmed = tmp_path / "trimmed"
    trimmed.mkdir()
    (trimmed / "a.csv").write_text(lines[0] + "".join(lines[1 + per_tuning :]))
    shutil.copy(logs / "a.meta.jsonl", trimmed / "a.meta.jsonl")
    out = tmp_path / "d"
    order = [trimmed / "a.csv", logs / "a.csv"]
    for log in order if truncated_first else order[::-1]:
        _ingest(out, log)
    runs = read_table(str(out), "runs").num_rows
    measured = read_table(str(out), "measurements", columns=["config_id", "median_ms", "source_ref"])
    assert runs == 3 and measured.num_rows == 12  # the complete log's, each once
    checked = check_dataset(str(out))
    assert checked.ok, checked.problems


def test_configs_helion_told_apart_by_its_defaults_alone_are_one_row(logs: Path, tmp_path: Path) -> None:
    """The found defect: Helion logs a config with its defaults written out (``num_warps=4``,
    ``num_stages=1``) under another config id than the same config without them, and times
    each; both are one ``config_id`` to the dataset, so the import wrote one key three times and
    readers refused the whole dataset (check --fix could not repair: the timings differ). The
    first of a tuning's configs with one config_id is kept, the others counted."""
    helion_ids = {line.split(",")[2] for line in (logs / "d.csv").read_text().splitlines()[1:]}
    assert len(helion_ids) == 3  # Helion's own log: three configs
    out = tmp_path / "d"
    summary = _ingest(out, logs / "d.csv")
    kept = read_table(str(out), "measurements").to_pylist()  # was RepeatedKeyError
    assert (summary.runs, summary.measurements, summary.twins) == (1, 1, 2)
    assert "2 config(s) of a tuning left out" in " ".join(summary.lines(str(out)))
    assert [(m["num_warps"], m["num_stages"]) for m in kept] == [(4, 1)]
    first = (logs / "d.csv").read_text().splitlines()[1].split(",")[2]
    assert kept[0]["source_ref"] == first  # the first one Helion logged
    assert read_table(str(out), "runs").column("n_configs").to_pylist() == [1]
    checked = check_dataset(str(out))
    assert checked.ok, checked.problems
    assert _ingest(out, logs / "d.csv").already_imported == 1


def test_sources_csv_links_deduplicated_configs(logs: Path, tmp_path: Path) -> None:
    out = tmp_path / "d"
    summary = _ingest(out, logs / "c.csv")
    assert (summary.runs, summary.measurements, summary.problems.total) == (1, 3, 0)
    run = read_table(str(out), "runs").to_pylist()[0]
    assert (run["device_kind"], run["device_name"], run["arch"]) == ("cuda", "NVIDIA H100", "unknown")
    rows = {m["launch"]: m for m in read_table(str(out), "measurements").to_pylist()}
    timed = rows["helion.Config(block_sizes=[8, 8])"]
    twin = rows["helion.Config(block_sizes=[16, 8])"]
    other = rows["helion.Config(block_sizes=[32, 8])"]
    assert twin["same_binary_as"] == timed["config_id"] and twin["median_ms"] == timed["median_ms"] == 0.5
    assert twin["status"] == "ok" and other["same_binary_as"] is None
    assert check_dataset(str(out)).ok


def _broken_copy(logs: Path, tmp_path: Path) -> Path:
    log = tmp_path / "broken" / "a.csv"
    log.parent.mkdir()
    shutil.copy(logs / "a.meta.jsonl", log.with_suffix(".meta.jsonl"))
    lines = (logs / "a.csv").read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if ",ok," in line)
    lines[index] = lines[index].replace(",ok,", ",exploded,")  # unknown status
    lines.append(lines[1].split(",")[0] + ",9.00,c0e5,2,ok")  # too few fields
    lines.append('ffff,9.50,c0a1,0,ok,0.5,1.0,"Config(block_sizes=[8], num_warps=1)"')  # no record
    log.write_text("\n".join(lines) + "\n")
    return log


def test_malformed_lines_are_skipped_and_counted(logs: Path, tmp_path: Path) -> None:
    log = _broken_copy(logs, tmp_path)
    summary = _ingest(tmp_path / "d", log=log)
    assert summary.runs == 3
    assert summary.problems.skipped == {
        "unknown Helion status 'exploded'": 1,
        "5 fields, the header has 8": 1,
        "run_id ffff has no record in a.meta.jsonl": 1,
    }
    # the refused terminal row leaves that config's 'started' row: a tuning that died on it
    statuses = read_table(str(tmp_path / "d"), "measurements").column("status").to_pylist()
    assert statuses.count("runtime_error") == 1


def test_strict_stops_at_the_first_bad_line_naming_it(
    logs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _broken_copy(logs, tmp_path)
    with pytest.raises(IngestError, match=r"a\.csv:\d+: unknown Helion status 'exploded'"):
        _ingest(tmp_path / "d", log=log, strict=True)
    assert not (tmp_path / "d").exists()  # refused while read: --out left as found, not probed empty
    assert main(["helion", str(log), "--out", str(tmp_path / "e"), "--strict"]) == 2
    assert "unknown Helion status 'exploded'" in capsys.readouterr().err


def test_unknown_header_and_missing_files_are_refused(
    logs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "x.csv"
    log.write_text("when,what\n1,2\n")
    shutil.copy(logs / "a.meta.jsonl", log.with_suffix(".meta.jsonl"))
    with pytest.raises(IngestError, match=r"x\.csv:1: unknown Helion CSV header 'when,what'"):
        _ingest(tmp_path / "d", log=log)
    lines = (logs / "a.csv").read_text().splitlines(keepends=True)
    log.write_text("".join(lines[3:]))  # Helion's log without its header and first rows
    with pytest.raises(IngestError, match=r"x\.csv:1: unknown Helion CSV header .*looks like a row of the log"):
        _ingest(tmp_path / "d", log=log)
    assert main(["helion", str(tmp_path / "none.csv"), "--out", str(tmp_path / "d")]) == 2
    assert "no such helion log" in capsys.readouterr().err
    with pytest.raises(IngestError, match=r"a\.meta\.jsonl: a sidecar of Helion's log; give the log's CSV \(a\.csv\)"):
        _ingest(tmp_path / "d", log=logs / "a.meta.jsonl")


@pytest.mark.parametrize("written", ["a.trace.jsonl", "a.log"])
def test_helions_trace_and_text_log_are_refused_naming_the_csv(logs: Path, tmp_path: Path, written: str) -> None:
    """The gap: with ``HELION_AUTOTUNE_LOG_DETAILS=1`` every Helion 1.5 search (FiniteSearch,
    PatternSearch, the LFBO and differential-evolution searches, ...) also writes beside its CSV
    an event trace (``.trace.jsonl``) and a text log (``.log``). Given one of those, the import
    asked for a sidecar ``a.trace.meta.jsonl`` that no tool writes, or said the CSV header ''
    was unknown. Now it names the file it wants, before ``--out`` is made."""
    assert (logs / written).is_file()  # Helion's own
    with pytest.raises(IngestError, match=rf"{written}: Helion's .* not its CSV log; give .*a\.csv"):
        _ingest(tmp_path / "d", log=logs / written)
    assert not (tmp_path / "d").exists()


def test_cli_prints_the_summary(logs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    meta = logs / "a.meta.jsonl"
    assert main(["helion", str(logs / "a.csv"), "--meta", str(meta), "--out", str(tmp_path / "d")]) == 0
    printed = capsys.readouterr().out
    assert "imported 3 run(s), 12 measurement(s), 2 new IR graph(s), 1 new kernel(s)" in printed


@pytest.mark.parametrize(
    "text,kwargs,warps,stages",
    [
        ("Config(block_sizes=[64, 32], num_warps=4, num_stages=3)", {"block_sizes.0": 64, "block_sizes.1": 32}, 4, 3),
        ("helion.Config(block_sizes=[16], indexing='block_ptr', num_warps=2)", {"block_sizes.0": 16, "indexing": "block_ptr"}, 2, 1),
        ("Config(block_sizes=[8])", {"block_sizes.0": 8}, 4, 1),
    ],
)  # fmt: skip
def test_parse_config(text: str, kwargs: dict, warps: int, stages: int) -> None:
    config = parse_config(text)
    assert (dict(config.kwargs), config.num_warps, config.num_stages) == (kwargs, warps, stages)
    with pytest.raises(ValueError, match="not a Helion Config"):
        parse_config("block_sizes=[16]")
