"""Where a command is about to write a dataset: refused before any work if it is not one.

Commands that create or add to a dataset (the harvest, ``corpus.record``, ``corpus.ingest``)
call :func:`prepare_destination` first, so a wrong ``--out`` costs nothing: an empty value
(an unset variable in a script must not mean the current directory), a non-empty directory
that holds no dataset (a project directory, whose README.md the card would replace), a
``README.md`` or ``card.json`` kernel-corpus did not write, and storage that cannot take files
are each refused in one line naming the destination. ``force`` accepts the second and third.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs

from schemas.card import check_card_files
from schemas.errors import DatasetError
from schemas.locking import LOCK_DIR
from schemas.storage import Location, probe_writable, resolve
from schemas.tables import TABLES

OWN_ENTRIES = frozenset({*TABLES, LOCK_DIR})
"""Entries of a dataset root that only kernel-corpus makes (a README.md may be anyone's)."""

SHOWN = 3


def foreign_entries(loc: Location) -> list[str] | None:
    """Names at the root of ``loc`` that no dataset has, when the root holds no table (None:
    it holds a dataset, or nothing, or does not exist)."""
    try:
        infos = loc.fs.get_file_info(pafs.FileSelector(loc.root, allow_not_found=True))
    except (OSError, pa.ArrowException):  # not a directory: the write probe says so
        return None
    names = sorted(posixpath.basename(info.path.rstrip("/")) for info in infos)
    if any(name in TABLES for name in names):
        return None
    foreign = [name for name in names if name not in OWN_ENTRIES]
    return foreign or None


def check_destination(url: str, *, force: bool = False, force_flag: str = "--force") -> Location:
    """The checks of :func:`prepare_destination` that write nothing (a dry run's): refuse
    ``url`` (DatasetError, one line) when it is empty, a file, a non-empty directory holding no
    dataset, or a dataset root whose README.md or card.json kernel-corpus did not write
    (``force`` accepts these two; ``force_flag`` is the option the message names)."""
    if not url.strip():
        raise DatasetError("'': an empty destination; give a directory or URL")
    loc = resolve(url)
    if _is_file(loc):  # worded as the write probe words it, which finds it too
        raise DatasetError(f"{url}: cannot write the dataset there (Not a directory)")
    if not force:
        foreign = foreign_entries(loc)
        if foreign:
            shown = ", ".join(foreign[:SHOWN]) + (f" and {len(foreign) - SHOWN} more" if len(foreign) > SHOWN else "")
            raise DatasetError(
                f"{url}: a non-empty directory that holds no dataset ({shown}); "
                f"use a new or empty directory, or pass {force_flag}"
            )
        check_card_files(url, force_flag=force_flag)
    return loc


def _is_file(loc: Location) -> bool:
    try:
        return loc.fs.get_file_info(loc.root).type == pafs.FileType.File
    except (OSError, pa.ArrowException):  # unreachable storage: the write probe says why
        return False


def prepare_destination(url: str, *, force: bool = False, force_flag: str = "--force") -> None:
    """Refuse ``url`` as a dataset destination (DatasetError, one line, before any work) when
    :func:`check_destination` does, or when the storage cannot take files; creates the table
    directories otherwise."""
    loc = check_destination(url, force=force, force_flag=force_flag)
    probe_writable(loc, list(TABLES))


@dataclass(frozen=True)
class NewDirectories:
    """The directories of a destination that did not exist when a command began: the root and
    the parents it lacked, and its table directories. A command refused after
    :func:`prepare_destination` made them takes them away again (:meth:`remove_empty`), so a
    refusal leaves the destination as it found it: absent stays absent, a dataset unchanged."""

    loc: Location
    paths: tuple[str, ...]
    """Deepest first: the table directories, then the root, then its new parents."""

    @classmethod
    def at(cls, url: str) -> NewDirectories | None:
        """What of ``url`` does not exist now; None when the destination cannot be looked at
        (an empty value, an unknown scheme, unreachable storage: refusals of their own)."""
        if not url.strip():
            return None
        try:
            loc = resolve(url)
            missing = [loc.table_dir(table) for table in TABLES if not _exists(loc, loc.table_dir(table))]
            path = loc.root
            while not _exists(loc, path) and posixpath.dirname(path) != path:
                missing.append(path)
                path = posixpath.dirname(path)
        except Exception:  # best effort: the command's own checks refuse such a destination
            return None
        return cls(loc, tuple(missing))

    def remove_empty(self) -> None:
        """Remove each of :attr:`paths` that is an empty directory now, deepest first; one that
        holds anything (a file another command wrote meanwhile) stays, and so do its parents."""
        for path in self.paths:
            with contextlib.suppress(OSError, pa.ArrowException):  # absent, or not empty: it stays
                _remove_if_empty(self.loc, path)


def _remove_if_empty(loc: Location, path: str) -> None:
    if isinstance(loc.fs, pafs.LocalFileSystem):
        os.rmdir(path)  # fails on a directory that is not empty, at once (no check-then-delete)
    elif not loc.fs.get_file_info(pafs.FileSelector(path)):
        loc.fs.delete_dir(path)  # which would remove what is inside too: only when empty


def _exists(loc: Location, path: str) -> bool:
    return loc.fs.get_file_info(path).type != pafs.FileType.NotFound
