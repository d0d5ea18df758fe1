"""Checks the reader's dependencies when ``schemas`` is first imported, before any of its
modules runs ``import pyarrow``.

``schemas/__init__.py`` imports this module first (it sorts first among the package's imports),
so a Python without kernel-corpus's dependencies (most often a shell where the clone's venv was
not activated) stops with one line saying what to do rather than a traceback; the check itself
lives here so that the package's own imports need no ``# noqa: E402``.
"""

from __future__ import annotations

from schemas.extras import require_reader

require_reader()
