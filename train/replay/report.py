"""The replay's outputs: ``replay.md`` (the tables; on a terminal they are printed sized for
it, :func:`print_replay`), ``replay.json``, ``runs.parquet``
(one row per seed, run and strategy) and ``regret.png``."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from rich.console import Console
from rich.text import Text

from schemas.console import print_trimmed
from train.replay.strategies import TOLERANCES, RunOutcome
from train.replay.summary import (
    FRACTIONS,
    GOAL,
    StrategyRow,
    family_table,
    fraction_curves,
    mean_curves,
    regret_at,
    seed_table,
    strategy_rows,
)
from train.report_doc import Grid, print_grid, print_prose

HOW_TO_READ = (
    "Each held-out run is tuned by every strategy, one benchmark at a time; regret is "
    "best found / run's best - 1 (before anything runs: the slowest valid config's). "
    "*configs to <= x%*: benchmarks until the tuner holds a config within x% of the best "
    "(expected value for static orders, mean of draws for adaptive ones); *vs random*: that "
    "count at 2% over random's (goal <= 0.25); *regret @ p%*: mean regret after benchmarking "
    "p% of a run's configs (at least 1). Figures are means over a seed's runs, then mean ± 95% "
    "t-interval over seeds."
)


def _tolerance_label(tolerance: float) -> str:
    return "= best" if tolerance == 0 else f"<= {tolerance:.0%}"


def _markdown(grid: Grid) -> str:
    """``grid`` as a Markdown table (no title: replay.md's captions come before them)."""
    lines = ["| " + " | ".join(grid.columns) + " |", "|" + "---|" * len(grid.columns)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in grid.rows])


def strategy_grid(rows: Sequence[StrategyRow]) -> Grid:
    """The per-strategy table (fixed-order tuners; ``auto`` has its own)."""
    head = (
        ["strategy", "runs"]
        + [f"configs to {_tolerance_label(t)}" for t in TOLERANCES]
        + ["vs random (2%)"]
        + [f"regret @ {f:.0%}" for f in FRACTIONS]
    )
    cells = []
    for row in rows:
        if row.spent is not None:
            continue
        line = [row.strategy, str(row.runs)]
        line += [row.needed[t].format(2) for t in TOLERANCES]
        line.append(row.vs_random.format(2) if row.vs_random else "-")
        line += [row.regret[f].format(1, percent=True) for f in FRACTIONS]
        cells.append(tuple(line))
    return Grid("per strategy: mean ± 95% interval over seeds", tuple(head), tuple(cells))


def auto_grid(rows: Sequence[StrategyRow]) -> Grid | None:
    """``--budget auto``: what it spends and the regret it stops at (None without ``auto``)."""
    auto = [row for row in rows if row.spent is not None]
    if not auto:
        return None
    cells = []
    for row in auto:
        assert row.spent and row.spent_fraction and row.final_regret
        cells.append((row.strategy, str(row.runs), row.spent.format(2),
                      row.spent_fraction.format(1, percent=True), row.final_regret.format(2, percent=True)))  # fmt: skip
    head = ("strategy", "runs", "configs benchmarked", "share of the run's configs", "regret at stop")
    return Grid("--budget auto", head, tuple(cells))


def family_grid(table: Sequence[Mapping[str, Any]], strategies: Sequence[str]) -> Grid:
    """Per held-out family: mean configs to reach 2% regret, per strategy."""
    shown = [s for s in strategies if any(row.get(s) is not None for row in table)]
    cells = tuple(
        (str(row["family"]), str(row["runs"]), *("-" if row.get(s) is None else f"{row[s]:.2f}" for s in shown))
        for row in table
    )
    return Grid("per held-out family", ("family", "runs", *shown), cells)


DASH = "-: in some run the strategy stopped before coming within 2% (auto does when it expects no gain)"
"""What a ``-`` in the per-seed and per-family tables means: no finite count to average."""


def _dash_meaning(grid: Grid) -> str:
    """``; -: ...`` for a caption whose table holds a ``-`` (a bare dash read as a bug), else ''."""
    return f"; {DASH}" if any(cell == "-" for row in grid.rows for cell in row) else ""


def seed_grid(table: Sequence[Mapping[str, Any]], strategies: Sequence[str], max_families: int = 6) -> Grid | None:
    """Per seed: held-out runs and families, each strategy's ratio to random at 2% regret
    (None without a strategy besides random)."""
    shown = [s for s in strategies if s != "random" and any(row.get(s) is not None for row in table)]
    if not shown:
        return None  # no ratio without random's figures
    cells = []
    for row in table:
        families = list(row["families"])
        more = len(families) - max_families
        named = ", ".join(families[:max_families]) + (f" and {more} more" if more > 0 else "")
        cells.append((str(row["seed"]), str(row["runs"]), named,
                      *("-" if row.get(s) is None else f"{row[s]:.2f}" for s in shown)))  # fmt: skip
    return Grid("per seed", ("seed", "runs", "held-out families", *shown), tuple(cells), left=3)


def runs_frame(outcomes: Sequence[RunOutcome]) -> pl.DataFrame:
    """One row per (seed, run, strategy): configs, benchmarks to each tolerance, regret at each
    budget fraction, ``auto``'s spend."""
    return pl.DataFrame(
        [
            {
                "seed": o.seed,
                "run_id": o.run_id,
                "family": o.family,
                "strategy": o.strategy,
                "n_configs": o.n_configs,
                **{f"configs_to_{t:g}": o.needed[t] for t in TOLERANCES},
                **{f"regret_at_{f:g}": regret_at(o, f) for f in FRACTIONS},
                "spent": o.spent,
            }
            for o in outcomes
        ]
    )


def plot(outcomes: Sequence[RunOutcome], strategies: Sequence[str], path: Path) -> None:
    """``regret.png``: mean regret vs configs benchmarked (left) and vs the share of a run's
    configs benchmarked (right), one line per strategy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fractions = np.linspace(0.01, 1.0, 100)
    by_count = mean_curves(outcomes, strategies)
    by_fraction = fraction_curves(outcomes, strategies, fractions)
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for name, curve in by_count.items():
        style = "--" if name in ("random", "default") else "-"
        left.plot(np.arange(1, len(curve) + 1), 100 * curve, style, label=name)
        right.plot(100 * fractions, 100 * by_fraction[name], style, label=name)
    for axis in (left, right):  # linear under 0.1 %, where "found the best" is 0
        axis.set_yscale("symlog", linthresh=0.1)
    left.set(xlabel="configs benchmarked", ylabel="mean regret (%)")
    right.set(xlabel="share of the run's configs benchmarked (%)")
    left.axhline(2.0, color="grey", linewidth=0.6)
    right.axhline(2.0, color="grey", linewidth=0.6)
    left.legend(fontsize=8)
    figure.suptitle("regret vs budget on held-out runs (2% line in grey)")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def _finite_json(value: Any) -> Any:
    """``value`` with every non-finite float (an unreached tolerance, no interval) as None:
    JSON has no NaN or Infinity."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {key: _finite_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_json(item) for item in value]
    return value


def write_outputs(
    out: Path,
    outcomes: Sequence[RunOutcome],
    strategies: Sequence[str],
    meta: Mapping[str, Any],
) -> ReplayDoc:
    """Write every output into ``out`` (created) and return the report (replay.md is its
    :func:`to_markdown`)."""
    out.mkdir(parents=True, exist_ok=True)
    rows = strategy_rows(outcomes, strategies)
    families = family_table(outcomes, strategies)
    seeds = seed_table(outcomes, strategies)
    doc = build_doc(rows, families, strategies, meta, seeds)
    (out / "replay.md").write_text(to_markdown(doc))
    summary = {
        "meta": dict(meta),
        "strategies": {
            row.strategy: {
                "runs": row.runs,
                "configs_to": {f"{t:g}": row.needed[t].to_dict() for t in TOLERANCES},
                "vs_random": row.vs_random.to_dict() if row.vs_random else None,
                "regret_at": {f"{f:g}": row.regret[f].to_dict() for f in FRACTIONS},
                "spent": row.spent.to_dict() if row.spent else None,
            }
            for row in rows
        },
        "families": families,
        "seeds": seeds,
        "goal_vs_random": GOAL,
    }
    (out / "replay.json").write_text(json.dumps(_finite_json(summary), indent=1, allow_nan=False))
    runs_frame(outcomes).write_parquet(out / "runs.parquet")
    plot(outcomes, strategies, out / "regret.png")
    return doc


@dataclass(frozen=True)
class ReplayDoc:
    """What the replay says, for ``replay.md`` (:func:`to_markdown`) and the terminal
    (:func:`print_replay`): the header line (Markdown: names in backticks), the tables after
    their captions (the first, the strategy table, has none), the notes."""

    header: str
    tables: tuple[tuple[str, Grid], ...]
    notes: tuple[str, ...]


def build_doc(
    rows: Sequence[StrategyRow],
    families: Sequence[Mapping[str, Any]],
    strategies: Sequence[str],
    meta: Mapping[str, Any],
    seed_rows: Sequence[Mapping[str, Any]] = (),
) -> ReplayDoc:
    """The report: what was replayed, the strategy table, ``auto``, per seed, per family."""
    seeds = meta.get("seeds", [])
    # A seed whose split held out no run to replay is in no figure: the intervals are over the
    # seeds that contributed runs, which the header says rather than the notes alone.
    contributed = {row["seed"] for row in seed_rows}
    idle = [seed for seed in seeds if seed not in contributed] if seed_rows else []
    which = (
        f"{len(seeds) - len(idle)} of the {len(seeds)} contributed runs, seed(s) "
        f"{', '.join(map(str, idle))} none to replay; "
        if idle
        else ""
    )
    header = (
        f"data `{meta.get('data')}`, model `{meta.get('model')}`"
        + (" (refit on train + val runs)" if meta.get("refit") else "")
        + f", split `{meta.get('split')}`, "
        f"seeds {', '.join(map(str, seeds))} ({which}{meta.get('runs')} held-out "
        f"{'val ' if meta.get('partition') == 'val' else ''}runs over all seeds, "
        f"{meta.get('configs')} configs)"
        # --repeats concerns lfbo alone: the other strategies are exact or deterministic
        + (f", lfbo draws per run: {meta.get('repeats')}" if "lfbo" in strategies else "")
    )
    tables: list[tuple[str, Grid]] = [("", strategy_grid(rows))]
    auto = auto_grid(rows)
    if auto is not None:
        # :g, not :.0%: --ei-threshold 1e-9 and 0.999999 read "< 0%" and "< 100%"
        threshold = f"{meta.get('ei_threshold', 0.01) * 100:g}%"
        tables.append((f"`--budget auto` (stops when expected improvement < {threshold}):", auto))
    per_seed = seed_grid(seed_rows, strategies) if seed_rows else None
    if per_seed is not None:
        caption = "Configs to reach 2% regret over random's, per seed (the *vs random* column averages these"
        tables.append((f"{caption}{_dash_meaning(per_seed)}):", per_seed))
    per_family = family_grid(families, strategies)
    caption = "Configs to reach 2% regret, per held-out family (pooled over seeds"
    tables.append((f"{caption}{_dash_meaning(per_family)}):", per_family))
    return ReplayDoc(header, tuple(tables), tuple(meta.get("notes", [])))


def to_markdown(doc: ReplayDoc) -> str:
    """``replay.md``."""
    parts = ["# Tuning replay", "", doc.header, "", HOW_TO_READ]
    for caption, grid in doc.tables:
        parts += ["", caption, "", _markdown(grid)] if caption else ["", _markdown(grid)]
    for note in doc.notes:
        parts += ["", f"Note: {note}"]
    return "\n".join(parts) + "\n"


def _plain(markdown: str) -> str:
    """A line of replay.md for the terminal: without the Markdown marks (backticks, ``*``),
    and without the colon that introduced a table."""
    return markdown.replace("`", "").replace("*", "").removesuffix(":")


def print_replay(console: Console, doc: ReplayDoc) -> None:
    """The report on a terminal: its tables sized for the console as ``python -m train``
    prints its report (:func:`train.report_doc.print_grid`: a table too wide is cut into
    groups of columns, each repeating the strategy), the prose wrapped."""
    print_trimmed(console, Text("Tuning replay", style="bold"))
    print_prose(console, _plain(doc.header))
    console.print()
    print_prose(console, _plain(HOW_TO_READ))
    for caption, grid in doc.tables:
        console.print()
        print_grid(console, replace(grid, title=_plain(caption)) if caption else grid)
    for note in doc.notes:
        console.print()
        print_prose(console, note, "note")
