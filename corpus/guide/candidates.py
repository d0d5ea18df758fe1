"""Compiled-but-unmeasured configs as the cost model reads them: a samples-table frame and the
IR tables of their graphs.

The rows are built by the harvest's own row code (:func:`corpus.harvest.rows.measurement_row`
on the compile outcome, no benchmark) and typed by the dataset schemas, so a candidate looks to
the model exactly like a measured config of the same run minus its timing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl
import pyarrow as pa

from corpus.harvest.compile_worker import CompileOutcome
from corpus.harvest.device import DeviceFacts
from corpus.harvest.plan import PlannedConfig, PlannedRun
from corpus.harvest.rows import (
    ir_target_name,
    measurement_row,
    problem_columns,
    run_identity_columns,
)
from corpus.harvest.runner import IR_TABLES
from corpus.harvest.sass_batch import fill_row
from schemas.tables import table_spec
from schemas.writer import conform
from train.tables import RUN_COLUMNS

if TYPE_CHECKING:
    from extract.sass import InstructionStats


@dataclass(frozen=True)
class Candidates:
    """What :func:`train.guide.score_candidates` takes: ``frame`` (one row per config, in the
    order given) and the IR tables of their graphs at the model's level."""

    frame: pl.DataFrame
    ir_nodes: pl.DataFrame
    ir_edges: pl.DataFrame
    ir_graphs: pl.DataFrame


def run_columns(
    run: PlannedRun, facts: DeviceFacts, ir_target: str, flops: int | None, bytes_moved: int | None
) -> dict[str, Any]:
    """The ``runs`` columns a model reads about ``run`` (family, problem, dtype, device facts,
    IR target), as :func:`corpus.harvest.rows.run_row` writes them; ``flops``/``bytes_moved``
    None when unknown (a recorded kernel)."""
    problem = problem_columns(run, flops or 0, bytes_moved or 0)
    if flops is None:
        problem["arithmetic_intensity"] = None
    return {
        **run_identity_columns(run),
        "flops": flops,
        "bytes_moved": bytes_moved,
        **problem,
        **facts.as_row(),
        "ir_target": ir_target_name(ir_target),
        "default_config_id": run.default_config_id,
    }


def candidate_frames(
    run: PlannedRun,
    configs: Sequence[PlannedConfig],
    outcomes: Mapping[str, CompileOutcome],
    run_row: Mapping[str, Any],
    *,
    arch: str,
    level: str,
    sass: Mapping[str, InstructionStats] | None = None,
    keys: Sequence[str] | None = None,
) -> Candidates:
    """The candidates of one run: each of ``configs`` with its compile outcome (by config id;
    compiled OK), its run's columns ``run_row`` (:func:`run_columns`) and the IR graphs of
    ``level``. ``sass``: instruction statistics by config id for outcomes whose ``stats``
    lack them (the harvest disassembles in batches, after compiling), filled in as the
    harvest fills its rows, so the model reads what it was trained with. ``keys``: each config's
    key in ``outcomes`` and ``sass`` (default: its config id; the Triton plug-in's candidates may
    share one, configs differing only in their ``pre_hook``)."""
    keys = [planned.config.id for planned in configs] if keys is None else list(keys)
    rows = []
    for key, planned in zip(keys, configs, strict=True):
        row = measurement_row(run, planned, "candidates", arch, outcomes[key], None)
        if sass and key in sass:
            fill_row(row, sass[key])
        rows.append(row)
    measurements = pl.DataFrame(conform(table_spec("measurements"), rows))
    runs_spec = table_spec("runs")
    known = {k: v for k, v in run_row.items() if k in runs_spec.schema.names}
    runs = pl.DataFrame(conform(runs_spec, [{**known, "harvest_id": "candidates"}]))
    keep = [c for c in RUN_COLUMNS if c in runs.columns and c not in ("run_id", "harvest_id")]
    # Ranks go back to configs by row position: keep the configs' order (polars leaves a
    # join's row order unspecified otherwise).
    frame = measurements.join(runs.select("run_id", *keep), on="run_id", how="left", maintain_order="left")
    frame = frame.with_columns(pl.col(f"{level}_id").alias("ir_id"))
    # Configs may compile to one graph (num_stages of a kernel without a loop, maxnreg, a
    # config listed twice or differing only in its pre_hook): each graph goes in once, as in
    # the dataset, else its nodes repeat and the model's graph encoder refuses the tables.
    graphs = {ir_id: graph for key in keys for ir_id, graph in outcomes[key].graphs.items()}
    tables: dict[str, list[pa.Table]] = {name: [graph[name] for graph in graphs.values()] for name in IR_TABLES}
    ir = {
        name: pl.DataFrame(
            conform(table_spec(name), pa.concat_tables(parts, promote_options="permissive"))
            if parts
            else table_spec(name).schema.empty_table()
        ).filter(pl.col("level") == level)
        for name, parts in tables.items()
    }
    return Candidates(frame, ir["ir_nodes"], ir["ir_edges"], ir["ir_graphs"])
