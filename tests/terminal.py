"""Running a command as if its stdout were a terminal of a given width (rich reads
``TTY_COMPATIBLE`` and ``COLUMNS``), and reading back what it printed without its styles."""

from __future__ import annotations

import re

import pytest

_STYLE = re.compile(r"\x1b\[[0-9;]*m")


def as_terminal(monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    """Make every rich ``Console()`` created from now on in this test take stdout (and
    stderr) for a terminal ``width`` columns wide, without colours."""
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.setenv("NO_COLOR", "1")


def unstyled(text: str) -> list[str]:
    """``text``'s lines without ANSI styles (bold stays on with ``NO_COLOR``)."""
    return _STYLE.sub("", text).splitlines()
