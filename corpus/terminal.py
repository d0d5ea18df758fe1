"""Terminal output shared by the corpus commands: tables that fit the console and lines that
end without trailing blanks (rich pads every cell, and a centred title, to the table's width)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from rich.console import Console, RenderableType
from rich.segment import Segment, Segments
from rich.table import Table
from rich.text import Text

UNBOUNDED = 100_000
"""A width no line reaches: what a renderable's natural (unfolded) width is measured against."""


def natural_width(console: Console, renderable: RenderableType) -> int:
    """Columns ``renderable`` takes when nothing in it folds (``console.measure`` alone is
    capped at the console's width)."""
    return console.measure(renderable, options=console.options.update(max_width=UNBOUNDED)).maximum


def fits(console: Console, renderable: RenderableType) -> bool:
    """Whether ``renderable`` fits the console's width without folding any cell."""
    return natural_width(console, renderable) <= console.width


def key_values(rows: Iterable[tuple[str, RenderableType]]) -> Table:
    """A two-column listing, ``key  value``, whose values fold at their spaces with a hanging
    indent (under the value, not under the key) when the console is narrow."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for key, value in rows:
        grid.add_row(key, value)
    return grid


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 run``, ``12 runs``, ``0 runs``."""
    return f"{count:,} {noun if count == 1 else (nouns or noun + 's')}"


def _rstrip(line: list[Segment]) -> list[Segment]:
    """``line`` without its trailing blanks (styles of what remains are kept)."""
    segments = list(line)
    while segments and (segments[-1].control is None and not segments[-1].text.strip()):
        segments.pop()
    if segments and segments[-1].control is None:
        last = segments[-1]
        segments[-1] = Segment(last.text.rstrip(), last.style)
    return segments


def print_trimmed(console: Console, renderable: RenderableType) -> None:
    """Print ``renderable`` laid out for the console's width, each line right-trimmed."""
    segments: list[Segment] = []
    for line in console.render_lines(renderable, console.options, pad=False):
        segments.extend(_rstrip(line))
        segments.append(Segment.line())
    console.print(Segments(segments), end="", soft_wrap=True)


def print_table_or_listing(
    console: Console, table: RenderableType, narrow: Callable[[], Iterable[Text]]
) -> bool:
    """Print ``table`` when it fits the console's width without folding (:func:`fits`), else
    the lines ``narrow()`` lays out for that width (a :func:`grouped_listing`); returns whether
    the table was printed."""
    if fits(console, table):
        print_trimmed(console, table)
        return True
    for line in narrow():
        console.print(line, soft_wrap=True)
    return False


@dataclass(frozen=True)
class ListingRow:
    """One row of a :func:`grouped_listing`."""

    group: str
    """Printed once, as a heading, above the rows of its group (rows come grouped)."""
    label: str
    cells: tuple[str, ...]
    """Short values, right-aligned under their headers."""
    tail: str
    """The last column, free text: folds at its spaces."""


MIN_TAIL_WIDTH = 24
"""Narrowest last column worth keeping beside a row's label; below it the cells go on a line
of their own under the label."""


def grouped_listing(
    rows: Sequence[ListingRow],
    headers: Sequence[str],
    tail_header: str,
    width: int,
    label_header: str = "run",
    min_tail: int = MIN_TAIL_WIDTH,
) -> list[Text]:
    """A table for consoles too narrow for one line per row with every column: each group
    heads its rows, labels are indented under it, and only the tail folds (at its spaces).
    A label too long to leave ``min_tail`` columns for the tail gets a line of its own, its
    cells going on the next line. No line is longer than ``width`` (a word longer than
    the whole line excepted) and none ends in blanks."""
    if not rows:
        return []
    widths = [max(len(header), *(len(row.cells[i]) for row in rows)) for i, header in enumerate(headers)]
    cells_width = sum(widths) + 2 * len(widths)  # each cell and the gap after it
    label_cap = width - 4 - cells_width - min_tail
    label_width = max((len(row.label) for row in rows if len(row.label) <= label_cap), default=0)
    lead = 2 + max(label_width, len(label_header) - 2) + 2 if label_width else 4  # where cells start
    tail_width = max(8, width - lead - cells_width)

    def cells(values: Sequence[str]) -> str:
        return "".join(f"{value:>{w}}  " for value, w in zip(values, widths))

    header = (label_header if label_width else "").ljust(lead) + cells(headers) + tail_header
    lines = [Text(header.rstrip(), style="bold")]
    group = None
    for row in rows:
        if row.group != group:
            group = row.group
            lines.append(Text(group, style="bold"))
        tail = textwrap.wrap(row.tail, tail_width) or [""]
        if len(row.label) <= label_width:
            first = f"  {row.label}".ljust(lead)
        else:
            lines.extend(Text(f"  {part}") for part in textwrap.wrap(row.label, width - 2))
            first = " " * lead
        lines.append(Text((first + cells(row.cells) + tail[0]).rstrip()))
        lines.extend(Text(" " * (lead + cells_width) + part) for part in tail[1:])
    return lines
