"""``python -m train.compare``: paired comparison of models across experiment outputs.

Ablations change an option of ``python -m train`` (``--loss``, ``--prior``,
``--no-collapse``, ...), so their models live in different ``metrics.json`` files. Two runs
with the same dataset, split kind and seeds draw the same splits, so their models form pairs
seed by seed; this command checks that (the held-out runs of every seed must be the same) and
prints, per entry, the mean and 95 % interval of each metric and the paired difference to the
first entry (:func:`train.stats.paired`: interval, paired t-test p-value, seeds better/worse).

Entries are ``LABEL=DIR:MODEL`` (``DIR`` holds ``metrics.json``)::

    python -m train.compare --split cluster \\
        pairwise=runs/base:gnn listmle=runs/listmle:gnn prior=runs/prior:gnn
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from schemas.argtypes import non_empty_csv
from schemas.console import print_error
from train.report_doc import (
    Grid,
    few_seeds_p_note,
    p_cell,
    pm_cell,
    print_grid,
    print_prose,
    shown_ks,
    trivial_ks_note,
)
from train.stats import Interval, Paired, paired, t_interval

DEFAULT_METRICS = ("kendall_tau", "top1_slowdown", "top5_slowdown")
"""The default without run sizes (older metrics.json); with them, the top-k slowdowns are the
report's (:func:`train.report_doc.shown_ks`): a top-5 of runs with 4 configs is 0 by
construction, and the report leaves it out."""


TOPK_EXAMPLE = "kendall_tau,top5_slowdown"


class CompareError(ValueError):
    """Entries that cannot be compared (the message says why)."""


@dataclass(frozen=True)
class Entry:
    """One model of one experiment: per-seed metric values and held-out run sets."""

    label: str
    source: str
    metrics: dict[int, dict[str, float]]
    held_out: dict[int, frozenset[str]]
    rows_key: str | None = None
    """``meta.rows_key`` (:func:`train.experiment.rows_key`; None in older outputs)."""
    records: tuple[Mapping[str, Any], ...] = ()
    """Its results as ``metrics.json`` has them (metrics, run sizes), one per seed."""


def parse_entry(text: str) -> tuple[str, Path, str]:
    """``LABEL=DIR:MODEL`` -> (label, dir, model)."""
    label, sep, rest = text.partition("=")
    directory, colon, model = rest.rpartition(":")
    if not sep or not colon or not label or not model or not directory:
        raise CompareError(f"{text!r}: expected LABEL=DIR:MODEL")
    return label, Path(directory), model


def load_entry(text: str, split: str, partition: str) -> Entry:
    """The results of one model of one ``metrics.json`` on ``split`` / ``partition``."""
    label, directory, model = parse_entry(text)
    path = directory / "metrics.json"
    try:
        payload: dict[str, Any] = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise CompareError(f"{path}: unreadable ({exc})") from None
    rows = [
        r
        for r in payload.get("results", [])
        if r["model"] == model and r["split_kind"] == split and r["partition"] == partition
    ]
    if not rows:
        raise CompareError(f"{path}: no {model} results on the {split} split's {partition} part")
    return Entry(
        label,
        f"{directory}:{model}",
        {
            int(r["seed"]): {k: math.nan if v is None else v for k, v in r["metrics"].items()}
            for r in rows
        },
        {int(r["seed"]): frozenset(r["run_taus"]) for r in rows},
        payload.get("meta", {}).get("rows_key"),
        tuple(rows),
    )


def default_metrics(entries: Sequence[Entry]) -> tuple[list[str], str | None]:
    """(kendall_tau and the top-k slowdowns ``python -m train``'s report shows, the note that
    says why the others are left out or None): the same k as the report, not a top-5 that is
    0 by construction on runs of 4 configs."""
    records = [r for e in entries for r in e.records]
    ks, median = shown_ks(records)
    if median is None:  # no run sizes: nothing says which k are trivial
        return list(DEFAULT_METRICS), None
    note = trivial_ks_note(records, "the table shows")
    metrics = ["kendall_tau", *(f"top{k}_slowdown" for k in ks)]
    return metrics, note and f"{note} (--metrics {TOPK_EXAMPLE} shows another k)."


def check_pairs(entries: Sequence[Entry]) -> list[int]:
    """Seeds every entry has, after checking each such seed held out the same runs."""
    seeds = sorted(set.intersection(*(set(e.metrics) for e in entries)))
    if not seeds:
        raise CompareError("the entries share no seed")
    first = entries[0]
    for entry in entries[1:]:
        if None not in (entry.rows_key, first.rows_key) and entry.rows_key != first.rows_key:
            raise CompareError(
                f"{entry.source} learnt from other measurements than {first.source} (another "
                "dataset, or another harvest of its runs): not a paired comparison"
            )
        for seed in seeds:
            if entry.held_out[seed] != first.held_out[seed]:
                raise CompareError(
                    f"seed {seed}: {entry.source} held out other runs than {first.source} "
                    "(another dataset or split): not a paired comparison"
                )
    return seeds


def _fmt(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


@dataclass(frozen=True)
class Figure:
    """One entry's results on one metric over the shared seeds: the interval of its mean and,
    but for the first entry, the paired difference to the first (:func:`train.stats.paired`)."""

    value: Interval
    against_first: Paired | None


def figures(entries: Sequence[Entry], metrics: Sequence[str]) -> tuple[list[int], list[list[Figure]]]:
    """(the shared seeds, per entry a :class:`Figure` per metric), after :func:`check_pairs`."""
    seeds = check_pairs(entries)
    first = entries[0]
    table = []
    for entry in entries:
        row = []
        for name in metrics:
            values = {s: entry.metrics[s].get(name, math.nan) for s in seeds}
            against = None
            if entry is not first:
                against = paired(values, {s: first.metrics[s].get(name, math.nan) for s in seeds}, name)
            row.append(Figure(t_interval(list(values.values())), against))
        table.append(row)
    return seeds, table


def _bracketed(interval: Interval, signed: bool = False) -> str:
    cell = _fmt(interval.mean, signed)
    if interval.low is not None:
        cell += f" [{_fmt(interval.low, signed)}, {_fmt(interval.high, signed)}]"
    return cell


def _paired_cells(result: Paired | None, interval_cell: Callable[[Interval], str]) -> list[str]:
    """Δ to the first entry, p-value, better/worse seeds (blank for the first entry)."""
    if result is None:
        return ["", "", ""]
    p_value = p_cell(result.p_value, result.diff.n)
    return [interval_cell(result.diff), p_value, f"{result.wins}/{result.losses}"]


def _seeds(seeds: Sequence[int]) -> str:
    return f"{len(seeds)} seeds ({', '.join(map(str, seeds))})"


def compare_table(entries: Sequence[Entry], metrics: Sequence[str]) -> str:
    """Markdown: per entry and metric, mean [95 % interval] over the shared seeds, then the
    paired difference to the first entry [interval], p-value and better/worse seeds."""
    seeds, table = figures(entries, metrics)
    header = ["entry"]
    for name in metrics:
        header += [name, f"Δ vs {entries[0].label}", "p", "better/worse"]
    lines = ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    for entry, row in zip(entries, table):
        cells = [entry.label]
        for figure in row:
            cells.append(_bracketed(figure.value))
            cells += _paired_cells(figure.against_first, lambda diff: _bracketed(diff, True))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + f"\n\n{_seeds(seeds)}, paired."


def compare_grid(entries: Sequence[Entry], metrics: Sequence[str], split: str, partition: str) -> Grid:
    """The comparison for the terminal, cells ``mean ±half-interval`` as ``python -m train``'s
    report prints them: a row per entry and metric, and a wide layout with a row per entry
    (:func:`train.report_doc.print_grid` picks the one that fits)."""
    seeds, table = figures(entries, metrics)
    first = entries[0].label
    long_rows, wide_rows = [], []
    for entry, row in zip(entries, table):
        wide = [entry.label]
        for i, (name, figure) in enumerate(zip(metrics, row)):
            value = pm_cell(figure.value.to_json(), name)
            paired_cells = _paired_cells(figure.against_first, lambda diff, name=name: pm_cell(diff.to_json(), name, signed=True))
            long_rows.append((entry.label if i == 0 else "", name, value, *paired_cells))
            wide += [value, *paired_cells]
        wide_rows.append(tuple(wide))
    title = (
        f"{split} split, {partition} runs: mean ± 95 % interval over {_seeds(seeds)}, "
        f"and each entry minus {first}, paired seed by seed"
    )
    wide_columns = ["entry"]
    for name in metrics:
        wide_columns += [name, f"Δ vs {first}", "p", "better/worse"]
    return Grid(
        title,
        ("entry", "metric", "mean", f"Δ vs {first}", "p", "better/worse"),
        tuple(long_rows),
        wide=Grid(title, tuple(wide_columns), tuple(wide_rows)),
        left=2,
    )


def show(
    console: Console, entries: Sequence[Entry], metrics: Sequence[str], note: str | None, *, split: str, partition: str
) -> None:
    """The comparison on ``console``: tables sized for it on a terminal; elsewhere (a pipe, a
    log) the Markdown table, which reads and greps as it is."""
    if not console.is_terminal:
        print(compare_table(entries, metrics), file=console.file)
        if note:
            print(f"\nNote: {note}", file=console.file)
        return
    print_grid(console, compare_grid(entries, metrics, split, partition))
    if note:
        console.print()
        print_prose(console, note, "note")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m train.compare",
        description="Paired comparison of models of several python -m train outputs (same "
        "dataset, split kind and seeds): means, 95% intervals, differences to the first entry.",
    )
    parser.add_argument("entries", nargs="+", help="LABEL=DIR:MODEL (DIR holds metrics.json)")
    parser.add_argument("--split", default="family", help="split kind (default family)")
    parser.add_argument(
        "--partition",
        choices=("test", "val", "train"),
        default="test",
        help="the runs the models are judged on (default test)",
    )
    parser.add_argument(
        "--metrics",
        type=non_empty_csv,
        help="comma-separated (default: kendall_tau and the top-k slowdowns python -m train's "
        "report shows, top-1 and the largest k below the median run's config count; "
        f"{','.join(DEFAULT_METRICS)} for results without run sizes)",
    )
    args = parser.parse_args(argv)
    try:
        entries = [load_entry(e, args.split, args.partition) for e in args.entries]
        metrics, note = (args.metrics, None) if args.metrics else default_metrics(entries)
        known = set().union(*(values for e in entries for values in e.metrics.values()))
        unknown = [m for m in metrics if m not in known]
        if unknown:  # a typo would print a table of dashes
            raise CompareError(
                f"--metrics: {', '.join(unknown)} not in these results; they have {', '.join(sorted(known))}"
            )
        p_note = few_seeds_p_note(len(check_pairs(entries))) if len(entries) > 1 else ""
        note = " ".join(n for n in (note, p_note) if n) or None
        show(Console(), entries, metrics, note, split=args.split, partition=args.partition)
    except CompareError as exc:
        print_error(Console(stderr=True), str(exc))
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
