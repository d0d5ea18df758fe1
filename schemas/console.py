"""Terminal output shared by every command of the project.

- :func:`print_error`: the line every command prints when it stops on an error (then exits 2),
  so that the harvest, ``corpus.record``, ``corpus.ingest``, ``python -m schemas`` and
  ``train`` say it the same way: ``error: <message>``, "error" in red on a terminal, never
  wrapped. The message is printed as text, not as rich markup: it often holds a path, a
  module's own message or a value the user typed, where brackets (``data[/x]``, ``[bold]``)
  are not markup (rich would drop them, or stop with a MarkupError traceback).
- :func:`compact_config`: a config as the harvest summary and ``train.predict`` show it.
- Tables that fit the console (:func:`natural_width`, :func:`fits`, :func:`key_values`) and
  lines that end without trailing blanks (:func:`print_trimmed`; rich pads every cell, and a
  centred title, to the table's width).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rich.console import Console, RenderableType
from rich.segment import Segment, Segments
from rich.table import Table
from rich.text import Text


def compact_config(row: Mapping[str, Any]) -> str:
    """A measurement row's config in a few characters: ``BLOCK_M=16 BLOCK_N=128 w4 s2``
    (meta-parameters, then warps and stages; the full ``triton.Config`` is in the dataset)."""
    params = " ".join(f"{p['name']}={p['value']}" for p in row.get("config_params") or [])
    return f"{params} w{row['num_warps']} s{row['num_stages']}".strip()


def print_error(console: Console, message: str) -> None:
    """Print ``error: message`` on ``console`` (for stderr: ``Console(stderr=True)``)."""
    print_labelled(console, "error", "red", message)


def print_labelled(
    console: Console, label: str, style: str, message: object, *, soft_wrap: bool = True
) -> None:
    """Print ``label: message``, the label in ``style``, the message as text (``str(message)``),
    never as rich markup: messages hold paths, exception texts and problems, where brackets
    (``runs[ds]``, ``[/tmp/x]``) are text, which rich would drop or stop on."""
    console.print(Text.assemble((label, style), ": ", str(message)), soft_wrap=soft_wrap)


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
    indent (under the value, not under the key) when the console is narrow. A ``str`` key or
    value is shown as it is, not read as rich markup: values are paths, device names and
    messages, where brackets (``runs[ds]``) are text (pass a :class:`rich.text.Text` to style)."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for key, value in rows:
        grid.add_row(_plain(key), _plain(value))
    return grid


def _plain(cell: RenderableType) -> RenderableType:
    return Text(cell) if isinstance(cell, str) else cell


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
