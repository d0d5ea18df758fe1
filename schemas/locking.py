"""Advisory locks inside a dataset root (``ROOT/.locks/<name>.lock``), held with ``flock``.

Used so that two ``compact`` runs, or two identical harvests, do not work on one dataset at
once. The lock lives as long as the open file, so a killed holder releases it. Locks exist
only for local datasets: on an fsspec URL (object stores have no flock) :func:`dataset_lock`
yields ``None`` and the caller says so.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import posixpath
from collections.abc import Iterator

import pyarrow.fs as pafs

from schemas.errors import DatasetError
from schemas.storage import Location

LOCK_DIR = ".locks"
"""Hidden, so readers never see it."""


class LockHeldError(DatasetError):
    """Another process holds the lock; ``holder`` is what it wrote into the lock file."""

    def __init__(self, path: str, holder: str) -> None:
        self.path = path
        self.holder = holder
        super().__init__(f"{path} is held by {holder or 'another process'}")


def lock_path(loc: Location, name: str) -> str:
    return posixpath.join(loc.root, LOCK_DIR, f"{name}.lock")


@contextlib.contextmanager
def dataset_lock(loc: Location, name: str, *, wait: bool, holder: str = "") -> Iterator[str | None]:
    """Hold the advisory lock ``name`` of the dataset while the block runs.

    ``wait``: block until it is free; otherwise raise :class:`LockHeldError` at once.
    ``holder``: a line written into the lock file for the message another process gets.
    Yields the lock file's path, or None for a non-local dataset (no lock taken).
    """
    if not isinstance(loc.fs, pafs.LocalFileSystem):
        yield None
        return
    path = lock_path(loc, name)
    os.makedirs(posixpath.dirname(path), exist_ok=True)
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            handle.seek(0)
            raise LockHeldError(path, handle.read().strip()) from None
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(holder)
            handle.flush()
            yield path
        finally:
            handle.seek(0)
            handle.truncate()
            fcntl.flock(handle, fcntl.LOCK_UN)
