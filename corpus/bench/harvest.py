"""Harvest throughput (``python -m corpus.bench harvest``): the pipeline against a naive
compile-then-benchmark loop, compile scaling over workers, the static-stats share of
compile-worker time, the harvest against plain ``triton.autotune`` on the same configs, and
sequential vs interleaved timing.

Made for a shared machine: every comparison runs its two sides in the same invocation,
alternating their order round by round (``--rounds``) so drifting load falls on both alike, and
reports the median of the per-round ratios with their range; the load average is printed with
every figure. Every harvest pass runs the same plan into a fresh dataset with Triton's cache
bypassed (``always_compile``), so no pass profits from another's compiles.

- naive: what Triton's autotuner does, one compiler and each config compiled and then
  benchmarked before the next starts; pipeline: ``--workers`` compile processes running ahead
  of the benchmark lane;
- compile scaling: the same compile tasks on 1 and on ``--workers`` started processes; the
  static-stats share is (cuobjdump in the workers + one batched nvdisasm over their cubins) over
  (the workers' request time + that nvdisasm), from the same tasks. nvdisasm's start-up
  (~0.2 s) is paid once per batch, so the share falls with the batch: a harvest's batches hold
  up to 256 codes (``corpus.harvest.sass_batch``); measured quiet on 2 cores, 13% with 16
  tasks, 7% with the default 64;
- autotune: the plan's runs, each autotuned with ``triton.autotune`` on the interpreter in an
  already started process, over the same configs with the same launches (1 check + the
  harvest's timed reps, thread CPU time): in-process seconds per config against the pipeline
  pass's (which also compiles for the IR target, extracts IR graphs and static stats, checks
  every config against its reference and writes the dataset).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from rich.console import Console

from corpus.bench.autotune import FACTORY as AUTOTUNE_FACTORY
from corpus.bench.autotune import AutotuneTask
from corpus.harvest.app import INTERPRETER_TIMING, HarvestConfig, plan_request, run_harvest
from corpus.harvest.compile_worker import CompileInit, CompileOutcome, CompileTask
from corpus.harvest.plan import plan_runs
from corpus.harvest.runner import COMPILE_FACTORY
from corpus.harvest.settings import Settings, worker_environment
from corpus.harvest.workers import WorkerProcess
from corpus.suite.registry import load_suite, select
from extract.compile import parse_target
from extract.sass import disassembler_arch, instruction_stats_many

SUITE = ("corpus.suite.kernels",)


@dataclass(frozen=True)
class HarvestBenchConfig:
    families: tuple[str, ...]
    max_configs: int
    workers: int
    compile_tasks: int
    target: str
    timing_only: bool = False
    """Only the sequential vs interleaved timing comparison."""
    timing_rounds: int = 2
    """Harvests per timing schedule, alternated (seq, inter, inter, seq, ...) so drift in the
    machine's load falls on both alike (0: skip the timing comparison)."""
    rounds: int = 3
    """Rounds of each comparison (naive/pipeline, 1/N compile workers, harvest/autotune)."""
    autotune: bool = True
    """Compare with plain ``triton.autotune`` on the interpreter."""


@dataclass(frozen=True)
class PassResult:
    seconds: float
    configs: int
    compile_s: float
    bench_s: float
    bookkeeping_ms_per_config: float
    static_stats_s: float = 0.0


def load_text() -> str:
    """The load average, as ``uptime`` prints it."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f}"


def ratio_text(ratios: Sequence[float]) -> str:
    """Median of per-round ratios with their range."""
    if len(ratios) == 1:
        return f"{ratios[0]:.2f}x (1 round)"
    return f"{statistics.median(ratios):.2f}x (median of {len(ratios)} rounds, {min(ratios):.2f}-{max(ratios):.2f})"


def alternate(rounds: int, sides: Sequence[Callable[[int], object]]) -> list[list[object]]:
    """Run each side once per round, the order reversed every other round; results per side."""
    results: list[list[object]] = [[] for _ in sides]
    for round_ in range(rounds):
        order = list(range(len(sides)))
        if round_ % 2:
            order.reverse()
        for index in order:
            results[index].append(sides[index](round_))
    return results


def _harvest_pass(base: HarvestConfig, settings: Settings, quiet: Console) -> PassResult:
    start = time.perf_counter()
    outcome = run_harvest(base, settings, quiet)
    seconds = time.perf_counter() - start
    totals = outcome.totals
    assert totals is not None and totals.configs_done, "the benchmark harvest did nothing"
    return PassResult(
        seconds,
        totals.configs_done,
        totals.compile_s,
        totals.bench_s,
        1e3 * totals.bookkeeping_s / totals.configs_done,
        totals.static_stats_s,
    )


def _compile_tasks(config: HarvestBenchConfig) -> list[CompileTask]:
    specs = select(load_suite(SUITE), config.families)
    tasks = []
    for spec in specs.values():
        dims = spec.shapes_for("tiny")[0]
        dtype = "float32" if "float32" in spec.dtypes else spec.dtypes[0]
        for candidate in spec.valid_configs(dims, dtype):
            tasks.append(CompileTask(spec.name, dims, dtype, 0, candidate))
    return tasks[: config.compile_tasks]


@dataclass(frozen=True)
class CompilePass:
    """Wall seconds to compile the task list on started workers, and the outcomes."""

    seconds: float
    outcomes: list[CompileOutcome]


def compile_pass(config: HarvestBenchConfig, settings: Settings, workers: int) -> CompilePass:
    """Compile the task list on ``workers`` already-started processes."""
    tasks = _compile_tasks(config)
    environment = worker_environment(settings, interpret=False, cache_dir=tempfile.mkdtemp(prefix="bench-cache-"))
    init = CompileInit(SUITE, config.target, static_stats=True)
    processes = [WorkerProcess(f"bench-compile-{i}", COMPILE_FACTORY, init, environment) for i in range(workers)]
    try:
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(lambda p: p.start(), processes))
            start = time.perf_counter()
            chunks = [tasks[i::workers] for i in range(workers)]
            done = list(pool.map(lambda pc: [pc[0].call(t, 600) for t in pc[1]], zip(processes, chunks)))
            elapsed = time.perf_counter() - start
    finally:
        for process in processes:
            process.close()
    return CompilePass(elapsed, [outcome for chunk in done for outcome in chunk])


def static_share(result: CompilePass, target: str) -> tuple[float, float]:
    """(share of static stats in compile-worker time, seconds of the batched nvdisasm)."""
    codes = {str(i): o.sass_code for i, o in enumerate(result.outcomes) if o.sass_code}
    begin = time.perf_counter()
    if codes:
        instruction_stats_many(codes, disassembler_arch(int(parse_target(target).arch)))
    batch_s = time.perf_counter() - begin
    stats = sum(o.stats_s for o in result.outcomes) + batch_s
    worker = sum(o.worker_s for o in result.outcomes) + batch_s
    return (stats / worker if worker else 0.0), batch_s


def autotune_seconds(config: HarvestBenchConfig, base: HarvestConfig, worker: WorkerProcess) -> tuple[float, int]:
    """In-process seconds of plain ``triton.autotune`` over the plan's runs, and their configs."""
    specs = select(load_suite(SUITE), config.families)
    request = plan_request(base, True, "interpreter", {"bench": "autotune"}, config.target)
    _, passes, reps = INTERPRETER_TIMING
    seconds = configs = 0
    for run in plan_runs(specs, request):
        chosen = tuple(p.config for p in run.configs if p.skip_reason is None)
        if chosen:
            seconds += worker.call(AutotuneTask(run.family, run.dims, run.dtype, run.seed, chosen, passes * reps), 600)
            configs += len(chosen)
    return seconds, configs


def bench_pipeline(config: HarvestBenchConfig, base: HarvestConfig, settings: Settings, root: Path, console: Console) -> list[PassResult]:
    """Naive vs pipeline, alternating; returns the pipeline passes."""
    quiet = Console(file=open(os.devnull, "w"), width=120)  # noqa: SIM115 - lives for the process

    def naive(round_: int) -> PassResult:
        return _harvest_pass(replace(base, out=str(root / f"naive-{round_}")), settings, quiet)

    def piped(round_: int) -> PassResult:
        run = replace(base, out=str(root / f"pipeline-{round_}"), workers=config.workers, pipeline=True)
        return _harvest_pass(run, settings, quiet)

    naive_passes, piped_passes = alternate(config.rounds, [naive, piped])
    for label, passes in (
        ("naive loop (1 compiler, compile then bench)", naive_passes),
        (f"pipeline ({config.workers} compile workers)", piped_passes),
    ):
        seconds = statistics.median(p.seconds for p in passes)
        result = passes[0]
        console.print(
            f"{label:<46} median {seconds:6.1f} s  {result.configs / seconds:5.2f} configs/s  "
            f"compile {statistics.median(p.compile_s for p in passes):6.1f} s  bench {statistics.median(p.bench_s for p in passes):6.1f} s  "
            f"static stats {statistics.median(p.static_stats_s for p in passes):5.1f} s"
        )
    speedups = [n.seconds / p.seconds for n, p in zip(naive_passes, piped_passes)]
    console.print(f"[bold]pipeline speed-up over naive loop: {ratio_text(speedups)}[/] (target >= 1.5x); {load_text()}")
    busy = [100 * p.bench_s / p.seconds for p in piped_passes]
    console.print(f"benchmark lane busy {statistics.median(busy):.0f}% of the pipeline pass (interpreter)")
    return piped_passes


def bench_compile(config: HarvestBenchConfig, settings: Settings, console: Console) -> None:
    """Compile scaling, 1 worker vs ``config.workers``, and the static stats' share of the
    compile workers' time; prints both with their targets."""
    one, many = alternate(config.rounds, [lambda _: compile_pass(config, settings, 1), lambda _: compile_pass(config, settings, config.workers)])
    ratios = [a.seconds / b.seconds for a, b in zip(one, many)]
    console.print(
        f"compile scaling on {config.compile_tasks} configs ({config.target}): 1 worker {statistics.median(p.seconds for p in one):.1f} s, "
        f"{config.workers} workers {statistics.median(p.seconds for p in many):.1f} s -> [bold]{ratio_text(ratios)}[/] "
        f"(target >= 1.7x on 2 workers); {load_text()}"
    )
    shares = [static_share(result, config.target) for result in many]
    console.print(
        f"[bold]static stats share of compile-worker time: {100 * statistics.median(s for s, _ in shares):.1f}%[/] "
        f"(target <= 10%; cuobjdump per config + one nvdisasm per {len(many[0].outcomes)} cubins, "
        f"{statistics.median(b for _, b in shares):.2f} s); {load_text()}"
    )


def bench_autotune(config: HarvestBenchConfig, base: HarvestConfig, settings: Settings, piped: list[PassResult], console: Console) -> None:
    """Plain ``triton.autotune`` on the workload's configs (:mod:`corpus.bench.autotune`) vs the
    pipeline passes ``piped``, seconds per config; prints the ratio with its target."""
    environment = worker_environment(settings, interpret=True, cache_dir=tempfile.mkdtemp(prefix="bench-autotune-"))
    worker = WorkerProcess("bench-autotune", AUTOTUNE_FACTORY, SUITE, environment)
    try:
        worker.start()
        runs = [autotune_seconds(config, base, worker) for _ in range(config.rounds)]
    finally:
        worker.close()
    autotune_per_config = statistics.median(seconds / configs for seconds, configs in runs)
    harvest_per_config = [p.seconds / p.configs for p in piped]
    ratios = [h / autotune_per_config for h in harvest_per_config]
    console.print(
        f"plain triton.autotune on the same configs (interpreter, in process): {1e3 * autotune_per_config:.0f} ms/config; "
        f"harvest pipeline {1e3 * statistics.median(harvest_per_config):.0f} ms/config with IR and stats for {config.target}"
    )
    console.print(f"[bold]harvest / autotune per config: {ratio_text(ratios)}[/] (target <= 4x); {load_text()}")


def bench_timing(config: HarvestBenchConfig, base: HarvestConfig, settings: Settings, root: Path, console: Console) -> float:
    """Sequential (version-1) vs interleaved timing on one plan with the same reps in total;
    prints both and returns the throughput ratio interleaved / sequential."""
    quiet = Console(file=open(os.devnull, "w"), width=120)  # noqa: SIM115 - lives for the process
    modes = {"sequential": False, "interleaved": True}

    def side(mode: str) -> Callable[[int], PassResult]:
        def run(round_: int) -> PassResult:
            harvest = replace(base, out=str(root / f"{mode}-{round_}"), pipeline=True, workers=config.workers, interleave=modes[mode])
            return _harvest_pass(harvest, settings, quiet)

        return run

    sequential, interleaved = alternate(config.timing_rounds, [side("sequential"), side("interleaved")])
    rates = {}
    for mode, passes in (("sequential", sequential), ("interleaved", interleaved)):
        seconds = sum(p.seconds for p in passes)
        rates[mode] = sum(p.configs for p in passes) / seconds
        bench = sum(p.bench_s for p in passes)
        console.print(
            f"{mode + ' timing':<46} {seconds:7.1f} s  {rates[mode]:5.2f} configs/s  bench {bench:6.1f} s  ({len(passes)} harvest(s))"
        )
    ratio = rates["interleaved"] / rates["sequential"]
    console.print(f"[bold]interleaved / sequential throughput: {ratio:.3f}[/] (target >= 0.90); {load_text()}")
    return ratio


def bench_harvest(config: HarvestBenchConfig, settings: Settings, console: Console) -> None:
    root = Path(tempfile.mkdtemp(prefix="harvest-bench-"))
    base = HarvestConfig(
        out=str(root / "naive"),
        families=config.families,
        scale="tiny",
        dtypes=("float32",),
        max_configs=config.max_configs,
        device="cpu",
        target=config.target,
        workers=1,
        pipeline=False,
        flush_every_s=15.0,
    )
    fresh = replace(settings, triton_cache_dir=None)
    console.print(
        f"workload: families {', '.join(config.families)}, tiny scale, float32, {config.max_configs} configs/run, "
        f"interpreter, {config.rounds} round(s); {os.cpu_count()} cores, {load_text()}",
        markup=False,  # families as typed: text
    )
    if config.timing_only:
        bench_timing(config, base, fresh, root, console)
        return
    piped = bench_pipeline(config, base, fresh, root, console)
    bench_compile(config, fresh, console)
    if config.autotune:
        bench_autotune(config, base, fresh, piped, console)
    if config.timing_rounds:
        bench_timing(config, base, fresh, root, console)
