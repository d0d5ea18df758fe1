"""Rows of recorded events as a GPU recording produces them (Triton's own bench: quantiles, no
samples; a disk-cache hit; failed and pruned configs), built from the workload's real
autotuners without launching anything."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from datetime import datetime, timezone

import torch

from corpus.harvest.device import DeviceFacts
from corpus.record.hooks import AutotuneEvent
from corpus.record.rows import (
    INF_TIMING,
    PRUNED,
    RecordContext,
    as_config,
    autotuned_problem,
    event_rows,
)
from schemas import DatasetWriter, read_table
from schemas.check import check_dataset
from schemas.enums import Timer
from tests.corpus.record import workload

H100 = DeviceFacts(
    device_kind="cuda", arch="sm_90", device_name="NVIDIA H100 80GB HBM3", compute_capability="9.0"
)
CONTEXT = RecordContext(
    harvest_id="0123456789abcdef",
    facts=H100,
    versions={"triton": "3.9.0", "torch": torch.__version__},
    toolchain={"triton": "3.9.0"},
    ir_target="sm_90",
    interpreter=False,
    bench_settings={"timer": Timer.TRITON_DO_BENCH.value},
)
STARTED = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _gelu_event(timings: list[list[float]], cache_hit: bool) -> AutotuneEvent:
    tuner = workload.gelu_kernel
    x = torch.randn(100)
    configs = tuner.configs[: len(timings)]
    return AutotuneEvent(
        fn=tuner.fn,
        autotuner=tuner,
        key=(100, "torch.float32"),
        args={"x_ptr": x, "out_ptr": torch.empty_like(x), "n_elements": 100},
        grid=lambda meta: (math.ceil(100 / meta["BLOCK"]),),
        timings=dict(zip(configs, timings)),
        best=configs[0],
        cache_hit=cache_hit,
        duration_s=None if cache_hit else 0.5,
        benched=[],
    )


def test_gpu_event_rows_carry_the_autotuners_quantiles() -> None:
    rows = event_rows(
        _gelu_event([[0.02, 0.019, 0.021], [math.inf] * 3], cache_hit=False), CONTEXT, STARTED, {}
    )
    by_status = {m["status"]: m for m in rows.measurements}
    assert set(by_status) == {"ok", "compile_error", "skipped"}
    ok = by_status["ok"]
    assert (ok["median_ms"], ok["p20_ms"], ok["p80_ms"]) == (0.02, 0.019, 0.021)
    assert ok.get("samples_ms") is None and ok.get("n_reps") is None and ok["grid"] == [7]
    assert (
        by_status["compile_error"]["error"] == INF_TIMING
        and by_status["compile_error"].get("median_ms") is None
    )
    assert by_status["skipped"]["error"] == PRUNED
    assert by_status["skipped"]["config_id"] == as_config(workload.gelu_kernel.configs[2]).id
    run = rows.run
    assert (
        run["timer"] == "triton_do_bench" and run["arch"] == "sm_90" and run["source"] == "record"
    )
    assert run["best_config_id"] == ok["config_id"] and run["n_ok"] == 1 and run["n_configs"] == 3
    assert run["autotune_cache_hit"] is False


def test_a_users_bench_returning_one_float_is_recorded_as_the_median() -> None:
    # triton.autotune(do_bench=lambda fn, quantiles: triton.testing.do_bench(fn)) ranks by one
    # float per config; the rows raised TypeError ('float' object is not subscriptable)
    rows = event_rows(_gelu_event([0.02, math.inf], cache_hit=False), CONTEXT, STARTED, {})  # type: ignore[list-item]
    by_status = {m["status"]: m for m in rows.measurements}
    assert by_status["ok"]["median_ms"] == 0.02 and by_status["ok"].get("p20_ms") is None
    assert by_status["compile_error"]["error"] == INF_TIMING
    assert rows.run["best_median_ms"] == 0.02


def test_disk_cache_hit_is_a_run_without_measurements(tmp_path) -> None:
    rows = event_rows(
        _gelu_event([[0.02, 0.019, 0.021], [0.03, 0.029, 0.031]], cache_hit=True),
        CONTEXT,
        STARTED,
        {},
    )
    assert rows.measurements == []  # nothing was benchmarked now: no timings invented
    assert rows.run["autotune_cache_hit"] is True and rows.run["n_configs"] == 0
    assert rows.run["best_config_id"] == as_config(workload.gelu_kernel.configs[0]).id
    assert rows.run["best_median_ms"] is None
    out = str(tmp_path / "d")
    writer = DatasetWriter(out)
    writer.write("kernels", [rows.kernel])
    writer.commit_run([rows.run])
    stored = read_table(out, "runs").to_pylist()
    assert stored[0]["autotune_cache_hit"] is True and stored[0]["run_id"] == rows.run["run_id"]
    assert not [p for p in check_dataset(out).problems if "runs" in p and "not found" not in p]


def test_a_kernel_of_tensor_descriptors_has_their_dtype() -> None:
    """The gap: liger-kernel's fused MLP takes only TensorDescriptors, so its recorded runs (and
    the plug-in's candidates) had dtype null and the model ranked them without a dtype."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    x = torch.zeros(4, 64, dtype=torch.float16)
    problem = autotuned_problem({"desc": TensorDescriptor.from_tensor(x, block_shape=[1, 16]), "n": 64}, ["n"])
    assert problem.dtype == "float16" and problem.dims == {"n": 64}

def test_a_boolean_autotune_key_is_a_problem_flag() -> None:
    """liger's token-gather kernel keys on ``w_is_None``: its two problems differ in problem_json,
    shape_name and problem_flags, not only in run_id."""
    x = torch.zeros(4, dtype=torch.float16)
    problem = autotuned_problem({"x": x, "H_dim": 48, "K_dim": 2, "w_is_None": True, "eps": 0.5}, ["H_dim", "K_dim", "w_is_None"])
    assert problem.dims == {"H_dim": 48, "K_dim": 2, "w_is_None": 1}
    assert problem.flags == {"w_is_None": 1} and problem.dtype == "float16"
    event = _gelu_event([[0.02, 0.019, 0.021]], cache_hit=False)
    with_flag = replace(event, args={**event.args, "fast": False})
    with_flag.autotuner.keys.append("fast")
    try:
        run = event_rows(with_flag, CONTEXT, STARTED, {}).run
    finally:
        with_flag.autotuner.keys.remove("fast")
    assert json.loads(run["problem_json"]) == {"n_elements": 100, "fast": 0}
    assert run["problem_flags"] == [{"name": "fast", "value": 0}]
    # a flag is no size: problem_dims holds the sizes only, as a harvest's (before: fast too)
    assert run["problem_dims"] == [{"name": "n_elements", "value": 100}]


def test_a_config_whose_ir_is_overridden_records_no_ir_of_its_source(tmp_path) -> None:
    """``triton.Config(ir_override=FILE)`` launches the IR in FILE: the IR the kernel's source
    compiles to would describe a program that never ran. The gap: the recorder compiled the
    source for every config and stored that IR, silently."""
    import triton

    from corpus.record.compiled import compile_config
    from corpus.record.rows import kernel_function

    tuner = workload.gelu_kernel
    plain = tuner.configs[1]
    first = tuner.configs[0]
    overridden = triton.Config(
        dict(first.kwargs), num_warps=first.num_warps, num_stages=first.num_stages,
        ir_override=str(tmp_path / "gelu.ttgir"),
    )  # fmt: skip
    event = replace(
        _gelu_event([[0.02, 0.019, 0.021], [0.03, 0.029, 0.031]], cache_hit=False),
        timings={overridden: [0.02, 0.019, 0.021], plain: [0.03, 0.029, 0.031]},
    )
    context = replace(
        CONTEXT,
        compiler=lambda fn, args, config: compile_config(
            kernel_function(fn), args, config, "sm_90", always_compile=True
        ),
    )
    rows = {m["config_id"]: m for m in event_rows(event, context, STARTED, {}).measurements}
    kept = rows[as_config(overridden).id]
    assert kept["status"] == "ok" and kept["median_ms"] == 0.02  # the timing stays
    assert kept.get("ttgir_id") is None and "ir_override=gelu.ttgir" in kept["stats_note"]
    assert rows[as_config(plain).id].get("ttgir_id") is not None  # its source is what ran


def test_configs_differing_only_in_their_pre_hook_keep_one_row_with_its_own_ir(tmp_path) -> None:
    """Two ``triton.Config`` with the same kwargs and options and another ``pre_hook`` are two
    configs to Triton (benchmarked apart) and one ``config_id`` to the dataset. The gap: both
    were written under that id (readers refused the table: a repeated key), and the IR stored
    with the first one's timing was compiled with the last one's hook (here a hook that sets a
    block shape the kernel cannot compile with: the first's row had no IR)."""
    import triton
    from triton.tools.tensor_descriptor import TensorDescriptor

    from corpus.record.compiled import compile_config
    from corpus.record.rows import RunRows, kernel_function
    from corpus.run_writer import RunWriter
    from tests.corpus.guide.kernels import desc_copy_kernel

    def fits(nargs: dict) -> None:
        nargs["desc"].block_shape = [nargs["BLOCK"]]

    def misfits(nargs: dict) -> None:
        nargs["desc"].block_shape = [2 * nargs["BLOCK"]]

    first, twin, other = (
        triton.Config({"BLOCK": 32}, num_warps=1, pre_hook=fits),
        triton.Config({"BLOCK": 32}, num_warps=1, pre_hook=misfits),
        triton.Config({"BLOCK": 64}, num_warps=1, pre_hook=fits),
    )
    tuner = triton.autotune([first, twin, other], key=["n"])(desc_copy_kernel)
    x = torch.arange(256, dtype=torch.float32)
    event = AutotuneEvent(
        fn=tuner.fn, autotuner=tuner, key=(256,), grid=(8,), best=first, cache_hit=False, duration_s=0.5,
        args={"desc": TensorDescriptor.from_tensor(x, block_shape=[16]), "out": torch.empty_like(x), "n": 256},
        timings={first: [0.02, 0.019, 0.021], twin: [0.05, 0.049, 0.051], other: [0.03, 0.029, 0.031]},
        benched=[],
    )  # fmt: skip
    context = replace(
        CONTEXT,
        compiler=lambda fn, args, config: compile_config(
            kernel_function(fn), args, config, "sm_90", always_compile=False
        ),
    )
    rows = event_rows(event, context, STARTED, {})
    by_id = {m["config_id"]: m for m in rows.measurements}
    assert len(rows.measurements) == len(by_id) == 2  # one row per config id
    kept = by_id[as_config(first).id]
    assert kept["median_ms"] == 0.02  # the first benchmarked one's timing ...
    assert kept.get("ttgir_id") is not None and kept.get("stats_note") is None  # ... with its own IR
    out = str(tmp_path / "d")
    RunWriter.for_dataset(out).write(RunRows(rows.graphs, rows.kernel, rows.measurements, rows.run))
    assert read_table(out, "measurements").num_rows == 2
    assert check_dataset(out).ok


def test_a_run_tuned_twice_in_one_recording_is_two_harvests(tmp_path) -> None:
    """The found defect: a workload that tunes one kernel on one signature twice (its module
    imported twice, so two autotuners; a cleared autotune cache; a disk-cache hit after the
    tuning) had both tunings written under the recording's one harvest_id: two ``runs`` rows
    with one key, every config measured twice, and readers refused the dataset. Each tuning
    again is now a harvest of its own, as the importers keep a log's repeated tunings."""
    from corpus.destination import probe_out
    from corpus.record.rows import RunRows
    from corpus.run_writer import RunWriter

    context = replace(CONTEXT, harvest_id="fedcba9876543210")  # a new recording
    events = [
        _gelu_event([[0.02, 0.019, 0.021], [0.03, 0.029, 0.031]], cache_hit=False),
        _gelu_event([[0.025, 0.024, 0.026], [0.031, 0.03, 0.032]], cache_hit=False),
        _gelu_event([[0.02, 0.019, 0.021], [0.03, 0.029, 0.031]], cache_hit=True),
    ]
    out = str(tmp_path / "d")
    probe_out(out)  # every table directory, as corpus.record makes them
    sink = RunWriter.for_dataset(out)
    for event in events:
        rows = event_rows(event, context, STARTED, {})
        sink.write(RunRows(rows.graphs, rows.kernel, rows.measurements, rows.run))
    runs = read_table(out, "runs")  # was RepeatedKeyError
    assert runs.num_rows == 3 and len(set(runs.column("run_id").to_pylist())) == 1
    harvests = runs.column("harvest_id").to_pylist()
    assert "fedcba9876543210" in harvests and len(set(harvests)) == 3  # the first keeps the recording's
    assert read_table(out, "measurements").num_rows == 6
    report = check_dataset(out)
    assert report.ok, report.problems
