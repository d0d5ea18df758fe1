"""The samples table: one row per measured (run, config), joined with its run and IR summary.

Everything a tabular model, a baseline or the GNN's side features need comes from
:func:`load_samples`; it reads the dataset through the schema-version-gated reader
(:func:`schemas.read_table`) and never touches the files directly.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from schemas import DatasetError, Status, TableNotFoundError, read_table
from schemas.harvests import HARVEST_MODES, TIMED_AS, refuse_mixed_timing
from schemas.values import measurement_value_problems

LEVELS = ("ttgir", "ttir")

RUN_COLUMNS: tuple[str, ...] = (
    "run_id",
    "harvest_id",
    "kernel_id",
    "family",
    "scale",
    "shape_name",
    "problem_json",
    "problem_dims",
    "problem_flags",
    "dtype",
    "flops",
    "bytes_moved",
    "arithmetic_intensity",
    "device_kind",
    "device_name",
    "compute_capability",
    "sm_count",
    "l2_bytes",
    "smem_per_block_bytes",
    "total_memory_bytes",
    "sm_clock_max_mhz",
    "mem_clock_max_mhz",
    "ir_target",
    "timer",
    "default_config_id",
)
"""Columns of ``runs`` carried into every sample (``arch`` comes from measurements)."""

MEASUREMENT_COLUMNS: tuple[str, ...] = (
    "run_id",
    "config_id",
    "harvest_id",
    "arch",
    "config_json",
    "launch",
    "config_params",
    "config_roles",
    "num_warps",
    "num_stages",
    "num_ctas",
    "maxnreg",
    "is_default",
    "grid",
    "num_programs",
    "threads_per_program",
    "status",
    "median_ms",
    "p20_ms",
    "p80_ms",
    "std_ms",
    "n_reps",
    "same_binary_as",
    "compile_time_s",
    "ttir_id",
    "ttgir_id",
    "n_regs",
    "spill_bytes",
    "shared_mem_bytes",
    "sass_instructions",
    "sass_mix",
)

GRAPH_COUNT_COLUMNS: tuple[str, ...] = (
    "num_nodes",
    "num_data_edges",
    "num_region_edges",
    "num_loops",
    "num_reductions",
    "num_dots",
    "num_loads",
    "num_stores",
    "max_depth",
)
"""Summary counts of ``ir_graphs``; in the samples table they carry the prefix ``ir_``."""

IR_COUNT_COLUMNS: tuple[str, ...] = tuple(f"ir_{name}" for name in GRAPH_COUNT_COLUMNS)


def load_samples(
    data: str, *, level: str = "ttgir", harvests: str = "latest", keep_skipped: bool = False
) -> pl.DataFrame:
    """One row per (run_id, config_id) measurement of the committed runs in ``data``.

    Every failure status is kept (failed configs are the validity head's targets); ``skipped``
    rows (never benchmarked: left out by a ``--budget`` or by corpus.guide's pruning in a
    recording, or their run could not be set up) are no label, neither a latency nor a failure,
    and are dropped unless ``keep_skipped``. Columns:

    - keys: ``run_id``, ``config_id``, ``harvest_id``; the run's descriptive columns
      (:data:`RUN_COLUMNS`: family, shape_name, dtype, problem dims/flags, flops, bytes_moved,
      arithmetic_intensity (FLOP/byte, derived from flops/bytes when the row lacks it),
      device facts, ...);
    - the measurement's config, timing, static stats (:data:`MEASUREMENT_COLUMNS`);
    - ``ir_id``: ``ttgir_id`` or ``ttir_id`` per ``level`` (null when compile failed), and the
      graph's summary counts :data:`IR_COUNT_COLUMNS` (null when the IR is not stored);
    - ``valid``: status == ok with a positive median; ``run_best_ms``: the run's lowest valid
      median (ms); targets ``log_latency`` = ln(median_ms / 1 ms) and ``norm_runtime`` =
      run_best_ms / median_ms in (0, 1], both null unless ``valid``.

    ``harvests``: how repeated harvests of one (run_id, config_id) are combined, by the gated
    reader (:func:`schemas.read_table`'s option of that name): ``latest`` (the latest
    harvest's row), ``pooled`` (the samples of every repeat timed as the latest one pooled,
    statistics recomputed) or ``all`` (every row; keys then repeat); each refuses a run whose
    ``ok`` configs were timed in different ways (:class:`schemas.MixedTimingError`). Rows come
    sorted by run_id, config_id.

    Raises ``ValueError`` for an unknown ``level``/``harvests`` and :class:`schemas.DatasetError`
    for a dataset without runs or measurements, or with measurement values no measurement can
    have (:mod:`schemas.values`: an unknown status, a NaN or infinite timing, an ``ok`` row
    without a usable median).
    """
    if level not in LEVELS:
        raise ValueError(f"level {level!r} is not one of {', '.join(LEVELS)}")
    if harvests not in HARVEST_MODES:
        raise ValueError(f"harvests {harvests!r} is not one of {', '.join(HARVEST_MODES)}")
    # harvests="all" compares every harvest's rows of a run: their runs' timing settings come
    # along in the one read of runs, to refuse a run timed in different ways below.
    run_columns = list(dict.fromkeys([*RUN_COLUMNS, *(TIMED_AS if harvests == "all" else ())]))
    stored_runs = read_table(data, "runs", columns=run_columns, harvests=harvests)
    runs = pl.from_arrow(stored_runs)
    stored = read_table(data, "measurements", columns=list(MEASUREMENT_COLUMNS), harvests=harvests)
    measurements = pl.from_arrow(stored)
    assert isinstance(runs, pl.DataFrame) and isinstance(measurements, pl.DataFrame)
    problems = measurement_value_problems(stored)
    if problems:  # a NaN 'ok' latency was a valid label with a NaN log; an unknown status a failure
        raise DatasetError(
            f"{data}: {'; '.join(problems)}. `python -m schemas check {data}` names the problems; "
            "no training on them"
        )
    if harvests == "all":
        # the run's rows are ranked against each other (its best, normalized runtimes): one
        # timer only ('latest' and 'pooled' are refused the same way by the reader)
        timings = stored_runs.select(["run_id", "harvest_id", *TIMED_AS])
        refuse_mixed_timing(stored.select(["run_id", "harvest_id", "status"]), timings)
        joined = measurements.join(runs.select(RUN_COLUMNS), on=["run_id", "harvest_id"], how="inner")
    else:
        # One runs row per run_id (its latest harvest); a run resumed per config may have
        # measurements from an earlier harvest, which keep their own harvest_id.
        joined = measurements.join(runs.drop("harvest_id"), on="run_id", how="inner")
    if not keep_skipped:
        joined = joined.filter(pl.col("status") != Status.SKIPPED.value)
    joined = joined.with_columns(pl.col(f"{level}_id").alias("ir_id"))
    joined = joined.join(_graph_counts(data, level, joined["ir_id"]), on="ir_id", how="left")
    return _with_targets(_with_intensity(joined)).sort("run_id", "config_id")


def _graph_counts(data: str, level: str, referenced: pl.Series) -> pl.DataFrame:
    """``ir_id`` and the prefixed summary counts of every graph of ``level`` (empty when the
    dataset stores no IR graphs: e.g. a harvest whose IR extraction failed). ``referenced``:
    the samples' ir_id values; DatasetError when some name a graph and the dataset has no
    ``ir_graphs`` table (a lost directory: their counts would be null, as for configs that
    never compiled)."""
    columns = ["ir_id", *GRAPH_COUNT_COLUMNS]
    try:
        table = read_table(data, "ir_graphs", columns=columns, filters=[("level", "=", level)])
    except TableNotFoundError as exc:  # corrupt, newer, mismatched files raise: never hidden
        named = referenced.drop_nulls().n_unique()
        if named:
            raise DatasetError(
                f"{data}: measurements name {named} {level} graph(s), but {exc}. "
                f"`python -m schemas check {data}` names the problems; restore the table's files"
            ) from None
        table = None
    graphs = (
        pl.from_arrow(table)
        if table is not None
        else pl.DataFrame(
            schema={"ir_id": pl.String, **dict.fromkeys(GRAPH_COUNT_COLUMNS, pl.Int32)}
        )
    )
    assert isinstance(graphs, pl.DataFrame)
    return graphs.rename({name: f"ir_{name}" for name in GRAPH_COUNT_COLUMNS})


def _with_intensity(frame: pl.DataFrame) -> pl.DataFrame:
    derived = pl.when(pl.col("bytes_moved") > 0).then(pl.col("flops") / pl.col("bytes_moved"))
    return frame.with_columns(
        pl.coalesce(pl.col("arithmetic_intensity"), derived).alias("arithmetic_intensity")
    )


def _with_targets(frame: pl.DataFrame) -> pl.DataFrame:
    valid = (pl.col("status") == Status.OK.value) & (pl.col("median_ms") > 0)
    frame = frame.with_columns(valid.fill_null(False).alias("valid"))
    ok_ms = pl.when(pl.col("valid")).then(pl.col("median_ms"))
    frame = frame.with_columns(ok_ms.min().over("run_id").alias("run_best_ms"))
    return frame.with_columns(
        pl.when(pl.col("valid")).then(pl.col("median_ms").log()).alias("log_latency"),
        pl.when(pl.col("valid"))
        .then(pl.col("run_best_ms") / pl.col("median_ms"))
        .alias("norm_runtime"),
    )


def ranked_runs(frame: pl.DataFrame, min_valid: int = 2) -> list[str]:
    """run_ids with at least ``min_valid`` valid configs: the runs a ranking can be judged on."""
    counts = frame.filter(pl.col("valid")).group_by("run_id").len()
    return sorted(counts.filter(pl.col("len") >= min_valid)["run_id"].to_list())


def select_runs(frame: pl.DataFrame, run_ids: Sequence[str]) -> pl.DataFrame:
    """Rows of ``frame`` whose run_id is in ``run_ids`` (order kept)."""
    return frame.filter(pl.col("run_id").is_in(list(run_ids)))


def collapse_identical(frame: pl.DataFrame) -> pl.DataFrame:
    """One row per distinct program of each run: configs whose binary is identical to another
    config's (``same_binary_as``, set by the harvest, which measures such a program once and
    gives every config of it the same timing) are dropped, keeping the one measured.

    Those configs are one program under several names: training on every copy weighs a
    program by how many configs happen to compile to it, and feeds the ranking loss ties
    that carry no information. Evaluation keeps every config (a user ranks all of them).
    Order of the kept rows is kept.
    """
    if "same_binary_as" not in frame.columns:
        return frame
    program = pl.coalesce(pl.col("same_binary_as"), pl.col("config_id"))
    keyed = frame.with_row_index("__row").with_columns(program.alias("__program"))
    # The measured config (config_id == its program) first within each program, then the rest.
    keyed = keyed.sort("__program", (pl.col("config_id") != pl.col("__program")), "__row")
    kept = keyed.unique(subset=["run_id", "__program"], keep="first", maintain_order=True)
    return kept.sort("__row").drop("__row", "__program")
