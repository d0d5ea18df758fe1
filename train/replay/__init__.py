"""Offline replay of tuners on a dataset's held-out runs: how many benchmarks each strategy
needs to reach a given regret (``python -m train.replay``; see :mod:`train.replay.app`).

The names below are imported on first use: ``python -m train.replay`` imports this package
before its ``__main__`` can catch a Ctrl-C, and importing torch takes seconds, so an eager
import turned an early Ctrl-C into a KeyboardInterrupt traceback."""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "ReplayConfig": "train.replay.app",
    "run_replay": "train.replay.app",
    "STRATEGIES": "train.replay.strategies",
    "RunOutcome": "train.replay.strategies",
}

__all__ = ["STRATEGIES", "ReplayConfig", "RunOutcome", "run_replay"]


def __getattr__(name: str) -> Any:
    """The public names of :mod:`train.replay.app` and :mod:`train.replay.strategies`."""
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
