"""Interleaved timing passes over the configs of one run.

Timing every rep of a config back to back lets one burst of machine load, or a clock or
thermal drift, shift that config alone and reorder a run. Instead the configs that passed the
correctness check are timed in ``passes`` rounds; each round visits every config still alive
once, in its own seeded random order, and takes ``reps_per_pass`` reps of it. A disturbance
then lands on a few reps of many configs instead of all reps of one, and the median over all
passes shrugs it off. The order depends only on the seed, so a harvest is repeatable.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TypeVar

Key = TypeVar("Key", bound=Hashable)


@dataclass(frozen=True)
class PassPlan:
    """How a run's configs are timed: ``passes`` rounds of ``reps_per_pass`` reps each."""

    passes: int
    reps_per_pass: int
    seed: int

    def __post_init__(self) -> None:
        if self.passes < 1 or self.reps_per_pass < 1:
            raise ValueError(
                f"timing needs at least one pass and one rep per pass, got {self.passes} x {self.reps_per_pass}"
            )

    @property
    def reps(self) -> int:
        """Timed reps per config over all passes."""
        return self.passes * self.reps_per_pass


def pass_order(keys: Sequence[Key], seed: int, index: int) -> list[Key]:
    """Visiting order of pass ``index``: a shuffle seeded by (seed, index), independent of
    Python's hash randomization, so every process and rerun agrees."""
    order = list(keys)
    random.Random(f"interleave/{seed}/{index}").shuffle(order)
    return order


TimeReps = Callable[[Key, int], "list[float] | None"]
"""Times ``reps`` reps of one config and returns their samples (ms), or None when the config
failed (the callback records why); a failed config is left out of later passes."""


def run_passes(keys: Sequence[Key], time_reps: TimeReps, plan: PassPlan) -> dict[Key, list[float]]:
    """Time ``keys`` in interleaved passes; returns each surviving key's samples in timing
    order (pass by pass). Keys that failed in any pass are absent."""
    if len(set(keys)) != len(keys):
        raise ValueError("run_passes: keys repeat; each config is timed once per pass")
    samples: dict[Key, list[float]] = {key: [] for key in keys}
    for index in range(plan.passes):
        for key in pass_order([k for k in keys if k in samples], plan.seed, index):
            taken = time_reps(key, plan.reps_per_pass)
            if taken is None:
                del samples[key]
            else:
                samples[key].extend(taken)
    return samples


def run_sequential(
    keys: Sequence[Key], time_reps: TimeReps, plan: PassPlan
) -> dict[Key, list[float]]:
    """The version-1 schedule, kept to measure what interleaving costs: each config gets all
    its reps at once, in the given order."""
    samples: dict[Key, list[float]] = {}
    for key in keys:
        taken = time_reps(key, plan.reps)
        if taken is not None:
            samples[key] = list(taken)
    return samples
