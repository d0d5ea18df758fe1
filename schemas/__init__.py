"""Dataset tables of kernel-corpus: schemas, version-gated reader, atomic writer.

Imports pyarrow only (polars for :func:`scan_table`, fsspec for URL datasets, both imported
lazily), and checks first that the reader's dependencies are installed (:mod:`schemas._deps`).
Other repositories can use this package alone to read a dataset.
"""

from __future__ import annotations

# First: stops with one line when pyarrow & co. are missing, before `import pyarrow` below.
from schemas import _deps  # noqa: F401 (imported for its check, which must run first)
from schemas.enums import DEVICE_INTERPRETER, EdgeKind, Level, NodeKind, Status, Timer
from schemas.errors import (
    ConflictingCopiesError,
    CorruptFileError,
    DatasetError,
    IncompleteRunError,
    MixedTimingError,
    ReadRequestError,
    RepeatedKeyError,
    ReplacementError,
    SchemaMismatchError,
    SchemaVersionError,
    StorageError,
    TableNotFoundError,
    UnknownStorageError,
    WriteFailedError,
)
from schemas.reader import committed_runs, read_table, scan_table
from schemas.tables import SCHEMA_VERSION, TABLES, table_spec
from schemas.writer import DatasetWriter

__all__ = [
    "DEVICE_INTERPRETER",
    "SCHEMA_VERSION",
    "TABLES",
    "ConflictingCopiesError",
    "CorruptFileError",
    "DatasetError",
    "DatasetWriter",
    "EdgeKind",
    "IncompleteRunError",
    "Level",
    "MixedTimingError",
    "NodeKind",
    "ReadRequestError",
    "RepeatedKeyError",
    "ReplacementError",
    "SchemaMismatchError",
    "SchemaVersionError",
    "Status",
    "StorageError",
    "TableNotFoundError",
    "Timer",
    "UnknownStorageError",
    "WriteFailedError",
    "committed_runs",
    "read_table",
    "scan_table",
    "table_spec",
]
