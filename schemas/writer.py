"""Dataset writer: rows in, immutable hive-partitioned Parquet files out.

Rules (DESIGN.md "Layout on disk"):
- one directory per table, partitioned by the table's low-cardinality keys (``arch=sm_90``);
- file names carry a writer id unique across processes and machines plus a sequence number,
  so concurrent writers never collide and no file is ever appended to or rewritten;
- each file appears by atomic rename;
- a run is committed when its ``runs`` row lands, so callers write a run's measurements and
  IR tables first and :meth:`DatasetWriter.commit_run` last.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from schemas.errors import DatasetError, WriteFailedError
from schemas.machine import anonymize_host, host_name
from schemas.storage import META_TABLE, META_VERSION, Location, resolve, write_atomic
from schemas.tables import SCHEMA_VERSION, TableSpec, table_spec
from schemas.values import measurement_value_problems

_PARTITION_VALUE = re.compile(r"^[A-Za-z0-9_.-]+$")

Rows = pa.Table | pa.RecordBatch | Sequence[Mapping[str, Any]]


def new_writer_id() -> str:
    """``<machine>-<pid>-<random>``: unique per writer object across processes and machines.
    ``<machine>`` is the anonymous machine id (:mod:`schemas.machine`), never the host name,
    so file names of a published dataset do not name the host either."""
    return f"{anonymize_host(host_name())}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def with_file_metadata(
    table: pa.Table, spec: TableSpec, extra: Mapping[bytes, bytes] | None = None
) -> pa.Table:
    """Attach the table name and schema version to the schema metadata (stored in the footer)."""
    metadata = dict(table.schema.metadata or {})
    metadata[META_VERSION] = str(SCHEMA_VERSION).encode()
    metadata[META_TABLE] = spec.name.encode()
    metadata.update(extra or {})
    return table.replace_schema_metadata(metadata)


def conform(spec: TableSpec, rows: Rows) -> pa.Table:
    """Rows as a table of exactly ``spec.schema``: columns ordered, types cast, schema_version
    filled, non-nullable fields checked. Unknown columns are an error (typos lose data)."""
    if isinstance(rows, pa.RecordBatch):
        rows = pa.Table.from_batches([rows])
    if not isinstance(rows, pa.Table):
        rows = _table_from_rows(spec, rows)
    unknown = sorted(set(rows.column_names) - set(spec.schema.names))
    if unknown:
        raise DatasetError(f"table {spec.name!r}: unknown column(s) {', '.join(unknown)}")
    columns = []
    for field in spec.schema:
        if field.name in rows.column_names:
            column = rows.column(field.name)
        elif field.name == "schema_version":
            column = pa.array([SCHEMA_VERSION] * rows.num_rows, pa.int32())
        else:
            column = pa.nulls(rows.num_rows, field.type)
        try:
            column = column.cast(field.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise DatasetError(
                f"table {spec.name!r}, column {field.name!r}: cannot store as {field.type}: {exc}"
            ) from exc
        if not field.nullable and column.null_count:
            raise DatasetError(
                f"table {spec.name!r}: column {field.name!r} must not be null ({column.null_count} nulls)"
            )
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=spec.schema)


def _table_from_rows(spec: TableSpec, rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    names = set(spec.schema.names)
    for row in rows:
        extra = set(row) - names
        if extra:
            raise DatasetError(f"table {spec.name!r}: unknown column(s) {', '.join(sorted(extra))}")
    rows = [
        row if "schema_version" in row else {**row, "schema_version": SCHEMA_VERSION}
        for row in rows
    ]
    try:
        return pa.Table.from_pylist(list(rows), schema=spec.schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as exc:
        raise DatasetError(f"table {spec.name!r}: rows do not fit the schema: {exc}") from exc


def partitions(spec: TableSpec, table: pa.Table) -> Iterable[tuple[str, pa.Table]]:
    """Split ``table`` by the spec's partition keys into (``k=v/...`` directory, rows)."""
    if not spec.partition_by:
        yield "", table
        return
    keys = table.select(list(spec.partition_by)).group_by(list(spec.partition_by)).aggregate([])
    for values in keys.to_pylist():
        mask = None
        parts = []
        for key, value in values.items():
            text = str(value)
            if not _PARTITION_VALUE.match(text):
                raise DatasetError(
                    f"table {spec.name!r}: partition value {key}={text!r} has unsafe characters"
                )
            parts.append(f"{key}={text}")
            condition = pc.equal(table.column(key), value)
            mask = condition if mask is None else pc.and_(mask, condition)
        yield "/".join(parts), table.filter(mask)


class DatasetWriter:
    """Writes rows of any table into the dataset at ``url`` (local path or fsspec URL).

    Each :meth:`write` call produces one new file per partition touched. Batch rows (a run's
    worth) per call: many tiny files cost read time until ``python -m schemas compact``.
    A write that fails part-way raises :class:`WriteFailedError` carrying the rows that did not
    land (``remaining``), so a retry writes each row exactly once.
    """

    def __init__(
        self, url: str, *, writer_id: str | None = None, compression: str = "zstd"
    ) -> None:
        self.location: Location = resolve(url)
        self.writer_id = writer_id or new_writer_id()
        self.compression = compression
        self._sequence = 0
        self.files_written: list[str] = []

    def write(self, table_name: str, rows: Rows) -> list[str]:
        """Write rows of ``table_name``; returns the paths of the files that appeared."""
        spec = table_spec(table_name)
        table = conform(spec, rows)
        if table.num_rows == 0:
            return []
        if spec.name == "measurements":  # values the types allow but no measurement can have
            problems = measurement_value_problems(table)
            if problems:
                raise DatasetError(f"not written: {'; '.join(problems)}")
        written: list[str] = []
        pending = list(partitions(spec, table))
        while pending:
            subdir, part = pending[0]
            self._sequence += 1
            directory = self.location.table_dir(spec.name)
            if subdir:
                directory = f"{directory}/{subdir}"
            name = f"part-{self.writer_id}-{self._sequence:06d}.parquet"
            try:
                path = write_atomic(
                    self.location,
                    directory,
                    name,
                    with_file_metadata(part, spec),
                    compression=self.compression,
                )
            except (OSError, pa.ArrowException) as exc:
                # The partitions written so far are durable; hand back only the rest so a retry
                # never writes a row twice.
                self.files_written.extend(written)
                remaining = pa.concat_tables([rows for _, rows in pending])
                raise WriteFailedError(
                    spec.name, self.location.url, exc, written, remaining
                ) from exc
            written.append(path)
            pending.pop(0)
        self.files_written.extend(written)
        return written

    def commit_run(self, rows: Rows) -> list[str]:
        """Write ``runs`` rows last: their landing is what commits the runs' measurements."""
        return self.write("runs", rows)
