"""Resume at config granularity: which planned configs a dataset already holds.

A config counts as measured when a committed harvest (one whose ``runs`` row exists for the
run) wrote its ``measurements`` row with the same bench settings as this harvest
(:data:`BENCH_SETTINGS`: timer, passes, reps, warmup, L2 flush). Such configs are dropped from
the plan; a run whose every config is measured is skipped. Configs measured only under other
settings are measured again, and the summary says so. ``run_id`` ignores ``--max-configs``,
so ``--max-configs 8`` then ``--max-configs 32`` into one dataset ends with 32 configs per run
(the seeded sample of 8 is a prefix of the sample of 32, see :func:`corpus.harvest.plan.plan_configs`).
A config an earlier ``--budget`` harvest left unbenchmarked (:data:`BUDGET_SKIP`) counts as
measured only for a harvest that has a budget too; the configs of a run whose setup failed
(:data:`SETUP_FAILED`) were not benchmarked either, and count as measured for none.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from corpus.harvest.plan import PlannedRun
from schemas import TableNotFoundError, read_table
from schemas.reader import Filters

BENCH_SETTINGS = ("timer", "timing_passes", "reps_per_pass", "warmup", "l2_flush_bytes")
"""``runs`` columns that must agree for an earlier measurement to stand for this harvest's."""
SETUP_FAILED = "run setup failed: "
"""Prefix of the ``error`` of every ``skipped`` row of a run whose setup failed (its inputs or
reference could not be built on the benchmark device: out of memory, a worker that crashed or
timed out, ...): nothing was benchmarked, so a later harvest measures them again."""
BUDGET_SKIP = "not benchmarked under --budget"
"""Prefix of the ``error`` of a ``skipped`` row a budgeted harvest wrote for a config it compiled
but did not benchmark (:mod:`corpus.harvest.guided`): measured by a later harvest without
``--budget``, done for a later budgeted one."""


MEASURED_BEFORE = "config(s) measured before with the same bench settings, not measured again"
"""The start line's count of configs a resumed harvest leaves alone (after the number)."""


@dataclass(frozen=True)
class ResumePlan:
    """What this harvest still has to do, and what it skips."""

    todo: list[PlannedRun]
    """Runs with at least one config to measure, holding only those configs."""
    complete_runs: int = 0
    """Planned runs whose every config is already measured with the same settings."""
    skipped_configs: int = 0
    """Configs (in all runs) already measured with the same settings."""
    remeasured: Counter[str] = field(default_factory=Counter)
    """Configs measured before only under other settings, by what differed
    (e.g. ``"timer cuda_event != cuda_graph"``)."""
    budget_skipped: int = 0
    """Of ``skipped_configs``, those an earlier ``--budget`` harvest left unbenchmarked, which
    this budgeted harvest counts as done (never measured: a harvest without a budget measures
    them)."""

    def describe(self) -> str:
        """One line for the console: what is skipped and why."""
        parts = [f"{len(self.todo):,} run(s) to do"]
        measured = self.skipped_configs - self.budget_skipped
        # A new dataset skips nothing: "0 run(s) complete; 0 config(s) measured before ..." on
        # every first harvest was noise to read past
        if self.complete_runs or measured:
            parts.append(f"{self.complete_runs:,} run(s) complete")
            # not "... skipped": the progress bar's "skipped" is a status (configs ruled out)
            parts.append(f"{measured:,} {MEASURED_BEFORE}")
        if self.budget_skipped:  # they were counted as measured, which they never were
            parts.append(self.budget_skip_text())
        for why, count in sorted(self.remeasured.items()):
            parts.append(f"{count:,} config(s) measured again ({why})")
        return "; ".join(parts)

    def budget_skip_text(self) -> str:
        """What this budgeted harvest counts as done without a measurement, and how to measure
        it (empty when nothing)."""
        if not self.budget_skipped:
            return ""
        return (
            f"{self.budget_skipped:,} config(s) an earlier --budget harvest left unbenchmarked "
            "count as done under --budget (a run is tuned under a budget once; a harvest without "
            "--budget measures them)"
        )


def read_existing(
    out: str,
    table: str,
    columns: Sequence[str],
    filters: Filters = None,
    *,
    committed_only: bool = True,
) -> pa.Table | None:
    """``columns`` of ``table`` in the dataset at ``out`` (rows matching ``filters``; with
    ``committed_only=False`` measurements of uncommitted runs too), or None when the table
    does not exist yet (a new dataset); any other DatasetError is raised: a file that cannot
    be read holds committed rows, and taking it for no rows would measure or import them again."""
    try:
        return read_table(
            out, table, columns=list(columns), filters=filters, committed_only=committed_only
        )
    except TableNotFoundError:
        return None


def _read(out: str, table: str, columns: Sequence[str]) -> list[dict[str, Any]]:
    found = read_existing(out, table, columns)
    return [] if found is None else found.to_pylist()


def _difference(earlier: Mapping[str, Any], current: Mapping[str, Any]) -> str | None:
    """The first bench setting that differs (``"name old != new"``), or None."""
    for name in BENCH_SETTINGS:
        if earlier.get(name) != current.get(name):
            return f"{name} {earlier.get(name)} != {current.get(name)}"
    return None


def _not_benchmarked(error: str, budgeted: bool) -> bool:
    """Whether a ``skipped`` row with ``error`` is to be measured by this harvest: its run's
    setup failed (often a passing condition: memory another process held, a worker killed), or
    a budget left it out and this harvest has none. Configs the spec rules out stay done."""
    return error.startswith(SETUP_FAILED) or (not budgeted and error.startswith(BUDGET_SKIP))


def resume_plan(
    out: str, planned: Sequence[PlannedRun], settings: Mapping[str, Any], *, budgeted: bool = False
) -> ResumePlan:
    """Drop from ``planned`` the configs ``out`` holds with bench ``settings`` (a mapping with
    every name of :data:`BENCH_SETTINGS`, as ``runs`` rows record them). ``budgeted``: this
    harvest has a ``--budget``, so configs an earlier budgeted harvest skipped are done."""
    missing = [name for name in BENCH_SETTINGS if name not in settings]
    if missing:
        raise ValueError(f"resume needs the bench settings {', '.join(missing)}")
    wanted = {run.run_id for run in planned}
    harvest_difference: dict[tuple[str, str], str | None] = {}
    for row in _read(out, "runs", ["run_id", "harvest_id", *BENCH_SETTINGS]):
        if row["run_id"] in wanted:
            harvest_difference[(row["run_id"], row["harvest_id"])] = _difference(row, settings)
    same: set[tuple[str, str]] = set()
    other: dict[tuple[str, str], str] = {}
    budget_done: set[tuple[str, str]] = set()  # a budget skipped it: done for this budgeted harvest
    benchmarked: set[tuple[str, str]] = set()  # another harvest measured it (or ruled it out)
    if harvest_difference:
        for row in _read(out, "measurements", ["run_id", "harvest_id", "config_id", "status", "error"]):
            key = (row["run_id"], row["harvest_id"])
            if key not in harvest_difference:
                continue  # not committed, or not planned now
            if row["status"] == "skipped" and _not_benchmarked(row["error"] or "", budgeted):
                continue  # no observation: measure it now
            config = (row["run_id"], row["config_id"])
            why = harvest_difference[key]
            if why is None:
                same.add(config)
                if row["status"] == "skipped" and (row["error"] or "").startswith(BUDGET_SKIP):
                    budget_done.add(config)
                else:
                    benchmarked.add(config)
            else:
                other.setdefault(config, why)
    budget_done -= benchmarked
    todo: list[PlannedRun] = []
    complete = skipped = unbenchmarked = 0
    remeasured: Counter[str] = Counter()
    for run in planned:
        left = [p for p in run.configs if (run.run_id, p.config.id) not in same]
        skipped += len(run.configs) - len(left)
        unbenchmarked += sum((run.run_id, p.config.id) in budget_done for p in run.configs)
        for p in left:
            why = other.get((run.run_id, p.config.id))
            if why is not None:
                remeasured[why] += 1
        if not left:
            complete += 1
        elif len(left) == len(run.configs):
            todo.append(run)
        else:
            todo.append(replace(run, configs=tuple(left)))
    return ResumePlan(todo, complete, skipped, remeasured, unbenchmarked)
