"""IR -> graph: exact node and edge counts, semantics, round trips, ids, errors."""

from __future__ import annotations

import re
from pathlib import Path

import networkx as nx
import pytest

from extract.graph import EDGE_DATA, EDGE_REGION, NODE_BLOCK_ARG, NODE_OP, IrGraph, IrParseError
from tests.extract import text_counts
from tests.extract.conftest import FIXTURE_NAMES, HANDWRITTEN


def _edges(graph: IrGraph, kind: str) -> list[tuple[int, int, int, int | None]]:
    return [(e.src, e.dst, e.position, e.region_index) for e in graph.edges if e.kind == kind]


def _node(graph: IrGraph, op_name: str, nth: int = 0) -> int:
    return [n.node_id for n in graph.nodes if n.node_kind == NODE_OP and n.op_name == op_name][nth]


# ---------------------------------------------------------------- every fixture: exact counts


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_counts_match_an_independent_count_of_the_text(fixture_dir: Path, name: str) -> None:
    text = (fixture_dir / name).read_text()
    graph = IrGraph.from_file(fixture_dir / name)
    expected = text_counts.count(text)
    counts = graph.counts()
    assert counts["num_op_nodes"] == expected.op_nodes
    assert counts["num_block_arg_nodes"] == expected.block_arg_nodes
    assert counts["num_data_edges"] == expected.data_edges
    assert counts["num_region_edges"] == expected.region_edges
    assert graph.level == name.rsplit(".", 1)[1]
    assert graph.entry_name is not None and graph.entry_name.endswith("_kernel")


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_networkx_round_trip_and_stable_ids(fixture_dir: Path, name: str) -> None:
    graph = IrGraph.from_file(fixture_dir / name)
    multigraph = graph.to_networkx()
    assert isinstance(multigraph, nx.MultiDiGraph)
    assert multigraph.number_of_nodes() == len(graph.nodes)
    assert multigraph.number_of_edges() == len(graph.edges)
    again = nx.node_link_graph(nx.node_link_data(multigraph, edges="edges"), edges="edges")
    assert nx.utils.graphs_equal(multigraph, again)
    exported, original = nx.node_link_data(multigraph, edges="edges"), graph.to_node_link()
    assert exported["graph"] == original["graph"] and exported["nodes"] == original["nodes"]

    def edge_key(edge: dict) -> tuple[int, int, int]:
        return edge["source"], edge["target"], edge["key"]

    assert sorted(exported["edges"], key=edge_key) == sorted(original["edges"], key=edge_key)
    rebuilt = IrGraph.from_file(fixture_dir / name)
    assert rebuilt.ir_id == graph.ir_id
    assert rebuilt.to_node_link() == graph.to_node_link()


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_structure_invariants(fixture_dir: Path, name: str) -> None:
    graph = IrGraph.from_file(fixture_dir / name)
    nodes = graph.nodes
    assert [n.node_id for n in nodes] == list(range(len(nodes)))
    for node in nodes:
        if node.parent_id is None:
            assert node.depth == 0 and node.op_name == "tt.func"
        else:
            parent = nodes[node.parent_id]
            assert parent.node_id < node.node_id  # pre-order: parents first
            assert node.depth == parent.depth + 1
            assert node.node_kind == NODE_OP or node.op_name == parent.op_name
    for edge in graph.edges:
        if edge.kind == EDGE_DATA:
            assert edge.position < (nodes[edge.dst].num_operands or 0)
        else:
            src, dst = nodes[edge.src], nodes[edge.dst]
            if dst.node_kind == NODE_BLOCK_ARG:  # owner -> its region's argument
                assert dst.parent_id == src.node_id and edge.position == dst.arg_index
            else:  # terminator -> owner
                assert src.parent_id == dst.node_id and edge.position == src.region_index
    consumers = {(e.dst, e.position) for e in graph.edges if e.kind == EDGE_DATA}
    assert len(consumers) == sum(1 for e in graph.edges if e.kind == EDGE_DATA)  # one producer per use


# ---------------------------------------------------------------- hand-counted IR


def test_value_used_twice_gives_two_edges() -> None:
    graph = IrGraph.from_file(HANDWRITTEN / "double_use.ttir")
    # 0 tt.func, 1 %x, 2 %p, 3 mulf, 4 store, 5 return
    assert [n.op_name for n in graph.nodes] == ["tt.func", "tt.func", "tt.func", "arith.mulf", "tt.store", "tt.return"]
    assert [n.node_kind for n in graph.nodes[:3]] == [NODE_OP, NODE_BLOCK_ARG, NODE_BLOCK_ARG]
    assert sorted(_edges(graph, EDGE_DATA)) == [(1, 3, 0, None), (1, 3, 1, None), (2, 4, 0, None), (3, 4, 1, None)]
    assert sorted(_edges(graph, EDGE_REGION)) == [(0, 1, 0, 0), (0, 2, 1, 0), (5, 0, 0, 0)]
    parallel = graph.to_networkx().get_edge_data(1, 3)
    assert sorted((key, data["position"]) for key, data in parallel.items()) == [(0, 0), (1, 1)]


def test_loop_with_if_yielding_values_hand_counted() -> None:
    graph = IrGraph.from_file(HANDWRITTEN / "loop_if.ttir")
    names = [(n.node_kind, n.op_name) for n in graph.nodes]
    assert len(names) == 19
    for_id, if_id = _node(graph, "scf.for"), _node(graph, "scf.if")
    assert (for_id, if_id) == (6, 11)
    assert [n.node_kind for n in graph.nodes[7:9]] == [NODE_BLOCK_ARG, NODE_BLOCK_ARG]  # %i, %acc
    yields = [n.node_id for n in graph.nodes if n.op_name == "scf.yield"]
    assert yields == [14, 15, 16]
    assert len(_edges(graph, EDGE_DATA)) == 17
    assert sorted(_edges(graph, EDGE_REGION)) == sorted(
        [(0, 1, 0, 0), (0, 2, 1, 0), (18, 0, 0, 0), (6, 7, 0, 0), (6, 8, 1, 0), (16, 6, 0, 0), (14, 11, 0, 0), (15, 11, 1, 1)]
    )
    # scf.for operands: lb, ub, step, init
    assert sorted((s, p) for s, d, p, _ in _edges(graph, EDGE_DATA) if d == for_id) == [(1, 1), (3, 0), (4, 2), (5, 3)]
    # the else branch yields the loop-carried %acc block argument
    assert (8, 15, 0, None) in _edges(graph, EDGE_DATA)
    assert graph.nodes[12].depth == 3 and graph.nodes[12].parent_id == if_id and graph.nodes[12].region_index == 0
    assert graph.nodes[15].region_index == 1
    facts = graph.facts()
    assert (facts["num_loops"], facts["max_depth"], facts["num_stores"], facts["level"]) == (1, 3, 1, "ttir")
    assert graph.nodes[_node(graph, "arith.cmpi")].predicate == "ne"


# ---------------------------------------------------------------- constructs of the kernels


def test_while_loop_before_and_after_regions(fixture_dir: Path) -> None:
    graph = IrGraph.from_file(fixture_dir / "while_loop.sm_90.ttgir")
    loop = _node(graph, "scf.while")
    args = [n for n in graph.nodes if n.node_kind == NODE_BLOCK_ARG and n.parent_id == loop]
    assert [(a.region_index, a.arg_index) for a in args] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    condition, body_yield = _node(graph, "scf.condition"), _node(graph, "scf.yield")
    assert (condition, loop, 0, 0) in _edges(graph, EDGE_REGION)
    assert (body_yield, loop, 1, 1) in _edges(graph, EDGE_REGION)
    assert {a.var_name for a in args if a.region_index == 1} == {"value", "steps"}


@pytest.mark.parametrize("case,op", [("reduction", "tt.reduce"), ("scan", "tt.scan")])
def test_combiner_regions(fixture_dir: Path, case: str, op: str) -> None:
    graph = IrGraph.from_file(fixture_dir / f"{case}.sm_80.ttgir")
    owner = _node(graph, op)
    args = [n for n in graph.nodes if n.node_kind == NODE_BLOCK_ARG and n.parent_id == owner]
    assert len(args) == 2 and all(a.dtype == "f32" for a in args)
    assert (_node(graph, f"{op}.return"), owner, 0, 0) in _edges(graph, EDGE_REGION)
    assert graph.nodes[owner].axis == 0
    assert graph.facts()["num_reductions"] >= 1


def test_non_inlined_call_keeps_two_functions(fixture_dir: Path) -> None:
    graph = IrGraph.from_file(fixture_dir / "call.sm_90.ttir")
    funcs = [n for n in graph.nodes if n.op_name == "tt.func" and n.node_kind == NODE_OP]
    assert len(funcs) == 2 and all(f.parent_id is None for f in funcs)
    call = graph.nodes[_node(graph, "tt.call")]
    assert call.num_operands == 2 and "clamp_scale" in (call.attrs_json or "")
    assert graph.entry_name == "call_kernel"
    # no fabricated call -> callee edge
    assert not [e for e in graph.edges if e.src == call.node_id and e.dst == funcs[1].node_id]


def test_atomics_counted_as_stores(fixture_dir: Path) -> None:
    graph = IrGraph.from_file(fixture_dir / "atomics.sm_90.ttgir")
    assert graph.facts()["num_stores"] == 2
    rmw = graph.nodes[_node(graph, "tt.atomic_rmw")]
    assert '"_inline":"fadd, relaxed, gpu"' in (rmw.attrs_json or "")


def test_features_of_pointwise_ttgir(fixture_dir: Path) -> None:
    graph = IrGraph.from_file(fixture_dir / "pointwise.sm_80.ttgir")
    assert (graph.target, graph.num_warps, graph.num_ctas) == ("cuda:80", 4, 1)
    make_range = graph.nodes[_node(graph, "tt.make_range")]
    assert (make_range.range_start, make_range.range_end, make_range.shape, make_range.numel) == (0, 256, [256], 256)
    assert make_range.layout == "blocked" and make_range.warps_per_cta == [4] and make_range.threads_per_warp == [32]
    loads = [graph.nodes[_node(graph, "tt.load", i)] for i in range(2)]
    assert [ld.eviction_policy for ld in loads] == [None, "evict_last"]
    assert loads[0].dtype == "f16" and loads[0].bitwidth == 16
    pointers = graph.nodes[_node(graph, "tt.addptr")]
    assert pointers.is_pointer and pointers.dtype == "ptr<f16>"
    assert graph.nodes[_node(graph, "arith.cmpi")].predicate == "slt"
    assert graph.nodes[_node(graph, "tt.get_program_id")].axis == 0
    constant = graph.nodes[_node(graph, "arith.constant")]
    assert constant.constant == 256.0
    named = {n.var_name for n in graph.nodes if n.var_name}
    assert {"x_ptr", "offsets", "mask"} <= named
    offsets = [n for n in graph.nodes if n.var_name == "offsets"]
    source_line = next(i for i, line in enumerate(Path("tests/extract/kernels/pointwise.py").read_text().splitlines(), 1) if "offsets = " in line)
    assert any(n.loc_line == source_line for n in offsets)
    arg = graph.nodes[1]
    assert arg.node_kind == NODE_BLOCK_ARG and arg.attrs_json == '{"tt.divisibility":"16 : i32"}'


@pytest.mark.parametrize("target,version,instr", [("sm_80", 2, [16, 8]), ("sm_90", 3, [16, 64, 16])])
def test_dot_layouts(fixture_dir: Path, target: str, version: int, instr: list[int]) -> None:
    graph = IrGraph.from_file(fixture_dir / f"dot.{target}.ttgir")
    mma = [n for n in graph.nodes if n.layout == "mma"]
    assert mma and all(n.mma_version == version and n.instr_shape == instr for n in mma)
    assert graph.facts()["num_dots"] >= 1 and graph.facts()["num_loops"] == 1
    if target == "sm_80":
        operands = [n for n in graph.nodes if n.layout == "dot_op"]
        assert operands and all(n.mma_version == 2 for n in operands)
        dot = graph.nodes[_node(graph, "tt.dot")]
        assert dot.input_precision == "tf32"
    sliced = [n for n in graph.nodes if n.layout == "slice"]
    assert sliced and all(n.size_per_thread for n in sliced)


def test_ttir_has_no_layouts(fixture_dir: Path) -> None:
    graph = IrGraph.from_file(fixture_dir / "dot.sm_90.ttir")
    assert graph.level == "ttir" and graph.num_warps is None
    assert all(n.layout is None for n in graph.nodes)
    assert graph.nodes[_node(graph, "tt.dot")].input_precision == "tf32"


# ---------------------------------------------------------------- ids


def test_ir_id_ignores_locations_but_not_content(fixture_dir: Path) -> None:
    text = (fixture_dir / "for_loop.sm_90.ttgir").read_text()
    graph = IrGraph.from_text(text)
    moved = re.sub(r'loc\("([^"]+)":(\d+):(\d+)\)', lambda m: f'loc("/elsewhere/{m.group(1)}":{int(m.group(2)) + 7}:{m.group(3)})', text)
    renamed = text.replace("%acc", "%total")
    assert moved != text and renamed != text
    assert IrGraph.from_text(moved).ir_id == graph.ir_id
    assert IrGraph.from_text(renamed).ir_id == graph.ir_id
    changed = text.replace("arith.addf", "arith.subf", 1)
    assert IrGraph.from_text(changed).ir_id != graph.ir_id
    assert IrGraph.from_text(text, level="ttir").ir_id != graph.ir_id  # the level is hashed too


def test_ttir_and_ttgir_ids_differ(fixture_dir: Path) -> None:
    ids = {IrGraph.from_file(fixture_dir / f"scan.sm_80.{level}").ir_id for level in ("ttir", "ttgir")}
    assert len(ids) == 2


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "name,line,words",
    [("invalid_type.ttir", 3, "signless"), ("invalid_syntax.ttgir", 3, "undeclared SSA value")],
)
def test_invalid_ir_names_file_and_line(name: str, line: int, words: str) -> None:
    path = HANDWRITTEN / name
    with pytest.raises(IrParseError) as info:
        IrGraph.from_file(path)
    message = str(info.value)
    assert message.startswith(f"{path}:{line}:")
    assert words in message
    assert info.value.line == line


def test_invalid_text_names_the_given_source() -> None:
    with pytest.raises(IrParseError, match=r"^kernel\.ttgir:2:"):
        IrGraph.from_text("module {\n  tt.func @f( {\n", source="kernel.ttgir")


def test_the_example_drawn_in_the_readme() -> None:
    graph = IrGraph.from_file(HANDWRITTEN / "readme_example.ttir")
    assert [(n.node_kind, n.op_name) for n in graph.nodes] == [
        ("op", "tt.func"), ("block_arg", "tt.func"), ("block_arg", "tt.func"),
        ("op", "arith.constant"), ("op", "arith.constant"), ("op", "arith.constant"),
        ("op", "scf.for"), ("block_arg", "scf.for"), ("block_arg", "scf.for"),
        ("op", "arith.sitofp"), ("op", "arith.addf"), ("op", "scf.yield"), ("op", "tt.store"), ("op", "tt.return"),
    ]  # fmt: skip
    assert sorted((s, d, p) for s, d, p, _ in _edges(graph, EDGE_DATA)) == [
        (1, 6, 1), (2, 12, 0), (3, 6, 0), (4, 6, 2), (5, 6, 3), (6, 12, 1), (7, 9, 0), (8, 10, 0), (9, 10, 1), (10, 11, 0),
    ]  # fmt: skip
    assert sorted((s, d, p) for s, d, p, _ in _edges(graph, EDGE_REGION)) == [
        (0, 1, 0), (0, 2, 1), (6, 7, 0), (6, 8, 1), (11, 6, 0), (13, 0, 0),
    ]  # fmt: skip


def test_warp_specialize_partitions_are_generic_regions(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING"):
        graph = IrGraph.from_file(HANDWRITTEN / "warp_specialize.ttgir")
    assert "could not be matched" not in caplog.text
    names = [(n.node_kind, n.op_name, n.depth) for n in graph.nodes]
    assert names[3:8] == [
        ("op", "ttg.warp_specialize", 1),
        ("op", "ttg.warp_yield", 2),
        ("op", "ttg.warp_specialize.partitions", 2),
        ("block_arg", "ttg.warp_specialize.partitions", 3),
        ("block_arg", "ttg.warp_specialize.partitions", 3),
    ]
    # default region's yield and the partitions op terminate the two regions of the op
    assert {(4, 3, 0, 0), (5, 3, 1, 1)} <= set(_edges(graph, EDGE_REGION))
    # the partition's arguments are its own block arguments
    assert {(5, 6, 0, 0), (5, 7, 1, 0), (12, 5, 0, 0)} <= set(_edges(graph, EDGE_REGION))
    counts = graph.counts()
    assert (counts["num_nodes"], counts["num_region_edges"], counts["num_data_edges"]) == (14, 8, 7)
    assert (counts["num_loads"], counts["num_stores"], counts["max_depth"]) == (1, 1, 3)
    assert graph.nodes[3].attrs_json == '{"warpGroupStartIds":"array<i32: 4>"}'


# ---------------------------------------------------------------- typed integer attributes

# An independent reading of the text: every printed occurrence of each attribute.
_INTEGER_ATTRIBUTE_TEXT = {
    "divisibility": [r"\btt\.divisibility = (-?\d+)"],
    "contiguity": [r"(?<![\w.])(?:tt\.)?contiguity = (-?\d+)"],
    "loop_num_stages": [r"\btt\.num_stages = (-?\d+)"],
    "num_pending": [r"ttg\.async_wait\b[^\n]*\{num = (\d+)", r"ttng\.warp_group_dot_wait\b[^\n]*\{pendings = (\d+)"],
}


def _text_values(text: str, column: str) -> list[int]:
    return sorted(int(v) for pattern in _INTEGER_ATTRIBUTE_TEXT[column] for v in re.findall(pattern, text))


def _graph_values(graph: IrGraph, column: str) -> list[int]:
    return sorted(getattr(n, column) for n in graph.nodes if getattr(n, column) is not None)


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_integer_attributes_become_typed_columns(fixture_dir: Path, name: str) -> None:
    text = (fixture_dir / name).read_text()
    graph = IrGraph.from_file(fixture_dir / name)
    for column in _INTEGER_ATTRIBUTE_TEXT:
        assert _graph_values(graph, column) == _text_values(text, column), column
    for node in graph.nodes:  # the typed copy never replaces the attribute text
        if node.divisibility is not None:
            assert f'"tt.divisibility":"{node.divisibility} : ' in (node.attrs_json or "")


def test_integer_attributes_of_pipelined_code(fixture_dir: Path) -> None:
    sm90 = IrGraph.from_file(fixture_dir / "dot.sm_90.ttgir")
    waits = [n for n in sm90.nodes if n.op_name == "ttng.warp_group_dot_wait"]
    assert waits and all(n.num_pending is not None for n in waits)
    sm80 = IrGraph.from_file(fixture_dir / "dot.sm_80.ttgir")
    copies = [n for n in sm80.nodes if n.op_name == "ttg.async_copy_global_to_local"]
    assert copies and {n.contiguity for n in copies} == {8}  # 8 x f16 = one 16-byte access
    args = [n for n in sm80.nodes if n.node_kind == NODE_BLOCK_ARG and n.op_name == "tt.func"]
    assert {n.divisibility for n in args} == {16}  # every argument of this case is a multiple of 16


def test_loop_pipelining_depth_is_read_from_the_loop() -> None:
    """tl.range(..., num_stages=3) overrides the config's num_stages=2 for that loop."""
    from extract.compile import compile_call
    from tests.extract.kernels.cases import case

    item = case("staged_loop")
    result = compile_call(item.fn, item.args, target="sm_90", num_stages=2)
    for level in ("ttir", "ttgir"):
        graph = IrGraph.from_compiled(result, level)
        loops = [n for n in graph.nodes if n.node_kind == NODE_OP and n.op_name == "scf.for"]
        assert [n.loop_num_stages for n in loops] == [3], level
        others = [n for n in graph.nodes if n.loop_num_stages is not None and n.op_name != "scf.for"]
        assert not others
