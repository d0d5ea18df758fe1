"""Upgrades of files written under older schema versions.

A migration lifts one table from version ``v`` to ``v + 1``; the reader chains them up to
:data:`schemas.tables.SCHEMA_VERSION`. Register one for every table whenever SCHEMA_VERSION is
bumped, keep the old layout in :mod:`schemas.history` and say in :data:`LIFTED` how each
new field is filled::

    @migration("measurements", from_version=1)
    def _add_foo(table: pa.Table) -> pa.Table:
        return table.append_column("foo", pa.nulls(table.num_rows, pa.int32()))

A migration adds the columns it can derive from the old rows and drops the removed ones; the
reader then conforms the result to the current schema, which fills every other new column
with nulls (:func:`schemas.reader.lift`). Migrations must not need anything outside the file
(no suite, no other table), so a lone file of any version is readable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from schemas.enums import Source
from schemas.tables import IR_NODE_INTEGER_ATTRIBUTES, SCHEMA_VERSION, IntegerAttribute

Migration = Callable[[pa.Table], pa.Table]

MIGRATIONS: dict[tuple[str, int], Migration] = {}
"""(table name, from_version) -> function returning the table at from_version + 1."""

WARP_SIZE = 32
"""Threads per warp on NVIDIA GPUs (threads_per_program = num_warps x WARP_SIZE)."""

LIFTED: dict[int, dict[str, str]] = {
    2: {
        "runs.arithmetic_intensity": "derived: flops / bytes_moved (null when bytes_moved is 0 or null)",
        "runs.ir_target": "derived: the `ir_target` of toolchain_json (interpreter runs), else arch "
        "when it is an `sm_XX` (a GPU run compiled for its own device)",
        "runs.source": "`harvest` (version 1 had no other source of rows)",
        "runs.timing_passes": "1 (version 1 timed each config's reps back to back, in one pass)",
        "runs.reps_per_pass": "derived: rep",
        "runs.problem_dims": "null: which problem_json entries are sizes and which are mode flags "
        "is known only to the suite family",
        "runs.problem_flags": "null: as problem_dims",
        "measurements.threads_per_program": "derived: num_warps x 32",
        "measurements.grid": "null: the launch grid comes from the suite family's bind() on the "
        "run's shapes",
        "measurements.num_programs": "null: as grid",
        "measurements.config_roles": "null: knob roles are declared by the suite family",
        "ir_nodes.divisibility": "derived: parsed from attrs_json (`tt.divisibility`)",
        "ir_nodes.contiguity": "derived: parsed from attrs_json (`tt.contiguity`, `contiguity`)",
        "ir_nodes.loop_num_stages": "derived: parsed from attrs_json (`tt.num_stages`)",
        "ir_nodes.num_pending": "derived: parsed from attrs_json (`num`, `pendings`)",
    },
}
"""Per target version: how a migration fills each new ``table.field`` of that version.
Fields not listed are null in lifted rows (version 1 did not record them). Rendered into
the "Changes" sections of docs/SCHEMA.md; re-harvesting with current code fills everything."""


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


# ------------------------------------------------------------------------- helpers


def _set(table: pa.Table, name: str, values: pa.Array | pa.ChunkedArray) -> pa.Table:
    """``table`` with column ``name`` replaced or appended."""
    if name in table.column_names:
        return table.set_column(table.column_names.index(name), name, values)
    return table.append_column(name, values)


def _get(table: pa.Table, name: str, type_: pa.DataType) -> pa.ChunkedArray:
    """Column ``name`` as ``type_``; nulls when the file lacks it (a nullable column may be
    absent from a file written by other tools)."""
    if name in table.column_names:
        return pc.cast(table.column(name), type_)
    return pa.chunked_array([pa.nulls(table.num_rows, type_)])


def _bump(table: pa.Table, version: int) -> pa.Table:
    return _set(table, "schema_version", pa.array([version] * table.num_rows, pa.int32()))


def attribute_integers(
    nodes: pa.Table, attributes: tuple[IntegerAttribute, ...]
) -> pa.ChunkedArray:
    """Per ``ir_nodes`` row, the leading integer of the first of ``attributes`` present in its
    canonical ``attrs_json`` (16 from ``{"tt.divisibility":"16 : i32"}``), int64; null where
    none is. Vectorized (a regex per attribute over the column): ir_nodes are the largest tables.
    """
    attrs_json = _get(nodes, "attrs_json", pa.string())
    result = pa.chunked_array([pa.nulls(nodes.num_rows, pa.int64())])
    for attribute in reversed(attributes):  # earlier ones take precedence
        # Canonical JSON quotes every key, so '"contiguity":' never matches "tt.contiguity".
        pattern = '"' + re.escape(attribute.name) + r'":"(?P<value>-?[0-9]+)'
        found = pc.cast(pc.struct_field(pc.extract_regex(attrs_json, pattern), [0]), pa.int64())
        if attribute.ops:
            on_op = pc.is_in(_get(nodes, "op_name", pa.string()), pa.array(attribute.ops))
            found = pc.if_else(on_op, found, None)
        result = pc.coalesce(found, result)
    return result


def _toolchain_ir_target(toolchain_json: str | None) -> str | None:
    if not toolchain_json:
        return None
    try:
        value = json.loads(toolchain_json).get("ir_target")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def _ir_target(arch: str | None, toolchain_json: str | None) -> str | None:
    """Interpreter runs name their explicit compile target in the toolchain fingerprint; GPU
    runs compiled for their own arch."""
    explicit = _toolchain_ir_target(toolchain_json)
    if explicit:
        return explicit
    if arch and arch.startswith("sm_"):
        return arch
    return None


# ------------------------------------------------------------------------- 1 -> 2


@migration("kernels", from_version=1)
def _kernels_1_to_2(table: pa.Table) -> pa.Table:
    return _bump(table, 2)


@migration("runs", from_version=1)
def _runs_1_to_2(table: pa.Table) -> pa.Table:
    rows = table.num_rows
    flops = _get(table, "flops", pa.float64())
    moved = _get(table, "bytes_moved", pa.float64())
    # bytes_moved of 0 would give inf (or nan for 0/0): a meaningless intensity, so null.
    usable = pc.if_else(pc.greater(moved, 0), moved, pa.scalar(None, pa.float64()))
    table = _set(table, "arithmetic_intensity", pc.divide(flops, usable))
    arches = _get(table, "arch", pa.string()).to_pylist()
    toolchains = _get(table, "toolchain_json", pa.string()).to_pylist()
    targets = [_ir_target(arch, toolchain) for arch, toolchain in zip(arches, toolchains)]
    table = _set(table, "ir_target", pa.array(targets, pa.string()))
    # Version 1 had no other source of rows, and timed each config's reps back to back: one pass.
    table = _set(table, "source", pa.array([Source.HARVEST.value] * rows, pa.string()))
    table = _set(table, "timing_passes", pa.array([1] * rows, pa.int32()))
    table = _set(table, "reps_per_pass", _get(table, "rep", pa.int32()))
    return _bump(table, 2)


@migration("measurements", from_version=1)
def _measurements_1_to_2(table: pa.Table) -> pa.Table:
    warps = _get(table, "num_warps", pa.int32())
    table = _set(table, "threads_per_program", pc.multiply(warps, pa.scalar(WARP_SIZE, pa.int32())))
    return _bump(table, 2)


@migration("ir_graphs", from_version=1)
def _ir_graphs_1_to_2(table: pa.Table) -> pa.Table:
    # Version 1 stored the num_stages of whichever config compiled the IR first; configs that
    # share an IR differ in it, so the value was wrong for the others (measurements has it).
    if "num_stages" in table.column_names:
        table = table.drop_columns(["num_stages"])
    return _bump(table, 2)


@migration("ir_nodes", from_version=1)
def _ir_nodes_1_to_2(table: pa.Table) -> pa.Table:
    for column, attributes in IR_NODE_INTEGER_ATTRIBUTES.items():
        table = _set(table, column, attribute_integers(table, attributes))
    return _bump(table, 2)


@migration("ir_edges", from_version=1)
def _ir_edges_1_to_2(table: pa.Table) -> pa.Table:
    return _bump(table, 2)
