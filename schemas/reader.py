"""Schema-version-gated reading of dataset tables.

Every file's footer is checked before any data is read: a newer ``schema_version`` raises
:class:`SchemaVersionError` naming the file; older files are upgraded through
:mod:`schemas.migrations`. Measurements of uncommitted runs (no matching ``runs`` row) are
dropped, and content-keyed tables (kernels, ir_*) are deduplicated on their key, so what a
reader sees never depends on crashes or on how many writers raced.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from schemas.errors import CorruptFileError, SchemaVersionError
from schemas.migrations import oldest_readable, upgrade
from schemas.storage import (
    Location,
    footer_replaces,
    footer_version,
    list_parquet,
    read_file,
    read_footer,
    resolve,
)
from schemas.tables import SCHEMA_VERSION, table_spec
from schemas.writer import conform

if TYPE_CHECKING:
    import polars as pl

CONTENT_KEYED = frozenset({"kernels", "ir_graphs", "ir_nodes", "ir_edges"})
"""Tables whose key is a content hash: equal keys mean equal rows, so copies are dropped."""

COMMIT_KEY = ("run_id", "harvest_id")

Filters = pa.compute.Expression | Sequence[Any] | None


@dataclass(frozen=True)
class TableFiles:
    """The live files of one table, split by schema version."""

    current: list[str]
    older: dict[str, int]
    superseded: list[str]


def table_files(loc: Location, table: str) -> TableFiles:
    """Inspect every footer: version-gate, and drop files a compacted file replaced."""
    files = list_parquet(loc, table)
    versions: dict[str, int] = {}
    superseded: set[str] = set()
    oldest = oldest_readable(table)
    for path in files:
        footer = read_footer(loc, path)
        version = footer_version(path, footer)
        if not oldest <= version <= SCHEMA_VERSION:
            raise SchemaVersionError(path, version, oldest, SCHEMA_VERSION)
        versions[path] = version
        directory = posixpath.dirname(path)
        superseded.update(posixpath.join(directory, name) for name in footer_replaces(footer))
    live = [p for p in files if p not in superseded]
    return TableFiles(
        current=[p for p in live if versions[p] == SCHEMA_VERSION],
        older={p: versions[p] for p in live if versions[p] != SCHEMA_VERSION},
        superseded=sorted(superseded & set(files)),
    )


def _expression(filters: Filters) -> pa.compute.Expression | None:
    if filters is None or isinstance(filters, pa.compute.Expression):
        return filters
    return pq.filters_to_expression(filters)


def _read_files(loc: Location, table: str, found: TableFiles, columns: list[str] | None, expression) -> pa.Table:
    schema = table_spec(table).schema
    pieces = []
    if found.current:
        try:
            dataset = ds.dataset(found.current, schema=schema, format="parquet", filesystem=loc.fs)
            pieces.append(dataset.to_table(columns=columns, filter=expression))
        except (OSError, pa.ArrowException) as exc:
            culprit = _find_unreadable(loc, found.current) or ", ".join(found.current[:3])
            raise CorruptFileError(culprit, exc) from exc
    for path, version in found.older.items():
        upgraded = lift(table, read_file(loc, path), version)
        if expression is not None:
            upgraded = upgraded.filter(expression)
        pieces.append(upgraded.select(columns) if columns else upgraded)
    if not pieces:
        empty = schema.empty_table()
        return empty.select(columns) if columns else empty
    return pa.concat_tables(pieces)


def lift(table_name: str, table: pa.Table, version: int) -> pa.Table:
    """A table read from a ``version`` file, migrated and conformed to the current schema."""
    upgraded = upgrade(table_name, table, version)
    if "schema_version" in upgraded.column_names:
        upgraded = upgraded.drop_columns(["schema_version"])
    return conform(table_spec(table_name), upgraded.replace_schema_metadata(None))


def _find_unreadable(loc: Location, files: list[str]) -> str | None:
    for path in files:
        try:
            read_file(loc, path)
        except CorruptFileError:
            return path
    return None


def dedupe(table: pa.Table, key: Sequence[str]) -> pa.Table:
    """Keep the first row of every key."""
    if table.num_rows == 0:
        return table
    indexed = table.select(list(key)).append_column("__row", pa.array(range(table.num_rows), pa.int64()))
    first = indexed.group_by(list(key), use_threads=False).aggregate([("__row", "min")])
    if first.num_rows == table.num_rows:
        return table
    rows = first.column("__row_min")
    return table.take(pc.take(rows, pc.sort_indices(rows)))


def _commit_keys(table: pa.Table) -> pa.Array:
    return pc.binary_join_element_wise(*(table.column(k) for k in COMMIT_KEY), "\x1f")


def only_committed(measurements: pa.Table, runs: pa.Table) -> pa.Table:
    """Rows of ``measurements`` whose (run_id, harvest_id) has a ``runs`` row."""
    return measurements.filter(pc.is_in(_commit_keys(measurements), value_set=_commit_keys(runs)))


def committed_runs(url: str) -> pa.Table:
    """(run_id, harvest_id) of every committed run."""
    loc = resolve(url)
    return _read_files(loc, "runs", table_files(loc, "runs"), list(COMMIT_KEY), None)


def read_table(
    url: str,
    table: str,
    columns: Sequence[str] | None = None,
    filters: Filters = None,
    *,
    committed_only: bool = True,
) -> pa.Table:
    """Read one table of the dataset at ``url`` as a pyarrow Table.

    ``columns``: subset to return. ``filters``: a ``pyarrow.compute`` expression or
    pyarrow-style DNF tuples, e.g. ``[("status", "=", "ok")]``. Measurements of uncommitted
    runs are dropped unless ``committed_only=False``; content-keyed tables are deduplicated.

    Raises :class:`DatasetError` for a missing table, :class:`CorruptFileError` and
    :class:`SchemaVersionError` naming the file at fault.
    """
    spec = table_spec(table)
    loc = resolve(url)
    found = table_files(loc, table)
    wanted = list(columns) if columns is not None else None
    needed = wanted
    extra_keys: list[str] = []
    if wanted is not None:
        if table == "measurements" and committed_only:
            extra_keys += [k for k in COMMIT_KEY if k not in wanted]
        if table in CONTENT_KEYED:
            extra_keys += [k for k in spec.key if k not in wanted and k not in extra_keys]
        needed = wanted + extra_keys
    result = _read_files(loc, table, found, needed, _expression(filters))
    if table == "measurements" and committed_only:
        result = only_committed(result, committed_runs(url))
    if table in CONTENT_KEYED:
        result = dedupe(result, spec.key)
    if wanted is not None:
        result = result.select(wanted)
    return result


def scan_table(
    url: str,
    table: str,
    *,
    committed_only: bool = True,
) -> pl.LazyFrame:
    """The table as a polars LazyFrame, with the same gating as :func:`read_table`.

    Local datasets whose files are all at the current version are scanned lazily by polars
    itself (projection and predicate pushdown apply); otherwise the gated pyarrow read is
    wrapped.
    """
    import polars as pl

    loc = resolve(url)
    found = table_files(loc, table)
    is_local = not ("://" in url and not url.startswith("file://"))
    if not (is_local and found.current and not found.older):
        return pl.from_arrow(read_table(url, table, committed_only=committed_only)).lazy()
    frame = pl.scan_parquet(found.current, hive_partitioning=False)
    if table == "measurements" and committed_only:
        runs = pl.from_arrow(committed_runs(url)).lazy()
        frame = frame.join(runs, on=list(COMMIT_KEY), how="semi")
    if table in CONTENT_KEYED:
        frame = frame.unique(subset=list(table_spec(table).key), keep="first", maintain_order=True)
    return frame
