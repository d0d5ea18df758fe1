"""Helion's device IR (a node-link graph of torch.fx graphs) as an IR graph of level
``helion_fx``, in the same ``ir_graphs`` / ``ir_nodes`` / ``ir_edges`` tables as TTIR/TTGIR.

Format read: the ``ir_graph`` record of Helion's ``.meta.jsonl`` as Helion 1.4/1.5 writes it
(``helion/autotuner/_metadata/ir_features.py``: a networkx node-link graph; nodes
``g<graph>:<name>`` with ``op_kind``, ``target``, ``dtype``, ``concrete_shape``,
``lowering_class``, ...; edges with ``edge_kind`` ``data`` (``arg_positions``) or ``region``).
Helion's record carries no version field; one that does is read the same way, and a record
that is not such a graph is refused naming what is missing.

Mapping, where our columns have an equivalent:

- fx ``placeholder`` nodes are ``block_arg`` nodes (the inputs of a graph, like a region's
  block arguments); every other node is an ``op`` named by its ``target``, with the repr of a
  torch op normalized to its qualified name (``torch._ops.aten.aten::sum.dim_IntList`` ->
  ``aten.sum.dim_IntList``); ``dialect`` is the name's namespace (``aten``, ``helion``,
  ``_operator``, ...);
- the graphs nest: a graph whose placeholders receive region edges belongs to the control-flow
  node (``_for_loop``, ``_if``, ``_while_loop``) that consumes the same values; its nodes get
  that node as ``parent_id`` and one more ``depth``. Root graphs are at depth 1;
- ``dtype`` in our short form (``torch.float32`` -> ``f32``), ``shape`` from
  ``concrete_shape`` (-1 for symbolic dims), ``numel`` when every dim is known;
- data edges: one row per argument position, as Helion records them; region edges as Helion
  records them -- from the value passed into the region to the region's placeholder
  (``position`` = the placeholder's index in its graph). Nothing is added that the record
  does not hold (Helion's graphs have no terminator -> owner edges);
- Helion-specific features (lowering class, reduction type and ranges, block ids, region kind,
  symbolic shape and strides) go to ``attrs_json``.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from extract.graph import Edge, IrGraph, Node
from schemas.enums import EdgeKind, Level, NodeKind
from schemas.identity import canonical_json, ir_id

_DTYPES = {
    "torch.float16": ("f16", 16), "torch.bfloat16": ("bf16", 16), "torch.float32": ("f32", 32),
    "torch.float64": ("f64", 64), "torch.int8": ("i8", 8), "torch.int16": ("i16", 16),
    "torch.int32": ("i32", 32), "torch.int64": ("i64", 64), "torch.uint8": ("u8", 8), "torch.bool": ("i1", 1),
    "SymInt": ("i64", 64), "SymFloat": ("f64", 64), "SymBool": ("i1", 1), "int": ("i64", 64),
    "float": ("f64", 64), "bool": ("i1", 1),
}  # fmt: skip
_LOOPS = ("_for_loop", "_for_loop_step", "_while_loop")
_CONTROL = (*_LOOPS, "_if")
_ATTR_KEYS = (
    "lowering_class",
    "reduction_type",
    "reduction_ranges",
    "pointwise_ranges",
    "block_ids",
    "region_kind",
    "shape",
    "stride",
    "value",
)
_LINE = re.compile(r":(\d+)(?::(\d+))?\s*$|line (\d+)")


class HelionGraphError(ValueError):
    """The record is not a Helion device-IR graph this code can read."""


def op_name(target: str) -> str:
    """The qualified name of an fx target as Helion logs it: a torch op's repr
    ``torch._ops.aten.aten::sum.dim_IntList`` -> ``aten.sum.dim_IntList`` (the name
    ``torch.ops`` and profilers use); other targets unchanged."""
    head, sep, tail = target.partition("::")
    if not sep:
        return target
    return f"{head.rsplit('.', 1)[-1]}.{tail}"


def _leaf(target: str) -> str:
    """The operation a target names: 'aten.mm.default' -> 'mm', 'helion.language.memory_ops.load'
    -> 'load'."""
    parts = target.split(".")
    if parts[0] in ("aten", "prims") and len(parts) >= 2:
        return parts[1]
    return parts[-1]


def _dialect(target: str) -> str:
    return target.split(".", 1)[0] if "." in target else "fx"


def _shape(node: Mapping[str, Any]) -> tuple[list[int] | None, int | None]:
    dims = node.get("concrete_shape")
    if dims is None:
        return None, None
    shape = [-1 if d is None else int(d) for d in dims]
    return shape, (math.prod(shape) if all(d >= 0 for d in shape) else None)


def _location(text: str | None) -> tuple[int | None, int | None]:
    match = _LINE.search(text or "")
    if match is None:
        return None, None
    line = match.group(1) or match.group(3)
    return int(line), int(match.group(2)) if match.group(2) else None


class _Layout:
    """Node numbering and the nesting of graphs inside control-flow nodes."""

    def __init__(self, nodes: list[Mapping[str, Any]], edges: list[Mapping[str, Any]]) -> None:
        self.index = {str(n["id"]): i for i, n in enumerate(nodes)}
        self.nodes = nodes
        graph_of = {str(n["id"]): n.get("graph_id") for n in nodes}
        consumers: dict[str, list[str]] = defaultdict(list)
        for edge in edges:
            if edge.get("edge_kind") == "data":
                consumers[str(edge["source"])].append(str(edge["target"]))
        self.owner: dict[Any, str] = {}  # graph id -> control-flow node id
        self.child_order: dict[str, list[Any]] = defaultdict(list)
        for edge in edges:
            if edge.get("edge_kind") != "region":
                continue
            child = graph_of.get(str(edge["target"]))
            owners = [
                c
                for c in consumers[str(edge["source"])]
                if _leaf(str(self.node(c).get("target", ""))) in _CONTROL
            ]
            if child is not None and len(set(owners)) == 1 and child not in self.owner:
                self.owner[child] = owners[0]
                self.child_order[owners[0]].append(child)

    def node(self, node_id: str) -> Mapping[str, Any]:
        return self.nodes[self.index[node_id]]

    def parent(self, graph_id: Any) -> str | None:
        return self.owner.get(graph_id)

    def depth(self, graph_id: Any, seen: frozenset[Any] = frozenset()) -> int:
        parent = self.owner.get(graph_id)
        if parent is None or graph_id in seen:
            return 1
        return 1 + self.depth(self.node(parent).get("graph_id"), seen | {graph_id})


def helion_graph(
    record: Mapping[str, Any], *, entry_name: str, target: str | None, triton_version: str
) -> IrGraph:
    """The ``ir_graph`` record of a Helion run as an :class:`~extract.graph.IrGraph`."""
    try:
        nodes = [{**n, "target": op_name(str(n.get("target", "")))} for n in record["nodes"]]
        edges = list(record["edges"])
        known = {str(n["id"]) for n in nodes}
        dangling = [e for e in edges if str(e["source"]) not in known or str(e["target"]) not in known]
    except (KeyError, TypeError, AttributeError) as exc:
        raise HelionGraphError(f"ir_graph is not a node-link graph (missing {exc})") from exc
    if dangling:
        raise HelionGraphError(
            f"ir_graph edge {dangling[0].get('source')} -> {dangling[0].get('target')} names a node it does not hold"
        )
    layout = _Layout(nodes, edges)
    placeholders: dict[Any, list[str]] = defaultdict(list)
    for node in nodes:
        if node.get("op_kind") == "placeholder":
            placeholders[node.get("graph_id")].append(str(node["id"]))
    built = [_node(i, node, layout, placeholders) for i, node in enumerate(nodes)]
    _count_operands(built, edges, layout)
    built_edges = _edges(edges, layout, placeholders)
    text = canonical_json(dict(record))
    stripped = canonical_json(
        {**record, "nodes": [{k: v for k, v in n.items() if k != "source_loc"} for n in nodes]}
    )
    return HelionIrGraph(
        ir_id=ir_id(Level.HELION_FX.value, stripped),
        level=Level.HELION_FX.value,
        entry_name=entry_name,
        target=target,
        num_warps=None,
        num_ctas=None,
        nodes=built,
        edges=built_edges,
        ir_text=text,
        triton_version=triton_version,
    )


def _node(
    index: int, node: Mapping[str, Any], layout: _Layout, placeholders: Mapping[Any, list[str]]
) -> Node:
    graph_id = node.get("graph_id")
    parent = layout.parent(graph_id)
    is_arg = node.get("op_kind") == "placeholder"
    target = str(node.get("target", ""))
    dtype, bits = _DTYPES.get(str(node.get("dtype")), (node.get("dtype"), None))
    shape, numel = _shape(node)
    line, column = _location(node.get("source_loc"))
    value = node.get("value")
    attrs = {key: node[key] for key in _ATTR_KEYS if node.get(key) is not None}
    return Node(
        node_id=index,
        node_kind=NodeKind.BLOCK_ARG.value if is_arg else NodeKind.OP.value,
        op_name=str(node.get("region_kind")) if is_arg else target,
        dialect=None if is_arg else _dialect(target),
        parent_id=None if parent is None else layout.index[parent],
        region_index=None if parent is None else layout.child_order[parent].index(graph_id),
        arg_index=placeholders[graph_id].index(str(node["id"])) if is_arg else None,
        depth=layout.depth(graph_id),
        num_results=0 if node.get("op_kind") == "output" else 1,
        dtype=dtype,
        shape=shape,
        numel=numel,
        bitwidth=bits,
        is_pointer=False,
        constant=float(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool)
        else None,
        attrs_json=canonical_json(attrs) if attrs else None,
        loc_line=line,
        loc_col=column,
        var_name=str(node["id"]).split(":", 1)[-1],
    )


def _count_operands(nodes: list[Node], edges: list[Mapping[str, Any]], layout: _Layout) -> None:
    for edge in edges:
        if edge.get("edge_kind") == "data":
            consumer = nodes[layout.index[str(edge["target"])]]
            consumer.num_operands = (consumer.num_operands or 0) + max(
                1, len(edge.get("arg_positions") or [])
            )
    for node in nodes:
        if node.num_operands is None:
            node.num_operands = 0


def _edges(
    edges: list[Mapping[str, Any]], layout: _Layout, placeholders: Mapping[Any, list[str]]
) -> list[Edge]:
    built = []
    for edge in edges:
        src, dst = layout.index[str(edge["source"])], layout.index[str(edge["target"])]
        if edge.get("edge_kind") == "data":
            positions = edge.get("arg_positions") or [0]
            built += [
                Edge(src, dst, EdgeKind.DATA.value, int(p), result_index=None) for p in positions
            ]
        elif edge.get("edge_kind") == "region":
            graph_id = layout.node(str(edge["target"])).get("graph_id")
            owner = layout.parent(graph_id)
            region = layout.child_order[owner].index(graph_id) if owner is not None else None
            position = placeholders[graph_id].index(str(edge["target"]))
            built.append(Edge(src, dst, EdgeKind.REGION.value, position, region_index=region))
        else:
            raise HelionGraphError(
                f"edge {edge.get('source')} -> {edge.get('target')} has unknown kind {edge.get('edge_kind')!r}"
            )
    return sorted(built, key=lambda e: (e.dst, e.kind, e.position, e.src))


class HelionIrGraph(IrGraph):
    """Counts by Helion's op names (the TTIR/TTGIR counts know Triton's)."""

    def counts(self) -> dict[str, int]:
        ops = [n.op_name or "" for n in self.nodes if n.node_kind == NodeKind.OP.value]
        leaves = [_leaf(o) for o in ops]
        reductions = sum(
            1
            for n in self.nodes
            if n.attrs_json and '"lowering_class":"ReductionLowering"' in n.attrs_json
        )
        return {
            "num_nodes": len(self.nodes),
            "num_op_nodes": len(ops),
            "num_block_arg_nodes": len(self.nodes) - len(ops),
            "num_data_edges": sum(1 for e in self.edges if e.kind == EdgeKind.DATA.value),
            "num_region_edges": sum(1 for e in self.edges if e.kind == EdgeKind.REGION.value),
            "num_loops": sum(1 for leaf in leaves if leaf in _LOOPS),
            "num_reductions": reductions,
            "num_dots": sum(
                1 for leaf in leaves if leaf in ("dot", "mm", "bmm", "addmm", "baddbmm")
            ),
            "num_loads": sum(1 for leaf in leaves if leaf == "load"),
            "num_stores": sum(1 for leaf in leaves if leaf == "store" or leaf.startswith("atomic")),
            "max_depth": max((n.depth for n in self.nodes), default=0),
        }
