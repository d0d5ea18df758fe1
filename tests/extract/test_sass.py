"""Static SASS statistics from cubins compiled here, with the tools in the Triton wheel."""

from __future__ import annotations

import logging

import pyarrow as pa
import pytest

from extract.compile import compile_call
from extract.sass import (
    SassStats,
    _instruction_stats,
    code_sections,
    disassembler_arch,
    find_tool,
    instruction_stats_many,
    resource_stats,
    sass_class,
    static_stats,
)
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


@needs_tools
def test_one_call_over_many_cubins_equals_their_own_listings(cubins: dict) -> None:
    """The batched listing (code sections concatenated, nvdisasm -b) counts exactly what
    each cubin's own listing counts, per architecture."""
    for arch, names in (("SM80", ["pointwise"]), ("SM90a", ["dot", "call"])):
        codes = {name: code_sections(cubins[name][0]) for name in names}
        listed = instruction_stats_many(codes, arch)
        for name in names:
            cubin, meta = cubins[name]
            alone = static_stats(cubin, kernel_name=meta["name"], dynamic_shared_bytes=meta["shared"])
            joined = resource_stats(cubin, kernel_name=meta["name"], dynamic_shared_bytes=meta["shared"])
            assert joined.sass_mix is None and joined.n_regs == alone.n_regs
            assert joined.with_instructions(listed[name]) == alone
            assert listed[name].instructions > 0


@needs_tools
def test_a_bad_code_in_a_batch_costs_only_its_own_columns(cubins: dict) -> None:
    codes = {"dot": code_sections(cubins["dot"][0]), "junk": b"\x00" * 64, "call": code_sections(cubins["call"][0])}
    listed = instruction_stats_many(codes, "SM90a")
    assert listed["junk"].instructions is None and "nvdisasm exited" in (listed["junk"].note or "")
    assert listed["dot"] == instruction_stats_many({"dot": codes["dot"]}, "SM90a")["dot"]
    assert listed["call"].note is None and listed["call"].instructions
    odd = instruction_stats_many({"odd": b"\x00" * 24}, "SM90a")["odd"]
    assert odd.mix is None and "16-byte" in (odd.note or "")


def test_a_missing_disassembler_is_a_note_for_every_code(cubins: dict, tmp_path) -> None:
    codes = {name: code_sections(cubins[name][0]) for name in ("dot", "call")}
    listed = instruction_stats_many(codes, "SM90a", tools_dir=tmp_path)
    assert {item.note for item in listed.values()} == {"nvdisasm not found"}


def test_code_sections_are_the_executable_sections_only(cubins: dict) -> None:
    cubin, _ = cubins["dot"]
    code = code_sections(cubin)
    assert 0 < len(code) < len(cubin) and len(code) % 16 == 0
    with pytest.raises(ValueError, match="ELF"):
        code_sections(b"not an ELF file" * 8)
    assert disassembler_arch(90) == "SM90a" and disassembler_arch(80) == "SM80"
