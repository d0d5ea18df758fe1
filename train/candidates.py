"""Candidate configs to rank, from what a GPU-less machine produces.

Two sources of IR graphs: a dataset-layout directory (``ir_nodes`` / ``ir_edges`` /
``ir_graphs`` tables) or the output of ``python -m extract compile`` (one directory per
compiled config holding ``<kernel>.<level>.graph.json``, node-link JSON, and
``<kernel>.stats.json``: num_warps, num_stages, num_ctas, target, static SASS stats).
``train`` never imports ``extract``: the node-link JSON is read here into rows of the
``ir_nodes`` / ``ir_edges`` / ``ir_graphs`` schemas (:mod:`schemas.tables`).

A candidates frame has one row per config with any columns of
:func:`train.tables.load_samples`; :func:`complete_candidates` adds the absent ones as nulls
(unknown to the featurizers), and :func:`missing_inputs` lists the inputs the model was
trained with that the candidates lack, for a warning: a model ranks much worse without them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from schemas.tables import IR_EDGES, IR_GRAPHS, IR_NODES, MEASUREMENTS, RUNS, SCHEMA_VERSION
from train.tables import GRAPH_COUNT_COLUMNS, IR_COUNT_COLUMNS, MEASUREMENT_COLUMNS, RUN_COLUMNS

STATIC_COLUMNS = ("n_regs", "spill_bytes", "shared_mem_bytes", "sass_instructions", "sass_mix")
CANDIDATE_GROUP = "candidates"
"""``run_id`` given to candidates that carry none: they are ranked as one run."""


class CandidateError(ValueError):
    """Candidates or IR inputs that cannot be ranked (the message names what is wrong)."""


@dataclass(frozen=True)
class IrInputs:
    """The IR tables of some candidates (polars frames with the ``ir_*`` table columns)."""

    nodes: pl.DataFrame
    edges: pl.DataFrame
    graphs: pl.DataFrame | None


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


def typed_candidates(candidates: pl.DataFrame) -> pl.DataFrame:
    """``candidates`` with each samples-table column it holds cast to that column's type, list
    columns (``grid``, ``config_params``, ``problem_dims``, ...) parsed from JSON text where
    they are strings (a CSV's ``[64, 1, 1]``, ``[{"name": "BLOCK", "value": 256}]``).

    Raises CandidateError naming the column and an example value that does not convert, or
    that would change in converting: a fraction where an integer belongs (``4.5`` warps, a grid
    of ``[1.7, 2]``), a number out of the column's range, a number where a list belongs, a JSON
    object whose keys are not the struct's fields (polars would round, truncate or store null)."""
    template = _template().schema
    fixes = {
        name: template[name]
        for name, dtype in candidates.schema.items()
        if name in template and dtype != template[name] and dtype != pl.Null
    }
    frame = candidates
    for name, dtype in fixes.items():
        source = candidates.schema[name]
        column = pl.col(name)
        from_json = dtype.is_nested() and source == pl.String
        converted = column.str.json_decode(dtype) if from_json else column.cast(dtype, strict=True)
        try:
            frame = frame.with_columns(converted.alias(name))
        except (pl.exceptions.PolarsError, ValueError) as exc:
            example = candidates[name].drop_nulls().head(1).to_list()
            shown = repr(example[0]) if example else "?"
            raise CandidateError(
                f"candidates column {name}: {source} values such as {shown} do not "
                f"convert to {dtype} ({str(exc).splitlines()[0]})"
            ) from None
        changed = _changed_json(candidates[name], frame[name]) if from_json else _changed(candidates[name], frame[name])
        if changed is not None:
            raise CandidateError(
                f"candidates column {name}: {source} values such as {changed!r} do not fit "
                f"{dtype} (converting would change them)"
            )
    return frame


def _changed(original: pl.Series, converted: pl.Series) -> Any:
    """A value of ``original`` (numbers or lists of them) that ``converted`` does not hold
    exactly (a cast that rounded or truncated it), or None. Text converts by parsing, which
    either holds the value or fails."""
    if original.dtype == pl.String:
        return None
    back = converted.cast(original.dtype, strict=False)
    differs = (back != original).fill_null(False) | (back.is_null() & original.is_not_null())
    if not differs.any():
        return None
    return original.filter(differs).to_list()[0]


def _changed_json(original: pl.Series, decoded: pl.Series) -> str | None:
    """A JSON text of ``original`` whose value is not what ``decoded`` holds for it (polars
    decodes what does not fit the type, a fraction, an out-of-range number, a key the struct
    lacks, as a truncated number or null), or None."""
    for text, value in zip(original.to_list(), decoded.to_list()):
        if text is None:
            continue
        try:
            parsed = json.loads(text)
        except ValueError:
            return text
        if not _same_json(parsed, value):
            return text
    return None


def _same_json(parsed: Any, value: Any) -> bool:
    """Whether the decoded ``value`` is the JSON value ``parsed``: same shape, same keys, equal
    numbers (``512.0`` is ``512``; ``true`` is no number)."""
    if isinstance(parsed, list):
        return isinstance(value, list) and len(parsed) == len(value) and all(map(_same_json, parsed, value))
    if isinstance(parsed, dict):
        return isinstance(value, dict) and parsed.keys() == value.keys() and all(
            _same_json(parsed[k], value[k]) for k in parsed
        )
    if isinstance(parsed, bool) or isinstance(value, bool):
        return type(parsed) is type(value) and parsed == value
    return parsed == value


def read_candidates_csv(path: str | Path) -> pl.DataFrame:
    """A candidates CSV, typed as :func:`typed_candidates` types a frame: text columns stay
    text (a ``run_id`` of digits keeps its leading zeros), list columns are JSON text."""
    header = pl.read_csv(path, n_rows=0).columns
    named = pl.read_csv(path, n_rows=1, has_header=False, infer_schema=False).row(0) if header else ()
    twice = sorted({name for name in named if named.count(name) > 1})
    if twice:  # polars would rename the second one, and the first would be used without a word
        raise CandidateError(f"{path}: column(s) named twice: {', '.join(map(str, twice))}")
    template = _template().schema
    as_text = {
        name: pl.String
        for name in header
        if name in template and (template[name] == pl.String or template[name].is_nested())
    }
    return typed_candidates(pl.read_csv(path, schema_overrides=as_text))


def complete_candidates(candidates: pl.DataFrame) -> pl.DataFrame:
    """``candidates`` with every missing samples-table column added as nulls (typed), a
    ``run_id`` (:data:`CANDIDATE_GROUP`) and ``config_id`` (row number) when absent."""
    frame = candidates
    if "run_id" not in frame.columns:
        frame = frame.with_columns(pl.lit(CANDIDATE_GROUP).alias("run_id"))
    if "config_id" not in frame.columns:
        frame = frame.with_row_index("config_id").with_columns(pl.col("config_id").cast(pl.String))
    template = _template()
    missing = [
        pl.lit(None, dtype=dtype).alias(name)
        for name, dtype in template.schema.items()
        if name not in frame.columns
    ]
    return frame.with_columns(missing)


def missing_inputs(candidates: pl.DataFrame, known: Sequence[str]) -> list[str]:
    """Columns of ``known`` (the inputs a model was trained with: ``seen["input_columns"]`` of
    its checkpoint) that ``candidates`` lacks or holds only nulls in, in ``known`` order."""
    return [
        c
        for c in known
        if c not in candidates.columns or candidates[c].null_count() == candidates.height
    ]


def runs_lacking(candidates: pl.DataFrame, every_run: Sequence[str]) -> dict[str, int]:
    """Columns of ``every_run`` (inputs the model had in every training run:
    ``seen["inputs_of_every_run"]``) mapped to how many runs of ``candidates`` (one without a
    ``run_id`` column) lack them in every row, for those at least one run lacks. Candidates are
    ranked per run, so a run without an input is ranked without it however many others have it."""
    runs = candidates["run_id"] if "run_id" in candidates.columns else pl.Series([None] * candidates.height)
    total = runs.n_unique()
    lacking = {}
    for column in every_run:
        if column not in candidates.columns:
            lacking[column] = total
            continue
        having = runs.filter(candidates[column].is_not_null()).n_unique()
        if having < total:
            lacking[column] = total - having
    return lacking


def with_graph_counts(candidates: pl.DataFrame, graphs: pl.DataFrame | None) -> pl.DataFrame:
    """``candidates`` with the ``ir_*`` summary counts of their ``ir_id`` from ``graphs`` (an
    ``ir_graphs`` frame) where they lack them."""
    if graphs is None or "ir_id" not in candidates.columns:
        return candidates
    counts = [
        c
        for c in GRAPH_COUNT_COLUMNS
        if f"ir_{c}" not in candidates.columns and c in graphs.columns
    ]
    if not counts:
        return candidates
    summary = graphs.select("ir_id", *counts).unique("ir_id").rename({c: f"ir_{c}" for c in counts})
    return candidates.join(summary, on="ir_id", how="left", maintain_order="left")


def is_compile_output(directory: str | Path, level: str) -> bool:
    """Whether ``directory`` holds ``python -m extract compile`` output of ``level`` (a
    ``*.<level>.graph.json`` anywhere below it) rather than dataset tables."""
    root = Path(directory)
    if (root / "ir_nodes").is_dir():
        return False
    return any(root.rglob(f"*.{level}.graph.json"))


def _target(value: Any) -> str | None:
    """``cuda:90`` (Triton's target string) -> ``sm_90`` (the dataset's ``ir_target``)."""
    if not isinstance(value, str):
        return None
    match = re.fullmatch(r"cuda:(\d+)a?", value)
    return f"sm_{match.group(1)}" if match else value


def _graph_rows(document: dict[str, Any], source: Path) -> tuple[dict, list[dict], list[dict]]:
    try:
        facts = dict(document["graph"])
        ir_id, level = facts["ir_id"], facts["level"]
        nodes = [
            {
                "schema_version": SCHEMA_VERSION,
                "ir_id": ir_id,
                "level": level,
                **{k: node.get(k) for k in IR_NODES.names[3:] if k != "node_id"},
                "node_id": node["id"],
            }
            for node in document["nodes"]
        ]
        edges = [
            {
                "schema_version": SCHEMA_VERSION,
                "ir_id": ir_id,
                "level": level,
                "src": edge["source"],
                "dst": edge["target"],
                "kind": edge["kind"],
                "position": edge.get("position"),
                "region_index": edge.get("region_index"),
                "result_index": edge.get("result_index"),
            }
            for edge in document["edges"]
        ]
    except (KeyError, TypeError) as exc:
        raise CandidateError(f"{source}: not a graph written by extract compile ({exc})") from None
    facts["schema_version"] = SCHEMA_VERSION
    return facts, nodes, edges


def _table(rows: list[dict], schema: pa.Schema, source: Path) -> pl.DataFrame:
    try:
        table = pa.Table.from_pylist(
            [{name: row.get(name) for name in schema.names} for row in rows], schema=schema
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise CandidateError(f"{source}: values do not fit the {schema} schema: {exc}") from None
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame


def read_compile_output(directory: str | Path, level: str) -> tuple[pl.DataFrame, IrInputs]:
    """Candidates and IR tables from ``python -m extract compile`` output under ``directory``.

    One candidate per ``<kernel>.<level>.graph.json`` (sorted by path): ``config_id`` and
    ``ir_dir`` = its directory relative to ``directory`` (``.`` for the top), ``ir_id``, and
    from the sibling ``<kernel>.stats.json``: ``num_warps``, ``num_stages``, ``num_ctas``,
    ``ir_target`` (``sm_NN``) and the static SASS stats. Config knobs, grid and problem sizes
    are not in that output: join them from a candidates file (on ``ir_dir``).
    """
    root = Path(directory)
    files = sorted(root.rglob(f"*.{level}.graph.json"))
    if not files:
        raise CandidateError(f"--ir {directory}: no *.{level}.graph.json from extract compile")
    rows, graphs, nodes, edges = [], [], [], []
    for path in files:
        try:
            document = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CandidateError(f"{path}: unreadable graph JSON ({exc})") from None
        facts, graph_nodes, graph_edges = _graph_rows(document, path)
        graphs.append(facts)
        nodes += graph_nodes
        edges += graph_edges
        kernel = path.name.removesuffix(f".{level}.graph.json")
        stats = _stats(path.parent / f"{kernel}.stats.json")
        relative = path.parent.relative_to(root).as_posix()
        static = stats.get("static_stats") or {}
        rows.append(
            {
                "config_id": relative,
                "ir_dir": relative,
                "ir_id": facts["ir_id"],
                "num_warps": stats.get("num_warps", facts.get("num_warps")),
                "num_stages": stats.get("num_stages"),
                "num_ctas": stats.get("num_ctas", facts.get("num_ctas")),
                "ir_target": _target(stats.get("target", facts.get("target"))),
                **{c: static.get(c) for c in STATIC_COLUMNS},
            }
        )
    candidates = pl.DataFrame(
        rows,
        schema_overrides={
            "num_warps": pl.Int32,
            "num_stages": pl.Int32,
            "num_ctas": pl.Int32,
            "n_regs": pl.Int32,
            "spill_bytes": pl.Int64,
            "shared_mem_bytes": pl.Int64,
            "sass_instructions": pl.Int64,
            "sass_mix": pl.List(pl.Struct({"cls": pl.String, "count": pl.Int64})),
        },
    )
    ir = IrInputs(
        _table(nodes, IR_NODES, root),
        _table(edges, IR_EDGES, root),
        _table(graphs, IR_GRAPHS, root),
    )
    return candidates, ir


def _stats(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        loaded = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CandidateError(f"{path}: unreadable stats JSON ({exc})") from None
    return loaded if isinstance(loaded, dict) else {}


def join_compile_output(candidates: pl.DataFrame, compiled: pl.DataFrame) -> pl.DataFrame:
    """A user's candidates file joined with :func:`read_compile_output`'s rows on ``ir_dir``
    (the compile output directory of each candidate, relative to ``--ir``): the user's
    columns win, compile facts fill what they lack. Every candidate must name a directory
    that holds a graph."""
    if "ir_dir" not in candidates.columns:
        raise CandidateError(
            "the candidates need an ir_dir column (each config's extract compile output "
            "directory, relative to --ir) to be joined with --ir compile output"
        )
    unknown = sorted(set(candidates["ir_dir"].cast(pl.String).to_list()) - set(compiled["ir_dir"]))
    if unknown:
        raise CandidateError(
            f"candidates name ir_dir(s) with no compiled graph under --ir: {', '.join(unknown[:5])}"
        )
    extra = [c for c in compiled.columns if c not in candidates.columns or c == "ir_dir"]
    return candidates.with_columns(pl.col("ir_dir").cast(pl.String)).join(
        compiled.select(extra), on="ir_dir", how="left", maintain_order="left"
    )
