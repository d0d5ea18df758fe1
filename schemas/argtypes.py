"""Argument types shared by every command-line tool of the project.

Each factory returns a callable for ``argparse``'s ``type=``: it converts the text and
refuses values out of range at parse time, so a nonsense value (``--compile-timeout -1``,
``--lr nan``, ``--hidden -4``) stops the command with argparse's one-line usage error
(exit 2) before any work starts, instead of being used, committed or trusted later.
They live in ``schemas`` because that is the one package every other package may import.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path


def _bounds_text(
    minimum: float | None, maximum: float | None, exclusive_minimum: bool, exclusive_maximum: bool = False
) -> str:
    parts = []
    if minimum is not None:
        parts.append(f"{'>' if exclusive_minimum else '>='} {minimum:g}")
    if maximum is not None:
        parts.append(f"{'<' if exclusive_maximum else '<='} {maximum:g}")
    return " and ".join(parts)


def integer(minimum: int | None = None, maximum: int | None = None) -> Callable[[str], int]:
    """An integer in ``[minimum, maximum]`` (either bound optional)."""
    bounds = _bounds_text(minimum, maximum, False)
    wanted = f"an integer {bounds}".rstrip()

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}") from None
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}")
        return value

    parse.__name__ = "integer"
    return parse


def number(
    minimum: float | None = None,
    maximum: float | None = None,
    *,
    exclusive_minimum: bool = False,
    exclusive_maximum: bool = False,
) -> Callable[[str], float]:
    """A finite float in the given range (``exclusive_minimum``/``exclusive_maximum``: strictly
    above ``minimum`` / below ``maximum``).

    NaN and infinities are always refused: no option of this project means anything with them.
    """
    bounds = _bounds_text(minimum, maximum, exclusive_minimum, exclusive_maximum)
    wanted = f"a finite number {bounds}".rstrip()

    def parse(text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}") from None
        below = minimum is not None and (
            value <= minimum if exclusive_minimum else value < minimum
        )
        above = maximum is not None and (value >= maximum if exclusive_maximum else value > maximum)
        if not math.isfinite(value) or below or above:
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}")
        return value

    parse.__name__ = "number"
    return parse


positive_int = integer(minimum=1)
"""1, 2, 3, ...: counts that must not be zero (epochs, seeds, workers, passes)."""

non_negative_int = integer(minimum=0)
"""0, 1, 2, ...: counts where 0 means "none" or "never" (warm-up launches, recycling)."""

positive_float = number(minimum=0.0, exclusive_minimum=True)
"""A finite number > 0: durations and rates (timeouts, learning rates)."""

non_negative_float = number(minimum=0.0)
"""A finite number >= 0: durations where 0 has a documented meaning (no limit, flush now)."""


def non_empty_csv(text: str) -> tuple[str, ...]:
    """A comma-separated list with at least one non-blank item, items stripped.

    An empty string is refused rather than read as "no filter": ``--families ""`` from a
    script whose variable was unset must not silently select everything.
    """
    items = tuple(part.strip() for part in text.split(",") if part.strip())
    if not items:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {text!r}")
    return items


def non_empty_text(text: str) -> str:
    """A string that is not empty or blank: a path or URL argument given as ``""`` (an unset
    variable in a script) must not mean the current directory."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a non-empty value, got ''")
    return text


def non_empty_path(text: str) -> Path:
    """:func:`non_empty_text` as a :class:`~pathlib.Path`."""
    return Path(non_empty_text(text))
