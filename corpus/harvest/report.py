"""What a person sees: the plan of a dry run, a live progress bar, the end summary."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterable

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from corpus.harvest.device import DeviceFacts
from corpus.harvest.plan import PlannedRun
from corpus.harvest.runner import Execution, HarvestTotals, RunResult
from schemas.enums import Status

FAILED = frozenset(s.value for s in Status) - {Status.OK.value, Status.SKIPPED.value}


class HarvestProgress:
    """Two bars (runs, configs) with ok/failed counts and ETA; safe to update from threads."""

    def __init__(self, console: Console, runs: Iterable[PlannedRun]) -> None:
        runs = list(runs)
        self.progress = Progress(
            TextColumn("{task.description:<8}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self.runs_task = self.progress.add_task("runs", total=len(runs), detail="")
        self.configs_task = self.progress.add_task("configs", total=sum(len(r.configs) for r in runs), detail="")
        self.counts: Counter[str] = Counter()
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


def print_plan(console: Console, runs: list[PlannedRun], committed: set[str], facts: DeviceFacts, execution: Execution) -> None:
    table = Table(title=f"planned runs on {facts.device_name} ({facts.arch}), IR target {execution.target}")
    for column in ("family", "shape", "dtype", "configs", "skipped", "run_id", "state"):
        table.add_column(column, justify="right" if column in ("configs", "skipped") else "left")
    for run in runs:
        skipped = sum(1 for p in run.configs if p.skip_reason is not None)
        state = "committed" if run.run_id in committed else "to do"
        table.add_row(run.family, run.shape_name, run.dtype, str(len(run.configs) - skipped), str(skipped), run.run_id, state)
    console.print(table)
    todo = [r for r in runs if r.run_id not in committed]
    console.print(
        f"{len(runs)} run(s), {sum(len(r.configs) for r in runs)} config(s); "
        f"to do: {len(todo)} run(s), {sum(len(r.configs) for r in todo)} config(s)"
    )


def timing_line(totals: HarvestTotals) -> str:
    """How the labels were taken: clock, passes x reps, configs timed once for a twin."""
    rows = [row for result in totals.results for row in result.rows]
    twins = sum(1 for row in rows if row.get("same_binary_as"))
    settings = totals.results[0].timing if totals.results else {}
    schedule = (
        f"{settings.get('timing_passes')} interleaved pass(es) x {settings.get('reps_per_pass')} rep(s)"
        if settings
        else "no configs timed"
    )
    return (
        f"timing: {settings.get('timer', '-')}, {schedule}; "
        f"{twins} config(s) shared an identical binary and launch with another and were timed once"
    )


def compact_config(row: dict) -> str:
    """A measurement row's config in a few characters: ``BLOCK_M=16 BLOCK_N=128 w4 s2``
    (meta-parameters, then warps and stages; the full ``triton.Config`` is in the dataset)."""
    params = " ".join(f"{p['name']}={p['value']}" for p in row.get("config_params") or [])
    return f"{params} w{row['num_warps']} s{row['num_stages']}".strip()


def print_summary(console: Console, totals: HarvestTotals, elapsed_s: float, out: str, max_rows: int = 25) -> None:
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(totals.by_status.items(), key=lambda kv: -kv[1]))
    console.print(f"\n[bold]harvest finished[/]: {totals.runs_done} run(s), {totals.configs_done} config(s) in {elapsed_s:.1f} s -> {out}")
    console.print(f"configs by status: {statuses or 'none'}")
    rate = totals.configs_done / elapsed_s if elapsed_s > 0 else 0.0
    per_config_ms = 1e3 * totals.bookkeeping_s / max(totals.configs_done, 1)
    console.print(
        f"throughput {rate:.2f} configs/s; compile {totals.compile_s:.1f} s (summed over workers), "
        f"static stats {totals.static_stats_s:.1f} s ({totals.sass_calls} nvdisasm call(s)), "
        f"benchmark {totals.bench_s:.1f} s, bookkeeping {per_config_ms:.2f} ms/config"
    )
    console.print(timing_line(totals))
    if totals.workers_replaced:
        reasons = Counter(totals.workers_replaced)
        console.print(
            f"measure workers replaced {len(totals.workers_replaced)} time(s): "
            + ", ".join(f"{why} x{count}" for why, count in reasons.most_common())
        )
    table = Table(title="best config per run")
    for column in ("run", "ok", "best ms", "default ms", "speedup", "best config"):
        table.add_column(column, justify="right" if column in ("best ms", "default ms", "speedup", "ok") else "left")
    for result in totals.results[:max_rows]:
        ok = [r for r in result.rows if r["status"] == Status.OK.value]
        best = min(ok, key=lambda r: r["median_ms"], default=None)
        default = next((r for r in ok if r["is_default"]), None)
        speedup = f"{default['median_ms'] / best['median_ms']:.2f}x" if best and default else "-"
        table.add_row(
            result.run.label,
            f"{len(ok)}/{len(result.rows)}",
            f"{best['median_ms']:.4g}" if best else "-",
            f"{default['median_ms']:.4g}" if default else "-",
            speedup,
            compact_config(best) if best else "-",
        )
    if len(totals.results) > max_rows:
        table.caption = f"{len(totals.results) - max_rows} more run(s) not shown"
    console.print(table)
