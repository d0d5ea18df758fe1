"""Schema-version-gated reading of dataset tables.

Every file's footer is checked before any data is read: a newer ``schema_version`` raises
:class:`SchemaVersionError` naming the file; older files are upgraded through
:mod:`schemas.migrations`. Measurements of uncommitted runs (no matching ``runs`` row) are
dropped, and content-keyed tables (kernels, ir_*) are deduplicated on their key, so what a
reader sees never depends on crashes or on how many writers raced.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from schemas.errors import (
    CorruptFileError,
    DatasetError,
    FileVanishedError,
    RepeatedKeyError,
    SchemaMismatchError,
    SchemaVersionError,
)
from schemas.harvests import check_mode, needed_columns, one_harvest
from schemas.migrations import oldest_readable, upgrade
from schemas.storage import (
    Location,
    footer_replaces,
    footer_version,
    list_parquet,
    read_file,
    read_footer,
    resolve,
    vanished,
)
from schemas.tables import SCHEMA_VERSION, table_spec
from schemas.validate import file_problems
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


def table_files(loc: Location, table: str, on_problem: Callable[[DatasetError], None] | None = None) -> TableFiles:
    """Inspect every footer: version-gate, validate (:mod:`schemas.validate`) and drop files a
    compacted file replaced.

    A live file that is unreadable, of another version range or of the wrong schema raises a
    :class:`DatasetError` naming it; with ``on_problem`` it is reported there and left out
    instead (``check`` collects every problem). A file removed meanwhile raises
    :class:`FileVanishedError`: list again (:func:`stable`).
    """
    files = list_parquet(loc, table)
    versions: dict[str, int] = {}
    failures: dict[str, DatasetError] = {}
    superseded: set[str] = set()
    oldest = oldest_readable(table)
    for path in files:
        try:
            footer = read_footer(loc, path)
            version = footer_version(path, footer)
            if not oldest <= version <= SCHEMA_VERSION:
                raise SchemaVersionError(path, version, oldest, SCHEMA_VERSION)
            problems = file_problems(table, footer, version, lambda p=path: _version_column(loc, p))
            if problems:
                raise SchemaMismatchError(path, problems)
        except FileVanishedError:
            raise
        except DatasetError as exc:
            failures[path] = exc
            continue
        versions[path] = version
        directory = posixpath.dirname(path)
        superseded.update(posixpath.join(directory, name) for name in footer_replaces(footer))
    for path, exc in failures.items():
        if path in superseded:  # replaced by a merged file: readers never look at it
            continue
        if on_problem is None:
            raise exc
        on_problem(exc)
    live = [p for p in versions if p not in superseded]
    return TableFiles(
        current=[p for p in live if versions[p] == SCHEMA_VERSION],
        older={p: versions[p] for p in live if versions[p] != SCHEMA_VERSION},
        superseded=sorted(superseded & set(files)),
    )


def _version_column(loc: Location, path: str) -> pa.ChunkedArray:
    return read_file(loc, path, ["schema_version"]).column("schema_version")


RELIST_ATTEMPTS = 20

T = TypeVar("T")


def stable(read: Callable[[], T]) -> T:
    """Run ``read`` (list, then read files) again when a listed file vanished under it.

    A concurrent ``compact`` writes the merged file before deleting the files it replaces, so a
    fresh listing sees the merged file and skips the replaced ones: what is read is the same.
    """
    for attempt in range(RELIST_ATTEMPTS):
        try:
            return read()
        except FileVanishedError:
            if attempt == RELIST_ATTEMPTS - 1:
                raise
            time.sleep(0.01 * (attempt + 1))
    raise AssertionError("unreachable")


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
            gone = next((p for p in found.current if vanished(loc, p)), None)
            if gone is not None:
                raise FileVanishedError(gone) from exc
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


UNIQUE_KEYED = frozenset({"runs", "measurements"})
"""Tables whose key identifies one observation: a repeated key is a row written twice, which
readers refuse rather than silently drop (they could not tell which copy is right)."""


@dataclass(frozen=True)
class RepeatedKeys:
    """Rows beyond the first of each key (``extra``) and one repeated key as an example."""

    key: tuple[str, ...]
    extra: int
    example: dict[str, Any] | None


def repeated_keys(table: pa.Table, key: Sequence[str]) -> RepeatedKeys:
    """How many rows of ``table`` repeat a ``key`` of an earlier row."""
    key = tuple(key)
    if table.num_rows == 0:
        return RepeatedKeys(key, 0, None)
    counts = table.select(list(key)).group_by(list(key)).aggregate([([], "count_all")])
    repeated = counts.filter(pc.greater(counts.column("count_all"), 1))
    if repeated.num_rows == 0:
        return RepeatedKeys(key, 0, None)
    extra = int(pc.sum(repeated.column("count_all")).as_py()) - repeated.num_rows
    return RepeatedKeys(key, extra, repeated.select(list(key)).slice(0, 1).to_pylist()[0])


def refuse_repeats(table: str, found: RepeatedKeys) -> None:
    """Raise :class:`RepeatedKeyError` when ``found`` has repeated keys."""
    if found.extra:
        example = ", ".join(f"{k}={v}" for k, v in (found.example or {}).items())
        raise RepeatedKeyError(
            f"{table}: {found.extra} row(s) repeat a key ({', '.join(found.key)}), e.g. {example}: "
            "the same rows were written twice; `python -m schemas check` names the files"
        )


def _commit_keys(table: pa.Table) -> pa.Array:
    return pc.binary_join_element_wise(*(table.column(k) for k in COMMIT_KEY), "\x1f")


def only_committed(measurements: pa.Table, runs: pa.Table) -> pa.Table:
    """Rows of ``measurements`` whose (run_id, harvest_id) has a ``runs`` row."""
    return measurements.filter(pc.is_in(_commit_keys(measurements), value_set=_commit_keys(runs)))


def committed_runs(url: str) -> pa.Table:
    """(run_id, harvest_id) of every committed run."""
    loc = resolve(url)
    return stable(lambda: _read_files(loc, "runs", table_files(loc, "runs"), list(COMMIT_KEY), None))


def read_table(
    url: str,
    table: str,
    columns: Sequence[str] | None = None,
    filters: Filters = None,
    *,
    committed_only: bool = True,
    harvests: str = "all",
) -> pa.Table:
    """Read one table of the dataset at ``url`` as a pyarrow Table.

    ``columns``: subset to return. ``filters``: a ``pyarrow.compute`` expression or
    pyarrow-style DNF tuples, e.g. ``[("status", "=", "ok")]``. Measurements of uncommitted
    runs are dropped unless ``committed_only=False``; content-keyed tables are deduplicated.

    ``harvests`` (runs and measurements; training scripts want one label per config):
    ``"all"`` keeps every harvest's rows (repeats of a run included); ``"latest"`` keeps, per
    (run_id, config_id), the measurement of the most recent committed harvest (its runs row's
    ``finished_at``, ties to the larger ``harvest_id``) and per run_id the most recent runs row;
    ``"pooled"`` gives one measurement per (run_id, config_id) with ``samples_ms`` of every
    harvest concatenated (oldest first) and the timing statistics recomputed from them, status
    ``ok`` only when every repeat was ok (else the latest failure's status and error), other
    columns from the latest repeat (see :mod:`schemas.harvests`). With ``"latest"`` or
    ``"pooled"``, ``filters`` apply to the chosen rows, not before the choice.

    Raises :class:`DatasetError` for a missing table, :class:`CorruptFileError`,
    :class:`SchemaVersionError` and :class:`SchemaMismatchError` naming the file at fault, and
    :class:`RepeatedKeyError` when ``runs`` or ``measurements`` rows repeat their key (a row
    written twice; ``python -m schemas check`` names the files). Files that a concurrent
    ``compact`` replaces while they are read are read from the merged file instead.
    """
    check_mode(harvests, table, committed_only)
    spec = table_spec(table)
    loc = resolve(url)
    wanted = list(columns) if columns is not None else None
    needed = wanted
    extra_keys: list[str] = []
    if wanted is not None:
        if table == "measurements" and committed_only:
            extra_keys += [k for k in COMMIT_KEY if k not in wanted]
        if table in CONTENT_KEYED or table in UNIQUE_KEYED:
            extra_keys += [k for k in spec.key if k not in wanted and k not in extra_keys]
        extra_keys += [k for k in needed_columns(table, harvests) if k not in wanted and k not in extra_keys]
        needed = wanted + extra_keys
    expression = _expression(filters)
    choose_first = bool(needed_columns(table, harvests))  # filter the chosen rows, not before
    if choose_first and expression is not None:
        needed = None  # the filter may name any column
    read_filter = None if choose_first else expression
    result = stable(lambda: _read_files(loc, table, table_files(loc, table), needed, read_filter))
    if table == "measurements" and committed_only:
        result = only_committed(result, committed_runs(url))
    if table in CONTENT_KEYED:
        result = dedupe(result, spec.key)
    if table in UNIQUE_KEYED:
        refuse_repeats(table, repeated_keys(result, spec.key))
    if choose_first:
        recency = _finish_times(loc) if table == "measurements" else None
        result = one_harvest(table, result, harvests, recency)
        if expression is not None:
            result = result.filter(expression)
    if wanted is not None:
        result = result.select(wanted)
    return result


def _finish_times(loc: Location) -> pa.Table:
    """(run_id, harvest_id, finished_at) of every committed run: the harvests' recency."""
    columns = [*COMMIT_KEY, "finished_at"]
    return stable(lambda: _read_files(loc, "runs", table_files(loc, "runs"), columns, None))


def scan_table(
    url: str,
    table: str,
    *,
    committed_only: bool = True,
    harvests: str = "all",
) -> pl.LazyFrame:
    """The table as a polars LazyFrame, with the same gating as :func:`read_table`.

    Local datasets whose files are all at the current version are scanned lazily by polars
    itself (projection and predicate pushdown apply); otherwise, and for ``harvests``
    ``"latest"`` / ``"pooled"`` (one harvest per run, as in :func:`read_table`), the gated
    pyarrow read is wrapped.

    The frame holds its files open (up to :data:`PIN_LIMIT` files; beyond that it names them),
    so a concurrent ``compact`` that deletes them later does not break it.
    """
    import polars as pl

    check_mode(harvests, table, committed_only)
    loc = resolve(url)
    found = stable(lambda: table_files(loc, table))
    is_local = not ("://" in url and not url.startswith("file://"))
    if not (is_local and found.current and not found.older) or needed_columns(table, harvests):
        gated = read_table(url, table, committed_only=committed_only, harvests=harvests)
        return pl.from_arrow(gated).lazy()
    listings = iter([found])  # the first attempt reuses this listing; a retry lists again
    return stable(lambda: _lazy_frame(loc, url, table, committed_only, first=next(listings, None)))


PIN_LIMIT = 256
"""Up to this many files, a lazy scan holds them open (polars maps them lazily, so nothing is
read early): a concurrent ``compact`` that deletes them afterwards cannot break the frame."""


def _pinned(paths: list[str]) -> list[Any]:
    """Open file handles for ``paths`` (at most :data:`PIN_LIMIT`), else the paths themselves."""
    if len(paths) > PIN_LIMIT:
        return list(paths)
    handles = []
    try:
        for path in paths:
            handles.append(open(path, "rb"))  # noqa: SIM115 - owned by the LazyFrame
    except FileNotFoundError as exc:
        for handle in handles:
            handle.close()
        raise FileVanishedError(str(exc.filename)) from exc
    return handles


def _lazy_frame(loc: Location, url: str, table: str, committed_only: bool, *, first: TableFiles | None) -> pl.LazyFrame:
    """polars' own lazy scan of the table's live files (one :func:`stable` attempt)."""
    import polars as pl

    found = first if first is not None else table_files(loc, table)
    frame = pl.scan_parquet(_pinned(found.current), hive_partitioning=False)
    if table == "measurements" and committed_only:
        runs = pl.from_arrow(committed_runs(url)).lazy()
        frame = frame.join(runs, on=list(COMMIT_KEY), how="semi")
    if table in CONTENT_KEYED:
        frame = frame.unique(subset=list(table_spec(table).key), keep="first", maintain_order=True)
    if table in UNIQUE_KEYED:  # same verdict as read_table; polars reads the key columns only
        key = list(table_spec(table).key)
        try:
            repeats = frame.group_by(key).len().filter(pl.col("len") > 1).collect()
        except FileNotFoundError as exc:  # compaction replaced a file since the listing
            raise FileVanishedError(str(exc)) from exc
        if repeats.height:
            example = repeats.row(0, named=True)
            extra = int(repeats["len"].sum()) - repeats.height
            refuse_repeats(table, RepeatedKeys(tuple(key), extra, {k: example[k] for k in key}))
    return frame
