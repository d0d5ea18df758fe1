"""In-process stand-ins for worker processes, for driving the scheduler and the lanes fast.

:class:`InlineWorker` has :class:`corpus.harvest.workers.WorkerProcess`'s interface and error
semantics (timeout -> killed, crash -> killed, handler exception -> WorkerError with the
traceback text, a dead worker respawns on the next call) but runs its handler in a thread of
this process. It is a test double for the *process*, not for the handler logic under test.
"""

from __future__ import annotations

import itertools
import threading
import traceback
from collections.abc import Callable
from typing import Any

from corpus.harvest.workers import WorkerCrashed, WorkerError, WorkerTimeout

_pids = itertools.count(10_000)


class Crash(Exception):
    """Raised by a fake handler to simulate the worker process dying mid-request."""


class InlineWorker:
    """Serves ``make_handler()`` in a thread; each (re)start builds a fresh handler."""

    def __init__(self, make_handler: Callable[[], Callable[[Any], Any]]) -> None:
        self.make_handler = make_handler
        self.starts = 0
        self.restarts = 0
        """Workers killed or found dead, as :class:`corpus.harvest.workers.WorkerProcess` counts them."""
        self._died = False
        self.handler: Callable[[Any], Any] | None = None
        self._pid: int | None = None
        self.requests: list[Any] = []

    @property
    def alive(self) -> bool:
        return self.handler is not None

    @property
    def pid(self) -> int | None:
        return self._pid

    def start(self) -> None:
        self.handler = self.make_handler()
        self._pid = next(_pids)
        self.starts += 1

    def die_while_idle(self) -> None:
        """What the OOM killer does: the process is gone, nobody was told."""
        self.handler = None
        self._pid = None
        self._died = True

    def call(self, request: Any, timeout_s: float) -> Any:
        if not self.alive:
            if self._died:  # found dead: reaped and counted, as the real worker does
                self.restarts += 1
                self._died = False
            self.start()
        handler = self.handler
        assert handler is not None
        self.requests.append(request)
        answer: dict[str, Any] = {}

        def serve() -> None:
            try:
                answer["ok"] = handler(request)
            except Crash as exc:
                answer["crash"] = str(exc)
            except BaseException:
                answer["error"] = traceback.format_exc(limit=8)

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        thread.join(timeout_s)
        if thread.is_alive():  # the real worker is SIGKILLed; the fake's thread is abandoned
            self.kill()
            raise WorkerTimeout(f"no answer within {timeout_s:g} s; killed")
        if "crash" in answer:
            self.kill()
            raise WorkerCrashed(f"worker died ({answer['crash']})")
        if "error" in answer:
            raise WorkerError(answer["error"])
        return answer["ok"]

    def kill(self) -> None:
        if self.handler is not None:
            self.restarts += 1
        self.handler = None
        self._pid = None

    def close(self) -> None:
        self.handler = None
        self._pid = None
