"""Schema-version-gated reading of dataset tables.

Every file's footer is checked before any data is read: a newer ``schema_version`` raises
:class:`SchemaVersionError` naming the file; older files are upgraded through
:mod:`schemas.migrations`. Measurements of uncommitted runs (no matching ``runs`` row) are
dropped, and content-keyed tables (kernels, ir_*) are deduplicated on their key, so what a
reader sees never depends on crashes or on how many writers raced.
"""

from __future__ import annotations

import os
import posixpath
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from schemas import verdicts
from schemas.errors import (
    CorruptFileError,
    DatasetError,
    FileVanishedError,
    IncompleteRunError,
    ReadRequestError,
    SchemaMismatchError,
    SchemaVersionError,
    failure_reason,
)
from schemas.harvests import (
    RUN_SUMMARY,
    SUMMARY_INPUTS,
    TIMED_AS,
    check_mode,
    merged_runs,
    needed_columns,
    one_harvest,
    summarize_runs,
)
from schemas.keys import (
    CONTENT_KEYED,
    UNIQUE_KEYED,
    RepeatedKeys,
    conflicting_copies,
    dedupe,
    distinct_by_hash,
    refuse_conflicts,
    refuse_repeats,
    repeated_keys,
)
from schemas.migrations import oldest_readable, upgrade
from schemas.replacement import claim_columns, settle_claims
from schemas.storage import (
    PARQUET,
    FileStat,
    Footer,
    Location,
    list_files,
    parse_footer,
    partition_values,
    read_file,
    read_footer,
    resolve,
    vanished,
)
from schemas.tables import SCHEMA_VERSION, table_spec
from schemas.validate import (
    file_problems,
    flat_columns,
    layout_problems,
    statistics_problems,
    trusted_columns,
)
from schemas.writer import conform

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "CONTENT_KEYED",
    "UNIQUE_KEYED",
    "RepeatedKeys",
    "TableFiles",
    "committed_runs",
    "dedupe",
    "file_keys",
    "lift",
    "read_table",
    "refuse_repeats",
    "repeated_keys",
    "scan_table",
    "table_files",
]

COMMIT_KEY = ("run_id", "harvest_id")

Filters = pa.compute.Expression | Sequence[Any] | None


@dataclass(frozen=True)
class TableFiles:
    """The live files of one table, split by schema version, and what was left out."""

    current: list[str]
    older: dict[str, int]
    superseded: list[str]
    """Files retired by a verified replacement (see :mod:`schemas.replacement`)."""
    stats: tuple[FileStat, ...] = ()
    """Size, modification time and storage version (a local file's ctime and inode, an object's
    ETag or generation) of every live file: the file set's identity (:mod:`schemas.verdicts`)."""
    uniform: bool = True
    """Every current-version file stores every declared column, none dictionary-encoded: what
    polars needs to scan the files as one (:func:`scan_table`); valid files may lack nullable
    columns or encode strings as dictionaries, which the pyarrow read conforms."""
    rows: int = 0
    """Rows in the live files, from their footers."""
    footers: Mapping[str, pq.FileMetaData] = field(default_factory=dict, compare=False, repr=False)
    """Each live file's Parquet footer, as validated (callers holding the rows need not read it
    again: ``check`` verifies every file's statistics against rows it read once)."""

    @property
    def live(self) -> list[str]:
        return [*self.current, *self.older]


def table_files(
    loc: Location, table: str, on_problem: Callable[[DatasetError], None] | None = None
) -> TableFiles:
    """Inspect every footer: version-gate, validate (:mod:`schemas.validate`) and drop files a
    verified replacement retired (:func:`schemas.replacement.settle_claims`).

    A live file that is unreadable, of another version range or of the wrong schema, and a
    replacement claim that does not hold, raise a :class:`DatasetError` naming the file;
    with ``on_problem`` each is reported there instead (``check`` collects every problem)
    and the files concerned stay live. A file removed meanwhile raises
    :class:`FileVanishedError`: list again (:func:`stable`).
    """
    listed = list_files(loc, table)
    footers: dict[str, Footer] = {}
    failures: dict[str, DatasetError] = {}
    oldest = oldest_readable(table)
    for stat in listed:
        path = stat.path
        try:
            footer = parse_footer(path, read_footer(loc, path))
            if not oldest <= footer.version <= SCHEMA_VERSION:
                raise SchemaVersionError(path, footer.version, oldest, SCHEMA_VERSION)
            problems = layout_problems(
                table_spec(table).partition_by, posixpath.relpath(path, loc.table_dir(table))
            )
            problems += file_problems(
                table,
                footer.metadata,
                footer.version,
                lambda column, p=path: read_file(loc, p, [column]).column(column),
                partition_values(loc, table, path),
            )
            if problems:
                raise SchemaMismatchError(path, problems)
        except FileVanishedError:
            raise
        except DatasetError as exc:
            failures[path] = exc
            continue
        footers[path] = footer
    retired, claim_problems = settle_claims(
        table, footers, list(failures), lambda path: file_keys(loc, table, path, footers[path].version)
    )
    problems = [exc for path, exc in failures.items() if path not in retired] + claim_problems
    if problems and on_problem is None:
        raise problems[0]
    for exc in problems:
        on_problem(exc)  # type: ignore[misc]
    live = [p for p in footers if p not in retired]
    versions = {p: footers[p].version for p in live}
    by_path = {stat.path: stat for stat in listed}
    current = [p for p in live if versions[p] == SCHEMA_VERSION]
    return TableFiles(
        current=current,
        older={p: versions[p] for p in live if versions[p] != SCHEMA_VERSION},
        superseded=sorted(retired),
        stats=tuple(by_path[p] for p in live),
        uniform=all(_scannable(table, footers[p].metadata) for p in current),
        rows=sum(footers[p].metadata.num_rows for p in live),
        footers={p: footers[p].metadata for p in live},
    )


def _scannable(table: str, metadata: pq.FileMetaData) -> bool:
    """Whether polars reads this current-version file as the declared schema: every column
    present and none dictionary-encoded."""
    stored = metadata.schema.to_arrow_schema()
    declared = table_spec(table).schema
    return set(stored.names) == set(declared.names) and not any(
        pa.types.is_dictionary(field.type) for field in stored
    )


def file_keys(loc: Location, table: str, path: str, version: int) -> pa.Table:
    """The columns a replacement claim is checked on (key and fixed values, and what tells an
    imported run: :func:`schemas.replacement.claim_columns`) of the rows of ``path``, a
    ``version`` file of ``table``, lifted to the current schema (only those columns are read
    from a current-version file; a nullable one it does not store is left out)."""
    columns = list(claim_columns(table))
    if version == SCHEMA_VERSION:
        identity = table_spec(table).identity
        stored = set(read_footer(loc, path).schema.names) if len(columns) > len(identity) else set()
        return read_file(loc, path, [c for c in columns if c in identity or c in stored])
    return lift(table, read_file(loc, path), version).select(columns)


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


def check_request(table: str, columns: Sequence[str] | None, filters: Filters) -> None:
    """Refuse, naming them, ``columns`` and tuple ``filters`` columns that ``table`` does not
    have (a filter expression is checked when it is applied)."""
    names = table_spec(table).schema.names
    asked = list(columns or [])
    if filters is not None and not isinstance(filters, pa.compute.Expression):
        groups = filters if filters and isinstance(filters[0], list) else [filters]
        asked += [str(term[0]) for group in groups for term in group]
    unknown = sorted({name for name in asked if name not in names})
    if unknown:
        raise ReadRequestError(
            f"{table} has no column {', '.join(map(repr, unknown))} (its columns: {', '.join(names)})"
        )


def _expression(filters: Filters) -> pa.compute.Expression | None:
    if filters is None or isinstance(filters, pa.compute.Expression):
        return filters
    return pq.filters_to_expression(filters)


def _read_files(loc: Location, table: str, found: TableFiles, columns: list[str] | None, expression) -> pa.Table:
    schema = table_spec(table).schema
    pieces = []
    if found.current:
        try:
            dataset = ds.dataset(found.current, schema=schema, format=PARQUET, filesystem=loc.fs)
            pieces.append(dataset.to_table(columns=columns, filter=expression))
        except (OSError, pa.ArrowException) as exc:
            gone = next((p for p in found.current if vanished(loc, p)), None)
            if gone is not None:
                raise FileVanishedError(gone) from exc
            culprit = _find_unreadable(loc, found.current)
            if culprit is None:  # every file reads alone: the request is at fault, not a file
                raise ReadRequestError(
                    f"{table}: cannot read the columns or filters asked for ({failure_reason(exc)}); "
                    "the files are sound"
                ) from exc
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


def keys_unique(loc: Location, table: str, found: TableFiles, rows: pa.Table | None = None) -> bool:
    """Whether no key of ``table`` repeats across its live files ``found``; for ``runs`` and
    ``measurements`` a repeat raises :class:`RepeatedKeyError` instead.

    Copies of a content key that differ in the table's fixed columns raise
    :class:`ConflictingCopiesError` (for IR tables: in what ``ir_id`` hashes, so one copy is
    not the graph its id names). Checked once per file set: a set found sound, or found to hold
    copies that agree, is remembered (:mod:`schemas.verdicts`) and not checked again. ``rows``:
    every row of the live files with the key columns (content-keyed tables: every column), when
    the caller has read them anyway (saves reading them again).
    """
    if verdicts.known(loc, table, found.stats):
        return True
    if verdicts.known(loc, table + COPIES_AGREE, found.stats):
        return False
    spec = table_spec(table)
    key = list(spec.key)
    keys = rows.select(key) if rows is not None else _read_files(loc, table, found, key, None)
    if keys.num_rows > 1 and not distinct_by_hash(keys, key):
        repeats = repeated_keys(keys, key)  # exact, with an example for the message
        if table in UNIQUE_KEYED:
            refuse_repeats(table, repeats)
        if repeats.extra:
            # copies of a content key: harmless only if they are the same row. The repeated
            # keys just counted say which rows are copies: every row is not grouped again.
            copies = rows if rows is not None else _copies(loc, table, found, repeats.repeated)
            refuse_conflicts(table, conflicting_copies(copies, key, spec.fixed, repeats.repeated), spec.fixed)
            verdicts.remember(loc, table + COPIES_AGREE, found.stats)
            return False
    verdicts.remember(loc, table, found.stats)
    return True


def file_statistics_problems(loc: Location, path: str, columns: Collection[str] | None = None) -> list[str]:
    """:func:`schemas.validate.statistics_problems` of the file at ``path``: of its flat
    columns, or of those of them in ``columns`` (only those are read)."""
    metadata = read_footer(loc, path)
    flat = [c for c in flat_columns(metadata) if columns is None or c in columns]
    return statistics_problems(metadata, read_file(loc, path, flat))


def require_true_statistics(loc: Location, table: str, found: TableFiles, *, pruned: bool = True) -> None:
    """Raise :class:`CorruptFileError` naming the first live file of ``found`` whose row-group
    statistics do not hold its data, before rows of those files are read. Validation
    (:func:`schemas.validate.file_problems`) takes a file's null counts, partition values and
    ``schema_version`` from them (:func:`schemas.validate.trusted_columns`), so a lying footer
    would let a null in a required column, or a row of another partition or version, through
    every read; and with ``pruned`` (a filter will be pushed into the read) every flat
    column's are verified, since pyarrow and polars skip a row group by them and a lying
    footer would drop rows from filtered reads. Checked once per file set
    (:mod:`schemas.verdicts`): it reads the columns it verifies."""
    every = table + STATISTICS_VERDICT
    slot = every if pruned else table + TRUSTED_VERDICT
    if verdicts.known(loc, every, found.stats) or verdicts.known(loc, slot, found.stats):
        return
    for path in found.live:
        version = found.older.get(path, SCHEMA_VERSION)
        problems = file_statistics_problems(loc, path, None if pruned else trusted_columns(table, version))
        if problems:
            raise CorruptFileError(path, problems[0])
    verdicts.remember(loc, slot, found.stats)


STATISTICS_VERDICT = "+statistics"
"""Suffix of the verdict slot of "the table's files' row-group statistics hold their data"
(:func:`require_true_statistics`)."""

TRUSTED_VERDICT = "+trusted-statistics"
"""Suffix of the verdict slot of "the statistics validation takes hold the data" (those of
:func:`schemas.validate.trusted_columns`; :data:`STATISTICS_VERDICT` implies it)."""

STATISTICS_VERDICTS = (STATISTICS_VERDICT, TRUSTED_VERDICT)
"""Every suffix of a table's statistics verdicts: a table's statistics are verified again only
once all of them are forgotten (either one spares an unfiltered read the check)."""


COPIES_AGREE = "+copies"
"""Suffix of the verdict slot of "the table's copies of a content key agree on its fixed
columns" (:func:`keys_unique`): readers then drop the copies without comparing them again."""


def _copies(loc: Location, table: str, found: TableFiles, repeated: pa.Table | None) -> pa.Table:
    """The identity columns (key, fixed columns) of the rows of ``found`` whose first key
    column holds a value of a repeated key (``repeated``: :attr:`RepeatedKeys.repeated`): only
    those rows can be copies, and IR tables have many fixed columns."""
    assert repeated is not None  # repeated_keys() sets it whenever it counted rows
    spec = table_spec(table)
    first = spec.key[0]
    values = pc.unique(repeated.column(first))
    # The filter below skips row groups by the key's statistics: unverified, a copy in a file
    # whose footer lies about its keys escapes the comparison (and the verdict is remembered).
    require_true_statistics(loc, table, found, pruned=False)
    return _read_files(loc, table, found, list(spec.identity), pc.field(first).isin(values))


@dataclass(frozen=True)
class _Gated:
    found: TableFiles
    rows: pa.Table
    unique: bool
    every_key: pa.Table | None = None
    """Every row's key columns, when this read had them (for the key check): later checks on
    the same files need not read them again."""


def _gated_read(loc: Location, table: str, columns: list[str] | None, expression) -> _Gated:
    """List and validate the table's files, check their statistics and keys (once per file
    set), read the rows (one :func:`stable` attempt). Content-keyed tables with copies keep their key columns so
    the caller can drop the copies."""
    found = table_files(loc, table)
    require_true_statistics(loc, table, found, pruned=expression is not None)  # validation took them
    known = verdicts.known(loc, table, found.stats)
    if columns is None and expression is None and not known:
        rows = _read_files(loc, table, found, None, None)  # the full read holds every key
        return _Gated(found, rows, keys_unique(loc, table, found, rows), rows)
    keys = None
    if not known and table in UNIQUE_KEYED:  # a repeat raises: the keys alone decide
        keys = _read_files(loc, table, found, list(table_spec(table).key), None)
    unique = keys_unique(loc, table, found, keys)
    if columns is not None and not unique:
        columns = columns + [k for k in table_spec(table).key if k not in columns]
    return _Gated(found, _read_files(loc, table, found, columns, expression), unique, keys)


def _commit_keys(table: pa.Table) -> pa.Array:
    return pc.binary_join_element_wise(*(table.column(k) for k in COMMIT_KEY), "\x1f")


def only_committed(measurements: pa.Table, runs: pa.Table) -> pa.Table:
    """Rows of ``measurements`` whose (run_id, harvest_id) has a ``runs`` row."""
    committed = pc.is_in(_commit_keys(measurements), value_set=_commit_keys(runs))
    if pc.all(committed).as_py() is not False:  # every row committed, the usual case: no copy
        return measurements
    return measurements.filter(committed)


def incomplete_runs(measurements: pa.Table, runs: pa.Table) -> pa.Table:
    """Committed runs whose measurement rows are not ``n_configs``: ``run_id``,
    ``harvest_id``, ``n_configs`` and ``rows`` (their committed measurement rows).
    ``measurements`` needs the commit key columns; ``runs`` those and ``n_configs``."""
    committed = only_committed(measurements.select(list(COMMIT_KEY)), runs)
    counts = committed.group_by(list(COMMIT_KEY)).aggregate([([], "count_all")])
    joined = runs.select([*COMMIT_KEY, "n_configs"]).join(counts, keys=list(COMMIT_KEY), join_type="left outer")
    rows = joined.column("count_all").fill_null(0)
    short = pc.not_equal(joined.column("n_configs").fill_null(0), rows)
    return joined.set_column(joined.schema.get_field_index("count_all"), "rows", rows).filter(short)


def committed_runs(url: str | os.PathLike[str]) -> pa.Table:
    """(run_id, harvest_id) of every committed run."""
    loc = resolve(url)
    return stable(lambda: _gated_read(loc, "runs", list(COMMIT_KEY), None).rows)


@dataclass(frozen=True)
class _Commits:
    """The committed runs, read before the measurements: a writer adds a run's measurements
    before its ``runs`` row, so every run listed here has its rows in a later listing."""

    found: TableFiles
    rows: pa.Table
    """``run_id``, ``harvest_id``, ``n_configs``."""


def _commits(loc: Location) -> _Commits:
    gated = stable(lambda: _gated_read(loc, "runs", [*COMMIT_KEY, "n_configs"], None))
    return _Commits(gated.found, gated.rows)


COMPLETE_VERDICT = "measurements+runs"
"""The verdict slot of "every committed run has its n_configs measurement rows"
(:mod:`schemas.verdicts`), fingerprinted by both tables' files."""


def require_complete_runs(loc: Location, found: TableFiles, commits: _Commits, rows: pa.Table | None = None) -> None:
    """Raise :class:`IncompleteRunError` when a committed run of ``commits`` has more or fewer
    rows in the measurement files ``found`` than its ``n_configs`` (checked once per pair of
    file sets). ``rows``: every row of ``found`` with (at least) the commit keys, when read
    anyway."""
    stats = (*found.stats, *commits.found.stats)
    if verdicts.known(loc, COMPLETE_VERDICT, stats):
        return
    keys = rows if rows is not None else _read_files(loc, "measurements", found, list(COMMIT_KEY), None)
    short = incomplete_runs(keys, commits.rows)
    if short.num_rows:
        example = short.slice(0, 1).to_pylist()[0]
        raise IncompleteRunError(
            f"measurements: {short.num_rows} committed run(s) whose rows differ from their n_configs, "
            f"e.g. run_id={example['run_id']} (harvest {example['harvest_id']}) has {example['rows']} of "
            f"{example['n_configs']}: rows were lost or added after the commit "
            "(`python -m schemas check` names the problem; restore the files, or delete the run's "
            "`runs` row and harvest it again)"
        )
    verdicts.remember(loc, COMPLETE_VERDICT, stats)


def read_table(
    url: str | os.PathLike[str],
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
    harvest that timed it as the latest one did (same runs ``timer`` and ``l2_flush_bytes``)
    concatenated (oldest first) and the timing statistics recomputed from them, status ``ok``
    only when every such repeat was ok (else the latest failure's status and error), other
    columns from the latest repeat (see :mod:`schemas.harvests`). With ``"latest"`` or
    ``"pooled"``, ``filters`` apply to the chosen rows, not before the choice, and a run whose
    chosen ``ok`` rows were timed in different ways is refused (:class:`schemas.MixedTimingError`).
    The ``runs`` row of a run with several committed harvests then summarizes the view's
    measurements of the run: its ``n_configs``, ``n_ok``, ``best_config_id``, ``best_median_ms``
    and ``default_median_ms`` are recomputed from them (refused the same way when they mix
    timers), not copied from the latest harvest, which may have measured only some configs.

    Raises :class:`DatasetError` for a missing table, :class:`CorruptFileError`,
    :class:`SchemaVersionError` and :class:`SchemaMismatchError` naming the file at fault,
    :class:`ReplacementError` when a file claims to replace rows it does not hold, and
    :class:`RepeatedKeyError` when ``runs`` or ``measurements`` rows repeat their key anywhere
    in the table's files (a row written twice; ``python -m schemas check`` names the files),
    and for committed measurements :class:`IncompleteRunError` when a committed run's rows are
    not its ``n_configs`` (a lost file): these verdicts are the table's, whatever ``columns``
    and ``filters`` select, and are reached once per set of files (:mod:`schemas.verdicts`). Files that a concurrent ``compact``
    replaces while they are read are read from the merged file instead.
    """
    url = os.fspath(url)  # a pathlib.Path, as pyarrow and polars take it
    check_mode(harvests, table, committed_only)
    check_request(table, columns, filters)  # an unknown table is a KeyError, a column a ReadRequestError
    loc = resolve(url)
    wanted = list(columns) if columns is not None else None
    needed = wanted
    if wanted is not None:
        extra_keys: list[str] = []
        if table == "measurements" and committed_only:
            extra_keys += [k for k in COMMIT_KEY if k not in wanted]
        extra_keys += [k for k in needed_columns(table, harvests) if k not in wanted and k not in extra_keys]
        needed = wanted + extra_keys
    expression = _expression(filters)
    choose_first = bool(needed_columns(table, harvests))  # filter the chosen rows, not before
    if choose_first and expression is not None:
        needed = None  # the filter may name any column
    read_filter = None if choose_first else expression
    commits = _commits(loc) if table == "measurements" and committed_only else None
    gated = stable(lambda: _gated_read(loc, table, needed, read_filter))
    result = gated.rows
    if commits is not None:
        first = iter([(gated.found, gated.every_key)])  # a retry lists again

        def complete() -> None:
            found, rows = next(first, None) or (table_files(loc, table), None)
            require_complete_runs(loc, found, commits, rows)

        stable(complete)
        result = only_committed(result, commits.rows)
    if table in CONTENT_KEYED and not gated.unique:
        result = dedupe(result, table_spec(table).key)
    if choose_first:
        recency = _finish_times(loc) if table == "measurements" else None
        merged = merged_runs(result) if table == "runs" else None
        result = one_harvest(table, result, harvests, recency)
        if merged is not None:
            result = _summarized(url, result, merged, harvests)
        if expression is not None:
            result = result.filter(expression)
    if wanted is not None:
        result = result.select(wanted)
    return result


def _summarized(url: str, runs: pa.Table, merged: pa.Array, harvests: str) -> pa.Table:
    """The chosen ``runs`` rows with their per-run aggregates recomputed from the measurements
    of the same view where it merges harvests (``merged``: runs with several committed
    harvests); a stored row summarizes its own harvest's configs only, so a run resumed config
    by config would name a best config that its other configs beat."""
    if len(merged) == 0 or not any(name in runs.column_names for name in RUN_SUMMARY):
        return runs
    view = read_table(url, "measurements", columns=list(SUMMARY_INPUTS), harvests=harvests)
    return summarize_runs(runs, view, merged)


def _finish_times(loc: Location) -> pa.Table:
    """(run_id, harvest_id, finished_at) of every committed run: the harvests' recency, with
    what their samples measure (:data:`schemas.harvests.TIMED_AS`, which pooling compares)."""
    columns = [*COMMIT_KEY, "finished_at", *TIMED_AS]
    return stable(lambda: _gated_read(loc, "runs", columns, None).rows)


def scan_table(
    url: str | os.PathLike[str],
    table: str,
    *,
    committed_only: bool = True,
    harvests: str = "all",
) -> pl.LazyFrame:
    """The table as a polars LazyFrame, with the same gating as :func:`read_table`.

    Local datasets whose files are all at the current version, with every declared column and
    no dictionary encoding, are scanned lazily by polars itself (projection and predicate
    pushdown apply); otherwise, and for ``harvests``
    ``"latest"`` / ``"pooled"`` (one harvest per run, as in :func:`read_table`), the gated
    pyarrow read is wrapped. Every file's footer is checked when the frame is made; the check
    for repeated ``runs``/``measurements`` keys runs when the frame is first collected (once
    per set of files, :mod:`schemas.verdicts`) and raises :class:`RepeatedKeyError` there
    (committed measurements: also :class:`IncompleteRunError`); until then, filters are applied
    after that check rather than pushed into the scan, so a filter matching no stored row still
    meets it.

    The frame holds its files open (up to :data:`PIN_LIMIT` files; beyond that it names them),
    so a concurrent ``compact`` that deletes them later does not break it.
    """
    import polars as pl

    url = os.fspath(url)  # a pathlib.Path, as pyarrow and polars take it
    check_mode(harvests, table, committed_only)
    table_spec(table)
    loc = resolve(url)
    commits = _commits(loc) if table == "measurements" and committed_only else None  # runs first
    found = stable(lambda: table_files(loc, table))
    is_local = not ("://" in url and not url.startswith("file://"))
    lazy = is_local and found.current and not found.older and found.uniform
    if not lazy or needed_columns(table, harvests):
        gated = read_table(url, table, committed_only=committed_only, harvests=harvests)
        return pl.from_arrow(gated).lazy()
    listings = iter([found])  # the first attempt reuses this listing; a retry lists again
    return stable(lambda: _lazy_frame(loc, url, table, commits, first=next(listings, None)))


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


def _lazy_frame(
    loc: Location, url: str, table: str, commits: _Commits | None, *, first: TableFiles | None
) -> pl.LazyFrame:
    """polars' own lazy scan of the table's live files (one :func:`stable` attempt);
    ``commits``: the committed runs its rows are limited to (None: every row)."""
    import polars as pl

    found = first if first is not None else table_files(loc, table)
    if found.older or not found.uniform:  # files replaced since the choice: conform them
        return pl.from_arrow(read_table(url, table, committed_only=commits is not None)).lazy()
    frame = pl.scan_parquet(_pinned(found.current), hive_partitioning=False)
    if commits is not None and not _every_row_committed(found, commits):
        runs = pl.from_arrow(commits.rows.select(list(COMMIT_KEY))).lazy()
        frame = frame.join(runs, on=list(COMMIT_KEY), how="semi")
    if table in CONTENT_KEYED and not keys_unique(loc, table, found):
        frame = frame.unique(subset=list(table_spec(table).key), keep="first", maintain_order=True)
    complete = commits is None or verdicts.known(loc, COMPLETE_VERDICT, (*found.stats, *commits.found.stats))
    keyed = table in UNIQUE_KEYED and not (verdicts.known(loc, table, found.stats) and complete)
    if keyed or not verdicts.known(loc, table + STATISTICS_VERDICT, found.stats):
        check = _KeyCheck(loc, table, found, commits)
        if found.rows == 0:  # polars calls no function on an empty scan; nothing to read anyway
            check(pl.DataFrame())
        # Filters stay above the check until it has passed for this file set: polars calls a
        # function on no batch when a filter pushed into the scan leaves no row, and a filter
        # that matches nothing stored (the rows of a run whose file was lost) is exactly where
        # the lost rows would have been; a filter pushed into the scan also skips row groups
        # by their statistics, which the check verifies. Frames made once the verdicts are
        # known skip the check.
        frame = frame.map_batches(
            check,
            predicate_pushdown=False,
            projection_pushdown=True,
            slice_pushdown=True,
            streamable=True,
        )
    return frame


def _every_row_committed(found: TableFiles, commits: _Commits) -> bool:
    """Whether the measurement files hold exactly the committed runs' ``n_configs`` rows in
    all, so that no row is uncommitted given that every committed run is whole, which
    :func:`require_complete_runs` establishes before the scan's first batch (then the semi
    join that limits a scan to committed runs can be left out: the usual, finished dataset)."""
    expected = pc.sum(commits.rows.column("n_configs")).as_py() or 0
    return found.rows == expected  # commits hold each run once: a repeated runs key raises on reading them


class _KeyCheck:
    """Passes batches through unchanged; before the first, checks the table's keys (the
    verdict of :func:`keys_unique`), its files' statistics (:func:`require_true_statistics`)
    and, given ``commits``, that every committed run is whole
    (:func:`require_complete_runs`), so :func:`scan_table` costs nothing until collected."""

    def __init__(self, loc: Location, table: str, found: TableFiles, commits: _Commits | None = None) -> None:
        self.loc, self.table, self.found, self.commits = loc, table, found, commits
        self.done = False
        self.lock = threading.Lock()  # polars may run batches of one frame in parallel

    def __call__(self, batch: pl.DataFrame) -> pl.DataFrame:
        with self.lock:
            if not self.done:
                listings = iter([self.found])  # files replaced since: the merged ones hold the rows
                stable(lambda: self._check(next(listings, None) or table_files(self.loc, self.table)))
                self.done = True
        return batch

    def _check(self, found: TableFiles) -> None:
        keys_unique(self.loc, self.table, found)
        require_true_statistics(self.loc, self.table, found)
        if self.commits is not None:
            require_complete_runs(self.loc, found, self.commits)
