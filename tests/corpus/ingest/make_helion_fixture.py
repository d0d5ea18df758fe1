"""Regenerate ``fixtures/helion/row_sum.{csv,meta.jsonl}``:
``python -m tests.corpus.ingest.make_helion_fixture`` from the repository root.

Helion autotunes on a GPU only, so this fixture is WRITTEN FROM HELION'S DOCUMENTED FORMAT,
not produced by Helion: the autotune CSV (``run_id, timestamp_s, config_id, generation,
status, perf_ms, compile_time_s, config``; a ``started`` row then a terminal row per config)
and its ``.meta.jsonl`` sidecar (one record per run: ``run_id``, ``kernel_name``,
``kernel_source``, ``input_shapes``, ``dtypes``, ``hardware_info``, ``settings``,
``configs`` by config_id, and ``ir_graph``: Helion's device IR as a networkx node-link graph
with ``data`` and ``region`` edges, ``schema_version`` 1). The kernel, its device IR and every
number are our own, made up to exercise the importer: two runs (two input shapes), ok,
error and timeout configs.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import networkx as nx

OUT = Path(__file__).resolve().parent / "fixtures" / "helion"

KERNEL_SOURCE = """@helion.kernel(static_shapes=True)
def row_sum(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty([m], dtype=torch.float32, device=x.device)
    for tile_m in hl.tile(m):
        acc = hl.zeros([tile_m], dtype=torch.float32)
        for tile_n in hl.tile(n):
            acc = acc + x[tile_m, tile_n].to(torch.float32).sum(-1)
        out[tile_m] = acc
    return out
"""

HARDWARE = {
    "device_kind": "cuda",
    "device_name": "NVIDIA H100 80GB HBM3",
    "compute_capability": "9.0",
    "cpu_num_threads": 16,
    "versions": {"torch": "2.9.0", "helion": "0.2.0", "cuda": "12.8", "triton": "3.5.0"},
    "device_props": {"multi_processor_count": 132, "L2_cache_size": 52428800, "total_memory": 85045231616,
                     "shared_memory_per_block_optin": 232448, "warp_size": 32},
}  # fmt: skip


def _node(
    graph: nx.DiGraph, gid: int, name: str, op_kind: str, target: str, **features: object
) -> str:
    node_id = f"g{gid}:{name}"
    region = "ForLoopGraphInfo" if gid == 0 else "RootGraphInfo"
    base = {"graph_id": gid, "region_kind": region, "block_ids": [1] if gid == 0 else [0], "op_kind": op_kind,
            "target": target, "lowering_class": None, "dtype": None, "shape": None, "concrete_shape": None,
            "stride": None, "concrete_stride": None, "device": None, "value": None, "input_dtypes": None,
            "input_shapes": None, "reduction_type": None, "reduction_ranges": None, "pointwise_ranges": None,
            "source_loc": None}  # fmt: skip
    base.update(features)
    graph.add_node(node_id, **base)
    return node_id


def ir_graph(block_m: int) -> dict:
    """The device IR of ``row_sum`` (config-independent; tile sizes are symbols)."""
    g = nx.DiGraph(num_graphs=2, root_ids=[1], rolled_reductions=[],
                   graphs=[{"graph_id": 0, "region_kind": "ForLoopGraphInfo", "block_ids": [1]},
                           {"graph_id": 1, "region_kind": "RootGraphInfo", "block_ids": [0]}])  # fmt: skip
    f32 = {"dtype": "torch.float32", "device": "cuda:0"}
    acc = _node(g, 0, "acc_1", "placeholder", "acc_1", shape=["u0"], concrete_shape=[None], **f32)
    x = _node(g, 0, "x", "call_function", "helion.language._tracing_ops._host_tensor", shape=["s0", "s1"],
              concrete_shape=[block_m * 8, 512], value=None, **f32)  # fmt: skip
    tile = _node(g, 0, "block_size_1", "call_function", "helion.language._tracing_ops._get_symnode",
                 dtype="SymInt", value="u1")  # fmt: skip
    load = _node(g, 0, "load", "call_function", "helion.language.memory_ops.load", shape=["u0", "u1"],
                 concrete_shape=[None, None], source_loc="row_sum.py:8", **f32)  # fmt: skip
    total = _node(g, 0, "sum_1", "call_function", "aten.sum.dim_IntList", lowering_class="ReductionLowering",
                  reduction_type="sum", reduction_ranges=["u1"], shape=["u0"], concrete_shape=[None],
                  source_loc="row_sum.py:8", **f32)  # fmt: skip
    add = _node(g, 0, "add", "call_function", "aten.add.Tensor", lowering_class="PointwiseLowering",
                pointwise_ranges=["u0"], shape=["u0"], concrete_shape=[None], source_loc="row_sum.py:8", **f32)  # fmt: skip
    out0 = _node(g, 0, "output", "output", "output")
    full = _node(g, 1, "full", "call_function", "helion.language.creation_ops.full", shape=["u0"],
                 concrete_shape=[None], source_loc="row_sum.py:6", **f32)  # fmt: skip
    loop = _node(g, 1, "_for_loop", "call_function", "helion.language._tracing_ops._for_loop", dtype="list",
                 value="[acc]", source_loc="row_sum.py:7")  # fmt: skip
    item = _node(
        g,
        1,
        "getitem",
        "call_function",
        "_operator.getitem",
        shape=["u0"],
        concrete_shape=[None],
        **f32,
    )
    out = _node(g, 1, "out", "call_function", "helion.language._tracing_ops._host_tensor", shape=["s0"],
                concrete_shape=[block_m * 8], **f32)  # fmt: skip
    store = _node(
        g,
        1,
        "store",
        "call_function",
        "helion.language.memory_ops.store",
        source_loc="row_sum.py:9",
    )
    _node(g, 1, "output", "output", "output")  # the root graph returns nothing
    for src, dst, positions in [(x, load, [0]), (tile, load, [1]), (load, total, [0]), (acc, add, [0]),
                                (total, add, [1]), (add, out0, [0]), (full, loop, [0]), (loop, item, [0]),
                                (out, store, [0]), (item, store, [1])]:  # fmt: skip
        g.add_edge(
            src,
            dst,
            edge_kind="data",
            arg_positions=positions,
            dtype=g.nodes[src]["dtype"],
            shape=g.nodes[src]["shape"],
        )
    g.add_edge(full, acc, edge_kind="region", arg_positions=[], dtype="torch.float32", shape=["u0"])
    return {"schema_version": 1, **nx.node_link_data(g, edges="edges")}


CONFIGS = {
    "c0a1": "Config(block_sizes=[32, 64], num_stages=1, num_warps=4, pid_type='flat')",
    "c0b2": "Config(block_sizes=[64, 128], num_stages=2, num_warps=8, pid_type='flat')",
    "c0c3": "Config(block_sizes=[128, 256], num_stages=3, num_warps=8, pid_type='flat')",
    "c0d4": "Config(block_sizes=[16, 32], num_stages=1, num_warps=2, pid_type='flat')",
}
RUNS = {  # helion run_id -> (input shape, [(config_id, generation, status, perf_ms, compile_time_s)])
    "5f1e0a0b9d6c4e21": ((1024, 512), [("c0a1", 0, "ok", 0.0213, 1.21), ("c0b2", 0, "ok", 0.0158, 1.35),
                                       ("c0c3", 1, "error", None, 0.88), ("c0d4", 1, "ok", 0.0391, 1.02)]),
    "a7c3d2e1f0b94c88": ((4096, 512), [("c0a1", 0, "ok", 0.0644, 1.19), ("c0b2", 0, "ok", 0.0402, 1.33),
                                       ("c0c3", 1, "timeout", None, 30.0)]),
}  # fmt: skip


def csv_text() -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(
        [
            "run_id",
            "timestamp_s",
            "config_id",
            "generation",
            "status",
            "perf_ms",
            "compile_time_s",
            "config",
        ]
    )
    clock = 0.0
    for run_id, (_, rows) in RUNS.items():
        for config_id, generation, status, perf, compile_s in rows:
            clock += 0.5
            writer.writerow(
                [
                    run_id,
                    f"{clock:.2f}",
                    config_id,
                    generation,
                    "started",
                    "",
                    f"{compile_s:.2f}",
                    CONFIGS[config_id],
                ]
            )
            clock += 0.25
            writer.writerow([run_id, f"{clock:.2f}", config_id, generation, status,
                             "" if perf is None else f"{perf:.6f}", f"{compile_s:.2f}", CONFIGS[config_id]])  # fmt: skip
    return buffer.getvalue()


def meta_lines() -> str:
    records = []
    for run_id, (shape, rows) in RUNS.items():
        records.append({
            "run_id": run_id,
            "kernel_name": "row_sum",
            "kernel_source": KERNEL_SOURCE,
            "input_shapes": str([shape]),
            "dtypes": "['torch.float32']",
            "hardware_info": HARDWARE,
            "settings": {"static_shapes": True, "index_dtype": "torch.int32", "backend": "triton"},
            "configs": {config_id: CONFIGS[config_id] for config_id, *_ in rows},
            "ir_graph": ir_graph(shape[0] // 8),
        })  # fmt: skip
    return "".join(json.dumps(record, sort_keys=True) + "\n" for record in records)


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "row_sum.csv").write_text(csv_text())
    (OUT / "row_sum.meta.jsonl").write_text(meta_lines())
    print(f"wrote {OUT}/row_sum.csv and row_sum.meta.jsonl")
