"""Static stats split between compile workers and the harvest's batched disassembler: the
columns equal those of one full listing per cubin, identical cubins are disassembled once, and
no result waits longer than it must."""

from __future__ import annotations

import threading

import pytest

from corpus.harvest.compile_worker import CompileHandler, CompileInit, CompileTask
from corpus.harvest.sass_batch import (
    SassBatcher,
    batcher_for_target,
    fill_row,
    instruction_stats_now,
)
from corpus.suite.registry import load_suite, select
from extract.compile import compile_call
from extract.sass import find_tool, static_stats

needs_tools = pytest.mark.skipif(
    find_tool("cuobjdump") is None or find_tool("nvdisasm") is None, reason="CUDA tools not in this Triton wheel"
)
SUITE = ("corpus.suite.kernels",)


@pytest.fixture(scope="module")
def compiled() -> list[tuple[object, bytes, dict]]:
    """(compile outcome of the worker's handler, the cubin, its metadata) for a few configs of
    two families, the handler run in this process."""
    handler = CompileHandler(CompileInit(SUITE, "sm_90"))
    specs = select(load_suite(SUITE), ("add_broadcast", "matmul"))
    out = []
    for spec in specs.values():
        dims = spec.shapes_for("tiny")[0]
        for config in spec.valid_configs(dims, "float32")[:3]:
            outcome = handler(CompileTask(spec.name, dims, "float32", 0, config))
            inputs = spec.make_inputs(dims, "float32", "meta", 0)
            _, args = spec.bind(inputs, dims, config)
            result = compile_call(spec.kernel, args, target="sm_90", **config.compile_options())
            out.append((outcome, bytes(result.asm["cubin"]), result.metadata))
    return out


@needs_tools
def test_worker_columns_filled_by_the_batcher_equal_a_full_listing(compiled) -> None:
    batcher = batcher_for_target("sm_90")
    assert batcher is not None and batcher.arch == "SM90a"
    futures = [batcher.submit(outcome.sass_code) for outcome, _, _ in compiled]
    batcher.wait(futures)
    for (outcome, cubin, meta), future in zip(compiled, futures):
        assert outcome.status == "ok" and outcome.sass_code
        assert outcome.stats["sass_mix"] is None and outcome.stats["n_regs"] is not None
        row = dict(outcome.stats)
        fill_row(row, future.result())
        assert row == static_stats(cubin, kernel_name=meta["name"], dynamic_shared_bytes=meta["shared"]).to_row()
    batcher.close()
    assert batcher.calls == 1  # one nvdisasm for all of them


@needs_tools
def test_a_whole_run_listed_at_once_equals_a_full_listing_per_config(compiled) -> None:
    # The recorder and the plug-in hold every config of a run: one call, duplicates once.
    codes = {f"config-{i}": outcome.sass_code for i, (outcome, _, _) in enumerate(compiled)}
    codes["twin"] = compiled[0][0].sass_code
    codes["no-code"] = None  # its stats were complete already (or there is no cubin)
    listed = instruction_stats_now(codes, "sm_90")
    assert set(listed) == set(codes) - {"no-code"}
    assert listed["twin"] == listed["config-0"]
    for i, (outcome, cubin, meta) in enumerate(compiled):
        row = dict(outcome.stats)
        fill_row(row, listed[f"config-{i}"])
        assert row == static_stats(cubin, kernel_name=meta["name"], dynamic_shared_bytes=meta["shared"]).to_row()
    assert instruction_stats_now(codes, "hip:gfx942") == {}  # no cubin on AMD: nothing to list
    assert instruction_stats_now({"no-code": None}, "sm_90") == {}


@needs_tools
def test_identical_codes_are_disassembled_once(compiled) -> None:
    batcher = SassBatcher("SM90a", linger_s=3600)
    code = compiled[0][0].sass_code
    first, again = batcher.submit(code), batcher.submit(bytes(code))
    assert first is again
    batcher.wait([first])
    assert batcher.submit(code) is first and first.result().instructions
    batcher.close()
    assert (batcher.calls, batcher.codes) == (1, 1)


@needs_tools
def test_a_waiting_result_starts_its_batch_at_once(compiled) -> None:
    batcher = SassBatcher("SM90a", batch_size=1000, linger_s=3600)
    future = batcher.submit(compiled[1][0].sass_code)
    waiter = threading.Thread(target=batcher.wait, args=([future],), daemon=True)
    waiter.start()
    waiter.join(timeout=120)
    assert not waiter.is_alive() and future.result().mix
    batcher.close()


@needs_tools
def test_a_full_batch_starts_without_being_asked(compiled) -> None:
    batcher = SassBatcher("SM90a", batch_size=2, linger_s=3600)
    futures = [batcher.submit(outcome.sass_code) for outcome, _, _ in compiled[:2]]
    assert all(future.result(timeout=120).instructions for future in futures)
    batcher.close()
    assert batcher.calls == 1


def test_lingering_codes_are_taken_after_linger_s(compiled) -> None:
    batcher = SassBatcher("SM90a", batch_size=1000, linger_s=0.2, tools_dir="/nonexistent")
    future = batcher.submit(compiled[0][0].sass_code)
    assert future.result(timeout=60).note == "nvdisasm not found"
    batcher.close()


def test_a_missing_tool_becomes_the_rows_note(compiled) -> None:
    batcher = SassBatcher("SM90a", tools_dir="/nonexistent")
    outcome = compiled[0][0]
    future = batcher.submit(outcome.sass_code)
    batcher.wait([future])
    row = {**outcome.stats, "stats_note": "IR extraction failed: x"}
    fill_row(row, future.result())
    assert (row["sass_mix"], row["sass_instructions"], row["spill_bytes"]) == (None, None, None)
    assert row["stats_note"] == "IR extraction failed: x; nvdisasm not found"
    assert row["n_regs"] == outcome.stats["n_regs"]
    batcher.close()


def test_no_batcher_for_targets_without_cubins() -> None:
    assert batcher_for_target("hip:gfx942") is None
    assert batcher_for_target("sm_80").arch == "SM80"


def test_the_worker_reuses_the_graphs_of_a_repeated_ir_text() -> None:
    """Configs differing only in num_warps share their TTIR: the second is served from the
    worker's cache (same ir_id, the same tables), the TTGIR is extracted anew."""
    handler = CompileHandler(CompileInit(SUITE, "sm_90", static_stats=False))
    spec = load_suite(SUITE)["add_broadcast"]
    dims = spec.shapes_for("tiny")[0]
    configs = [c for c in spec.valid_configs(dims, "float32")]
    first = configs[0]
    twin = next(c for c in configs if c.kwargs == first.kwargs and c.num_warps != first.num_warps)
    a = handler(CompileTask(spec.name, dims, "float32", 0, first))
    b = handler(CompileTask(spec.name, dims, "float32", 0, twin))
    assert a.ttir_id == b.ttir_id and a.ttgir_id != b.ttgir_id
    assert b.graphs[b.ttir_id] is a.graphs[a.ttir_id]
    assert a.sass_code is None and a.stats == {}


@needs_tools
def test_a_harvest_writes_every_row_with_its_instruction_columns(reference_dataset) -> None:
    """End to end (the session's tiny harvest): rows land with the batched columns filled."""
    from schemas import read_table

    rows = read_table(str(reference_dataset), "measurements").to_pylist()
    compiled = [row for row in rows if row["binary_hash"]]
    assert compiled
    for row in compiled:
        assert row["stats_note"] is None and row["n_regs"] and row["spill_bytes"] == 0
        assert row["sass_instructions"] == sum(item["count"] for item in row["sass_mix"]) > 0


def test_importing_the_harvest_does_not_import_triton() -> None:
    """corpus.record selects Triton's interpreter after importing the harvest's modules, so
    those must leave Triton unimported (the batcher imports the extract modules when used)."""
    import subprocess
    import sys

    code = "import sys, corpus.harvest.runner, corpus.record.app; sys.exit('triton' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
