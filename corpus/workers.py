"""Persistent worker processes with hard timeouts.

A :class:`WorkerProcess` runs a handler in a child process (``spawn``, so no CUDA or Triton
state leaks from the parent) and serves one request at a time. A request that outlives its
timeout gets the child SIGKILLed and respawned: the only way to stop a hung compile, an
infinite loop in the interpreter, or a wedged GPU context.
"""

from __future__ import annotations

import importlib
import multiprocessing as mp
import os
import traceback
import warnings
from collections.abc import Callable, Mapping
from multiprocessing.connection import Connection
from typing import Any

Handler = Callable[[Any], Any]


class WorkerTimeout(Exception):
    """The request did not finish in time; the worker was killed (and will respawn)."""


class WorkerCrashed(Exception):
    """The worker died while serving the request (segfault, os._exit, OOM kill)."""


class WorkerError(Exception):
    """The handler raised; the text carries the child's traceback."""


QUIET_WARNINGS = ("TRITON_DEFAULT_FP_FUSION is unset",)
"""Warnings every worker would print once per process: noise in a harvest's output."""


def _serve(connection: Connection, factory: str, init: Any, environment: Mapping[str, str]) -> None:
    os.environ.update(environment)  # before the handler imports Triton or kernel modules
    for message in QUIET_WARNINGS:
        warnings.filterwarnings("ignore", message=message)
    module_name, _, attribute = factory.partition(":")
    handler: Handler = getattr(importlib.import_module(module_name), attribute)(init)
    connection.send(("ready", None))
    while True:
        try:
            request = connection.recv()
        except EOFError:
            return
        if request is None:
            return
        try:
            connection.send(("ok", handler(request)))
        except BaseException:
            connection.send(("error", traceback.format_exc(limit=8)))


class WorkerProcess:
    """A child process serving ``factory(init)`` as a request handler.

    ``factory`` is ``"module:callable"``, imported in the child after ``environment`` is
    applied; ``callable(init)`` returns the handler. ``start_timeout_s`` bounds start-up
    (imports of torch and Triton take seconds).
    """

    def __init__(
        self,
        name: str,
        factory: str,
        init: Any,
        environment: Mapping[str, str],
        *,
        start_timeout_s: float = 180.0,
    ) -> None:
        self.name = name
        self.factory = factory
        self.init = init
        self.environment = dict(environment)
        self.start_timeout_s = start_timeout_s
        self.restarts = 0
        self._process: mp.process.BaseProcess | None = None
        self._connection: Connection | None = None

    def start(self) -> None:
        context = mp.get_context("spawn")
        parent, child = context.Pipe()
        process = context.Process(
            target=_serve, args=(child, self.factory, self.init, self.environment), name=self.name, daemon=True
        )
        process.start()
        child.close()
        self._process, self._connection = process, parent
        if not parent.poll(self.start_timeout_s):
            self.kill()
            raise WorkerTimeout(f"worker {self.name} did not start within {self.start_timeout_s:.0f} s")
        try:
            kind, payload = parent.recv()
        except EOFError as exc:
            self.kill()
            raise WorkerCrashed(f"worker {self.name} died while starting ({self.factory})") from exc
        if kind != "ready":
            self.kill()
            raise WorkerError(f"worker {self.name} failed to start:\n{payload}")

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.is_alive()

    def call(self, request: Any, timeout_s: float) -> Any:
        """Send ``request`` and wait at most ``timeout_s`` for the handler's result."""
        if not self.alive:
            self.start()
        assert self._connection is not None
        self._connection.send(request)
        if not self._connection.poll(timeout_s):
            self.kill()
            raise WorkerTimeout(f"worker {self.name}: no answer within {timeout_s:g} s; killed")
        try:
            kind, payload = self._connection.recv()
        except (EOFError, ConnectionResetError) as exc:
            code = None
            if self._process is not None:
                self._process.join(timeout=5)  # the pipe closes a moment before the exit code is known
                code = self._process.exitcode
            self.kill()
            raise WorkerCrashed(f"worker {self.name} died (exit code {code})") from exc
        if kind == "error":
            raise WorkerError(payload)
        return payload

    def kill(self) -> None:
        """SIGKILL the child (if running); the next :meth:`call` starts a fresh one."""
        if self._process is not None:
            if self._process.is_alive():
                self._process.kill()
            self._process.join(timeout=10)
            self.restarts += 1
        if self._connection is not None:
            self._connection.close()
        self._process = self._connection = None

    def close(self) -> None:
        """Ask the child to exit; kill it if it does not."""
        if self._connection is not None and self.alive:
            try:
                self._connection.send(None)
                self._process.join(timeout=5)
            except (BrokenPipeError, OSError):
                pass
        if self.alive:
            self.kill()
        self._process = self._connection = None
