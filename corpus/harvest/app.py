"""``run_harvest``: from a :class:`HarvestConfig` to a written dataset and a summary."""

from __future__ import annotations

import os
from dataclasses import dataclass

from rich.console import Console

from corpus.device import DeviceFacts, cuda_facts, interpreter_facts
from corpus.harvest.report import HarvestProgress, print_plan, print_summary
from corpus.harvest.runner import (
    Execution,
    Harvester,
    HarvestTotals,
    default_cache_dir,
    existing_ids,
)
from corpus.identity import toolchain_fingerprint
from corpus.plan import PlannedRun, PlanRequest, plan_runs, shard
from corpus.settings import Settings, worker_environment
from corpus.suite.registry import load_suite, select
from corpus.timing import l2_flush_bytes
from schemas.enums import DEVICE_INTERPRETER, Timer

DEFAULT_IR_TARGET = "sm_90"
INTERPRETER_EXCLUDED_DTYPES = ("bfloat16",)
"""Triton's interpreter computes bfloat16 through NumPy, which has no bfloat16."""


@dataclass(frozen=True)
class HarvestConfig:
    """Everything ``python -m corpus.harvest`` accepts, parsed and typed."""

    out: str = "dataset"
    suite: tuple[str, ...] = ("corpus.suite.kernels",)
    families: tuple[str, ...] = ()
    scale: str = "tiny"
    dtypes: tuple[str, ...] = ()
    max_configs: int | None = None
    device: str = "auto"
    target: str | None = None
    workers: int = 2
    shard: tuple[int, int] = (0, 1)
    resume: bool = True
    warmup: int | None = None
    rep: int | None = None
    compile_timeout_s: float = 120.0
    bench_timeout_s: float = 60.0
    timer: str = "auto"
    l2_flush: bool = True
    seed: int = 0
    dry_run: bool = False
    static_stats: bool = True
    pipeline: bool = True
    lookahead: int = 2
    flush_every_s: float = 15.0


class HarvestError(RuntimeError):
    """The harvest cannot start as configured; the message says what to change."""


def resolve_devices(device: str) -> tuple[str, ...]:
    """'auto' | 'cpu' | 'cuda' | 'cuda:0,1' -> benchmark devices."""
    if device == "cpu":
        return (DEVICE_INTERPRETER,)
    import torch

    available = torch.cuda.is_available()
    if device == "auto":
        return tuple(f"cuda:{i}" for i in range(torch.cuda.device_count())) if available else (DEVICE_INTERPRETER,)
    if not available:
        raise HarvestError(f"--device {device}: CUDA is not available here; use --device cpu (the interpreter)")
    if device == "cuda":
        return tuple(f"cuda:{i}" for i in range(torch.cuda.device_count()))
    if device.startswith("cuda:"):
        indices = [int(i) for i in device.removeprefix("cuda:").split(",") if i.strip()]
        bad = [i for i in indices if i >= torch.cuda.device_count()]
        if bad:
            raise HarvestError(f"--device {device}: no GPU {bad[0]} (this machine has {torch.cuda.device_count()})")
        return tuple(f"cuda:{i}" for i in indices)
    raise HarvestError(f"--device {device!r}: expected auto, cpu, cuda or cuda:0,1")


def device_facts(devices: tuple[str, ...]) -> DeviceFacts:
    if devices == (DEVICE_INTERPRETER,):
        return interpreter_facts()
    facts = [cuda_facts(d) for d in devices]
    models = {f.model for f in facts}
    if len(models) > 1:
        raise HarvestError(f"devices {', '.join(devices)} are different models ({', '.join(sorted(models))}); harvest each model separately")
    return facts[0]


def resolve_execution(config: HarvestConfig, settings: Settings, devices: tuple[str, ...], facts: DeviceFacts) -> Execution:
    interpreter = devices == (DEVICE_INTERPRETER,)
    if interpreter:
        timer = Timer.WALL.value
        if config.timer not in ("auto", timer):
            raise HarvestError(f"--timer {config.timer}: the interpreter can only be timed by the wall clock")
    else:
        timer = Timer.CUDA_EVENT.value if config.timer == "auto" else config.timer
    if config.target is not None:
        target = config.target
    else:
        target = DEFAULT_IR_TARGET if interpreter else facts.arch
    flush = config.l2_flush and not interpreter
    return Execution(
        out=config.out,
        suite=config.suite,
        devices=devices,
        target=target,
        workers=max(1, config.workers),
        compile_timeout_s=config.compile_timeout_s,
        bench_timeout_s=config.bench_timeout_s,
        warmup=config.warmup if config.warmup is not None else (1 if interpreter else 10),
        rep=config.rep if config.rep is not None else (3 if interpreter else 50),
        timer=timer,
        l2_flush=flush,
        l2_flush_bytes=l2_flush_bytes(facts.l2_bytes) if flush else 0,
        static_stats=config.static_stats,
        pipeline=config.pipeline,
        lookahead=config.lookahead,
        flush_every_s=config.flush_every_s,
        cache_dir=settings.triton_cache_dir or default_cache_dir(),
    )


def versions() -> dict[str, str]:
    import torch
    import triton

    return {"triton": triton.__version__, "torch": torch.__version__}


@dataclass(frozen=True)
class HarvestOutcome:
    planned: list[PlannedRun]
    skipped_committed: int
    totals: HarvestTotals | None


def run_harvest(config: HarvestConfig, settings: Settings, console: Console | None = None) -> HarvestOutcome:
    """Plan, resume, shard, execute and summarize one harvest invocation."""
    console = console or Console()
    devices = resolve_devices(config.device)
    facts = device_facts(devices)
    interpreter = devices == (DEVICE_INTERPRETER,)
    execution = resolve_execution(config, settings, devices, facts)
    specs = select(load_suite(config.suite), config.families or None)
    toolchain = toolchain_fingerprint(settings.codegen_env, ir_target=execution.target if interpreter else None)
    request = PlanRequest(
        scale=config.scale,
        dtypes=config.dtypes or None,
        excluded_dtypes=INTERPRETER_EXCLUDED_DTYPES if interpreter else (),
        max_configs=config.max_configs,
        seed=config.seed,
        device_model=facts.model,
        toolchain=toolchain,
    )
    planned = shard(plan_runs(specs, request), *config.shard)
    committed = existing_ids(config.out, "runs", "run_id") if config.resume else set()
    todo = [run for run in planned if run.run_id not in committed]
    if config.dry_run:
        print_plan(console, planned, committed, facts, execution)
        return HarvestOutcome(planned, len(planned) - len(todo), None)
    console.print(
        f"harvest: {len(todo)} run(s) to do, {len(planned) - len(todo)} already committed; "
        f"device {facts.device_name} ({facts.arch}), IR target {execution.target}, "
        f"{execution.workers} compile worker(s), out {config.out}"
    )
    if not todo:
        return HarvestOutcome(planned, len(planned), None)

    def environment_for(interpret: bool) -> dict[str, str]:
        return worker_environment(settings, interpret=interpret, cache_dir=execution.cache_dir or "")

    progress = HarvestProgress(console, todo)
    harvester = Harvester(
        execution,
        specs,
        facts,
        toolchain,
        versions(),
        environment_for,
        on_config=progress.config_done,
        on_run=progress.run_done,
    )
    with progress:
        totals = harvester.run(todo)
    print_summary(console, totals, progress.elapsed_s, config.out)
    return HarvestOutcome(planned, len(planned) - len(todo), totals)


def default_workers() -> int:
    """Compile workers: one per CPU core the benchmark worker leaves free, 2 to 16."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(2, min(16, cores - 1))
