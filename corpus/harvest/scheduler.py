"""Which run goes to which benchmark lane, and when its compiles are queued.

The harvest has one benchmark lane per device and a pool of compile workers. With
pipelining, a submitter thread queues each run's compiles (in plan order) at most
``lookahead`` runs ahead of the lanes, so a lane rarely waits for the compiler and the
compile queue never holds the whole plan. Without it (the naive schedule, kept to measure
what pipelining buys), a lane gets a run with no queued compiles and compiles as it goes.

:class:`Scheduler` only moves runs between threads: what a lane does with a run is the
``execute`` callable and what queuing a run's compiles means is ``submit``, so tests drive it
with in-process fakes.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Generic, Protocol, TypeVar


class Schedulable(Protocol):
    """What the scheduler needs of a run: the id its compiles are filed under."""

    @property
    def run_id(self) -> str: ...


LaneT = TypeVar("LaneT")
RunT = TypeVar("RunT", bound=Schedulable)
CompilesT = TypeVar("CompilesT")

POLL_S = 0.01
"""How often a lane waiting for its run's compiles to be queued looks again."""


class Scheduler(Generic[LaneT, RunT, CompilesT]):
    """Runs ``execute(lane, run, compiles)`` for every run, each lane in its own thread,
    taking runs in plan order from one shared queue.

    ``submit(run)`` queues the run's compiles and returns their handle (``compiles``); with
    ``pipeline=False`` it is never called and ``compiles`` is None. ``prepare(lane)``, when
    given, runs first thing in each lane's thread (start the lane's worker while the first
    compiles are queued). ``stop`` (set by the caller, e.g. on Ctrl-C, or here when a lane
    fails) makes lanes finish their current run and take no other.
    """

    def __init__(
        self,
        lanes: Sequence[LaneT],
        execute: Callable[[LaneT, RunT, CompilesT | None], object],
        submit: Callable[[RunT], CompilesT],
        *,
        pipeline: bool = True,
        lookahead: int = 2,
        stop: threading.Event | None = None,
        prepare: Callable[[LaneT], object] | None = None,
    ) -> None:
        if not lanes:
            raise ValueError("the scheduler needs at least one benchmark lane")
        if lookahead < 0:
            raise ValueError(f"lookahead must be >= 0, got {lookahead}")
        self.lanes = list(lanes)
        self.execute = execute
        self.submit = submit
        self.pipeline = pipeline
        self.lookahead = lookahead
        self.stop = stop or threading.Event()
        self.prepare = prepare
        self.submitted_order: list[str] = []
        """run_ids in the order their compiles were queued (for tests and diagnostics)."""

    def run(self, runs: Sequence[RunT]) -> None:
        """Execute every run; returns when all are done, or raises the first lane failure
        (after the other lanes finished their current run). KeyboardInterrupt in the calling
        thread sets ``stop`` and propagates."""
        pending: deque[RunT] = deque(runs)
        queue_lock = threading.Lock()
        # A slot is a run whose compiles are queued but whose lane has not finished it yet.
        slots = threading.Semaphore(self.lookahead + len(self.lanes))
        submitted: dict[str, CompilesT] = {}
        failures: list[BaseException] = []

        def submitter() -> None:
            try:
                for run in runs:
                    slots.acquire()
                    if self.stop.is_set():
                        return
                    submitted[run.run_id] = self.submit(run)
                    self.submitted_order.append(run.run_id)
            except BaseException as exc:  # surfaced in the calling thread
                failures.append(exc)
                self.stop.set()

        def take() -> RunT | None:
            with queue_lock:
                return pending.popleft() if pending and not self.stop.is_set() else None

        def compiles_of(run: RunT) -> CompilesT | None:
            if not self.pipeline:
                return None
            while run.run_id not in submitted:
                if self.stop.is_set():
                    return None
                time.sleep(POLL_S)
            return submitted.pop(run.run_id)

        def serve(lane: LaneT) -> None:
            try:
                if self.prepare is not None:
                    self.prepare(lane)
                while (run := take()) is not None:
                    compiles = compiles_of(run)
                    if self.stop.is_set():
                        return
                    self.execute(lane, run, compiles)
                    slots.release()
            except BaseException as exc:
                failures.append(exc)
                self.stop.set()

        if self.pipeline:
            threading.Thread(target=submitter, name="submitter", daemon=True).start()
        threads = [
            threading.Thread(target=serve, args=(lane,), name=f"lane-{i}", daemon=True)
            for i, lane in enumerate(self.lanes)
        ]
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                while thread.is_alive():
                    thread.join(timeout=0.2)
        except BaseException:
            self.stop.set()
            slots.release()  # a submitter blocked on a slot sees the stop
            raise
        slots.release()
        if failures:
            raise failures[0]
