"""The line every command of the project prints when it stops on an error (then exits 2).

One function, so that the harvest, ``corpus.record``, ``corpus.ingest`` and ``python -m
schemas`` say it the same way: ``error: <message>``, "error" in red on a terminal, never
wrapped. The message is printed as text, not as rich markup: it often holds a path, a module's
own message or a value the user typed, where brackets (``data[/x]``, ``[bold]``) are not markup
(rich would drop them, or stop with a MarkupError traceback).
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text


def print_error(console: Console, message: str) -> None:
    """Print ``error: message`` on ``console`` (for stderr: ``Console(stderr=True)``)."""
    console.print(Text.assemble(("error", "red"), ": ", message), soft_wrap=True)
