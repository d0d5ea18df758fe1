"""``run_harvest``: from a :class:`HarvestConfig` to a written dataset and a summary."""

from __future__ import annotations

import contextlib
import os
import posixpath
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.padding import Padding
from rich.text import Text

from corpus.destination import check_out, out_as_found_unless_work, probe_out
from corpus.harvest.checks import (
    HarvestInputError,
    check_dtypes,
    check_interpreter,
    check_plan,
    check_target,
    harvest_lock,
    load_families,
    plan_lock_name,
)
from corpus.harvest.claims import RunClaims, committed_harvests
from corpus.harvest.device import (
    DeviceFacts,
    cuda_facts,
    cuda_lanes,
    interpreter_facts,
    target_mismatch,
)
from corpus.harvest.estimate import (
    HarvestEstimate,
    describe,
    estimate_harvest,
    launches_per_config,
    valid_configs,
)
from corpus.harvest.identity import toolchain_fingerprint
from corpus.harvest.pending import PendingFinish, files_of
from corpus.harvest.plan import PlannedRun, PlanRequest, plan_runs, shard
from corpus.harvest.report import (
    BestOfRun,
    HarvestProgress,
    long_run_notice,
    print_plan,
    print_start,
    print_summary,
    shard_text,
)
from corpus.harvest.resume import ResumePlan, resume_plan
from corpus.harvest.rows import ir_target_name
from corpus.harvest.runner import (
    Execution,
    Harvester,
    HarvestTotals,
    bench_settings,
)
from corpus.harvest.scratch import scratch_directory
from corpus.harvest.settings import (
    K8S_INDEX,
    SLURM_TASK_ID,
    Settings,
    array_shard,
    array_source,
    triton_cache_dir,
    worker_environments,
)
from corpus.harvest.shard_plans import ShardPlan, check_shard_plan
from corpus.harvest.timing import l2_flush_bytes
from corpus.harvest.workers import start_fork_server
from corpus.suite.spec import INTERPRETER_EXCLUDED_DTYPES
from corpus.terminal import key_values, plural, print_trimmed
from schemas.card import write_card
from schemas.compact import compact
from schemas.console import print_labelled
from schemas.enums import DEVICE_INTERPRETER, Timer
from schemas.errors import DatasetError
from schemas.machine import machine_label
from schemas.writer import new_writer_id

if TYPE_CHECKING:
    from corpus.harvest.guided import RunGuide
    from train.guide import Budget, GuideModel

DEFAULT_IR_TARGET = "sm_90"


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
    workers: int | None = None
    """Compile worker processes; None: :func:`default_workers` for the number of lanes."""
    shard: tuple[int, int] | str = (0, 1)
    """(index, count), or "auto": from the job array's environment (:func:`array_shard`)."""
    resume: bool = True
    warmup: int | None = None
    passes: int | None = None
    """Interleaved timing passes over a run's configs (None: the device's default)."""
    rep: int | None = None
    """Timed reps per config in each pass (None: the device's default)."""
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
    interleave: bool = True
    """False: the version-1 timing schedule (benchmarks only)."""
    dedupe: bool = True
    """Time configs with an identical binary and launch once."""
    compact: bool = True
    """Merge the files this harvest wrote when it finishes."""
    record_host: bool = False
    """Record the host name in runs.hostname; by default an anonymous machine id."""
    recycle_runs: int = 200
    """Replace a measure worker after it set up this many runs (0: never)."""
    recycle_rss_gb: float = 16.0
    """Replace a measure worker whose resident memory passes this many GiB (0: no limit)."""
    ray: str | None = None
    """Ray cluster address ("auto", "local", "ray://host:10001"): run on Ray (:mod:`.cluster`)."""
    command: str = ""
    """The command line that started the harvest, for the dataset card."""
    allow_empty: bool = False
    """A selection that plans no runs is an error unless this is set."""
    allow_repeat: bool = False
    """Run even while an identical harvest is writing into the same dataset."""
    force_out: bool = False
    """Write into an ``out`` that is a non-empty directory holding no dataset, replacing a
    README.md / card.json there that kernel-corpus did not write."""
    rank_with: str | None = None
    """A ``python -m train`` checkpoint directory: benchmark only what it chooses of each run."""
    budget: str | None = None
    """With ``rank_with``: ``K``, ``P%`` or ``auto`` (:func:`train.guide.parse_budget`)."""
    allow_unseen_arch: bool = False
    """With ``rank_with``: rank with a model that never saw the device's arch or the IR's
    compile target (with one warning) instead of refusing the harvest (:func:`load_guide`)."""
    estimate_for: tuple[int, int] | None = None
    """With ``dry_run``: also estimate the duration on a box of (CPU cores, GPUs)."""

    @property
    def claims_runs(self) -> bool:
        """Whether the lanes claim each run before measuring it (:mod:`corpus.harvest.claims`):
        a harvest that writes and resumes; ``--no-resume`` and ``--allow-repeat`` measure again
        on purpose."""
        return self.resume and not self.allow_repeat and not self.dry_run


class HarvestError(RuntimeError):
    """The harvest cannot start as configured; the message says what to change."""


def resolve_devices(device: str) -> tuple[str, ...]:
    """'auto' | 'cpu' | 'cuda' | 'cuda:0,1' -> benchmark devices."""
    if device == "cpu":
        return (DEVICE_INTERPRETER,)
    listed = [i.strip() for i in device.removeprefix("cuda:").split(",")] if device.startswith("cuda:") else []
    twice = sorted({i for i in listed if i and listed.count(i) > 1})
    if twice:
        raise HarvestError(f"--device {device}: GPU {twice[0]} is listed twice; one benchmark lane per GPU")
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


def device_facts(devices: tuple[str, ...], visible: tuple[str, ...] | None = None) -> DeviceFacts:
    """Facts of the lanes' device model; refuses lanes that are one physical GPU (joined by
    UUID, so two visible entries naming one board are caught too) or different models."""
    if devices == (DEVICE_INTERPRETER,):
        return interpreter_facts()
    try:
        cuda_lanes(devices, visible)
    except ValueError as exc:
        raise HarvestError(f"--device {','.join(devices)}: {exc}") from None
    facts = [cuda_facts(d, visible) for d in devices]
    models = {f.model for f in facts}
    if len(models) > 1:
        raise HarvestError(f"devices {', '.join(devices)} are different models ({', '.join(sorted(models))}); harvest each model separately")
    return facts[0]


INTERPRETER_TIMING = (0, 4, 1)
"""Interpreter defaults: warmup launches, interleaved passes, reps per pass. No warmup: the
correctness check just ran the config once, and the interpreter has no caches or clocks to
warm, so those launches go to a fourth pass instead (five launches per config, as in
version 1's check + 1 warmup + 3 reps)."""
GPU_TIMING = (10, 5, 10)
"""GPU defaults: warmup launches, interleaved passes, reps per pass (50 timed reps)."""
INTERPRETER_TIMERS = (Timer.THREAD_CPU.value, Timer.PROCESS_CPU.value, Timer.WALL.value)
GPU_TIMERS = (Timer.CUDA_EVENT.value, Timer.CUDA_GRAPH.value)


def timing_settings(config: HarvestConfig, interpreter: bool) -> tuple[int, int, int]:
    """(warmup launches, interleaved passes, reps per pass): the command line's, else the
    device's defaults (:data:`INTERPRETER_TIMING`, :data:`GPU_TIMING`)."""
    warmup, passes, reps_per_pass = INTERPRETER_TIMING if interpreter else GPU_TIMING
    return (
        config.warmup if config.warmup is not None else warmup,
        config.passes if config.passes is not None else passes,
        config.rep if config.rep is not None else reps_per_pass,
    )


def resolve_timer(requested: str, interpreter: bool) -> str:
    """``--timer`` for the device: 'auto' is thread CPU time on the interpreter (see
    :class:`corpus.harvest.timing.ThreadCpuTimer`) and CUDA events on a GPU."""
    allowed = INTERPRETER_TIMERS if interpreter else GPU_TIMERS
    if requested == "auto":
        return allowed[0]
    if requested not in allowed:
        where = "the interpreter" if interpreter else "a GPU"
        raise HarvestError(f"--timer {requested}: {where} is timed by {' or '.join(allowed)}")
    return requested


def check_numbers(config: HarvestConfig) -> None:
    """The numeric settings are in range. The command line refuses bad values as it parses
    them (:mod:`schemas.argtypes`); this holds the library to the same rules, so that e.g. a
    negative compile timeout can never be committed as ``compile_timeout`` rows that a later
    harvest then trusts as measured."""
    for flag, value, least, strict in (
        ("--warmup", config.warmup, 0, False),
        ("--passes", config.passes, 1, False),
        ("--rep", config.rep, 1, False),
        ("--recycle-runs", config.recycle_runs, 0, False),
        ("--recycle-rss-gb", config.recycle_rss_gb, 0, False),
        ("--compile-timeout", config.compile_timeout_s, 0, True),
        ("--bench-timeout", config.bench_timeout_s, 0, True),
        ("--flush-every", config.flush_every_s, 0, False),
        ("--max-configs", config.max_configs, 1, False),
        ("--workers", config.workers, 1, False),
    ):
        if value is None:
            continue
        if value != value or value in (float("inf"), float("-inf")) or value < least or (strict and value == least):
            bound = f"above {least}" if strict else f"at least {least}"
            raise HarvestError(f"{flag} {value}: must be a finite number {bound}")


def resolve_execution(config: HarvestConfig, settings: Settings, devices: tuple[str, ...], facts: DeviceFacts) -> Execution:
    interpreter = devices == (DEVICE_INTERPRETER,)
    timer = resolve_timer(config.timer, interpreter)
    warmup, passes, reps_per_pass = timing_settings(config, interpreter)
    check_numbers(config)
    if config.target is not None:
        target = config.target
        check_target(target)  # parses, before it is compared with the device's
        if (mismatch := target_mismatch(target, facts)) is not None:
            raise HarvestInputError(f"--target {target}: {mismatch}")
    else:
        target = DEFAULT_IR_TARGET if interpreter else facts.arch
    flush = config.l2_flush and not interpreter
    return Execution(
        out=config.out,
        suite=config.suite,
        devices=devices,
        target=target,
        workers=config.workers if config.workers is not None else default_workers(len(devices)),
        compile_timeout_s=config.compile_timeout_s,
        bench_timeout_s=config.bench_timeout_s,
        warmup=warmup,
        passes=passes,
        reps_per_pass=reps_per_pass,
        interleave=config.interleave,
        dedupe=config.dedupe,
        timer=timer,
        l2_flush=flush,
        l2_flush_bytes=l2_flush_bytes(facts.l2_bytes) if flush else 0,
        static_stats=config.static_stats,
        pipeline=config.pipeline,
        lookahead=config.lookahead,
        flush_every_s=config.flush_every_s,
        cache_dir=settings.triton_cache_dir,  # None: the stable per-toolchain one (run_harvest)
        host=machine_label(record_host=config.record_host),
        recycle_runs=config.recycle_runs,
        recycle_rss_bytes=int(config.recycle_rss_gb * (1 << 30)),
        sm_count=None if interpreter else facts.sm_count,
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


def plan_request(
    config: HarvestConfig,
    interpreter: bool,
    device_model: str,
    toolchain: Mapping[str, Any],
    target: str,
    sm_count: int | None = None,
) -> PlanRequest:
    """What to plan, from the CLI's selection and the device the runs will be measured on
    (``sm_count``: the GPU's, None on the interpreter)."""
    return PlanRequest(
        scale=config.scale,
        dtypes=config.dtypes or None,
        excluded_dtypes=INTERPRETER_EXCLUDED_DTYPES if interpreter else (),
        max_configs=config.max_configs,
        seed=config.seed,
        device_model=device_model,
        toolchain=toolchain,
        target=target,
        sm_count=sm_count,
    )


def run_harvest(config: HarvestConfig, settings: Settings, console: Console | None = None) -> HarvestOutcome:
    """Plan, resume, shard, execute and summarize one harvest invocation. A harvest refused
    before its work leaves ``--out`` as it found it (:func:`out_as_found_unless_work`)."""
    console = console or Console()
    check_guided(config)
    # --out is probed (its table directories made) before some refusals: on Ray, before the
    # lanes start and report what refuses the harvest
    with out_as_found_unless_work(config.out) as work_begins:
        if config.ray is not None:
            from corpus.harvest.cluster import harvest_on_ray  # Ray is an optional extra

            return harvest_on_ray(config, console, work_begins)
        return harvest_here(config, settings, console, work_begins)


def harvest_here(
    config: HarvestConfig, settings: Settings, console: Console, work_begins: Callable[[], None]
) -> HarvestOutcome:
    """:func:`run_harvest` on this machine; ``work_begins``: called once the harvest holds its
    plan lock, before it writes anything of its own."""
    lock_hint = array_hint(config.shard, settings)
    index, count = resolve_shard(config.shard, settings)  # a bad environment stops us first
    # a task's log says which shard it is, and for --shard auto which array task
    this_shard = shard_text(index, count, array_source(settings) if config.shard == "auto" else None)
    config = replace(config, shard=(index, count))
    if not config.dry_run:
        start_fork_server()  # the workers' imports overlap ours (the suite's torch, Triton's key)
    specs = load_families(config.suite, config.families)  # bad input is refused before any work
    check_dtypes(config.dtypes, specs)
    devices = resolve_devices(config.device)
    facts = device_facts(devices, settings.visible_devices)
    interpreter = devices == (DEVICE_INTERPRETER,)
    execution = resolve_execution(config, settings, devices, facts)
    check_target(execution.target)
    if interpreter:
        check_interpreter()
    toolchain = toolchain_fingerprint(settings.codegen_env, ir_target=execution.target if interpreter else None)
    if execution.cache_dir is None:
        execution = replace(execution, cache_dir=triton_cache_dir(settings, toolchain))
    request = plan_request(config, interpreter, facts.model, toolchain, execution.target, execution.sm_count)
    whole = plan_runs(specs, request)
    planned = shard(whole, index, count)
    check_plan(planned, why_empty=_why_empty(config, interpreter), allow_empty=config.allow_empty)
    split = ShardPlan.of(whole, count, config.command) if count > 1 else None
    if split is not None and config.dry_run:  # the refusal the harvest would give, nothing recorded
        check_shard_plan(config.out, index, split, record=False)
    known = committed_harvests(config.out) if config.claims_runs else set()  # before resume reads
    guide = load_guide(config, facts.arch, console, ir_target=execution.target)  # the model is loaded (and refused) before any work
    budgeted = guide is not None
    resumed = resume_plan(config.out, planned, bench_settings(execution), budgeted=budgeted) if config.resume else ResumePlan(list(planned))
    todo = resumed.todo
    committed = {run.run_id for run in planned} - {run.run_id for run in todo}
    benchmarked = None if guide is None else guide.budget.most_benchmarked
    here = estimate_here(todo, execution, interpreter, benchmarked)
    notice = long_run_notice(here.configs, interpreter, here.total_s)
    if config.dry_run:
        check_out(config.out, force=config.force_out)  # what the harvest itself would refuse
        budget = None if guide is None else guide.plan_text([valid_configs(run) for run in todo])
        if this_shard is not None:
            print_trimmed(console, key_values([("shard", this_shard)]))
        left_out = left_out_text(specs, request, whole)
        print_plan(console, planned, committed, facts, execution, notice, budget, left_out)
        print_estimates(console, config, specs, request, here, benchmarked)
        return HarvestOutcome(planned, len(planned) - len(todo), None)
    probe_out(config.out, force=config.force_out)
    if split is not None:  # shards given other selection flags would lose and repeat runs
        check_shard_plan(config.out, index, split, record=True)
    # Under a budget "N to measure" is what is compiled; say what is benchmarked before the
    # work, not only in the summary at the end.
    budget = None if guide is None or not todo else guide.plan_text([valid_configs(run) for run in todo])
    print_start(console, resumed, facts, execution, config.out, notice, this_shard, budget)
    if not todo:
        finish_nothing_to_do(config, planned, console, resumed)
        return HarvestOutcome(planned, len(planned), None)

    # The lock stops an accidental second identical harvest; run claims stop overlapping ones
    # from measuring a run at once; workers' scratch files live in a directory this process
    # owns and removes, even when it had to kill a worker.
    writer_id = new_writer_id()
    harvester: Harvester | None = None
    # Outermost, so a stop during the last step (compaction, card) counts the runs committed too
    stopped_with = said_on_stop(lambda: harvester.totals.runs_done if harvester is not None else 0)
    with stopped_with, harvesting(config, planned, writer_id, console, lock_hint, work_begins), scratch_directory() as scratch:
        progress = HarvestProgress(console, todo)
        harvester = Harvester(
            execution,
            specs,
            facts,
            toolchain,
            versions(),
            worker_environments(settings, cache_dir=execution.cache_dir or "", scratch_dir=scratch),
            on_config=progress.config_done,
            on_run=progress.run_done,
            claims=RunClaims.for_harvest(config.out, known, enabled=config.claims_runs, budgeted=budgeted),
            writer_id=writer_id,
            guide=guide,
        )
        with progress:
            totals = harvester.run(todo)
        print_summary(console, totals, progress.elapsed_s, config.out)
        if guide is not None:
            guide.print_summary(console, [BestOfRun.of(result) for result in totals.results])
    return HarvestOutcome(planned, len(planned) - len(todo), totals)


@contextlib.contextmanager
def said_on_stop(committed: Callable[[], int]) -> Iterator[None]:
    """Around a harvest's measuring: Ctrl-C or a termination signal that stops it leaves with
    the count of runs it committed (``committed()``: those it finished, all committed before
    the stop propagates), which :func:`runs_committed` reads for the line said on the way out.
    Nested, the larger count holds (a Ray driver counts the runs it heard of, then what its
    lanes committed while they closed)."""
    try:
        yield
    except KeyboardInterrupt as stop:
        try:
            count = committed()
        except Exception:  # an unreadable count must not replace the stop: the inner one holds
            count = 0
        setattr(stop, _RUNS_COMMITTED, max(runs_committed(stop), count))
        raise


_RUNS_COMMITTED = "runs_committed"


def runs_committed(stop: KeyboardInterrupt) -> int:
    """How many runs the harvest that ``stop`` ended committed (0 when it stopped before
    measuring: planning, starting workers)."""
    return int(getattr(stop, _RUNS_COMMITTED, 0))


@contextlib.contextmanager
def harvesting(
    config: HarvestConfig,
    planned: list[PlannedRun],
    writer_id: str,
    console: Console,
    lock_hint: str = "",
    work_begins: Callable[[], None] | None = None,
) -> Iterator[None]:
    """Around a harvest's measuring (the body): hold the plan lock (:func:`harvest_lock`),
    record ``writer_id`` as pending (:mod:`corpus.harvest.pending`) before the body writes, and
    when the body returns, do the last step (:func:`finish`) for the files whose names start
    with ``writer_id`` and those of killed harvests of the plan, then clear their record. A
    body that raises leaves the record, so a rerun finishes the job. ``writer_id``: the one
    writer of a local harvest, or the prefix every lane writer of a Ray harvest shares.
    ``lock_hint``: ends the refusal when an identical harvest holds the plan lock.
    ``work_begins``: called once the lock is held (a refusal of the lock is the last one)."""
    with harvest_lock(config.out, planned, allow_repeat=config.allow_repeat, hint=lock_hint) as lock_warning:
        if work_begins is not None:
            work_begins()
        if lock_warning:
            print_labelled(console, "warning", "yellow", lock_warning)
        pending = None if config.allow_repeat else PendingFinish.of(config.out, plan_lock_name(planned))
        before = pending.writers() if pending else []
        if pending:
            pending.add(writer_id)  # before the first file
        yield
        finish(config, console, files_of(config.out, [writer_id, *before]))
        if pending:
            pending.remove([*before, writer_id])


def finish(config: HarvestConfig, console: Console, files: list[str]) -> None:
    """A harvest's last step: merge ``files`` (what it, and killed predecessors of its plan,
    wrote) unless ``--no-compact``, and refresh the dataset card."""
    if config.compact:
        compact_own_files(config.out, files, console)
    refresh_card(config, console)


def finish_interrupted(config: HarvestConfig, planned: list[PlannedRun], console: Console) -> None:
    """Every planned run is committed: complete the last step of an earlier harvest of this
    plan that was killed before it finished (its compaction and the card). Nothing to do when
    none was, and when an identical harvest holds the plan lock (it finishes the job)."""
    if config.allow_repeat:
        return
    try:
        with harvest_lock(config.out, planned, allow_repeat=False):
            pending = PendingFinish.of(config.out, plan_lock_name(planned))
            before = pending.writers() if pending else []
            if not before:
                return
            console.print(
                f"finishing {len(before)} interrupted harvest(s) of these runs: compaction and card"
            )
            finish(config, console, files_of(config.out, before))
            pending.remove(before)  # type: ignore[union-attr]
    except HarvestInputError:  # the plan lock is held: that harvest finishes
        return


def finish_nothing_to_do(
    config: HarvestConfig, planned: list[PlannedRun], console: Console, resumed: ResumePlan | None = None
) -> None:
    """Every planned run is committed: finish an interrupted earlier harvest's last step
    (:func:`finish_interrupted`), then say that nothing was measured, and how to measure again
    (a rerun that printed only its header left the user wondering whether it had done anything).
    ``resumed``: the resume plan, whose configs an earlier budget left unbenchmarked are named
    (a rerun under a larger --budget found "nothing to do" and was told to use --no-resume,
    which benchmarks the budget's choice again)."""
    finish_interrupted(config, planned, console)
    if resumed is not None and resumed.budget_skipped:
        how = resumed.budget_skip_text()
    else:
        how = "--no-resume measures them again"
    console.print(
        f"nothing to do: every planned run ({len(planned):,}) is already committed in {config.out}; {how}",
        markup=False,  # a path: "runs[x]" is text
    )


def check_guided(config: HarvestConfig) -> None:
    """``--rank-with`` and ``--budget`` go together; ``--allow-unseen-arch`` needs them."""
    if (config.rank_with is None) != (config.budget is None):
        given, missing = ("--rank-with", "--budget") if config.rank_with else ("--budget", "--rank-with")
        raise HarvestError(f"{given} needs {missing} (e.g. --rank-with results/checkpoint --budget 4)")
    if config.allow_unseen_arch and config.rank_with is None:
        raise HarvestError(
            "--allow-unseen-arch ranks with the model of --rank-with: add --rank-with MODEL --budget K, "
            "or drop --allow-unseen-arch"
        )


class GuideRefused(HarvestError):
    """``--rank-with`` names a model that cannot rank for the harvest's device or IR target
    (:func:`train.guide.arch_refusal`), and ``--allow-unseen-arch`` was not given."""


def load_guide_inputs(config: HarvestConfig) -> tuple[GuideModel, Budget] | None:
    """The model and budget of ``--rank-with``/``--budget`` (None without them); a bad budget
    or model directory is a :class:`HarvestError` naming it."""
    if config.rank_with is None or config.budget is None:
        return None
    # train (torch) is loaded only for a guided harvest
    from train.guide import load_model, parse_budget

    try:
        budget = parse_budget(config.budget)
    except ValueError as exc:
        raise HarvestError(str(exc)) from None
    try:
        model = load_model(config.rank_with)
    except (OSError, ValueError, KeyError) as exc:
        text = str(exc)
        # load_model's messages start with the path: "--rank-with X: X: no ..." said it twice
        named = text.startswith(str(Path(config.rank_with)))
        raise HarvestError(f"--rank-with {text}" if named else f"--rank-with {config.rank_with}: {text}") from None
    return model, budget


def load_guide(
    config: HarvestConfig,
    arch: str,
    console: Console,
    inputs: tuple[GuideModel, Budget] | None = None,
    ir_target: str | None = None,
) -> RunGuide | None:
    """The :class:`corpus.harvest.guided.RunGuide` of ``--rank-with``/``--budget`` (None without
    them; errors as :func:`load_guide_inputs`, which ``inputs``, already loaded, saves). A model
    that refuses the device's ``arch`` or the IR's compile target ``ir_target`` (``--target``
    on the interpreter; it never saw them in training) is refused with :class:`GuideRefused`
    before any work: benchmarking every config instead spent a whole harvest (hours on a GPU)
    that the user asked to budget. With ``--allow-unseen-arch`` it ranks anyway, with one
    warning on ``console``."""
    inputs = inputs or load_guide_inputs(config)
    if inputs is None:
        return None
    from corpus.harvest.guided import RunGuide
    from train.guide import arch_refusal

    model, budget = inputs
    refusal = arch_refusal(model, arch, None if ir_target is None else ir_target_name(ir_target))
    if refusal is None:
        return RunGuide(model, budget, console=console)
    cannot = f"--rank-with {config.rank_with} cannot rank for this device ({refusal})"
    if not config.allow_unseen_arch:
        raise GuideRefused(
            f"{cannot}: train a model on this device's harvests, drop --rank-with/--budget to "
            "benchmark every config, or add --allow-unseen-arch to rank with it anyway"
        )
    message = f"{cannot}; ranking with it anyway (--allow-unseen-arch): its choice of configs is a guess"
    print_labelled(console, "warning", "yellow", message)
    return RunGuide(model, budget, console=console, allow_unseen_arch=True)


def array_hint(shard: tuple[int, int] | str, settings: Settings) -> str:
    """For the refusal of a second identical harvest: a harvest of the whole plan (no
    ``--shard``) in a task of a Slurm job array or Kubernetes Indexed Job is most likely one
    of many tasks given the same command, which all plan the same runs; every task but the
    first stopped with "another harvest of the same runs is writing", which pointed at
    ``--allow-repeat`` rather than at the missing ``--shard auto``. Empty otherwise."""
    if shard != (0, 1) or not ({SLURM_TASK_ID, K8S_INDEX} & set(settings.array_env)):
        return ""
    return (
        f". This process is a task of a job array ({array_source(settings)}): tasks given the "
        "same command harvest the same whole plan; add --shard auto to split it between them"
    )


def resolve_shard(shard: tuple[int, int] | str, settings: Settings) -> tuple[int, int]:
    """``--shard``: (index, count) as given, or from the job array's environment ("auto")."""
    if shard == "auto":
        return array_shard(settings)
    if isinstance(shard, str):
        raise HarvestError(f"--shard {shard!r}: expected i/N or auto")
    return shard


def left_out_text(specs: Mapping[str, Any], request: PlanRequest, whole: list[PlannedRun]) -> str | None:
    """The dry run's line for the runs of the selection that ``request`` leaves out (bfloat16
    on the interpreter): without it the plan's run count disagrees, unexplained, with
    ``--estimate-for``'s (planned as on a GPU) and with the scales' counts in the README.
    ``whole``: the plan before sharding. None when nothing is left out."""
    if not request.excluded_dtypes:
        return None
    dropped = len(plan_runs(specs, replace(request, excluded_dtypes=()))) - len(whole)
    if not dropped:
        return None
    dtypes = ", ".join(request.excluded_dtypes)
    return (
        f"{plural(dropped, 'run')} of {dtypes} in the whole plan: the interpreter cannot run "
        f"{dtypes} (NumPy has no bfloat16); a GPU harvest plans them"
    )


def _why_empty(config: HarvestConfig, interpreter: bool) -> list[str]:
    """Likely reasons a selection planned no runs, for the error message."""
    reasons = []
    if interpreter and config.dtypes and set(config.dtypes) <= set(INTERPRETER_EXCLUDED_DTYPES):
        reasons.append(f"{', '.join(INTERPRETER_EXCLUDED_DTYPES)} is skipped on the interpreter (NumPy has no bfloat16)")
    if config.shard != (0, 1):
        reasons.append(f"shard {config.shard[0]}/{config.shard[1]} holds none of the runs")
    return reasons


def refresh_card(config: HarvestConfig, console: Console) -> None:
    """Write or refresh the dataset card (DIR/README.md, DIR/card.json) with this harvest's
    command. A card that cannot be written costs no data: warn and go on."""
    try:
        write_card(config.out, command=config.command or None, accept_loss=False)
    except (DatasetError, OSError) as exc:
        print_labelled(
            console,
            "warning",
            "yellow",
            f"dataset card not written: {exc}. The runs are committed; "
            f"`python -m schemas card {config.out}` writes the card later",
        )


def compact_own_files(out: str, written: list[str], console: Console) -> None:
    """Merge the files this harvest wrote, per partition: a finished dataset is a handful of
    files. Files other harvests add meanwhile are left alone (the next compaction takes them)."""
    names = {posixpath.basename(path) for path in written}
    if len(names) < 2:
        return
    waiting = lambda holder: console.print(  # noqa: E731
        f"compaction waits for the dataset's maintenance lock, held by {holder or 'another process'}",
        soft_wrap=True,
        markup=False,  # the holder names a host and a command line: text
    )
    try:
        report = compact(out, only=names, on_wait=waiting)
    except DatasetError as exc:  # committed runs are safe; compaction refuses a damaged dataset
        print_labelled(console, "warning", "yellow", f"not compacted: {exc}")
        return
    merged = sum(result.files_before for result in report.merged)
    if merged:  # one file per partition already: nothing to say
        console.print(f"compacted {merged} file(s) of this harvest into {len(report.merged)}")


def machine_cores() -> int:
    """CPU cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def default_workers(lanes: int = 1, cores: int | None = None) -> int:
    """Compile workers: one per CPU core (of this machine, or ``cores``) the ``lanes``
    benchmark workers leave free, 2 to 16."""
    cores = machine_cores() if cores is None else cores
    return max(2, min(16, cores - max(1, lanes)))


def estimate_here(
    todo: list[PlannedRun],
    execution: Execution,
    interpreter: bool,
    benchmarked: Callable[[int], int] | None = None,
) -> HarvestEstimate:
    """How long ``todo`` takes on this machine as configured (:mod:`corpus.harvest.estimate`,
    from the measured per-config costs of :mod:`corpus.harvest.calibration`; ``benchmarked``:
    a ``--budget``'s most configs benchmarked per run, see :func:`estimate_harvest`)."""
    from corpus.harvest.calibration import COSTS

    launches = launches_per_config(execution.warmup, execution.passes, execution.reps_per_pass)
    return estimate_harvest(
        todo, devices=execution.devices, workers=execution.workers, cores=machine_cores(),
        launches=launches, interpreter=interpreter, costs=COSTS, benchmarked=benchmarked,
    )  # fmt: skip


def print_estimates(
    console: Console,
    config: HarvestConfig,
    specs: Mapping[str, Any],
    request: PlanRequest,
    here: HarvestEstimate,
    benchmarked: Callable[[int], int] | None = None,
) -> None:
    """The dry run's duration estimates: ``here`` (:func:`estimate_here`), and the
    ``--estimate-for`` box (planned as on a GPU: no dtype left out; ``benchmarked`` as
    :func:`estimate_harvest`) when asked."""
    from corpus.harvest.calibration import COSTS

    def show(lines: list[str]) -> None:
        for line in lines:  # wrapped to the terminal, continuation lines under their text
            text = line.lstrip()
            print_trimmed(console, Padding(Text(text), (0, 0, 0, len(line) - len(text))))

    show(describe(here, "here"))
    if config.estimate_for is None:
        return
    cores, gpus = config.estimate_for
    index, count = config.shard if isinstance(config.shard, tuple) else (0, 1)
    runs = shard(plan_runs(specs, replace(request, excluded_dtypes=())), index, count)
    box = estimate_harvest(
        runs, devices=tuple(f"cuda:{i}" for i in range(gpus)), workers=config.workers or default_workers(gpus, cores),
        cores=cores, launches=launches_per_config(*timing_settings(config, interpreter=False)),
        interpreter=False, costs=COSTS, benchmarked=benchmarked,
    )  # fmt: skip
    show(describe(box, f"on {cores} cores + {gpus} GPU(s), nothing committed"))
