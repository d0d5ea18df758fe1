"""Planning: which runs a harvest performs and which configs each run tries.

A run is (family, shape, dtype) on one device model with one toolchain. Plans are
deterministic for a given suite, scale, seed and device, so ``--shard i/N`` splits them
identically on every machine and a rerun finds the same run_ids to resume.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from corpus.harvest.identity import input_signature, spec_kernel_id
from corpus.suite.spec import Config, Dims, KernelSpec, shape_name
from corpus.suite.targets import DEFAULT_TARGET, is_cuda_target, on_sm_count, targeting
from schemas.identity import canonical_json, content_hash, run_id

CONFIG_OVERHEAD = float(1 << 24)
"""A config's fixed cost in bytes-equivalent (16 MiB): compiling and checking it and the
launch latency of its reps are counted as this much extra work per config, so a plan of many
tiny runs is not estimated as free."""
FLOPS_PER_BYTE = 64.0
"""Ridge point of the cost model: FLOPs that cost as much time as one byte of DRAM traffic
(between fp32 CUDA-core and tensor-core ridges of recent GPUs; only ratios between runs
matter, so it need not be exact)."""


def launch_work(flops: float, bytes_moved: float) -> float:
    """Estimated work of one launch in bytes-equivalent: DRAM bytes plus FLOPs at
    :data:`FLOPS_PER_BYTE` (a roofline sum, not a max, so both terms order runs)."""
    return float(bytes_moved) + float(flops) / FLOPS_PER_BYTE


@dataclass(frozen=True)
class PlannedConfig:
    config: Config
    skip_reason: str | None = None
    """Set for configs the spec rules out on this shape/dtype: recorded as ``skipped`` rows."""
    grid: tuple[int, ...] | None = None
    """Launch grid (programs per axis) from the spec's ``bind`` on meta inputs; None when
    ``bind`` refuses the config. It is the launched grid unless a scalar input depends on the
    device (a persistent kernel's program count), so measurements record the grid the
    benchmark worker reports and fall back to this one for configs never launched."""


@dataclass(frozen=True)
class PlannedRun:
    family: str
    scale: str
    dims: Mapping[str, int]
    dtype: str
    seed: int
    run_id: str
    kernel_id: str
    signature: Mapping[str, Any]
    configs: tuple[PlannedConfig, ...]
    """In benchmark order (seeded shuffle); the default config is always included when valid."""
    default_config_id: str
    sizes: Mapping[str, int] = field(default_factory=dict)
    """The dims that are problem sizes (:meth:`KernelSpec.problem_sizes`)."""
    flags: Mapping[str, int] = field(default_factory=dict)
    """The dims that are mode switches (:meth:`KernelSpec.problem_flags`)."""
    roles: Mapping[str, str] = field(default_factory=dict)
    """Role of every meta-parameter of the planned configs (:meth:`KernelSpec.role_of`)."""
    launch_work: float = 0.0
    """Estimated work of one launch in bytes-equivalent (:func:`launch_work`); with the
    number of valid configs it gives :attr:`estimated_cost`, what static shards balance."""

    @property
    def estimated_cost(self) -> float:
        """Estimated cost of the whole run (bytes-equivalent): every valid config pays a fixed
        overhead (compile, correctness check, launch latencies) plus its launches' work."""
        valid = sum(1 for p in self.configs if p.skip_reason is None)
        return valid * (CONFIG_OVERHEAD + self.launch_work)

    @property
    def shape_name(self) -> str:
        return shape_name(self.dims)

    @property
    def label(self) -> str:
        return f"{self.family} {self.shape_name} {self.dtype}"


@dataclass(frozen=True)
class PlanRequest:
    scale: str
    dtypes: tuple[str, ...] | None
    """Dtypes to harvest (intersected with each family's); None = the family's own."""
    excluded_dtypes: tuple[str, ...]
    """Dtypes the device cannot run (bfloat16 on the interpreter)."""
    max_configs: int | None
    """Seeded sample size per run; None = every valid config, plus invalid ones as skipped."""
    seed: int
    device_model: str
    toolchain: Mapping[str, Any]
    target: str = DEFAULT_TARGET
    """Compile target whose limits the families' validity rules apply (``sm_90``...; other
    backends' targets fall back to the suite's reference architecture)."""
    sm_count: int | None = None
    """SM count of the GPU the runs are measured on (None: unknown, the interpreter), for
    arguments that depend on it (:func:`corpus.suite.targets.on_sm_count`)."""


def _run_seed(seed: int, family: str, dims: Dims, dtype: str) -> int:
    return int(content_hash("seed", str(seed), family, canonical_json(dict(dims)), dtype), 16) % (2**31)


def launch_grid(
    spec: KernelSpec, inputs: Mapping[str, Any], dims: Dims, config: Config
) -> tuple[int, ...] | None:
    """The launch grid ``bind`` gives ``config`` on ``inputs`` (meta tensors suffice), or None
    when ``bind`` refuses it (some invalid configs cannot be bound; a valid one that cannot
    fails its compile, which records why)."""
    try:
        grid, _ = spec.bind(inputs, dims, config)
    except Exception:
        return None
    return tuple(int(g) for g in grid)


def plan_configs(spec: KernelSpec, dims: Dims, dtype: str, max_configs: int | None, rng: random.Random) -> list[PlannedConfig]:
    """The configs one run tries, in a seeded random benchmark order (grids not yet bound)."""
    default = spec.default_config()
    valid, invalid = [], []
    for config in spec.config_space():
        reason = spec.invalid_reason(config, dims, dtype)
        (valid if reason is None else invalid).append(PlannedConfig(config, reason))
    if max_configs is None:
        chosen = valid + invalid
    else:
        others = [p for p in valid if p.config != default]
        rng.shuffle(others)  # a prefix of one seeded order: --max-configs 8 is a subset of 32
        keep = max(0, max_configs - 1)
        chosen = [p for p in valid if p.config == default] + others[:keep]
    rng.shuffle(chosen)
    return chosen


def plan_runs(specs: Mapping[str, KernelSpec], request: PlanRequest) -> list[PlannedRun]:
    """Every run of the selected families at ``request.scale``, in a stable order."""
    target = request.target if is_cuda_target(request.target) else DEFAULT_TARGET
    with targeting(target), on_sm_count(request.sm_count):
        return _plan_runs(specs, request)


def _plan_runs(specs: Mapping[str, KernelSpec], request: PlanRequest) -> list[PlannedRun]:
    runs = []
    for name, spec in specs.items():
        kernel = spec_kernel_id(spec)
        dtypes = [d for d in spec.dtypes if (request.dtypes is None or d in request.dtypes) and d not in request.excluded_dtypes]
        for dims in spec.shapes_for(request.scale):
            for dtype in dtypes:
                seed = _run_seed(request.seed, name, dims, dtype)
                inputs = spec.make_inputs(dims, dtype, "meta", seed)
                signature = input_signature(spec, dims, dtype, inputs)
                planned = plan_configs(spec, dims, dtype, request.max_configs, random.Random(seed))
                configs = [
                    replace(p, grid=launch_grid(spec, inputs, dims, p.config)) for p in planned
                ]
                knobs = sorted({knob for p in configs for knob in p.config.kwargs})
                runs.append(
                    PlannedRun(
                        family=name,
                        scale=request.scale,
                        dims=dict(dims),
                        dtype=dtype,
                        seed=seed,
                        run_id=run_id(kernel, signature, request.device_model, request.toolchain),
                        kernel_id=kernel,
                        signature=signature,
                        configs=tuple(configs),
                        default_config_id=spec.default_config().id,
                        sizes=spec.problem_sizes(dims),
                        flags=spec.problem_flags(dims),
                        roles={knob: spec.role_of(knob) for knob in knobs},
                        launch_work=launch_work(spec.flops(dims), spec.bytes_moved(dims, dtype)),
                    )
                )
    return runs


def shard_assignment(runs: Sequence[PlannedRun], count: int) -> dict[str, int]:
    """run_id -> shard in ``0..count-1``, balanced by :attr:`PlannedRun.estimated_cost`.

    Greedy longest-processing-time: runs in decreasing cost (ties by run_id, so the order
    does not depend on the plan's order), each to the shard with the least cost so far (ties:
    the lowest index). Deterministic: the same plan gives the same assignment on every
    machine. The most expensive shard costs at most 4/3 of the optimum (Graham's bound), and at
    most the mean plus the largest single run."""
    if count < 1:
        raise ValueError(f"shard count must be at least 1, got {count}")
    loads = [(0.0, index) for index in range(count)]  # a heap of (cost so far, shard)
    assignment: dict[str, int] = {}
    for run in sorted(runs, key=lambda r: (-r.estimated_cost, r.run_id)):
        load, index = heapq.heappop(loads)
        assignment[run.run_id] = index
        heapq.heappush(loads, (load + run.estimated_cost, index))
    return assignment


def shard(runs: Sequence[PlannedRun], index: int, count: int) -> list[PlannedRun]:
    """Runs of shard ``index`` of ``count`` in plan order (see :func:`shard_assignment`)."""
    if not 0 <= index < count:
        raise ValueError(f"shard {index}/{count}: index must be in 0..{count - 1}")
    assignment = shard_assignment(runs, count)
    return [r for r in runs if assignment[r.run_id] == index]
