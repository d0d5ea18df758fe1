"""Compaction: merge the small files of each partition into one, atomically.

The merged file records the names of the files it replaces in its footer
(``kernel_corpus.replaces``); readers skip replaced files from the moment the merged file
appears, so a crash between writing it and deleting the old files loses or doubles nothing.
Content-keyed tables are deduplicated on the way; the multiset of other rows is unchanged.
"""

from __future__ import annotations

import json
import posixpath
from collections import defaultdict
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs

from schemas.reader import CONTENT_KEYED, dedupe, lift, table_files
from schemas.storage import (
    META_REPLACES,
    footer_version,
    read_file,
    read_footer,
    resolve,
    write_atomic,
)
from schemas.tables import SCHEMA_VERSION, TABLES
from schemas.writer import new_writer_id, with_file_metadata


@dataclass(frozen=True)
class CompactResult:
    table: str
    partition: str
    files_before: int
    rows: int


def compact_dataset(url: str, *, min_files: int = 2) -> list[CompactResult]:
    """Merge every partition with at least ``min_files`` live files; returns what was merged."""
    loc = resolve(url)
    results = []
    for name, spec in TABLES.items():
        if loc.fs.get_file_info(loc.table_dir(name)).type != pafs.FileType.Directory:
            continue
        found = table_files(loc, name)
        for path in found.superseded:
            loc.fs.delete_file(path)
        by_directory: dict[str, list[str]] = defaultdict(list)
        for path in [*found.current, *found.older]:
            by_directory[posixpath.dirname(path)].append(path)
        for directory, paths in sorted(by_directory.items()):
            if len(paths) < min_files:
                continue
            merged = _merge(loc, name, paths)
            if name in CONTENT_KEYED:
                merged = dedupe(merged, spec.key)
            replaces = json.dumps(sorted(posixpath.basename(p) for p in paths)).encode()
            table = with_file_metadata(merged, spec, {META_REPLACES: replaces})
            write_atomic(loc, directory, f"part-compact-{new_writer_id()}.parquet", table)
            for path in paths:
                loc.fs.delete_file(path)
            partition = posixpath.relpath(directory, loc.table_dir(name))
            results.append(CompactResult(name, "" if partition == "." else partition, len(paths), merged.num_rows))
    return results


def _merge(loc, name: str, paths: list[str]) -> pa.Table:
    schema = TABLES[name].schema
    pieces = []
    for path in paths:
        table = read_file(loc, path)
        version = footer_version(path, read_footer(loc, path))
        pieces.append(lift(name, table, version) if version != SCHEMA_VERSION else table.select(schema.names).cast(schema))
    return pa.concat_tables(pieces).replace_schema_metadata(None)
