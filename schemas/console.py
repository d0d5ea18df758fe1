"""Terminal output shared by every command of the project.

- :func:`print_error`: the line every command prints when it stops on an error (then exits 2),
  so that the harvest, ``corpus.record``, ``corpus.ingest``, ``python -m schemas`` and
  ``train`` say it the same way: ``error: <message>``, "error" in red on a terminal, never
  wrapped. The message is printed as text, not as rich markup: it often holds a path, a
  module's own message or a value the user typed, where brackets (``data[/x]``, ``[bold]``)
  are not markup (rich would drop them, or stop with a MarkupError traceback).
- :func:`fill_markup`: a line whose literal parts are rich markup (``[bold]...[/]``) and whose
  fields are values from outside the code (paths, names from data, exception texts, what the
  user typed), shown as they are: brackets in them are text, not style tags. Every line that
  interpolates such a value into markup goes through it.
- :func:`plain_text`: a table cell, title or key as text, never markup.
- :func:`compact_config`: a config as the harvest summary and ``train.predict`` show it.
- Tables that fit the console (:func:`natural_width`, :func:`fits`, :func:`key_values`) and
  lines that end without trailing blanks (:func:`print_trimmed`; rich pads every cell, and a
  centred title, to the table's width).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from string import Formatter
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
    (``runs[ds]``, ``[/tmp/x]``) are text, which rich would drop or stop on. ``soft_wrap``
    False: wrapped to the console's width, no line ending in the blank rich leaves at a break."""
    text = Text.assemble((label, style), ": ", str(message))
    if soft_wrap:
        console.print(text, soft_wrap=True)
    else:
        print_trimmed(console, text)


_TAG_AT = re.compile(r"\[[a-z#/@][^[]*?]")
"""What rich reads as a style tag where it starts (``rich.markup.RE_TAGS``)."""
_BRACKET = re.compile(r"\\*\[")


def fill_markup(template: str, /, **values: object) -> str:
    """``template`` (rich markup written in the code) with its ``{name}`` / ``{name:spec}``
    fields filled from ``values`` as text: ``fill_markup("[bold]wrote[/] {out}", out="runs[x]")``
    prints ``wrote runs[x]``, ``[x]`` kept rather than read as a style (and ``[/x]`` printed
    rather than stopping rich with a MarkupError). A value without a ``[`` is inserted
    unchanged, so the line is the f-string's.

    Each ``[`` of a value, and the backslashes before it, are escaped as rich reads them where
    they end up (``rich.markup.escape`` per value gets ``\\[1]`` and a value ending in ``\\``
    before a tag wrong: rich drops a backslash before any ``[``, and halves those before a tag)."""
    formatter = Formatter()
    text, from_value = "", []  # from_value[i]: whether text[i] came from a value
    for literal, field, spec, conversion in formatter.parse(template):
        text += literal
        from_value += [False] * len(literal)
        if field is not None:
            value = formatter.convert_field(formatter.get_field(field, (), values)[0], conversion)
            filled = format(value, formatter.vformat(spec or "", (), values))
            text += filled
            from_value += [True] * len(filled)
    pieces, done = [], 0
    for match in _BRACKET.finditer(text):
        bracket = match.end() - 1
        slashes = sum(from_value[match.start() : bracket])  # the value's backslashes before it
        tag = _TAG_AT.match(text, bracket) is not None
        if from_value[bracket]:  # rich must print "[" and the backslashes before it
            extra = slashes + 1 if tag else min(slashes, 1)
        elif slashes:  # code's "[" after a value's backslashes: keep them, and the tag
            extra = slashes if tag else int(slashes == bracket - match.start())
        else:
            continue
        pieces += [text[done:bracket], "\\" * extra]
        done = bracket
    return "".join(pieces) + text[done:]


def plain_text(cell: RenderableType) -> RenderableType:
    """A ``str`` as :class:`rich.text.Text` (shown as it is, brackets and all), anything else
    unchanged: for table cells and keys that hold names from data or paths."""
    return Text(cell) if isinstance(cell, str) else cell


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
        grid.add_row(plain_text(key), plain_text(value))
    return grid


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
