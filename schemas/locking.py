"""Advisory locks inside a dataset root (``ROOT/.locks/<name>.lock``), held with ``flock``.

Three uses: every command that rewrites or deletes files (``compact``, ``scrub``,
``check --fix``, the harvest's own final compaction) holds the one **maintenance lock**
(:func:`maintenance_lock`), so they take turns instead of replacing each other's files; a
harvest holds a lock per plan (a second identical harvest stops at once), and a claim per
run while it measures it (:mod:`corpus.harvest.claims`).

A lock lives as long as its open file, so a killed holder releases it. Lock files hold one
line naming the holder for the message another process gets: the command, its pid and the
anonymous machine id (:mod:`schemas.machine`), never the host name, because lock files travel
with a copied dataset. Locks exist only for local datasets: on an fsspec URL (object stores
have no flock) :func:`dataset_lock` yields ``None`` and the caller says so.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import posixpath
import re
import stat
from collections.abc import Callable, Iterator
from typing import TextIO

import pyarrow.fs as pafs

from schemas.errors import DatasetError
from schemas.machine import anonymize_host, host_name, process_alive
from schemas.storage import Location

LOCK_DIR = ".locks"
"""Hidden, so readers never see it."""

MAINTENANCE = "maintenance"
"""The lock every file-rewriting command holds."""


class LockHeldError(DatasetError):
    """Another process holds the lock; ``holder`` is what it wrote into the lock file."""

    def __init__(self, path: str, holder: str) -> None:
        self.path = path
        self.holder = holder
        super().__init__(f"{path} is held by {holder or 'another process'}")


def holder_line(what: str) -> str:
    """``what`` (a command), this process's pid and the anonymous id of this machine."""
    return f"{what} (pid {os.getpid()} on {anonymize_host(host_name())})"


_HOLDER_PROCESS = re.compile(r"\(pid (\d+) on (\S+)\)$")
"""The pid and machine id at the end of a :func:`holder_line`."""


def lock_path(loc: Location, name: str) -> str:
    return posixpath.join(loc.root, LOCK_DIR, f"{name}.lock")


def is_lockable(loc: Location) -> bool:
    """True for local datasets (flock works there)."""
    return isinstance(loc.fs, pafs.LocalFileSystem)


class FileLock:
    """The advisory lock ``ROOT/.locks/<name>.lock``, taken by :meth:`acquire` and given back
    by :meth:`release` (or by the process ending). Local datasets only."""

    def __init__(self, loc: Location, name: str, holder: str) -> None:
        self.path = lock_path(loc, name)
        self.holder = holder
        self._handle = None

    @property
    def held(self) -> bool:
        return self._handle is not None

    def acquire(self, *, wait: bool, on_wait: Callable[[str], None] | None = None) -> bool:
        """Take the lock. Busy: with ``wait``, call ``on_wait(holder)`` once and block until it
        is free; without, return False. Raises DatasetError when the lock file cannot be
        made (read-only storage)."""
        try:
            _refuse_linked_directories(self.path)  # before makedirs, which would follow one
            os.makedirs(posixpath.dirname(self.path), exist_ok=True)
            handle = _open_lock_file(self.path, create=True)
        except OSError as exc:
            raise DatasetError(
                f"{self.path}: cannot take the lock ({exc.strerror or exc})"
            ) from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                handle.close()
                return False
            if on_wait is not None:
                on_wait(self.current_holder())
            fcntl.flock(handle, fcntl.LOCK_EX)
        except BaseException:
            handle.close()
            raise
        handle.seek(0)
        handle.truncate()
        handle.write(self.holder)
        handle.flush()
        self._handle = handle
        return True

    def current_holder(self) -> str:
        """The line the holder wrote ('' when unknown)."""
        try:
            with _open_lock_file(self.path, create=False) as handle:
                return handle.read().strip()
        except (OSError, DatasetError):
            return ""

    def release(self) -> None:
        handle, self._handle = self._handle, None
        if handle is None:
            return
        with contextlib.suppress(OSError):  # the line says nothing once the lock is free
            handle.seek(0)
            handle.truncate()
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def _open_lock_file(path: str, *, create: bool) -> TextIO:
    """``path`` opened to take the lock (``create``: read and write, made when missing) or to
    read its holder line (read only), never through a
    symbolic link and only when it is a regular file: lock files travel with a copied dataset,
    and ``.locks/maintenance.lock -> ~/.bashrc`` in a downloaded one would otherwise have the
    next ``compact`` truncate the link's target and write its holder line there (a FIFO would
    hang it). DatasetError naming the file otherwise."""
    access = os.O_RDWR | os.O_CREAT if create else os.O_RDONLY  # the holder takes it; others read
    flags = access | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        descriptor = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise DatasetError(
                f"{path}: a symbolic link, not a lock file; kernel-corpus will not write through "
                "it (remove it: lock files are made as needed)"
            ) from None
        raise
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise DatasetError(f"{path}: not a regular file, so not a lock file (remove it)")
    os.set_blocking(descriptor, True)
    return open(descriptor, "a+" if create else "r")  # the caller owns it


def read_record(path: str) -> str | None:
    """The text of a small record kept beside the locks (``.locks/*.pending``), read as lock
    files are (never through a symbolic link, only a regular file: a FIFO would hang the
    reader, a link would feed it another file's content); None when it is missing.
    DatasetError naming the file otherwise."""
    try:
        with _open_lock_file(path, create=False) as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _refuse_linked_directories(path: str) -> None:
    """DatasetError when the dataset's ``.locks`` directory, or one inside it on the way to
    ``path``, is a symbolic link: lock files would be made, and truncated, where it points."""
    directory = posixpath.dirname(path)
    while directory not in ("", "/"):
        if os.path.islink(directory):
            raise DatasetError(
                f"{directory}: a symbolic link; kernel-corpus keeps its lock files in the dataset "
                "itself and will not follow it (remove it)"
            )
        if posixpath.basename(directory) == LOCK_DIR:
            return
        directory = posixpath.dirname(directory)


@contextlib.contextmanager
def dataset_lock(
    loc: Location,
    name: str,
    *,
    wait: bool,
    holder: str = "",
    on_wait: Callable[[str], None] | None = None,
) -> Iterator[str | None]:
    """Hold the advisory lock ``name`` of the dataset while the block runs.

    ``wait``: block until it is free (calling ``on_wait(holder)`` first when it is busy);
    otherwise raise :class:`LockHeldError` at once. ``holder``: a line written into the lock
    file for the message another process gets (:func:`holder_line`). Yields the lock file's
    path, or None for a non-local dataset (no lock taken).
    """
    if not is_lockable(loc):
        yield None
        return
    lock = FileLock(loc, name, holder)
    if not lock.acquire(wait=wait, on_wait=on_wait):
        raise LockHeldError(lock.path, lock.current_holder())
    try:
        yield lock.path
    finally:
        lock.release()


def maintenance_lock(
    loc: Location, command: str, on_wait: Callable[[str], None] | None = None
) -> contextlib.AbstractContextManager[str | None]:
    """The dataset's maintenance lock, waited for: every command that rewrites or deletes
    files holds it, so they never work on one dataset at once. ``on_wait(holder)`` is called
    when another command holds it (e.g. to say what this one waits for)."""
    return dataset_lock(loc, MAINTENANCE, wait=True, holder=holder_line(command), on_wait=on_wait)


def lock_files(loc: Location) -> list[str]:
    """Every lock file under ``DIR/.locks/`` (local datasets; empty elsewhere)."""
    if not is_lockable(loc):
        return []
    found = []
    for directory, _, names in os.walk(posixpath.join(loc.root, LOCK_DIR)):
        found += [posixpath.join(directory, n) for n in names if n.endswith(".lock")]
    return sorted(found)


def clear_idle_locks(loc: Location) -> int:
    """Empty the holder line of every lock no process holds (a lock file of an older version
    may name the host of a killed holder, and lock files travel with a copied dataset);
    returns how many lines were cleared. Held locks are left alone."""
    cleared = 0
    for path in lock_files(loc):
        name = posixpath.relpath(path, posixpath.join(loc.root, LOCK_DIR)).removesuffix(".lock")
        lock = FileLock(loc, name, "")
        if lock.current_holder() and lock.acquire(wait=False):
            lock.release()  # releasing empties the line
            cleared += 1
    return cleared


def _holder_lines(loc: Location) -> Iterator[tuple[str, str]]:
    """(lock file, its holder line) of every readable lock file of the dataset."""
    for path in lock_files(loc):
        try:
            with _open_lock_file(path, create=False) as handle:
                yield path, handle.read().strip()
        except (OSError, DatasetError):
            continue


def holders_naming_hosts(loc: Location) -> list[str]:
    """Lock files whose holder line is not an anonymous one (written by older versions)."""
    return [path for path, line in _holder_lines(loc) if line and "anon-" not in line]


def live_holders(loc: Location) -> list[str]:
    """The distinct holder lines of this dataset's locks that name a live process of this
    machine other than this one (e.g. a harvest writing into it), in lock-file order.

    Read only: no lock is taken to find out, so a command starting meanwhile is never refused
    because of this look. A holder on another machine (a dataset on a shared file system) is
    not seen; a line left by a killed holder whose pid was reused is taken for live.
    """
    here = anonymize_host(host_name())
    holders: list[str] = []
    for _, line in _holder_lines(loc):
        match = _HOLDER_PROCESS.search(line)
        if not match or match.group(2) != here or line in holders:
            continue
        pid = int(match.group(1))
        if pid != os.getpid() and process_alive(pid):
            holders.append(line)
    return holders
