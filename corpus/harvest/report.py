"""What a person sees: the plan of a dry run, a live progress bar, the end summary."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Column, Table
from rich.text import Text

from corpus.harvest.device import DeviceFacts
from corpus.harvest.estimate import valid_configs
from corpus.harvest.plan import PlannedRun
from corpus.harvest.resume import ResumePlan
from corpus.harvest.runner import MEASURED_ELSEWHERE, Execution, HarvestTotals, RunResult
from corpus.terminal import (
    ListingRow,
    grouped_listing,
    key_values,
    plural,
    print_table_or_listing,
    print_trimmed,
)
from schemas.console import compact_config, fill_markup, plain_text, print_labelled
from schemas.enums import Status, Timer

FAILED = frozenset(s.value for s in Status) - {Status.OK.value, Status.SKIPPED.value}


def clock(seconds: float) -> str:
    """``0:01:02``: elapsed time and ETA as the progress bar shows them."""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


def progress_line(
    runs_done: int,
    runs_total: int,
    label: str,
    configs_done: int,
    configs_total: int,
    counts: Mapping[str, int],
    elapsed_s: float,
) -> str:
    """One finished run as a line of a log (a harvest whose output is not a terminal: a Slurm
    task's log file, a Kubernetes pod's log, a Ray driver): where the harvest stands, by runs
    and configs, its counts by status, the time so far and the ETA (the configs left at the
    rate so far)."""
    failed = sum(n for status, n in counts.items() if status in FAILED)
    elsewhere = counts.get(MEASURED_ELSEWHERE, 0)
    left = max(0, configs_total - configs_done)
    eta = clock(elapsed_s * left / configs_done) if configs_done else "-"
    return (
        f"run {runs_done}/{runs_total} {label}: configs {configs_done}/{configs_total} "
        f"(ok {counts.get(Status.OK.value, 0)}, failed {failed}, skipped "
        f"{counts.get(Status.SKIPPED.value, 0)}{f', by another harvest {elsewhere}' if elsewhere else ''}), "
        f"{clock(elapsed_s)} elapsed, eta {eta}"
    )


class HarvestProgress:
    """Two bars (runs, configs) with ok/failed counts and ETA; safe to update from threads.

    On a console that is not a terminal (a Slurm or Kubernetes log file, a pipe) the bars
    would be drawn once, when the harvest ends, and the log said nothing for hours: there
    each finished run prints one :func:`progress_line` instead."""

    def __init__(self, console: Console, runs: Iterable[PlannedRun]) -> None:
        runs = list(runs)
        self.console = console
        self.live = console.is_terminal and not console.is_dumb_terminal
        # The detail (counts, or the run just finished) takes what the bars leave and is cut
        # with an ellipsis: a live line that wrapped would repaint as several lines.
        self.progress = Progress(
            TextColumn("{task.description:<8}"),
            BarColumn(bar_width=20),
            MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}", markup=False, table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1)),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
            disable=not self.live,
        )
        self.runs_total = len(runs)
        # The configs to measure, as the start notice and the estimate count them: the ones the
        # family rules out are written as skipped rows at once, and counting them (two in three
        # of a bare tiny harvest) made the total disagree with the notice and the ETA too short.
        self.configs_total = sum(valid_configs(r) for r in runs)
        self.runs_task = self.progress.add_task("runs", total=self.runs_total, detail="")
        self.configs_task = self.progress.add_task("configs", total=self.configs_total, detail="")
        self.counts: Counter[str] = Counter()
        self.runs_done = 0
        self.lock = threading.Lock()
        self.started = time.perf_counter()

    def __enter__(self) -> HarvestProgress:
        self.started = time.perf_counter()
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    @property
    def elapsed_s(self) -> float:
        return time.perf_counter() - self.started

    def config_done(self, status: str) -> None:
        with self.lock:
            self.counts[status] += 1
            failed = sum(v for k, v in self.counts.items() if k in FAILED)
            detail = f"ok {self.counts[Status.OK.value]}  failed {failed}  skipped {self.counts[Status.SKIPPED.value]}"
        self.progress.update(self.configs_task, advance=1, detail=detail)

    def run_done(self, result: RunResult) -> None:
        self.progress.update(self.runs_task, advance=1, detail=result.run.label)
        with self.lock:
            self.runs_done += 1
            line = progress_line(
                self.runs_done, self.runs_total, result.run.label, sum(self.counts.values()),
                self.configs_total, self.counts, self.elapsed_s,
            )  # fmt: skip
        if not self.live:
            self.console.print(line, soft_wrap=True, highlight=False, markup=False)


def print_plan(
    console: Console,
    runs: list[PlannedRun],
    committed: set[str],
    facts: DeviceFacts,
    execution: Execution,
    notice: str | None = None,
    budget: str | None = None,
    left_out: str | None = None,
) -> None:
    """The dry run: every planned run, its config counts and whether it is committed already;
    one line per run on a wide console, runs under their family on a narrow one; ``budget``
    (what ``--budget`` benchmarks, :meth:`corpus.harvest.guided.RunGuide.plan_text`),
    ``left_out`` (runs of the selection the device cannot run, :func:`corpus.harvest.app.left_out_text`)
    and ``notice`` (from :func:`long_run_notice`) at the end."""
    rows = []
    for run in sorted(runs, key=lambda r: r.family):  # stable: plan order within a family
        skipped = sum(1 for p in run.configs if p.skip_reason is not None)
        state = "committed" if run.run_id in committed else "to do"
        rows.append(ListingRow(run.family, f"{run.shape_name} {run.dtype}", (str(len(run.configs) - skipped), str(skipped), state), run.run_id))
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for column in ("family", "shape", "dtype", "configs", "skipped", "state", "run_id"):
        table.add_column(column, justify="right" if column in ("configs", "skipped") else "left", no_wrap=True)
    for run, row in zip(sorted(runs, key=lambda r: r.family), rows):
        table.add_row(*map(plain_text, (run.family, run.shape_name, run.dtype, *row.cells, row.tail)))
    console.print(fill_markup(
        "[bold]planned runs[/] on {device} ({arch}), IR target {target}",
        device=facts.device_name, arch=facts.arch, target=execution.target,
    ))  # fmt: skip
    print_table_or_listing(
        console, table, lambda: grouped_listing(rows, ("configs", "skipped", "state"), "run_id", console.width)
    )
    def counts(selected: list[PlannedRun]) -> str:
        measured = sum(1 for r in selected for p in r.configs if p.skip_reason is None)
        skipped = sum(1 for r in selected for p in r.configs if p.skip_reason is not None)
        return f"{plural(len(selected), 'run')}; {plural(measured, 'config')} to measure, {skipped:,} skipped"

    print_trimmed(
        console,
        key_values(
            [
                ("configs", "configs the run measures (a seeded sample of them with --max-configs)"),
                ("skipped", "configs the family rules out for this shape and dtype, recorded as skipped rows"),
                ("planned", counts(runs)),
                ("to do", counts([r for r in runs if r.run_id not in committed])),
                *([("left out", left_out)] if left_out else []),
                *([("budget", budget)] if budget else []),
            ]
        ),
    )
    if notice:
        print_labelled(console, "note", "yellow", notice, soft_wrap=False)


LONG_INTERPRETER_CONFIGS = 200
"""Configs to measure above which an interpreter harvest is called long before it starts: each
takes seconds of CPU in Triton's interpreter (compile, check, timed passes), so 200 is several
minutes on a small machine and a bare harvest of every tiny config is hours."""
LONG_HARVEST_S = 600.0
"""An estimated duration above which a harvest is called long before it starts."""
QUICK_LOOK = "--families add_broadcast,softmax --max-configs 2 --dtypes float32"
"""A selection that harvests in about a minute on the interpreter, for the notice below."""


def long_run_notice(configs: int, interpreter: bool, estimated_s: float | None = None) -> str | None:
    """What to tell a person before a harvest that will take long, or None.

    ``configs``: configs the harvest will measure; ``estimated_s``: its estimated duration in
    seconds on this machine, when an estimate is available (it then decides, for any device);
    without one, only an interpreter harvest of more than :data:`LONG_INTERPRETER_CONFIGS`
    configs is called long."""
    if estimated_s is not None:
        if estimated_s < LONG_HARVEST_S:
            return None
        how_long = f"about {format_duration(estimated_s)} here (estimated)"
    elif interpreter and configs > LONG_INTERPRETER_CONFIGS:
        how_long = "each takes seconds in Triton's CPU interpreter (minutes per hundred configs)"
    else:
        return None
    quick = f" For a first look, select less, e.g. {QUICK_LOOK} (under a minute)." if interpreter else ""
    return (
        f"this harvest measures {plural(configs, 'config')}: {how_long}.{quick} "
        "Ctrl-C stops it at any time, keeping finished runs; the same command resumes."
    )


def print_start(
    console: Console,
    resumed: ResumePlan,
    facts: DeviceFacts,
    execution: Execution,
    out: str,
    notice: str | None = None,
    shard: str | None = None,
    budget: str | None = None,
) -> None:
    """What the harvest is about to do, before the progress bars; ``notice`` (from
    :func:`long_run_notice`) as a warning after it; ``shard``: which static shard this is
    (:func:`shard_text`), None when the whole plan is harvested; ``budget``: what a
    ``--budget`` will benchmark of the configs to measure
    (:meth:`corpus.harvest.guided.RunGuide.plan_text`), None without one."""
    rows = [] if shard is None else [("shard", shard)]
    measured = sum(valid_configs(run) for run in resumed.todo)
    ruled_out = sum(len(run.configs) for run in resumed.todo) - measured
    print_trimmed(
        console,
        key_values(
            [
                *rows,
                ("harvest", resumed.describe()),
                # none ruled out (every --max-configs harvest: it samples valid configs) is not said
                (
                    "configs",
                    f"{measured:,} to measure (the progress bar's total)"
                    + (f"; {ruled_out:,} ruled out by their family, written as skipped rows" if ruled_out else ""),
                ),
                *([("budget", budget)] if budget else []),
                ("device", f"{facts.device_name} ({facts.arch}), IR target {execution.target}"),
                ("workers", plural(execution.workers, "compile worker")),
                ("dataset", out),
            ]
        ),
    )
    if notice:
        print_labelled(console, "warning", "yellow", notice, soft_wrap=False)


def shard_text(index: int, count: int, source: str | None = None) -> str | None:
    """``1/4``, or ``1/4 (--shard auto: SLURM_ARRAY_TASK_ID=3 ...)`` with the job-array
    variables it came from (``source``); None for the whole plan (0/1) given as such."""
    if (index, count) == (0, 1) and source is None:
        return None
    return f"{index}/{count}" + (f" (--shard auto: {source})" if source else "")


TIME_MEANING = {
    Timer.CUDA_EVENT.value: "GPU time between CUDA events",
    Timer.CUDA_GRAPH.value: "GPU time per launch within a CUDA graph replay",
    Timer.THREAD_CPU.value: "interpreter CPU time of the benchmark thread (not a GPU's time)",
    Timer.PROCESS_CPU.value: "interpreter CPU time of the benchmark process (not a GPU's time)",
    Timer.WALL.value: "interpreter wall-clock time (not a GPU's time)",
}
"""What a run's ``median_ms`` measures, per timer, for the summary's legend."""


def format_duration(seconds: float) -> str:
    """``42.3 s``, ``3 min 12 s``, ``2 h 05 min``, ``4,919 days 07 h``: a duration as a person
    reads it (days from 48 hours on)."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes:02d} min"
    days, hours = divmod(hours, 24)
    return f"{days:,} days {hours:02d} h"


def timing_line(runs: Sequence[RunSummary]) -> str:
    """How the labels were taken: clock, passes x reps, configs timed once for a twin."""
    twins = sum(run.twins for run in runs)
    settings = runs[0].timing if runs else {}
    if not settings:
        return "no configs timed"
    line = (
        f"{settings.get('timer')} timer, {plural(settings.get('timing_passes') or 0, 'interleaved pass', 'interleaved passes')} "
        f"x {plural(settings.get('reps_per_pass') or 0, 'rep')} per config"
    )
    if twins:
        line += f"; {plural(twins, 'config')} timed once for a twin (identical binary and launch)"
    return line


@dataclass(frozen=True)
class BestOfRun:
    """One line of the summary's table: a run's best config against its family's default."""

    family: str
    shape: str
    dtype: str
    ok: str
    """``ok/measured`` configs."""
    best_ms: float | None
    default_ms: float | None
    best_config: str

    @property
    def speedup(self) -> str:
        if self.best_ms is None or self.default_ms is None:
            return "-"
        return f"{self.default_ms / self.best_ms:.2f}x"

    @staticmethod
    def of(result: RunResult) -> BestOfRun:
        ok = [r for r in result.rows if r["status"] == Status.OK.value]
        best = min(ok, key=lambda r: r["median_ms"], default=None)
        default = next((r for r in ok if r["is_default"]), None)
        return BestOfRun(
            family=result.run.family,
            shape=result.run.shape_name,
            dtype=result.run.dtype,
            ok=f"{len(ok)}/{len(result.rows)}",
            best_ms=best["median_ms"] if best else None,
            default_ms=default["median_ms"] if default else None,
            best_config=compact_config(best) if best else "-",
        )


@dataclass(frozen=True)
class RunSummary:
    """What the summary shows of one committed run: its best config and how it was timed.
    Small (no rows), so a Ray lane returns it to the driver."""

    best: BestOfRun
    timing: Mapping[str, Any]
    """The run's timing settings as ``runs`` records them (timer, timing_passes, ...)."""
    twins: int
    """Configs timed once for a twin (identical binary and launch)."""

    @staticmethod
    def of(result: RunResult) -> RunSummary:
        return RunSummary(
            best=BestOfRun.of(result),
            timing=dict(result.timing),
            twins=sum(1 for row in result.rows if row.get("same_binary_as")),
        )


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def best_configs_legend(timers: Iterable[str], with_default: bool, no_default: bool = False) -> Table:
    """What the best-config table's columns mean: units, the timer, the config shorthand.
    ``no_default``: some run's speed-up is ``-`` (this harvest measured no default config ok
    there, e.g. it measured what a ``--budget`` harvest skipped), which the legend then says."""
    meanings = "; ".join(TIME_MEANING.get(timer, f"{timer} timer") for timer in sorted(set(timers)))
    # a bare "-" read as a failure or a bug; it only means this invocation has nothing to divide by
    dash = "; -: this harvest measured no default config ok in the run" if no_default else ""
    rows = [
        ("ok", "configs measured ok / configs of the run"),
        ("best ms", f"the fastest config's median time per launch, in milliseconds: {meanings or 'no timer'}"),
        ("default ms", "the same for the family's default config"),
        ("speed-up", f"default config's ms / best ms{dash}"),
        ("best config", "meta-parameters, then wN = num_warps, sN = num_stages"),
    ]
    return key_values(row for row in rows if with_default or row[0] != "default ms")


def best_configs_table(rows: list[BestOfRun], with_dtype: bool) -> Table:
    """The wide layout: one line per run, every column (family, shape, dtype, ..., config)."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for column in ("family", "shape", "dtype") if with_dtype else ("family", "shape"):
        table.add_column(column, no_wrap=True)
    for column in ("ok", "best ms", "default ms", "speed-up"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("best config", no_wrap=True)
    for row in rows:
        run = (row.family, row.shape, row.dtype) if with_dtype else (row.family, row.shape)
        table.add_row(*map(plain_text, (*run, row.ok, _ms(row.best_ms), _ms(row.default_ms), row.speedup, row.best_config)))
    return table


def best_configs_listing(rows: list[BestOfRun], width: int, with_dtype: bool) -> list[Text]:
    """The narrow layout, for consoles the wide table does not fit: runs under their family,
    ``default ms`` left out (the speed-up says it), configs folded at their spaces."""
    listing = [
        ListingRow(
            group=row.family,
            label=f"{row.shape} {row.dtype}" if with_dtype else row.shape,
            cells=(row.ok, _ms(row.best_ms), row.speedup),
            tail=row.best_config,
        )
        for row in rows
    ]
    return grouped_listing(listing, ("ok", "best ms", "speed-up"), "best config", width)


def print_summary(
    console: Console,
    totals: HarvestTotals,
    elapsed_s: float,
    out: str,
    max_rows: int = 25,
    runs: Sequence[RunSummary] | None = None,
) -> None:
    """The end of a harvest: counts, where time went, how labels were taken, best configs.
    ``runs``: the committed runs to show (default: ``totals.results``; a Ray driver, which
    holds no rows, passes what its lanes returned)."""
    if runs is None:
        runs = [RunSummary.of(result) for result in totals.results]
    statuses = ", ".join(f"{k} {v:,}" for k, v in sorted(totals.by_status.items(), key=lambda kv: -kv[1]))
    rate = totals.configs_done / elapsed_s if elapsed_s > 0 else 0.0
    per_config_ms = 1e3 * totals.bookkeeping_s / max(totals.configs_done, 1)
    facts = [
        ("dataset", out),
        ("configs", statuses or "none"),
        (
            "time",
            f"compile {format_duration(totals.compile_s)} (summed over workers), static stats "
            f"{format_duration(totals.static_stats_s)} ({totals.sass_calls} nvdisasm call(s)), benchmark "
            f"{format_duration(totals.bench_s)}, bookkeeping {per_config_ms:.2f} ms per config",
        ),
        ("timing", timing_line(runs)),
    ]
    if totals.workers_replaced:
        reasons = ", ".join(f"{why} x{count}" for why, count in Counter(totals.workers_replaced).most_common())
        facts.append(("workers", f"measure worker replaced {plural(len(totals.workers_replaced), 'time')}: {reasons}"))
    elsewhere = (
        f"; {plural(totals.runs_elsewhere, 'run')} committed by another harvest meanwhile (not measured here)"
        if totals.runs_elsewhere
        else ""
    )
    console.print(
        f"\n[bold]harvest finished[/]: {plural(totals.runs_done, 'run')}, {plural(totals.configs_done, 'config')} "
        f"in {format_duration(elapsed_s)} ({rate:.2f} configs/s){elsewhere}"
    )
    print_trimmed(console, key_values(facts))
    if not runs:
        return
    shown = runs[:max_rows]
    rows = sorted((run.best for run in shown), key=lambda r: r.family)  # stable: plan order within
    dtypes = {row.dtype for row in rows}
    one_dtype = next(iter(dtypes)) if len(dtypes) == 1 else None
    more = f"; {plural(len(runs) - max_rows, 'more run')} not shown" if len(runs) > max_rows else ""
    # of what this invocation measured: a run it extended has earlier rows (harvests="latest")
    console.print(
        f"\n[bold]best config per run[/] this harvest measured{f' (all {one_dtype})' if one_dtype else ''}{more}"
    )
    table = best_configs_table(rows, with_dtype=one_dtype is None)
    wide = print_table_or_listing(
        console, table, lambda: best_configs_listing(rows, console.width, with_dtype=one_dtype is None)
    )
    timers = (str(r.timing.get("timer", "")) for r in shown)
    no_default = any(row.best_ms is not None and row.default_ms is None for row in rows)
    print_trimmed(console, best_configs_legend(timers, with_default=wide, no_default=no_default))
