"""The last step of a harvest, and how a rerun completes it when the harvest was killed.

When its runs are done, a harvest merges the files it wrote and refreshes the dataset card. A
harvest killed before or during that step leaves its files uncompacted and no card, and a
rerun of the same command finds every run committed. So, while it holds its plan lock
(:func:`corpus.harvest.checks.harvest_lock`), a harvest records its writer id (the prefix of
every file it writes) in ``DIR/.locks/harvest-<plan>.pending`` before it writes, and removes
it once the card is written. A later harvest of the same plan, holding the same lock, finds
there the writer ids of predecessors that did not finish, and compacts their files and
refreshes the card along with its own, even when it has no run left to do.
(:func:`corpus.harvest.app.harvesting` does this for a harvest on one machine and on Ray; a
Ray harvest records its token, the prefix of every lane writer's id, in every incarnation.)

Local datasets only (the plan lock, which makes the record safe to update, is a flock).
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import secrets
from collections.abc import Iterable

from schemas.errors import DatasetError, TableNotFoundError
from schemas.locking import LOCK_DIR, is_lockable, read_record
from schemas.storage import list_parquet, read_footer, resolve
from schemas.tables import TABLES


class PendingFinish:
    """The writer ids of harvests of one plan whose last step is not done."""

    def __init__(self, out: str, lock_name: str) -> None:
        loc = resolve(out)
        self.out = out
        self.path = posixpath.join(loc.root, LOCK_DIR, f"{lock_name}.pending")

    @classmethod
    def of(cls, out: str, lock_name: str) -> PendingFinish | None:
        """The record for the plan whose lock is ``lock_name`` (None: not a local dataset)."""
        return cls(out, lock_name) if is_lockable(resolve(out)) else None

    def writers(self) -> list[str]:
        """Writer ids recorded (empty when the file is absent or unreadable). DatasetError when
        it is a link or not a regular file (:func:`schemas.locking.read_record`)."""
        try:
            text = read_record(self.path)
            ids = json.loads(text) if text is not None else []
        except (OSError, ValueError):
            return []
        return [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []

    def add(self, writer_id: str) -> None:
        self._store([*self.writers(), writer_id])

    def remove(self, writer_ids: Iterable[str]) -> None:
        gone = set(writer_ids)
        left = [i for i in self.writers() if i not in gone]
        if left:
            self._store(left)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)

    def _store(self, ids: list[str]) -> None:
        temporary = f"{self.path}.{os.getpid()}-{secrets.token_hex(4)}"
        try:
            os.makedirs(posixpath.dirname(self.path), exist_ok=True)
            with open(temporary, "w") as handle:
                json.dump(ids, handle)
            os.replace(temporary, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise DatasetError(f"{self.path}: cannot record the harvest ({exc.strerror or exc})") from None


def files_of(out: str, writer_ids: Iterable[str], tables: Iterable[str] = TABLES) -> list[str]:
    """Paths of the live files in ``out`` (of ``tables``, default all) written by ``writer_ids``
    (their names start with ``part-<writer id>-``, see :class:`schemas.DatasetWriter`; a writer
    id's prefix up to a ``-`` names all the writers that share it)."""
    prefixes = tuple(f"part-{writer_id}-" for writer_id in writer_ids)
    if not prefixes:
        return []
    loc = resolve(out)
    found = []
    for table in tables:
        try:
            paths = list_parquet(loc, table)
        except TableNotFoundError:  # a table this dataset does not have (yet)
            continue
        found += [p for p in paths if posixpath.basename(p).startswith(prefixes)]
    return found


def runs_committed_by(out: str, writer_id: str) -> int:
    """How many runs the files of ``writer_id`` (or of every writer whose id it prefixes: a Ray
    harvest's lanes) in ``out`` commit: the rows of their ``runs`` files (a run is committed when
    its ``runs`` row lands). Files merged by a compaction since are not counted."""
    loc = resolve(out)
    return sum(read_footer(loc, path).num_rows for path in files_of(out, [writer_id], ["runs"]))
