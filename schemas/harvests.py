"""One harvest per run: choosing among, or pooling, the repeats of a run.

Every harvest invocation has its own ``harvest_id``, so a run harvested twice has two ``runs``
rows and two measurements per config; resume per (run_id, config_id) can also spread one run's
configs over several harvests. Training scripts want one label per (run, config). The reader
offers three views (``read_table(..., harvests=...)``):

- ``all``: every committed row, repeats included (the stored truth).
- ``latest``: per (run_id, config_id) the measurement of the most recent harvest that has
  one; per run_id the most recent ``runs`` row. "Recent" is the run's ``finished_at`` (when
  its runs row committed it), ties broken by the larger ``harvest_id``.
- ``pooled``: one measurement per (run_id, config_id) whose ``samples_ms`` concatenates the
  samples of every repeat timed as the latest one was (its run's timer and L2 flush,
  :data:`TIMED_AS`: samples of another timer measure another quantity; oldest harvest
  first) and whose timing statistics are recomputed from them with the harvest's
  definitions (median; mean; min; max; 20th/80th percentiles with linear interpolation;
  population standard deviation; n_reps). ``status`` is ``ok`` only when every such repeat
  was ok; otherwise status, error and max_abs_error are those of the latest failed one.
  Every other column is the latest repeat's. ``runs`` rows: as latest.

Either view refuses (:class:`MixedTimingError`) a run whose chosen measurements were timed in
different ways (its runs' ``timer`` or ``l2_flush_bytes``): a run measured in full with one timer
and in part with another would rank latencies of two quantities against each other.

A ``skipped`` measurement (not benchmarked: a ``--budget`` left it out, or its run could not be
set up) is no observation: in both views it is chosen only when no harvest measured the config,
so a budgeted harvest never hides an earlier measurement, and a later one that measured what a
budget skipped is not marked skipped.

A run resumed config by config has ``runs`` rows that each summarize only their own
harvest's configs. The runs row a view gives describes the run as the view's measurements
do: for a run with more than one committed harvest, its :data:`RUN_SUMMARY` columns are
recomputed from that view's measurements (:func:`summarize_runs`); a run harvested once keeps
its stored row.

Pure functions over pyarrow tables; the reader does the IO.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from schemas.enums import Status
from schemas.errors import MixedTimingError

HARVEST_MODES: tuple[str, ...] = ("all", "latest", "pooled")
"""Values of the reader's ``harvests`` option."""

RECENCY = "finished_at"
"""runs column ordering the harvests of one run (the commit time of its runs row)."""

GROUP_KEYS: dict[str, tuple[str, ...]] = {
    "runs": ("run_id",),
    "measurements": ("run_id", "config_id"),
}
"""Tables the option applies to, and what one row per group means there. Content-keyed
tables already hold one row per key."""

TIMING = (
    "median_ms",
    "mean_ms",
    "min_ms",
    "max_ms",
    "p20_ms",
    "p80_ms",
    "std_ms",
    "n_reps",
    "samples_ms",
)
FAILURE = ("status", "error", "max_abs_error")
OK = Status.OK.value
SKIPPED = Status.SKIPPED.value


def check_mode(harvests: str, table: str, committed_only: bool) -> None:
    """Refuse a bad ``harvests`` value (or one that needs committed rows) before any IO."""
    if harvests not in HARVEST_MODES:
        raise ValueError(
            f"harvests must be one of {', '.join(map(repr, HARVEST_MODES))}; got {harvests!r}"
        )
    if harvests != "all" and table == "measurements" and not committed_only:
        raise ValueError(
            f"harvests={harvests!r} ranks harvests by their runs rows, so it needs committed_only=True"
        )


def needed_columns(table: str, harvests: str) -> tuple[str, ...]:
    """Columns the selection reads besides those asked for."""
    if harvests == "all" or table not in GROUP_KEYS:
        return ()
    keys = (*GROUP_KEYS[table], "harvest_id")
    if table == "runs":
        return (*keys, RECENCY)
    return (*keys, *TIMING, *FAILURE) if harvests == "pooled" else (*keys, "status")


@dataclass(frozen=True)
class _Groups:
    """Row indices of each group, latest harvest first, groups in first-row order."""

    latest: pa.Array
    members: pa.ListArray


def _groups(rows: pa.Table, group_key: tuple[str, ...], recency: pa.Table | None) -> _Groups:
    """``recency``: (run_id, harvest_id, finished_at) of the committed runs. Within a group,
    rows that were measured (status not ``skipped``) come before skipped ones, then the
    latest harvest first."""
    names = [*group_key, "harvest_id", *([RECENCY] if RECENCY in rows.column_names else [])]
    keyed = rows.select(names).append_column("__row", pa.array(range(rows.num_rows), pa.int64()))
    skipped = (
        pc.fill_null(pc.equal(rows.column("status"), SKIPPED), False)
        if "status" in rows.column_names
        else pa.array([False] * rows.num_rows)
    )
    keyed = keyed.append_column("__skipped", skipped)
    if RECENCY not in keyed.column_names and recency is not None:  # measurements: ask the runs
        keyed = keyed.join(
            recency.select(["run_id", "harvest_id", RECENCY]),
            keys=["run_id", "harvest_id"],
            join_type="left outer",
        )
    finished = keyed.column(RECENCY)  # unknown finish times (null) count as the oldest
    oldest = pa.scalar(0, pa.int64()).cast(finished.type)
    keyed = keyed.set_column(
        keyed.column_names.index(RECENCY), RECENCY, pc.fill_null(finished, oldest)
    )
    ordering = [
        *((k, "ascending") for k in group_key),
        ("__skipped", "ascending"),
        (RECENCY, "descending"),
        ("harvest_id", "descending"),
    ]
    order = pc.sort_indices(keyed, sort_keys=ordering)
    grouped = (
        keyed.take(order)
        .group_by(list(group_key), use_threads=False)
        .aggregate([("__row", "first"), ("__row", "list")])
    )
    by_position = pc.sort_indices(grouped.column("__row_first"))  # keep the stored row order
    grouped = grouped.take(by_position)
    return _Groups(
        grouped.column("__row_first").combine_chunks(),
        grouped.column("__row_list").combine_chunks(),
    )


def one_harvest(
    table: str, rows: pa.Table, harvests: str, recency: pa.Table | None = None
) -> pa.Table:
    """``rows`` of ``table`` reduced to one per group as :data:`HARVEST_MODES` describes.

    ``rows`` must hold :func:`needed_columns`; ``recency`` is (run_id, harvest_id, finished_at)
    of the committed runs (not needed for the runs table itself).
    """
    if harvests == "all" or table not in GROUP_KEYS or rows.num_rows == 0:
        return rows
    if recency is None and table == "measurements":
        raise ValueError("choosing among the harvests of measurements needs the runs' finish times")
    groups = _groups(rows, GROUP_KEYS[table], recency)
    latest = rows.take(groups.latest)
    if table == "runs":
        return latest
    alike = timed_alike(recency)
    if not alike:
        _refuse_mixed_timing(rows, groups.latest, recency, harvests)
    if harvests == "latest":
        return latest
    return _pool(rows, latest, groups.members, None if alike else _timed_as(rows, recency))


def refuse_mixed_timing(rows: pa.Table, recency: pa.Table) -> None:
    """Raise :class:`MixedTimingError` when a run's ``ok`` rows among ``rows`` (measurements
    with run_id, harvest_id and status; every harvest's, as ``harvests='all'`` reads them) were
    timed in different ways: for a reader that compares all of a run's rows with each other
    (``python -m train --harvests all``). ``recency``: the runs' keys and :data:`TIMED_AS`."""
    if not timed_alike(recency):
        _refuse_mixed_timing(rows, pa.array(range(rows.num_rows), pa.int64()), recency, "all")


def timed_alike(recency: pa.Table | None) -> bool:
    """Whether every committed run in ``recency`` was timed the same way (or ``recency`` does
    not say): then no run can mix ways, and nothing needs comparing row by row (the common
    case, and a cheap one: one row per run)."""
    if recency is None or not all(name in recency.column_names for name in TIMED_AS):
        return True
    return recency.select(list(TIMED_AS)).group_by(list(TIMED_AS)).aggregate([]).num_rows <= 1


def _refuse_mixed_timing(rows: pa.Table, chosen: pa.Array, recency: pa.Table, harvests: str) -> None:
    """Raise :class:`MixedTimingError` when the measured rows ``chosen`` for one run were timed
    in different ways (a run measured in full with one ``--timer``, then in part with another:
    resume measures again what it measured under other settings). Within a run, configs are
    compared with each other (ranks, the run's best), and a ``wall`` latency cannot be ranked
    against a ``thread_cpu`` one. ``recency``: the runs' keys and :data:`TIMED_AS`."""
    picked = rows.select([name for name in ("run_id", "harvest_id", "status") if name in rows.column_names])
    picked = picked.take(chosen)
    if "status" in picked.column_names:  # no latency: skipped, or failed before or while timing
        picked = picked.filter(pc.equal(picked.column("status"), OK))
    timed = picked.join(
        recency.select(["run_id", "harvest_id", *TIMED_AS]),
        keys=["run_id", "harvest_id"],
        join_type="left outer",
    )
    ways = timed.group_by(["run_id", *TIMED_AS]).aggregate([([], "count_all")])
    per_run = ways.group_by("run_id").aggregate([([], "count_all")])
    mixed = per_run.filter(pc.greater(per_run.column("count_all"), 1)).column("run_id").to_pylist()
    if not mixed:
        return
    run = min(mixed)
    of_run = ways.filter(pc.equal(ways.column("run_id"), run))
    counts = zip(*(of_run.column(name).to_pylist() for name in (*TIMED_AS, "count_all")), strict=True)
    described = ", ".join(
        f"{n} by timer {timer} with L2 flush {flush}" for timer, flush, n in sorted(counts, key=str)
    )
    raise MixedTimingError(
        f"measurements: harvests={harvests!r} would give {len(mixed)} run(s) configs timed in different "
        f"ways, e.g. run_id={run}: {described}; their latencies cannot be compared within the run. "
        "Harvest the run's other configs again the latest way (the same --timer and L2 flush), or "
        "read harvests='all' and choose"
    )


TIMED_AS: tuple[str, ...] = ("timer", "l2_flush_bytes")
"""``runs`` columns that say what a sample measures: pooled samples must agree on them (a
``thread_cpu`` and a ``wall`` sample of one config, or a cold-L2 and a warm-L2 one, are not
draws of one latency)."""


def _timed_as(rows: pa.Table, recency: pa.Table | None) -> list[tuple[object, ...]] | None:
    """Per row of ``rows`` (measurements), its run's :data:`TIMED_AS` values; None when
    ``recency`` does not carry them (every repeat then counts as timed alike)."""
    if recency is None or not all(name in recency.column_names for name in TIMED_AS):
        return None
    keyed = rows.select(["run_id", "harvest_id"]).append_column(
        "__row", pa.array(range(rows.num_rows), pa.int64())
    )
    joined = keyed.join(
        recency.select(["run_id", "harvest_id", *TIMED_AS]),
        keys=["run_id", "harvest_id"],
        join_type="left outer",
    ).sort_by("__row")
    return list(zip(*(joined.column(name).to_pylist() for name in TIMED_AS), strict=True))


def _pool(
    rows: pa.Table, latest: pa.Table, members: pa.ListArray, timed_as: list[tuple[object, ...]] | None = None
) -> pa.Table:
    """``latest`` with timing pooled over, and failures taken from, every repeat timed as the
    latest was (``timed_as``: per row, its run's :data:`TIMED_AS` values; repeats timed
    otherwise are left out, as samples of another quantity).

    Vectorized over all repeated groups at once (a dataset can hold 10^5 of them).
    """
    repeated = pc.indices_nonzero(pc.greater(pc.list_value_length(members), 1))
    if len(repeated) == 0:
        return latest
    groups = members.take(repeated).to_pylist()  # row indices, latest first
    if timed_as is not None:
        groups = [[r for r in group if timed_as[r] == timed_as[group[0]]] for group in groups]
        still = [k for k, group in enumerate(groups) if len(group) > 1]  # one left: stored as it is
        if not still:
            return latest
        repeated = repeated.take(pa.array(still, pa.int64()))
        groups = [groups[k] for k in still]
    chronological = pa.array([row for group in groups for row in reversed(group)], pa.int64())
    owner = pa.array([k for k, group in enumerate(groups) for _ in group], pa.int64())
    samples = rows.column("samples_ms").take(chronological).combine_chunks()
    values = pc.cast(pc.list_flatten(samples), pa.float64())
    if len(values):
        stats = grouped_stats(pc.take(owner, pc.list_parent_indices(samples)), values, len(groups))
        pooled = pc.indices_nonzero(pc.greater(stats.column("n_reps"), 0))  # groups with samples
        latest = _replace(latest, pc.take(repeated, pooled), stats.take(pooled))
    failed = _latest_failures(rows, groups)
    if failed:
        positions = pa.array([position for position, _ in failed], pa.int64())
        sources = rows.select(list(FAILURE)).take(pa.array([row for _, row in failed], pa.int64()))
        latest = _replace(latest, pc.take(repeated, positions), sources)
    return latest


def _latest_failures(rows: pa.Table, groups: list[list[int]]) -> list[tuple[int, int]]:
    """(group position, row) of the latest failed repeat of every group that has one (a
    skipped repeat did not fail: it was not run)."""
    statuses = rows.column("status").to_pylist()
    failed = []
    for position, group in enumerate(groups):
        row = next((r for r in group if statuses[r] not in (OK, SKIPPED)), None)
        if row is not None:
            failed.append((position, row))
    return failed


def _replace(table: pa.Table, positions: pa.Array, values: pa.Table) -> pa.Table:
    """``table`` with the columns of ``values`` replaced at row ``positions`` (in order)."""
    if len(positions) == 0:
        return table
    pick = list(range(table.num_rows))
    for k, position in enumerate(positions.to_pylist()):
        pick[position] = table.num_rows + k
    indices = pa.array(pick, pa.int64())
    for name in values.column_names:
        index = table.schema.get_field_index(name)
        field = table.schema.field(index)
        both = pa.chunked_array(
            [*table.column(index).chunks, *values.column(name).cast(field.type).chunks], field.type
        )
        table = table.set_column(index, field, both.take(indices))
    return table


def grouped_stats(owner: pa.Array, values: pa.Array, groups: int) -> pa.Table:
    """Timing columns per group ``0 .. groups - 1`` from the samples ``values`` (ms, at least
    one) owned by each group, ``owner`` ascending and each group's samples in timing order.

    Same definitions as the harvest: median, mean, min, max, 20th/80th percentiles with linear
    interpolation, population standard deviation, n_reps; ``samples_ms`` the group's samples.
    A group without samples gets n_reps 0 and nulls. Null values are not samples: they are
    left out (with their owner, so every other group keeps exactly its own samples).
    """
    present = pc.is_valid(values)
    if not pc.all(present).as_py():
        owner, values = pc.filter(owner, present), pc.filter(values, present)
    table = pa.table({"g": owner, "v": values})
    aggregates = table.group_by("g").aggregate(
        [("v", "count"), ("v", "mean"), ("v", "min"), ("v", "max"), ("v", "stddev")]
    )
    names = ("v_count", "v_mean", "v_min", "v_max", "v_stddev")
    aligned: dict[str, list] = {name: [None] * groups for name in names}
    for row in aggregates.to_pylist():
        for name in names:
            aligned[name][row["g"]] = row[name]
    counts = [count or 0 for count in aligned["v_count"]]
    starts = [0] * (groups + 1)
    for group, count in enumerate(counts):
        starts[group + 1] = starts[group] + count
    ordered = pc.take(
        values, pc.sort_indices(table, sort_keys=[("g", "ascending"), ("v", "ascending")])
    )
    last = len(values) - 1
    has = pa.array([count > 0 for count in counts])

    def quantile(q: float) -> pa.Array:
        # Linear interpolation between the order statistics around q * (n - 1).
        low, high, fraction = [], [], []
        for start, count in zip(starts, counts):
            position = q * max(count - 1, 0)
            below = int(position)
            low.append(min(start + below, last))
            high.append(min(start + min(below + 1, max(count - 1, 0)), last))
            fraction.append(position - below)
        lower = pc.take(ordered, pa.array(low, pa.int64()))
        upper = pc.take(ordered, pa.array(high, pa.int64()))
        interpolated = pc.add(lower, pc.multiply(pc.subtract(upper, lower), pa.array(fraction)))
        return pc.if_else(has, interpolated, pa.scalar(None, pa.float64()))

    return pa.table(
        {
            "median_ms": quantile(0.5),
            "mean_ms": pa.array(aligned["v_mean"], pa.float64()),
            "min_ms": pa.array(aligned["v_min"], pa.float64()),
            "max_ms": pa.array(aligned["v_max"], pa.float64()),
            "p20_ms": quantile(0.2),
            "p80_ms": quantile(0.8),
            "std_ms": pa.array(aligned["v_stddev"], pa.float64()),
            "n_reps": pa.array(counts, pa.int32()),
            "samples_ms": pa.ListArray.from_arrays(
                pa.array(starts, pa.int32()), values.cast(pa.float32())
            ),
        }
    )


RUN_SUMMARY: tuple[str, ...] = ("n_configs", "n_ok", "best_config_id", "best_median_ms", "default_median_ms")
"""``runs`` columns that aggregate the run's measurements (per harvest as stored; per view in
``latest`` and ``pooled``, see :func:`summarize_runs`)."""

SUMMARY_INPUTS: tuple[str, ...] = ("run_id", "config_id", "status", "median_ms", "is_default")
"""``measurements`` columns :func:`summarize_runs` reads."""


def merged_runs(rows: pa.Table) -> pa.Array:
    """run_ids with more than one committed ``runs`` row in ``rows`` (every harvest's, as
    ``harvests='all'`` reads them): the runs whose one-harvest views merge harvests."""
    counts = rows.select(["run_id"]).group_by("run_id").aggregate([([], "count_all")])
    return counts.filter(pc.greater(counts.column("count_all"), 1)).column("run_id").combine_chunks()


def summarize_runs(runs: pa.Table, measurements: pa.Table, merged: pa.Array) -> pa.Table:
    """``runs`` (one row per run) with the :data:`RUN_SUMMARY` columns it holds recomputed, for
    the runs in ``merged`` that have rows in ``measurements`` (one row per config, the view's:
    :data:`SUMMARY_INPUTS`), as the harvest computes them from its own rows: ``n_configs`` rows,
    ``n_ok`` of them ok, ``best_*`` the ok config with the lowest median (ties to the smaller
    config_id), ``default_median_ms`` the default config's median when ok. Other runs keep
    their stored values (a run harvested once: its row already summarizes them; an imported
    run's best may be the tuner's own choice)."""
    present = [name for name in RUN_SUMMARY if name in runs.column_names]
    if not present or len(merged) == 0 or runs.num_rows == 0:
        return runs
    rows = measurements.select(list(SUMMARY_INPUTS))
    rows = rows.filter(pc.is_in(rows.column("run_id"), value_set=merged))
    if rows.num_rows == 0:
        return runs
    summary = _summary(rows)
    keyed = runs.select(["run_id"]).append_column("__row", pa.array(range(runs.num_rows), pa.int64()))
    aligned = keyed.join(summary, keys="run_id", join_type="left outer").sort_by("__row")
    recomputed = pc.fill_null(aligned.column("__summarized"), False)
    for name in present:
        index = runs.schema.get_field_index(name)
        field = runs.schema.field(index)
        value = aligned.column(name).cast(field.type)
        runs = runs.set_column(index, field, pc.if_else(recomputed, value, runs.column(index)))
    return runs


def _summary(rows: pa.Table) -> pa.Table:
    """Per run_id of ``rows`` (:data:`SUMMARY_INPUTS`), its :data:`RUN_SUMMARY` values and
    ``__summarized`` (True)."""
    ok = pc.fill_null(pc.equal(rows.column("status"), OK), False)
    counted = (
        rows.select(["run_id"])
        .append_column("__ok", pc.cast(ok, pa.int64()))
        .group_by("run_id")
        .aggregate([([], "count_all"), ("__ok", "sum")])
    )
    timed = rows.filter(pc.and_(ok, pc.is_valid(rows.column("median_ms"))))
    ranked = timed.sort_by([("run_id", "ascending"), ("median_ms", "ascending"), ("config_id", "ascending")])
    best = ranked.group_by("run_id", use_threads=False).aggregate(
        [("config_id", "first"), ("median_ms", "first")]
    )
    default = timed.filter(pc.fill_null(timed.column("is_default"), False))
    default = default.group_by("run_id").aggregate([("median_ms", "min")])
    summary = pa.table(
        {
            "run_id": counted.column("run_id"),
            "n_configs": counted.column("count_all"),
            "n_ok": counted.column("__ok_sum"),
            "__summarized": pa.array([True] * counted.num_rows),
        }
    )
    best = pa.table(
        {
            "run_id": best.column("run_id"),
            "best_config_id": best.column("config_id_first"),
            "best_median_ms": best.column("median_ms_first"),
        }
    )
    default = pa.table({"run_id": default.column("run_id"), "default_median_ms": default.column("median_ms_min")})
    summary = summary.join(best, keys="run_id", join_type="left outer")
    return summary.join(default, keys="run_id", join_type="left outer")


def latest_statuses(committed: pa.Table, recency: pa.Table) -> tuple[dict[str, int], dict[str, int]]:
    """Per status, how many configs the one-harvest view gives (``harvests='latest'``, what
    ``python -m train`` reads: one row per (run_id, config_id)), and how many rows of earlier
    harvests that view leaves out. ``committed``: measurements of committed runs (``run_id``,
    ``harvest_id``, ``config_id``, ``status``); ``recency``: ``runs``' ``run_id``,
    ``harvest_id`` and :data:`RECENCY`. By finish time alone, without the refusal of a run
    timed two ways: counting must not fail on a dataset ``check`` only warns about. Counting
    every stored row said ``skipped: 30`` of a dataset whose rerun had measured the 30 configs
    a ``--budget`` harvest skipped."""
    rows = committed.select(["run_id", "harvest_id", "config_id", "status"])
    latest = one_harvest("measurements", rows, "latest", recency.select(["run_id", "harvest_id", RECENCY]))
    shown = Counter(latest.column("status").to_pylist())
    superseded = Counter(rows.column("status").to_pylist()) - shown  # latest is a subset of rows
    return dict(shown), dict(superseded)

