"""One imported tuning stored under two run_ids: the same rows twice, under keys that differ.

An imported run's keys derive from what its log says (:data:`schemas.replacement.IMPORT_SOURCES`),
``run_id`` from the call's signature among it. A tritonparse trace imported before the
``launch`` event that names the tuned call's arguments gives the tuning a run_id without them;
imported again after (or into another dataset, since merged), the same tuning gets a second
run_id and harvest_id. No key repeats, so nothing else notices that every one of its
measurements is counted twice (training sees two runs of one tuning).

What tells one tuning is what no two tunings share: the tool's own reference of the tuning
(``runs.source_ref``: tritonparse's cache key and autotune key, Helion's run id), its kernel
and device, and the outcome and median latency of every config it timed. Two tunings of one
key (two ranks, or the key tuned again) time their configs apart, so they differ there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from schemas.replacement import IMPORT_SOURCES

RUN_COLUMNS = ("run_id", "harvest_id", "source", "source_ref", "kernel_id", "arch")
"""``runs`` columns a tuning's identity reads."""
MEASUREMENT_COLUMNS = ("run_id", "harvest_id", "config_id", "status", "median_ms")
"""``measurements`` columns a tuning's identity reads: each config's outcome and timing."""

Tuning = tuple[Any, ...]
"""A tuning's identity (:func:`tuning_identity`): equal for two imports of one tuning."""


def tuning_identity(run: Mapping[str, Any], measurements: Iterable[Mapping[str, Any]]) -> Tuning | None:
    """The identity of the imported tuning ``run`` (a ``runs`` row) with ``measurements``
    (its rows): source, source_ref, kernel, arch and each config's status and median latency
    (ms), sorted by config. None for a run that is not an import, has no source_ref or no
    timed config (a cache hit, or a tuning whose every config failed: nothing measured tells
    it apart from another tuning of its key)."""
    if run.get("source") not in IMPORT_SOURCES or run.get("source_ref") is None:
        return None
    outcomes = tuple(sorted((m["config_id"], m["status"], m.get("median_ms")) for m in measurements))
    if all(median is None for _, _, median in outcomes):
        return None
    return (run["source"], run["source_ref"], run.get("kernel_id"), run.get("arch"), outcomes)


def imported_tunings(runs: pa.Table, measurements: pa.Table) -> dict[Tuning, list[tuple[str, str]]]:
    """Identity -> (run_id, harvest_id) of every committed imported run of ``runs`` holding
    it, in ``runs`` order. ``runs`` needs :data:`RUN_COLUMNS` (runs without ``source``: none
    imported), ``measurements`` :data:`MEASUREMENT_COLUMNS` (rows of runs ``runs`` lacks are
    left out: uncommitted)."""
    if "source" not in runs.column_names or "source_ref" not in runs.column_names:
        return {}
    source = runs.column("source")
    imported = pc.fill_null(pc.is_in(source, value_set=pa.array(sorted(IMPORT_SOURCES), source.type)), False)
    runs = runs.filter(imported)
    if not runs.num_rows:
        return {}
    keys = set(zip(runs.column("run_id").to_pylist(), runs.column("harvest_id").to_pylist()))
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
    run_ids = pc.is_in(measurements.column("run_id"), value_set=pc.unique(runs.column("run_id")))
    for row in measurements.select(list(MEASUREMENT_COLUMNS)).filter(run_ids).to_pylist():
        key = (row["run_id"], row["harvest_id"])
        if key in keys:
            rows.setdefault(key, []).append(row)
    found: dict[Tuning, list[tuple[str, str]]] = {}
    for run in runs.select(list(RUN_COLUMNS)).to_pylist():
        key = (run["run_id"], run["harvest_id"])
        identity = tuning_identity(run, rows.get(key, ()))
        if identity is not None:
            found.setdefault(identity, []).append(key)
    return found


def doubled_tunings(runs: pa.Table, measurements: pa.Table) -> list[list[tuple[str, str]]]:
    """The (run_id, harvest_id) of each imported tuning stored under more than one run_id
    (:func:`imported_tunings`), one list per tuning, in ``runs`` order. Copies under one
    run_id are left out: those repeat a key, or are a log's tunings done again."""
    return [
        keys for keys in imported_tunings(runs, measurements).values() if len({run for run, _ in keys}) > 1
    ]
