"""Imports a third-party kernel project that is not installed (on purpose)."""

from __future__ import annotations

import kernel_corpus_absent_project  # noqa: F401
