"""The spec-derived columns of a real tiny harvest: launch grid, program count, threads per
program, knob roles, problem sizes apart from flags, arithmetic intensity, IR target, source.

Every expected value is recomputed here from the suite (``bind`` on real CPU tensors, as the
interpreter's benchmark worker launches), not copied from the harvest's own code path.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from corpus.suite.registry import load_suite
from corpus.suite.spec import Config, KernelSpec
from schemas import read_table

from .conftest import run_harvest


@pytest.fixture(scope="module")
def specs() -> dict[str, KernelSpec]:
    return load_suite()


def launched_grid(spec: KernelSpec, run: dict, config_json: str) -> tuple[int, ...]:
    """The grid the interpreter's benchmark worker launches ``config_json`` with."""
    config = Config(**json.loads(config_json))
    dims = json.loads(run["problem_json"])
    inputs = spec.make_inputs(dims, run["dtype"], "cpu", run["seed"])
    return tuple(spec.bind(inputs, dims, config)[0])


def check_measurements(out: Path, specs: dict[str, KernelSpec]) -> list[dict]:
    runs = {r["run_id"]: r for r in read_table(str(out), "runs").to_pylist()}
    rows = read_table(str(out), "measurements").to_pylist()
    assert rows
    for row in rows:
        run = runs[row["run_id"]]
        spec = specs[run["family"]]
        grid = launched_grid(spec, run, row["config_json"])
        assert tuple(row["grid"]) == grid, f"{run['family']} {row['launch']}"
        assert row["num_programs"] == math.prod(grid)
        assert row["threads_per_program"] == 32 * row["num_warps"]
        params = {p["name"]: p["value"] for p in row["config_params"]}
        roles = {r["name"]: (r["role"], r["value"]) for r in row["config_roles"]}
        assert roles == {name: (spec.role_of(name), value) for name, value in params.items()}
    return rows


def test_tiny_harvest_rows_carry_the_launch_and_roles(
    reference_dataset: Path, specs: dict[str, KernelSpec]
):
    rows = check_measurements(reference_dataset, specs)
    assert {r["status"] for r in rows} == {"ok"}
    for run in read_table(str(reference_dataset), "runs").to_pylist():
        spec = specs[run["family"]]
        dims = json.loads(run["problem_json"])
        assert {d["name"]: d["value"] for d in run["problem_dims"]} == spec.problem_sizes(dims)
        assert {d["name"]: d["value"] for d in run["problem_flags"]} == spec.problem_flags(dims)
        assert run["arithmetic_intensity"] == pytest.approx(
            spec.flops(dims) / spec.bytes_moved(dims, run["dtype"])
        )
        assert run["ir_target"] == "sm_90" and run["source"] == "harvest"


def test_a_device_dependent_grid_is_recorded_as_launched(
    tmp_path: Path, specs: dict[str, KernelSpec]
):
    """persistent_matmul launches one program per SM: 132 assumed when planning on meta
    tensors, a few on the interpreter. The rows must hold the grid actually launched."""
    out = tmp_path / "persistent"
    run_harvest(
        out,
        "--families",
        "persistent_matmul",
        "--max-configs",
        "4",  # the seeded sample of 4 holds a config whose launched grid differs from the plan
        "--dtypes",
        "float32",
        "--workers",
        "2",
    )
    rows = check_measurements(out, specs)
    spec = specs["persistent_matmul"]
    runs = {r["run_id"]: r for r in read_table(str(out), "runs").to_pylist()}
    planned = []
    for row in rows:
        run = runs[row["run_id"]]
        dims = json.loads(run["problem_json"])
        meta = spec.make_inputs(dims, run["dtype"], "meta", run["seed"])
        planned.append(tuple(spec.bind(meta, dims, Config(**json.loads(row["config_json"])))[0]))
    assert any(tuple(r["grid"]) != p for r, p in zip(rows, planned)), (
        "no row shows a launched grid unlike the plan"
    )
