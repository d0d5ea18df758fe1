"""Per-file validation: a file's footer and schema against what its version declared.

One code path for every reader (:func:`schemas.read_table`, :func:`schemas.scan_table`),
``compact`` and ``check``: each file is judged before any of its rows is read, so a wrong file
is refused with its name and the field at fault, never cast or filled in silently.

Checked, from the Parquet footer only (no data pages are read):

- the footer names the table of the directory the file sits in;
- every column is declared for the file's ``schema_version`` (an unknown extra column is an
  error: it is either a typo that loses data or a newer writer);
- every non-nullable declared column is present, and has no nulls (row-group statistics; the
  column is read when a writer left none);
- every present column has its declared type (string vs large_string and list vs large_list
  are the same values and pass; int64 where a string is declared does not);
- the ``schema_version`` column holds the footer's version in every row, and each partition
  column the value its directory names (``arch=sm_90/``) (row-group statistics; a column is
  read only when a writer left no statistics);
- the statistics these checks take are verified against the data by every gated read (once
  per file set: :func:`trusted_columns`, :func:`statistics_problems`), since no checksum covers
  a footer;
- the file sits where plain readers look (:func:`layout_problems`): ``part-*.parquet``
  directly under its partition directories.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from schemas.history import declared_schema
from schemas.storage import META_TABLE
from schemas.tables import TABLES

VERSION_COLUMN = "schema_version"

ColumnReader = Callable[[str], pa.ChunkedArray]
"""Reads one column of the file being validated (only called when statistics are missing)."""


def _normalized(type_: pa.DataType) -> pa.DataType:
    """``type_`` with representation-only variants folded (large/view strings and lists,
    dictionary encoding): two files whose types normalize equal hold the same values."""
    if pa.types.is_dictionary(type_):
        return _normalized(type_.value_type)
    if pa.types.is_large_string(type_) or pa.types.is_string_view(type_):
        return pa.string()
    if pa.types.is_large_binary(type_) or pa.types.is_binary_view(type_):
        return pa.binary()
    if pa.types.is_large_list(type_) or pa.types.is_list_view(type_) or pa.types.is_list(type_):
        return pa.list_(_normalized(type_.value_type))
    if pa.types.is_struct(type_):
        return pa.struct([pa.field(f.name, _normalized(f.type)) for f in type_])
    return type_


def compatible(stored: pa.DataType, declared: pa.DataType) -> bool:
    """True when a column stored as ``stored`` holds values of the ``declared`` type."""
    return _normalized(stored).equals(_normalized(declared))


def schema_problems(stored: pa.Schema, declared: pa.Schema) -> list[str]:
    """Differences between a file's Arrow schema and the declared one, one line each."""
    problems = []
    unknown = [name for name in stored.names if declared.get_field_index(name) < 0]
    if unknown:
        problems.append(
            f"unknown column(s) {', '.join(unknown)} (not declared for this schema_version)"
        )
    for field in declared:
        index = stored.get_field_index(field.name)
        if index < 0:
            if not field.nullable:
                problems.append(f"required column {field.name!r} is missing")
            continue
        found = stored.field(index).type
        if not compatible(found, field.type):
            problems.append(f"column {field.name!r} is stored as {found}, declared {field.type}")
    return problems


def _statistics(metadata: pq.FileMetaData, name: str) -> list[pq.Statistics | None]:
    """Statistics of top-level column ``name`` in every row group (None where absent)."""
    found = []
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for column in range(row_group.num_columns):
            chunk = row_group.column(column)
            if chunk.path_in_schema == name:
                found.append(chunk.statistics if chunk.is_stats_set else None)
    return found


def null_problems(
    metadata: pq.FileMetaData, declared: pa.Schema, read_column: ColumnReader
) -> list[str]:
    """Non-nullable primitive columns that hold nulls: from the row-group statistics, and
    read (``read_column``) where a writer left a row group without a null count."""
    problems = []
    stored = metadata.schema.to_arrow_schema().names
    for field in declared:
        if field.nullable or pa.types.is_nested(field.type) or field.name not in stored:
            continue
        stats = _statistics(metadata, field.name)
        if all(s is not None and s.has_null_count for s in stats):
            nulls = sum(s.null_count for s in stats)  # type: ignore[union-attr]
        else:
            nulls = read_column(field.name).null_count
        if nulls:
            problems.append(f"column {field.name!r} must not be null but holds {nulls} null(s)")
    return problems


def _values(metadata: pq.FileMetaData, name: str, read_column: ColumnReader) -> set:
    """Distinct non-null values of column ``name``: from min/max statistics when every row
    group has them, else read."""
    stats = _statistics(metadata, name)
    if stats and all(s is not None and s.has_min_max for s in stats):
        return {s.min for s in stats} | {s.max for s in stats}
    if not stats and metadata.num_rows == 0:
        return set()
    return set(read_column(name).drop_null().unique().to_pylist())


def version_column_problems(
    metadata: pq.FileMetaData, version: int, read_column: ColumnReader
) -> list[str]:
    """Rows whose ``schema_version`` differs from the footer's ``version``.

    Uses min/max statistics; ``read_column`` is called only when a row group has none.
    """
    if not _statistics(metadata, VERSION_COLUMN):
        return []
    other = sorted(v for v in _values(metadata, VERSION_COLUMN, read_column) if v != version)
    if other:
        return [
            f"column 'schema_version' holds {', '.join(map(str, other))} but the footer says {version}"
        ]
    return []


def partition_problems(
    metadata: pq.FileMetaData,
    partition_by: tuple[str, ...],
    partition: Mapping[str, str],
    read_column: ColumnReader,
) -> list[str]:
    """Directory names (``arch=sm_90/``) that disagree with the file's own partition column,
    or that name a key the table is not partitioned by: readers use the column, tools that
    prune by directory use the name, and the two must select the same rows."""
    problems = []
    stored = metadata.schema.to_arrow_schema().names
    for key, value in partition.items():
        if key not in partition_by:
            wanted = ", ".join(partition_by) or "nothing"
            problems.append(
                f"directory {key}={value}/ names no partition key of this table (partitioned by {wanted})"
            )
        elif key in stored:
            other = sorted(str(v) for v in _values(metadata, key, read_column) if str(v) != value)
            if other:
                problems.append(
                    f"column {key!r} holds {', '.join(other)} but the file is under {key}={value}/"
                )
    return problems


def trusted_columns(table: str, version: int) -> list[str]:
    """The columns of a ``version`` file of ``table`` whose footer statistics
    :func:`file_problems` takes for its data: the required flat columns (their null counts),
    ``schema_version`` and the partition columns (their min/max). Readers verify those
    statistics before a file's rows are read (:func:`statistics_problems`)."""
    declared = declared_schema(table, version)
    required = [f.name for f in declared or [] if not f.nullable and not pa.types.is_nested(f.type)]
    return list(dict.fromkeys([*required, VERSION_COLUMN, *TABLES[table].partition_by]))


def flat_columns(metadata: pq.FileMetaData) -> list[str]:
    """The top-level columns of a file that are one Parquet column each (not lists or
    structs): those whose row-group statistics filters prune by."""
    schema = metadata.schema
    return [
        schema.column(i).path
        for i in range(len(schema))
        if schema.column(i).max_repetition_level == 0 and "." not in schema.column(i).path
    ]


def statistics_problems(metadata: pq.FileMetaData, rows: pa.Table) -> list[str]:
    """Row groups whose footer statistics of a flat column do not hold its data: a null count
    other than the data's, or a min/max range that leaves values out. Filters (the readers',
    pyarrow's, polars', duckdb's) skip a row group by those statistics, so such a file loses
    rows from filtered reads only, and this validation's null and partition checks trust them.
    ``rows``: the file's :func:`flat_columns` as stored or read as their declared types (the
    same values), in order (row groups back to back)."""
    problems = []
    start = 0
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for index in range(row_group.num_columns):
            chunk = row_group.column(index)
            if chunk.path_in_schema not in rows.column_names or not chunk.is_stats_set:
                continue
            values = rows.column(chunk.path_in_schema).slice(start, row_group.num_rows)
            wrong = _untrue_statistics(chunk.statistics, values)
            if wrong:
                problems.append(
                    f"row group {group}: the footer's statistics of column {chunk.path_in_schema!r} "
                    f"say {wrong} (a damaged footer or a foreign writer: filtered reads would skip rows)"
                )
        start += row_group.num_rows
    return problems


def _untrue_statistics(stats: pq.Statistics, values: pa.ChunkedArray) -> str | None:
    """What ``stats`` (one column chunk's) say that ``values`` (its data) contradict."""
    if stats.has_null_count and stats.null_count != values.null_count:
        return f"{stats.null_count} null(s); the data holds {values.null_count}"
    if not stats.has_min_max or values.null_count == len(values):
        return None
    if pa.types.is_dictionary(values.type):  # a foreign writer's encoding: same values
        values = pc.cast(values, values.type.value_type)
    try:
        low, high = pc.min_max(values).values()
        stated_low, stated_high = (pa.scalar(v, values.type) for v in (stats.min, stats.max))
    except (pa.ArrowException, TypeError, ValueError):
        return None  # a type without an order or whose statistics do not convert back
    if pc.less(low, stated_low).as_py() or pc.greater(high, stated_high).as_py():
        return f"values from {stats.min!r} to {stats.max!r}; the data holds {low.as_py()!r} to {high.as_py()!r}"
    return None


DATA_FILE_PREFIX = "part-"
"""Every data file's name starts with it: the documented plain-reader globs
(``measurements/*/part-*.parquet``) match exactly the files kernel-corpus reads."""


def layout_problems(partition_by: tuple[str, ...], relative_path: str) -> list[str]:
    """Where a file sits (``relative_path``, from the table's directory) against where plain
    readers look: data files are named ``part-*.parquet`` and sit directly under one directory
    per partition key (``arch=sm_90/``), or directly in the table directory when it has none."""
    directories, _, name = relative_path.rpartition("/")
    segments = [s for s in directories.split("/") if s and s != "."]
    problems = []
    if not name.startswith(DATA_FILE_PREFIX):
        problems.append(
            f"the file name does not start with {DATA_FILE_PREFIX!r} (plain readers glob "
            f"{DATA_FILE_PREFIX}*.parquet and would not see these rows)"
        )
    if len(segments) != len(partition_by) or any("=" not in s for s in segments):
        where = "/".join(segments) + "/" if segments else "the table's top level"
        wanted = "/".join(f"{key}=<value>" for key in partition_by) + "/" if partition_by else "the table's top level"
        problems.append(
            f"the file sits at {where}, not directly under {wanted} (plain readers that follow "
            "the layout would miss or mislabel its rows)"
        )
    return problems


def file_problems(
    table: str,
    metadata: pq.FileMetaData,
    version: int,
    read_column: ColumnReader,
    partition: Mapping[str, str] | None = None,
) -> list[str]:
    """Everything wrong with one file of ``table`` written under ``version``; empty when sound.

    ``metadata`` is the file's Parquet footer; ``read_column`` reads one of its columns (only
    needed when the writer stored no statistics); ``partition``: the ``key=value`` names of
    the directories the file sits in.
    """
    kv = metadata.metadata or {}
    named = kv.get(META_TABLE)
    if named is not None and named.decode(errors="replace") != table:
        return [
            f"the footer says this is a {named.decode(errors='replace')!r} file, but it is under {table}/"
        ]
    declared = declared_schema(table, version)
    if declared is None:
        return [f"no declared schema of table {table!r} for schema_version {version}"]
    stored = metadata.schema.to_arrow_schema()
    problems = schema_problems(stored, declared)
    problems += null_problems(metadata, declared, read_column)
    if VERSION_COLUMN in stored.names:
        problems += version_column_problems(metadata, version, read_column)
    if partition:
        problems += partition_problems(metadata, TABLES[table].partition_by, partition, read_column)
    return problems
