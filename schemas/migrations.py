"""Upgrades of files written under older schema versions.

A migration lifts one table from version ``v`` to ``v + 1``; the reader chains them up to
:data:`schemas.tables.SCHEMA_VERSION`. Register one whenever SCHEMA_VERSION is bumped::

    @migration("measurements", from_version=1)
    def _add_foo(table: pa.Table) -> pa.Table:
        return table.append_column("foo", pa.nulls(table.num_rows, pa.int32()))
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from schemas.tables import SCHEMA_VERSION

Migration = Callable[[pa.Table], pa.Table]

MIGRATIONS: dict[tuple[str, int], Migration] = {}
"""(table name, from_version) -> function returning the table at from_version + 1."""


def migration(table: str, from_version: int) -> Callable[[Migration], Migration]:
    """Decorator registering a one-step migration of ``table`` from ``from_version``."""

    def register(function: Migration) -> Migration:
        MIGRATIONS[(table, from_version)] = function
        return function

    return register


def oldest_readable(table: str) -> int:
    """Lowest version from which registered migrations reach SCHEMA_VERSION."""
    version = SCHEMA_VERSION
    while (table, version - 1) in MIGRATIONS:
        version -= 1
    return version


def upgrade(table_name: str, table: pa.Table, from_version: int) -> pa.Table:
    """Apply the chain of migrations from ``from_version`` to SCHEMA_VERSION."""
    for version in range(from_version, SCHEMA_VERSION):
        table = MIGRATIONS[(table_name, version)](table)
    return table
