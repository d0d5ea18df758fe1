"""Errors raised by dataset IO. Each names the file or directory at fault."""

from __future__ import annotations


class DatasetError(Exception):
    """A dataset cannot be read or written as asked (missing table, bad rows, ...)."""


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
            + ("upgrade kernel-corpus to read it." if version > newest else "no migration is registered for it.")
        )
