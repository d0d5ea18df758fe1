"""Signals that stop a long command the way Ctrl-C does: the harvest and ``python -m train``.

A batch scheduler preempting a job (Slurm, Kubernetes) sends SIGTERM, and a closed terminal
sends SIGHUP; by default either kills the process at once, without a word: a harvest loses the
runs it finished since its last write (up to ``--flush-every`` seconds of work), and
``python -m train`` leaves its hidden staging directory behind. :func:`stop_on_termination`
turns them into :class:`Terminated`, a KeyboardInterrupt, so they take Ctrl-C's path: a harvest
stops its workers, commits its finished runs and leaves the rest for a rerun; ``python -m
train`` removes its staging directory and leaves ``--out`` as it was. The command prints one
line naming the signal and exits 128 + its number (:attr:`Terminated.exit_code`), as a shell
reports a process the signal ended.

A harvest's workers ignore both, and SIGINT too (:func:`ignore_stop_signals`): a terminal's
Ctrl-C and a scheduler's SIGTERM reach the whole process group, and a worker interrupted
mid-request would answer with an error the harvest could record as the config's outcome. The
harvest stops its workers itself; one whose harvest died is killed by the kernel
(``corpus.harvest.workers.die_with_parent``).

It lives in ``schemas``, the layer every command imports, because ``train`` may not import
``corpus``.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

TERMINATION_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
"""Signals that end a command the way Ctrl-C does."""


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
    repeating its SIGTERM does not interrupt the commit of finished runs. Python runs signal
    handlers in the main thread only: elsewhere the block runs as is. Previous handlers come
    back at exit.

    A library may catch the :class:`Terminated` its blocking call was interrupted by and raise
    a plain KeyboardInterrupt instead (Ray's ``ray.get`` and ``ray.wait`` do): a
    KeyboardInterrupt that leaves the block after a signal arrived is raised again as
    :class:`Terminated` for that signal, so the command still says "stopped by SIGTERM" and
    exits 143, not "interrupted" and 130 as after Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    # None: a handler installed outside Python, which cannot be put back; the default stands in
    previous = {number: signal.getsignal(number) or signal.SIG_DFL for number in signals}
    caught = [number for number, handler in previous.items() if handler is not signal.SIG_IGN]
    received: list[int] = []

    def terminate(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        for number in caught:
            signal.signal(number, signal.SIG_IGN)
        raise Terminated(signum)

    for number in caught:
        signal.signal(number, terminate)
    try:
        yield
    except KeyboardInterrupt as stop:
        if received and not isinstance(stop, Terminated):
            raise Terminated(received[0]) from stop
        raise
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


INTERRUPTED = 130
"""Exit code after Ctrl-C (128 + SIGINT), as a shell reports a command it interrupted."""


def stopped(stop: KeyboardInterrupt) -> tuple[str, int]:
    """How a command says it was stopped by Ctrl-C or by a termination signal, and its exit
    code: ``("interrupted", 130)``, ``("stopped by SIGTERM", 143)``."""
    if isinstance(stop, Terminated):
        return f"stopped by {stop.name}", stop.exit_code
    return "interrupted", INTERRUPTED


def ignore_stop_signals() -> None:
    """Ignore SIGINT and the termination signals in this process (a worker: its harvest stops
    it)."""
    for number in (signal.SIGINT, *TERMINATION_SIGNALS):
        signal.signal(number, signal.SIG_IGN)
