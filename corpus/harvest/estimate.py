"""How long a planned harvest will take, from per-config costs measured on real compiles and
interpreter runs (:mod:`corpus.harvest.calibration`, written by ``python -m corpus.bench
calibrate``).

It extends the shard balancer's cost model (:attr:`corpus.harvest.plan.PlannedRun.estimated_cost`:
per run, valid configs x a fixed per-config cost, plus launch work) into seconds on two sides
that run at once:

- compile: every valid config costs its family's measured CPU seconds (Triton's compile for the
  IR target, ptxas, IR graphs, ``cuobjdump``) plus its share of the batched ``nvdisasm``; the
  pool's ``workers`` processes share that, one core each;
- benchmark lanes: on the interpreter, each run's configs cost the lane seconds measured for
  that (family, shape, dtype), or the family's seconds per unit of launch work for shapes never
  measured; on a GPU, nothing can be measured here, so the lane side is the balancer's roofline
  with stated rates (:data:`GPU_RATES`).

Runs go to lanes as the scheduler hands them out (plan order, to whichever lane is free), and
the harvest takes as long as the slower side, at least the machine's CPU work spread over its
cores (interpreter lanes compete with the compilers for cores), plus worker start-up.
"""

from __future__ import annotations

import heapq
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from corpus.harvest.plan import PlannedRun


@dataclass(frozen=True)
class GpuRates:
    """The lane side on a GPU, assumed (not measured here): ``config_s`` per config (requests to
    the worker, the correctness check against the torch reference, bookkeeping), ``launch_s``
    per launch (launch latency plus the L2 flush before each timed rep) and ``bytes_per_s``
    (effective DRAM bandwidth applied to the launch work, in bytes-equivalent)."""

    config_s: float = 0.05
    launch_s: float = 40e-6
    bytes_per_s: float = 2.0e12


GPU_RATES = GpuRates()


@dataclass(frozen=True)
class Costs:
    """Measured per-config costs (see :mod:`corpus.harvest.calibration` for where and when).

    ``compile_cpu_s``: family -> CPU seconds per config in a compile worker for the IR target
    (sm_90). ``sass_cpu_s``: CPU seconds per config of the batched ``nvdisasm``.
    ``interpreter_config_s``: 'family shape dtype' -> benchmark-lane seconds per config on the
    interpreter; ``interpreter_s_per_work``: family -> those seconds per unit of launch work
    (for shapes never measured). ``interpreter_launches``: launches per config behind those
    figures. ``start_s``: worker start-up, paid once per harvest. ``measured``: where and when."""

    compile_cpu_s: Mapping[str, float]
    sass_cpu_s: float
    interpreter_config_s: Mapping[str, float]
    interpreter_s_per_work: Mapping[str, float]
    interpreter_launches: int
    start_s: float
    measured: str = ""

    def compile_s(self, family: str) -> float:
        """CPU seconds of one config of ``family`` (the median family's when never measured)."""
        known = self.compile_cpu_s.get(family)
        return (known if known is not None else statistics.median(self.compile_cpu_s.values())) + self.sass_cpu_s

    def interpreter_s(self, run: PlannedRun, launches: int) -> float:
        """Lane seconds per config of ``run`` on the interpreter with ``launches`` per config."""
        key = f"{run.family} {run.shape_name} {run.dtype}"
        per_config = self.interpreter_config_s.get(key)
        if per_config is None:
            rate = self.interpreter_s_per_work.get(run.family)
            if rate is None:
                rate = statistics.median(self.interpreter_s_per_work.values())
            per_config = rate * run.launch_work
        return per_config * launches / self.interpreter_launches


@dataclass(frozen=True)
class LaneEstimate:
    """One benchmark device: the runs it would take and their estimated seconds."""

    device: str
    runs: int
    configs: int
    seconds: float


@dataclass(frozen=True)
class HarvestEstimate:
    """Estimated durations in seconds: ``compile_cpu_s`` in total, ``compile_s`` on ``workers``
    processes, each lane's, and ``total_s`` for the harvest (the slower side, at least all CPU
    work over ``cores``, plus start-up). ``basis`` says what the lane side rests on."""

    runs: int
    configs: int
    """Configs benchmarked (at most, under a budget)."""
    compile_cpu_s: float
    workers: int
    cores: int
    compile_s: float
    lanes: list[LaneEstimate] = field(default_factory=list)
    total_s: float = 0.0
    basis: str = ""
    compiled: int | None = None
    """Configs compiled, when a budget benchmarks fewer (None: every compiled config is)."""


def valid_configs(run: PlannedRun) -> int:
    """Configs of ``run`` that are compiled and measured (the rest are recorded as skipped)."""
    return sum(1 for planned in run.configs if planned.skip_reason is None)


def launches_per_config(warmup: int, passes: int, reps_per_pass: int) -> int:
    """Launches a measured config gets: the correctness check, the warmup, the timed reps."""
    return 1 + warmup + passes * reps_per_pass


def estimate_harvest(
    runs: Sequence[PlannedRun],
    *,
    devices: Sequence[str],
    workers: int,
    cores: int,
    launches: int,
    interpreter: bool,
    costs: Costs,
    gpu: GpuRates = GPU_RATES,
    benchmarked: Callable[[int], int] | None = None,
) -> HarvestEstimate:
    """Estimate a harvest of ``runs`` on ``devices`` (benchmark lanes) with ``workers`` compile
    processes on a machine of ``cores`` cores; ``launches`` per measured config.
    ``benchmarked``: a run's compiled configs -> the most it benchmarks (a ``--budget``;
    :meth:`train.guide.Budget.most_benchmarked`); None: all of them."""
    measured = [(benchmarked or _all)(valid_configs(run)) for run in runs]
    compile_cpu = sum(valid_configs(run) * costs.compile_s(run.family) for run in runs)
    lane_of_run = [
        _lane_seconds(run, count, launches, interpreter, costs, gpu) for run, count in zip(runs, measured)
    ]
    lanes = _schedule(devices, lane_of_run, measured)
    compile_s = compile_cpu / max(1, workers)
    slowest_lane = max((lane.seconds for lane in lanes), default=0.0)
    cpu_work = compile_cpu + (sum(lane_of_run) if interpreter else 0.0)  # interpreter lanes are CPU work too
    total = max(compile_s, slowest_lane, cpu_work / max(1, cores)) + costs.start_s if runs else 0.0
    basis = (
        f"interpreter lanes measured ({costs.measured})"
        if interpreter
        else f"GPU lanes assumed: {gpu.config_s * 1e3:g} ms/config, {gpu.launch_s * 1e6:g} us/launch, "
        f"{gpu.bytes_per_s / 1e12:g} TB/s"
    )
    compiled = sum(valid_configs(run) for run in runs)
    return HarvestEstimate(
        runs=len(runs),
        configs=sum(measured),
        compile_cpu_s=compile_cpu,
        workers=workers,
        cores=cores,
        compile_s=compile_s,
        lanes=lanes,
        total_s=total,
        basis=basis,
        compiled=compiled if benchmarked is not None else None,
    )


def _all(configs: int) -> int:
    return configs


def _lane_seconds(
    run: PlannedRun, count: int, launches: int, interpreter: bool, costs: Costs, gpu: GpuRates
) -> float:
    if interpreter:
        return count * costs.interpreter_s(run, launches)
    return count * (gpu.config_s + launches * (gpu.launch_s + run.launch_work / gpu.bytes_per_s))


def _schedule(devices: Sequence[str], seconds: Sequence[float], configs: Sequence[int]) -> list[LaneEstimate]:
    """Lane totals when runs (each ``seconds`` and benchmarked ``configs``) are handed out in
    plan order to the lane free first (what :class:`corpus.harvest.scheduler.Scheduler` does)."""
    free = [(0.0, index) for index in range(len(devices))]
    totals = [[0.0, 0, 0] for _ in devices]
    for cost, count in zip(seconds, configs):
        at, index = heapq.heappop(free)
        totals[index][0] += cost
        totals[index][1] += 1
        totals[index][2] += count
        heapq.heappush(free, (at + cost, index))
    return [LaneEstimate(device, int(runs_), int(configs), total) for device, (total, runs_, configs) in zip(devices, totals)]


def duration_text(seconds: float) -> str:
    """'45 s', '12 min', '3.4 h', '9 days'."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:,.0f} days"


def describe(estimate: HarvestEstimate, where: str) -> list[str]:
    """Lines for the dry run: the total, the compile side and each lane."""
    if not estimate.runs:
        return [f"estimated duration {where}: nothing to do"]
    lines = [
        f"estimated duration {where}: {duration_text(estimate.total_s)} for {estimate.runs:,} run(s), "
        + (
            f"{estimate.configs:,} measured config(s)"
            if estimate.compiled is None
            else f"at most {estimate.configs:,} of {estimate.compiled:,} compiled config(s) benchmarked"
        ),
        f"  compile: {duration_text(estimate.compile_cpu_s)} of CPU on {estimate.workers} worker(s) -> "
        f"{duration_text(estimate.compile_s)}",
    ]
    lines += [
        f"  {lane.device}: {lane.runs:,} run(s), {lane.configs:,} config(s) -> {duration_text(lane.seconds)}"
        for lane in estimate.lanes
    ]
    lines.append(f"  basis: measured compile costs; {estimate.basis}")
    return lines
