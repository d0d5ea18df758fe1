"""Repair of repeated keys: the damage the old, non-idempotent flush left behind.

A retried flush could write the same ``runs`` or ``measurements`` rows twice; readers refuse
such a table (:class:`schemas.errors.RepeatedKeyError`). :func:`repair_repeats` rewrites each
affected partition into one file keeping the first row of every key, through the atomic
replacement of files (:func:`schemas.replacement.replace_files`, under the dataset's
maintenance lock), so a crash part-way loses or doubles nothing. Repeats are dropped only when they are identical
copies: rows sharing a key but differing in any column other than ``schema_version`` (the
files may predate a schema upgrade) are refused, naming the key and the files, before
anything is changed.

One kind of copy may differ: ``runs`` rows that ``python -m corpus.ingest`` wrote for the same
tuning of the same log in two datasets later merged (copying their partition files into one).
Their ``harvest_id`` derives from the log's content, so they share their key, and they differ
only in when and where the import ran (:data:`schemas.replacement.IMPORT_OWN_COLUMNS`); their
measurements are identical. They are one import: the earliest (``finished_at``, then
``started_at``, then ``hostname``, whatever the files are named) is kept, and the repair says
how many such copies it dropped.
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
from schemas.keys import UNIQUE_KEYED, repeated_keys
from schemas.locking import maintenance_lock
from schemas.reader import table_files
from schemas.replacement import IMPORT_OWN_COLUMNS, IMPORT_SOURCES, replace_files
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
    imports_dropped: int = 0
    """Of ``rows_dropped``: copies of an imported run that differed from the kept one only in
    when and where it was imported."""

    def describe(self) -> str:
        where = f"{self.table}/{self.partition}" if self.partition else self.table
        imports = (
            f" ({self.imports_dropped:,} of them the same import of a log done again, differing only in "
            f"{', '.join(IMPORT_OWN_COLUMNS)}: the earliest import kept)"
            if self.imports_dropped
            else ""
        )
        return (
            f"{where}: dropped {self.rows_dropped:,} repeated row(s){imports}; "
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
    for name, directory, paths, kept, dropped, imports in plans:
        replace_files(loc, name, directory, paths, kept, read_keys=key_reader(loc, name), prefix="repair")
        partition = posixpath.relpath(directory, loc.table_dir(name))
        results.append(
            RepairResult(name, "" if partition == "." else partition, len(paths), dropped, imports)
        )
    return results


Plan = tuple[str, str, list[str], pa.Table, int, int]
"""table, partition directory, its files, the rows to keep, rows dropped, of which imports."""


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
        dropped, imports = _copies_to_drop(name, rows, key, paths)
        keep = pa.array([index not in dropped for index in range(rows.num_rows)], pa.bool_())
        kept = rows.filter(keep).drop_columns([_FILE])
        plans.append((name, directory, paths, kept, len(dropped), imports))
    return plans


def _tagged_rows(loc: Location, name: str, paths: list[str]) -> pa.Table:
    """Rows of ``paths`` in order, each tagged with the index of its file in ``paths``."""
    pieces = []
    for index, path in enumerate(paths):
        table = merge_files(loc, name, [path])
        pieces.append(table.append_column(_FILE, pa.array([index] * table.num_rows, pa.int32())))
    return pa.concat_tables(pieces)


def _copies_to_drop(
    name: str, rows: pa.Table, key: tuple[str, ...], paths: list[str]
) -> tuple[set[int], int]:
    """Indices of the rows to drop (every copy of a key but one) and how many of them are
    copies of an import done again (:func:`_same_import`). Identical copies keep the first;
    imports the earliest. Raises DatasetError naming a key whose rows differ otherwise."""
    indexed = rows.select(list(key)).append_column(
        "__row", pa.array(range(rows.num_rows), pa.int64())
    )
    groups = indexed.group_by(list(key), use_threads=False).aggregate([("__row", "list")])
    lists = groups.column("__row_list")
    repeated = groups.filter(pc.greater(pc.list_value_length(lists), 1)).column("__row_list")
    compared = [c for c in rows.column_names if c not in IGNORED_COLUMNS and c != _FILE]
    dropped: set[int] = set()
    imports = 0
    for members in repeated.to_pylist():
        members = sorted(members)
        copies = rows.take(pa.array(members, pa.int64())).to_pylist()
        first = _comparable(copies[0], compared)
        differing = sorted(
            {c for copy in copies[1:] for c, a, b in zip(compared, _comparable(copy, compared), first) if a != b},
            key=compared.index,
        )
        if not differing:
            dropped.update(members[1:])
            continue
        if _same_import(name, copies, differing):
            kept = min(range(len(copies)), key=lambda i: _import_order(copies[i]))
            dropped.update(m for i, m in enumerate(members) if i != kept)
            imports += len(members) - 1
            continue
        files = sorted({posixpath.basename(paths[c[_FILE]]) for c in copies})
        example = ", ".join(f"{k}={copies[0][k]}" for k in key)
        raise DatasetError(
            f"{name}: rows with key {example} differ in {', '.join(differing)} "
            f"(files {', '.join(files)}); not repaired: decide which row is right "
            "and delete the other file by hand"
        )
    return dropped, imports


def _same_import(name: str, copies: list[dict[str, Any]], differing: list[str]) -> bool:
    """Whether ``copies`` (runs rows of one key) are one import of a log done more than once:
    every copy written by an importer and differing only in the import's own clock and
    machine (:data:`schemas.replacement.IMPORT_OWN_COLUMNS`). Their measurements, keyed by the
    same content-derived harvest_id, must then be identical to be dropped."""
    return (
        name == "runs"
        and set(differing) <= set(IMPORT_OWN_COLUMNS)
        and all(copy.get("source") in IMPORT_SOURCES for copy in copies)
    )


def _import_order(row: dict[str, Any]) -> tuple[Any, ...]:
    """Earliest import first, by the row's own values (never by file name), nulls last."""
    return tuple((row[c] is None, row[c] if row[c] is not None else 0) for c in IMPORT_OWN_COLUMNS)


def _comparable(row: dict[str, Any], columns: list[str]) -> list[Any]:
    # NaN != NaN, yet two NaN timings written by one flush are the same value
    return [
        ("nan",) if isinstance(v, float) and math.isnan(v) else v for v in (row[c] for c in columns)
    ]
