"""Help texts of the command-line tools from their docstrings: the reStructuredText markup of
a docstring (double backquotes, ``:func:`...``-style roles) means nothing in a terminal."""

from __future__ import annotations

import re

_ROLE = re.compile(r":(?:func|class|mod|meth|attr|data|exc|obj|ref|doc):`(~?)([^`<]+?)(?:\s*<[^>]*>)?`")


def _role_target(match: re.Match[str]) -> str:
    short, target = match.group(1), match.group(2)
    return target.rsplit(".", 1)[-1] if short else target


def plain(text: str | None) -> str:
    """``text`` with reStructuredText literals and roles as plain words:
    ``python -m x`` -> python -m x, :func:`pkg.f` -> pkg.f, :class:`~pkg.C` -> C."""
    if not text:
        return ""
    return _ROLE.sub(_role_target, text).replace("``", "")
