"""Rows of an imported run, built with the harvest's row code.

An importer describes each run as an :class:`ImportedRun` (kernel, signature, device, configs
with the tool's outcome and timing); this module turns it into the same
:class:`corpus.harvest.plan.PlannedRun` / :class:`corpus.harvest.measure_worker.MeasureOutcome` values the harvest
builds, so :func:`corpus.harvest.rows.measurement_row` and :func:`corpus.harvest.rows.run_row`
fill the tables and the keys are derived as everywhere else.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import pyarrow as pa

from corpus.harvest.compile_worker import CompileOutcome
from corpus.harvest.device import DeviceFacts
from corpus.harvest.measure_worker import MeasureOutcome
from corpus.harvest.plan import PlannedConfig, PlannedRun
from corpus.harvest.rows import measurement_row, run_row
from corpus.run_writer import RunRows
from corpus.suite.spec import Config
from schemas.enums import Status, Timer
from schemas.identity import content_hash, kernel_id, run_id

TIMING_QUANTILES = ("median_ms", "p20_ms", "p80_ms")


@dataclass(frozen=True)
class ImportedConfig:
    """One config's outcome as the tool logged it. ``timing_ms`` holds what the tool measured
    (``median_ms``, and ``p20_ms``/``p80_ms`` when it has them); ``launch`` the tool's own text
    of the config; ``source_ref`` the tool's id of it."""

    config: Config
    status: str
    error: str | None = None
    timing_ms: Mapping[str, float] = field(default_factory=dict)
    compile_time_s: float | None = None
    ttir_id: str | None = None
    ttgir_id: str | None = None
    launch: str | None = None
    source_ref: str | None = None
    same_binary_as: str | None = None
    """Our config_id of the config whose identical code the tool timed instead of this one."""


@dataclass(frozen=True)
class ImportedRun:
    """One run of an imported log. ``device_model`` is what enters ``run_id`` for the device
    (only what the log says about it); ``cache_hit`` marks a tuning served from the tool's
    cache (then ``best`` is the cached choice and ``configs`` is empty)."""

    kernel_source: str
    entry_name: str
    signature: Mapping[str, Any]
    dims: Mapping[str, int]
    dtype: str | None
    facts: DeviceFacts
    device_model: str
    toolchain: Mapping[str, Any]
    versions: Mapping[str, str]
    source: str
    source_ref: str | None
    configs: tuple[ImportedConfig, ...]
    ir_target: str | None = None
    cache_hit: bool | None = None
    best: Config | None = None
    device_ir_id: str | None = None
    source_path: str | None = None
    flags: Mapping[str, int] = field(default_factory=dict)
    """The dims that are mode switches (a boolean of the autotune key, as 0/1)."""
    graphs: Mapping[str, Mapping[str, pa.Table]] = field(default_factory=dict)
    earlier_signatures: tuple[Mapping[str, Any], ...] = ()
    """Signatures earlier imports of this log may have given the run: a tuning committed under
    one of those run_ids is this one, imported already. tritonparse writes the ``launch`` event
    naming the call's arguments after the tuning's ``autotune`` event, so a trace imported
    between the two gave the run no arguments; importers before 2026-11-24 gave every tuning of
    a kernel its first launch's arguments, and those before 2026-11-25 kept the winning config's
    meta-parameters that tritonparse's launch hook logs among them."""


def earlier_runs(run: ImportedRun) -> list[ImportedRun]:
    """``run`` as earlier imports of its log may have seen it (:attr:`ImportedRun.earlier_signatures`
    that differ from its own signature), each once."""
    seen = [run.signature]
    runs = []
    for signature in run.earlier_signatures:
        if signature not in seen:
            seen.append(signature)
            runs.append(replace(run, signature=signature))
    return runs


def imported_run_id(run: ImportedRun) -> str:
    """``run_id`` of ``run``: kernel, signature, device and toolchain, as a harvest keys it."""
    return run_id(kernel_id(run.kernel_source, run.entry_name), run.signature, run.device_model, run.toolchain)


def tuning_content(run: ImportedRun) -> str:
    """What the log says of one tuning, as text: the tool's ids and every config's outcome and
    timing (what :func:`import_harvest_id` hashes; equal text, the same tuning content)."""
    outcomes = [
        [c.config.id, c.status, c.error, sorted(c.timing_ms.items()), c.source_ref, c.launch]
        for c in run.configs
    ]
    described = [run.source, run.source_ref, run.cache_hit, None if run.best is None else run.best.id, outcomes]
    return json.dumps(described, default=str)


def import_harvest_id(run: ImportedRun, occurrence: int, content: str | None = None) -> str:
    """The ``harvest_id`` of one imported tuning: a hash of its run, its :func:`tuning_content`
    (``content``, when the caller has it already) and ``occurrence``: how many tunings of the
    same run with this very content came before it in the log, counting from 0. Importing the
    same log again, the log after the tool appended to it, or a copy of it that lost its first
    tunings, gives each tuning imported before the same id, so the import finds it committed
    instead of writing it twice. Importers before 2026-11-24 counted ``occurrence`` among all
    tunings of the run (a copy without the first tuning renumbered the others, each imported
    again); datasets they wrote hold those ids, which the import looks for too."""
    content = tuning_content(run) if content is None else content
    return content_hash("import", imported_run_id(run), str(occurrence), content)


def imported_rows(run: ImportedRun, harvest_id: str, started_at: datetime) -> RunRows:
    """The rows of ``run`` (``runs.timer`` is ``external``: the tool measured)."""
    kernel_key = kernel_id(run.kernel_source, run.entry_name)
    planned = PlannedRun(
        family=run.entry_name,
        scale=None,  # type: ignore[arg-type]  # not from a suite scale
        dims=dict(run.dims),
        dtype=run.dtype,  # type: ignore[arg-type]
        seed=None,  # type: ignore[arg-type]
        run_id=imported_run_id(run),
        kernel_id=kernel_key,
        signature=run.signature,
        configs=tuple(PlannedConfig(c.config) for c in run.configs),
        default_config_id=None,  # type: ignore[arg-type]  # an imported log has no untuned default
        sizes={k: v for k, v in run.dims.items() if k not in run.flags},
        flags=dict(run.flags),
    )
    arch = run.facts.arch
    measurements = [
        _measurement(planned, item, harvest_id, arch) for item in zip(planned.configs, run.configs)
    ]
    row = run_row(
        planned, harvest_id, run.facts, run.versions, run.toolchain, {"timer": Timer.EXTERNAL.value},
        measurements, None, None, started_at, ir_target=run.ir_target, source=run.source,  # type: ignore[arg-type]
    )  # fmt: skip
    row.update(
        source_ref=run.source_ref, autotune_cache_hit=run.cache_hit, device_ir_id=run.device_ir_id
    )
    if run.cache_hit and run.best is not None:
        row["best_config_id"] = run.best.id
    kernel = {
        "kernel_id": kernel_key,
        "family": run.entry_name,
        "category": None,
        "suite": None,
        "entry_name": run.entry_name,
        "source": run.kernel_source,
        "source_path": run.source_path,
    }
    return RunRows({k: dict(v) for k, v in run.graphs.items()}, kernel, measurements, row)


def _measurement(
    run: PlannedRun, item: tuple[PlannedConfig, ImportedConfig], harvest_id: str, arch: str
) -> dict[str, Any]:
    planned, imported = item
    compiled = CompileOutcome(
        Status.OK.value,
        compile_time_s=imported.compile_time_s,
        ttir_id=imported.ttir_id,
        ttgir_id=imported.ttgir_id,
    )
    bench = MeasureOutcome(imported.status, imported.error)
    row = measurement_row(run, planned, harvest_id, arch, compiled, bench)
    row.update(
        {name: imported.timing_ms[name] for name in TIMING_QUANTILES if name in imported.timing_ms}
    )
    row["source_ref"] = imported.source_ref
    if imported.same_binary_as is not None:
        row["same_binary_as"] = imported.same_binary_as
    if imported.launch is not None:
        row["launch"] = imported.launch
    return row
