"""Signals that stop a harvest the way Ctrl-C does.

A batch scheduler preempting a job (Slurm, Kubernetes) sends SIGTERM, and a closed terminal
sends SIGHUP; by default either kills the harvest at once, losing the runs it finished since
its last write (up to ``--flush-every`` seconds of work). :func:`stop_on_termination` turns
them into :class:`Terminated`, a KeyboardInterrupt, so they take Ctrl-C's path: workers
stopped, finished runs committed, the rest left for a rerun.

Workers ignore both, and SIGINT too (:func:`ignore_stop_signals`): a terminal's Ctrl-C and a
scheduler's SIGTERM reach the whole process group, and a worker interrupted mid-request would
answer with an error the harvest could record as the config's outcome. The harvest stops its
workers itself; one whose harvest died is killed by the kernel
(:func:`corpus.harvest.workers.die_with_parent`).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

TERMINATION_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
"""Signals that end a harvest the way Ctrl-C does."""


class Terminated(KeyboardInterrupt):
    """A termination signal arrived (``signum``); raised in the main thread."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        """The signal's name, e.g. ``SIGTERM``."""
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        """The shell's code for a process ended by the signal: 128 + its number."""
        return 128 + self.signum


@contextmanager
def stop_on_termination(signals: tuple[int, ...] = TERMINATION_SIGNALS) -> Iterator[None]:
    """Within the block, each of ``signals`` raises :class:`Terminated` in the main thread.

    A signal this process ignores when the block starts stays ignored (``nohup`` ignores
    SIGHUP). After the first one, all of them are ignored until the block ends, so a scheduler
    repeating its SIGTERM does not interrupt the commit of finished runs. Must be entered in the
    main thread (Python runs signal handlers only there). Previous handlers come back at exit."""
    # None: a handler installed outside Python, which cannot be put back; the default stands in
    previous = {number: signal.getsignal(number) or signal.SIG_DFL for number in signals}
    caught = [number for number, handler in previous.items() if handler is not signal.SIG_IGN]

    def terminate(signum: int, frame: FrameType | None) -> None:
        for number in caught:
            signal.signal(number, signal.SIG_IGN)
        raise Terminated(signum)

    for number in caught:
        signal.signal(number, terminate)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def ignore_stop_signals() -> None:
    """Ignore SIGINT and the termination signals in this process (a worker: its harvest stops
    it)."""
    for number in (signal.SIGINT, *TERMINATION_SIGNALS):
        signal.signal(number, signal.SIG_IGN)
