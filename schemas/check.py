"""Dataset validation: the checks behind ``python -m schemas check DIR``.

Every file goes through the same per-file validation as the readers
(:func:`schemas.reader.table_files`, :mod:`schemas.validate`), so ``check`` says OK exactly when
``read_table`` and ``scan_table`` read every table without error. Problems name the file;
the rows of the sound files are then checked for repeated keys and broken joins.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pyarrow.compute as pc

from schemas.card import Card, card_losses, read_card
from schemas.errors import DatasetError, FileVanishedError, MixedTimingError, StorageError
from schemas.harvests import TIMED_AS, latest_statuses, one_harvest, timed_alike
from schemas.keys import CONTENT_KEYED, RepeatedKeys, conflicting_copies, dedupe, repeated_keys
from schemas.locking import live_holders, maintenance_lock
from schemas.reader import (
    COMMIT_KEY,
    TableFiles,
    _read_files,
    file_statistics_problems,
    incomplete_runs,
    only_committed,
    stable,
    table_files,
)
from schemas.repair import repair_locked
from schemas.scrub import publication_warnings
from schemas.storage import (
    STALE_TEMPORARY_AGE_S,
    Location,
    list_hidden_data,
    list_strays,
    list_temporaries,
    read_file,
    remove_stale_temporaries,
    resolve,
)
from schemas.tables import TABLES
from schemas.tunings import doubled_tunings
from schemas.validate import flat_columns, statistics_problems
from schemas.values import measurement_value_problems

READ_ORDER = ("runs", "measurements", "ir_edges", "ir_nodes", "ir_graphs", "kernels")
"""Children before parents: writers add parents first (kernels and IR, then measurements, then
the committing ``runs`` row), so a check running beside a harvest sees a parent for every child
it read."""

MAX_NAMED_FILES = 5
"""Files named per problem about files (the count is always given)."""
CLOCK_SKEW_TOLERANCE = timedelta(minutes=10)
"""How far in the future a run's ``finished_at`` may lie before check says the writing
machine's clock ran ahead (clocks of one cluster differ by far less)."""


@dataclass
class CheckReport:
    """Problems (make the check fail), warnings (benign states) and summary figures."""

    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    files: dict[str, int] = field(default_factory=dict)
    facts: dict[str, object] = field(default_factory=dict)
    fixed: list[str] = field(default_factory=list)
    """What ``fix=True`` changed (removed leftovers), one line each."""

    @property
    def ok(self) -> bool:
        return not self.problems


def check_dataset(
    url: str,
    *,
    fix: bool = False,
    temporary_age_s: float = STALE_TEMPORARY_AGE_S,
    on_wait: Callable[[str], None] | None = None,
) -> CheckReport:
    """Validate every file, version, schema, key and join of the dataset at ``url``.

    ``fix``: remove write temporaries older than ``temporary_age_s`` seconds (leftovers of
    killed writers) and drop identical repeated ``runs``/``measurements`` rows of a retried
    flush (:func:`schemas.repair.repair_repeats`), holding the dataset's maintenance lock.
    Other damage is reported, not repaired. Raises DatasetError when the storage refuses the
    fix (read-only); the check itself only reads. ``on_wait(holder)``: called when another
    maintenance command holds the lock the fix waits for.
    """
    report = CheckReport()
    loc = resolve(url)
    if fix:
        _fix(loc, report, temporary_age_s, on_wait)
    _check_temporaries(loc, report, temporary_age_s)
    _check_strays(loc, report)
    carded = _card_rows(url, report)  # before the tables: a harvest finishing meanwhile only adds rows
    tables: dict[str, pa.Table] = {}
    found_by_table: dict[str, TableFiles] = {}
    for name in READ_ORDER:
        read = _read_table(loc, name, report)
        if read is not None:
            found_by_table[name], tables[name] = read
    for name, table in tables.items():
        report.rows[name] = table.num_rows
    _check_statistics(loc, found_by_table, tables, report)
    _check_keys(loc, tables, found_by_table, report)
    _check_joins(tables, report, live_holders(loc))
    _check_doubled_tunings(loc, tables, found_by_table, report)
    _check_unnamed_graph_sizes(loc, tables, report)
    if "runs" in tables:
        _check_clocks(tables["runs"], report, datetime.now(timezone.utc))
    _check_card_rows(carded, tables, report)
    _summarize(tables, report)
    # machine paths and host names are warnings: a private dataset may keep them
    report.warnings.extend(publication_warnings(loc, tables))
    return report


CARD_CHECKED = ("runs", "measurements")
"""Tables whose committed rows never decrease, so a card counting more of them than the data
holds means rows were lost since the card was written."""


def _card_rows(url: str, report: CheckReport) -> Card | None:
    """The dataset card (``card.json``), whose counts the committed rows are checked against;
    None without one (or an unreadable one, a warning)."""
    try:
        return read_card(url)
    except DatasetError as exc:
        report.warnings.append(f"the dataset card is unreadable, so its row counts go unchecked: {exc}")
        return None


def _check_card_rows(card: Card | None, tables: dict[str, pa.Table], report: CheckReport) -> None:
    """Committed rows or runs of a harvest fewer than the card counted: whole files lost
    (every ``runs`` file deleted leaves measurements that look merely uncommitted, and nothing
    else to notice; rows added since would make up a total, not a harvest's own count)."""
    runs = tables.get("runs")
    if card is None or runs is None:
        return
    held = {"runs": runs.num_rows}
    if "measurements" in tables:
        held["measurements"] = only_committed(tables["measurements"], runs).num_rows
    by_harvest = dict(Counter(runs.column("harvest_id").to_pylist()))
    rows = {name: card.rows[name] for name in CARD_CHECKED if name in card.rows}
    lost = card_losses(replace(card, rows=rows), held, by_harvest)
    if lost:
        report.problems.append(
            f"committed rows were lost since the dataset card was written: {'; '.join(lost)} "
            "(if they were removed on purpose, `python -m schemas card DIR` refreshes the card)"
        )


def _read_table(
    loc: Location, name: str, report: CheckReport
) -> tuple[TableFiles, pa.Table] | None:
    """The table's live files and all their rows (no deduplication, uncommitted rows kept);
    invalid files are reported and left out. None when the table cannot be read at all."""

    def attempt() -> tuple[list[str], TableFiles, pa.Table]:
        problems: list[str] = []
        found = table_files(loc, name, on_problem=lambda exc: problems.append(str(exc)))
        return problems, found, _read_files(loc, name, found, None, None)

    try:
        problems, found, table = stable(attempt)
    except DatasetError as exc:
        report.problems.append(str(exc))
        return None
    report.problems.extend(problems)
    report.files[name] = len(found.current) + len(found.older)
    if found.superseded:
        report.warnings.append(
            f"{name}: {len(found.superseded)} file(s) superseded by compaction still present "
            "(ignored by readers; `compact` removes them)"
        )
    return found, table


def _check_statistics(
    loc: Location, found_by_table: dict[str, TableFiles], tables: dict[str, pa.Table], report: CheckReport
) -> None:
    """Every live file's row-group statistics against its data (readers verify them once per
    file set before a filter prunes by them; plain readers never do). A current-version file's
    data are its slice of the rows :func:`_read_table` read (those files come first, in
    listing order, each whole), so each is read once; an older file's rows were lifted to the
    current schema there, so it is read again as stored."""
    for name, found in found_by_table.items():
        rows = tables[name]
        in_memory = found.current if rows.num_rows == found.rows else []  # else changed since listed
        start = 0
        for path in in_memory:
            metadata = found.footers[path]
            stored = rows.slice(start, metadata.num_rows).select(flat_columns(metadata))
            start += metadata.num_rows
            report.problems.extend(f"{path}: {problem}" for problem in statistics_problems(metadata, stored))
        for path in found.live[len(in_memory):]:  # the older files, or every file
            _check_file_statistics(loc, path, report)


def _check_file_statistics(loc: Location, path: str, report: CheckReport) -> None:
    """The statistics of the file at ``path`` against its data, read from it."""
    try:
        problems = file_statistics_problems(loc, path)
    except FileVanishedError:
        return  # replaced by a concurrent compact: the merged file is read instead
    except DatasetError as exc:
        report.problems.append(str(exc))
        return
    report.problems.extend(f"{path}: {problem}" for problem in problems)


def _fix(
    loc: Location,
    report: CheckReport,
    temporary_age_s: float,
    on_wait: Callable[[str], None] | None,
) -> None:
    with maintenance_lock(loc, "check --fix", on_wait):
        try:
            removed = remove_stale_temporaries(loc, list(TABLES), temporary_age_s)
        except OSError as exc:
            raise StorageError(
                f"{loc.url}: cannot remove stale temporaries ({exc.strerror or exc}); nothing was changed"
            ) from None
        for temporary in removed:
            report.fixed.append(f"removed {temporary.path} ({temporary.size:,} bytes)")
        try:
            for result in repair_locked(loc):
                report.fixed.append(result.describe())
        except StorageError:
            raise  # the storage refuses: an error of the command, not a finding
        except DatasetError as exc:  # refused before changing anything; the check goes on
            report.problems.append(f"not repaired: {exc}")


def _check_temporaries(loc: Location, report: CheckReport, age_s: float) -> None:
    temporaries = list_temporaries(loc, list(TABLES))
    stale = [t for t in temporaries if t.age_s is None or t.older_than(age_s)]
    if stale:
        size = sum(t.size for t in stale)
        report.warnings.append(
            f"{len(stale)} stale write temporar{'y' if len(stale) == 1 else 'ies'} ({size:,} bytes) left by "
            f"killed writers, e.g. {stale[0].path} (invisible to readers; `check --fix` or `compact` removes "
            f"those older than {age_s:g} s)"
        )
    young = len(temporaries) - len(stale)
    if young:
        report.facts["writes in progress"] = young


UNREAD_FILES = (
    (
        list_strays,
        "file(s) in table directories that are not Parquet data",
        "kernel-corpus ignores them, a plain reader of the directory would read them",
    ),
    (
        list_hidden_data,
        "Parquet file(s) in hidden directories of tables",
        "kernel-corpus and pyarrow.dataset skip them, a glob such as polars' or duckdb's "
        "TABLE/*/part-*.parquet reads them beside the live files",
    ),
)
"""(lister of a table's files, what they are, why they matter): files in table directories
that kernel-corpus does not read but some plain reader does."""


def _check_strays(loc: Location, report: CheckReport) -> None:
    for lister, what, why in UNREAD_FILES:
        _report_files(loc, report, [path for name in TABLES for path in lister(loc, name)], what, why)


def _report_files(loc: Location, report: CheckReport, paths: list[str], what: str, why: str) -> None:
    """One problem naming the first :data:`MAX_NAMED_FILES` of ``paths`` (files a plain
    reader would read that kernel-corpus does not): their count, ``what`` they are, ``why``
    they matter, and that they belong out of the dataset."""
    if paths:
        shown = ", ".join(posixpath.relpath(p, loc.root) for p in paths[:MAX_NAMED_FILES])
        more = " ..." if len(paths) > MAX_NAMED_FILES else ""
        report.problems.append(f"{len(paths)} {what}: {shown}{more} ({why}: move them out of the dataset)")


def _files_with_key(
    loc: Location, found: TableFiles, key: tuple[str, ...], example: dict
) -> list[str]:
    """Live files holding a row with key ``example``."""
    holders = []
    for path in found.live:
        rows = read_file(loc, path, list(key))
        mask = None
        for column, value in example.items():
            condition = pc.equal(rows.column(column), value)
            mask = condition if mask is None else pc.and_(mask, condition)
        if mask is not None and pc.any(mask).as_py():
            holders.append(posixpath.basename(path))
    return holders


def _check_keys(
    loc: Location, tables: dict[str, pa.Table], found: dict[str, TableFiles], report: CheckReport
) -> None:
    for name, table in tables.items():
        key = TABLES[name].key
        repeats = repeated_keys(table, key)
        if not repeats.extra:
            continue
        message = f"{name}: {repeats.extra} row(s) repeat a key ({', '.join(key)})"
        if name in CONTENT_KEYED:
            fixed = TABLES[name].fixed
            conflicts = conflicting_copies(table, key, fixed, repeats.repeated)
            if conflicts.extra:
                report.problems.append(
                    f"{name}: {conflicts.extra} copy(ies) of a key hold other values of "
                    f"{', '.join(fixed)} than the first; {_example(loc, found[name], key, conflicts)} "
                    "(readers and `compact` refuse the table: delete the copy that is wrong)"
                )
                continue
            report.warnings.append(message + _copies_verdict(table, key, repeats.repeated))
            continue
        report.problems.append(
            f"{message}; {_example(loc, found[name], key, repeats)} (rows written twice, or one log "
            "imported into datasets since merged; readers refuse the table; `check --fix` drops copies "
            "that are identical or differ only in when and where one import ran)"
        )


def _copies_verdict(table: pa.Table, key: tuple[str, ...], repeated: pa.Table | None) -> str:
    """The end of the warning on copies of content-keyed rows that agree on the fixed columns:
    whether they are the same row in every other column too (``repeated``: the repeated keys,
    :attr:`~schemas.keys.RepeatedKeys.repeated`, so every row is not grouped again)."""
    others = [f.name for f in table.schema if f.name not in key and f.name != "schema_version"]
    differing = conflicting_copies(table, key, others, repeated)
    if not differing.extra:
        return " — identical content written twice; readers dedupe, `compact` removes"
    example = ", ".join(f"{k}={v}" for k, v in (differing.example or {}).items())
    return (
        f" — {differing.extra} copy(ies) differ from the first in other columns, e.g. {example} "
        "(for IR rows: columns ir_id does not hash, such as source locations or triton_version, "
        "from a compile at another path or line); readers and `compact` keep the copy in a file at "
        "the current schema version, the first such file by path, else in the first older file by path"
    )


def _example(loc: Location, found: TableFiles, key: tuple[str, ...], repeats: RepeatedKeys) -> str:
    """'e.g. KEY=VALUE is in N file(s): NAMES' for the example key of ``repeats``."""
    example = repeats.example or {}
    holders = _files_with_key(loc, found, key, example)
    shown = ", ".join(holders[:MAX_NAMED_FILES]) + (" ..." if len(holders) > MAX_NAMED_FILES else "")
    return (
        f"e.g. {', '.join(f'{k}={v}' for k, v in example.items())} is in {len(holders)} file(s): {shown}"
    )


def _missing(child: pa.Array, parent: pa.Array) -> int:
    present = child.drop_null() if hasattr(child, "drop_null") else child
    return int(pc.sum(pc.invert(pc.is_in(present, value_set=pc.unique(parent)))).as_py() or 0)


def _check_joins(tables: dict[str, pa.Table], report: CheckReport, writers: list[str]) -> None:
    """Joins of the tables; ``writers``: holders of the dataset's locks alive on this machine
    (:func:`schemas.locking.live_holders`), which tell a harvest at work from an interrupted one."""
    runs, measurements = tables.get("runs"), tables.get("measurements")
    if runs is not None and measurements is not None:
        committed = only_committed(measurements, runs)
        uncommitted = measurements.num_rows - committed.num_rows
        if uncommitted and writers:
            report.warnings.append(
                f"measurements: {uncommitted} row(s) of runs not committed yet: {writers[0]} is writing "
                "into this dataset (readers ignore those rows until it commits their runs)"
            )
        elif uncommitted:
            report.warnings.append(
                f"measurements: {uncommitted} row(s) of uncommitted runs (an interrupted harvest; "
                "readers ignore them and resume redoes those runs)"
            )
        short = incomplete_runs(committed, runs)
        if short.num_rows:
            example = short.slice(0, 1).to_pylist()[0]
            report.problems.append(
                f"runs: {short.num_rows} committed run(s) whose n_configs differs from their measurement "
                f"rows, e.g. run_id={example['run_id']} (harvest {example['harvest_id']}) has "
                f"{example['rows']} of {example['n_configs']} (a lost or foreign file; readers refuse "
                "the measurements)"
            )
        _check_arch(committed, runs, report)
        _check_timing_views(committed, runs, report)
        measurements = committed
    if measurements is not None:
        _check_samples(measurements, report)
        report.problems.extend(measurement_value_problems(measurements))
    if measurements is not None and "ir_graphs" in tables:
        stored = tables["ir_graphs"]
        for column, level in (("ttir_id", "ttir"), ("ttgir_id", "ttgir")):
            missing = _missing(measurements.column(column), stored.column("ir_id"))
            if missing:
                report.problems.append(
                    f"measurements: {missing} {column} value(s) not in ir_graphs"
                )
                continue
            # train reads a level's graphs: one filed under another level is lost to it
            of_level = stored.filter(pc.equal(stored.column("level"), level)).column("ir_id")
            elsewhere = _missing(measurements.column(column), of_level)
            if elsewhere:
                report.problems.append(
                    f"measurements: {elsewhere} {column} value(s) name a graph stored under another "
                    f"level than {level} in ir_graphs (training on {level} finds no such graph)"
                )
    if measurements is not None and "ir_graphs" in tables:
        _check_compiled_as(measurements, tables["ir_graphs"], report)
    if runs is not None and "ir_graphs" in tables:
        # a run's device IR (Helion's helion_fx graph) is named by its runs row alone
        missing = _missing(runs.column("device_ir_id"), tables["ir_graphs"].column("ir_id"))
        if missing:
            report.problems.append(f"runs: {missing} device_ir_id value(s) not in ir_graphs")
    if runs is not None and "kernels" in tables:
        missing = _missing(runs.column("kernel_id"), tables["kernels"].column("kernel_id"))
        if missing:
            report.problems.append(f"runs: {missing} kernel_id value(s) not in kernels")
    if "ir_graphs" in tables:
        _check_graphs_without_rows(tables, report, writers)
        _check_graph_sizes(tables, measurements, runs, report)


def _check_doubled_tunings(
    loc: Location, tables: dict[str, pa.Table], found: dict[str, TableFiles], report: CheckReport
) -> None:
    """Imported tunings stored under two run_ids (:mod:`schemas.tunings`): no key repeats,
    yet every measurement of the tuning is there twice. Names both runs and their files."""
    runs, measurements = tables.get("runs"), tables.get("measurements")
    if runs is None or measurements is None:
        return
    doubled = doubled_tunings(runs, measurements)  # it reads the rows of committed runs only
    if not doubled:
        return
    copies = [
        f"run_id={run} (harvest {harvest}, in {', '.join(_files_with_key(loc, found['runs'], COMMIT_KEY, {'run_id': run, 'harvest_id': harvest}))})"
        for run, harvest in doubled[0]
    ]
    report.problems.append(
        f"runs: {len(doubled)} imported tuning(s) stored under more than one run_id, e.g. "
        f"{' and '.join(copies)} hold one tuning (same source_ref, kernel, device and every config's "
        "status and median_ms): its measurements are counted twice. A tritonparse trace imported "
        "before the tuned call's launch event and again after, into this dataset or into datasets "
        "since merged, does this. Keep one copy: import the whole trace into a new dataset "
        "(python -m corpus.ingest tritonparse TRACE --out NEW), or rewrite the runs file of the copy "
        "without arg_shapes without its row (readers then leave its measurements out as uncommitted)"
    )


COMPILED_AS = ("num_warps", "num_ctas")
"""Launch options a TTGIR graph records (module attributes ttg.num-warps and ttg.num-ctas, in
the text its ir_id hashes) and a measurement's config holds: a measurement naming a TTGIR graph
compiled with other values names another config's graph."""


def _check_compiled_as(measurements: pa.Table, graphs: pa.Table, report: CheckReport) -> None:
    """Measurements whose ``ttgir_id`` names a TTGIR graph compiled with another num_warps or
    num_ctas than their config's (null on either side: not compared)."""
    ttgir = graphs.filter(pc.equal(graphs.column("level"), "ttgir")).select(["ir_id", *COMPILED_AS])
    ttgir = dedupe(ttgir, ["ir_id"])  # copies agree on these (fixed columns), else a problem of their own
    named = measurements.select(["run_id", "config_id", "ttgir_id", *COMPILED_AS]).filter(
        pc.is_valid(measurements.column("ttgir_id"))
    )
    joined = named.join(ttgir, keys="ttgir_id", right_keys="ir_id", right_suffix="_graph")
    differ = None
    for column in COMPILED_AS:
        # null on either side (an option the graph or the row does not record) compares as equal
        unequal = pc.fill_null(pc.not_equal(joined.column(column), joined.column(f"{column}_graph")), False)
        differ = unequal if differ is None else pc.or_(differ, unequal)
    wrong = joined.filter(differ) if differ is not None else joined.slice(0, 0)
    if wrong.num_rows:
        # the first by key: a join's row order is arbitrary, and the example should not vary
        row = wrong.sort_by([("run_id", "ascending"), ("config_id", "ascending")]).slice(0, 1).to_pylist()[0]
        config = ", ".join(f"{c}={row[c]}" for c in COMPILED_AS)
        graph = ", ".join(f"{c}={row[c + '_graph']}" for c in COMPILED_AS)
        report.problems.append(
            f"measurements: {wrong.num_rows} row(s) name a ttgir graph compiled with other num_warps or "
            f"num_ctas than their config, e.g. run_id={row['run_id']} config_id={row['config_id']} ({config}) "
            f"names ttgir_id={row['ttgir_id']} ({graph}) (a foreign or damaged measurements file: "
            "python -m train would learn this config from another config's graph)"
        )


def _check_graphs_without_rows(tables: dict[str, pa.Table], report: CheckReport, writers: list[str]) -> None:
    """Nodes and edges of graphs without an ``ir_graphs`` row: writers add a graph's nodes and
    edges before its row, the row saying the graph is stored whole (a rerun writes a graph
    without one again), so these are a writer's work in progress or an interrupted writer's
    leftovers, as uncommitted measurements are. A committed row naming such a graph is a
    problem (:func:`_check_joins`)."""
    graphs = pc.unique(tables["ir_graphs"].column("ir_id"))
    orphans: dict[str, int] = {}
    ids: list[pa.Array] = []
    for child in ("ir_nodes", "ir_edges"):
        if child in tables:
            column = tables[child].column("ir_id")
            absent = column.filter(pc.invert(pc.is_in(column, value_set=graphs)))
            if len(absent):
                orphans[child] = len(absent)
                ids.append(pc.unique(absent).cast(pa.string()))
    if not orphans:
        return
    count = len(pc.unique(pa.concat_arrays(ids)))
    rows = ", ".join(f"{n} {child} row(s)" for child, n in orphans.items())
    why = (
        f"{writers[0]} is writing into this dataset"
        if writers
        else "a writer stopped between a graph's nodes and its row; rerunning it writes the graph again"
    )
    report.warnings.append(
        f"ir_nodes/ir_edges: {rows} of {count} graph(s) without their ir_graphs row ({why}; "
        "readers of a graph by its ir_graphs row do not see them)"
    )


GRAPH_SIZES = (
    ("num_nodes", "ir_nodes", None),
    ("num_data_edges", "ir_edges", "data"),
    ("num_region_edges", "ir_edges", "region"),
)
"""(ir_graphs count column, child table, edge kind): each graph's stored count of its rows."""


def _named_graphs(measurements: pa.Table | None, runs: pa.Table | None) -> pa.Array | None:
    """``ir_id`` values that rows name (measurements' TTIR and TTGIR, runs' device IR); None
    without measurements."""
    if measurements is None:
        return None
    named = [measurements.column("ttir_id"), measurements.column("ttgir_id")]
    named += [runs.column("device_ir_id")] if runs is not None else []
    return pa.concat_arrays([c.combine_chunks().cast(pa.string()) for c in named]).drop_null()


def _check_graph_sizes(
    tables: dict[str, pa.Table], measurements: pa.Table | None, runs: pa.Table | None, report: CheckReport
) -> None:
    """Sizes of the graphs committed rows name: measurements' TTIR and TTGIR, runs' device IR."""
    referenced = _named_graphs(measurements, runs)
    report.problems.extend(
        graph_size_problems(tables["ir_graphs"], tables.get("ir_nodes"), tables.get("ir_edges"), referenced)
    )


def _check_unnamed_graph_sizes(loc: Location, tables: dict[str, pa.Table], report: CheckReport) -> None:
    """Sizes of the graphs no row names (:func:`_check_graph_sizes` checks the others): an
    ``ir_graphs`` row says its graph is stored whole, so one short of its nodes or edges is a
    lost or foreign file whether or not a measurement names it. A graph a writer adds beside
    the check may be listed short (its nodes landing after ``ir_nodes`` was listed, its row
    before ``ir_graphs`` was: :data:`READ_ORDER`), so those found short are counted again in a
    fresh read of ``ir_nodes`` and ``ir_edges``, listed after ``ir_graphs``: a writer's nodes
    land before its graph's row, so a graph still short then has lost them."""
    named = _named_graphs(tables.get("measurements"), tables.get("runs"))
    if "ir_graphs" not in tables or named is None:
        return  # without measurements every graph was checked as named
    graphs = tables["ir_graphs"]
    unnamed = graphs.filter(pc.invert(pc.is_in(graphs.column("ir_id").cast(pa.string()), value_set=pc.unique(named))))
    if not graph_size_problems(unnamed, tables.get("ir_nodes"), tables.get("ir_edges")):
        return
    fresh = {child: _read_table(loc, child, CheckReport()) for child in ("ir_nodes", "ir_edges")}
    nodes, edges = (read[1] if read is not None else None for read in fresh.values())
    report.problems.extend(
        f"{problem}; no measurement or run names these graphs" for problem in graph_size_problems(unnamed, nodes, edges)
    )


def graph_size_problems(
    graphs: pa.Table, nodes: pa.Table | None, edges: pa.Table | None, referenced: pa.Array | None = None
) -> list[str]:
    """Graphs of ``graphs`` (``ir_graphs`` rows) whose nodes or edges are not the counts their
    row stores, one line per count column. A lost ``ir_nodes`` or ``ir_edges`` file leaves
    graphs the readers return without them, which training would take for configs without
    IR. Copies of a row (content-keyed tables) count once; a null count is not checked.

    ``referenced``: check only these ``ir_id`` values, those of measurements read before the IR
    tables: a writer adds a graph's rows before the measurements naming it, while a graph
    written beside the check may be listed without its nodes (its nodes and then its
    ``ir_graphs`` row may land between the check's listing of ``ir_nodes`` and of ``ir_graphs``)."""
    by_level = "level" in graphs.column_names  # train passes one level's rows, without the column
    graphs = dedupe(graphs.select(["ir_id", *(["level"] if by_level else []), *(c for c, _, _ in GRAPH_SIZES)]), ["ir_id"])
    id_type = graphs.schema.field("ir_id").type  # polars hands over large strings (cast to the graphs' types below)
    if referenced is not None:
        graphs = graphs.filter(pc.is_in(graphs.column("ir_id"), value_set=pc.unique(referenced.cast(id_type))))
    problems = []
    for count, child, kind in GRAPH_SIZES:
        rows = nodes if child == "ir_nodes" else edges
        if rows is None:
            continue
        rows = dedupe(rows, list(TABLES[child].key))
        if kind is not None:
            rows = rows.filter(pc.equal(rows.column("kind"), kind))
        # by level too: train reads a level's nodes, so a row filed under another level is lost to it
        keys = ["ir_id", "level"] if by_level else ["ir_id"]
        held = rows.group_by(keys).aggregate([([], "count_all")])
        for key in keys:
            held = held.set_column(held.schema.get_field_index(key), key, held.column(key).cast(graphs.schema.field(key).type))
        joined = graphs.filter(pc.is_valid(graphs.column(count))).join(held, keys=keys, join_type="left outer")
        found = joined.column("count_all").fill_null(0)
        short = joined.filter(pc.not_equal(joined.column(count), found))
        if short.num_rows:
            example = short.slice(0, 1).to_pylist()[0]
            what = f"{kind} edges" if kind else "nodes"
            problems.append(
                f"ir_graphs: {short.num_rows} graph(s) whose {child} rows are not their {count}, e.g. "
                f"ir_id={example['ir_id']} has {example['count_all'] or 0} of {example[count]} {what} "
                f"(a lost or foreign {child} file)"
            )
    return problems


def _check_arch(measurements: pa.Table, runs: pa.Table, report: CheckReport) -> None:
    """A measurement's ``arch`` (its partition) must be its run's: readers join on the run,
    training takes the arch from the measurement."""
    joined = measurements.select([*COMMIT_KEY, "arch"]).join(
        runs.select([*COMMIT_KEY, "arch"]), keys=list(COMMIT_KEY), right_suffix="_run"
    )
    differ = joined.filter(pc.not_equal(joined.column("arch"), joined.column("arch_run")))
    if differ.num_rows:
        example = differ.slice(0, 1).to_pylist()[0]
        report.problems.append(
            f"measurements: {differ.num_rows} row(s) whose arch differs from their run's, e.g. "
            f"run_id={example['run_id']} is {example['arch_run']} but a measurement says {example['arch']}"
        )


def _check_clocks(runs: pa.Table, report: CheckReport, now: datetime) -> None:
    """Runs stamped in the future or ending before they start: the writing machine's clock was
    wrong. The rows are sound, but ``harvests='latest'`` (what ``python -m train`` reads) ranks
    a run's repeats by ``finished_at``, so a run stamped ahead shadows every re-measurement
    taken before that time, and nothing else would say so."""
    finished = runs.column("finished_at")
    ahead = pc.fill_null(pc.greater(finished, pa.scalar(now + CLOCK_SKEW_TOLERANCE, finished.type)), False)
    count = pc.sum(ahead).as_py() or 0
    if count:
        latest = pc.max(runs.filter(ahead).column("finished_at")).as_py()
        example = runs.filter(ahead).slice(0, 1).to_pylist()[0]
        report.warnings.append(
            f"runs: {count} run(s) finished in the future, up to {latest - now} after this machine's "
            f"clock, e.g. run_id={example['run_id']} (harvest {example['harvest_id']}, hostname "
            f"{example['hostname']}): harvests='latest' ranks repeats by finished_at, so until then "
            "no re-measurement of these runs replaces them; check that machine's clock"
        )
    backwards = pc.fill_null(pc.less(finished, runs.column("started_at")), False)
    count = pc.sum(backwards).as_py() or 0
    if count:
        example = runs.filter(backwards).slice(0, 1).to_pylist()[0]
        report.warnings.append(
            f"runs: {count} run(s) finished before they started, e.g. run_id={example['run_id']} "
            f"(harvest {example['harvest_id']}): the writing machine's clock was set back during "
            "the run, so its finished_at may misorder it among repeats (harvests='latest')"
        )


def _check_timing_views(measurements: pa.Table, runs: pa.Table, report: CheckReport) -> None:
    """Runs whose one-row-per-config views (``harvests='latest'``/``'pooled'``, what ``python
    -m train`` reads) are refused because their configs were timed in different ways: the
    rows are sound, but training on them needs another harvest."""
    recency = runs.select(["run_id", "harvest_id", "finished_at", *TIMED_AS])
    if timed_alike(recency):  # every run timed one way: no view can mix ways
        return
    rows = measurements.select(["run_id", "harvest_id", "config_id", "status"])
    try:
        one_harvest("measurements", rows, "latest", recency)
    except MixedTimingError as exc:
        report.warnings.append(f"{exc} (python -m train reads harvests='latest')")


def _check_samples(measurements: pa.Table, report: CheckReport) -> None:
    """Every timing sample is a number (a null would be no sample: readers pooling harvests
    leave it out, so the stored statistics could not be reproduced)."""
    samples = pc.list_flatten(measurements.column("samples_ms"))
    nulls = samples.null_count
    if nulls:
        report.problems.append(f"measurements: {nulls} null value(s) inside samples_ms")


def _summarize(tables: dict[str, pa.Table], report: CheckReport) -> None:
    if "kernels" in tables:
        report.facts["kernels"] = len(pc.unique(tables["kernels"].column("kernel_id")))
    if "runs" in tables:
        runs = tables["runs"]
        # A run a later harvest extended (measuring what a --budget harvest skipped, resuming)
        # has a row per harvest: counting rows said "runs: 12" of a dataset of 6 runs.
        run_ids = runs.column("run_id").to_pylist()
        report.facts["runs"] = len(set(run_ids))
        if runs.num_rows != len(set(run_ids)):
            report.facts["run rows"] = (
                f"{runs.num_rows} (a run that several harvests measured has a row for each)"
            )
        report.facts["harvests"] = len(pc.unique(runs.column("harvest_id")))
        devices = {
            (run_id, f"{n} ({a})" if n else f"unnamed device ({a})")  # e.g. a trace that names none
            for run_id, n, a in zip(
                run_ids, runs.column("device_name").to_pylist(), runs.column("arch").to_pylist()
            )
        }
        report.facts["devices"] = dict(Counter(device for _, device in sorted(devices)))
    if "measurements" in tables:
        _summarize_statuses(tables["measurements"], tables.get("runs"), report)
    if "ir_graphs" in tables:
        report.facts["ir_graphs"] = dict(Counter(tables["ir_graphs"].column("level").to_pylist()))


def _summarize_statuses(measurements: pa.Table, runs: pa.Table | None, report: CheckReport) -> None:
    """``statuses``: per status, the configs as readers' one-harvest view gives them
    (``harvests='latest'``, what ``python -m train`` reads: committed rows, one per
    (run_id, config_id)); ``superseded``: how many committed rows of earlier harvests that view
    leaves out, when any. Counting every stored row said ``skipped: 30`` of a dataset whose
    rerun had measured the 30 configs a ``--budget`` harvest skipped."""
    if runs is None:  # unreadable runs (a problem already): no view to count in, so every row
        report.facts["statuses"] = dict(Counter(measurements.column("status").to_pylist()))
        return
    shown, superseded = latest_statuses(only_committed(measurements, runs), runs)
    report.facts["statuses"] = shown
    if superseded:
        report.facts["superseded"] = (
            f"{sum(superseded.values())} row(s) of earlier harvests ({_counted(Counter(superseded))}) whose "
            "configs a later harvest measured: statuses count each config once, as "
            "harvests='latest' reads them; harvests='all' keeps every row"
        )


def _counted(counts: Counter[str]) -> str:
    """``counts`` as "skipped 30, ok 2", the largest first."""
    return ", ".join(f"{name} {count}" for name, count in counts.most_common())
