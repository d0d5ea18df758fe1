"""Persistent worker processes with hard timeouts.

A :class:`WorkerProcess` runs a handler in a child process and serves one request at a time.
A request that outlives its timeout gets the child SIGKILLed and respawned: the only way to
stop a hung compile, an infinite loop in the interpreter, or a wedged GPU context. A child that
died while idle (e.g. the OOM killer) is respawned by the next request. On Linux each child asks
the kernel to SIGKILL it when its parent dies (``PR_SET_PDEATHSIG``), so a killed harvest leaves
no orphans.

Children are forked from a fork server (multiprocessing's ``forkserver``) that imported torch
and the other heavy, setting-independent modules once (:data:`PRELOAD`, see
:mod:`corpus.harvest.preload`): a worker starts in ~0.2 s of CPU instead of the ~1.5-2 s a
fresh interpreter spends importing them, so a harvest pays the imports once, not once per
compile worker, benchmark worker and respawn. The server never imports Triton nor initializes
CUDA; each child applies its environment (``TRITON_INTERPRET``, cache directory, TMPDIR) before
its handler imports Triton or any kernel. The server exits when the harvest process does; its
children then die with it (see :func:`die_with_parent`).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import multiprocessing as mp
import os
import signal
import sys
import tempfile
import threading
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping
from multiprocessing.connection import Connection
from typing import Any

from schemas.machine import process_alive
from schemas.signals import ignore_stop_signals

Handler = Callable[[Any], Any]


class WorkerTimeout(Exception):
    """The request did not finish in time; the worker was killed (and will respawn)."""


class WorkerCrashed(Exception):
    """The worker died while serving the request (segfault, os._exit, OOM kill)."""


class WorkerError(Exception):
    """The handler raised; the text carries the child's traceback."""


QUIET_WARNINGS = ("TRITON_DEFAULT_FP_FUSION is unset",)
"""Warnings every worker would print once per process: noise in a harvest's output."""


PR_SET_PDEATHSIG = 1
"""``prctl`` option from <linux/prctl.h>: the signal this process gets when its parent dies."""

PRELOAD = ("corpus.harvest.preload",)
"""What the fork server imports before it forks any worker (see :mod:`corpus.harvest.preload`)."""
START_METHOD = "forkserver" if sys.platform.startswith("linux") else "spawn"
"""How workers start: forked from the preloaded server on Linux, fresh interpreters elsewhere."""
_context_lock = threading.Lock()


def worker_context() -> mp.context.BaseContext:
    """The multiprocessing context workers start in (:data:`START_METHOD`), its fork server
    set to preload :data:`PRELOAD` (effective when this process has not started one yet)."""
    context = mp.get_context(START_METHOD)
    if START_METHOD == "forkserver":
        with _context_lock:
            context.set_forkserver_preload(list(PRELOAD))
    return context


def start_fork_server() -> None:
    """Start the fork server now, so its imports overlap this process's own (the harvest calls
    this before it loads the suite); later workers fork from it at once. No-op without one."""
    if START_METHOD == "forkserver":
        from multiprocessing import forkserver

        worker_context()
        forkserver.ensure_running()


@contextlib.contextmanager
def main_module_hidden() -> Iterator[None]:
    """While the block starts a worker, the parent's ``__main__`` names no file or module, so
    multiprocessing does not import it again in the child. A user's script that calls into
    kernel-corpus (the Triton plug-in) may have no ``if __name__ == "__main__"`` guard: the
    child would run its workload again, set ``TRITON_INTERPRET`` as the script does, and load
    kernels under the interpreter. Workers import nothing from ``__main__``."""
    main = sys.modules["__main__"]
    with _context_lock:
        saved = {name: main.__dict__[name] for name in ("__file__", "__spec__") if name in main.__dict__}
        main.__dict__.pop("__file__", None)
        main.__spec__ = None
        try:
            yield
        finally:
            main.__dict__.update(saved)
            if "__spec__" not in saved:
                del main.__spec__


def die_with_parent(owner_pid: int) -> None:
    """Have the kernel SIGKILL this process when its parent dies (Linux), and exit now if the
    process ``owner_pid`` that asked for this worker is already gone.

    Called first thing in a worker. The parent is ``owner_pid`` itself (``spawn``) or the fork
    server, which exits when ``owner_pid`` does. The death signal fires when the *thread* that
    created the child exits, so workers are started by threads that outlive them (lane threads,
    the compile pool's threads; the fork server's one thread). No-op elsewhere: there,
    :meth:`WorkerProcess.close` is the only cleanup."""
    if not sys.platform.startswith("linux"):
        return
    _release_fork_server()
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent or not process_alive(owner_pid):  # died before the signal was armed
        os._exit(1)


def _release_fork_server() -> None:
    """Close this worker's copy of the fork server's liveness pipe.

    A forked child inherits the write end of the pipe whose EOF tells the fork server that its
    clients are gone, so a server never exits while one of its children lives; those children
    then wait for a parent death that never comes (a SIGKILLed harvest would leave them busy
    forever). Without the copy, the server exits with the harvest, and every worker's death
    signal fires. Workers start no processes of their own, so nothing needs the server after them."""
    from multiprocessing import forkserver

    server = forkserver._forkserver  # the module's singleton; a spawned process has no fd here
    alive = getattr(server, "_forkserver_alive_fd", None)
    if alive is not None:
        os.close(alive)
        server._forkserver_alive_fd = None


def _serve(
    connection: Connection,
    factory: str,
    init: Any,
    environment: Mapping[str, str],
    parent_pid: int,
    niceness: int,
) -> None:
    die_with_parent(parent_pid)
    ignore_stop_signals()  # the harvest stops its workers; an interrupted request would answer an error
    if niceness:
        os.nice(niceness)  # compile workers yield the cores to the benchmark workers
    os.environ.update(environment)  # before the handler imports Triton or kernel modules
    tempfile.tempdir = None  # the fork server may have resolved TMPDIR before ours was set
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
            try:
                connection.send(("ok", handler(request)))
            except BaseException:
                connection.send(("error", traceback.format_exc(limit=8)))
        except (BrokenPipeError, ConnectionResetError):
            # the harvest that asked is gone (SIGKILLed, or it closed the pipe): nobody to
            # answer. Raised on, it printed two BrokenPipeError tracebacks into the job's log
            # ("Process compile-1: ...") after a killed harvest, as if the worker had failed.
            return


class WorkerProcess:
    """A child process serving ``factory(init)`` as a request handler.

    ``factory`` is ``"module:callable"``, imported in the child after ``environment`` is
    applied; ``callable(init)`` returns the handler. ``start_timeout_s`` bounds start-up
    (imports of torch and Triton take seconds). ``niceness`` is added to the child's
    scheduling niceness (compile workers run below the benchmark workers). ``import_main``
    False: the child does not import the parent's ``__main__`` (:func:`main_module_hidden`;
    for workers started from a user's script).
    """

    def __init__(
        self,
        name: str,
        factory: str,
        init: Any,
        environment: Mapping[str, str],
        *,
        start_timeout_s: float = 180.0,
        niceness: int = 0,
        import_main: bool = True,
    ) -> None:
        self.name = name
        self.import_main = import_main
        self.factory = factory
        self.init = init
        self.environment = dict(environment)
        self.start_timeout_s = start_timeout_s
        self.niceness = niceness
        self.restarts = 0
        self._process: mp.process.BaseProcess | None = None
        self._connection: Connection | None = None
        self._lock = threading.Lock()
        """Guards taking the child away: a harvest that stops kills workers from its main thread
        while their owners' threads may be killing them too (a closed pipe's file descriptor
        closed twice is somebody else's file by then)."""

    def start(self) -> None:
        context = worker_context()
        parent, child = context.Pipe()
        process = context.Process(
            target=_serve,
            args=(child, self.factory, self.init, self.environment, os.getpid(), self.niceness),
            name=self.name,
            daemon=True,
        )
        with contextlib.nullcontext() if self.import_main else main_module_hidden():
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

    @property
    def pid(self) -> int | None:
        """The running child's process id (None when none runs)."""
        return self._process.pid if self.alive and self._process is not None else None

    def call(self, request: Any, timeout_s: float) -> Any:
        """Send ``request`` and wait at most ``timeout_s`` for the handler's result. A child
        that died since the last request (OOM killer, a crash while idle) is replaced first."""
        if not self.alive:
            if self._process is not None:
                self.kill()  # reap the dead child, close its pipe; counts as a restart
            self.start()
        connection = self._connection
        if connection is None:
            raise WorkerCrashed(f"worker {self.name} was stopped")  # by another thread, just now
        try:
            connection.send(request)
        except (BrokenPipeError, ConnectionResetError, EOFError):
            self.kill()  # died between the liveness check and the send: one fresh try
            self.start()
            assert self._connection is not None
            connection = self._connection
            connection.send(request)
        try:
            ready = connection.poll(timeout_s)
        except OSError as exc:  # "handle is closed": another thread's kill closed the pipe
            self._raise_if_stopped_meanwhile(connection, exc)
            raise
        if not ready:
            self.kill()
            raise WorkerTimeout(f"worker {self.name}: no answer within {timeout_s:g} s; killed")
        try:
            kind, payload = connection.recv()
        except (EOFError, ConnectionResetError) as exc:
            code = None
            if (process := self._process) is not None:
                process.join(timeout=5)  # the pipe closes a moment before the exit code is known
                code = process.exitcode
            self.kill()
            raise WorkerCrashed(f"worker {self.name} died (exit code {code})") from exc
        except OSError as exc:  # the kill's close came between the poll and the recv
            self._raise_if_stopped_meanwhile(connection, exc)
            raise
        if kind == "error":
            raise WorkerError(payload)
        return payload

    def _raise_if_stopped_meanwhile(self, connection: Connection, exc: OSError) -> None:
        """Raise :class:`WorkerCrashed` (from ``exc``, the failed read of ``connection``) when
        another thread's :meth:`kill` or :meth:`close` took the worker's pipe meanwhile: a
        stopping harvest kills workers that lane threads wait on, the child's death wakes the
        waiter, and its read then meets the pipe the kill closed ("handle is closed")."""
        if self._connection is not connection:
            raise WorkerCrashed(f"worker {self.name} was stopped while a call waited on it") from exc

    def kill(self) -> None:
        """SIGKILL the child (if running); the next :meth:`call` starts a fresh one. Safe from
        any thread, and twice at once: one caller takes the child, the other finds none."""
        process, connection = self._take()
        if process is not None:
            if process.is_alive():
                process.kill()
            process.join(timeout=10)
            self.restarts += 1
        if connection is not None:
            connection.close()  # after the child died: a reader blocked on it sees the end first

    def close(self) -> None:
        """Ask the child to exit; kill it if it does not."""
        process, connection = self._take()
        if process is not None and connection is not None and process.is_alive():
            try:
                connection.send(None)
                process.join(timeout=5)
            except OSError:  # it died meanwhile
                pass
        if process is not None and process.is_alive():
            process.kill()
            process.join(timeout=10)
            self.restarts += 1
        if connection is not None:
            connection.close()

    def _take(self) -> tuple[mp.process.BaseProcess | None, Connection | None]:
        """The child and its pipe, no longer this worker's (None, None when it has none)."""
        with self._lock:
            process, connection = self._process, self._connection
            self._process = self._connection = None
        return process, connection
