"""A local filesystem that fails chosen writes, registered with fsspec as ``faulty://``.

``faulty:///abs/path`` is the local directory ``/abs/path``; the dataset code reaches it
through its ordinary fsspec path (pyarrow's FSSpecHandler), so what is exercised is the real
writer and reader. :class:`FaultPlan` says which writes (opening a file for writing: one per
Parquet file, temporary included) and which deletes fail and how, or that the whole storage
is read-only (writes, deletes, renames and new directories all fail with EROFS).
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

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
    fail_delete: set[int] = field(default_factory=set)
    """1-based ordinals of deletes that fail (a crash between a replacement and the delete)."""
    deletes: int = 0
    read_only: bool = False

    def on_write(self, path: str) -> None:
        self._refuse_if_read_only(path)
        self.writes += 1
        if self.writes in self.fail or (
            self.fail_from is not None and self.writes >= self.fail_from
        ):
            self.failed.append(path)
            raise OSError(errno.ENOSPC, "No space left on device", path)

    def on_delete(self, path: str) -> None:
        self._refuse_if_read_only(path)
        self.deletes += 1
        if self.deletes in self.fail_delete:
            self.failed.append(path)
            raise OSError(errno.EIO, "Input/output error", path)

    def on_change(self, path: str) -> None:
        """A rename or a new directory."""
        self._refuse_if_read_only(path)

    def _refuse_if_read_only(self, path: str) -> None:
        if self.read_only:
            self.failed.append(path)
            raise OSError(errno.EROFS, "Read-only file system", path)


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

    def rm(self, path, recursive=False, maxdepth=None):
        type(self).plan.on_delete(str(path))
        return super().rm(path, recursive=recursive, maxdepth=maxdepth)

    def mv(self, path1, path2, recursive: bool = False, **kwargs):
        type(self).plan.on_change(str(path2))
        return super().mv(path1, path2, recursive=recursive, **kwargs)

    def mkdir(self, path, create_parents=True, **kwargs):
        if not self.exists(path):
            type(self).plan.on_change(str(path))
        return super().mkdir(path, create_parents=create_parents, **kwargs)

    def makedirs(self, path, exist_ok=False):
        if not self.exists(path):
            type(self).plan.on_change(str(path))
        return super().makedirs(path, exist_ok=exist_ok)


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


@contextmanager
def tmpfs(path: Path, size: str = "4m") -> Iterator[Path]:
    """A real tmpfs mounted at ``path`` for the block (skips the test where mounting needs
    root or is not allowed); :func:`remount_read_only` turns it read-only."""
    import pytest

    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root to mount a tmpfs")
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def remount_read_only(path: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(path)], check=True)
