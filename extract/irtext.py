"""Reading Triton's printed MLIR (TTIR/TTGIR) text: operation lines, attribute dictionaries,
source locations and types.

This module is pure Python and knows nothing of the MLIR bindings. The graph structure
(operands, regions, block arguments) comes from Triton's parser via
:mod:`extract.triton_compat`; the text supplies what the bindings do not expose uniformly
across Triton versions: attributes, locations, layout encodings.

Operations appear in the printed text in pre-order (an op's line comes before the ops of its
regions). An op holding regions prints its trailing part (attributes of custom formats,
result types of generic forms, its location) on the line that closes its last region; the
scanner joins that part to the op.
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass, field
from functools import lru_cache

# --------------------------------------------------------------------------------------
# Locations stripped for ir_id
# --------------------------------------------------------------------------------------

_LOC_ALIAS_LINE = re.compile(r"^#loc\d*\s*=\s*loc\(.*$\n?", re.MULTILINE)
_ALIAS_LOC = re.compile(r" loc\(#loc\d*\)")  # the common form, removed fast
_SSA_NAME = re.compile(r"%[A-Za-z_$.\-][\w$.\-]*|%\d+")
_SSA_SPLIT = re.compile(f"({_SSA_NAME.pattern})")


def strip_locations(text: str) -> str:
    """The IR text without any source location: location alias lines are dropped, inline
    ``loc(...)`` clauses removed, and SSA value names (which Triton derives from source
    variable names) renumbered in order of first appearance. Trailing spaces are trimmed.

    Two compiles of the same kernel from different paths, lines or variable names give the
    same result; any change to operations, types or attributes changes it.
    """
    if "\n#loc" in text or text.startswith("#loc"):  # alias lines: at the end, one per location
        text = "\n".join(
            line for line in text.split("\n") if not (line.startswith("#loc") and _LOC_ALIAS_LINE.match(line))
        )
    text = _ALIAS_LOC.sub("", text)
    if "loc(" in text:
        text = _remove_inline_locs(text)
    # Split on the names (odd items), number them in order of first appearance, join: no
    # Python call per name (a 1k-op module has ~3k uses).
    parts = _SSA_SPLIT.split(text)
    names = parts[1::2]
    numbering = {name: f"%{index}" for index, name in enumerate(dict.fromkeys(names))}
    parts[1::2] = map(numbering.__getitem__, names)
    lines = "".join(parts).splitlines()
    return "\n".join(stripped for line in lines if (stripped := line.rstrip())) + "\n"


def _remove_inline_locs(text: str) -> str:
    parts: list[str] = []
    pos = 0
    while True:
        start = text.find("loc(", pos)
        if start < 0:
            parts.append(text[pos:])
            return "".join(parts)
        if start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_#.$"):
            parts.append(text[pos : start + 4])
            pos = start + 4
            continue
        end = _matching_paren(text, start + 3)
        head = text[pos:start]
        parts.append(head[:-1] if head.endswith(" ") else head)
        pos = end + 1


def _matching_paren(text: str, open_index: int) -> int:
    """Index of the ``)`` closing the ``(`` at ``open_index`` (strings respected)."""
    depth = 0
    index = open_index
    length = len(text)
    while index < length:
        char = text[index]
        if char == '"':
            index = _string_end(text, index)
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return index
        index += 1
    return length - 1


def _string_end(text: str, quote_index: int) -> int:
    index = quote_index + 1
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == '"':
            return index
        index += 1
    return len(text) - 1


# --------------------------------------------------------------------------------------
# Scanning operation lines
# --------------------------------------------------------------------------------------

_OP_LINE = re.compile(r'\s*(?:(%[^=]*?)\s+=\s+)?("?)([A-Za-z_][\w$]*(?:\.[\w$]+)+)\2(?=[\s(<{:]|$)')
_MODULE_LINE = re.compile(r"\s*module\b")


@dataclass
class TextOp:
    """One operation's printed text. ``text`` is its first line (without a region-opening
    brace) joined with what follows the closing brace of its last region."""

    name: str
    text: str
    line: int  # 1-based line in the scanned text


@dataclass
class ScannedText:
    """Operation texts in pre-order, the module's attributes and the location aliases."""

    ops: list[TextOp]
    module_attrs: dict[str, str]
    loc_aliases: dict[str, str]


def scan(text: str) -> ScannedText:
    """Split printed MLIR into operation texts (see module docstring)."""
    ops: list[TextOp] = []
    module_attrs: dict[str, str] = {}
    aliases: dict[str, str] = {}
    depth = 0
    last_op_at_depth: dict[int, TextOp | None] = {}
    op_match = _OP_LINE.match
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        first = stripped[0]
        if first == "#":
            if stripped.startswith("#loc"):
                key, _, value = stripped.partition(" = ")
                aliases[key] = value
            continue
        opens = stripped[-1] == "{"
        if first == "}":
            if opens:  # '} else {', '}, {', '} do {': next region of the same op
                continue
            depth -= 1
            owner = last_op_at_depth.get(depth)
            tail = stripped.lstrip("})").strip()
            if owner is not None and tail:
                owner.text = f"{owner.text} {tail}"
            continue
        if first == "^" or stripped.startswith("//"):
            continue
        match = op_match(stripped)
        if match is None:
            if _MODULE_LINE.match(stripped) and "attributes" in stripped:
                module_attrs = attr_dict(stripped[stripped.index("attributes") + 10 :].rstrip("{ ").strip())
            if opens:
                last_op_at_depth[depth] = last_op_at_depth.get(depth)
                depth += 1
            continue
        body = stripped[:-1].rstrip() if opens and not stripped.endswith("<{") else stripped
        op = TextOp(name=match.group(3), text=body, line=number)
        ops.append(op)
        last_op_at_depth[depth] = op
        if opens:
            depth += 1
    return ScannedText(ops=ops, module_attrs=module_attrs, loc_aliases=aliases)


# --------------------------------------------------------------------------------------
# Attribute dictionaries
# --------------------------------------------------------------------------------------

_CLOSERS = {"(": ")", "[": "]", "{": "}", "<": ">"}


def _split_top_level(text: str, separator: str = ",") -> list[str]:
    """Split on ``separator`` outside brackets and strings ('->' is not a bracket)."""
    parts: list[str] = []
    depth = 0
    start = 0
    index = 0
    length = len(text)
    while index < length:
        char = text[index]
        if char == '"':
            index = _string_end(text, index)
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "<":
            depth += 1
        elif char == ">" and text[index - 1] != "-":
            depth -= 1
        elif char == separator and depth == 0:
            parts.append(text[start:index].strip())
            start = index + 1
        index += 1
    tail = text[start:].strip()
    if tail:
        parts.append(tail)
    return parts


def attr_dict(text: str) -> dict[str, str]:
    """Parse ``{a = 1 : i32, b, "c.d" = "x"}`` into ``{"a": "1 : i32", "b": "unit", ...}``."""
    body = text.strip()
    if body.startswith("<{") and body.endswith("}>"):
        body = body[2:-2]
    elif body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    result: dict[str, str] = {}
    for item in _split_top_level(body):
        key, sep, value = item.partition(" = ")
        key = key.strip().strip('"')
        if key:
            result[key] = value.strip() if sep else "unit"
    return result


def _brace_group_end(text: str, open_index: int) -> int:
    depth = 0
    index = open_index
    while index < len(text):
        char = text[index]
        if char == '"':
            index = _string_end(text, index)
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index
        index += 1
    return len(text) - 1


def op_attributes(name: str, text: str) -> dict[str, str]:
    """Attributes printed in ``{...}`` / ``<{...}>`` dictionaries of one op's text.

    A dictionary counts when its brace follows a space (attribute dict, or properties
    ``<{``); braces inside types (``#ttg.slice<{...}>``) follow a letter and are skipped.
    For function ops only the ``attributes {...}`` clause is read (argument attributes are
    per argument, see :func:`function_arguments`).
    """
    if "{" not in text:
        return {}
    if name.endswith(".func"):
        index = text.find(" attributes {")
        return attr_dict(text[index + 12 : _brace_group_end(text, index + 12) + 1]) if index >= 0 else {}
    attrs: dict[str, str] = {}
    index = text.find("{")
    while index >= 0:
        before = text[index - 1] if index > 0 else " "
        if before == "<" and index > 1 and text[index - 2] == " ":
            before = " "
        if before == " ":
            end = _brace_group_end(text, index)
            attrs.update(attr_dict(text[index : end + 1]))
            index = text.find("{", end + 1)
        else:
            index = text.find("{", index + 1)
    return attrs


_ARG_PATTERN = re.compile(r"%[\w$.\-]+:\s*(.*)$", re.DOTALL)


def function_arguments(text: str) -> list[tuple[dict[str, str], str | None]]:
    """Per argument of a printed ``tt.func``: its attribute dict and its location text."""
    open_index = text.find("(")
    if open_index < 0:
        return []
    close = _matching_paren(text, open_index)
    arguments: list[tuple[dict[str, str], str | None]] = []
    for item in _split_top_level(text[open_index + 1 : close]):
        match = _ARG_PATTERN.match(item)
        if not match:
            continue
        rest = match.group(1)
        loc = None
        loc_index = rest.rfind(" loc(")
        if loc_index >= 0:
            loc = rest[loc_index + 5 : -1]
            rest = rest[:loc_index]
        attrs = {}
        brace = rest.find(" {")
        if brace >= 0:
            attrs = attr_dict(rest[brace + 1 :].strip())
        arguments.append((attrs, loc))
    return arguments


# --------------------------------------------------------------------------------------
# Locations
# --------------------------------------------------------------------------------------

_FILE_LOC = re.compile(r'^"(?:[^"\\]|\\.)*":(\d+):(\d+)')
_NAME_LOC = re.compile(r'^"((?:[^"\\]|\\.)*)"(\((.*)\))?$', re.DOTALL)


def op_location(text: str) -> str | None:
    """The body of the op's own trailing ``loc(...)``, e.g. ``#loc12``."""
    index = text.rfind(" loc(")
    if index < 0 or not text.endswith(")"):
        return None
    return text[index + 5 : -1]


@dataclass(frozen=True)
class SourceLoc:
    """Source line and column (1-based as MLIR prints them) and variable name."""

    line: int | None = None
    col: int | None = None
    name: str | None = None


_NO_LOC = SourceLoc()


class LocationResolver:
    """Resolves location text (``#loc3``, ``"f.py":3:4``, ``"x"(#loc2)``, ``callsite``,
    ``fused``) against a module's alias table, memoized."""

    def __init__(self, aliases: dict[str, str], ignore_file: str | None = None) -> None:
        self._aliases = aliases
        self._memo: dict[str, SourceLoc] = {}
        self._ignore_file = ignore_file

    def resolve(self, body: str | None) -> SourceLoc:
        if not body:
            return _NO_LOC
        cached = self._memo.get(body)
        if cached is None:
            self._memo[body] = _NO_LOC  # guards against alias cycles
            cached = self._memo[body] = self._resolve(body.strip(), 0)
        return cached

    def _resolve(self, body: str, depth: int) -> SourceLoc:
        if depth > 32:
            return _NO_LOC
        if body.startswith("#loc"):
            alias = self._aliases.get(body)
            if alias is None:
                return _NO_LOC
            inner = alias[4:-1] if alias.startswith("loc(") else alias
            return self.resolve(inner)
        if body.startswith("loc("):
            return self._resolve(body[4:-1], depth + 1)
        if body.startswith("callsite("):
            callee, _, caller = body[9:-1].partition(" at ")
            first = self._resolve(callee.strip(), depth + 1)
            return first if first.line is not None else self._resolve(caller.strip(), depth + 1)
        if body.startswith("fused"):
            start = body.find("[")
            for item in _split_top_level(body[start + 1 : body.rfind("]")]):
                found = self._resolve(item, depth + 1)
                if found.line is not None:
                    return found
            return _NO_LOC
        match = _FILE_LOC.match(body)
        if match:
            if self._ignore_file and body.startswith(f'"{self._ignore_file}"'):
                return _NO_LOC
            return SourceLoc(int(match.group(1)), int(match.group(2)), None)
        match = _NAME_LOC.match(body)
        if match:
            child = self._resolve(match.group(3), depth + 1) if match.group(3) else _NO_LOC
            return SourceLoc(child.line, child.col, match.group(1))
        return _NO_LOC


# --------------------------------------------------------------------------------------
# Types and layouts
# --------------------------------------------------------------------------------------

_FLOAT_BITS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64, "tf32": 32}


@dataclass(frozen=True)
class Layout:
    """Numbers of a TTGIR layout encoding (fields are None when not applicable)."""

    kind: str | None = None
    size_per_thread: tuple[int, ...] | None = None
    threads_per_warp: tuple[int, ...] | None = None
    warps_per_cta: tuple[int, ...] | None = None
    order: tuple[int, ...] | None = None
    mma_version: int | None = None
    instr_shape: tuple[int, ...] | None = None
    swizzle_vec: int | None = None
    swizzle_per_phase: int | None = None
    swizzle_max_phase: int | None = None


@dataclass(frozen=True)
class TypeInfo:
    """Element type and shape of a value's type."""

    dtype: str | None
    shape: tuple[int, ...] = ()
    numel: int | None = 1
    bitwidth: int | None = None
    is_pointer: bool = False
    layout: Layout = field(default_factory=Layout)


def element_bitwidth(dtype: str) -> int | None:
    """Bits of an element type: i1 -> 1, f16 -> 16, f8E4M3FN -> 8, pointers -> 64."""
    if dtype.startswith(("ptr<", "desc<")) or dtype == "index":
        return 64
    if dtype in _FLOAT_BITS:
        return _FLOAT_BITS[dtype]
    match = re.match(r"^[iu]i?(\d+)$", dtype) or re.match(r"^si(\d+)$", dtype)
    if match:
        return int(match.group(1))
    match = re.match(r"^f(\d+)", dtype)
    if match:
        return int(match.group(1))
    return None


def _inner_generic(text: str, prefix: str) -> str:
    """``prefix<...>`` -> the text between the outer angle brackets."""
    return text[len(prefix) + 1 : text.rfind(">")]


def _element_name(text: str) -> tuple[str, bool]:
    """Normalize an element type: '!tt.ptr<f16>' -> ('ptr<f16>', True)."""
    text = text.strip()
    if text.startswith("!tt.ptr<"):
        inner = _inner_generic(text, "!tt.ptr").split(",")[0].strip()
        inner_name, _ = _element_name(inner)
        return f"ptr<{inner_name}>", True
    if text.startswith("!"):
        return text[1:].split("<")[0], False
    return text, False


def _split_shape(body: str) -> tuple[tuple[int, ...], str]:
    """'64x32x!tt.ptr<f16>, #blocked' -> ((64, 32), '!tt.ptr<f16>, #blocked')."""
    dims: list[int] = []
    rest = body
    while True:
        match = re.match(r"^(\d+|\?)x", rest)
        if not match:
            return tuple(dims), rest
        dims.append(int(match.group(1)) if match.group(1) != "?" else -1)
        rest = rest[match.end() :]


@lru_cache(maxsize=4096)
def parse_type(text: str) -> TypeInfo:
    """Type text as printed by MLIR (aliases expanded) -> :class:`TypeInfo`."""
    text = text.strip()
    if text.startswith("tensor<") or text.startswith("!ttg.memdesc<"):
        prefix = "tensor" if text.startswith("tensor<") else "!ttg.memdesc"
        parts = _split_top_level(_inner_generic(text, prefix))
        shape, element = _split_shape(parts[0])
        dtype, is_pointer = _element_name(element)
        layout = parse_layout(parts[1]) if len(parts) > 1 else Layout()
        numel = math.prod(shape) if all(d >= 0 for d in shape) else None
        return TypeInfo(dtype, shape, numel, element_bitwidth(dtype), is_pointer, layout)
    if text.startswith("!tt.tensordesc<"):
        inner = parse_type(_inner_generic(text, "!tt.tensordesc"))
        dtype = f"desc<{inner.dtype}>"
        return TypeInfo(dtype, inner.shape, inner.numel, 64, True, inner.layout)
    dtype, is_pointer = _element_name(text)
    return TypeInfo(dtype, (), 1, element_bitwidth(dtype), is_pointer, Layout())


_LAYOUT_KIND = {
    "blocked": "blocked",
    "slice": "slice",
    "dot_op": "dot_op",
    "nvidia_mma": "mma",
    "amd_mfma": "mfma",
    "amd_wmma": "wmma",
    "swizzled_shared": "shared",
    "shared": "shared",
    "nvmma_shared": "nvmma_shared",
    "linear": "linear",
    "padded_shared": "padded_shared",
    "shared_linear": "shared_linear",
}


def _int_list(value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    try:
        return tuple(int(v) for v in value.strip().strip("[]").split(",") if v.strip())
    except ValueError:
        return None


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value.split(":")[0].strip())
    except ValueError:
        return None


@lru_cache(maxsize=1024)
def parse_layout(text: str) -> Layout:
    """An encoding such as ``#ttg.blocked<{sizePerThread = [1, 8], ...}>`` -> numbers.

    A slice or dot-operand layout keeps its own kind and takes the numbers of its parent.
    """
    text = text.strip()
    match = re.match(r"^#(\w+)\.(\w+)(?:<(.*)>)?$", text, re.DOTALL)
    if not match:
        return Layout()
    mnemonic = match.group(2)
    kind = _LAYOUT_KIND.get(mnemonic, mnemonic)
    params = attr_dict(match.group(3)) if match.group(3) and match.group(3).startswith("{") else {}
    parent = parse_layout(params["parent"]) if "parent" in params else Layout()
    return Layout(
        kind=kind,
        size_per_thread=_int_list(params.get("sizePerThread")) or parent.size_per_thread,
        threads_per_warp=_int_list(params.get("threadsPerWarp")) or parent.threads_per_warp,
        warps_per_cta=_int_list(params.get("warpsPerCTA")) or parent.warps_per_cta,
        order=_int_list(params.get("order")) or parent.order,
        mma_version=_int(params.get("versionMajor")) or parent.mma_version,
        instr_shape=_int_list(params.get("instrShape")) or parent.instr_shape,
        swizzle_vec=_int(params.get("vec")),
        swizzle_per_phase=_int(params.get("perPhase")),
        swizzle_max_phase=_int(params.get("maxPhase")),
    )


# --------------------------------------------------------------------------------------
# Scalar values of constants
# --------------------------------------------------------------------------------------


def constant_value(text: str, dtype: str | None) -> float | None:
    """Value of ``arith.constant`` (scalar or splat ``dense<v>``); None for non-splats."""
    index = text.find("arith.constant ")
    if index < 0:
        return None
    body = text[index + 15 :]
    loc = body.rfind(" loc(")
    if loc >= 0:
        body = body[:loc]
    value = body.split(" : ")[0].strip()
    if value.startswith("dense<"):
        value = value[6 : value.rfind(">")]
        if value.startswith("["):
            return None
    return _scalar(value, dtype)


def _scalar(value: str, dtype: str | None) -> float | None:
    if value == "true":
        return 1.0
    if value == "false":
        return 0.0
    if value.startswith("0x") and dtype:
        return _hex_float(value, dtype)
    try:
        return float(value)
    except ValueError:
        return None


def _hex_float(value: str, dtype: str) -> float | None:
    bits = int(value, 16)
    try:
        if dtype == "f32":
            return struct.unpack("<f", bits.to_bytes(4, "little"))[0]
        if dtype == "f64":
            return struct.unpack("<d", bits.to_bytes(8, "little"))[0]
        if dtype == "f16":
            return struct.unpack("<e", bits.to_bytes(2, "little"))[0]
        if dtype == "bf16":
            return struct.unpack("<f", (bits << 16).to_bytes(4, "little"))[0]
    except (OverflowError, struct.error):
        return None
    return float(bits) if dtype.startswith("i") else None
