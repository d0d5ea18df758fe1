"""Rank configs a model has never seen measured: API and ``python -m train.predict``.

Inputs are what a GPU-less machine can produce: the IR tables of each candidate config's
compile (``ir_nodes`` / ``ir_edges`` rows, e.g. ``extract``'s ``IrGraph.to_arrow()``) and a
candidates frame with one row per config (config knobs, launch grid, problem size; any
column of :func:`train.tables.load_samples` it lacks counts as unknown), or a dataset
directory whose configs are ranked as they are.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from schemas import read_table
from schemas.tables import MEASUREMENTS, RUNS
from train.checkpoint import Checkpoint, load_checkpoint
from train.data import GraphSamples, read_ir_tables
from train.fit import predict_samples
from train.graphs import encode_graphs
from train.tables import (
    GRAPH_COUNT_COLUMNS,
    IR_COUNT_COLUMNS,
    MEASUREMENT_COLUMNS,
    RUN_COLUMNS,
    load_samples,
)

OUTPUT_COLUMNS = ("run_id", "config_id", "rank", "predicted_ms", "score", "p_valid")


def _template() -> pl.DataFrame:
    """An empty frame with every samples-table column the featurizers may read."""
    runs = pl.from_arrow(RUNS.empty_table().select(list(RUN_COLUMNS)))
    measurements = pl.from_arrow(
        MEASUREMENTS.empty_table().select([c for c in MEASUREMENT_COLUMNS if c != "run_id"])
    )
    assert isinstance(runs, pl.DataFrame) and isinstance(measurements, pl.DataFrame)
    extra = pl.DataFrame(
        schema={
            "ir_id": pl.String,
            **dict.fromkeys(IR_COUNT_COLUMNS, pl.Int32),
            "valid": pl.Boolean,
            "log_latency": pl.Float64,
            "norm_runtime": pl.Float64,
            "run_best_ms": pl.Float64,
        }
    )
    return pl.concat([runs, measurements.drop("harvest_id"), extra], how="horizontal")


def complete_candidates(candidates: pl.DataFrame) -> pl.DataFrame:
    """``candidates`` with every missing samples-table column added as nulls (typed), a
    ``run_id`` (one group, ``"candidates"``) and ``config_id`` (row number) when absent."""
    frame = candidates
    if "run_id" not in frame.columns:
        frame = frame.with_columns(pl.lit("candidates").alias("run_id"))
    if "config_id" not in frame.columns:
        frame = frame.with_row_index("config_id").with_columns(pl.col("config_id").cast(pl.String))
    template = _template()
    missing = [
        pl.lit(None, dtype=dtype).alias(name)
        for name, dtype in template.schema.items()
        if name not in frame.columns
    ]
    return frame.with_columns(missing)


def rank_configs(
    checkpoint: Checkpoint | str | Path,
    candidates: pl.DataFrame,
    ir_nodes: pl.DataFrame,
    ir_edges: pl.DataFrame,
    ir_graphs: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Predict latency, validity and rank (1 = predicted fastest, per ``run_id``) of every row
    of ``candidates``.

    ``candidates``: one row per config; ``ir_id`` names its graph (of the checkpoint's level)
    in ``ir_nodes`` / ``ir_edges``. ``ir_graphs`` (optional) supplies the graph summary counts
    the candidates lack. Rows whose graph is absent are ranked on side features alone.
    Returns the candidates sorted by run_id, rank, with :data:`OUTPUT_COLUMNS` first.
    """
    ckpt = checkpoint if isinstance(checkpoint, Checkpoint) else load_checkpoint(checkpoint)
    frame = candidates
    if ir_graphs is not None and "ir_id" in frame.columns:
        counts = [
            c
            for c in GRAPH_COUNT_COLUMNS
            if f"ir_{c}" not in frame.columns and c in ir_graphs.columns
        ]
        summary = (
            ir_graphs.select("ir_id", *counts)
            .unique("ir_id")
            .rename({c: f"ir_{c}" for c in counts})
        )
        frame = frame.join(summary, on="ir_id", how="left", maintain_order="left")
    frame = complete_candidates(frame)
    frame = frame.with_columns(pl.col("valid").fill_null(False))
    graphs = ckpt.graph_featurizer.transform(encode_graphs(ir_nodes, ir_edges))
    samples = GraphSamples(frame, graphs, ckpt.tabular.transform(frame))
    pred = predict_samples(ckpt.model, samples)
    ranked = frame.with_columns(
        pl.Series("score", pred.score),
        pl.Series("predicted_ms", pred.latency_ms),
        pl.Series("p_valid", pred.p_valid),
    ).with_columns(pl.col("score").rank("ordinal").over("run_id").cast(pl.Int32).alias("rank"))
    first = list(OUTPUT_COLUMNS)
    return ranked.select(first + [c for c in ranked.columns if c not in first]).sort(
        "run_id", "rank"
    )


def rank_dataset(
    checkpoint: Checkpoint | str | Path, data: str, *, harvests: str = "latest"
) -> pl.DataFrame:
    """Rank every config of every run in the dataset ``data`` (measured or not)."""
    ckpt = checkpoint if isinstance(checkpoint, Checkpoint) else load_checkpoint(checkpoint)
    samples = load_samples(data, level=ckpt.level, harvests=harvests)
    nodes, edges = read_ir_tables(data, ckpt.level)
    return rank_configs(ckpt, samples, nodes, edges)


def rank_ir_dir(
    checkpoint: Checkpoint | str | Path, candidates: pl.DataFrame, ir_dir: str
) -> pl.DataFrame:
    """Like :func:`rank_configs`, reading the IR tables from a dataset-layout directory."""
    ckpt = checkpoint if isinstance(checkpoint, Checkpoint) else load_checkpoint(checkpoint)
    nodes, edges = read_ir_tables(ir_dir, ckpt.level)
    graphs = pl.from_arrow(read_table(ir_dir, "ir_graphs", filters=[("level", "=", ckpt.level)]))
    assert isinstance(graphs, pl.DataFrame)
    return rank_configs(ckpt, candidates, nodes, edges, graphs)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m train.predict --checkpoint DIR (--data DIR | --candidates FILE --ir DIR)``."""
    parser = argparse.ArgumentParser(prog="python -m train.predict", description=__doc__)
    parser.add_argument(
        "--checkpoint", required=True, help="directory written by python -m train (OUT/checkpoint)"
    )
    parser.add_argument("--data", help="dataset directory: rank every config of every run")
    parser.add_argument(
        "--candidates", help="Parquet/CSV of candidate configs (with ir_id), instead of --data"
    )
    parser.add_argument(
        "--ir", help="dataset-layout directory holding ir_nodes/ir_edges of the candidates"
    )
    parser.add_argument("--out", help="write the ranking here (.parquet or .csv)")
    parser.add_argument("--top", type=int, default=5, help="configs shown per run")
    args = parser.parse_args(argv)
    if not Path(args.checkpoint, "checkpoint.json").exists():
        parser.error(f"--checkpoint {args.checkpoint}: no checkpoint.json there")
    if bool(args.data) == bool(args.candidates):
        parser.error("give either --data or --candidates (with --ir)")
    if args.candidates and not args.ir:
        parser.error("--candidates needs --ir (the directory of their IR tables)")
    if args.data:
        ranking = rank_dataset(args.checkpoint, args.data)
    else:
        path = Path(args.candidates)
        candidates = pl.read_parquet(path) if path.suffix == ".parquet" else pl.read_csv(path)
        ranking = rank_ir_dir(args.checkpoint, candidates, args.ir)
    if args.out:
        out = Path(args.out)
        if out.suffix == ".parquet":
            ranking.write_parquet(out)
        else:  # CSV holds flat columns only: nested ones (lists, structs) are left out
            ranking.select([c for c, t in ranking.schema.items() if not t.is_nested()]).write_csv(
                out
            )
    shown = ranking.filter(pl.col("rank") <= args.top).select(
        [
            c
            for c in ("run_id", "rank", "predicted_ms", "p_valid", "launch", "median_ms")
            if c in ranking.columns
        ]
    )
    with pl.Config(tbl_rows=-1, fmt_str_lengths=60):
        print(shown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
