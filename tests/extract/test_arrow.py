"""Arrow rows of a graph: exactly the declared schemas, consistent with the graph."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from extract.graph import IrGraph
from schemas.tables import IR_EDGES, IR_GRAPHS, IR_NODES, SCHEMA_VERSION


def test_tables_conform_to_the_schemas(fixture_dir: Path, tmp_path: Path) -> None:
    graph = IrGraph.from_file(fixture_dir / "dot.sm_90.ttgir")
    tables = graph.to_arrow()
    assert set(tables) == {"ir_graphs", "ir_nodes", "ir_edges"}
    for name, schema in (("ir_graphs", IR_GRAPHS), ("ir_nodes", IR_NODES), ("ir_edges", IR_EDGES)):
        assert tables[name].schema.equals(schema, check_metadata=True), name
        assert set(tables[name].column("schema_version").to_pylist()) == {SCHEMA_VERSION}
        assert set(tables[name].column("ir_id").to_pylist()) == {graph.ir_id}
        pq.write_table(tables[name], tmp_path / f"{name}.parquet")
        assert pq.read_table(tmp_path / f"{name}.parquet").equals(tables[name])
    row = tables["ir_graphs"].to_pylist()[0]
    counts = graph.counts()
    assert row["num_nodes"] == tables["ir_nodes"].num_rows == counts["num_nodes"]
    assert row["num_data_edges"] + row["num_region_edges"] == tables["ir_edges"].num_rows
    assert (row["level"], row["num_warps"], row["target"]) == ("ttgir", 4, "cuda:90")
    assert row["ir_text"] == graph.ir_text


def test_node_rows_keep_features(fixture_dir: Path) -> None:
    graph = IrGraph.from_file(fixture_dir / "dot.sm_80.ttgir")
    nodes = graph.to_arrow()["ir_nodes"].to_pylist()
    assert [row["node_id"] for row in nodes] == list(range(len(graph.nodes)))
    mma = [row for row in nodes if row["layout"] == "mma"]
    assert mma and mma[0]["instr_shape"] == [16, 8] and mma[0]["mma_version"] == 2
    args = [row for row in nodes if row["node_kind"] == "block_arg"]
    assert args and all(row["arg_index"] is not None for row in args)
    edges = graph.to_arrow()["ir_edges"].to_pylist()
    assert {row["kind"] for row in edges} == {"data", "region"}
    assert all(row["region_index"] is not None for row in edges if row["kind"] == "region")


V1_DATASET = Path(__file__).resolve().parents[1] / "schemas" / "fixtures" / "v1_dataset"


def test_migrated_version1_nodes_agree_with_extraction() -> None:
    """The v1 -> v2 migration parses attrs_json; extraction reads the IR text. Both must give
    the same typed integer attributes for every node of every stored graph."""
    from schemas import read_table
    from schemas.tables import IR_NODE_INTEGER_ATTRIBUTES

    columns = ["ir_id", "node_id", *IR_NODE_INTEGER_ATTRIBUTES]
    lifted = read_table(str(V1_DATASET), "ir_nodes", columns=columns).to_pylist()
    migrated = {(row["ir_id"], row["node_id"]): row for row in lifted}
    graphs = read_table(str(V1_DATASET), "ir_graphs", columns=["ir_id", "level", "ir_text"]).to_pylist()
    found = dict.fromkeys(IR_NODE_INTEGER_ATTRIBUTES, 0)
    for stored in graphs:
        graph = IrGraph.from_text(stored["ir_text"], level=stored["level"])
        assert graph.ir_id == stored["ir_id"]
        for node in graph.nodes:
            row = migrated.pop((graph.ir_id, node.node_id))
            for column in IR_NODE_INTEGER_ATTRIBUTES:
                assert row[column] == getattr(node, column), (graph.ir_id, node.node_id, column)
                found[column] += row[column] is not None
    assert not migrated  # every stored node was compared
    assert found["divisibility"] and found["contiguity"] and found["num_pending"]
