"""Compaction: merge the small files of each partition into one, atomically.

The merged file records the names of the files it replaces in its footer
(``kernel_corpus.replaces``); readers skip replaced files from the moment the merged file
appears (after verifying that it holds every key of theirs, :mod:`schemas.replacement`), so a
crash between writing it and deleting the old files loses or doubles nothing. Content-keyed
tables are deduplicated on the way; the multiset of other rows is unchanged.

Every file is validated first (:mod:`schemas.validate`), and a ``runs`` or ``measurements``
partition whose rows repeat a key is refused: compaction never makes damage permanent. It
holds the dataset's maintenance lock (:func:`schemas.locking.maintenance_lock`), so it takes
turns with ``scrub``, ``check --fix`` and other compactions; harvests writing meanwhile only
add files, which the next compaction merges.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.fs as pafs

from schemas.errors import DatasetError
from schemas.keys import CONTENT_KEYED, UNIQUE_KEYED, dedupe, refuse_repeats, repeated_keys
from schemas.locking import maintenance_lock
from schemas.reader import TableFiles, file_keys, keys_unique, lift, table_files
from schemas.replacement import delete_replaced, replace_files
from schemas.storage import (
    STALE_TEMPORARY_AGE_S,
    Location,
    footer_version,
    not_a_root_hint,
    read_file,
    read_footer,
    remove_stale_temporaries,
    resolve,
)
from schemas.tables import SCHEMA_VERSION, TABLES
from schemas.writer import conform


@dataclass(frozen=True)
class CompactResult:
    table: str
    partition: str
    files_before: int
    rows: int


@dataclass
class CompactReport:
    """What one compaction did: merged partitions, removed leftovers, and notes for the user."""

    merged: list[CompactResult] = field(default_factory=list)
    removed_temporaries: int = 0
    notes: list[str] = field(default_factory=list)


def compact_dataset(
    url: str, *, min_files: int = 2, temporary_age_s: float = STALE_TEMPORARY_AGE_S
) -> list[CompactResult]:
    """Merge every partition with at least ``min_files`` live files; returns what was merged."""
    return compact(url, min_files=min_files, temporary_age_s=temporary_age_s).merged


def present_tables(loc: Location) -> list[str]:
    """The tables whose directory exists under the dataset root."""
    return [
        name
        for name in TABLES
        if loc.fs.get_file_info(loc.table_dir(name)).type == pafs.FileType.Directory
    ]


def require_dataset(loc: Location) -> list[str]:
    """The tables present; DatasetError when there are none (not a dataset root)."""
    present = present_tables(loc)
    if not present:
        raise DatasetError(
            f"{loc.url}: no dataset here (none of the table directories {', '.join(TABLES)} exists)"
            f"{not_a_root_hint(loc)}"
        )
    return present


def compact(
    url: str,
    *,
    min_files: int = 2,
    temporary_age_s: float = STALE_TEMPORARY_AGE_S,
    only: Collection[str] | None = None,
    on_wait: Callable[[str], None] | None = None,
) -> CompactReport:
    """Compact the dataset at ``url``: validate every table, then merge, then delete replaced
    files and write temporaries older than ``temporary_age_s`` seconds. ``only``: merge just
    the files with these names (e.g. what one harvest wrote), leaving other files alone.
    ``on_wait(holder)``: called when another maintenance command holds the lock (this one
    then waits for it).

    Raises DatasetError (before anything is changed) when the dataset does not exist or a
    file is invalid, and when the storage refuses a write (nothing committed is lost).
    """
    if min_files < 1:
        raise ValueError(f"min_files must be at least 1, got {min_files}")
    loc = resolve(url)
    present = require_dataset(loc)
    report = CompactReport()
    with maintenance_lock(loc, "compact", on_wait) as lock:
        if lock is None:
            report.notes.append(
                "not a local path: no lock against a concurrent `compact` (run one at a time)"
            )
        found = {name: table_files(loc, name) for name in present}  # every file valid, or raise
        for name in present:
            _refuse_conflicting_copies(loc, name, found[name])
        for name in present:
            report.merged += _compact_table(loc, name, found[name], min_files, only)
        try:
            report.removed_temporaries = len(remove_stale_temporaries(loc, present, temporary_age_s))
        except OSError as exc:
            report.notes.append(f"stale temporaries not removed ({exc.strerror or exc})")
    return report


def _compact_table(
    loc: Location, name: str, found: TableFiles, min_files: int, only: Collection[str] | None = None
) -> list[CompactResult]:
    spec = TABLES[name]
    results = []
    for path in found.superseded:
        delete_replaced(loc, path)
    by_directory: dict[str, list[str]] = defaultdict(list)
    for path in found.live:
        if only is None or posixpath.basename(path) in only:
            by_directory[posixpath.dirname(path)].append(path)
    for directory, paths in sorted(by_directory.items()):
        if len(paths) < min_files:
            continue
        merged = merge_files(loc, name, paths)
        if name in CONTENT_KEYED:
            merged = dedupe(merged, spec.key)
        if name in UNIQUE_KEYED:
            try:
                refuse_repeats(name, repeated_keys(merged, spec.key))
            except DatasetError as exc:
                raise DatasetError(f"{directory}: not compacted: {exc}") from None
        replace_files(loc, name, directory, paths, merged, read_keys=key_reader(loc, name))
        partition = posixpath.relpath(directory, loc.table_dir(name))
        results.append(
            CompactResult(name, "" if partition == "." else partition, len(paths), merged.num_rows)
        )
    return results


def _refuse_conflicting_copies(loc: Location, name: str, found: TableFiles) -> None:
    """Copies of a content key that differ in a fixed column (a forged or corrupt row):
    merging would keep one at random and delete the evidence, so nothing is compacted. The
    readers' check (:func:`schemas.reader.keys_unique`: the fixed columns are read only when
    a key repeats)."""
    if name not in CONTENT_KEYED or not TABLES[name].fixed:
        return  # runs/measurements: repeats are refused partition by partition below
    try:
        keys_unique(loc, name, found)
    except DatasetError as exc:
        raise DatasetError(f"not compacted: {exc}") from None


def key_reader(loc: Location, name: str) -> Callable[[str], pa.Table]:
    """path -> the identity columns (key, fixed columns) of that file of table ``name``,
    lifted to the current schema."""
    return lambda path: file_keys(loc, name, path, footer_version(path, read_footer(loc, path)))


def merge_files(loc: Location, name: str, paths: list[str]) -> pa.Table:
    """The rows of ``paths`` (files of table ``name``) in order, lifted to the current schema."""
    spec = TABLES[name]
    pieces = []
    for path in paths:
        table = read_file(loc, path)
        version = footer_version(path, read_footer(loc, path))
        pieces.append(
            lift(name, table, version) if version != SCHEMA_VERSION else conform(spec, table)
        )
    return pa.concat_tables(pieces).replace_schema_metadata(None)
