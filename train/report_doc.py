"""The training report as a document: what ``report.md`` holds and what ``python -m train``
prints at the end, from one source (the payload of ``metrics.json``,
:func:`train.report.report_payload`).

:func:`build_report` turns the payload into a :class:`ReportDoc`: facts about the run (what was
held out, how long it trained, where the model went), notes a reader needs before trusting a
number (too few held-out runs, interpreter timings, why a top-k is not shown), tables of text
cells (:class:`Grid`), the meaning of every column, and the files written. :func:`to_markdown`
writes it as Markdown (relative links: they work from the report's directory);
:func:`print_report` prints it with rich for the console's width: an 80-column terminal gets
tables that fit (long layouts, cells ``mean ±half-interval``), a wide one the compact
layouts, and no line ends in blanks.
"""

from __future__ import annotations

import json
import os
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Console, RenderableType
from rich.constrain import Constrain
from rich.table import Table
from rich.text import Text

from schemas.console import fits, key_values, plain_text, print_trimmed
from train.plots import PLOT_FILES, plot_partition, seed_range
from train.stats import LEVEL

PROSE_WIDTH = 100
"""Facts, notes and the legend wrap at this width on wider consoles (long lines read badly)."""

FEW_RUNS = 10
"""Below this many held-out test runs per seed, the report says its numbers are mostly noise."""

PARTITIONS = ("test", "val", "train")
"""Report order; the terminal shows the first present (the others are in report.md)."""

TOPK = re.compile(r"top(\d+)_slowdown$")

SPLIT_MEANINGS = {
    "family": "whole families held out",
    "cluster": "groups of similar families held out (by IR operations: no near-twin of a "
    "test kernel trains, the honest unseen-kernel split)",
    "shape": "family + shape problems held out (every dtype and device)",
    "device": "whole devices held out",
    "random": "family + shape problems on one device held out, all dtypes together",
}

FILES = (
    ("report.md", "this report, with the plots"),
    ("metrics.json", "every number, per seed and per run"),
    ("checkpoint", "the model, for python -m train.predict"),
    ("checkpoints", "every seed's model per neural model and split, for python -m train.replay"),
    ("splits.parquet", "the runs each seed trained, validated and tested on"),
)


@dataclass(frozen=True)
class Grid:
    """A table of text cells (first column left-aligned, the others right-aligned).

    ``wide``: the same content in fewer, longer rows, printed instead when the console is
    wide enough (report.md and narrow consoles get this grid). ``section``: the heading it
    comes under (a split kind; the terminal puts it before the title); ``partition``: the runs
    it judges; ``terminal``: False for tables only report.md shows; ``left``: how many leading
    columns are text (left-aligned)."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    wide: Grid | None = None
    left: int = 1
    section: str = ""
    partition: str = ""
    terminal: bool = True


@dataclass(frozen=True)
class ReportDoc:
    """Everything the report says, in order (see the module docstring)."""

    title: str
    facts: tuple[tuple[str, str], ...]
    notes: tuple[str, ...]
    grids: tuple[Grid, ...]
    legend: tuple[tuple[str, str], ...]
    images: tuple[str, ...]
    files: tuple[tuple[str, str], ...]
    out_dir: str | None
    plots_of: str = ""
    """What the plots show, e.g. "family split, test runs"."""


# -- cells ------------------------------------------------------------------------------------


def _number(value: float, metric: str, signed: bool = False) -> str:
    digits = 1 if metric == "mape" else 3
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def pm_cell(stats: Mapping[str, Any] | None, metric: str, signed: bool = False) -> str:
    """``mean ±half`` of a summary interval (``{mean, low, high}``); the mean alone with one
    seed, ``–`` without a value."""
    if not stats or stats.get("mean") is None:
        return "–"
    text = _number(stats["mean"], metric, signed)
    if stats.get("low") is not None and stats.get("high") is not None:
        text += " ±" + _number((stats["high"] - stats["low"]) / 2, metric)
    return text


MIN_P_SEEDS = 5
"""Fewest seeds (pairs) whose paired t-test p-value the reports print, ``python -m train``'s
default seed count: on 2-4 per-seed differences the p-value rests wholly on their being
normally distributed, which so few cannot show, and differences that happen to agree give a p
near 0 that reads as strong evidence. ``metrics.json`` keeps the p-value whatever the count."""


def p_cell(p_value: float | None, seeds: int) -> str:
    """A paired comparison's p-value as the reports print it: ``<0.001`` below that rather
    than a ``0.000`` that reads as certainty, ``n/a (N seeds)`` from fewer than
    :data:`MIN_P_SEEDS` seeds (``seeds``: the pairs compared), ``–`` without one."""
    if p_value is None:
        return "–"
    if seeds < MIN_P_SEEDS:
        return f"n/a ({seeds} seeds)"
    return "<0.001" if p_value < 0.001 else f"{p_value:.3f}"


def few_seeds_p_note(seeds: int) -> str:
    """Why the p column says ``n/a`` with ``seeds`` seeds ('' with 1, which has no p, and from
    :data:`MIN_P_SEEDS` up): the one wording for ``python -m train`` and ``train.compare``."""
    if not 2 <= seeds < MIN_P_SEEDS:
        return ""
    return (
        f"p is n/a with {seeds} seeds: a paired t-test on fewer than {MIN_P_SEEDS} per-seed "
        "differences rests wholly on their being normally distributed, which so few cannot "
        "show, and differences that happen to agree give a p near 0 that reads as strong "
        f"evidence; train with --seeds {MIN_P_SEEDS} or more (the Δ interval and better/worse "
        "still say what these seeds show)."
    )


def column_name(metric: str) -> str:
    """The report's name of a metric of metrics.json (``top3_slowdown`` -> ``top-3 slowdown``)."""
    found = TOPK.match(metric)
    if found:
        return f"top-{found.group(1)} slowdown"
    return {
        "kendall_tau": "tau",
        "top1_failed": "top-1 failed",
        "mape": "mape %",
        "validity_accuracy": "validity acc.",
    }.get(metric, metric)


# -- what to show -----------------------------------------------------------------------------


def _records(payload: Mapping[str, Any], kind: str, partition: str) -> list[Mapping[str, Any]]:
    return [
        r
        for r in payload.get("results", [])
        if r.get("split_kind") == kind and r.get("partition") == partition
    ]


def shown_ks(records: Sequence[Mapping[str, Any]]) -> tuple[list[int], int | None]:
    """(k of the top-k slowdowns worth showing, the median configs per run): k = 1, and the
    largest other k the results carry that is below the median run's config count (past it
    the k picks hold the whole run and the slowdown is 0 by construction). Without run sizes
    (older metrics.json) every k is shown."""
    ks = sorted({int(m.group(1)) for r in records for k in r["metrics"] if (m := TOPK.match(k))})
    sizes = [n for r in records for n in r.get("run_sizes", {}).values()]
    if not sizes:
        return ks, None
    median = statistics.median(sizes)
    below = [k for k in ks if 1 < k < median]
    return [k for k in ks if k == 1] + below[-1:], int(median)


def trivial_ks_note(records: Sequence[Mapping[str, Any]], shown: str) -> str | None:
    """Why the top-k slowdowns past :func:`shown_ks` are left out (``runs have a median of 4
    configs: top-5 picks hold most runs whole (slowdown 0 by construction), so SHOWN top-1 and
    top-3``), or None when every k the results carry is worth showing. The report and
    ``python -m train.compare`` both say it, so they show the same k."""
    ks, median = shown_ks(records)
    every = sorted({int(m.group(1)) for r in records for k in r["metrics"] if (m := TOPK.match(k))})
    trivial = [k for k in every if median is not None and k >= median]
    if not trivial:
        return None
    return (
        f"runs have a median of {median} configs: top-{trivial[0]} picks hold most runs whole "
        f"(slowdown 0 by construction), so {shown} " + " and ".join(f"top-{k}" for k in ks)
    )


def _no_failures(payload: Mapping[str, Any], kind: str) -> bool:
    records = [r for r in payload.get("results", []) if r.get("split_kind") == kind]
    return bool(records) and all(r.get("failed") == 0 for r in records)


def _metrics(payload: Mapping[str, Any], kind: str, partition: str) -> list[str]:
    """The metric columns of one table, in order (the top-k chosen on the held-out runs)."""
    ks, _ = shown_ks(_records(payload, kind, _terminal_partition(payload, kind) or partition))
    metrics = ["kendall_tau", "opa", *(f"top{k}_slowdown" for k in ks)]
    if not _no_failures(payload, kind):
        metrics.append("top1_failed")
    models = payload["summary"][kind].get(partition, {})
    if any((stats.get("mape") or {}).get("mean") is not None for stats in models.values()):
        metrics.append("mape")
    if not _no_failures(payload, kind):
        metrics.append("validity_accuracy")
    return metrics


# -- tables -----------------------------------------------------------------------------------


def split_kinds(payload: Mapping[str, Any]) -> list[str]:
    """The split kinds of the summary in the order the experiment ran them (metrics.json
    sorts its keys; the first is the one the plots show)."""
    order = list(dict.fromkeys(r.get("split_kind") for r in payload.get("results", [])))
    kinds = payload.get("summary", {})
    return sorted(kinds, key=lambda k: order.index(k) if k in order else len(order))


def _in_run_order(payload: Mapping[str, Any], models: Mapping[str, Any]) -> list[str]:
    """``models``' names in the order the experiment ran them (metrics.json sorts its keys)."""
    order = list(dict.fromkeys(r["model"] for r in payload.get("results", [])))
    return sorted(models, key=lambda m: order.index(m) if m in order else len(order))


def metric_grid(payload: Mapping[str, Any], kind: str, partition: str) -> Grid:
    """Per model, ``mean ±half-interval`` over seeds of each metric shown."""
    models = payload["summary"][kind][partition]
    metrics = _metrics(payload, kind, partition)
    seeds = {s["kendall_tau"]["n"] for s in models.values() if "kendall_tau" in s}
    count = max(seeds, default=0)
    rows = tuple(
        (model, *(pm_cell(models[model].get(m), m) for m in metrics))
        for model in _in_run_order(payload, models)
    )
    return Grid(
        f"{partition} runs: mean ± 95 % interval over {_plural(count, 'seed')}",
        ("model", *map(column_name, metrics)),
        rows,
        section=f"{kind} split",
        partition=partition,
        terminal=partition == _terminal_partition(payload, kind),
    )


def paired_grid(payload: Mapping[str, Any], kind: str, partition: str) -> Grid | None:
    """Each model minus the best baseline, seed by seed: a row per model and metric, and a
    wide layout with a row per model."""
    comparison = payload.get("paired", {}).get(kind, {}).get(partition)
    if not comparison or not comparison["models"] or partition == "train":
        return None
    against = comparison["against"]
    metrics = [
        m
        for m in _metrics(payload, kind, partition)
        if m == "kendall_tau" or TOPK.match(m)
    ]
    long_rows, wide_rows = [], []
    for model in _in_run_order(payload, comparison["models"]):
        per_metric = comparison["models"][model]
        wide = [model]
        for i, metric in enumerate(m for m in metrics if m in per_metric):
            result = per_metric[metric]
            cells = (
                pm_cell(result["diff"], metric, signed=True),
                p_cell(result["p_value"], int(result["diff"]["n"])),
                f"{result['wins']}/{result['losses']}",
            )
            long_rows.append((model if i == 0 else "", column_name(metric), *cells))
            wide += cells
        wide_rows.append(tuple(wide))
    title = (
        f"{partition} runs: each model minus {against} (the best baseline by tau), paired seed "
        "by seed"
    )
    wide_columns = ["model"]
    for metric in metrics:
        wide_columns += [f"Δ {column_name(metric)}", "p", "better/worse"]
    return Grid(
        title,
        ("model", "metric", f"Δ vs {against}", "p", "better/worse"),
        tuple(long_rows),
        wide=Grid(title, tuple(wide_columns), tuple(wide_rows)),
        left=2,
        section=f"{kind} split",
        partition=partition,
        terminal=partition == _terminal_partition(payload, kind),
    )


def _terminal_partition(payload: Mapping[str, Any], kind: str) -> str | None:
    present = payload["summary"].get(kind, {})
    return next((p for p in PARTITIONS if p in present), None)


# -- facts and notes --------------------------------------------------------------------------


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _dataset_fact(meta: Mapping[str, Any]) -> str | None:
    if "data" not in meta:
        return None
    parts = []
    if meta.get("runs") is not None:
        runs = _plural(int(meta["runs"]), "run")
        rankable = meta.get("rankable_runs")
        if rankable is not None and rankable != meta["runs"]:
            runs += f" ({rankable:,} with a ranking to judge)"
        parts.append(runs)
    if meta.get("samples") is not None:
        parts.append(_plural(int(meta["samples"]), "config"))
    if meta.get("families") is not None:
        parts.append(_plural(int(meta["families"]), "family").replace("familys", "families"))
    if meta.get("arches"):
        parts.append("arch " + ", ".join(meta["arches"]))
    return f"{meta['data']}" + (f": {', '.join(parts)}" if parts else "")


def _split_fact(kinds: Sequence[str], meta: Mapping[str, Any]) -> str:
    similarity = meta.get("held_out_nearest_jaccard_median") or {}
    parts = []
    for kind in kinds:
        text = f"{kind}: {SPLIT_MEANINGS.get(kind, 'groups held out')}"
        if similarity.get(kind) is not None:
            text += (
                f" (a test family shares {similarity[kind]:.2f} of its weighted IR operations "
                "with its nearest training family, median Jaccard)"
            )
        parts.append(text)
    return "; ".join(parts) + "; runs are never cut"


def _training_fact(meta: Mapping[str, Any]) -> str | None:
    if "epochs" not in meta:
        return None
    parts = [f"up to {meta['epochs']} epochs, early-stopped on the val runs' tau"]
    if meta.get("refit"):
        parts.append("test figures of models fitted again on train + val runs (--refit)")
    if meta.get("loss"):
        parts.append(f"{meta['loss']} ranking loss")
    if meta.get("prior"):
        parts.append("analytic prior + learned residual")
    if meta.get("level"):
        parts.append(f"{str(meta['level']).upper()} graphs")
    if meta.get("collapse_identical") is False:
        parts.append("every config trained (identical programs not collapsed)")
    if meta.get("run_relative_features") is False:
        parts.append("no run-relative features")
    if meta.get("threads"):
        parts.append(_plural(int(meta["threads"]), "torch thread"))
    return ", ".join(parts)


CONSUMED = frozenset(
    {
        "data",
        "dataset_key",
        "rows_key",
        "split",
        "seeds",
        "samples",
        "runs",
        "rankable_runs",
        "families",
        "arches",
        "epochs",
        "loss",
        "prior",
        "level",
        "collapse_identical",
        "run_relative_features",
        "refit",
        "threads",
        "held_out_nearest_jaccard_median",
        "clusters",
        "checkpoint",
        "excluded_families",
    }
)
"""Meta keys the facts say in words; ``dataset_key`` (the processed-data cache key, a
fingerprint of the tables and options) and ``rows_key`` (which measurements were learnt
from, :func:`train.experiment.rows_key`) stay in metrics.json only."""


def _short(value: Any, limit: int = 200) -> str:
    text = json.dumps(value, default=str) if isinstance(value, Mapping | list) else str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def report_facts(payload: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(key, value) lines about the run, each said once."""
    meta = payload.get("meta", {})
    results = payload.get("results", [])
    kinds = split_kinds(payload)
    seeds = sorted({int(r["seed"]) for r in results})
    facts = []
    dataset = _dataset_fact(meta)
    if dataset:
        facts.append(("dataset", dataset))
    if kinds:
        facts.append(("split", _split_fact(kinds, meta)))
    if meta.get("excluded_families"):
        facts.append(("left out", ", ".join(meta["excluded_families"]) + " (not trained, not judged)"))
    if meta.get("clusters"):
        facts.append(("clusters", f"{len(meta['clusters'])} clusters of families (metrics.json: meta.clusters)"))
    if seeds:
        facts.append(
            (
                "seeds",
                f"{len(seeds)} ({seed_range(seeds)}): each draws its own split and trains every "
                "model anew",
            )
        )
    training = _training_fact(meta)
    if training:
        facts.append(("training", training))
    if meta.get("checkpoint"):
        facts.append(("checkpoint", str(meta["checkpoint"])))
    facts += [(key, _short(value)) for key, value in meta.items() if key not in CONSUMED]
    return facts


def few_runs_note(runs_per_seed: float, seeds: int, partition: str, compared: str = "models") -> str:
    """The warning that ``runs_per_seed`` held-out runs (mean over ``seeds`` seeds) of
    ``partition`` are too few to tell ``compared`` apart ('' from :data:`FEW_RUNS` up): the one
    rule for ``python -m train``'s report and ``python -m train.replay``'s."""
    if runs_per_seed >= FEW_RUNS:
        return ""
    return (
        f"{runs_per_seed:.3g} {partition} runs per seed, {_plural(seeds, 'seed')}: too few "
        f"for these numbers to tell {compared} apart (the ± intervals say how little they "
        "pin down); read them as a check that the tools work, and harvest more runs "
        "before judging a model."
    )


def report_notes(payload: Mapping[str, Any]) -> list[str]:
    """What a reader must know before trusting a number."""
    meta = payload.get("meta", {})
    kinds = split_kinds(payload)
    notes = []
    if not kinds:
        return notes
    kind = kinds[0]
    partition = _terminal_partition(payload, kind) or "test"
    records = _records(payload, kind, partition)
    per_seed: dict[int, int] = {}
    for r in records:
        per_seed[int(r["seed"])] = max(per_seed.get(int(r["seed"]), 0), len(r.get("run_taus", {})))
    if per_seed:
        runs = sum(per_seed.values()) / len(per_seed)
        few = few_runs_note(runs, len(per_seed), partition)
        if few:
            notes.append(few)
        if len(per_seed) == 1:
            notes.append("one seed: no intervals and no paired comparison (use --seeds 3 or more).")
        if payload.get("paired", {}).get(kind, {}).get(partition, {}).get("models"):
            p_note = few_seeds_p_note(len(per_seed))
            if p_note:
                notes.append(p_note)
        unranked = sorted(seed for seed, runs in per_seed.items() if runs == 0)
        if unranked and len(unranked) < len(per_seed):
            notes.append(
                f"seed(s) {', '.join(map(str, unranked))}: no {partition} run with two configs that "
                f"ran ok, so the ranking metrics (kendall_tau, opa, top-k) average over the other "
                f"{_plural(len(per_seed) - len(unranked), 'seed')}; validity counts every seed."
            )
    if list(meta.get("arches") or []) == ["interpreter"]:
        notes.append(
            "latencies are CPU times of Triton's interpreter, not GPU times: what ranks well "
            "here says little about GPU configs."
        )
    trivial = trivial_ks_note(records, "the tables show")
    if trivial:
        notes.append(trivial + " (every k: topk_slowdown.png, metrics.json).")
    if _no_failures(payload, kind):
        notes.append(
            "no config failed: top-1 failed and validity accuracy (0 and 1 for every model) are "
            "not shown."
        )
    return notes


def report_legend(grids: Iterable[Grid]) -> list[tuple[str, str]]:
    """The meaning of every column of ``grids`` (each said once, in the order met)."""
    meanings = {
        "tau": "Kendall tau-b between measured latency and the model's score over a run's "
        "configs that ran (1 = the right order, 0 = chance), averaged over runs "
        "(metrics.json: kendall_tau)",
        "opa": "ordered-pair accuracy: share of a run's config pairs put in the right order "
        "(0.5 = chance)",
        "top-k slowdown": "(best latency among the model's first k picks - the run's best) / "
        "the run's best, a fraction: 0.1 = 10 % slower, 0 = the best is among them; picks "
        "come from every config, those predicted to fail last, and a run whose k picks all "
        "fail costs its slowest config that ran (metrics.json: topk_slowdown)",
        "top-1 failed": "share of runs whose first pick fails",
        "mape %": "mean absolute percentage error of the predicted latency (models with a "
        "latency head)",
        "validity acc.": "share of configs whose ok/failed status the model predicts right",
        "±": f"half-width of the {LEVEL * 100:.0f} % Student-t interval of the mean over seeds "
        "(none with one seed)",
        "Δ, p, better/worse": "paired per seed (same split, same held-out runs): the mean "
        "difference to the best baseline ± its interval, the paired t-test's p-value (n/a "
        f"from fewer than {MIN_P_SEEDS} seeds), and the seeds where the model is better / worse",
    }
    seen: dict[str, str] = {}
    for grid in grids:
        for column in grid.columns:
            key = "top-k slowdown" if column.startswith("top-") and "slowdown" in column else column
            if key.startswith("Δ") or key == "better/worse":
                key = "Δ, p, better/worse"
            if key in meanings and key not in seen:
                seen[key] = meanings[key]
                if key == "tau":
                    seen["±"] = meanings["±"]
    return list(seen.items())


def _with_arches(payload: Mapping[str, Any], directory: str | None) -> Mapping[str, Any]:
    """``payload`` with ``meta.arches`` taken from the checkpoint beside it when the meta does
    not say them (the arch tells interpreter timings from GPU ones)."""
    meta = payload.get("meta", {})
    path = os.path.join(directory or "", "checkpoint", "checkpoint.json")
    if meta.get("arches") or directory is None or not os.path.isfile(path):
        return payload
    try:
        with open(path, encoding="utf-8") as handle:
            arches = json.load(handle).get("seen", {}).get("arches")
    except (OSError, ValueError):  # not this report's business: the facts just lack the arch
        return payload
    return {**payload, "meta": {**meta, "arches": arches}} if arches else payload


def build_report(payload: Mapping[str, Any], out_dir: str | os.PathLike[str] | None = None) -> ReportDoc:
    """The report of one metrics.json payload; ``out_dir``: where its files are (the images
    and files listed are those present there)."""
    directory = None if out_dir is None else os.fspath(out_dir)
    payload = _with_arches(payload, directory)
    grids: list[Grid] = []
    summary = payload.get("summary", {})
    for kind in split_kinds(payload):
        partitions = summary[kind]
        for partition in sorted(partitions, key=lambda p: PARTITIONS.index(p) if p in PARTITIONS else 9):
            grids.append(metric_grid(payload, kind, partition))
            pairs = paired_grid(payload, kind, partition)
            if pairs is not None:
                grids.append(pairs)
    present = set(os.listdir(directory)) if directory and os.path.isdir(directory) else set()
    first = next(iter(split_kinds(payload)), None)
    plots_of = ""
    if first is not None:
        plots_of = f"{first} split, {plot_partition(summary[first])} runs"
    return ReportDoc(
        title=str(payload.get("title", "Cost model vs baselines")),
        facts=tuple(report_facts(payload)),
        notes=tuple(report_notes(payload)),
        grids=tuple(grids),
        legend=tuple(report_legend(grids)),
        images=tuple(name for name in PLOT_FILES if name in present),
        files=tuple((name, what) for name, what in FILES if name in present),
        out_dir=directory,
        plots_of=plots_of,
    )


# -- Markdown ---------------------------------------------------------------------------------


def _markdown_grid(grid: Grid) -> list[str]:
    aligns = ["---"] * grid.left + ["---:"] * (len(grid.columns) - grid.left)
    lines = [f"### {grid.title}", "", "| " + " | ".join(grid.columns) + " |"]
    lines.append("|" + "|".join(aligns) + "|")
    lines += ["| " + " | ".join(cell or " " for cell in row) + " |" for row in grid.rows]
    return [*lines, ""]


def to_markdown(doc: ReportDoc) -> str:
    """``report.md``: facts, notes, every table, the plots (links relative to the report's
    directory), column meanings and files."""
    lines = [f"# {doc.title}", ""]
    lines += [f"- **{key}**: {value}" for key, value in doc.facts]
    lines.append("")
    for note in doc.notes:
        lines += [f"> **Note**: {note}", ">"]
    if doc.notes:
        lines[-1] = ""
    current = None
    for grid in doc.grids:
        if grid.section != current:
            current = grid.section
            lines += [f"## {grid.section}", ""]
        lines += _markdown_grid(grid)
    if doc.images:
        lines += [f"## Plots ({doc.plots_of})", ""]
        lines += [f"![{name}]({name})" for name in doc.images]
        lines.append("")
    if doc.legend:
        lines += ["## Columns", ""]
        lines += [f"- **{key}**: {value}" for key, value in doc.legend]
        lines.append("")
    if doc.files:
        lines += ["## Files", ""]
        lines += [f"- [{name}]({name}): {what}" for name, what in doc.files if name != "report.md"]
        lines.append("")
    return "\n".join(lines)


# -- terminal ---------------------------------------------------------------------------------


def rich_table(grid: Grid) -> Table:
    """``grid`` as a rich table without outer borders (cells fold at their spaces when the
    console is too narrow)."""
    table = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        collapse_padding=True,
        header_style="bold",
    )
    for i, column in enumerate(grid.columns):
        table.add_column(plain_text(column), justify="left" if i < grid.left else "right", overflow="fold",
                         no_wrap=i < grid.left)  # fmt: skip
    for row in grid.rows:  # cells and headers are text: model names, compare's labels
        table.add_row(*map(plain_text, row))
    return table


def _with_columns(grid: Grid, indices: Sequence[int]) -> Grid:
    """``grid`` cut to its leading text columns and the columns at ``indices``."""
    keep = [*range(grid.left), *indices]
    return Grid(
        grid.title,
        tuple(grid.columns[i] for i in keep),
        tuple(tuple(row[i] for i in keep) for row in grid.rows),
        left=grid.left,
    )


def column_groups(console: Console, grid: Grid) -> list[Grid]:
    """``grid`` as the console can show it: itself when it fits, else its columns cut, in
    order, into the fewest groups that each fit, every group repeating the leading text
    columns (a 13-column table on 80 columns reads as 2 or 3 tables, not as cells folded
    into slivers; a column too wide alone still folds)."""
    if fits(console, rich_table(grid)):
        return [grid]
    groups: list[list[int]] = [[]]
    for index in range(grid.left, len(grid.columns)):
        if groups[-1] and not fits(console, rich_table(_with_columns(grid, [*groups[-1], index]))):
            groups.append([])
        groups[-1].append(index)
    return [_with_columns(grid, group) for group in groups]


def print_grid(console: Console, grid: Grid) -> None:
    """The title, then the wide layout when it fits the console, else the grid itself (in
    groups of columns when even it is too wide: :func:`column_groups`)."""
    title = f"{grid.section}, {grid.title}" if grid.section else grid.title
    print_trimmed(console, Text(title, style="bold"))
    shown = grid.wide if grid.wide is not None and fits(console, rich_table(grid.wide)) else grid
    for i, part in enumerate(column_groups(console, shown)):
        if i:
            console.print()
        print_trimmed(console, rich_table(part))


def _prose(rows: Iterable[tuple[str | Text, str]]) -> RenderableType:
    return Constrain(key_values(rows), width=PROSE_WIDTH)


def print_prose(console: Console, text: str, label: str = "", style: str = "bold yellow") -> None:
    """``text`` wrapped at :data:`PROSE_WIDTH` (or the console's width), after ``label`` in
    ``style`` (``note``) when given, as the report prints its notes."""
    if label:
        print_trimmed(console, _prose([(Text(label, style=style), text)]))
    else:
        print_trimmed(console, Constrain(Text(text), width=PROSE_WIDTH))


def print_report(console: Console, doc: ReportDoc) -> None:
    """The report for the terminal: facts, notes, the held-out tables (the others are in
    report.md), what the columns mean, where the files went."""
    print_trimmed(console, Text(doc.title, style="bold"))
    print_trimmed(console, _prose(doc.facts))
    for note in doc.notes:
        print_prose(console, note, "note")
    left_out = [g for g in doc.grids if not g.terminal]
    for grid in doc.grids:
        if grid.terminal:
            console.print()
            print_grid(console, grid)
    console.print()
    print_trimmed(console, _prose(doc.legend))
    if doc.out_dir is None:
        return
    console.print()
    where = doc.out_dir.rstrip("/") + "/"
    listing = [(n + ("/" if n in ("checkpoint", "checkpoints") else ""), w) for n, w in doc.files]
    if doc.images:
        listing.append(("plots", f"{', '.join(doc.images)} ({doc.plots_of})"))
    if left_out:
        parts = " and ".join(dict.fromkeys(g.partition for g in left_out))
        listing = [
            (n, w + (f"; also the {parts} runs' tables" if n == "report.md" else ""))
            for n, w in listing
        ]
    console.print(Text.assemble(("files in ", "bold"), (where, "bold")), soft_wrap=True)
    print_trimmed(console, _prose(listing))
