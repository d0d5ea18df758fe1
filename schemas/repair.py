"""Repair of repeated keys: the damage the old, non-idempotent flush left behind.

A retried flush could write the same ``runs`` or ``measurements`` rows twice; readers refuse
such a table (:class:`schemas.errors.RepeatedKeyError`). :func:`repair_repeats` rewrites each
affected partition into one file keeping the first row of every key, through the atomic
replacement of files (:func:`schemas.replacement.replace_files`, under the dataset's
maintenance lock), so a crash part-way loses or doubles nothing. Repeats are dropped only when they are identical
copies: rows sharing a key but differing in any column other than ``schema_version`` (the
files may predate a schema upgrade) are refused, naming the key and the files, before
anything is changed.
"""

from __future__ import annotations

import math
import posixpath
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from schemas.compact import key_reader, merge_files, present_tables
from schemas.errors import DatasetError
from schemas.keys import UNIQUE_KEYED, dedupe, repeated_keys
from schemas.locking import maintenance_lock
from schemas.reader import table_files
from schemas.replacement import replace_files
from schemas.storage import Location, resolve
from schemas.tables import TABLES

IGNORED_COLUMNS = frozenset({"schema_version"})
"""Columns that may differ between copies of one row: the version it was written under."""

_FILE = "__repair_file"


@dataclass(frozen=True)
class RepairResult:
    """One rewritten partition: ``files_before`` files became one, ``rows_dropped`` copies gone."""

    table: str
    partition: str
    files_before: int
    rows_dropped: int

    def describe(self) -> str:
        where = f"{self.table}/{self.partition}" if self.partition else self.table
        return (
            f"{where}: dropped {self.rows_dropped:,} repeated row(s); "
            f"{self.files_before} file(s) -> 1"
        )


def repair_repeats(url: str) -> list[RepairResult]:
    """Drop identical repeated rows of the unique-keyed tables (``runs``, ``measurements``) of
    the dataset at ``url``, partition by partition; returns what was rewritten (empty when
    nothing repeats).

    Raises DatasetError, before anything is changed, when a file is invalid or two rows with
    one key differ (the message names the key and the files holding it). Copies of a key in
    different partitions are left alone (``check`` still reports them).
    """
    loc = resolve(url)
    with maintenance_lock(loc, "check --fix"):
        return repair_locked(loc)


def repair_locked(loc: Location) -> list[RepairResult]:
    """:func:`repair_repeats` for a caller that holds the maintenance lock."""
    present = [name for name in present_tables(loc) if name in UNIQUE_KEYED]
    results: list[RepairResult] = []
    plans = [plan for name in sorted(present) for plan in _plan_table(loc, name)]  # refuse first
    for name, directory, paths, kept, dropped in plans:
        replace_files(loc, name, directory, paths, kept, read_keys=key_reader(loc, name), prefix="repair")
        partition = posixpath.relpath(directory, loc.table_dir(name))
        results.append(
            RepairResult(name, "" if partition == "." else partition, len(paths), dropped)
        )
    return results


Plan = tuple[str, str, list[str], pa.Table, int]


def _plan_table(loc: Location, name: str) -> list[Plan]:
    """The partitions of table ``name`` to rewrite, each with its deduplicated rows."""
    found = table_files(loc, name)  # every file valid, or raise naming it
    key = TABLES[name].key
    by_directory: dict[str, list[str]] = defaultdict(list)
    for path in sorted(found.live):
        by_directory[posixpath.dirname(path)].append(path)
    plans = []
    for directory, paths in sorted(by_directory.items()):
        rows = _tagged_rows(loc, name, paths)
        if not repeated_keys(rows, key).extra:
            continue
        _refuse_differing(name, rows, key, paths)
        kept = dedupe(rows, key).drop_columns([_FILE])
        plans.append((name, directory, paths, kept, rows.num_rows - kept.num_rows))
    return plans


def _tagged_rows(loc: Location, name: str, paths: list[str]) -> pa.Table:
    """Rows of ``paths`` in order, each tagged with the index of its file in ``paths``."""
    pieces = []
    for index, path in enumerate(paths):
        table = merge_files(loc, name, [path])
        pieces.append(table.append_column(_FILE, pa.array([index] * table.num_rows, pa.int32())))
    return pa.concat_tables(pieces)


def _refuse_differing(name: str, rows: pa.Table, key: tuple[str, ...], paths: list[str]) -> None:
    """Raise DatasetError naming a key whose rows differ beyond ``schema_version``."""
    indexed = rows.select(list(key)).append_column(
        "__row", pa.array(range(rows.num_rows), pa.int64())
    )
    groups = indexed.group_by(list(key), use_threads=False).aggregate([("__row", "list")])
    lists = groups.column("__row_list")
    repeated = groups.filter(pc.greater(pc.list_value_length(lists), 1)).column("__row_list")
    compared = [c for c in rows.column_names if c not in IGNORED_COLUMNS and c != _FILE]
    for members in repeated.to_pylist():
        copies = rows.take(pa.array(members, pa.int64())).to_pylist()
        first = _comparable(copies[0], compared)
        for copy in copies[1:]:
            values = _comparable(copy, compared)
            if values != first:
                differing = [c for c, a, b in zip(compared, values, first) if a != b]
                files = sorted({posixpath.basename(paths[c[_FILE]]) for c in copies})
                example = ", ".join(f"{k}={copies[0][k]}" for k in key)
                raise DatasetError(
                    f"{name}: rows with key {example} differ in {', '.join(differing)} "
                    f"(files {', '.join(files)}); not repaired: decide which row is right "
                    "and delete the other file by hand"
                )


def _comparable(row: dict[str, Any], columns: list[str]) -> list[Any]:
    # NaN != NaN, yet two NaN timings written by one flush are the same value
    return [
        ("nan",) if isinstance(v, float) and math.isnan(v) else v for v in (row[c] for c in columns)
    ]
