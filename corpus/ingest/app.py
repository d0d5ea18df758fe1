"""``python -m corpus.ingest``: read a log, write its runs, report what was skipped."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path

from corpus.harvest.rows import now
from corpus.ingest.helion import helion_runs
from corpus.ingest.problems import IngestError, Problems
from corpus.ingest.rows import ImportedRun, imported_rows
from corpus.ingest.tritonparse import autotune_runs, graphs_of, read_trace
from corpus.run_writer import RunWriter

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


@dataclass
class IngestSummary:
    runs: int = 0
    measurements: int = 0
    ir_graphs: int = 0
    kernels: int = 0
    repeats: int = 0
    """Runs of this log with the run id of an earlier one of the same log (a tuning served from
    the cache after the same key was tuned): not written, the first one stands."""
    problems: Problems = field(default_factory=Problems)

    def lines(self, out: str) -> list[str]:
        text = [
            f"imported {self.runs} run(s), {self.measurements} measurement(s), {self.ir_graphs} new IR "
            f"graph(s), {self.kernels} new kernel(s) into {out}"
        ]
        if self.repeats:
            text.append(
                f"{self.repeats} run(s) repeat an earlier run of this log (cache hits of a tuned key): not written"
            )
        if self.problems.total:
            text.append(f"skipped {self.problems.total} record(s):")
            text += [
                f"  {count} x {reason}" for reason, count in self.problems.skipped.most_common()
            ]
        return text


def _check(config: IngestConfig) -> None:
    if config.format not in FORMATS:
        raise IngestError(f"unknown format {config.format!r}; expected one of {', '.join(FORMATS)}")
    if not config.log.is_file():
        raise FileNotFoundError(f"no such {config.format} log: {config.log}")
    if config.meta is not None and not config.meta.is_file():
        raise FileNotFoundError(f"no such Helion metadata file: {config.meta}")


def ingest(config: IngestConfig) -> IngestSummary:
    """Import ``config.log`` into ``config.out``: every run committed on its own (the
    ``runs`` row last). Refused records raise (``strict``) or are counted in the summary."""
    _check(config)
    summary = IngestSummary(problems=Problems(strict=config.strict))
    sink = RunWriter.for_dataset(config.out)
    kernels_before = len(sink.known_kernels)
    if config.format == "helion":
        runs = helion_runs(config.log, config.meta, summary.problems)
    else:
        trace = read_trace(config.log, summary.problems)
        runs, used = autotune_runs(trace, config.log, summary.problems)
        _write_unused_compilations(trace, used, sink)
    _write_runs(runs, sink, summary)
    summary.ir_graphs = sink.new_graphs
    summary.kernels = len(sink.known_kernels) - kernels_before
    return summary


def _write_runs(runs: list[ImportedRun], sink: RunWriter, summary: IngestSummary) -> None:
    harvest_id = uuid.uuid4().hex[:16]  # this import, as a harvest invocation would be
    written: set[str] = set()
    for run in runs:
        rows = imported_rows(run, harvest_id, now())
        if rows.run["run_id"] in written:  # e.g. a cache hit of a key the log tuned before
            summary.repeats += 1
            continue
        written.add(rows.run["run_id"])
        sink.write(rows)
        summary.runs += 1
        summary.measurements += len(rows.measurements)


def _write_unused_compilations(trace, used: set[str], sink: RunWriter) -> None:  # type: ignore[no-untyped-def]
    """Compiles no autotune event refers to: their IR graphs and kernels, without runs."""
    from corpus.ingest.tritonparse import kernel_row

    for compilation in trace.compilations:
        if compilation.hash in used:
            continue
        sink.write_graphs({ir: tables for ir, (_, tables) in graphs_of(compilation).items()})
        sink.write_kernel(kernel_row(compilation))
