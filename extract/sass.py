"""Static machine statistics of a cubin, from the CUDA tools shipped inside the Triton wheel
(``cuobjdump`` for resource usage, ``nvdisasm`` for the SASS listing).

No GPU is needed. When a tool is missing or fails, the affected fields are None and
``note`` says why (also logged); this never raises.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field
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

    def to_row(self) -> dict[str, Any]:
        """The ``measurements`` columns: n_regs, spill_bytes, shared_mem_bytes,
        sass_instructions, sass_mix (list of {cls, count}), stats_note."""
        mix = None if self.sass_mix is None else [{"cls": k, "count": v} for k, v in sorted(self.sass_mix.items())]
        return {
            "n_regs": self.n_regs,
            "spill_bytes": self.spill_bytes,
            "shared_mem_bytes": self.shared_mem_bytes,
            "sass_instructions": self.sass_instructions,
            "sass_mix": mix,
            "stats_note": self.note,
        }


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
    notes: list[str] = []
    if not cubin:
        return _failed("empty cubin")
    with tempfile.TemporaryDirectory(prefix="extract-sass-") as scratch:
        path = Path(scratch) / "kernel.cubin"
        path.write_bytes(cubin)
        usage = _resource_usage(path, tools_dir, notes)
        listing = _disassemble(path, tools_dir, notes)
        notes = [text.replace(str(path), "<cubin>") for text in notes]
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
    instructions = spill = mix = None
    if listing is not None:
        instructions, spill, mix = _instruction_stats(listing)
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


def _run_tool(name: str, args: list[str], tools_dir: str | Path | None, notes: list[str]) -> str | None:
    tool = find_tool(name, tools_dir)
    if tool is None:
        notes.append(f"{name} not found")
        return None
    try:
        completed = subprocess.run(
            [str(tool), *args], capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, check=False
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
