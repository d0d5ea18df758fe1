"""Small synthetic datasets written through schemas.DatasetWriter, for the train tests.

Latencies follow a known law (interpreter-like: proportional to the programs launched, plus a
little per-warp cost and seeded noise), so tests can state what a sensible model or baseline
must reach and what a random one cannot.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import dataclass

import numpy as np

from schemas import DatasetWriter
from schemas.identity import config_id

BLOCKS_M = (16, 32, 64)
BLOCKS_N = (32, 64, 128)
WARPS = (2, 4)
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
H100 = {
    "device_kind": "cuda",
    "arch": "sm_90",
    "device_name": "NVIDIA H100 80GB HBM3",
    "compute_capability": "9.0",
    "sm_count": 132,
    "sm_clock_max_mhz": 1980,
    "smem_per_block_bytes": 232448,
    "l2_bytes": 52428800,
}
"""Device facts of a GPU run (``gpu=True``)."""


@dataclass(frozen=True)
class Synthetic:
    """What was written: expected counts for assertions."""

    root: str
    n_runs: int
    n_measurements: int
    n_failed: int
    families: tuple[str, ...]


def _configs(rng: np.random.Generator, n: int) -> list[tuple[int, int, int]]:
    space = [(m, nb, w) for m in BLOCKS_M for nb in BLOCKS_N for w in WARPS]
    picks = rng.choice(len(space), size=n, replace=False)
    return [space[i] for i in sorted(picks)]


def _latency(programs: int, warps: int, noise: float) -> float:
    return (0.01 * programs + 0.002 * warps) * (1.0 + 0.03 * noise)


def run_rows(
    family: str,
    shape: tuple[int, int],
    *,
    index: int,
    n_configs: int,
    seed: int,
    harvest_id: str = "h0",
    with_v2: bool = True,
    fail_one: bool = True,
    finished_minute: int = 0,
    gpu: bool = False,
) -> dict[str, list[dict]]:
    """Rows of one committed run: measurements (one failed when ``fail_one``), ir_graphs of its
    configs' TTGIR, and the runs row. ``with_v2=False`` leaves the version-2 columns null;
    ``gpu=True`` makes it an H100 run."""
    rng = np.random.default_rng(seed * 1000 + index)
    m, n = shape
    run_id = f"{family}-{m}x{n}".ljust(16, "0")[:16]
    measurements, graphs = [], []
    for c, (bm, bn, warps) in enumerate(_configs(rng, n_configs)):
        grid = [math.ceil(m / bm), math.ceil(n / bn)]
        programs = grid[0] * grid[1]
        failed = fail_one and c == n_configs - 1
        median = None if failed else _latency(programs, warps, float(rng.standard_normal()))
        ir_id = f"ir-{run_id}-{c}"
        row = {
            "run_id": run_id,
            "config_id": config_id({"BLOCK_M": bm, "BLOCK_N": bn}, warps, 2),
            "harvest_id": harvest_id,
            "arch": "sm_90" if gpu else "interpreter",
            "config_json": json.dumps(
                {"kwargs": {"BLOCK_M": bm, "BLOCK_N": bn}, "num_warps": warps}
            ),
            "config_params": [{"name": "BLOCK_M", "value": bm}, {"name": "BLOCK_N", "value": bn}],
            "num_warps": warps,
            "num_stages": 2,
            "num_ctas": 1,
            "is_default": c == 0,
            "status": "compile_error" if failed else "ok",
            "median_ms": median,
            "p20_ms": None if median is None else median * 0.98,
            "p80_ms": None if median is None else median * 1.02,
            "samples_ms": None if median is None else [median * 0.98, median, median * 1.02],
            "ttgir_id": None if failed else ir_id,
            "ttir_id": None if failed else ir_id.replace("ir-", "tt-"),
            "n_regs": 32 + 8 * warps,
            "sass_instructions": 100 + bm + bn,
            "sass_mix": [{"cls": "memory", "count": bm}, {"cls": "float", "count": bn}],
        }
        if with_v2:
            row |= {
                "config_roles": [
                    {"name": "BLOCK_M", "role": "tile_m", "value": bm},
                    {"name": "BLOCK_N", "role": "tile_n", "value": bn},
                ],
                "grid": grid,
                "num_programs": programs,
                "threads_per_program": 32 * warps,
            }
        measurements.append(row)
        if not failed:
            graphs.append(
                {
                    "ir_id": ir_id,
                    "level": "ttgir",
                    "num_nodes": 10 + c,
                    "num_loads": 2,
                    "num_dots": 0,
                }
            )
    run = {
        "run_id": run_id,
        "harvest_id": harvest_id,
        "kernel_id": f"k-{family}",
        "family": family,
        "scale": "tiny",
        "shape_name": f"M{m}_N{n}",
        "problem_json": json.dumps({"M": m, "N": n}),
        "dtype": "float32",
        "flops": m * n,
        "bytes_moved": 8 * m * n,
        "device_kind": "interpreter",
        "arch": "interpreter",
        "device_name": "Triton interpreter",
        **(H100 if gpu else {}),
        "default_config_id": measurements[0]["config_id"],
        "n_configs": n_configs,
        "finished_at": T0 + dt.timedelta(minutes=finished_minute),
    }
    if with_v2:
        run["problem_dims"] = [{"name": "M", "value": m}, {"name": "N", "value": n}]
    return {"measurements": measurements, "ir_graphs": graphs, "runs": [run]}


def graph_rows(graphs: list[dict]) -> tuple[list[dict], list[dict]]:
    """``ir_nodes`` and ``ir_edges`` rows of ``graphs`` (``ir_graphs`` rows, as
    :func:`run_rows` makes them): each graph a chain of its ``num_nodes`` ops, load first, so
    training reads whole graphs (measurements naming a graph without nodes are refused)."""
    nodes, edges = [], []
    for graph in graphs:
        ir_id, count = graph["ir_id"], graph["num_nodes"]
        ops = ["tt.load", *["arith.addf"] * (count - 2), "tt.store"]
        where = {"ir_id": ir_id, "level": "ttgir"}
        nodes += [
            {**where, "node_id": i, "node_kind": "op", "op_name": op, "dialect": op.split(".")[0]}
            for i, op in enumerate(ops)
        ]
        edges += [
            {**where, "src": i, "dst": i + 1, "kind": "data", "position": 0}
            for i in range(count - 1)
        ]
    return nodes, edges


def write_dataset(
    root: str,
    *,
    n_families: int = 5,
    shapes_per_family: int = 2,
    n_configs: int = 6,
    seed: int = 0,
    with_v2: bool = True,
) -> Synthetic:
    """A dataset of ``n_families`` families x ``shapes_per_family`` runs, each with
    ``n_configs`` configs (the last one failed)."""
    writer = DatasetWriter(root)
    families = tuple(f"fam{i}" for i in range(n_families))
    shapes = [(64, 256), (128, 512), (256, 128), (32, 1024)]
    n_runs = 0
    for f, family in enumerate(families):
        for s in range(shapes_per_family):
            rows = run_rows(
                family,
                shapes[s % len(shapes)],
                index=f * 10 + s,
                n_configs=n_configs,
                seed=seed,
                with_v2=with_v2,
            )
            writer.write("ir_graphs", rows["ir_graphs"])
            nodes, edges = graph_rows(rows["ir_graphs"])
            writer.write("ir_nodes", nodes)
            writer.write("ir_edges", edges)
            writer.write("measurements", rows["measurements"])
            writer.commit_run(rows["runs"])
            n_runs += 1
    return Synthetic(root, n_runs, n_runs * n_configs, n_runs, families)
