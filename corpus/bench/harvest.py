"""Harvest throughput: naive compile-then-benchmark loop vs the pipeline, sequential vs
interleaved timing, and compile scaling.

Every harvest pass runs the same plan into a fresh dataset; compile workers always compile
(``always_compile``), so no pass profits from another's compiles. The naive pass is what
Triton's autotuner does: one compiler, and each config is compiled and then benchmarked before
the next starts. The pipeline pass compiles ahead on ``workers`` processes while the benchmark
worker runs. The timing comparison runs the pipeline with the version-1 schedule (each config
timed in one go right after its check) and with interleaved passes, the same reps in total,
alternating the two so the machine's drifting load falls on both alike.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from rich.console import Console

from corpus.harvest.app import HarvestConfig, run_harvest
from corpus.harvest.compile_worker import CompileInit, CompileTask
from corpus.harvest.runner import COMPILE_FACTORY
from corpus.harvest.settings import Settings, worker_environment
from corpus.harvest.workers import WorkerProcess
from corpus.suite.registry import load_suite, select


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
    machine's load falls on both alike."""


@dataclass(frozen=True)
class PassResult:
    seconds: float
    configs: int
    compile_s: float
    bench_s: float
    bookkeeping_ms_per_config: float


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
    )


def _compile_tasks(config: HarvestBenchConfig) -> list[CompileTask]:
    specs = select(load_suite(("corpus.suite.kernels",)), config.families)
    tasks = []
    for spec in specs.values():
        dims = spec.shapes_for("tiny")[0]
        dtype = "float32" if "float32" in spec.dtypes else spec.dtypes[0]
        for candidate in spec.valid_configs(dims, dtype):
            tasks.append(CompileTask(spec.name, dims, dtype, 0, candidate))
    return tasks[: config.compile_tasks]


def compile_wall_s(config: HarvestBenchConfig, settings: Settings, workers: int) -> float:
    """Wall time to compile the task list on ``workers`` already-started processes."""
    from concurrent.futures import ThreadPoolExecutor

    tasks = _compile_tasks(config)
    environment = worker_environment(
        settings, interpret=False, cache_dir=tempfile.mkdtemp(prefix="bench-cache-")
    )
    init = CompileInit(("corpus.suite.kernels",), config.target, static_stats=True)
    processes = [
        WorkerProcess(f"bench-compile-{i}", COMPILE_FACTORY, init, environment)
        for i in range(workers)
    ]
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda p: p.start(), processes))
        start = time.perf_counter()
        chunks = [tasks[i::workers] for i in range(workers)]
        list(pool.map(lambda pc: [pc[0].call(t, 600) for t in pc[1]], zip(processes, chunks)))
        elapsed = time.perf_counter() - start
    for process in processes:
        process.close()
    return elapsed


def bench_timing(
    config: HarvestBenchConfig,
    base: HarvestConfig,
    settings: Settings,
    root: Path,
    console: Console,
) -> float:
    """Sequential (version-1) vs interleaved timing on one plan with the same reps in total;
    prints both and returns the throughput ratio interleaved / sequential."""
    quiet = Console(file=open("/dev/null", "w"), width=120)  # noqa: SIM115 - lives for the process
    modes = {"sequential": False, "interleaved": True}
    results: dict[str, list[PassResult]] = {mode: [] for mode in modes}
    order = [
        mode
        for round_ in range(config.timing_rounds)
        for mode in (list(modes) if round_ % 2 == 0 else list(modes)[::-1])
    ]
    for index, mode in enumerate(order):
        run = replace(
            base,
            out=str(root / f"{mode}-{index}"),
            pipeline=True,
            workers=config.workers,
            interleave=modes[mode],
        )
        results[mode].append(_harvest_pass(run, settings, quiet))
    rates = {}
    for mode, passes in results.items():
        seconds = sum(p.seconds for p in passes)
        configs = sum(p.configs for p in passes)
        rates[mode] = configs / seconds
        bench = sum(p.bench_s for p in passes)
        console.print(
            f"{mode + ' timing':<46} {seconds:7.1f} s  {rates[mode]:5.2f} configs/s  bench {bench:6.1f} s  ({len(passes)} harvest(s))"
        )
    ratio = rates["interleaved"] / rates["sequential"]
    console.print(f"[bold]interleaved / sequential throughput: {ratio:.3f}[/] (target >= 0.90)")
    return ratio


def bench_harvest(config: HarvestBenchConfig, settings: Settings, console: Console) -> None:
    quiet = Console(file=open("/dev/null", "w"), width=120)  # noqa: SIM115 - lives for the process
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
        f"workload: families {', '.join(config.families)}, tiny scale, float32, {config.max_configs} configs/run, interpreter"
    )
    if config.timing_only:
        bench_timing(config, base, fresh, root, console)
        return
    naive = _harvest_pass(base, fresh, quiet)
    piped = _harvest_pass(
        replace(base, out=str(root / "pipeline"), workers=config.workers, pipeline=True),
        fresh,
        quiet,
    )
    for label, result in (
        ("naive loop (1 compiler, compile then bench)", naive),
        (f"pipeline ({config.workers} compile workers)", piped),
    ):
        console.print(
            f"{label:<46} {result.seconds:7.1f} s  {result.configs / result.seconds:5.2f} configs/s  "
            f"compile {result.compile_s:6.1f} s  bench {result.bench_s:6.1f} s  bookkeeping {result.bookkeeping_ms_per_config:.2f} ms/config"
        )
    console.print(
        f"[bold]pipeline speed-up over naive loop: {naive.seconds / piped.seconds:.2f}x[/] (target >= 1.5x)"
    )
    one = compile_wall_s(config, fresh, 1)
    many = compile_wall_s(config, fresh, config.workers)
    console.print(
        f"compile scaling on {config.compile_tasks} configs ({config.target}): 1 worker {one:.1f} s, "
        f"{config.workers} workers {many:.1f} s -> [bold]{one / many:.2f}x[/] (target >= 1.7x on 2 workers)"
    )
    console.print(
        f"benchmark lane busy {100 * piped.bench_s / piped.seconds:.0f}% of the pipeline pass (interpreter)"
    )
    bench_timing(config, base, fresh, root, console)
