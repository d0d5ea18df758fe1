"""Triton device IR (TTIR / TTGIR) as a directed multigraph with data and region edges.

Semantics (see docs/graphs.md for a drawn example):

- Nodes: every operation inside the module (the ``builtin.module`` container itself is not
  a node; its attributes become graph facts) and every block argument (function arguments,
  loop induction variables, iter_args, while before/after arguments, combiner arguments).
  Numbering is a pre-order walk: an op, then for each of its regions in order, for each
  block, the block's arguments, then the block's ops (recursively).
- Data edges: producer -> consumer, one per operand use; ``position`` is the operand index
  at the consumer (a value used twice gives two edges). The producer is the defining op, or
  the block-argument node. ``result_index`` says which result of a multi-result producer.
- Region edges, generic over any op with regions: op -> each argument of each block of its
  regions (``position`` = argument index), and the terminator of each block -> the op
  owning the region (``position`` = region index). ``region_index`` names the region.
  Branch terminators (``cf.br`` and the like) jump to blocks, not to the owner, and get no
  terminator edge. Nothing else is added: calls do not link to callees.
- Node features come from the bindings (types) and the printed text (attributes,
  locations); see :class:`Node`.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, NamedTuple

from extract import irtext, triton_compat
from schemas.identity import canonical_json, ir_id
from schemas.tables import IR_NODE_INTEGER_ATTRIBUTES

LOG = logging.getLogger(__name__)

EDGE_DATA = "data"
EDGE_REGION = "region"
NODE_OP = "op"
NODE_BLOCK_ARG = "block_arg"

_BRANCH_TERMINATORS = frozenset(
    {"cf.br", "cf.cond_br", "cf.switch", "llvm.br", "llvm.cond_br", "llvm.switch"}
)
_LOOPS = frozenset({"scf.for", "scf.while"})
_REDUCTIONS = frozenset({"tt.reduce", "tt.scan"})
_DOTS = frozenset(
    {
        "tt.dot",
        "tt.dot_scaled",
        "ttng.warp_group_dot",
        "ttng.tc_gen5_mma",
        "ttng.tc_gen5_mma_scaled",
        "ttg.dot",
    }
)
_LOADS = frozenset(
    {
        "tt.load",
        "tt.descriptor_load",
        "tt.descriptor_gather",
        "ttg.async_copy_global_to_local",
        "ttng.async_tma_copy_global_to_local",
        "ttng.async_tma_gather",
        "amdgpu.buffer_load",
        "amdgpu.buffer_load_to_local",
    }
)
_STORES = frozenset(
    {
        "tt.store",
        "tt.descriptor_store",
        "tt.descriptor_scatter",
        "tt.descriptor_reduce",
        "tt.atomic_rmw",
        "tt.atomic_cas",
        "ttng.async_tma_copy_local_to_global",
        "ttng.async_tma_reduce",
        "ttng.async_tma_scatter",
        "amdgpu.buffer_store",
        "amdgpu.buffer_atomic_rmw",
        "amdgpu.buffer_atomic_cas",
    }
)
_PROGRAM_AXIS = {"x": 0, "y": 1, "z": 2}
# Integer forms of Triton enums, for IR printers that emit the number instead of the name.
_CACHE_MODIFIERS = {1: None, 2: ".ca", 3: ".cg", 4: ".wb", 5: ".cs", 6: ".wt", 7: ".cv"}
_EVICTION_POLICIES = {1: None, 2: "evict_first", 3: "evict_last"}
_INPUT_PRECISIONS = {0: "tf32", 1: "tf32x3", 2: "ieee", 3: "bf16x3", 4: "bf16x6"}
_CACHE_RE = re.compile(r"\b(?:cache_modifier|cacheModifier|cache)\s*=\s*([\w.]+)")
_EVICT_RE = re.compile(r"\b(?:eviction_policy|evictionPolicy|evict)\s*=\s*([\w.]+)")
_PRECISION_RE = re.compile(r"\binputPrecision\s*=\s*(\w+)")
_SYMBOL_RE = re.compile(r"@([\w$.\-]+)")
_CONSUMED_ATTRS = frozenset(
    {"axis", "start", "end", "predicate", "inputPrecision", "cachePolicy", "cache", "evict"}
)


class IrParseError(ValueError):
    """IR text that Triton's parser or verifier rejects. The message names the file and line."""

    def __init__(
        self, source: str, line: int | None, detail: str, column: int | None = None
    ) -> None:
        where = (
            source
            if line is None
            else f"{source}:{line}"
            if column is None
            else f"{source}:{line}:{column}"
        )
        super().__init__(f"{where}: invalid IR: {detail.strip()}")
        self.source = source
        self.line = line
        self.column = column


@dataclass(slots=True)
class Node:
    """One node. Field names and meanings are those of the ``ir_nodes`` table columns."""

    node_id: int
    node_kind: str
    op_name: str | None
    dialect: str | None
    parent_id: int | None
    region_index: int | None
    arg_index: int | None
    depth: int
    num_operands: int | None = None
    num_results: int | None = None
    dtype: str | None = None
    shape: list[int] | None = None
    numel: int | None = None
    bitwidth: int | None = None
    is_pointer: bool | None = None
    layout: str | None = None
    size_per_thread: list[int] | None = None
    threads_per_warp: list[int] | None = None
    warps_per_cta: list[int] | None = None
    order: list[int] | None = None
    mma_version: int | None = None
    instr_shape: list[int] | None = None
    swizzle_vec: int | None = None
    swizzle_per_phase: int | None = None
    swizzle_max_phase: int | None = None
    axis: int | None = None
    predicate: str | None = None
    constant: float | None = None
    range_start: int | None = None
    range_end: int | None = None
    divisibility: int | None = None
    contiguity: int | None = None
    loop_num_stages: int | None = None
    num_pending: int | None = None
    cache_modifier: str | None = None
    eviction_policy: str | None = None
    input_precision: str | None = None
    attrs_json: str | None = None
    loc_line: int | None = None
    loc_col: int | None = None
    var_name: str | None = None


NODE_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Node))


class Edge(NamedTuple):
    """One edge. ``result_index`` (data edges) is which result of the producer is used.

    Immutable and hashable; a named tuple rather than a frozen dataclass because a 1k-op
    graph makes ~3k of them and a frozen dataclass costs ~4x as much to build."""

    src: int
    dst: int
    kind: str
    position: int
    region_index: int | None = None
    result_index: int | None = None


_tuple_new = tuple.__new__


@dataclass
class IrGraph:
    """A Triton IR module as nodes, edges and graph facts (``ir_graphs`` columns).

    Compile options that the IR does not record (num_stages) are not facts of the graph:
    configs that differ only in them can compile to one IR, shared under one ``ir_id``.
    """

    ir_id: str
    level: str
    entry_name: str | None
    target: str | None
    num_warps: int | None
    num_ctas: int | None
    nodes: list[Node]
    edges: list[Edge]
    ir_text: str
    triton_version: str

    # ---------------------------------------------------------------- construction

    @classmethod
    def from_text(
        cls,
        text: str,
        *,
        level: str | None = None,
        target: str | None = None,
        source: str = "<text>",
    ) -> IrGraph:
        """Build from TTIR/TTGIR text. ``level`` defaults to 'ttgir' when the module has TTGIR
        attributes, else 'ttir'; ``target`` defaults to the module's ``ttg.target``.
        Invalid IR raises :class:`IrParseError` naming ``source`` and the line."""
        return build_graph(text, level=level, target=target, source=source)

    @classmethod
    def from_file(cls, path: str | Path, *, target: str | None = None) -> IrGraph:
        """Build from a ``.ttir`` / ``.ttgir`` file (the suffix gives the level)."""
        path = Path(path)
        suffix = path.suffix.lstrip(".").lower()
        level = suffix if suffix in ("ttir", "ttgir") else None
        return build_graph(path.read_text(), level=level, target=target, source=str(path))

    @classmethod
    def from_compiled(cls, compiled: Any, level: str = "ttgir") -> IrGraph:
        """Build from a ``CompileResult`` (:mod:`extract.compile`) or Triton's
        ``CompiledKernel``, at ``level`` ('ttir' or 'ttgir')."""
        asm, metadata, target = _compiled_parts(compiled)
        if level not in asm:
            raise KeyError(f"compiled kernel has no {level!r} IR; it has {sorted(asm)}")
        text = asm[level]
        if isinstance(text, bytes):
            text = text.decode()
        name = metadata.get("name", "kernel")
        return build_graph(text, level=level, target=target, source=f"<{name}.{level}>")

    # ---------------------------------------------------------------- facts

    def counts(self) -> dict[str, int]:
        """Graph facts: node and edge counts, loops, reductions, dots, loads, stores, depth."""
        ops = [n.op_name for n in self.nodes if n.node_kind == NODE_OP]
        return {
            "num_nodes": len(self.nodes),
            "num_op_nodes": len(ops),
            "num_block_arg_nodes": len(self.nodes) - len(ops),
            "num_data_edges": sum(1 for e in self.edges if e.kind == EDGE_DATA),
            "num_region_edges": sum(1 for e in self.edges if e.kind == EDGE_REGION),
            "num_loops": sum(1 for o in ops if o in _LOOPS),
            "num_reductions": sum(1 for o in ops if o in _REDUCTIONS),
            "num_dots": sum(1 for o in ops if o in _DOTS or _is_other_mma(o)),
            "num_loads": sum(1 for o in ops if o in _LOADS),
            "num_stores": sum(1 for o in ops if o in _STORES),
            "max_depth": max((n.depth for n in self.nodes), default=0),
        }

    def facts(self) -> dict[str, Any]:
        """The ``ir_graphs`` row without ``schema_version`` and ``ir_text``."""
        counts = self.counts()
        return {
            "ir_id": self.ir_id,
            "level": self.level,
            "entry_name": self.entry_name,
            "target": self.target,
            "num_warps": self.num_warps,
            "num_ctas": self.num_ctas,
            **{k: v for k, v in counts.items() if k not in ("num_op_nodes", "num_block_arg_nodes")},
            "triton_version": self.triton_version,
        }

    # ---------------------------------------------------------------- conversions

    def to_node_link(self) -> dict[str, Any]:
        """Node-link dict for ``networkx.node_link_graph(data, edges="edges")``: a directed
        multigraph; node attributes are the :class:`Node` fields, edge attributes ``kind``,
        ``position``, ``region_index``, ``result_index`` and the multigraph ``key``."""
        nodes = []
        for node in self.nodes:
            item = asdict_fast(node)
            item["id"] = item.pop("node_id")
            nodes.append(item)
        edges = []
        parallel: dict[tuple[int, int], int] = {}
        for edge in self.edges:
            pair = (edge.src, edge.dst)
            key = parallel.get(pair, 0)
            parallel[pair] = key + 1
            edges.append(
                {
                    "source": edge.src,
                    "target": edge.dst,
                    "key": key,
                    "kind": edge.kind,
                    "position": edge.position,
                    "region_index": edge.region_index,
                    "result_index": edge.result_index,
                }
            )
        return {
            "directed": True,
            "multigraph": True,
            "graph": self.facts(),
            "nodes": nodes,
            "edges": edges,
        }

    def to_networkx(self) -> Any:
        """A ``networkx.MultiDiGraph`` (node ids = ``node_id``)."""
        import networkx

        return networkx.node_link_graph(self.to_node_link(), edges="edges")

    def to_arrow(self) -> dict[str, Any]:
        """Rows for the ``ir_graphs``, ``ir_nodes`` and ``ir_edges`` tables (schemas from
        :mod:`schemas.tables`, ``schema_version`` filled)."""
        from extract.arrow import graph_tables

        return graph_tables(self)


def asdict_fast(node: Node) -> dict[str, Any]:
    """``dataclasses.asdict`` without its deep-copy cost (fields hold lists and scalars)."""
    return {name: getattr(node, name) for name in NODE_FIELDS}


def _is_other_mma(op_name: str) -> bool:
    short = op_name.rpartition(".")[2]
    return short.startswith(("mfma", "wmma")) and not short.endswith("_wait")


def _compiled_parts(compiled: Any) -> tuple[dict[str, Any], dict[str, Any], str | None]:
    if hasattr(compiled, "compile_time_s") and hasattr(compiled, "target"):  # CompileResult
        return dict(compiled.asm), dict(compiled.metadata), compiled.target
    if triton_compat.is_compiled_kernel(compiled):
        metadata = triton_compat.compiled_metadata(compiled)
        return triton_compat.compiled_asm(compiled), metadata, metadata.get("target")
    raise TypeError(f"expected a CompileResult or CompiledKernel, got {type(compiled).__name__}")


# -------------------------------------------------------------------------------------
# Building
# -------------------------------------------------------------------------------------


def build_graph(
    text: str,
    *,
    level: str | None = None,
    target: str | None = None,
    source: str = "<text>",
) -> IrGraph:
    """Parse ``text`` with Triton, walk it, read features from the text; see module doc."""
    try:
        parsed = triton_compat.parse_module(text)
    except triton_compat.MlirParseError as exc:
        raise IrParseError(source, exc.line, str(exc), exc.column) from None
    raw = parsed.module
    order = _preorder(raw)
    scanned = irtext.scan(text)
    matches = _align(order, raw, scanned.ops)
    if _misaligned(order, raw, matches) or "loc(" not in text:
        # Hand-written or foreign-formatted text: read Triton's own re-print instead (its
        # invented locations point into the temporary file and are ignored).
        scanned = irtext.scan(parsed.reprint())
        matches = _align(order, raw, scanned.ops)
        if _misaligned(order, raw, matches):
            LOG.warning(
                "%s: some operations could not be matched to their text; their attributes are empty",
                source,
            )
    module_attrs = scanned.module_attrs
    if level is None:
        level = "ttgir" if "ttg.num-warps" in module_attrs else "ttir"
    resolver = irtext.LocationResolver(scanned.loc_aliases, ignore_file=parsed.path)
    nodes, edges, entry = _GraphBuilder(raw, order, matches, resolver).build()
    return IrGraph(
        ir_id=ir_id(level, irtext.strip_locations(text)),
        level=level,
        entry_name=entry,
        target=target or _unquote(module_attrs.get("ttg.target")),
        num_warps=_attr_int(module_attrs.get("ttg.num-warps")),
        num_ctas=_attr_int(module_attrs.get("ttg.num-ctas")),
        nodes=nodes,
        edges=edges,
        ir_text=text,
        triton_version=triton_compat.TRITON_VERSION,
    )


def _unquote(value: str | None) -> str | None:
    return value.strip('"') if value is not None else None


def _attr_int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value.split(":")[0].strip())
    except ValueError:
        return None


@dataclass
class _Order:
    """Ops in pre-order with their tree structure (indices into ``raw.ops``)."""

    preorder: list[int]
    children: dict[int, list[int]]  # block id -> op indices in order
    region_blocks: dict[int, list[int]]  # region id -> block ids in order
    top_ops: list[int]
    parent: dict[int, int]  # op index -> index of the op owning its region


def _preorder(raw: triton_compat.RawModule) -> _Order:
    children: dict[int, list[int]] = {}
    region_blocks: dict[int, list[int]] = {}
    for index, op in enumerate(raw.ops):  # walk order is post-order; siblings stay in order
        block_ops = children.get(op.block)
        if block_ops is None:
            block_ops = children[op.block] = []
            region_blocks.setdefault(raw.blocks[op.block].region, []).append(op.block)
        block_ops.append(index)
    top_ops = children.get(raw.top_block, [])
    preorder: list[int] = []
    parent: dict[int, int] = {}
    stack = list(reversed(top_ops))
    while stack:
        index = stack.pop()
        preorder.append(index)
        nested: list[int] = []
        for region in raw.ops[index].regions:
            for block in region_blocks.get(region, ()):
                nested.extend(children.get(block, ()))
        for child in nested:
            parent[child] = index
        stack.extend(reversed(nested))
    return _Order(preorder, children, region_blocks, top_ops, parent)


_LOOKAHEAD = 8


def _align(
    order: _Order, raw: triton_compat.RawModule, text_ops: list[irtext.TextOp]
) -> dict[int, irtext.TextOp]:
    """Match ops (pre-order) to printed op texts by name. Ops absent from the text (MLIR
    elides operand-less terminators such as an empty ``scf.yield``) stay unmatched."""
    matches: dict[int, irtext.TextOp] = {}
    cursor = 0
    count = len(text_ops)
    for index in order.preorder:
        name = raw.ops[index].name
        if cursor < count and text_ops[cursor].name == name:
            matches[index] = text_ops[cursor]
            cursor += 1
            continue
        for ahead in range(cursor + 1, min(cursor + 1 + _LOOKAHEAD, count)):
            if text_ops[ahead].name == name and not _elidable(raw.ops[index]):
                matches[index] = text_ops[ahead]
                cursor = ahead + 1
                break
    return matches


def _elidable(op: triton_compat.RawOp) -> bool:
    return not op.operands and not op.results and not op.regions


def _printed_by_parent(index: int, order: _Order, raw: triton_compat.RawModule) -> bool:
    """Ops named after their parent (``ttg.warp_specialize.partitions`` inside
    ``ttg.warp_specialize``) are printed as part of the parent's custom syntax."""
    parent = order.parent.get(index)
    return parent is not None and raw.ops[index].name.startswith(raw.ops[parent].name + ".")


def _misaligned(
    order: _Order, raw: triton_compat.RawModule, matches: dict[int, irtext.TextOp]
) -> bool:
    return any(
        index not in matches
        and not _elidable(raw.ops[index])
        and not _printed_by_parent(index, order, raw)
        for index in order.preorder
    )


class _GraphBuilder:
    """Numbers nodes in pre-order and emits edges and features."""

    def __init__(
        self,
        raw: triton_compat.RawModule,
        order: _Order,
        matches: dict[int, irtext.TextOp],
        resolver: irtext.LocationResolver,
    ) -> None:
        self.raw = raw
        self.order = order
        self.matches = matches
        self.resolver = resolver
        self.nodes: list[Node] = []
        self.edges: list[Edge] = []
        self.value_node: dict[int, tuple[int, int | None]] = {}  # value id -> (node, result index)
        self.op_node: dict[int, int] = {}
        self.entry: str | None = None
        self.first_func: str | None = None

    def build(self) -> tuple[list[Node], list[Edge], str | None]:
        for index in self.order.top_ops:
            self._visit(index, None, None, 0)
        self._data_edges()
        return self.nodes, self.edges, self.entry or self.first_func

    def _visit(self, index: int, parent: int | None, region_index: int | None, depth: int) -> int:
        raw_op = self.raw.ops[index]
        node_id = len(self.nodes)
        text_op = self.matches.get(index)
        node = _op_node(node_id, raw_op, text_op, parent, region_index, depth, self.resolver)
        self.nodes.append(node)
        self.op_node[index] = node_id
        for result_index, value in enumerate(raw_op.results):
            self.value_node[value] = (node_id, result_index)
        if not raw_op.regions:  # most ops: nothing nested
            return node_id
        arg_texts: list[tuple[dict[str, str], str | None]] = []
        if raw_op.name.endswith(".func") and text_op is not None:
            self._note_function(text_op.text)
            arg_texts = irtext.function_arguments(text_op.text)
        for region_position, region in enumerate(raw_op.regions):
            for block_position, block_id in enumerate(self.order.region_blocks.get(region, ())):
                block = self.raw.blocks[block_id]
                texts = arg_texts if (region_position == 0 and block_position == 0) else []
                self._block_args(node_id, raw_op.name, block, region_position, depth + 1, texts)
                block_ops = self.order.children.get(block_id, [])
                for child in block_ops:
                    self._visit(child, node_id, region_position, depth + 1)
                if block_ops:
                    last = self.raw.ops[block_ops[-1]]
                    if last.name not in _BRANCH_TERMINATORS:
                        self.edges.append(
                            Edge(
                                self.op_node[block_ops[-1]],
                                node_id,
                                EDGE_REGION,
                                region_position,
                                region_position,
                            )
                        )
        return node_id

    def _note_function(self, text: str) -> None:
        match = _SYMBOL_RE.search(text)
        if not match:
            return
        if self.first_func is None:
            self.first_func = match.group(1)
        if self.entry is None and " public " in text.split("(")[0] + " ":
            self.entry = match.group(1)

    def _block_args(
        self,
        owner: int,
        owner_name: str,
        block: triton_compat.RawBlock,
        region_position: int,
        depth: int,
        texts: list[tuple[dict[str, str], str | None]],
    ) -> None:
        dialect = owner_name.partition(".")[0]
        for arg_index, (value, type_text, loc) in enumerate(
            zip(block.args, block.arg_types, block.arg_locs)
        ):
            node_id = len(self.nodes)
            node = Node(
                node_id,
                NODE_BLOCK_ARG,
                owner_name,
                dialect,
                owner,
                region_position,
                arg_index,
                depth,
            )
            _set_type(node, type_text)
            _set_loc(node, self.resolver.resolve(loc))
            if arg_index < len(texts) and texts[arg_index][0]:
                _set_integer_attributes(node, texts[arg_index][0])
                node.attrs_json = canonical_json(texts[arg_index][0])
            self.nodes.append(node)
            self.value_node[value] = (node_id, None)
            self.edges.append(Edge(owner, node_id, EDGE_REGION, arg_index, region_position))

    def _data_edges(self) -> None:
        edges, ops, value_node = self.edges, self.raw.ops, self.value_node
        for index in self.order.preorder:
            consumer = self.op_node[index]
            for position, value in enumerate(ops[index].operands):
                producer = value_node.get(value)
                if producer is None:  # defined outside the walked module: cannot be drawn
                    LOG.debug("operand %d of node %d has no producer node", position, consumer)
                    continue
                # every field given: the tuple directly, without Edge.__new__'s Python frame
                edges.append(_tuple_new(Edge, (producer[0], consumer, EDGE_DATA, position, None, producer[1])))


def _op_node(
    node_id: int,
    raw_op: triton_compat.RawOp,
    text_op: irtext.TextOp | None,
    parent: int | None,
    region_index: int | None,
    depth: int,
    resolver: irtext.LocationResolver,
) -> Node:
    name = raw_op.name
    result_types = raw_op.result_types
    node = Node(  # every field up to the type's in one call: the hot path of extraction
        node_id,
        NODE_OP,
        name,
        name.partition(".")[0],
        parent,
        region_index,
        None,
        depth,
        len(raw_op.operands),
        len(raw_op.results),
        *(_type_values(result_types[0]) if result_types else _NO_TYPE),
    )
    if text_op is not None:
        _set_text_features(node, name, text_op.text, resolver)
    return node


_TYPE_FIELDS = (
    "dtype",
    "shape",
    "numel",
    "bitwidth",
    "is_pointer",
    "layout",
    "size_per_thread",
    "threads_per_warp",
    "warps_per_cta",
    "order",
    "mma_version",
    "instr_shape",
    "swizzle_vec",
    "swizzle_per_phase",
    "swizzle_max_phase",
)
_type_values_cache: dict[str, tuple[Any, ...]] = {}
_NO_TYPE: tuple[None, ...] = (None,) * len(_TYPE_FIELDS)
assert NODE_FIELDS[10 : 10 + len(_TYPE_FIELDS)] == _TYPE_FIELDS, "Node's type fields follow num_results"


def _type_values(type_text: str) -> tuple[Any, ...]:
    """Node field values for a type, memoized per type text (graphs repeat few types). The
    lists are shared between nodes of equal type: treat node fields as read-only."""
    values = _type_values_cache.get(type_text)
    if values is None:
        info = irtext.parse_type(type_text)
        layout = info.layout
        values = (
            info.dtype,
            list(info.shape),
            info.numel,
            info.bitwidth,
            info.is_pointer,
            layout.kind,
            _list(layout.size_per_thread),
            _list(layout.threads_per_warp),
            _list(layout.warps_per_cta),
            _list(layout.order),
            layout.mma_version,
            _list(layout.instr_shape),
            layout.swizzle_vec,
            layout.swizzle_per_phase,
            layout.swizzle_max_phase,
        )
        if len(_type_values_cache) < 65536:
            _type_values_cache[type_text] = values
    return values


def _set_type(node: Node, type_text: str) -> None:
    (
        node.dtype,
        node.shape,
        node.numel,
        node.bitwidth,
        node.is_pointer,
        node.layout,
        node.size_per_thread,
        node.threads_per_warp,
        node.warps_per_cta,
        node.order,
        node.mma_version,
        node.instr_shape,
        node.swizzle_vec,
        node.swizzle_per_phase,
        node.swizzle_max_phase,
    ) = _type_values(type_text)


def _list(values: tuple[int, ...] | None) -> list[int] | None:
    return list(values) if values is not None else None


def _set_loc(node: Node, loc: irtext.SourceLoc) -> None:
    node.loc_line, node.loc_col, node.var_name = loc.line, loc.col, loc.name


def _inline_words(name: str, text: str) -> str:
    """Custom-syntax words between the op name and its first operand/type/attribute, e.g.
    'slt' for cmpi, 'x' for get_program_id, 'fadd, relaxed, gpu' for atomic_rmw."""
    start = text.find(name) + len(name)
    if text.startswith(" %", start) or text.startswith(" :", start) or start == len(text):
        return ""  # the common case: operands or the type follow the name directly
    rest = text[start:]
    cut = len(rest)
    for stop in ("%", " : ", " {", "<{", " loc(", "(", " ->"):
        found = rest.find(stop)
        if 0 <= found < cut:
            cut = found
    return rest[:cut].strip().rstrip(",").strip()


def _set_text_features(node: Node, name: str, text: str, resolver: irtext.LocationResolver) -> None:
    loc = resolver.resolve(irtext.op_location(text))
    node.loc_line, node.loc_col, node.var_name = loc.line, loc.col, loc.name
    attrs = irtext.op_attributes(name, text)
    inline = "" if name.endswith(".func") else _inline_words(name, text)
    if name in ("arith.cmpi", "arith.cmpf"):
        node.predicate = inline.split(",")[0].strip() or _unquote(attrs.get("predicate"))
        inline = ""
    elif name in ("tt.get_program_id", "tt.get_num_programs"):
        node.axis = _PROGRAM_AXIS.get(inline, _attr_int(attrs.get("axis")))
        inline = ""
    elif name == "arith.constant":
        node.constant = irtext.constant_value(text, node.dtype)
        inline = ""
    if "axis" in attrs:
        node.axis = _attr_int(attrs["axis"])
    if name == "tt.make_range":
        node.range_start = _attr_int(attrs.get("start"))
        node.range_end = _attr_int(attrs.get("end"))
    if "cache" in text or "evict" in text:
        node.cache_modifier = _enum_text(_CACHE_RE.search(text), _CACHE_MODIFIERS)
        node.eviction_policy = _enum_text(_EVICT_RE.search(text), _EVICTION_POLICIES)
    if "inputPrecision" in text:
        node.input_precision = _enum_text(_PRECISION_RE.search(text), _INPUT_PRECISIONS)
    _set_integer_attributes(node, attrs)
    remaining = {k: v for k, v in attrs.items() if k not in _CONSUMED_ATTRS} if attrs else {}
    if name.endswith(".func") or name == "tt.call":
        symbol = _SYMBOL_RE.search(text)
        if symbol:
            remaining["sym_name" if name.endswith(".func") else "callee"] = symbol.group(1)
    if inline:
        remaining["_inline"] = inline
    if remaining:
        node.attrs_json = canonical_json(remaining)


def _set_integer_attributes(node: Node, attrs: dict[str, str]) -> None:
    """Typed copies of integer attributes (``attrs_json`` keeps them too): models should not
    have to parse ``"16 : i32"`` out of JSON text."""
    if not attrs:
        return
    for column, candidates in IR_NODE_INTEGER_ATTRIBUTES.items():
        for attribute in candidates:
            if attribute.name in attrs and (not attribute.ops or node.op_name in attribute.ops):
                setattr(node, column, _attr_int(attrs[attribute.name]))
                break


def _enum_text(match: re.Match[str] | None, numbers: dict[int, str | None]) -> str | None:
    if match is None:
        return None
    value = match.group(1)
    if value.isdigit():
        return numbers.get(int(value), value)
    if value in ("none", "normal", "NONE", "NORMAL"):
        return None
    if value in ("ca", "cg", "wb", "cs", "wt", "cv"):
        return f".{value}"
    return value
