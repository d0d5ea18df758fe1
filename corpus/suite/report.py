"""Summaries of a suite for humans: the ``list`` table, the ``show`` page and the totals.

Counting is pure Python over the specs (no kernel is compiled or run), so it is instant even
for tens of thousands of configs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from corpus.suite.check import CheckResult
from corpus.suite.spec import CATEGORIES, SCALES, Config, Dims, KernelSpec, shape_name
from corpus.terminal import (
    ListingRow,
    grouped_listing,
    key_values,
    plural,
    print_table_or_listing,
    print_trimmed,
)
from schemas.console import plain_text


@dataclass(frozen=True)
class FamilySummary:
    """Counts of one family; ``runs`` and ``valid_configs`` are for one scale."""

    name: str
    category: str
    dtypes: tuple[str, ...]
    configs: int
    """Size of the full config space."""
    shapes: Mapping[str, int]
    """Number of shapes per scale."""
    scale: str
    runs: int
    """(shape, dtype) pairs at ``scale``: one autotune run each."""
    valid_configs: int
    """Valid (shape, dtype, config) combinations at ``scale``."""
    combinations: int
    """All (shape, dtype, config) combinations at ``scale``, invalid ones included."""


@dataclass(frozen=True)
class SuiteTotals:
    """Totals over the families of a suite at one scale."""

    scale: str
    families: int
    runs: int
    valid_configs: int
    combinations: int


def summarize(spec: KernelSpec, scale: str) -> FamilySummary:
    """Count the runs and valid configs ``spec`` contributes at ``scale``."""
    space = spec.config_space()
    shapes = spec.shapes_for(scale)
    valid = sum(
        1
        for dims in shapes
        for dtype in spec.dtypes
        for config in space
        if spec.invalid_reason(config, dims, dtype) is None
    )
    return FamilySummary(
        name=spec.name,
        category=spec.category,
        dtypes=tuple(spec.dtypes),
        configs=len(space),
        shapes={s: len(spec.shapes_for(s)) for s in SCALES},
        scale=scale,
        runs=len(shapes) * len(spec.dtypes),
        valid_configs=valid,
        combinations=len(shapes) * len(spec.dtypes) * len(space),
    )


def totals(summaries: list[FamilySummary], scale: str) -> SuiteTotals:
    return SuiteTotals(
        scale=scale,
        families=len(summaries),
        runs=sum(s.runs for s in summaries),
        valid_configs=sum(s.valid_configs for s in summaries),
        combinations=sum(s.combinations for s in summaries),
    )


def suite_totals(specs: Mapping[str, KernelSpec], scale: str) -> SuiteTotals:
    """Families, runs and valid configs of the whole suite at ``scale``."""
    return totals([summarize(spec, scale) for spec in specs.values()], scale)


def print_list(console: Console, specs: Mapping[str, KernelSpec], scale: str) -> None:
    """``python -m corpus.suite list``: one line per family (a table when the console is wide
    enough, families under their category otherwise), then the totals and what the columns mean."""
    summaries = sorted((summarize(spec, scale) for spec in specs.values()), key=lambda s: (s.category, s.name))
    total = totals(summaries, scale)
    rows = [
        ListingRow(
            s.category,
            s.name,
            (f"{s.configs:,}", "/".join(str(s.shapes[each]) for each in SCALES), f"{s.runs:,}", f"{s.valid_configs:,}"),
            " ".join(_SHORT_DTYPES.get(d, d) for d in s.dtypes),
        )
        for s in summaries
    ]
    headers = ("configs", "shapes", "runs", "valid")
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for column in ("category", "family", *headers, "dtypes"):
        table.add_column(column, justify="right" if column in headers else "left", no_wrap=True)
    for row in rows:
        table.add_row(*map(plain_text, (row.group, row.label, *row.cells, row.tail)))  # names from suites
    console.print(f"[bold]kernel suite[/]: runs and valid configs at scale '{scale}'")
    print_table_or_listing(
        console,
        table,
        lambda: grouped_listing(rows, headers, "dtypes", console.width, label_header="family", min_tail=12),
    )
    shape_totals = "/".join(str(sum(s.shapes[each] for s in summaries)) for each in SCALES)
    categories = len({s.category for s in summaries})
    print_trimmed(
        console,
        key_values(
            [
                (
                    "total",
                    f"{plural(total.families, 'family', 'families')} in {plural(categories, 'category', 'categories')}; "
                    f"{sum(s.configs for s in summaries):,} configs; shapes {shape_totals}; "
                    f"{total.runs:,} runs; {total.valid_configs:,} valid",
                ),
                ("configs", "size of the family's config space"),
                ("shapes", f"shapes per scale, {'/'.join(SCALES)}"),
                ("runs", f"family x shape x dtype at '{scale}': one autotune run each"),
                (
                    "valid",
                    f"(shape, dtype, config) combinations the family allows at '{scale}' "
                    f"({total.valid_configs:,} of {total.combinations:,})",
                ),
            ]
        ),
    )


_SHORT_DTYPES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64"}


def config_space_summary(space: list[Config]) -> dict[str, list[Any]]:
    """The distinct values of every knob in ``space`` (meta-parameters and compile options)."""
    values: dict[str, set[Any]] = {}
    for config in space:
        knobs = {**config.kwargs, **config.compile_options()}
        for key, value in knobs.items():
            values.setdefault(key, set()).add(value)
    return {key: sorted(v, key=lambda x: (x is None, x)) for key, v in values.items()}


def kernel_name(spec: KernelSpec) -> str:
    """Name of the entry ``@triton.jit`` function (JIT or interpreted)."""
    kernel = spec.kernel
    fn = getattr(kernel, "fn", kernel)
    return getattr(fn, "__name__", repr(kernel))


def print_family(console: Console, spec: KernelSpec) -> None:
    """``python -m corpus.suite show NAME``: the family's facts, then its shapes per scale (a
    table when the console is wide enough, shapes under their scale otherwise)."""
    space = spec.config_space()
    default = spec.default_config()
    facts: list[tuple[str, str]] = [
        ("family", spec.name),
        ("kernel", f"{kernel_name(spec)}  ({type(spec).__module__})"),
        ("category", spec.category),
        ("dtypes", ", ".join(spec.dtypes)),
        ("outputs", ", ".join(spec.outputs)),
        ("mutated", ", ".join(spec.mutated) or "none"),
        ("config space", f"{len(space)} configs"),
    ]
    meta = {name for config in space for name in config.kwargs}
    for knob, values in config_space_summary(space).items():
        role = f"  (role {spec.role_of(knob)})" if knob in meta else ""
        facts.append((f"  {knob}", ", ".join(str(v) for v in values) + role))
    facts += [("default config", default.launch), ("flag dims", ", ".join(spec.flag_dims) or "none")]
    print_trimmed(console, key_values(facts))

    short = [_SHORT_DTYPES.get(d, d) for d in spec.dtypes]
    headers = ("flops", *(f"bytes {d}" for d in short), *(f"valid {d}" for d in short))
    rows = [
        ListingRow(
            scale,
            shape_name(dims),
            (
                _si(spec.flops(dims)),
                *(_si(spec.bytes_moved(dims, d), "B") for d in spec.dtypes),
                *(f"{_valid_count(spec, space, dims, d)}/{len(space)}" for d in spec.dtypes),
            ),
            "",
        )
        for scale in SCALES
        for dims in spec.shapes_for(scale)
    ]
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for column in ("scale", "shape", *headers):
        table.add_column(column, justify="left" if column in ("scale", "shape") else "right", no_wrap=True)
    for row in rows:
        table.add_row(*map(plain_text, (row.group, row.label, *row.cells)))
    console.print()
    console.print("[bold]shapes[/]: flops and bytes moved per launch, valid configs, per dtype")
    print_table_or_listing(
        console,
        table,
        lambda: grouped_listing(rows, headers, "", console.width, label_header="shape", min_tail=0),
    )


def _si(value: int, unit: str = "") -> str:
    """``1_500_000`` -> ``'1.50 M'``: decimal prefixes, three significant digits."""
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value} {unit}".rstrip()


def _valid_count(spec: KernelSpec, space: list[Config], dims: Dims, dtype: str) -> int:
    return sum(1 for c in space if spec.invalid_reason(c, dims, dtype) is None)


def check_table(results: Sequence[CheckResult], every_config: bool = False) -> Table:
    """Per-family pass/fail counts and the slowest launch of ``python -m corpus.suite check``,
    with what was checked: the default config on each shape x dtype and the other configs,
    sampled or ``every_config`` (a total alone, softmax's 9, did not say it is the default on
    3 shapes x 2 dtypes plus 3 samples)."""
    table = Table(title="reference check")
    by_family: dict[str, list[CheckResult]] = {}
    for result in results:
        by_family.setdefault(result.family, []).append(result)
    # Headers on two lines and no passed column (the summary line has it): the table then fits
    # 80 columns with the longest family; rich's own header wrapping cropped the last column.
    table.add_column("family")
    others = "others\n(all)" if every_config else "sampled\nconfigs"
    for column in ("shapes\nx dtypes", "default\nconfig", others, "failed", "slowest\nlaunch (s)"):
        table.add_column(column, justify="right")
    for family, rows in by_family.items():
        failed = sum(not r.ok for r in rows)
        defaults = sum(r.is_default for r in rows)
        table.add_row(
            plain_text(family),
            f"{len({r.shape for r in rows})} x {len({r.dtype for r in rows})}",
            str(defaults),
            str(len(rows) - defaults),
            f"[red]{failed}[/]" if failed else "0",
            f"{max(r.seconds for r in rows):.2f}",
        )
    return table


TABLE_START = "<!-- families-table -->"
TABLE_END = "<!-- /families-table -->"


def family_description(spec: KernelSpec) -> str:
    """First sentence of the family module's docstring (what the kernel computes)."""
    import sys

    module = sys.modules.get(type(spec).__module__)
    doc = " ".join((getattr(module, "__doc__", None) or type(spec).__doc__ or "").split())
    sentence = doc.split(". ")[0].rstrip(".")
    # "Title: formula ..." -> keep the title; otherwise cut long sentences at a word.
    if ": " in sentence[:80]:
        sentence = sentence.split(": ")[0]
    elif len(sentence) > 90:
        sentence = sentence[:90].rsplit(" ", 1)[0] + " ..."
    return sentence.replace("|", "\\|")


def families_markdown(specs: Mapping[str, KernelSpec], scale: str = "default") -> str:
    """Markdown table of the families: category, what they compute, knobs, runs and valid
    configs at ``scale``, with a totals row."""
    summaries = {name: summarize(spec, scale) for name, spec in specs.items()}
    lines = [
        f"| family | category | computes | knobs (role) | flag dims | runs ({scale}) | valid configs ({scale}) |",
        "| --- | --- | --- | --- | --- | ---: | ---: |",
    ]
    for name, spec in sorted(
        specs.items(), key=lambda item: (CATEGORY_ORDER.get(item[1].category, 99), item[0])
    ):
        s = summaries[name]
        flags = ", ".join(spec.flag_dims) or "-"
        lines.append(
            f"| `{name}` | {spec.category} | {family_description(spec)} | {knobs_with_roles(spec)} | {flags} "
            f"| {s.runs} | {s.valid_configs} |"
        )
    total = totals(list(summaries.values()), scale)
    lines.append(
        f"| **{total.families} families** | | | | | **{total.runs}** | **{total.valid_configs}** |"
    )
    return "\n".join(lines)


def knobs_with_roles(spec: KernelSpec) -> str:
    """The tuned knobs of ``spec`` (more than one value in its space), each meta-parameter
    with its role: ``BLOCK_M (tile_m), num_warps``."""
    space = spec.config_space()
    meta = {name for config in space for name in config.kwargs}
    return ", ".join(
        f"{knob} ({spec.role_of(knob)})" if knob in meta else knob
        for knob, values in config_space_summary(space).items()
        if len(values) > 1
    )


CATEGORY_ORDER = {category: i for i, category in enumerate(CATEGORIES)}


def replace_families_table(document: str, table: str) -> str:
    """``document`` with the text between the families-table markers replaced by ``table``."""
    start, end = document.find(TABLE_START), document.find(TABLE_END)
    if start < 0 or end < start:
        raise ValueError(f"document has no {TABLE_START} ... {TABLE_END} section")
    return document[: start + len(TABLE_START)] + "\n" + table + "\n" + document[end:]
