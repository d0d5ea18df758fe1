"""``python -m corpus.bench calibrate``: measure the per-config costs behind the dry run's
duration estimates (:mod:`corpus.harvest.estimate`) and write them to
``corpus/harvest/calibration.py``.

- compile: ``--compile-configs`` seeded random valid configs of every family at ``--scale``
  (default: default), compiled for sm_90 in compile workers exactly as a harvest does; the
  CPU seconds each request costs the worker and its tools (ptxas, cuobjdump), median per family.
  CPU time, not wall time, so a loaded machine measures what a core would do;
- static stats: one batched ``nvdisasm`` over all those cubins' code, CPU seconds per config;
- interpreter lanes: a real tiny harvest (``--lane-configs`` configs per run, every family
  unless ``--families``): each run's benchmark-lane seconds per config (wall seconds: on a busy
  machine they are too high, so calibrate on a quiet one); the first run, whose lane time
  includes the benchmark worker's start, is left out;
- start-up: the seconds until a fork server, a compile worker and an interpreter benchmark
  worker are ready.
"""

from __future__ import annotations

import os
import random
import resource
import statistics
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

from rich.console import Console

from corpus.harvest.app import INTERPRETER_TIMING, HarvestConfig, run_harvest
from corpus.harvest.compile_worker import CompileInit, CompileOutcome, CompileTask
from corpus.harvest.estimate import Costs, duration_text, launches_per_config
from corpus.harvest.measure_worker import MeasureInit
from corpus.harvest.runner import COMPILE_FACTORY, MEASURE_FACTORY
from corpus.harvest.settings import Settings, worker_environment
from corpus.harvest.workers import WorkerProcess
from corpus.suite.registry import load_suite, select
from extract.sass import disassembler_arch, instruction_stats_many

SUITE = ("corpus.suite.kernels",)
CALIBRATION_MODULE = Path(__file__).resolve().parents[1] / "harvest" / "calibration.py"


@dataclass(frozen=True)
class CalibrateConfig:
    """What ``python -m corpus.bench calibrate`` measures (see the module docstring)."""

    families: tuple[str, ...] = ()
    """Families to measure (default: all)."""
    compile_configs: int = 3
    lane_configs: int = 2
    scale: str = "default"
    workers: int = 2
    seed: int = 0
    out: str | None = None
    """Where to write the calibration module (default: the package's own)."""


def _compile_tasks(config: CalibrateConfig) -> list[CompileTask]:
    specs = load_suite(SUITE)
    if config.families:
        specs = select(specs, config.families)
    rng = random.Random(config.seed)
    tasks = []
    for spec in specs.values():
        pairs = [(dims, dtype) for dims in spec.shapes_for(config.scale) for dtype in spec.dtypes]
        rng.shuffle(pairs)
        chosen: list[CompileTask] = []
        for dims, dtype in pairs:
            valid = spec.valid_configs(dims, dtype)
            if valid:
                chosen.append(CompileTask(spec.name, dims, dtype, 0, rng.choice(valid)))
            if len(chosen) == config.compile_configs:
                break
        tasks.extend(chosen)
    return tasks


def measure_compiles(config: CalibrateConfig, settings: Settings) -> tuple[dict[str, float], list[CompileOutcome]]:
    """family -> median CPU seconds per config, and every outcome."""
    tasks = _compile_tasks(config)
    environment = worker_environment(settings, interpret=False, cache_dir=tempfile.mkdtemp(prefix="calibrate-cache-"))
    init = CompileInit(SUITE, "sm_90", static_stats=True)
    workers = [WorkerProcess(f"calibrate-{i}", COMPILE_FACTORY, init, environment) for i in range(config.workers)]
    try:
        with ThreadPoolExecutor(config.workers) as pool:
            # one compile each first: a worker's first compile pays one-time set-up (lazy imports,
            # the backend's first use) that a harvest's thousands of compiles do not
            list(pool.map(lambda worker: worker.call(tasks[0], 600), workers))
            chunks = [tasks[i :: config.workers] for i in range(config.workers)]
            done = pool.map(lambda pair: [pair[0].call(task, 600) for task in pair[1]], zip(workers, chunks))
            outcomes = [outcome for chunk in done for outcome in chunk]
    finally:
        for worker in workers:
            worker.close()
    by_family: dict[str, list[float]] = defaultdict(list)
    ordered = [task for i in range(config.workers) for task in tasks[i :: config.workers]]
    for task, outcome in zip(ordered, outcomes):
        if outcome.status == "ok":
            by_family[task.family].append(outcome.cpu_s)
    return {family: statistics.median(values) for family, values in sorted(by_family.items())}, outcomes


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure_sass(outcomes: list[CompileOutcome]) -> float:
    """CPU seconds per config of one batched nvdisasm over ``outcomes``' codes."""
    codes = {str(index): o.sass_code for index, o in enumerate(outcomes) if o.sass_code}
    if not codes:
        return 0.0
    begin = _children_cpu()
    instruction_stats_many(codes, disassembler_arch(90))
    return (_children_cpu() - begin) / len(codes)


def measure_start(settings: Settings) -> float:
    """Seconds until a compile worker (forked from a fresh fork server when this process has
    none yet) and an interpreter benchmark worker have started, side by side."""
    scratch = tempfile.mkdtemp(prefix="calibrate-start-")
    compile_worker = WorkerProcess(
        "start-compile", COMPILE_FACTORY, CompileInit(SUITE, "sm_90"), worker_environment(settings, interpret=False, cache_dir=scratch)
    )
    measure = WorkerProcess(
        "start-measure",
        MEASURE_FACTORY,
        MeasureInit(SUITE, "interpreter", "thread_cpu", 0, False),
        worker_environment(settings, interpret=True, cache_dir=scratch),
    )
    begin = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda worker: worker.start(), (compile_worker, measure)))
    elapsed = time.perf_counter() - begin
    compile_worker.close()
    measure.close()
    return elapsed


def measure_lanes(config: CalibrateConfig, settings: Settings) -> tuple[dict[str, float], dict[str, float], float]:
    """('family shape dtype' -> lane seconds per config, family -> seconds per unit of launch
    work, the harvest's wall seconds) from a tiny interpreter harvest."""
    root = Path(tempfile.mkdtemp(prefix="calibrate-lanes-"))
    quiet = Console(file=open(os.devnull, "w"), width=120)  # noqa: SIM115 - lives for the process
    harvest = HarvestConfig(
        out=str(root / "tiny"),
        families=config.families,
        scale="tiny",
        max_configs=config.lane_configs,
        device="cpu",
        workers=config.workers,
        static_stats=True,
    )
    begin = time.perf_counter()
    outcome = run_harvest(harvest, replace(settings, triton_cache_dir=None), quiet)
    wall = time.perf_counter() - begin
    assert outcome.totals is not None, "the calibration harvest did nothing"
    per_config: dict[str, float] = {}
    per_work: dict[str, list[float]] = defaultdict(list)
    for result in outcome.totals.results[1:]:  # the first run's lane time includes the worker's start
        measured = sum(1 for row in result.rows if row["status"] != "skipped")
        if not measured:
            continue
        seconds = result.bench_s / measured
        per_config[result.run.label] = seconds
        if result.run.launch_work > 0:
            per_work[result.run.family].append(seconds / result.run.launch_work)
    rates = {family: statistics.median(values) for family, values in sorted(per_work.items())}
    return dict(sorted(per_config.items())), rates, wall


def calibrate(config: CalibrateConfig, settings: Settings, console: Console) -> Costs:
    """Measure everything, write the calibration module, print a summary; returns the costs."""
    load = os.getloadavg()[0]
    console.print(f"calibrating on {os.cpu_count()} core(s), load {load:.2f}")
    start_s = measure_start(settings)
    console.print(f"worker start-up: {start_s:.2f} s")
    compile_s, outcomes = measure_compiles(config, settings)
    console.print(
        f"compile: {len(outcomes)} configs of {len(compile_s)} families, median {statistics.median(compile_s.values()):.3f} CPU s/config "
        f"(from {min(compile_s.values()):.3f} to {max(compile_s.values()):.3f})"
    )
    sass_s = measure_sass(outcomes)
    console.print(f"batched nvdisasm: {1e3 * sass_s:.1f} CPU ms/config")
    lane_s, rates, wall = measure_lanes(config, settings)
    console.print(f"interpreter lanes: {len(lane_s)} runs, tiny harvest took {duration_text(wall)}")
    measured = (
        f"{datetime.now(timezone.utc):%Y-%m-%d}, {os.cpu_count()} cores, load {load:.1f}, "
        f"{config.compile_configs} compiles/family at {config.scale} scale, {config.lane_configs} configs/tiny run"
    )
    costs = Costs(
        compile_cpu_s={family: round(value, 4) for family, value in compile_s.items()},
        sass_cpu_s=round(sass_s, 5),
        interpreter_config_s={key: round(value, 4) for key, value in lane_s.items()},
        interpreter_s_per_work={family: float(f"{value:.4g}") for family, value in rates.items()},
        interpreter_launches=launches_per_config(*INTERPRETER_TIMING),
        start_s=round(start_s, 2),
        measured=measured,
    )
    path = Path(config.out) if config.out else CALIBRATION_MODULE
    path.write_text(calibration_source(costs))
    console.print(f"wrote {path}", markup=False)
    return costs


def calibration_source(costs: Costs) -> str:
    """The calibration module's text for ``costs``."""
    lines = [
        '"""Per-config costs measured by ``python -m corpus.bench calibrate`` (generated; do not',
        'edit: re-run the command). The dry run\'s duration estimates apply them to the plan',
        f'(:mod:`corpus.harvest.estimate`). Measured: {costs.measured}."""',
        "",
        "from __future__ import annotations",
        "",
        "from corpus.harvest.estimate import Costs",
        "",
        "COSTS = Costs(",
        f"    compile_cpu_s={_mapping(costs.compile_cpu_s)},",
        f"    sass_cpu_s={costs.sass_cpu_s!r},",
        f"    interpreter_config_s={_mapping(costs.interpreter_config_s)},",
        f"    interpreter_s_per_work={_mapping(costs.interpreter_s_per_work)},",
        f"    interpreter_launches={costs.interpreter_launches!r},",
        f"    start_s={costs.start_s!r},",
        f"    measured={costs.measured!r},",
        ")",
        "",
    ]
    return "\n".join(lines)


def _mapping(values: dict[str, float]) -> str:
    body = "".join(f"        {key!r}: {value!r},\n" for key, value in values.items())
    return "{\n" + body + "    }"
