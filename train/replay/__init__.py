"""Offline replay of tuners on a dataset's held-out runs: how many benchmarks each strategy
needs to reach a given regret (``python -m train.replay``; see :mod:`train.replay.app`)."""

from __future__ import annotations

from train.replay.app import ReplayConfig, run_replay
from train.replay.strategies import STRATEGIES, RunOutcome

__all__ = ["STRATEGIES", "ReplayConfig", "RunOutcome", "run_replay"]
