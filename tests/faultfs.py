"""A local filesystem that fails chosen writes, registered with fsspec as ``faulty://``.

``faulty:///abs/path`` is the local directory ``/abs/path``; the dataset code reaches it
through its ordinary fsspec path (pyarrow's FSSpecHandler), so what is exercised is the real
writer and reader. :class:`FaultPlan` says which writes (opening a file for writing: one per
Parquet file, temporary included) fail and how.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import fsspec
from fsspec.implementations.local import LocalFileSystem

PROTOCOL = "faulty"


@dataclass
class FaultPlan:
    """Fail the writes whose 1-based ordinal is in ``fail``, or every write from ``fail_from``
    on (a disk that stays full); ``writes`` counts every write attempted."""

    fail: set[int] = field(default_factory=set)
    fail_from: int | None = None
    writes: int = 0
    failed: list[str] = field(default_factory=list)

    def on_write(self, path: str) -> None:
        self.writes += 1
        if self.writes in self.fail or (
            self.fail_from is not None and self.writes >= self.fail_from
        ):
            self.failed.append(path)
            raise OSError(errno.ENOSPC, "No space left on device", path)


class FaultyFileSystem(LocalFileSystem):
    protocol = (PROTOCOL,)
    plan = FaultPlan()

    @classmethod
    def _strip_protocol(cls, path):
        text = str(path)
        if text.startswith(f"{PROTOCOL}://"):
            text = text[len(PROTOCOL) + 3 :]
        return LocalFileSystem._strip_protocol(text)

    def _open(self, path, mode="rb", block_size=None, **kwargs):
        if any(flag in mode for flag in "wax"):
            type(self).plan.on_write(str(path))
        return super()._open(path, mode=mode, block_size=block_size, **kwargs)


@contextmanager
def faulty_storage(plan: FaultPlan) -> Iterator[FaultPlan]:
    """Register ``faulty://`` with ``plan`` for the duration of the block."""
    fsspec.register_implementation(PROTOCOL, FaultyFileSystem, clobber=True)
    previous = FaultyFileSystem.plan
    FaultyFileSystem.plan = plan
    try:
        yield plan
    finally:
        FaultyFileSystem.plan = previous


def faulty_url(path) -> str:
    return f"{PROTOCOL}://{path}"
