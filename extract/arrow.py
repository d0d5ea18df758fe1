"""An :class:`~extract.graph.IrGraph` as Arrow tables ``ir_graphs``, ``ir_nodes``,
``ir_edges``, with exactly the schemas declared in :mod:`schemas.tables`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from extract.locations import publishable_ir_text
from schemas.tables import IR_EDGES, IR_GRAPHS, IR_NODES, SCHEMA_VERSION

if TYPE_CHECKING:
    from extract.graph import IrGraph

_PER_GRAPH = ("schema_version", "ir_id", "level")


def graph_tables(graph: IrGraph) -> dict[str, pa.Table]:
    """``{"ir_graphs": 1 row, "ir_nodes": one row per node, "ir_edges": one row per edge}``."""
    return {
        "ir_graphs": _graphs_table(graph),
        "ir_nodes": _nodes_table(graph),
        "ir_edges": _edges_table(graph),
    }


def _constant_columns(graph: IrGraph, rows: int) -> dict[str, list[Any]]:
    return {
        "schema_version": [SCHEMA_VERSION] * rows,
        "ir_id": [graph.ir_id] * rows,
        "level": [graph.level] * rows,
    }


def _graphs_table(graph: IrGraph) -> pa.Table:
    # rows never carry this machine's paths: locations become package-relative
    row = {**graph.facts(), "schema_version": SCHEMA_VERSION, "ir_text": publishable_ir_text(graph.ir_text)}
    return pa.table({name: [row.get(name)] for name in IR_GRAPHS.names}, schema=IR_GRAPHS)


def _nodes_table(graph: IrGraph) -> pa.Table:
    rows = len(graph.nodes)
    columns = _constant_columns(graph, rows)
    for name in IR_NODES.names:
        if name not in _PER_GRAPH:
            columns[name] = [getattr(node, name) for node in graph.nodes]
    return pa.table({name: columns[name] for name in IR_NODES.names}, schema=IR_NODES)


def _edges_table(graph: IrGraph) -> pa.Table:
    rows = len(graph.edges)
    columns = _constant_columns(graph, rows)
    for name in IR_EDGES.names:
        if name not in _PER_GRAPH:
            columns[name] = [getattr(edge, name) for edge in graph.edges]
    return pa.table({name: columns[name] for name in IR_EDGES.names}, schema=IR_EDGES)
