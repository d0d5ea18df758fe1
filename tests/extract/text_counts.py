"""Count nodes and edges of printed Triton IR straight from the text, independently of the
extractor (which takes its structure from Triton's parser, not from the text).

Rules, for IR as Triton prints it (custom op syntax, one op per line):

- op nodes: op lines, plus one per block whose terminator MLIR elided (an ``scf.for`` or
  ``scf.if`` without results prints no ``scf.yield``);
- block-argument nodes: ``%x: type`` definitions in function signatures and ``^bb`` headers,
  plus ``%x = init`` definitions in ``scf.for`` (induction variable and iter_args) and in
  ``scf.while (...)``;
- data edges: every ``%value`` token on op lines and region-closing lines, minus the
  definitions (results before ``=`` and the block arguments above);
- region edges: one per block argument plus one per block (each block has one terminator
  that returns to the owning op; the fixtures have no branches).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_OP = re.compile(r'^\s*(?:(%[^=]*?)\s+=\s+)?"?([a-z_][\w$]*(?:\.[\w$]+)+)"?(?=[\s(<{:]|$)')
_VALUE = re.compile(r"%[\w$.\-]+(?:#\d+)?")
_TYPED_DEF = re.compile(r"%[\w$.\-]+:\s")
_INIT_DEF = re.compile(r"(%[\w$.\-]+) = %")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_TERMINATORS = {
    "scf.yield",
    "scf.condition",
    "tt.return",
    "tt.reduce.return",
    "tt.scan.return",
    "ttg.warp_yield",
    "ttg.warp_return",
}


@dataclass(frozen=True)
class TextCounts:
    op_nodes: int
    block_arg_nodes: int
    data_edges: int
    region_edges: int

    @property
    def nodes(self) -> int:
        return self.op_nodes + self.block_arg_nodes


def _without_locs(line: str) -> str:
    index = line.find(" loc(")
    while index >= 0:
        depth = 0
        end = index + 4
        while end < len(line):
            if line[end] == "(":
                depth += 1
            elif line[end] == ")":
                depth -= 1
                if depth == 0:
                    break
            end += 1
        line = line[:index] + line[end + 1 :]
        index = line.find(" loc(")
    return line


def count(text: str) -> TextCounts:
    """Counts for one printed module (see module docstring)."""
    op_nodes = block_args = uses = definitions = blocks = elided = 0
    block_stack: list[list[str]] = []  # op names of the open blocks
    for raw in text.splitlines():
        named = _without_locs(raw).strip()
        line = _STRING.sub('""', named)  # '%' inside strings (inline asm) is no value
        if not line or line.startswith(("#", "//")):
            continue
        if line.startswith("module"):
            block_stack.append([])
            continue
        if line.startswith("}"):
            closed = block_stack.pop()
            is_module_block = not block_stack
            if not is_module_block and (not closed or closed[-1] not in _TERMINATORS):
                elided += 1
            uses += len(_VALUE.findall(line))
            if line.endswith("{"):
                block_stack.append([])
                blocks += 1
            continue
        if line.startswith("^"):
            args = len(_TYPED_DEF.findall(line))
            block_args += args
            continue
        match = _OP.match(named)
        if match is None:
            continue
        op_nodes += 1
        name = match.group(2)
        block_stack[-1].append(name)
        values = _VALUE.findall(line)
        uses += len(values)
        if match.group(1):
            results = len(_VALUE.findall(match.group(1)))
            definitions += results
        if name.endswith(".func"):
            args = len(_TYPED_DEF.findall(line.split(") ->")[0].split(") attributes")[0]))
            block_args += args
            definitions += args
        elif name == "scf.for":
            args = 1 + len(_INIT_DEF.findall(line.split(" to ")[1]))
            block_args += args
            definitions += args
        elif name == "scf.while":
            args = len(_INIT_DEF.findall(line))
            block_args += args
            definitions += args
        if line.endswith("{"):
            block_stack.append([])
            blocks += 1
    return TextCounts(
        op_nodes=op_nodes + elided,
        block_arg_nodes=block_args,
        data_edges=uses - definitions,
        region_edges=block_args + blocks,
    )
