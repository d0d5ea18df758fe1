"""``python -m corpus.ingest``: read a log, write its runs, report what was skipped."""

from __future__ import annotations

import codecs
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from corpus.destination import out_as_found_unless_work, probe_out
from corpus.harvest.claims import committed_harvests
from corpus.harvest.resume import read_existing
from corpus.harvest.rows import now
from corpus.ingest.helion import helion_runs
from corpus.ingest.problems import IngestError, Problems
from corpus.ingest.rows import (
    ImportedConfig,
    ImportedRun,
    earlier_runs,
    import_harvest_id,
    imported_rows,
    imported_run_id,
    tuning_content,
)
from corpus.ingest.tritonparse import autotune_runs, graphs_of, open_trace, read_trace
from corpus.run_writer import RunRows, RunWriter
from schemas.locking import FileLock, holder_line, is_lockable
from schemas.storage import resolve
from schemas.tables import TABLES
from schemas.tunings import (
    MEASUREMENT_COLUMNS,
    RUN_COLUMNS,
    Tuning,
    imported_tunings,
    tuning_identity,
)

FORMATS = ("helion", "tritonparse")


@dataclass(frozen=True)
class IngestConfig:
    """Everything ``python -m corpus.ingest`` accepts, parsed and typed."""

    format: str
    log: Path
    out: str
    meta: Path | None = None
    """Helion's ``.meta.jsonl`` sidecar (default: beside the CSV)."""
    strict: bool = False
    force_out: bool = False
    """Accept an ``out`` that is a non-empty directory holding no dataset, or whose README.md or
    card.json kernel-corpus did not write (see :func:`corpus.destination.probe_out`)."""


@dataclass
class IngestSummary:
    runs: int = 0
    measurements: int = 0
    ir_graphs: int = 0
    kernels: int = 0
    repeats: int = 0
    """Runs of this log with the run id of an earlier one of the same log: a tuning served from
    the cache after the same key was tuned (no measurements: not written, the first one
    stands), or the same thing tuned again (written under a harvest_id of its own, so both
    tunings' measurements are kept)."""
    derived: Counter[str] = field(default_factory=Counter)
    """Analysis events tritonparse derived from the others (``ir_analysis``, ...): left out."""
    already_imported: int = 0
    """Runs an earlier import of this log committed (the same tuning, by content): not written."""
    twins: int = 0
    """Configs left out because an earlier config of their tuning has the same ``config_id``
    (Helion logs a config with its defaults written out, ``num_warps=4``, under another id than
    the same config without them, and times each): the first one logged is kept, one row per
    key."""
    completed: int = 0
    """Runs an interrupted import of this log wrote but did not commit (its measurements landed,
    its ``runs`` row did not): committed now, with the measurements it left, none written twice."""
    problems: Problems = field(default_factory=Problems)

    def lines(self, out: str) -> list[str]:
        text = [
            f"imported {self.runs} run(s), {self.measurements} measurement(s), {self.ir_graphs} new IR "
            f"graph(s), {self.kernels} new kernel(s) into {out}"
        ]
        if self.repeats:
            text.append(
                f"{self.repeats} run(s) repeat an earlier run of this log (cache hits of a tuned key are "
                "not written; tunings done again are, each under its own harvest_id)"
            )
        if self.derived:
            counts = ", ".join(f"{count} {kind}" for kind, count in self.derived.most_common())
            text.append(f"left out the analyses tritonparse derived from the trace's events: {counts}")
        if self.already_imported:
            text.append(
                f"{self.already_imported} run(s) already imported into {out} by an earlier import "
                "(the same tunings): not written again"
            )
        if self.twins:
            text.append(
                f"{self.twins} config(s) of a tuning left out: the same config_id as an earlier config "
                "of that tuning (the same config, e.g. with the tool's defaults written out); the "
                "first one logged is kept"
            )
        if self.completed:
            text.append(
                f"{self.completed} run(s) an interrupted import had written but not committed: "
                "committed with the measurements it left (none written twice)"
            )
        if self.problems.total:
            text.append(f"skipped {self.problems.total} record(s):")
            text += [
                f"  {count} x {reason}" for reason, count in self.problems.skipped.most_common()
            ]
        return text


HELION_COMPANIONS: dict[str, str] = {
    ".meta.jsonl": "a sidecar of Helion's log",
    ".sources.csv": "a sidecar of Helion's log",
    ".trace.jsonl": "Helion's event trace (HELION_AUTOTUNE_LOG_DETAILS), not its CSV log",
    ".log": "Helion's text log, not its CSV log",
}
"""Files Helion 1.5's ``AutotuneLogSink`` and autotune tracing write beside ``BASE.csv`` (each
``BASE`` with its suffix replaced, as ``Path.with_suffix`` does), and what each is."""


def _refuse_helion_companion(log: Path) -> None:
    """Refuse a file Helion writes beside its CSV log, naming the CSV to give instead."""
    for suffix, what in HELION_COMPANIONS.items():
        if log.name.endswith(suffix) and log.name != suffix:
            csv_name = log.name.removesuffix(suffix) + ".csv"
            raise IngestError(f"{log}: {what}; give the log's CSV ({csv_name}), the sidecars are read beside it")


def _check(config: IngestConfig) -> None:
    """Refuse what cannot be imported before anything is read or written: an unknown format,
    missing or non-UTF-8 inputs, an ``--out`` that is no place for the dataset
    (:class:`corpus.destination.OutRefused`)."""
    if config.format not in FORMATS:
        raise IngestError(f"unknown format {config.format!r}; expected one of {', '.join(FORMATS)}")
    if config.log.is_dir():
        raise IngestError(f"{config.log}: a directory; give the {config.format} log file in it")
    if not config.log.is_file():
        raise FileNotFoundError(f"no such {config.format} log: {config.log}")
    if config.format == "helion":
        _refuse_helion_companion(config.log)
    if config.meta is not None and not config.meta.is_file():
        raise FileNotFoundError(f"no such Helion metadata file: {config.meta}")
    sidecar = config.log.with_suffix(".meta.jsonl")
    if config.format == "helion" and config.meta is None and not sidecar.is_file():
        # helion_runs says the same, but only after --out was made: say it first
        raise FileNotFoundError(f"no Helion metadata sidecar {sidecar} (give --meta)")
    inputs = [config.log]
    if config.format == "helion":
        inputs += [config.meta or sidecar, config.log.with_suffix(".sources.csv")]
    for path in inputs:
        if path.is_file():  # Helion writes plain text; tritonparse may gzip (open_trace reads it)
            _check_utf8(path, compressed=config.format == "tritonparse")
    probe_out(config.out, force=config.force_out)


def _check_utf8(path: Path, compressed: bool, chunk_bytes: int = 1 << 20) -> None:
    """Refuse, naming the file and the byte, a log that is not UTF-8 text (both tools write
    UTF-8; anything else is the wrong file or a damaged one)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    with open_trace(path) if compressed else path.open("rb") as handle:
        while True:
            chunk = handle.read(chunk_bytes)
            try:
                decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as exc:
                raise IngestError(
                    f"{path}: not UTF-8 text (byte {offset + exc.start} is {chunk[exc.start:exc.start + 1]!r}); "
                    "expected the tool's log as it wrote it"
                ) from None
            if not chunk:
                return
            offset += len(chunk)


def ingest(config: IngestConfig) -> IngestSummary:
    """Import ``config.log`` into ``config.out``: every run committed on its own (the
    ``runs`` row last). Refused records raise (``strict``) or are counted in the summary. A log
    refused while it is read (the first bad record under ``strict``) leaves ``config.out`` as it
    found it."""
    # the probe of --out makes its table directories before the log is read
    with out_as_found_unless_work(config.out) as work_begins:
        return _import_log(config, work_begins)


def _import_log(config: IngestConfig, work_begins: Callable[[], None]) -> IngestSummary:
    _check(config)
    summary = IngestSummary(problems=Problems(strict=config.strict))
    if config.format == "helion":
        runs = helion_runs(config.log, config.meta, summary.problems)
        trace, used = None, set()
    else:
        trace = read_trace(config.log, summary.problems)
        summary.derived = trace.derived
        runs, used = autotune_runs(trace, config.log, summary.problems)
    with _ingest_lock(config.out):  # what is committed is read, and written, by one import at a time
        work_begins()  # its refusals below concern a dataset that held rows before
        sink = RunWriter.for_dataset(config.out)
        kernels_before = len(sink.known_kernels)
        _write_runs(runs, sink, summary, config.out)  # refuses before writing anything, or writes
        if trace is not None:
            _write_unused_compilations(trace, used, sink)
    summary.ir_graphs = sink.new_graphs
    summary.kernels = len(sink.known_kernels) - kernels_before
    return summary


INGEST_LOCK = "ingest"
"""Imports into one dataset take turns (``.locks/ingest.lock``): two imports of one log at once
would both find its tunings new and commit each twice."""


@contextmanager
def _ingest_lock(out: str) -> Iterator[None]:
    """Hold the dataset's import lock (local datasets; an fsspec URL has none), saying what it
    waits for when another import holds it."""
    loc = resolve(out)
    if not is_lockable(loc):
        yield
        return
    lock = FileLock(loc, INGEST_LOCK, holder_line("ingest"))
    lock.acquire(
        wait=True,
        on_wait=lambda holder: print(
            f"ingest: waiting for the dataset's import lock, held by {holder or 'another import'}",
            file=sys.stderr,
        ),
    )
    try:
        yield
    finally:
        lock.release()


def _write_runs(runs: list[ImportedRun], sink: RunWriter, summary: IngestSummary, out: str) -> None:
    """Each tuning under its own content-derived harvest_id (:func:`import_harvest_id`); those
    ``out`` holds committed already (an earlier import of this log) are counted, not written.

    The id being the same on every import, the measurements an interrupted import wrote for a
    run it did not commit (killed before the ``runs`` row landed) carry the very key this import
    would write again: such a run is committed with the rows it left (when they are exactly
    this import's rows), never written twice, which readers would refuse as repeated keys.
    Rows left that differ (another version of the importer) are refused before anything is
    written, naming the run. A tuning an earlier import committed under another run_id (the log
    cut before the tuning's launch, or an importer before 2026-11-24:
    :func:`corpus.ingest.rows.earlier_runs`) counts as imported too, and so does one committed
    under another run_id with the same outcomes (:mod:`schemas.tunings`: the trace imported
    whole first, then a copy cut before the tuning's launch)."""
    committed = committed_harvests(out)
    # one read of the stored measurements serves both: every row (an interrupted import's too)
    columns = sorted({*TABLES["measurements"].identity, *MEASUREMENT_COLUMNS})
    stored = read_existing(out, "measurements", columns, committed_only=False)
    tunings = _committed_tunings(out, stored)
    left = _uncommitted_measurements(stored, committed)
    occurrences: Counter[str] = Counter()
    alike: Counter[tuple[str, str]] = Counter()
    alike_earlier: Counter[tuple[str, str]] = Counter()
    todo: list[tuple[RunRows, bool]] = []
    for run in runs:
        run = _first_of_each_config(run, summary)
        key = imported_run_id(run)
        occurrence = occurrences[key]
        occurrences[key] += 1
        if occurrence:
            summary.repeats += 1
            if not run.configs:  # a cache hit of a key the log tuned before: the first stands
                continue
        # Numbered among the run's tunings of this content, not all of its tunings: a copy of
        # the log without its first tunings gives the others the ids they had.
        content = tuning_content(run)
        alike_before = alike[(key, content)]
        alike[(key, content)] += 1
        harvest_id = import_harvest_id(run, alike_before, content)
        # the id importers before 2026-11-24 gave it (counted among all the run's tunings)
        legacy = harvest_id if occurrence == alike_before else import_harvest_id(run, occurrence, content)
        if (key, harvest_id) in committed or (key, legacy) in committed:
            summary.already_imported += 1
            continue
        if _imported_before(run, content, alike_earlier, committed):
            summary.already_imported += 1
            continue
        if (key, harvest_id) not in left and (key, legacy) in left:
            harvest_id = legacy  # an interrupted import of an earlier importer: its rows' id
        rows = imported_rows(run, harvest_id, now())
        if tunings.get(tuning_identity(rows.run, rows.measurements), set()) - {key}:
            summary.already_imported += 1  # the same tuning, committed under another run_id
            continue
        earlier = left.get((key, harvest_id))
        if earlier is not None and earlier != _identities(rows.measurements):
            raise IngestError(
                f"{out}: run_id={key} (harvest_id={harvest_id}) has {len(earlier)} uncommitted "
                f"measurement row(s) of an interrupted import that differ from this import's "
                f"{len(rows.measurements)}; nothing was written. Delete the measurements file "
                "holding them (`python -m schemas check` lists uncommitted rows), then import again"
            )
        todo.append((rows, earlier is not None))
    for rows, resumed in todo:
        if resumed:  # its measurements landed before the interruption: commit them
            rows = RunRows(rows.graphs, rows.kernel, [], rows.run)
            summary.completed += 1
        sink.write(rows)
        summary.runs += 1
        summary.measurements += 0 if resumed else len(rows.measurements)


def _committed_tunings(out: str, measurements: pa.Table | None) -> dict[Tuning | None, set[str]]:
    """Identity -> run_ids of the tunings imports committed in ``out`` (:mod:`schemas.tunings`;
    ``measurements``: ``out``'s stored rows, uncommitted ones too, which it leaves out)."""
    runs = read_existing(out, "runs", RUN_COLUMNS)
    if runs is None or measurements is None:
        return {}
    found = imported_tunings(runs, measurements)
    return {identity: {run for run, _ in keys} for identity, keys in found.items()}


def _imported_before(
    run: ImportedRun, content: str, alike: Counter[tuple[str, str]], committed: set[tuple[str, str]]
) -> bool:
    """Whether an earlier import of the log committed this tuning under another run_id
    (:func:`corpus.ingest.rows.earlier_runs`); ``alike`` counts the tunings of each such run_id
    and content seen so far in this log, as their ids were numbered."""
    found = False
    for before in earlier_runs(run):
        key = imported_run_id(before)
        occurrence = alike[(key, content)]
        alike[(key, content)] += 1
        found = found or (key, import_harvest_id(before, occurrence, content)) in committed
    return found


def _first_of_each_config(run: ImportedRun, summary: IngestSummary) -> ImportedRun:
    """``run`` with the first of its configs of each ``config_id``, the others counted in
    ``summary.twins``: two rows with one key would make readers refuse the dataset."""
    kept: dict[str, ImportedConfig] = {}
    for item in run.configs:
        kept.setdefault(item.config.id, item)
    if len(kept) == len(run.configs):
        return run
    summary.twins += len(run.configs) - len(kept)
    return replace(run, configs=tuple(kept.values()))


def _identities(rows: list[dict[str, Any]] | pa.Table) -> list[tuple[Any, ...]]:
    """The identity columns of measurement rows (key and fixed values), sorted: equal lists
    mean the same rows, each once."""
    names = TABLES["measurements"].identity
    records = rows.to_pylist() if isinstance(rows, pa.Table) else rows
    return sorted(tuple(str(row.get(name)) for name in names) for row in records)


def _uncommitted_measurements(
    stored: pa.Table | None, committed: set[tuple[str, str]]
) -> dict[tuple[str, str], list[tuple[Any, ...]]]:
    """(run_id, harvest_id) -> :func:`_identities` of the measurement rows ``stored`` (a
    dataset's, uncommitted ones too) whose run has no ``runs`` row (an interrupted writer's;
    ``committed``: the committed runs' keys). Only those rows reach Python: a large dataset
    usually holds none."""
    if stored is None or stored.num_rows == 0:
        return {}
    keys = list(committed)
    committed_keys = pa.table(
        {
            "run_id": pa.array([run for run, _ in keys], stored.schema.field("run_id").type),
            "harvest_id": pa.array([harvest for _, harvest in keys], stored.schema.field("harvest_id").type),
        }
    )
    uncommitted = stored.join(committed_keys, keys=["run_id", "harvest_id"], join_type="left anti")
    by_run: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in uncommitted.to_pylist():
        by_run.setdefault((row["run_id"], row["harvest_id"]), []).append(row)
    return {key: _identities(rows) for key, rows in by_run.items()}


def _write_unused_compilations(trace, used: set[str], sink: RunWriter) -> None:  # type: ignore[no-untyped-def]
    """Compiles no autotune event refers to: their IR graphs and kernels, without runs."""
    from corpus.ingest.tritonparse import kernel_row

    for compilation in trace.compilations:
        if compilation.hash in used:
            continue
        sink.write_graphs({ir: tables for ir, (_, tables) in graphs_of(compilation).items()})
        sink.write_kernel(kernel_row(compilation))
