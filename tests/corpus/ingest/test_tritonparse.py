"""Importing tritonparse traces (fixture made by the real tritonparse, see
make_tritonparse_fixture.py): rows, ids shared with corpus.record, graphs, bad lines."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpus.destination import OutRefused
from corpus.ingest.__main__ import main
from corpus.ingest.app import INGEST_LOCK, IngestConfig, ingest
from corpus.ingest.problems import IngestError
from corpus.ingest.tritonparse import CUT_OFF, parse_config_text
from schemas import DatasetError, read_table
from schemas.check import check_dataset
from schemas.identity import config_id, kernel_id
from schemas.locking import FileLock
from schemas.storage import resolve
from tests.corpus.record.conftest import REPO, WORKLOAD
from tests.faultfs import FaultPlan, faulty_storage, faulty_url

TRACE = Path(__file__).resolve().parent / "fixtures" / "tritonparse" / "gelu.ndjson"
TWO_SIZES = TRACE.with_name("gelu_two_sizes.ndjson")  # tuned and launched on 100, then 1,000 elements


def _ingest(out: Path, log: Path = TRACE, strict: bool = False):  # type: ignore[no-untyped-def]
    return ingest(IngestConfig(format="tritonparse", log=log, out=str(out), strict=strict))


def test_autotune_compilations_and_launch_become_one_run(tmp_path: Path) -> None:
    out = tmp_path / "d"
    summary = _ingest(out)
    assert (summary.runs, summary.measurements, summary.ir_graphs, summary.kernels) == (1, 2, 4, 1)
    assert summary.repeats == 1  # the cache-hit event of the same key adds no second run
    checked = check_dataset(str(out))
    assert checked.ok, checked.problems
    assert checked.facts["devices"] == {"unnamed device (sm_90)": 1}  # tritonparse names none

    run = read_table(str(out), "runs").to_pylist()[0]
    assert (run["source"], run["timer"], run["arch"], run["ir_target"]) == (
        "tritonparse",
        "external",
        "sm_90",
        "sm_90",
    )
    assert run["source_ref"].endswith(":(100, 'torch.float32', 'torch.float32')")
    assert run["arg_names"] == ["x_ptr", "out_ptr", "n_elements"]  # from the launch event
    assert run["arg_types"] == ["*fp32", "*fp32", "i32"] and run["arg_shapes"][0] == [100]
    assert run["autotune_cache_hit"] is False

    measurements = {m["config_id"]: m for m in read_table(str(out), "measurements").to_pylist()}
    fast = config_id({"BLOCK": 64}, num_warps=2, num_stages=3)
    slow = config_id({"BLOCK": 16}, num_warps=1, num_stages=3)
    assert set(measurements) == {fast, slow}
    assert (
        measurements[fast]["median_ms"],
        measurements[fast]["p20_ms"],
        measurements[fast]["p80_ms"],
    ) == (0.0091, 0.0089, 0.0094)
    assert run["best_config_id"] == fast
    compilations = [
        json.loads(line) for line in TRACE.read_text().splitlines() if '"compilation"' in line[:40]
    ]
    hashes = {c["payload"]["metadata"]["hash"] for c in compilations}
    assert {
        m["source_ref"] for m in measurements.values()
    } == hashes  # Triton's hash, as provenance
    graphs = read_table(str(out), "ir_graphs", columns=["ir_id", "level", "entry_name"]).to_pylist()
    assert {(g["level"], g["entry_name"]) for g in graphs} == {
        ("ttir", "gelu_kernel"),
        ("ttgir", "gelu_kernel"),
    }
    assert {m["ttgir_id"] for m in measurements.values()} <= {g["ir_id"] for g in graphs}
    assert all(m["compile_time_s"] > 0 for m in measurements.values())


def test_a_trace_imported_twice_is_written_once(tmp_path: Path) -> None:
    out = tmp_path / "d"
    _ingest(out)
    again = _ingest(out)
    assert (again.runs, again.measurements, again.already_imported) == (0, 0, 1)
    assert read_table(str(out), "runs").num_rows == 1 and read_table(str(out), "measurements").num_rows == 2
    assert check_dataset(str(out)).ok


def _before_launch(tmp_path: Path) -> Path:
    """A copy of the trace cut before its first ``launch`` event (the tuned call's)."""
    lines = TRACE.read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if '"launch"' in line[:40])
    early = tmp_path / "early.ndjson"
    early.write_text("".join(lines[:cut]))
    return early


def test_a_trace_imported_before_its_launch_event_and_again_after_is_written_once(tmp_path: Path) -> None:
    """The found defect: tritonparse writes a tuning's ``autotune`` event before the ``launch``
    event that names the call's arguments, and the run's signature (so its run_id) takes them
    from that launch. A trace imported in between (a workload still running, or one that died at
    the tuned launch and was run again, appending to its trace) and again later had the one
    tuning committed twice, under two run_ids, and check said OK. Now the later import finds the
    tuning committed under the run_id it had without its launch."""
    out = tmp_path / "d"
    assert _ingest(out, _before_launch(tmp_path)).runs == 1
    later = _ingest(out)
    assert (later.runs, later.measurements, later.already_imported) == (0, 0, 1)
    assert read_table(str(out), "runs").num_rows == 1  # was 2: the tuning under two run_ids
    assert read_table(str(out), "measurements").num_rows == 2


def test_a_trace_imported_whole_and_then_cut_before_its_launch_is_written_once(tmp_path: Path) -> None:
    """The found defect, the other way round: a trace imported whole, then a copy of it taken
    before the tuned call's launch (an older copy of a still-running workload's trace) wrote the
    tuning again under the run_id it gets without the launch's arguments, and check said OK.
    Now the import finds it committed (same source_ref, kernel, device and outcomes)."""
    out = tmp_path / "d"
    assert _ingest(out).runs == 1
    later = _ingest(out, _before_launch(tmp_path))
    assert (later.runs, later.measurements, later.already_imported) == (0, 0, 1)
    assert read_table(str(out), "runs").num_rows == 1  # was 2: the tuning under two run_ids
    assert read_table(str(out), "measurements").num_rows == 2
    assert check_dataset(str(out)).ok


def test_each_tuning_takes_the_arguments_of_its_own_launch(tmp_path: Path) -> None:
    """The found defect: every tuning of a kernel took the arguments of the kernel's first
    launch in the trace, so the tuning on 1,000 elements was stored with the 100-element
    call's shapes (runs.arg_shapes, and run_id), silently. Now each takes the launch that
    follows it, the call it tuned."""
    out = tmp_path / "d"
    _ingest(out, TWO_SIZES)
    runs = read_table(str(out), "runs", columns=["problem_json", "arg_shapes"]).to_pylist()
    assert sorted((json.loads(r["problem_json"])["n_elements"], r["arg_shapes"][0]) for r in runs) == [
        (100, [100]),
        (1000, [1000]),  # was [100]
    ]
    assert check_dataset(str(out)).ok


def test_an_import_interrupted_before_its_commit_and_rerun_writes_each_row_once(tmp_path: Path) -> None:
    """The gap: a tuning's harvest_id is derived from its content, so the measurements an import
    killed before its ``runs`` row landed carry the key the rerun writes again. The rerun wrote
    them a second time and committed both: readers refused the table (repeated keys) and check
    failed. Now the rerun commits the run with the rows left, writing none twice."""
    counting = FaultPlan()
    with faulty_storage(counting):
        _ingest(faulty_url(tmp_path / "count"))  # type: ignore[arg-type]
    out = tmp_path / "d"
    with faulty_storage(FaultPlan(fail={counting.writes})), pytest.raises(DatasetError):  # the runs row
        _ingest(faulty_url(out))  # type: ignore[arg-type]
    assert read_table(str(out), "measurements", committed_only=False).num_rows == 2  # left behind
    assert read_table(str(out), "runs").num_rows == 0
    again = _ingest(out)
    assert read_table(str(out), "measurements").num_rows == 2  # was RepeatedKeyError
    assert check_dataset(str(out)).ok
    assert (again.runs, again.measurements, again.completed) == (1, 0, 1)
    assert _ingest(out).already_imported == 1


def test_an_import_stopped_at_any_write_and_rerun_leaves_every_graph_whole(tmp_path: Path) -> None:
    """The found defect: an import that wrote a new graph's ``ir_graphs`` row and then stopped
    (a full disk, a kill) before its nodes or edges landed was rerun into a dataset whose graph
    had no nodes for good: the rerun took the graph for stored by its row alone, so check
    failed and training refused the graph. Now a graph's row lands after its nodes and edges."""
    counting = FaultPlan()
    with faulty_storage(counting):
        _ingest(faulty_url(tmp_path / "count"))  # type: ignore[arg-type]
    for n in range(1, counting.writes + 1):
        out = tmp_path / f"d{n}"
        with faulty_storage(FaultPlan(fail_from=n)), pytest.raises((DatasetError, OutRefused)):
            _ingest(faulty_url(out))  # type: ignore[arg-type]
        _ingest(out)
        report = check_dataset(str(out))
        assert report.ok, (n, report.problems)
        assert read_table(str(out), "measurements").num_rows == 2


def test_rows_an_interrupted_import_left_that_differ_are_refused_before_writing(tmp_path: Path) -> None:
    """Uncommitted rows under the key this import would write, but with other outcomes (another
    importer version): refused naming the run, nothing written."""
    out = tmp_path / "d"
    _ingest(out)
    runs_file = next((out / "runs").rglob("*.parquet"))
    runs_file.unlink()  # as if killed before the commit
    stored = next((out / "measurements").rglob("*.parquet"))
    table = pq.read_table(stored)
    medians = table.column("median_ms").to_pylist()
    table = table.set_column(
        table.column_names.index("median_ms"), "median_ms", pa.array([m * 2 for m in medians])
    )
    pq.write_table(table.replace_schema_metadata(pq.read_schema(stored).metadata), stored, write_page_checksum=True)
    files_before = sorted(p.name for p in out.rglob("*.parquet"))
    with pytest.raises(IngestError, match="uncommitted measurement row.*differ"):
        _ingest(out)
    assert sorted(p.name for p in out.rglob("*.parquet")) == files_before


def test_imports_into_one_dataset_take_turns(tmp_path: Path) -> None:
    """Two imports of one log at once both found its tuning new and committed it twice (runs
    rows differing in finished_at, which check --fix cannot repair): an import now holds the
    dataset's import lock while it reads what is committed and writes."""
    out = tmp_path / "d"
    _ingest(tmp_path / "warm")  # the trace parsed once before timing anything
    held = FileLock(resolve(str(out)), INGEST_LOCK, "ingest (pid 1 on anon-test)")
    out.mkdir()
    assert held.acquire(wait=False)
    done: list[object] = []
    worker = threading.Thread(target=lambda: done.append(_ingest(out)))
    worker.start()
    worker.join(3)
    assert worker.is_alive() and not list(out.rglob("*.parquet"))  # waiting, nothing written
    held.release()
    worker.join(60)
    assert len(done) == 1 and read_table(str(out), "runs").num_rows == 1


def test_kernel_identity_matches_a_recording_of_the_same_kernel(tmp_path: Path) -> None:
    """The trace holds the whole module source, so the kernel id is the one corpus.record
    derives for the same file (tests/corpus/record/workload.py)."""
    _ingest(tmp_path / "d")
    kernel = read_table(str(tmp_path / "d"), "kernels").to_pylist()[0]
    assert kernel["source"] == WORKLOAD.read_text()
    assert kernel["kernel_id"] == kernel_id(WORKLOAD.read_text(), "gelu_kernel")
    assert kernel["source_path"] == "tests/corpus/record/workload.py"


def _broken(tmp_path: Path) -> Path:
    lines = TRACE.read_text().splitlines()
    lines.insert(1, "{not json")  # line 2
    lines.insert(2, json.dumps({"event_type": "profile", "pid": 1}))  # line 3
    autotune = json.loads(
        next(line for line in lines if line.startswith('{"event_type":"autotune"'))
    )
    del autotune["best_config"]
    lines.append(json.dumps(autotune))  # line 8
    log = tmp_path / "broken.ndjson"
    log.write_text("\n".join(lines) + "\n")
    return log


def test_malformed_and_unknown_records_are_skipped_and_counted(tmp_path: Path) -> None:
    summary = _ingest(tmp_path / "d", log=_broken(tmp_path))
    assert summary.runs == 1 and summary.measurements == 2
    assert summary.problems.total == 3
    reasons = list(summary.problems.skipped)
    assert any(r.startswith("not JSON") for r in reasons)
    assert "unknown event type 'profile'" in reasons
    assert any(r.startswith("malformed autotune event (KeyError") for r in reasons)
    assert summary.problems.examples[0].endswith("broken.ndjson:2: " + reasons[0])


def test_tritonparses_own_parsed_output_imports_gzipped_with_its_analyses_left_out(tmp_path: Path) -> None:
    """What ``tritonparse.parse.utils.unified_parse`` writes from the fixture's raw trace: a
    ``*_mapped.ndjson.gz`` whose compilations come with ``ir_analysis`` events it derived."""
    utils = pytest.importorskip("tritonparse.parse.utils", reason="the thirdparty extra (tritonparse) is not installed")
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "dedicated_log_triton_trace_root_.ndjson").write_bytes(TRACE.read_bytes())  # the name it looks for
    utils.unified_parse(source=str(raw), out=str(tmp_path / "parsed"), overwrite=True)
    (parsed,) = (tmp_path / "parsed").glob("*.ndjson.gz")
    summary = ingest(IngestConfig(format="tritonparse", log=parsed, out=str(tmp_path / "d"), strict=True))
    assert summary.problems.total == 0 and summary.derived == {"ir_analysis": 2}
    assert (summary.ir_graphs, summary.kernels) == (4, 1)
    assert "2 ir_analysis" in " ".join(summary.lines(str(tmp_path / "d")))
    assert check_dataset(str(tmp_path / "d")).ok


@pytest.mark.parametrize(("name", "content", "message"), [
    ("trace.ndjson.zst", b"x", "zstd-compressed trace; decompress it first"),
    ("trace.ndjson.gz", b'{"event_type": "launch"}\n', "named .gz but not a gzip file"),
])  # fmt: skip
def test_compressed_traces_it_cannot_read_are_refused_naming_them(
    tmp_path: Path, name: str, content: bytes, message: str
) -> None:
    log = tmp_path / name
    log.write_bytes(content)
    with pytest.raises(IngestError, match=message):
        _ingest(tmp_path / "d", log=log)
    assert not (tmp_path / "d").exists()


def test_strict_names_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = _broken(tmp_path)
    with pytest.raises(IngestError, match=r"broken\.ndjson:2: not JSON"):
        _ingest(tmp_path / "d", log=log, strict=True)
    assert not (tmp_path / "d").exists()  # refused while read: --out left as found, not probed empty
    assert main(["tritonparse", str(log), "--out", str(tmp_path / "d"), "--strict"]) == 2
    assert not (tmp_path / "d").exists()
    assert "broken.ndjson:2: not JSON" in capsys.readouterr().err
    assert main(["tritonparse", str(log), "--out", str(tmp_path / "d")]) == 0
    printed = capsys.readouterr().out
    assert "skipped 3 record(s):" in printed and "1 x unknown event type 'profile'" in printed


def test_parse_config_text() -> None:
    config = parse_config_text(
        "BLOCK_M: 64, BLOCK_N: 32, num_warps: 8, num_ctas: 1, num_stages: 4, maxnreg: None, ir_override: None"
    )
    assert (dict(config.kwargs), config.num_warps, config.num_stages, config.maxnreg) == (
        {"BLOCK_M": 64, "BLOCK_N": 32},
        8,
        4,
        None,
    )
    with pytest.raises(ValueError, match="not a triton.Config text"):
        parse_config_text("garbage")


def test_compile_only_trace_gives_a_dataset_check_accepts(tmp_path: Path) -> None:
    """A trace of compiles alone (tritonparse's compilation events, no tuning) has no runs:
    before, the importer wrote no runs directory and `schemas check` refused the dataset."""
    log = tmp_path / "compiles.ndjson"
    lines = [line for line in TRACE.read_text().splitlines() if '"event_type":"compilation"' in line[:40]]
    log.write_text("\n".join(lines) + "\n")
    summary = _ingest(tmp_path / "d", log=log)
    assert (summary.runs, summary.ir_graphs, summary.kernels) == (0, 4, 1)
    checked = check_dataset(str(tmp_path / "d"))
    assert checked.ok, checked.problems
    assert read_table(str(tmp_path / "d"), "runs").num_rows == 0


def test_problem_from_the_autotune_key_and_tuned_constexprs_left_out(tmp_path: Path) -> None:
    """problem_json holds the sizes the autotune key tunes on, named by the launch (before:
    {}); a launch argument that is a config's meta-parameter (``BLOCK``) is not in the run's
    arguments (constexprs the caller passed are typed constexpr: see the liger test below)."""
    _ingest(tmp_path / "d")
    run = read_table(str(tmp_path / "d"), "runs").to_pylist()[0]
    assert run["problem_json"] == '{"n_elements":100}' and run["dtype"] == "float32"
    assert run["triton_version"] == "3.9.0"

    lines = TRACE.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith('{"event_type":"launch"'))
    launch = json.loads(lines[index])
    launch["extracted_args"]["BLOCK"] = {"type": "int", "value": 64}  # the winner's, as a launch hook logs it
    lines[index] = json.dumps(launch)
    log = tmp_path / "with_constexpr.ndjson"
    log.write_text("\n".join(lines) + "\n")
    _ingest(tmp_path / "e", log=log)
    again = read_table(str(tmp_path / "e"), "runs").to_pylist()[0]
    assert again["arg_names"] == ["x_ptr", "out_ptr", "n_elements"] and again["run_id"] == run["run_id"]


def _liger_token_gather_trace(folder: Path) -> Path:
    """A trace written by the real tritonparse of liger-kernel's token-gather kernel
    (autotune key ``H_dim, K_dim, w_is_None``): two configs compiled for sm_90, one tuning
    (tritonparse's own listener, given the key Triton's autotuner builds), one launch whose
    row strides equal ``H_dim`` (64), as any contiguous (T, H) tensor's do."""
    import torch
    import tritonparse.structured_logging as tsl
    from liger_kernel.ops import fused_moe_kernels

    from extract.compile import compile_call

    tuner = fused_moe_kernels._token_gather_weighted_sum_kernel
    configs = tuner.configs[:2]
    tensors = {
        "Y_ptr": torch.randn(16, 64), "w_ptr": torch.randn(16),
        "s_rev_ptr": torch.zeros(16, dtype=torch.int32), "out_ptr": torch.empty(8, 64),
    }  # fmt: skip
    scalars = {"H_dim": 64, "K_dim": 2, "stride_Y_TK": 64, "stride_Y_H": 1, "stride_out_T": 64,
               "stride_out_H": 1, "w_is_None": False}  # fmt: skip
    tsl.init(str(folder), enable_full_python_source=True)
    try:
        for config in configs:
            meta = {k: v.to("meta") for k, v in tensors.items()}
            compile_call(tuner.fn, {**meta, **scalars, **config.kwargs}, target="sm_90",
                         num_warps=config.num_warps, num_stages=config.num_stages,
                         always_compile=True)  # fmt: skip  # every config compiles (and is traced); no knob left set
        key = (64, 2, False, *(str(t.dtype) for t in tensors.values()))
        timings = {configs[0]: [0.02, 0.019, 0.021], configs[1]: [0.015, 0.014, 0.016]}
        tsl._autotune_listener(fn=tuner.fn, key=key, best_config=configs[1], configs_timings=timings,
                               duration=0.5, cache_hit=False)  # fmt: skip
        args = {**tensors, **scalars, **configs[1].kwargs}
        launch = {"name": tuner.fn.__name__, "grid": [8, 1, 1], "extracted_args": tsl.extract_arg_info(args)}
        tsl.trace_structured_triton("launch", metadata_fn=lambda: tsl.convert(launch))
    finally:
        tsl.clear_logging_config()
    return next(folder.glob("*.ndjson"))


def test_problem_is_named_by_the_autotune_key_not_by_equal_values(tmp_path: Path) -> None:
    """liger's token-gather kernel tunes on H_dim, K_dim and the flag w_is_None. Before, the
    key's integers were matched to the launch by value: the strides and the config's BLOCK_H
    that equal H_dim (64) entered problem_json and the boolean key was lost. Now the names
    come from the kernel's @triton.autotune(key=...) in the traced source, the boolean as a
    problem flag, as corpus.record stores the same tuning."""
    pytest.importorskip("tritonparse.structured_logging", reason="the thirdparty extra (tritonparse) is not installed")
    pytest.importorskip("liger_kernel", reason="the thirdparty extra (liger-kernel) is not installed")
    raw = tmp_path / "raw"
    raw.mkdir()
    trace = _liger_token_gather_trace(raw)
    _ingest(tmp_path / "d", log=trace)
    run = read_table(str(tmp_path / "d"), "runs").to_pylist()[0]
    assert run["problem_json"] == '{"H_dim":64,"K_dim":2,"w_is_None":0}'
    assert run["problem_dims"] == [{"name": "H_dim", "value": 64}, {"name": "K_dim", "value": 2}]
    assert run["problem_flags"] == [{"name": "w_is_None", "value": 0}]
    types = dict(zip(run["arg_names"], run["arg_types"]))
    assert types["H_dim"] == types["w_is_None"] == "constexpr" and types["Y_ptr"] == "*fp32"
    assert not {"BLOCK_H", "BLOCK_K"} & set(types)  # the winning config's, logged by the launch
    assert check_dataset(str(tmp_path / "d")).ok


def test_without_a_literal_key_only_a_value_one_argument_holds_is_named() -> None:
    from corpus.ingest.tritonparse import _problem

    launch = {"extracted_args": {n: {"type": "int", "value": v} for n, v in
                                 (("H", 64), ("stride", 64), ("K", 2), ("BLOCK", 2))}}  # fmt: skip
    launch["extracted_args"]["flag"] = {"type": "bool", "value": True}
    key = "(64, 2, True, 'torch.float32')"
    assert _problem(key, launch, None, {"BLOCK"}) == ({"K": 2, "flag": 1}, {"flag": 1})
    assert _problem(key, launch, ["H", "K", "flag"], {"BLOCK"}) == ({"H": 64, "K": 2, "flag": 1}, {"flag": 1})


def _written_by_tritonparse(folder: Path, compression: str) -> Path:
    """The ``specializations`` trace (make_tritonparse_fixture.py), written by tritonparse in its
    own process with ``TRITON_TRACE_COMPRESSION=compression`` (read when it is imported)."""
    pytest.importorskip("tritonparse.structured_logging", reason="the trace extra (tritonparse) is not installed")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_TRACE_COMPRESSION"] = compression
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-m", "tests.corpus.ingest.make_tritonparse_fixture", "specializations", str(folder)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return Path(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def gzip_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _written_by_tritonparse(tmp_path_factory.mktemp("tritonparse-gzip"), "gzip")


def test_each_tuning_gets_the_compilations_of_its_own_specialization(gzip_trace: Path, tmp_path: Path) -> None:
    """The gap: a config compiled for 128 elements and again for 99 (Triton specializes
    ``n_elements`` on divisibility by 16) has two compilation events, and both tunings' rows
    took the first -- the 99-element tuning got the IR, hash and compile time of a binary its
    call never ran. Also: tritonparse's own gzip output (``*.bin.ndjson``, refused before as
    "not UTF-8 text") imports as it is."""
    assert gzip_trace.name.endswith(".bin.ndjson") and gzip_trace.read_bytes()[:2] == b"\x1f\x8b"
    out = tmp_path / "d"
    summary = _ingest(out, log=gzip_trace, strict=True)
    assert (summary.runs, summary.measurements, summary.ir_graphs) == (2, 4, 8)
    with gzip.open(gzip_trace, "rt") as handle:
        events = [json.loads(line) for line in handle]
    divisible = {  # hash -> whether n_elements (argument 2) was specialized as divisible by 16
        e["payload"]["metadata"]["hash"]: ["tt.divisibility", 16] in e["payload"]["metadata"]["src_attrs"]["(2,)"]
        for e in events
        if e["event_type"] == "compilation"
    }
    assert sorted(divisible.values()) == [False, False, True, True]
    runs = {json.loads(r["problem_json"])["n_elements"]: r["run_id"] for r in read_table(str(out), "runs").to_pylist()}
    rows = read_table(str(out), "measurements").to_pylist()
    for size, run in runs.items():
        refs = {m["source_ref"] for m in rows if m["run_id"] == run}
        assert len(refs) == 2 and {divisible[h] for h in refs} == {size % 16 == 0}, size
    assert check_dataset(str(out)).ok


def test_a_gzip_trace_cut_off_mid_record_keeps_the_records_before_the_cut(gzip_trace: Path, tmp_path: Path) -> None:
    """A traced process killed while writing: gzip raised EOFError out of the import (a
    traceback, nothing imported); the plain trace's cut line was "not JSON" like any other."""
    whole = gzip_trace.read_bytes()
    cut = tmp_path / gzip_trace.name
    cut.write_bytes(whole[: len(whole) - 20])  # inside the last record (the second launch)
    summary = _ingest(tmp_path / "d", log=cut)
    assert summary.runs == 2 and dict(summary.problems.skipped) == {CUT_OFF: 1}
    with pytest.raises(IngestError, match=rf"{cut.name}:\d+: cut off: the trace ends inside this record"):
        _ingest(tmp_path / "strict", log=cut, strict=True)
    plain = tmp_path / "plain.ndjson"
    text = TRACE.read_text()
    plain.write_text(text[: text.rindex('{"event_type":"launch"') + 40])
    summary = _ingest(tmp_path / "p", log=plain)
    assert summary.runs == 1 and summary.problems.examples == [f"{plain}:{text.count(chr(10))}: {CUT_OFF}"]


def test_a_zstd_trace_written_by_tritonparse_is_refused_naming_the_fix(tmp_path: Path) -> None:
    trace = _written_by_tritonparse(tmp_path / "zstd", "zstd")
    assert trace.name.endswith(".bin.ndjson")
    with pytest.raises(IngestError, match=r"a zstd-compressed trace; decompress it first \(zstd -dc "):
        _ingest(tmp_path / "d", log=trace)
    assert not (tmp_path / "d").exists()


@pytest.fixture(scope="module")
def rank_traces(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two processes of a gloo group, each traced by tritonparse into one folder, which names
    each file by its rank (make_tritonparse_fixture.py ``rank``): both tune the kernel on 100
    elements with timings of their own, rank 1 also on 1,000."""
    pytest.importorskip("tritonparse.structured_logging", reason="the trace extra (tritonparse) is not installed")
    folder = tmp_path_factory.mktemp("tritonparse-ranks")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    rendezvous = folder.parent / f"{folder.name}-rendezvous"  # gloo's file: absent before
    command = [sys.executable, "-W", "ignore", "-m", "tests.corpus.ingest.make_tritonparse_fixture", "rank", str(folder)]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    ranks = [
        subprocess.Popen([*command, str(rank), str(rendezvous)], cwd=REPO, env=env, **pipes)
        for rank in (0, 1)
    ]
    printed = [rank.communicate(timeout=300) for rank in ranks]
    assert all(rank.returncode == 0 for rank in ranks), [err[-3000:] for _, err in printed]
    first, second = (Path(out.strip().splitlines()[-1]) for out, _ in printed)
    assert "_rank_0_" in first.name and "_rank_1_" in second.name
    return first, second


def test_rank_files_imported_one_after_another_give_their_union_once(rank_traces, tmp_path: Path) -> None:
    """tritonparse writes one file per process (rank); ``corpus.ingest`` takes one per call.
    Imported in turn into one dataset: the kernel and its IR graphs once, every tuning once
    (the two ranks' tunings of one key: one run_id, a harvest_id each), check OK; a file
    imported again adds nothing."""
    out = tmp_path / "d"
    first = _ingest(out, rank_traces[0])
    assert (first.runs, first.measurements, first.ir_graphs, first.kernels) == (1, 2, 4, 1)
    second = _ingest(out, rank_traces[1])
    assert (second.runs, second.measurements, second.ir_graphs, second.kernels) == (2, 4, 0, 0)

    def tables() -> dict[str, list[dict[str, object]]]:
        return {name: read_table(str(out), name).to_pylist() for name in ("kernels", "runs", "measurements", "ir_graphs")}

    union = tables()
    assert len(union["kernels"]) == 1 and len({g["ir_id"] for g in union["ir_graphs"]}) == len(union["ir_graphs"]) == 4
    runs = union["runs"]
    assert len({(r["run_id"], r["harvest_id"]) for r in runs}) == len(runs) == 3
    assert sorted(json.loads(r["problem_json"])["n_elements"] for r in runs) == [100, 100, 1000]
    assert len({r["run_id"] for r in runs}) == 2  # the ranks' tunings on 100 elements: one run
    keys = [(m["run_id"], m["harvest_id"], m["config_id"]) for m in union["measurements"]]
    assert len(keys) == len(set(keys)) == 6
    checked = check_dataset(str(out))
    assert checked.ok, checked.problems

    for trace in rank_traces:  # the same file again, in either order
        again = _ingest(out, trace)
        assert (again.runs, again.measurements, again.ir_graphs, again.kernels) == (0, 0, 0, 0)
        assert again.already_imported == (1 if trace == rank_traces[0] else 2)
    assert tables() == union


def test_launch_tracing_keeps_the_winning_configs_meta_parameters_out_of_the_run(tmp_path: Path) -> None:
    """The gap: with tritonparse's launch tracing on (``enable_trace_launch``), its launch hook
    logs every parameter the launch bound, the winning config's ``BLOCK`` among them, and the
    import put ``BLOCK`` into the run's signature. So the same problem got another run_id with
    launch tracing on than off, and another again whenever another config won (the timings'
    noise): one problem split into runs. The tuned meta-parameters are now left out."""
    pytest.importorskip("tritonparse.structured_logging", reason="the trace extra (tritonparse) is not installed")
    from tests.corpus.ingest.make_tritonparse_fixture import generate_launch_traced

    out = tmp_path / "d"
    for winner in (0, 1):
        folder = tmp_path / f"won-by-{winner}"
        folder.mkdir()
        trace = generate_launch_traced(folder, winner)
        assert '"BLOCK"' in next(line for line in trace.read_text().splitlines() if '"launch"' in line)
        assert _ingest(out, log=trace).runs == 1
    _ingest(out)  # the fixture: the same tuning, its launch event without the meta-parameters
    runs = read_table(str(out), "runs").to_pylist()
    assert len(runs) == 3 and len({r["run_id"] for r in runs}) == 1
    assert all(r["arg_names"] == ["x_ptr", "out_ptr", "n_elements"] for r in runs)
    assert len({r["best_config_id"] for r in runs}) == 2  # each trace's own winner
    checked = check_dataset(str(out))
    assert checked.ok, checked.problems


def test_tunings_tritonparses_parser_keeps_only_as_analyses_are_reported_not_lost(tmp_path: Path) -> None:
    """The gap: ``unified_parse`` keeps a tuning Triton's autotuner logged only inside its
    ``autotune_analysis`` (timings and best config, without the autotune key or the raw
    ``autotune`` event), and the import left that out as a derived analysis: "imported 0 run(s)"
    from the parsed output of a trace whose raw form imports one, nothing said of the tuning.
    Now each such tuning is reported, naming the kernel and the raw trace to import instead."""
    pytest.importorskip("tritonparse.parse.utils", reason="the trace extra (tritonparse) is not installed")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-m", "tests.corpus.ingest.make_tritonparse_fixture", "autotuned", str(tmp_path)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    parsed = Path(done.stdout.strip().splitlines()[-1])
    (raw,) = (tmp_path / "raw").glob("*.ndjson")
    assert _ingest(tmp_path / "from-raw", log=raw).runs == 1  # the same tuning, from the raw trace
    summary = _ingest(tmp_path / "d", log=parsed)
    assert (summary.runs, summary.ir_graphs) == (0, 4)
    (reason,) = summary.problems.skipped
    assert "gelu_kernel" in reason and "autotune_analysis" in reason and "raw trace" in reason
    assert reason in " ".join(summary.lines(str(tmp_path / "d")))
    with pytest.raises(IngestError, match=r"_mapped\.ndjson\.gz:\d+: .*gelu_kernel"):
        _ingest(tmp_path / "e", log=parsed, strict=True)
    assert check_dataset(str(tmp_path / "d")).ok
