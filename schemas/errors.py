"""Errors raised by dataset IO. Each names the file or directory at fault."""

from __future__ import annotations


class DatasetError(Exception):
    """A dataset cannot be read or written as asked (missing table, bad rows, ...)."""


class TableNotFoundError(DatasetError):
    """A table's directory does not exist (a new dataset, or not a dataset root). Only this
    error means "no rows yet": callers that treat a missing table as empty must catch it, never
    a plain :class:`DatasetError`, whose other kinds (an unreadable file, a newer version) stand
    for rows that exist but cannot be read."""


class CorruptFileError(DatasetError):
    """A Parquet file cannot be read (truncated, not Parquet, bad footer)."""

    def __init__(self, path: str, cause: BaseException | str) -> None:
        self.path = path
        super().__init__(f"{path}: unreadable Parquet file ({cause})")


class SchemaVersionError(DatasetError):
    """A file was written under a schema_version this code cannot read."""

    def __init__(self, path: str, version: int, oldest: int, newest: int) -> None:
        self.path = path
        self.version = version
        super().__init__(
            f"{path}: schema_version {version} is outside the range this code reads "
            f"({oldest}..{newest}); "
            + (
                "upgrade kernel-corpus to read it."
                if version > newest
                else "no migration is registered for it."
            )
        )


class SchemaMismatchError(DatasetError):
    """A file's schema or footer differs from what its schema_version declares."""

    def __init__(self, path: str, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        super().__init__(f"{path}: {'; '.join(problems)}")


class RepeatedKeyError(DatasetError):
    """Rows that must be unique repeat their key (e.g. a measurement written twice)."""


class IncompleteRunError(DatasetError):
    """A committed run's measurement rows are fewer or more than its ``runs`` row's
    ``n_configs``: rows were lost (a deleted or truncated file) or added after its commit."""


class MixedTimingError(DatasetError):
    """One row per config (``harvests='latest'`` or ``'pooled'``) would give a run configs
    timed in different ways (another timer or L2 flush), whose latencies cannot be compared."""


class ConflictingCopiesError(DatasetError):
    """Rows of a content-keyed table share a key but not the content it stands for (a kernel
    source that is not the one its kernel_id hashes, IR node features that are not those of the
    IR its ir_id hashes): which copy is right cannot be told."""


class StorageError(DatasetError):
    """The storage refused to write or delete a file (read-only, full, failing); what was
    committed before is intact."""


class UnknownStorageError(DatasetError, ValueError):
    """A URL's scheme names no filesystem fsspec knows, or one whose backend is not installed
    (``s3://`` without s3fs): nothing was read or written."""


class ReplacementError(DatasetError):
    """A file's footer claims to replace files it does not cover (or files claim to replace
    each other in a cycle): honouring the claim would hide committed rows."""


class ReadRequestError(DatasetError, ValueError):
    """The columns or filters asked of a table do not fit it (an unknown column, a filter
    comparing a column with a value of another type); the files themselves are sound."""


class FileVanishedError(DatasetError):
    """A listed file disappeared before it was read (compaction replaced it); readers list again."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(f"{path}: removed while being read (a concurrent `compact` replaced it)")


def failure_reason(exc: BaseException) -> str:
    """Why a storage call failed, on one line whatever the storage layer printed: the system's
    reason (``strerror``) for an OSError that has one, else the exception's text."""
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return " ".join(reason.split())


class WriteFailedError(DatasetError):
    """Writing rows of one table failed part-way; nothing that was already committed is affected.

    ``written`` are the files that did land, ``remaining`` the rows (a conformed Arrow table)
    that did not: a caller retrying writes only ``remaining``, so no row is written twice.
    """

    def __init__(
        self, table: str, location: str, cause: BaseException, written: list[str], remaining: object
    ) -> None:
        self.table = table
        self.written = written
        self.remaining = remaining
        super().__init__(
            f"could not write table {table!r} to {location} ({failure_reason(cause)}); "
            "the data committed before is intact and a rerun resumes"
        )
