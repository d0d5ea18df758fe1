"""Build table rows from harvest outcomes (field names from :mod:`schemas.tables`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from corpus.harvest.compile_worker import CompileOutcome
from corpus.harvest.device import DeviceFacts
from corpus.harvest.identity import kernel_source, spec_kernel_id
from corpus.harvest.measure_worker import MeasureOutcome
from corpus.harvest.plan import PlannedConfig, PlannedRun
from corpus.harvest.timing import summarize
from corpus.suite.spec import Config, KernelSpec
from extract.locations import publishable_message
from schemas.enums import Role, Source, Status
from schemas.identity import canonical_json
from schemas.machine import machine_label

TIMING_FIELDS = ("median_ms", "mean_ms", "min_ms", "max_ms", "p20_ms", "p80_ms", "std_ms", "n_reps")
WARP_SIZE = 32
"""Threads per warp on NVIDIA GPUs (``threads_per_program`` = num_warps x this)."""


def now() -> datetime:
    return datetime.now(timezone.utc)


def kernel_row(spec: KernelSpec, suite_module: str) -> dict[str, Any]:
    source, entry, module = kernel_source(spec)
    return {
        "kernel_id": spec_kernel_id(spec),
        "family": spec.name,
        "category": spec.category,
        "suite": suite_module,
        "entry_name": entry,
        "source": source,
        "source_path": module.replace(".", "/") + ".py",
    }


def launch_columns(grid: Sequence[int] | None, num_warps: int) -> dict[str, Any]:
    """``grid``, ``num_programs`` (product of the grid) and ``threads_per_program`` of one
    config; the first two are null when the grid is unknown."""
    return {
        "grid": None if grid is None else [int(g) for g in grid],
        "num_programs": None if grid is None else math.prod(int(g) for g in grid),
        "threads_per_program": num_warps * WARP_SIZE,
    }


def config_roles(config: Config, roles: Mapping[str, str]) -> list[dict[str, Any]]:
    """``config_roles``: each integer meta-parameter with its role (``other`` when ``roles``
    has none), in the order of ``config_params``."""
    return [
        {"name": k, "role": roles.get(k, Role.OTHER.value), "value": int(v)}
        for k, v in sorted(config.kwargs.items())
        if isinstance(v, (int, bool))
    ]


def problem_columns(run: PlannedRun, flops: int, bytes_moved: int) -> dict[str, Any]:
    """``problem_dims``, ``problem_flags`` and ``arithmetic_intensity`` (FLOP per byte, null
    when no bytes move) of a run."""
    return {
        "problem_dims": [{"name": k, "value": int(v)} for k, v in run.sizes.items()],
        "problem_flags": [{"name": k, "value": int(v)} for k, v in run.flags.items()],
        "arithmetic_intensity": flops / bytes_moved if bytes_moved else None,
    }


def run_identity_columns(run: PlannedRun) -> dict[str, Any]:
    """The ``runs`` columns that say which run ``run`` is: ids, family, scale, shape, problem
    sizes (``problem_json``) and dtype."""
    return {
        "run_id": run.run_id,
        "kernel_id": run.kernel_id,
        "family": run.family,
        "scale": run.scale,
        "shape_name": run.shape_name,
        "problem_json": canonical_json(dict(run.dims)),
        "dtype": run.dtype,
    }


def ir_target_name(target: str) -> str:
    """The compile target as ``runs.ir_target`` records it: 'sm_90' for any spelling of a
    CUDA target ('90', 'cuda:90', 'sm_90a'), the arch name ('gfx942') for HIP."""
    from extract.compile import parse_target

    resolved = parse_target(target)
    return f"sm_{resolved.arch}" if resolved.backend == "cuda" else str(resolved.arch)


def measurement_row(
    run: PlannedRun,
    planned: PlannedConfig,
    harvest_id: str,
    arch: str,
    compiled: CompileOutcome | None,
    bench: MeasureOutcome | None,
    same_binary_as: str | None = None,
) -> dict[str, Any]:
    """One measurements row. ``compiled``/``bench`` are None for configs not compiled/benched.
    ``same_binary_as``: config_id of the identical config whose ``bench`` outcome this row
    shares (see :mod:`corpus.harvest.binary`)."""
    config = planned.config
    row: dict[str, Any] = {
        "run_id": run.run_id,
        "config_id": config.id,
        "harvest_id": harvest_id,
        "arch": arch,
        "config_json": canonical_json(config.as_dict()),
        "launch": config.launch,
        "config_params": [{"name": k, "value": int(v)} for k, v in sorted(config.kwargs.items()) if isinstance(v, (int, bool))],
        "num_warps": config.num_warps,
        "num_stages": config.num_stages,
        "num_ctas": config.num_ctas,
        "maxnreg": config.maxnreg,
        "is_default": config.id == run.default_config_id,
        "config_roles": config_roles(config, run.roles),
        **launch_columns(planned.grid, config.num_warps),
    }
    if planned.skip_reason is not None:
        return {**row, "status": Status.SKIPPED.value, "error": planned.skip_reason}
    assert compiled is not None
    row.update(
        compile_time_s=compiled.compile_time_s,
        ttir_id=compiled.ttir_id,
        ttgir_id=compiled.ttgir_id,
        binary_hash=compiled.binary_hash,
        **compiled.stats,
    )
    if "stats_note" in compiled.stats:  # notes quote exceptions, which may name local paths
        row["stats_note"] = publishable_message(compiled.stats["stats_note"])
    if bench is None:
        return {**row, "status": compiled.status, "error": publishable_message(compiled.error)}
    row.update(status=bench.status, error=publishable_message(bench.error), max_abs_error=bench.max_abs_error)
    if bench.grid is not None:  # the launched grid wins over the planned one (device-dependent inputs)
        row.update(launch_columns(bench.grid, config.num_warps))
    row.update(launch_verified=bench.launch_verified, same_binary_as=same_binary_as)
    if bench.samples_ms:
        stats = summarize(bench.samples_ms)
        row.update({name: getattr(stats, name) for name in TIMING_FIELDS})
        row["samples_ms"] = bench.samples_ms
    return row


def run_row(
    run: PlannedRun,
    harvest_id: str,
    facts: DeviceFacts,
    versions: Mapping[str, str],
    toolchain: Mapping[str, Any],
    bench_settings: Mapping[str, Any],
    measurements: list[dict[str, Any]],
    flops: int,
    bytes_moved: int,
    started_at: datetime,
    *,
    host: str | None = None,
    ir_target: str | None = None,
    source: str = Source.HARVEST.value,
    setup_error: str | None = None,
) -> dict[str, Any]:
    """The runs row that commits ``run``; summarizes its measurements. ``host``: what
    ``runs.hostname`` records (see :func:`schemas.machine.machine_label`); None records this
    machine's anonymous id. ``ir_target``: the target the stored IR and static stats were
    compiled for (any spelling :func:`ir_target_name` accepts; None when unknown).
    ``source``: where the rows came from (:class:`schemas.enums.Source`). ``setup_error``:
    why the benchmark device could not set the run up (None when it could)."""
    ok = [m for m in measurements if m["status"] == Status.OK.value]
    best = min(ok, key=lambda m: m["median_ms"], default=None)
    default = next((m for m in ok if m["is_default"]), None)
    signature = run.signature
    return {
        **run_identity_columns(run),
        "harvest_id": harvest_id,
        "signature_json": canonical_json(signature),
        "arg_names": [a["name"] for a in signature["args"]],
        "arg_types": [a["type"] for a in signature["args"]],
        "arg_shapes": [a.get("shape", []) for a in signature["args"]],
        "stride_patterns": [a.get("strides", "") for a in signature["args"]],
        "flops": flops,
        "bytes_moved": bytes_moved,
        **problem_columns(run, flops, bytes_moved),
        **facts.as_row(),
        "triton_version": versions.get("triton"),
        "torch_version": versions.get("torch"),
        "toolchain_json": canonical_json(dict(toolchain)),
        "ir_target": ir_target_name(ir_target) if ir_target is not None else None,
        "setup_error": setup_error,
        "source": source,
        "hostname": host if host is not None else machine_label(record_host=False),
        **bench_settings,
        "seed": run.seed,
        "n_configs": len(measurements),
        "n_ok": len(ok),
        "default_config_id": run.default_config_id,
        "best_config_id": best["config_id"] if best else None,
        "best_median_ms": best["median_ms"] if best else None,
        "default_median_ms": default["median_ms"] if default else None,
        "started_at": started_at,
        "finished_at": now(),
    }
