"""Verdicts on a table's set of files, remembered, so a reader checks a file set's keys once.

Files never change once they appear: writers add files by atomic rename, and maintenance
commands replace files by new ones with new names. So a table's live files, named with their
sizes, modification times and storage versions (:class:`schemas.storage.FileStat`: a local
file's status-change time and inode, an object's ETag or generation, which a person or tool
writing over a file cannot carry over as ``cp -p`` carries the mtime), identify its rows, and the verdict "no key repeats" (the
check behind :class:`schemas.errors.RepeatedKeyError`, which costs a group-by over every key
of the table) holds for as long as that set is unchanged. Readers ask :func:`known` before
checking and :func:`remember` after a check passed.

Verdicts live in this process and, when the user cache is writable, in
``$XDG_CACHE_HOME/kernel-corpus/verified/`` (one small file per dataset table holding the
fingerprint of the last file set found sound), so later processes skip the check too. Only
sound verdicts are kept; a changed, added or removed file changes the fingerprint and the
check runs again. ``python -m schemas check`` never relies on them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
from collections.abc import Sequence
from pathlib import Path

from schemas.machine import default_state_dir
from schemas.storage import FileStat, Location

_MEMORY_LIMIT = 4096
_memory: dict[str, str] = {}
"""(dataset, table) slot -> fingerprint of the file set found sound, in this process."""


def fingerprint(loc: Location, table: str, files: Sequence[FileStat]) -> tuple[str, str]:
    """(slot, fingerprint): the slot names the dataset's table, the fingerprint its live files
    (path relative to the root and :attr:`FileStat.identity`: size, modification time and
    storage version, so a file written over in place with its size and mtime kept is a new
    set)."""
    slot = hashlib.sha256(json.dumps([loc.url, loc.root, table]).encode()).hexdigest()[:32]
    entries = sorted(
        (os.path.relpath(f.path, loc.root) if f.path.startswith(loc.root) else f.path, *f.identity)
        for f in files
    )
    digest = hashlib.sha256(json.dumps([slot, entries]).encode()).hexdigest()
    return slot, digest


def _directory() -> Path:
    return default_state_dir() / "verified"


def known(loc: Location, table: str, files: Sequence[FileStat]) -> bool:
    """True when this exact file set of ``table`` was found sound before."""
    slot, digest = fingerprint(loc, table, files)
    if _memory.get(slot) == digest:
        return True
    try:
        stored = (_directory() / slot).read_text().strip()
    except (OSError, ValueError):
        return False
    if stored == digest:
        _remember_in_memory(slot, digest)
        return True
    return False


def remember(loc: Location, table: str, files: Sequence[FileStat]) -> None:
    """Record that this file set of ``table`` is sound (best effort: a cache that cannot be
    written only costs the next process the check)."""
    slot, digest = fingerprint(loc, table, files)
    _remember_in_memory(slot, digest)
    directory = _directory()
    temporary = directory / f".{slot}-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        temporary.write_text(digest + "\n")
        os.replace(temporary, directory / slot)  # whole or not at all
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()


def forget(loc: Location, table: str) -> None:
    """Drop what is remembered about ``table`` of ``loc`` (here and in the user cache): the
    next read checks its keys again (benchmarks of that first read)."""
    slot, _ = fingerprint(loc, table, [])
    _memory.pop(slot, None)
    with contextlib.suppress(OSError):
        (_directory() / slot).unlink()


def forget_all() -> None:
    """Drop the verdicts of this process (the user cache keeps its own)."""
    _memory.clear()


def _remember_in_memory(slot: str, digest: str) -> None:
    if len(_memory) >= _MEMORY_LIMIT:
        _memory.clear()
    _memory[slot] = digest
