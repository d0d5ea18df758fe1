"""Dataset tables of kernel-corpus: schemas, version-gated reader, atomic writer.

Imports pyarrow only (polars for :func:`scan_table`, fsspec for URL datasets, both imported
lazily), and checks first that the reader's dependencies are installed (:mod:`schemas.extras`).
Other repositories can use this package alone to read a dataset.
"""

from __future__ import annotations

from schemas.extras import require_reader

# Before the first `import pyarrow` below: a Python without kernel-corpus's dependencies (most
# often a shell where the clone's venv was not activated) stops with one line saying what to do.
require_reader()

from schemas.enums import DEVICE_INTERPRETER, EdgeKind, Level, NodeKind, Status, Timer  # noqa: E402
from schemas.errors import (  # noqa: E402
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
from schemas.reader import committed_runs, read_table, scan_table  # noqa: E402
from schemas.tables import SCHEMA_VERSION, TABLES, table_spec  # noqa: E402
from schemas.writer import DatasetWriter  # noqa: E402

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
