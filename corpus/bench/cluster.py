"""``python -m corpus.bench cluster``: tail idle time of static shards vs dynamic scheduling.

A simulation on a local Ray cluster: no kernel is compiled or timed. The default-scale plan is
planned for a GPU model (cheap), and each run gets a simulated duration: its estimated cost
(:attr:`PlannedRun.estimated_cost`) scaled so the whole plan takes ``work_s`` lane-seconds,
times a seeded log-normal error (``noise``), because a real run's time differs from any
estimate (configs that fail fast, autotuning spaces that prune, compile-bound tiny runs). Lane
actors then sleep those durations:

- ``static hash``: ``--shard i/N`` as it used to be, runs split by run_id hash;
- ``static cost``: ``--shard i/N`` now, runs split by estimated cost (:func:`shard_assignment`);
- ``dynamic``: the Ray harvest's own feeding loop (:func:`corpus.harvest.cluster.feed_runs`),
  longest estimate first to whichever lane is free.

Tail idle time is the lane-seconds lanes sit idle between finishing their own work and the
end of the whole plan; all idle time adds the gaps between runs (lanes x makespan - work),
which is where dynamic scheduling pays its per-run round trip. The ratio of all idle time,
static / dynamic, is what dynamic scheduling saves.
"""

from __future__ import annotations

import io
import math
import random
import time
from collections import deque
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from corpus.harvest.cluster import Feed, RunDone, connect, feed_runs
from corpus.harvest.plan import PlannedRun, PlanRequest, plan_runs, shard_assignment
from corpus.suite.registry import load_suite


@dataclass(frozen=True)
class ClusterBenchConfig:
    lanes: int = 4
    work_s: float = 40.0
    """Simulated lane-seconds of the whole plan (the ideal makespan is work_s / lanes)."""
    noise: float = 0.5
    """Sigma of the log-normal error of real durations around the estimate (0: exact)."""
    scale: str = "default"
    seed: int = 0
    address: str = "local"


@dataclass(frozen=True)
class Schedule:
    name: str
    makespan_s: float
    idle_s: float
    """Tail idle lane-seconds: sum over lanes of (end of the plan - end of the lane's work)."""
    lost_s: float
    """All idle lane-seconds: lanes x makespan - the plan's work (tail idle plus the gaps
    between runs that scheduling itself costs)."""


class SleepLane:
    """A lane that sleeps each run's simulated duration instead of measuring it."""

    def __init__(self, durations: dict[str, float]) -> None:
        self.durations = durations
        self.last_end = 0.0

    def describe(self) -> str:
        return "sleep"

    def execute(
        self, run: PlannedRun, upcoming: PlannedRun | None = None, known: frozenset[str] = frozenset()
    ) -> RunDone:
        """What :meth:`corpus.harvest.cluster.Lane.execute` is to the feeding loop; ``upcoming``
        and ``known`` (for claims) are for a lane that measures."""
        seconds = self.durations[run.run_id]
        time.sleep(seconds)
        self.last_end = time.time()
        return RunDone(run.run_id, run.label, "local", len(run.configs), {}, seconds)

    def execute_all(self, runs: list[PlannedRun]) -> float:
        for run in runs:
            self.execute(run)
        return self.last_end

    def finished_at(self) -> float:
        return self.last_end


def simulated_durations(runs: list[PlannedRun], config: ClusterBenchConfig) -> dict[str, float]:
    """run_id -> seconds: the estimate scaled to ``work_s`` in all, times a seeded log-normal
    error (renormalized, so every schedule does the same total work)."""
    rng = random.Random(config.seed)
    raw = {r.run_id: r.estimated_cost * math.exp(rng.gauss(0.0, config.noise)) for r in runs}
    scale = config.work_s / sum(raw.values())
    return {run_id: cost * scale for run_id, cost in raw.items()}


def _schedule(name: str, begin: float, ends: list[float], work_s: float) -> Schedule:
    end = max(ends)
    return Schedule(
        name, end - begin, sum(end - e for e in ends), len(ends) * (end - begin) - work_s
    )


def run_static(
    actors: list, runs: list[PlannedRun], assignment: dict[str, int], name: str, work_s: float
) -> Schedule:
    import ray

    parts: list[list[PlannedRun]] = [[] for _ in actors]
    for run in runs:
        parts[assignment[run.run_id]].append(run)
    begin = time.time()
    ends = ray.get([actor.execute_all.remote(part) for actor, part in zip(actors, parts)])
    return _schedule(
        name, begin, [end if part else begin for end, part in zip(ends, parts)], work_s
    )


def run_dynamic(actors: list, runs: list[PlannedRun], work_s: float) -> Schedule:
    import ray

    feed = Feed(deque(sorted(runs, key=lambda r: (-r.estimated_cost, r.run_id))))
    begin = time.time()
    feed_runs(feed, actors, Console(file=io.StringIO()))
    ends = ray.get([actor.finished_at.remote() for actor in actors])
    return _schedule("dynamic", begin, [end or begin for end in ends], work_s)


def bench_cluster(config: ClusterBenchConfig, console: Console) -> list[Schedule]:
    """Plan, simulate durations, run the three schedules on ``config.lanes`` sleeping actors
    and print makespan, tail idle time and the static / dynamic ratios."""
    import ray

    request = PlanRequest(
        config.scale, None, (), None, config.seed, "simulated GPU", {"triton": "simulated"}, "sm_90"
    )
    runs = plan_runs(load_suite(), request)
    durations = simulated_durations(runs, config)
    longest = max(durations.values())
    console.print(
        f"cluster bench (simulated: lanes sleep each run's duration): {len(runs)} runs of the "
        f"{config.scale} plan, {config.work_s:g} lane-s of work on {config.lanes} lanes "
        f"(ideal makespan {config.work_s / config.lanes:.2f} s, longest run {longest:.2f} s), "
        f"duration = estimate x lognormal(sigma {config.noise:g})"
    )
    connect(config.address)
    lane = ray.remote(num_cpus=0, max_concurrency=2)(SleepLane)
    results = []
    hashed = {r.run_id: int(r.run_id[:8], 16) % config.lanes for r in runs}
    for name, assignment in (
        ("static, hash of run_id", hashed),
        ("static, balanced by cost", shard_assignment(runs, config.lanes)),
    ):
        actors = [lane.remote(durations) for _ in range(config.lanes)]
        ray.get([a.describe.remote() for a in actors])  # started before the clock runs
        results.append(run_static(actors, runs, assignment, name, config.work_s))
        for actor in actors:
            ray.kill(actor)
    actors = [lane.remote(durations) for _ in range(config.lanes)]
    ray.get([a.describe.remote() for a in actors])
    results.append(run_dynamic(actors, runs, config.work_s))
    for actor in actors:
        ray.kill(actor)
    dynamic = results[-1]
    table = Table(title="static shards vs dynamic scheduling (lane-seconds idle)")
    for column in ("schedule", "makespan s", "tail idle", "all idle", "x dynamic"):
        table.add_column(column, justify="left" if column == "schedule" else "right")
    for result in results:
        ratio = result.lost_s / dynamic.lost_s if dynamic.lost_s > 0 else math.inf
        table.add_row(
            result.name,
            f"{result.makespan_s:.2f}",
            f"{result.idle_s:.2f}",
            f"{result.lost_s:.2f}",
            f"{ratio:.1f}x",
        )
    console.print(table)
    static = results[1]
    console.print(
        f"cost-balanced static shards idle {static.lost_s / max(dynamic.lost_s, 1e-9):.1f}x "
        f"as many lane-seconds as dynamic scheduling (makespan "
        f"{static.makespan_s / dynamic.makespan_s:.2f}x); 'all idle' = lanes x makespan - work, "
        "'x dynamic' its ratio to dynamic's"
    )
    return results
