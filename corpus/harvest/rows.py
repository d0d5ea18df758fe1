"""Build table rows from harvest outcomes (field names from :mod:`schemas.tables`)."""

from __future__ import annotations

import socket
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from corpus.bench_worker import BenchOutcome
from corpus.compile_worker import CompileOutcome
from corpus.device import DeviceFacts
from corpus.identity import kernel_source
from corpus.plan import PlannedConfig, PlannedRun
from corpus.suite.spec import KernelSpec
from corpus.timing import summarize
from schemas.enums import Status
from schemas.identity import canonical_json, kernel_id

TIMING_FIELDS = ("median_ms", "mean_ms", "min_ms", "max_ms", "p20_ms", "p80_ms", "std_ms", "n_reps")


def now() -> datetime:
    return datetime.now(timezone.utc)


def kernel_row(spec: KernelSpec, suite_module: str) -> dict[str, Any]:
    source, entry, module = kernel_source(spec)
    return {
        "kernel_id": kernel_id(source, entry),
        "family": spec.name,
        "category": spec.category,
        "suite": suite_module,
        "entry_name": entry,
        "source": source,
        "source_path": module.replace(".", "/") + ".py",
    }


def measurement_row(
    run: PlannedRun,
    planned: PlannedConfig,
    harvest_id: str,
    arch: str,
    compiled: CompileOutcome | None,
    bench: BenchOutcome | None,
) -> dict[str, Any]:
    """One measurements row. ``compiled``/``bench`` are None for configs not compiled/benched."""
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
    }
    if planned.skip_reason is not None:
        return {**row, "status": Status.SKIPPED.value, "error": planned.skip_reason}
    assert compiled is not None
    row.update(
        compile_time_s=compiled.compile_time_s,
        ttir_id=compiled.ttir_id,
        ttgir_id=compiled.ttgir_id,
        **compiled.stats,
    )
    if bench is None:
        return {**row, "status": compiled.status, "error": compiled.error}
    row.update(status=bench.status, error=bench.error, max_abs_error=bench.max_abs_error)
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
) -> dict[str, Any]:
    """The runs row that commits ``run``; summarizes its measurements."""
    ok = [m for m in measurements if m["status"] == Status.OK.value]
    best = min(ok, key=lambda m: m["median_ms"], default=None)
    default = next((m for m in ok if m["is_default"]), None)
    signature = run.signature
    return {
        "run_id": run.run_id,
        "harvest_id": harvest_id,
        "kernel_id": run.kernel_id,
        "family": run.family,
        "scale": run.scale,
        "shape_name": run.shape_name,
        "problem_json": canonical_json(dict(run.dims)),
        "dtype": run.dtype,
        "signature_json": canonical_json(signature),
        "arg_names": [a["name"] for a in signature["args"]],
        "arg_types": [a["type"] for a in signature["args"]],
        "arg_shapes": [a.get("shape", []) for a in signature["args"]],
        "stride_patterns": [a.get("strides", "") for a in signature["args"]],
        "flops": flops,
        "bytes_moved": bytes_moved,
        **facts.as_row(),
        "triton_version": versions.get("triton"),
        "torch_version": versions.get("torch"),
        "toolchain_json": canonical_json(dict(toolchain)),
        "hostname": socket.gethostname(),
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
