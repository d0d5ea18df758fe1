"""How many configs of a run a model-guided tuner benchmarks: ``K``, ``P%`` or ``auto``."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

AUTO = "auto"


@dataclass(frozen=True)
class Budget:
    """A parsed ``--budget``: ``count`` extra configs beyond the default (``K``), a
    ``percent`` of the run's configs, or ``auto`` (stop on expected improvement)."""

    text: str
    count: int | None = None
    percent: float | None = None

    @property
    def auto(self) -> bool:
        return self.count is None and self.percent is None

    def extra_configs(self, n_configs: int) -> int | None:
        """Configs benchmarked beyond the default in a run of ``n_configs`` candidates: ``K``,
        or ``ceil(P% x n_configs)`` (at least 1); None for ``auto`` (decided as it goes)."""
        if self.count is not None:
            return self.count
        if self.percent is not None:
            return max(1, math.ceil(self.percent / 100 * n_configs))
        return None

    def most_benchmarked(self, n_configs: int) -> int:
        """The most configs a run of ``n_configs`` compiled candidates benchmarks: the default
        plus :meth:`extra_configs`, at most all of them (all for ``auto``, which decides as
        it goes)."""
        extra = self.extra_configs(n_configs)
        return n_configs if extra is None else min(n_configs, 1 + extra)


def parse_budget(text: str) -> Budget:
    """``"4"`` -> 4 configs beyond the default (at least 1), ``"25%"`` -> a quarter of each
    run's configs, ``"auto"``. Raises ``ValueError`` with a one-line message for anything else."""
    value = text.strip()
    if value == AUTO:
        return Budget(value)
    if re.fullmatch(r"\d+", value):
        if int(value) == 0:  # the default config alone: the model would choose nothing
            raise ValueError(
                f"--budget {text!r}: benchmarks the default config alone, so the model chooses "
                "nothing; give K >= 1 (configs beyond the default), P% or auto"
            )
        return Budget(value, count=int(value))
    match = re.fullmatch(r"(\d+(?:\.\d+)?)%", value)
    if match and 0 < float(match.group(1)) <= 100:
        return Budget(value, percent=float(match.group(1)))
    raise ValueError(
        f"--budget {text!r}: expected K (configs beyond the default, e.g. 4), P% (0 < P <= 100, "
        "e.g. 25%) or auto"
    )
