"""How ``python -m train.predict`` shows a ranking in the terminal: each run under a readable
heading (family, shape, dtype; the run_id only when the candidates name nothing else), its
first configs as ``BLOCK_M=16 BLOCK_N=128 w4 s2`` with the predicted latency, the chance
that they run and, for a dataset, the measured latency; then what the columns mean and where
the full ranking went. Fits 80 columns (the config column folds), no line ends in blanks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl
from rich import box
from rich.console import Console
from rich.constrain import Constrain
from rich.table import Table
from rich.text import Text

from schemas.console import compact_config, key_values, plain_text, print_trimmed

MEANINGS = (
    ("rank", "the order to try the configs in (1 first), by the model's ranking score"),
    (
        "predicted ms",
        "the model's separate latency head, a rough absolute estimate: it can disagree with "
        "the order, trust rank (the ranking score is what the model was trained to order)",
    ),
    ("p runs", "predicted probability that the config runs; below 0.5 it ranks after the others"),
    (
        "measured ms",
        "the dataset's measured median latency (a config that failed: failed; one never "
        "benchmarked, a skipped row of a budget or of corpus.guide's pruning: not run)",
    ),
)


def run_label(row: Mapping[str, Any]) -> str:
    """``softmax M5_N1536 float32`` (the run's family, shape and dtype, those it has), else
    its run_id."""
    parts = [str(row[c]) for c in ("family", "shape_name", "dtype") if row.get(c) is not None]
    return " ".join(parts) if row.get("family") is not None else str(row.get("run_id"))


def config_label(row: Mapping[str, Any]) -> str:
    """``BLOCK_M=4 BLOCK_N=1024 w16 s1`` when the row has knobs (prefixed by its config_id
    when it has no meta-parameters, e.g. a compile directory), else its config_id."""
    if row.get("num_warps") is None or row.get("num_stages") is None:
        return str(row.get("config_id"))
    compact = compact_config(row)
    return compact if row.get("config_params") else f"{row.get('config_id')} {compact}"


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.4g}"


def _has(ranking: pl.DataFrame, column: str) -> bool:
    return column in ranking.columns and ranking[column].null_count() < ranking.height


def shown_columns(ranking: pl.DataFrame) -> list[str]:
    """The table's columns: rank, config, predicted ms, and p runs / measured ms when the
    ranking has values for them."""
    columns = ["rank", "config", "predicted ms"]
    return columns + [name for name, c in (("p runs", "p_valid"), ("measured ms", "median_ms"))
                      if _has(ranking, c)]  # fmt: skip


def by_run_label(ranking: pl.DataFrame) -> pl.DataFrame:
    """``ranking`` with its runs in the order of their headings (family, shape, dtype, those it
    has, then run_id), each run's configs by rank: as the harvest's summary lists runs, not in
    the order of their run_id hashes."""
    keys = [c for c in ("family", "shape_name", "dtype") if c in ranking.columns]
    return ranking.sort([*keys, "run_id", "rank"], nulls_last=True, maintain_order=True)


def ranking_table(ranking: pl.DataFrame, top: int) -> Table:
    """The first ``top`` configs of every run of ``ranking`` (runs by :func:`by_run_label`), a
    bold heading row per run."""
    columns = shown_columns(ranking)
    p_valid, measured = "p runs" in columns, "measured ms" in columns
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True,
                  header_style="bold")  # fmt: skip
    table.add_column("rank", justify="right", no_wrap=True)
    table.add_column("config", overflow="fold")
    table.add_column("predicted ms", justify="right", no_wrap=True)
    if p_valid:
        table.add_column("p runs", justify="right", no_wrap=True)
    if measured:
        table.add_column("measured ms", justify="right", no_wrap=True)
    current = None
    for row in by_run_label(ranking.filter(pl.col("rank") <= top)).iter_rows(named=True):
        if row["run_id"] != current:
            current = row["run_id"]
            table.add_row("", Text(run_label(row), style="bold"))
        # a config_id from the data (a compile directory's name) is text
        cells = [str(row["rank"]), plain_text(config_label(row)), _ms(row["predicted_ms"])]
        if p_valid:
            cells.append("–" if row["p_valid"] is None else f"{row['p_valid']:.2f}")
        if measured:
            ok = row.get("valid", row["median_ms"] is not None)
            # a skipped row was never benchmarked: no failure, whatever its valid flag says
            not_run = row.get("status") == "skipped"
            cells.append("not run" if not_run else _ms(row["median_ms"]) if ok else "failed")
        table.add_row(*cells)
    return table


def print_ranking(
    console: Console, ranking: pl.DataFrame, *, top: int, source: str, out: str | None
) -> None:
    """The ranking for the terminal: a line on what was ranked, the table, the columns'
    meanings, where the full ranking was written (or how to write it)."""
    runs = ranking["run_id"].n_unique()
    shown = min(top, int(ranking.group_by("run_id").len()["len"].max() or 0))
    print_trimmed(
        console,
        Text.assemble(
            (f"{ranking.height:,} configs of {runs:,} run{'s' if runs != 1 else ''}", "bold"),
            f" ranked by {source}; the first {shown} of each run:",
        ),
    )
    print_trimmed(console, ranking_table(ranking, top))
    columns = shown_columns(ranking)
    print_trimmed(console, Constrain(key_values(m for m in MEANINGS if m[0] in columns), 100))
    if out:
        where = f"wrote {out}: every config, rank, score, predicted_ms, p_valid and the inputs"
    else:
        where = "nothing written: --out FILE.parquet (or .csv) keeps the whole ranking"
    print_trimmed(console, Text(where))
