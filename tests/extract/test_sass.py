"""Static SASS statistics from cubins compiled here, with the tools in the Triton wheel."""

from __future__ import annotations

import logging

import pyarrow as pa
import pytest

from extract.compile import compile_call
from extract.sass import SassStats, _instruction_stats, find_tool, sass_class, static_stats
from schemas.tables import MEASUREMENTS
from tests.extract.kernels.cases import case

needs_tools = pytest.mark.skipif(
    find_tool("cuobjdump") is None or find_tool("nvdisasm") is None, reason="CUDA tools not in this Triton wheel"
)


@pytest.fixture(scope="module")
def cubins() -> dict[str, tuple[bytes, dict]]:
    out = {}
    for name, target in (("pointwise", "sm_80"), ("dot", "sm_90"), ("call", "sm_90")):
        item = case(name)
        result = compile_call(item.fn, item.args, target=target, num_warps=item.num_warps, num_stages=item.num_stages)
        out[name] = (result.asm["cubin"], result.metadata)
    return out


@needs_tools
def test_pointwise_stats(cubins: dict) -> None:
    cubin, meta = cubins["pointwise"]
    stats = static_stats(cubin, kernel_name=meta["name"], dynamic_shared_bytes=meta["shared"])
    assert stats.note is None
    assert stats.n_regs is not None and 8 <= stats.n_regs <= 255
    assert stats.spill_bytes == 0 and stats.local_bytes == 0
    assert stats.shared_mem_bytes == 0
    assert stats.sass_mix is not None and stats.sass_instructions == sum(stats.sass_mix.values())
    assert stats.sass_mix["memory"] >= 3  # two loads and a store at least
    assert "add_kernel" in stats.functions


@needs_tools
def test_hopper_matmul_uses_tensor_cores_and_shared_memory(cubins: dict) -> None:
    cubin, meta = cubins["dot"]
    stats = static_stats(cubin, kernel_name=meta["name"], dynamic_shared_bytes=meta["shared"])
    assert stats.sass_mix is not None and stats.sass_mix.get("tensor", 0) >= 1
    assert stats.shared_mem_bytes is not None and stats.shared_mem_bytes >= meta["shared"] > 0


@needs_tools
def test_named_kernel_is_reported(cubins: dict) -> None:
    cubin, meta = cubins["call"]
    stats = static_stats(cubin, kernel_name=meta["name"])
    assert stats.n_regs == stats.functions[meta["name"]]["REG"]
    missing = static_stats(cubin, kernel_name="no_such_kernel")
    assert missing.n_regs == stats.n_regs and "not in cubin" in (missing.note or "")


def test_missing_tools_give_nulls_and_a_logged_reason(cubins: dict, tmp_path, caplog: pytest.LogCaptureFixture) -> None:
    cubin, _ = cubins["pointwise"]
    with caplog.at_level(logging.WARNING, logger="extract.sass"):
        stats = static_stats(cubin, tools_dir=tmp_path)
    assert (stats.n_regs, stats.sass_instructions, stats.sass_mix, stats.shared_mem_bytes) == (None, None, None, None)
    assert stats.note is not None and "cuobjdump not found" in stats.note and "nvdisasm not found" in stats.note
    assert "cuobjdump not found" in caplog.text


@needs_tools
def test_garbage_cubin_never_raises() -> None:
    stats = static_stats(b"not an ELF file")
    assert stats.n_regs is None and stats.note and "<cubin>" in stats.note
    assert static_stats(b"").note == "empty cubin"


def test_opcode_classes() -> None:
    assert [sass_class(op) for op in ("HMMA", "HGMMA", "LDG", "UIADD3", "FFMA", "BRA", "F2FP", "MOV", "BAR", "XYZ")] == [
        "tensor", "tensor", "memory", "int", "float", "control", "conversion", "move", "sync", "other",
    ]


def test_spill_bytes_count_local_traffic_widths() -> None:
    listing = """
        /*0000*/                   STL.64 [R1], R2 ;
        /*0010*/              @!P0 LDL R4, [R1+0x8] ;
        /*0020*/                   LDL.128 R8, [R1+0x10] ;
        /*0030*/                   NOP ;
        /*0040*/                   EXIT ;
    """
    instructions, spill, mix = _instruction_stats(listing)
    assert (instructions, spill) == (4, 8 + 4 + 16)
    assert mix == {"control": 1, "memory": 3}


def test_row_matches_the_measurements_schema() -> None:
    stats = SassStats(n_regs=32, spill_bytes=0, shared_mem_bytes=1024, sass_instructions=10, sass_mix={"int": 6, "memory": 4})
    row = stats.to_row()
    assert set(row) <= set(MEASUREMENTS.names)
    columns = {name: pa.array([row[name]], type=MEASUREMENTS.field(name).type) for name in row}
    assert columns["sass_mix"].to_pylist() == [[{"cls": "int", "count": 6}, {"cls": "memory", "count": 4}]]
