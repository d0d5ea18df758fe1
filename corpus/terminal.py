"""Terminal output shared by the corpus commands: listings for consoles too narrow for a
table, and a standard output that outlives its reader (:class:`PipeSafeStdout`); the generic helpers (tables that fit the console, lines without trailing blanks) live in
:mod:`schemas.console`, shared with ``train``, and are re-exported here."""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from rich.console import Console, RenderableType
from rich.text import Text

from schemas.console import UNBOUNDED, fits, key_values, natural_width, print_trimmed

__all__ = [
    "UNBOUNDED",
    "ListingRow",
    "PipeSafeStdout",
    "fits",
    "grouped_listing",
    "key_values",
    "natural_width",
    "plural",
    "print_table_or_listing",
    "print_trimmed",
]


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 run``, ``12 runs``, ``0 runs``."""
    return f"{count:,} {noun if count == 1 else (nouns or noun + 's')}"


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


class PipeSafeStdout:
    """Standard output for a long command whose reader may go away (``harvest ... | head``).

    The first write that finds the pipe closed points the file descriptor at ``os.devnull``;
    that write and every later one are dropped, and the command goes on (a harvest keeps
    measuring and committing what it was asked to). Without it, the first print after the
    reader left raises BrokenPipeError wherever it happens, mid-harvest. Everything else
    (``isatty``, ``encoding``, ``fileno``) is the wrapped stream's."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.reader_gone = False

    def write(self, text: str) -> int:
        if not self.reader_gone:
            try:
                return self.stream.write(text)
            except BrokenPipeError:
                self._detach()
        return len(text)

    def flush(self) -> None:
        if not self.reader_gone:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._detach()

    def _detach(self) -> None:
        """Drop output from now on; the stream's unwritten buffer goes to ``os.devnull`` too,
        so the interpreter's last flush at exit does not fail either."""
        self.reader_gone = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self.stream.fileno())
        finally:
            os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)
