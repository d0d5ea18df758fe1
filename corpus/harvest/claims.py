"""Run claims: two harvests whose plans overlap never measure one (run, config) at once.

The plan lock (:func:`corpus.harvest.checks.harvest_lock`) only stops a second *identical*
harvest. Plans that overlap (``--families softmax`` started during a
``softmax,add_broadcast`` harvest, two ``--max-configs`` of one run, shards of different
plans) share runs, so each lane claims a run before it measures it: an advisory lock per
run_id in the dataset (``DIR/.locks/runs/<run_id>.lock``), held from before the run's first
benchmark until its rows are committed (the flush that writes its ``runs`` row), then given
back. A lane that finds a run claimed first commits what its own harvest has finished (so two
harvests waiting on each other's claims cannot deadlock), then waits for the claim.

Resume semantics are kept: once a lane holds a run's claim it asks the dataset again which of
the run's configs a harvest committed since this one planned (any other harvest_id for the
run), and measures only the rest, as a rerun would; a run with nothing left is not measured.
A killed holder's claim is released by the kernel, and the run's uncommitted configs are
measured by whoever claims it next.

Every lane claims: the lanes of a harvest on one machine, and the lane actors of a Ray harvest
(:mod:`corpus.harvest.cluster`), whose claims the dataset's storage shares across nodes. Claims
exist for local datasets only (flock; a path, not an object store), and only while resuming:
``--no-resume`` and ``--allow-repeat`` measure again on purpose.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from corpus.harvest.plan import PlannedRun
from corpus.harvest.resume import read_existing, resume_plan
from schemas.locking import FileLock, holder_line, is_lockable
from schemas.storage import resolve

CLAIM_DIR = "runs"
"""Claims live in ``.locks/runs/``, apart from the plan and maintenance locks."""


def committed_harvests(out: str) -> set[tuple[str, str]]:
    """(run_id, harvest_id) of every committed run of ``out`` (empty for a new dataset)."""
    runs = read_existing(out, "runs", ["run_id", "harvest_id"])
    if runs is None:
        return set()
    return set(zip(runs.column("run_id").to_pylist(), runs.column("harvest_id").to_pylist()))


class RunClaims:
    """The claims one harvest holds on the dataset at ``out``.

    ``known``: (run_id, harvest_id) committed when this harvest planned (what its plan already
    left out). ``budgeted``: this harvest has a ``--budget``, so configs another budgeted
    harvest left unbenchmarked are done, as its plan counted them (:func:`resume_plan`).
    """

    def __init__(self, out: str, known: Iterable[tuple[str, str]], *, budgeted: bool = False) -> None:
        self.out = out
        self.budgeted = budgeted
        self.location = resolve(out)
        self.known = set(known)
        self.holder = holder_line("harvest")
        self.held: dict[str, FileLock] = {}
        self.lock = threading.Lock()
        self.waited: list[str] = []
        """run_ids this harvest had to wait for (tests and diagnostics)."""

    @classmethod
    def for_harvest(
        cls, out: str, known: Iterable[tuple[str, str]], *, enabled: bool, budgeted: bool = False
    ) -> RunClaims | None:
        """Claims for a harvest into ``out``, or None where there are none (a non-local
        dataset, or ``enabled`` false: ``--no-resume`` / ``--allow-repeat``)."""
        if not enabled or not is_lockable(resolve(out)):
            return None
        return cls(out, known, budgeted=budgeted)

    def learn(self, known: Iterable[tuple[str, str]]) -> None:
        """Add (run_id, harvest_id) pairs committed when this harvest planned (a Ray lane gets
        them run by run, with each run it executes)."""
        with self.lock:
            self.known.update(known)

    def claim(
        self,
        run: PlannedRun,
        settings: Mapping[str, Any],
        own_harvest: str,
        before_waiting: Callable[[], None],
    ) -> PlannedRun | None:
        """Claim ``run`` (waiting while another harvest holds it, after ``before_waiting()``
        committed this harvest's finished runs), then return what is left to measure of it
        (None: nothing; the claim is then given back). ``settings``: this harvest's bench
        settings (what resume compares); ``own_harvest``: its harvest_id, whose commits are
        not news."""
        lock = FileLock(self.location, f"{CLAIM_DIR}/{run.run_id}", self.holder)
        if not lock.acquire(wait=False):
            before_waiting()
            self.waited.append(run.run_id)
            lock.acquire(wait=True)
        with self.lock:
            self.held[run.run_id] = lock
        left = self._left(run, settings, own_harvest)
        if left is None:
            self.release([run.run_id])
        return left

    def _left(self, run: PlannedRun, settings: Mapping[str, Any], own_harvest: str) -> PlannedRun | None:
        """The configs of ``run`` no harvest committed since the plan (the plan's own, when
        no other harvest committed the run meanwhile: one small read of ``runs``)."""
        rows = read_existing(self.out, "runs", ["harvest_id"], filters=[("run_id", "=", run.run_id)])
        if rows is None:
            return run
        news = {
            h for h in rows.column("harvest_id").to_pylist()
            if h != own_harvest and (run.run_id, h) not in self.known
        }  # fmt: skip
        if not news:
            return run
        resumed = resume_plan(self.out, [run], settings, budgeted=self.budgeted)
        if not resumed.todo:
            return None
        left = {p.config.id for p in resumed.todo[0].configs}
        return replace(run, configs=tuple(p for p in run.configs if p.config.id in left))

    def release(self, run_ids: Iterable[str]) -> None:
        """Give back the claims on ``run_ids`` (their rows are committed, or will not be)."""
        with self.lock:
            locks = [self.held.pop(run_id) for run_id in run_ids if run_id in self.held]
        for lock in locks:
            lock.release()

    def release_all(self) -> None:
        with self.lock:
            run_ids = list(self.held)
        self.release(run_ids)
