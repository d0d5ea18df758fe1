"""Static machine statistics of a cubin, from the CUDA tools shipped inside the Triton wheel
(``cuobjdump`` for resource usage, ``nvdisasm`` for the SASS listing).

No GPU is needed. When a tool is missing or fails, the affected fields are None and
``note`` says why (also logged); this never raises.

Two ways to the instruction mix. :func:`static_stats` runs both tools on one cubin. A harvest
compiles thousands, and ``nvdisasm`` spends ~0.2 s of CPU starting up whatever the cubin's size
(measured: 0.18-0.27 s user for an 8 KB and a 110 KB cubin alike), so it splits the work:
:func:`resource_stats` (``cuobjdump``, ~2 ms) per cubin, and :func:`instruction_stats_many`
over many cubins in one ``nvdisasm`` call. That call disassembles the cubins' code sections
(:func:`code_sections`) concatenated into one raw instruction binary (``nvdisasm -b SM90a``)
and attributes each instruction back by its offset; the counts equal those of the cubins'
own listings (``tests/extract/test_sass.py`` checks them against :func:`static_stats`).
"""

from __future__ import annotations

import bisect
import logging
import os
import re
import struct
import subprocess
import tempfile
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from extract import triton_compat

LOG = logging.getLogger(__name__)

TOOL_TIMEOUT_S = 60.0

_MEMORY = (
    "LD LDG LDS LDL LDC LDSM LDGSTS LDTM ST STG STS STL STSM STTM ATOM ATOMG ATOMS RED REDG REDAS "
    "UTMALDG UTMASTG UTMAPF UTMAREDG UTMACCTL UBLKCP UBLKRED UBLKPF CCTL CCTLL SULD SUST SURED TLD "
    "TEX TLD4 TXQ LDGMC UTCCP"
)
_TENSOR = "HMMA IMMA DMMA BMMA QMMA OMMA HGMMA IGMMA QGMMA BGMMA UTCHMMA UTCIMMA UTCQMMA UTCOMMA UTCMMA UTCBAR"
_FLOAT = (
    "FADD FMUL FFMA FMNMX FSET FSETP FCHK FSWZADD MUFU FSEL FADD2 FMUL2 FFMA2 FMNMX3 HADD2 HMUL2 HFMA2 "
    "HMNMX2 HSET2 HSETP2 DADD DMUL DFMA DSETP DMNMX"
)
_INT = (
    "IADD IADD3 IADD32I IMAD IMUL IMNMX ISETP IABS LOP LOP3 LOP32I SHF SHL SHR LEA POPC FLO BREV BMSK "
    "SGXT SEL IDP IDP4A VIADD VIMNMX VIMNMX3 VABSDIFF VABSDIFF4 PLOP3 ISCADD BFE BFI IMAD32I"
)
_CONVERSION = "F2F F2I I2F I2I F2FP I2FP F2IP FRND"
_MOVE = "MOV MOV32I S2R S2UR CS2R R2UR SHFL P2R R2P PRMT VOTE VOTEU REDUX CREDUX MOVM"
_CONTROL = "BRA BRX JMP JMX CALL RET EXIT BSSY BSYNC WARPSYNC YIELD KILL NANOSLEEP BPT BREAK ELECT ACQBULK PMTRIG"
_SYNC = "BAR MEMBAR FENCE DEPBAR LDGDEPBAR SYNCS WARPGROUP ERRBAR ARRIVES"

SASS_CLASSES: dict[str, str] = {
    opcode: cls
    for cls, names in (
        ("memory", _MEMORY),
        ("tensor", _TENSOR),
        ("float", _FLOAT),
        ("int", _INT),
        ("conversion", _CONVERSION),
        ("move", _MOVE),
        ("control", _CONTROL),
        ("sync", _SYNC),
    )
    for opcode in names.split()
}
"""Opcode (without modifiers) -> class. Uniform-datapath variants (``UIADD3``, ``UMOV``)
take the class of the base opcode; unknown opcodes count as 'other'."""

_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P[T\d]\s+)?([A-Z][A-Z0-9_]*)((?:\.[A-Z0-9_]+)*)", re.MULTILINE)
_OFFSET = re.compile(r"^\s*/\*([0-9a-f]+)\*/", re.MULTILINE)
_FUNCTION_USAGE = re.compile(r"Function ([^:\s]+):\s*\n\s*(.*)")
_USAGE_FIELD = re.compile(r"([A-Z]+(?:\[\d+\])?):(\d+)")
_LOCAL_WIDTH = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "64": 8, "128": 16}


@dataclass(frozen=True)
class SassStats:
    """Static statistics of a cubin; fields match the ``measurements`` columns.

    ``n_regs``: registers per thread of the kernel. ``spill_bytes``: bytes per thread moved
    by local-memory store and load instructions (STL/LDL, the spill traffic ptxas reports
    as spill stores + loads). ``shared_mem_bytes``: static shared memory from the cubin plus
    the dynamic shared memory passed in (Triton allocates its buffers dynamically), bytes.
    ``sass_instructions``: SASS instructions of all functions, alignment NOPs excluded.
    ``sass_mix``: instruction count per class. ``local_bytes``: local-memory frame per
    thread, bytes. ``note``: why fields are None, when some are.
    """

    n_regs: int | None = None
    spill_bytes: int | None = None
    shared_mem_bytes: int | None = None
    sass_instructions: int | None = None
    sass_mix: dict[str, int] | None = None
    local_bytes: int | None = None
    note: str | None = None
    functions: dict[str, dict[str, int]] = field(default_factory=dict)

    def with_instructions(self, listed: InstructionStats) -> SassStats:
        """These resource facts with the instruction columns of ``listed`` (notes joined)."""
        note = "; ".join(filter(None, [self.note, listed.note])) or None
        return replace(
            self,
            spill_bytes=listed.spill_bytes,
            sass_instructions=listed.instructions,
            sass_mix=listed.mix,
            note=note,
        )

    def to_row(self) -> dict[str, Any]:
        """The ``measurements`` columns: n_regs, spill_bytes, shared_mem_bytes,
        sass_instructions, sass_mix (list of {cls, count}), stats_note."""
        return {
            "n_regs": self.n_regs,
            "spill_bytes": self.spill_bytes,
            "shared_mem_bytes": self.shared_mem_bytes,
            "sass_instructions": self.sass_instructions,
            "sass_mix": mix_column(self.sass_mix),
            "stats_note": self.note,
        }


def mix_column(mix: Mapping[str, int] | None) -> list[dict[str, Any]] | None:
    """Class counts as the ``measurements.sass_mix`` column holds them: {cls, count} by class."""
    return None if mix is None else [{"cls": k, "count": v} for k, v in sorted(mix.items())]


def sass_class(opcode: str) -> str:
    """Class of an opcode such as 'IMAD' or 'UIADD3' (modifiers stripped by the caller)."""
    cls = SASS_CLASSES.get(opcode)
    if cls is None and opcode.startswith("U") and len(opcode) > 1:
        cls = SASS_CLASSES.get(opcode[1:])
    return cls or "other"


def find_tool(name: str, tools_dir: str | Path | None = None) -> Path | None:
    """Path of ``cuobjdump`` / ``nvdisasm``: in ``tools_dir`` when given, else the one Triton
    is configured to use (its wheel ships them). None when not found."""
    if tools_dir is not None:
        candidate = Path(tools_dir) / name
        return candidate if candidate.is_file() and os.access(candidate, os.X_OK) else None
    found = triton_compat.nvidia_tool_path(name)
    return Path(found) if found else None


def static_stats(
    cubin: bytes,
    *,
    kernel_name: str | None = None,
    dynamic_shared_bytes: int | None = None,
    tools_dir: str | Path | None = None,
) -> SassStats:
    """Registers, spills, shared memory and SASS instruction mix of ``cubin``.

    ``kernel_name`` picks the function whose registers and static shared memory are
    reported (default: the function with the most registers). ``dynamic_shared_bytes`` (the
    compile metadata's ``shared``) is added to the static shared memory. Never raises.
    """
    return _cubin_stats(cubin, kernel_name, dynamic_shared_bytes, tools_dir, listing=True)


def resource_stats(
    cubin: bytes,
    *,
    kernel_name: str | None = None,
    dynamic_shared_bytes: int | None = None,
    tools_dir: str | Path | None = None,
) -> SassStats:
    """:func:`static_stats` without the SASS listing: registers, shared and local memory from
    ``cuobjdump`` (``spill_bytes``, ``sass_instructions`` and ``sass_mix`` stay None; fill
    them with :func:`instruction_stats_many` and :meth:`SassStats.with_instructions`).
    Never raises."""
    return _cubin_stats(cubin, kernel_name, dynamic_shared_bytes, tools_dir, listing=False)


def _cubin_stats(
    cubin: bytes,
    kernel_name: str | None,
    dynamic_shared_bytes: int | None,
    tools_dir: str | Path | None,
    *,
    listing: bool,
) -> SassStats:
    if not cubin:
        return _failed("empty cubin")
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="extract-sass-") as scratch:
        path = Path(scratch) / "kernel.cubin"
        path.write_bytes(cubin)
        usage = _resource_usage(path, tools_dir, notes)
        text = _disassemble(path, tools_dir, notes) if listing else None
        notes = [note.replace(str(path), "<cubin>") for note in notes]
    instructions = spill = mix = None
    if text is not None:
        instructions, spill, mix = _instruction_stats(text)
    return _combine(usage, kernel_name, dynamic_shared_bytes, notes, instructions, spill, mix)


def _combine(
    usage: dict[str, dict[str, int]] | None,
    kernel_name: str | None,
    dynamic_shared_bytes: int | None,
    notes: list[str],
    instructions: int | None,
    spill: int | None,
    mix: dict[str, int] | None,
) -> SassStats:
    n_regs = shared = local = None
    if usage:
        chosen = usage.get(kernel_name) if kernel_name else None
        if chosen is None:
            if kernel_name:
                notes.append(f"function {kernel_name!r} not in cubin; reporting the largest")
            chosen = max(usage.values(), key=lambda fields: fields.get("REG", 0))
        n_regs = chosen.get("REG")
        local = chosen.get("LOCAL")
        static_shared = chosen.get("SHARED")
        if static_shared is not None:
            shared = static_shared + (dynamic_shared_bytes or 0)
    note = "; ".join(notes) or None
    if note:
        LOG.warning("static SASS stats incomplete: %s", note)
    return SassStats(
        n_regs=n_regs,
        spill_bytes=spill,
        shared_mem_bytes=shared,
        sass_instructions=instructions,
        sass_mix=mix,
        local_bytes=local,
        note=note,
        functions=usage or {},
    )


def _failed(reason: str) -> SassStats:
    LOG.warning("static SASS stats unavailable: %s", reason)
    return SassStats(note=reason)


def _run_tool(
    name: str, args: list[str], tools_dir: str | Path | None, notes: list[str], timeout_s: float = TOOL_TIMEOUT_S
) -> str | None:
    tool = find_tool(name, tools_dir)
    if tool is None:
        notes.append(f"{name} not found")
        return None
    try:
        completed = subprocess.run(
            [str(tool), *args], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        notes.append(f"{name} failed: {exc}")
        return None
    if completed.returncode != 0:
        detail = (completed.stderr or completed.stdout).strip().splitlines()
        notes.append(f"{name} exited {completed.returncode}: {detail[-1] if detail else 'no output'}")
        return None
    return completed.stdout


def _resource_usage(path: Path, tools_dir: str | Path | None, notes: list[str]) -> dict[str, dict[str, int]] | None:
    output = _run_tool("cuobjdump", ["-res-usage", str(path)], tools_dir, notes)
    if output is None:
        return None
    usage = {
        match.group(1): {key: int(value) for key, value in _USAGE_FIELD.findall(match.group(2))}
        for match in _FUNCTION_USAGE.finditer(output)
    }
    if not usage:
        notes.append("cuobjdump reported no functions")
        return None
    return usage


def _disassemble(path: Path, tools_dir: str | Path | None, notes: list[str]) -> str | None:
    return _run_tool("nvdisasm", ["-c", str(path)], tools_dir, notes)


def _instruction_stats(listing: str) -> tuple[int, int, dict[str, int]]:
    """(instruction count without NOPs, local load/store bytes, class counts)."""
    classes: Counter[str] = Counter()
    spill = 0
    for match in _INSTRUCTION.finditer(listing):
        opcode = match.group(1)
        if opcode == "NOP":
            continue
        classes[sass_class(opcode)] += 1
        if opcode in ("STL", "LDL"):
            spill += _local_width(match.group(2))
    return sum(classes.values()), spill, dict(sorted(classes.items()))


def _local_width(modifiers: str) -> int:
    for modifier in modifiers.split("."):
        if modifier in _LOCAL_WIDTH:
            return _LOCAL_WIDTH[modifier]
    return 4


# --------------------------------------------------------------------------------------
# Many cubins, one nvdisasm call
# --------------------------------------------------------------------------------------

INSTRUCTION_BYTES = 16
"""Size of one SASS instruction from Volta (sm_70) on: raw code is cut at multiples of it."""
BATCH_TIMEOUT_S_PER_MB = 10.0
"""Extra seconds a batch call may take per MiB of code, beyond :data:`TOOL_TIMEOUT_S`."""
_SHF_EXECINSTR = 0x4


@dataclass(frozen=True)
class InstructionStats:
    """The listing-derived columns of one cubin: ``instructions`` (SASS instructions without
    alignment NOPs), ``spill_bytes`` (bytes per thread moved by STL/LDL), ``mix`` (count per
    class), or all None and ``note`` saying why."""

    instructions: int | None = None
    spill_bytes: int | None = None
    mix: dict[str, int] | None = None
    note: str | None = None


def code_sections(cubin: bytes) -> bytes:
    """The executable sections (``.text.<function>``) of an ELF64 little-endian cubin,
    concatenated in section-header order: the raw instructions ``nvdisasm -b`` decodes.
    Raises ValueError for anything that is not such an ELF file."""
    if len(cubin) < 64 or cubin[:4] != b"\x7fELF" or cubin[4] != 2 or cubin[5] != 1:
        raise ValueError("not an ELF64 little-endian file")
    (section_offset,) = struct.unpack_from("<Q", cubin, 0x28)
    entry_size, count = struct.unpack_from("<HH", cubin, 0x3A)
    if entry_size < 64 or section_offset + entry_size * count > len(cubin):
        raise ValueError("ELF section headers out of bounds")
    pieces = []
    for index in range(count):
        _, _, flags, _, offset, size = struct.unpack_from("<IIQQQQ", cubin, section_offset + index * entry_size)
        if flags & _SHF_EXECINSTR and size:
            if offset + size > len(cubin):
                raise ValueError(f"ELF section {index} out of bounds")
            pieces.append(cubin[offset : offset + size])
    return b"".join(pieces)


def disassembler_arch(capability: int) -> str:
    """``nvdisasm -b`` architecture of code Triton compiled for compute capability
    ``capability``: Triton builds ``sm_90a``-style arch-specific code from 9.0 on (its
    ``sm_arch_from_capability``), so 90 -> 'SM90a', 80 -> 'SM80'."""
    return f"SM{capability}{'a' if capability >= 90 else ''}"


def instruction_stats_many(
    codes: Mapping[str, bytes], arch: str, *, tools_dir: str | Path | None = None
) -> dict[str, InstructionStats]:
    """Instruction statistics of many cubins' code (key -> :func:`code_sections`), from one
    ``nvdisasm`` call: the codes are concatenated into one raw binary of architecture
    ``arch`` (:func:`disassembler_arch`) and every listed instruction is attributed back to
    its code by offset. When the joint call fails, each code is disassembled alone, so one
    bad code costs only its own columns. Never raises."""
    results: dict[str, InstructionStats] = {}
    joint: dict[str, bytes] = {}
    for key, code in codes.items():
        if not code:
            results[key] = InstructionStats(0, 0, {})
        elif len(code) % INSTRUCTION_BYTES:
            results[key] = InstructionStats(note=f"code of {len(code)} bytes is not whole {INSTRUCTION_BYTES}-byte instructions")
        else:
            joint[key] = code
    if not joint:
        return results
    notes: list[str] = []
    listed = _disassemble_raw(joint, arch, tools_dir, notes)
    if listed is not None:
        return {**results, **listed}
    if len(joint) == 1 or any(_whole_call_failed(note) for note in notes):
        note = "; ".join(notes)
        LOG.warning("static SASS stats incomplete: %s", note)
        return {**results, **{key: InstructionStats(note=note) for key in joint}}
    keys = list(joint)  # halve until the code the joint call choked on stands alone
    for half in (keys[: len(keys) // 2], keys[len(keys) // 2 :]):
        results.update(instruction_stats_many({key: joint[key] for key in half}, arch, tools_dir=tools_dir))
    return results


def _whole_call_failed(note: str) -> bool:
    """A failure no smaller batch would avoid: the tool is missing, or refused its options
    (an architecture it does not know), rather than choking on some code."""
    return note.endswith(" not found") or "for option" in note


def _disassemble_raw(
    codes: Mapping[str, bytes], arch: str, tools_dir: str | Path | None, notes: list[str]
) -> dict[str, InstructionStats] | None:
    """One ``nvdisasm -b ARCH`` over the concatenated codes, split back by offset; None (and
    a note) when the tool is missing or fails."""
    keys = list(codes)
    starts = []
    blob = bytearray()
    for key in keys:
        starts.append(len(blob))
        blob += codes[key]
    with tempfile.TemporaryDirectory(prefix="extract-sass-") as scratch:
        path = Path(scratch) / "code.bin"
        path.write_bytes(blob)
        timeout_s = TOOL_TIMEOUT_S + BATCH_TIMEOUT_S_PER_MB * len(blob) / (1 << 20)
        # -ndf: the dataflow pass only adds branch-target labels, never changes an opcode
        listing = _run_tool("nvdisasm", ["-b", arch, "-ndf", str(path)], tools_dir, notes, timeout_s)
        notes[:] = [text.replace(str(path), "<cubin>") for text in notes]
    if listing is None:
        return None
    lines: list[list[str]] = [[] for _ in keys]
    for line in listing.splitlines():
        match = _OFFSET.match(line)
        if match:
            lines[bisect.bisect_right(starts, int(match.group(1), 16)) - 1].append(line)
    stats = {}
    for key, own in zip(keys, lines):
        instructions, spill, mix = _instruction_stats("\n".join(own))
        stats[key] = InstructionStats(instructions, spill, mix)
    return stats
