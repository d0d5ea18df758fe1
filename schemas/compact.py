"""Compaction: merge the small files of each partition into one, atomically.

The merged file records the names of the files it replaces in its footer
(``kernel_corpus.replaces``); readers skip replaced files from the moment the merged file
appears, so a crash between writing it and deleting the old files loses or doubles nothing.
Content-keyed tables are deduplicated on the way; the multiset of other rows is unchanged.

Every file is validated first (:mod:`schemas.validate`), and a ``runs`` or ``measurements``
partition whose rows repeat a key is refused: compaction never makes damage permanent. Two
compactions of one local dataset take turns (an advisory lock, :mod:`schemas.locking`);
harvests writing meanwhile only add files, which the next compaction merges.
"""

from __future__ import annotations

import json
import os
import posixpath
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.fs as pafs

from schemas.errors import DatasetError
from schemas.locking import dataset_lock
from schemas.reader import (
    CONTENT_KEYED,
    UNIQUE_KEYED,
    TableFiles,
    dedupe,
    lift,
    refuse_repeats,
    repeated_keys,
    table_files,
)
from schemas.storage import (
    META_REPLACES,
    STALE_TEMPORARY_AGE_S,
    Location,
    footer_version,
    read_file,
    read_footer,
    remove_stale_temporaries,
    resolve,
    write_atomic,
)
from schemas.tables import SCHEMA_VERSION, TABLES
from schemas.writer import conform, new_writer_id, with_file_metadata


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


def compact(
    url: str,
    *,
    min_files: int = 2,
    temporary_age_s: float = STALE_TEMPORARY_AGE_S,
    only: Collection[str] | None = None,
) -> CompactReport:
    """Compact the dataset at ``url``: validate every table, then merge, then delete replaced
    files and write temporaries older than ``temporary_age_s`` seconds. ``only``: merge just
    the files with these names (e.g. what one harvest wrote), leaving other files alone.

    Raises DatasetError (before anything is changed) when the dataset does not exist or a
    file is invalid.
    """
    loc = resolve(url)
    present = [name for name in TABLES if _is_dir(loc, loc.table_dir(name))]
    if not present:
        raise DatasetError(
            f"{url}: no dataset here (none of the table directories {', '.join(TABLES)} exists)"
        )
    report = CompactReport()
    holder = f"compact pid {os.getpid()}"
    with dataset_lock(loc, "compact", wait=True, holder=holder) as lock:
        if lock is None:
            report.notes.append(
                "not a local path: no lock against a concurrent `compact` (run one at a time)"
            )
        found = {name: table_files(loc, name) for name in present}  # every file valid, or raise
        for name in present:
            report.merged += _compact_table(loc, name, found[name], min_files, only)
        report.removed_temporaries = len(remove_stale_temporaries(loc, present, temporary_age_s))
    return report


def _is_dir(loc: Location, path: str) -> bool:
    return loc.fs.get_file_info(path).type == pafs.FileType.Directory


def _compact_table(
    loc: Location, name: str, found: TableFiles, min_files: int, only: Collection[str] | None = None
) -> list[CompactResult]:
    spec = TABLES[name]
    results = []
    for path in found.superseded:
        loc.fs.delete_file(path)
    by_directory: dict[str, list[str]] = defaultdict(list)
    for path in [*found.current, *found.older]:
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
        replace_files(loc, name, directory, paths, merged)
        partition = posixpath.relpath(directory, loc.table_dir(name))
        results.append(
            CompactResult(name, "" if partition == "." else partition, len(paths), merged.num_rows)
        )
    return results


def replace_files(
    loc: Location, name: str, directory: str, paths: list[str], merged: pa.Table
) -> str:
    """Replace ``paths`` (files of table ``name`` in ``directory``) by one file of ``merged``
    rows, atomically: the new file names the old ones in its footer, so readers skip them from
    the moment it appears; they are deleted after. Returns the new file's name.

    Raises DatasetError, with ``paths`` untouched, when the new file cannot be written.
    """
    replaces = json.dumps(sorted(posixpath.basename(p) for p in paths)).encode()
    table = with_file_metadata(merged, TABLES[name], {META_REPLACES: replaces})
    file_name = f"part-compact-{new_writer_id()}.parquet"
    try:
        write_atomic(loc, directory, file_name, table)
    except (OSError, pa.ArrowException) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise DatasetError(
            f"{directory}: could not write the merged file ({reason}); "
            "the files it would replace are untouched and the dataset is intact"
        ) from None
    for path in paths:
        loc.fs.delete_file(path)
    return file_name


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
