"""Validity rules take shared-memory limits from the planned target, not from sm_90 alone."""

from __future__ import annotations

from dataclasses import replace

import pytest

from corpus.harvest.plan import PlanRequest, plan_runs
from corpus.suite.kernels import _gemm_common
from corpus.suite.spec import KernelSpec
from corpus.suite.targets import DEFAULT_TARGET, current_limits, target_limits, targeting


def test_limits_by_architecture() -> None:
    assert target_limits("sm_90").shared_memory_per_block_bytes == 227 * 1024
    assert target_limits("sm_90a").shared_memory_per_block_bytes == 227 * 1024
    assert target_limits("sm_80").shared_memory_per_block_bytes == 163 * 1024
    assert target_limits("sm_89").shared_memory_per_block_bytes == 99 * 1024
    assert target_limits("sm_91").shared_memory_per_block_bytes == 227 * 1024, "closest below"
    with pytest.raises(ValueError, match="'gfx90a' is not of the form sm_"):
        target_limits("gfx90a")


def test_targeting_sets_and_restores_the_current_limits() -> None:
    assert current_limits().arch == DEFAULT_TARGET
    with targeting("sm_86") as limits:
        assert current_limits() == limits and limits.arch == "sm_86"
    assert current_limits().arch == DEFAULT_TARGET


def test_smaller_shared_memory_rules_out_more_configs(specs: dict[str, KernelSpec]) -> None:
    for name in ("matmul", "attention_decode", "flash_attention_fwd"):
        spec = specs[name]
        dtype = spec.dtypes[0]
        dims = max(spec.shapes_for("default"), key=lambda d: spec.bytes_moved(d, dtype))
        hopper = len(spec.valid_configs(dims, dtype))
        with targeting("sm_86"):
            ampere = spec.valid_configs(dims, dtype)
            reasons = [spec.invalid_reason(c, dims, dtype) for c in spec.config_space()]
        assert len(ampere) < hopper, name
        assert any(r and "sm_86" in r for r in reasons), name


def test_plan_applies_the_request_target(specs: dict[str, KernelSpec]) -> None:
    chosen = {"matmul": specs["matmul"]}
    base = PlanRequest("default", ("float16",), (), None, 0, "model", {"triton": "x"})
    hopper = plan_runs(chosen, base)
    ampere = plan_runs(chosen, replace(base, target="sm_86"))
    skipped = [
        sum(c.skip_reason is not None for c in run.configs) for run in (hopper[0], ampere[0])
    ]
    assert skipped[1] > skipped[0]
    assert _gemm_common.shared_memory_reason(100 * 1024) is None, "back to sm_90 after the plan"
