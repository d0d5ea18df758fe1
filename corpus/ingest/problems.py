"""Unknown or malformed records: stop at the first (``strict``) or skip and count them."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path


class IngestError(ValueError):
    """A record cannot be imported; the message names the file and line."""


@dataclass
class Problems:
    """Where records were refused. ``strict``: the first one raises :class:`IngestError`;
    otherwise each is skipped and counted by reason (``skipped``), the first few kept with
    their location (``examples``)."""

    strict: bool = False
    skipped: Counter[str] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)
    max_examples: int = 10

    def report(self, path: Path | str, line: int | None, reason: str) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        if self.strict:
            raise IngestError(f"{where}: {reason} (drop --strict to skip such records)")
        self.skipped[reason] += 1
        if len(self.examples) < self.max_examples:
            self.examples.append(f"{where}: {reason}")

    @property
    def total(self) -> int:
        return sum(self.skipped.values())
