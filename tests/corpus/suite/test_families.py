"""Contract and correctness tests of every registered kernel family.

The interpreter test runs ``python -m corpus.suite check`` once, in a subprocess: Triton's
interpreter must be selected before kernel modules are imported, while this process keeps
the compiled (JIT) kernels that the compile test needs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from corpus.harvest.plan import launch_grid
from corpus.suite.spec import CATEGORIES, SCALES, KernelSpec, interpreter_dtypes, shape_name
from schemas.enums import ROLES, Role

from .conftest import SUITE_REPORT

REPO_ROOT = Path(__file__).resolve().parents[3]
INTERPRETER_SAMPLES = 4
"""Valid configs drawn per family besides the default config on every tiny shape x dtype."""
DEVICE_DEPENDENT_SCALARS = {"persistent_matmul": ["num_programs"]}
"""Scalar inputs whose value depends on the device (meta vs CPU), by family."""
TINY_LAUNCH_LIMIT_S = 1.5
"""A tiny-scale launch in the interpreter must take well under a second; this allows for a
loaded CI machine."""


def test_declares_the_contract(specs: dict[str, KernelSpec], family: str) -> None:
    spec = specs[family]
    assert spec.category in CATEGORIES
    assert spec.dtypes, "no dtypes"
    assert interpreter_dtypes(spec), (
        "needs float32 or float16 for the interpreter tests"
    )
    for scale in SCALES:
        assert spec.shapes_for(scale), f"no {scale} shapes"
    names = [shape_name(dims) for scale in SCALES for dims in spec.shapes_for(scale)]
    assert len(names) == len(set(names)), "duplicate shapes"
    assert spec.outputs, "no outputs"
    assert set(spec.mutated) <= set(spec.outputs), "mutated inputs must be checked outputs"


def test_config_space_is_real(specs: dict[str, KernelSpec], family: str) -> None:
    spec = specs[family]
    space = spec.config_space()
    ids = [config.id for config in space]
    assert len(ids) == len(set(ids)), "duplicate configs in the space"
    assert spec.default_config() in space, "default config is not in the space"
    assert len(space) >= 8, f"only {len(space)} configs: not a space worth tuning"
    knobs = {k for config in space for k in config.kwargs}
    constexpr = {p.name for p in spec.kernel.params if p.is_constexpr}
    assert knobs <= constexpr, (
        f"config knobs {knobs - constexpr} are not constexpr parameters of the kernel"
    )


def test_default_config_is_valid_on_tiny_and_default_shapes(
    specs: dict[str, KernelSpec], family: str
) -> None:
    spec = specs[family]
    default = spec.default_config()
    for scale in ("tiny", "default"):
        for dims in spec.shapes_for(scale):
            for dtype in spec.dtypes:
                reason = spec.invalid_reason(default, dims, dtype)
                assert reason is None, (
                    f"default config invalid on {scale} {shape_name(dims)} {dtype}: {reason}"
                )


def test_invalid_configs_give_reasons(specs: dict[str, KernelSpec], family: str) -> None:
    spec = specs[family]
    for scale in SCALES:
        for dims in spec.shapes_for(scale):
            for dtype in spec.dtypes:
                for config in spec.config_space():
                    reason = spec.invalid_reason(config, dims, dtype)
                    assert reason is None or (isinstance(reason, str) and reason.strip()), (
                        f"{config.launch} on {shape_name(dims)}: reason must be None or a non-empty string, got {reason!r}"
                    )
        valid = sum(
            bool(spec.valid_configs(dims, d))
            for dims in spec.shapes_for(scale)
            for d in spec.dtypes
        )
        assert valid == len(spec.shapes_for(scale)) * len(spec.dtypes), (
            f"a {scale} run has no valid config"
        )


@pytest.mark.parametrize("scale", SCALES)
def test_meta_inputs_bind_every_parameter(
    specs: dict[str, KernelSpec], family: str, scale: str
) -> None:
    spec = specs[family]
    parameters = set(spec.kernel.arg_names)
    for dims in spec.shapes_for(scale):
        for dtype in spec.dtypes:
            inputs = spec.make_inputs(dims, dtype, "meta", seed=0)
            assert set(spec.outputs) <= set(inputs), "every output must be an input buffer"
            config = spec.valid_configs(dims, dtype)[0]
            grid, args = spec.bind(inputs, dims, config)
            assert set(args) == parameters, (
                f"bind gives {sorted(args)}, kernel takes {sorted(parameters)}"
            )
            assert grid and all(isinstance(g, int) and g >= 1 for g in grid), f"bad grid {grid}"
            for name, value in config.kwargs.items():
                assert args[name] == value, f"bind changed the config's {name}"
            assert isinstance(spec.flops(dims), int) and spec.flops(dims) >= 0
            assert (
                isinstance(spec.bytes_moved(dims, dtype), int) and spec.bytes_moved(dims, dtype) > 0
            )


def test_every_meta_parameter_has_a_declared_role(
    specs: dict[str, KernelSpec], family: str
) -> None:
    spec = specs[family]
    knobs = {name for config in spec.config_space() for name in config.kwargs}
    undeclared = sorted(knobs - set(spec.roles))
    assert not undeclared, (
        f"meta-parameters without a role: {undeclared} (declare them in roles, 'other' if none fits)"
    )
    stale = sorted(set(spec.roles) - knobs)
    assert not stale, f"roles name {stale}, which no config of the space sets"
    assert all(spec.roles[k] in ROLES and spec.role_of(k) in ROLES for k in knobs)
    # 'other' is the fallback for user suites; a built-in family uses it only where no role fits.
    others = [k for k in knobs if spec.role_of(k) == Role.OTHER.value]
    assert len(others) < len(knobs), (
        f"every knob of {family} is 'other': nothing lines up across families"
    )


def test_flag_dims_are_switches_in_every_shape(specs: dict[str, KernelSpec], family: str) -> None:
    spec = specs[family]
    for scale in SCALES:
        for dims in spec.shapes_for(scale):
            missing = [flag for flag in spec.flag_dims if flag not in dims]
            assert not missing, f"flag dims {missing} missing from {scale} shape {shape_name(dims)}"
            sizes, flags = spec.problem_sizes(dims), spec.problem_flags(dims)
            assert {**sizes, **flags} == dict(dims) and not set(sizes) & set(flags)
            assert all(size >= 1 for size in sizes.values()), (
                f"a size of {shape_name(dims)} is not positive: is it a flag?"
            )
    for flag in spec.flag_dims:
        values = {dims[flag] for scale in SCALES for dims in spec.shapes_for(scale)}
        assert values <= set(range(8)), (
            f"flag {flag} takes values {sorted(values)}: a mode switch, or a size?"
        )


def test_grid_depends_on_dims_config_and_scalars_only(
    specs: dict[str, KernelSpec], family: str
) -> None:
    """The harvest plans grids by binding meta tensors. A grid may depend on the scalar inputs
    (a persistent kernel's program count is the device's SM count), never on tensors: meta
    and real tensors with the same scalars bind the same grid for every config."""
    spec = specs[family]
    dtype = interpreter_dtypes(spec)[0]
    compared = 0
    for dims in spec.shapes_for("tiny"):
        meta = spec.make_inputs(dims, dtype, "meta", seed=0)
        real = spec.make_inputs(dims, dtype, "cpu", seed=0)
        real_tensors = {
            **real,
            **{k: v for k, v in meta.items() if not isinstance(v, torch.Tensor)},
        }
        for config in spec.config_space():
            planned = launch_grid(spec, meta, dims, config)
            if planned is None:
                assert spec.invalid_reason(config, dims, dtype) is not None, (
                    f"bind refuses valid {config.launch}"
                )
                continue
            launched, _ = spec.bind(real_tensors, dims, config)
            assert planned == tuple(launched), (
                f"{shape_name(dims)} {config.launch}: meta {planned} != real {launched}"
            )
            compared += 1
    assert compared, "no config could be bound"


def test_device_dependent_scalars_are_the_known_ones(
    specs: dict[str, KernelSpec], family: str
) -> None:
    """Scalar inputs that differ between meta and CPU inputs make the planned grid differ from
    the launched one; the harvest then records the launched grid. Only these do so today."""
    spec = specs[family]
    dtype = interpreter_dtypes(spec)[0]
    dims = spec.shapes_for("tiny")[0]
    meta = spec.make_inputs(dims, dtype, "meta", seed=0)
    real = spec.make_inputs(dims, dtype, "cpu", seed=0)
    differing = sorted(
        k for k, v in meta.items() if not isinstance(v, torch.Tensor) and real[k] != v
    )
    assert differing == DEVICE_DEPENDENT_SCALARS.get(family, []), (
        f"device-dependent scalar inputs: {differing}"
    )


@pytest.fixture(scope="module")
def interpreter_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict]]:
    """Run the reference check of every family on the tiny scale in Triton's interpreter."""
    out = tmp_path_factory.mktemp("interpreter") / "results.json"
    command = [
        sys.executable, "-m", "corpus.suite", "check", "--scale", "tiny", "--device", "cpu",
        "--samples", str(INTERPRETER_SAMPLES), "--seed", "0", "--json", str(out),
    ]  # fmt: skip
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900
    )
    if not out.exists():
        pytest.fail(
            f"check produced no results (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
        )
    by_family: dict[str, list[dict]] = {}
    for result in json.loads(out.read_text()):
        by_family.setdefault(result["family"], []).append(result)
    total = sum(len(v) for v in by_family.values())
    later = [r for v in by_family.values() for r in v][1:]
    slowest = max(later, key=lambda r: r["seconds"])
    SUITE_REPORT["suite: interpreter check (tiny)"] = [
        f"{total} launches over {len(by_family)} families; slowest {slowest['seconds']:.2f} s "
        f"({slowest['family']} {slowest['shape']} {slowest['config']})"
    ]
    return by_family


def test_tiny_configs_match_reference_in_interpreter(
    specs: dict[str, KernelSpec], interpreter_results: dict[str, list[dict]], family: str
) -> None:
    interpreter_first = next(iter(interpreter_results.values()))[0]
    spec = specs[family]
    results = interpreter_results.get(family, [])
    failures = [
        f"{r['shape']} {r['dtype']} {r['config']}: {r['error']}" for r in results if not r["ok"]
    ]
    assert not failures, "\n".join(failures)
    expected_defaults = {
        (shape_name(dims), dtype)
        for dims in spec.shapes_for("tiny")
        for dtype in spec.dtypes
        if dtype in interpreter_dtypes(spec)
    }
    checked_defaults = {(r["shape"], r["dtype"]) for r in results if r["is_default"]}
    assert checked_defaults == expected_defaults, (
        "the default config must run on every tiny shape x dtype"
    )
    samples = [r for r in results if not r["is_default"]]
    assert len(samples) >= min(INTERPRETER_SAMPLES, 1), "no sampled configs were checked"
    # The first launch of the checking process also pays the interpreter's start-up.
    timed = [r for r in results if r is not interpreter_first]
    slow = [
        f"{r['shape']} {r['config']}: {r['seconds']:.2f} s"
        for r in timed
        if r["seconds"] > TINY_LAUNCH_LIMIT_S
    ]
    assert not slow, "tiny launches too slow for the interpreter:\n" + "\n".join(slow)
