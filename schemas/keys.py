"""Row keys: which tables must not repeat them, and the vectorized operations on them.

Two kinds of keyed tables (:data:`UNIQUE_KEYED`, :data:`CONTENT_KEYED`): a repeated key of
``runs`` or ``measurements`` is a row written twice and is refused; equal keys of the
content-hashed tables mean equal rows, and copies are dropped. Every reader, ``check``,
``compact`` and the replacement of files (:mod:`schemas.replacement`) use these functions, so
they agree on what a key is.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from schemas.errors import ConflictingCopiesError, RepeatedKeyError

CONTENT_KEYED = frozenset({"kernels", "ir_graphs", "ir_nodes", "ir_edges"})
"""Tables whose key is a content hash: equal keys mean equal rows, so copies are dropped."""

UNIQUE_KEYED = frozenset({"runs", "measurements"})
"""Tables whose key identifies one observation: a repeated key is a row written twice, which
readers refuse rather than silently drop (they could not tell which copy is right)."""

_SEPARATOR = "\x1f"
_NULL = "\x00"
_ITEM_END = "\x1e"  # ends each item of a list's string, so [] and [""] differ


def value_strings(values: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """One string per value of ``values`` that equals another value's string only when the
    values are equal (nulls kept apart from every value; lists and structs too, item by item),
    so nested columns can be grouped and compared like flat ones."""
    if isinstance(values, pa.ChunkedArray):
        return pa.chunked_array([value_strings(chunk) for chunk in values.chunks], pa.string())
    kind = values.type
    if _is_list_view(kind):  # another writer's representation of a list (rare): as the list
        values = pa.array(values.to_pylist(), pa.list_(kind.value_type))
        kind = values.type
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        items = pc.binary_join_element_wise(value_strings(values.values), "", _ITEM_END)
        joined = pc.binary_join(type(values).from_arrays(values.offsets, items), "")
        return pc.if_else(values.is_valid(), joined, _NULL)  # a null list's offsets may span items
    if pa.types.is_struct(kind):
        fields = [value_strings(field) for field in values.flatten()]
        joined = pc.binary_join_element_wise(*fields, _ITEM_END) if fields else pa.nulls(len(values), pa.string())
        return pc.if_else(values.is_valid(), joined, _NULL)
    if pa.types.is_nested(kind):
        raise TypeError(f"no string form for {kind}")  # maps, unions: no table has them
    return pc.fill_null(pc.cast(values, pa.string()), _NULL)


def _is_list_view(kind: pa.DataType) -> bool:
    views = [getattr(pa.types, name, None) for name in ("is_list_view", "is_large_list_view")]
    return any(view is not None and view(kind) for view in views)  # pyarrow >= 16 has them


def flat(table: pa.Table, columns: Sequence[str]) -> pa.Table:
    """``table``'s ``columns``, the nested ones as :func:`value_strings` (grouping needs flat
    values)."""
    return pa.table(
        {
            name: value_strings(table.column(name)) if pa.types.is_nested(table.schema.field(name).type) else table.column(name)
            for name in columns
        }
    )


def key_strings(table: pa.Table, key: Sequence[str]) -> pa.ChunkedArray | pa.Array:
    """One string per row of ``table`` joining its ``key`` columns (any types, lists too;
    nulls kept apart from every value), so keys can be compared with ``is_in`` and hashed as
    one column."""
    parts = [value_strings(table.column(name)) for name in key]
    if len(parts) == 1:
        return parts[0]
    return pc.binary_join_element_wise(*parts, _SEPARATOR)


def key_set(table: pa.Table, key: Sequence[str]) -> pa.Array:
    """The distinct :func:`key_strings` of ``table``: what :func:`missing_from` looks rows up
    in. Made once for a table that several others are compared with (a merged file and each
    file it replaces): building the strings costs more than looking them up."""
    return pc.unique(key_strings(table, key))


def missing_from(rows: pa.Table, keys: pa.Array, key: Sequence[str]) -> int:
    """How many rows of ``rows`` have a ``key`` not in ``keys`` (a :func:`key_set`)."""
    if rows.num_rows == 0:
        return 0
    found = pc.is_in(key_strings(rows, key), value_set=keys)
    return rows.num_rows - int(pc.sum(found).as_py() or 0)


def dedupe(table: pa.Table, key: Sequence[str]) -> pa.Table:
    """Keep the first row of every key."""
    if table.num_rows == 0:
        return table
    indexed = table.select(list(key)).append_column(
        "__row", pa.array(range(table.num_rows), pa.int64())
    )
    first = indexed.group_by(list(key), use_threads=False).aggregate([("__row", "min")])
    if first.num_rows == table.num_rows:
        return table
    rows = first.column("__row_min")
    return table.take(pc.take(rows, pc.sort_indices(rows)))


def distinct_by_hash(table: pa.Table, key: Sequence[str]) -> bool:
    """True when a hash of each row's ``key`` proves that no key repeats: a screen several
    times cheaper than :func:`repeated_keys` at a million rows, used when polars is already
    imported (as for :func:`schemas.scan_table`), whose hash is multi-threaded. Equal keys hash
    equal, so distinct hashes prove distinct keys; False (polars not loaded, or two hashes
    equal) sends the caller to the exact check."""
    polars = sys.modules.get("polars")
    if polars is None:
        return False
    frame = polars.from_arrow(table.select(list(key)))
    if not isinstance(frame, polars.DataFrame):
        return False
    return frame.select(polars.struct(list(key)).hash().n_unique()).item() == table.num_rows


@dataclass(frozen=True)
class RepeatedKeys:
    """Rows beyond the first of each key (``extra``) and one repeated key as an example."""

    key: tuple[str, ...]
    extra: int
    example: dict[str, Any] | None
    repeated: pa.Table | None = field(default=None, compare=False, repr=False)
    """The distinct repeated keys (the ``key`` columns, one row each), for :func:`copied_rows`
    of the same rows: finding the copies then needs no second grouping of every row."""


def repeated_keys(table: pa.Table, key: Sequence[str]) -> RepeatedKeys:
    """How many rows of ``table`` repeat a ``key`` of an earlier row."""
    key = tuple(key)
    if table.num_rows == 0:
        return RepeatedKeys(key, 0, None)
    repeated = _repeated_counts(table, key)
    if repeated.num_rows == 0:
        return RepeatedKeys(key, 0, None, repeated.select(list(key)))
    extra = int(pc.sum(repeated.column("count_all")).as_py()) - repeated.num_rows
    keys = repeated.select(list(key))
    return RepeatedKeys(key, extra, keys.slice(0, 1).to_pylist()[0], keys)


def _repeated_counts(table: pa.Table, key: Sequence[str]) -> pa.Table:
    """The keys of ``table`` that more than one row has, with how many (``count_all``)."""
    counts = table.select(list(key)).group_by(list(key)).aggregate([([], "count_all")])
    return counts.filter(pc.greater(counts.column("count_all"), 1))


def refuse_repeats(table: str, found: RepeatedKeys) -> None:
    """Raise :class:`RepeatedKeyError` when ``found`` has repeated keys."""
    if found.extra:
        example = ", ".join(f"{k}={v}" for k, v in (found.example or {}).items())
        raise RepeatedKeyError(
            f"{table}: {found.extra} row(s) repeat a key ({', '.join(found.key)}), e.g. {example}: "
            "rows written twice, or one log imported into datasets since merged; `python -m schemas "
            "check DIR` names the files and `--fix` drops copies that are identical or one import "
            "done again"
        )


def copied_rows(table: pa.Table, key: Sequence[str], repeated: pa.Table | None = None) -> pa.Table:
    """The rows of ``table`` whose ``key`` another row shares (all copies, first ones too).

    ``repeated``: the repeated keys when already known (:attr:`RepeatedKeys.repeated` of
    ``table``'s rows, or of a superset of them that holds every row of those keys), so that
    every row is not grouped a second time."""
    if repeated is None:
        repeated = _repeated_counts(table, key)
    if repeated.num_rows == 0:
        return table.slice(0, 0)
    return table.filter(pc.is_in(key_strings(table, key), value_set=key_strings(repeated, key)))


def conflicting_copies(
    table: pa.Table, key: Sequence[str], fixed: Sequence[str], repeated: pa.Table | None = None
) -> RepeatedKeys:
    """Copies of a key (rows of ``table`` sharing ``key``) that differ in a ``fixed`` column:
    ``extra`` counts the distinct versions beyond the first of each key. ``repeated``: as for
    :func:`copied_rows`."""
    if not fixed or table.num_rows == 0:
        return RepeatedKeys(tuple(key), 0, None)
    identity = [*key, *fixed]
    # only copies can differ: group the few of them, not every row on every fixed column
    copies = flat(copied_rows(table.select(identity), key, repeated), identity)
    versions = copies.group_by(identity, use_threads=False).aggregate([])
    return repeated_keys(versions, key)


def refuse_conflicts(table: str, found: RepeatedKeys, fixed: Sequence[str]) -> None:
    """Raise :class:`ConflictingCopiesError` when ``found`` (:func:`conflicting_copies`) has
    copies that differ."""
    if found.extra:
        example = ", ".join(f"{k}={v}" for k, v in (found.example or {}).items())
        raise ConflictingCopiesError(
            f"{table}: {found.extra} copy(ies) of a key hold other values of {', '.join(fixed)} "
            f"than the first, e.g. {example}: copies of one key must be the same row; "
            "`python -m schemas check` names the files"
        )
