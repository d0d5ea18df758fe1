"""The harvest: plan runs, compile configs in a worker pool, benchmark them on one worker per
device, and write every outcome through :class:`schemas.DatasetWriter`.

Pipeline: compile tasks are queued in plan order up to ``lookahead`` runs ahead of the
benchmark lanes, so devices rarely wait for the compiler. A lane checks each config of a run
against the reference as its compile arrives (a config whose binary and launch repeat an
earlier one's is not run again: it shares that measurement), then times the checked configs
in interleaved passes (:mod:`corpus.harvest.interleave`). Each run's rows are written when the run
finishes: IR tables and measurements first, the ``runs`` row last (the commit). Which lane
takes which run, and how far compiles run ahead, is :class:`corpus.harvest.scheduler.Scheduler`.

A lane survives its worker: any failed request is followed by a probe of the device, and a
sticky CUDA error, a failed probe or an error of unknown cause replaces the worker process
(the row keeps the classified status and the error text). Workers are also recycled after
``Execution.recycle_runs`` runs or when their resident memory passes
``Execution.recycle_rss_bytes``.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

from corpus.errors import classify_launch_error, is_sticky
from corpus.harvest.claims import RunClaims
from corpus.harvest.compile_worker import CompileInit, CompileOutcome, CompileTask
from corpus.harvest.device import DeviceFacts
from corpus.harvest.interleave import PassPlan, run_passes, run_sequential
from corpus.harvest.measure_worker import (
    ConfigCheck,
    MeasureInit,
    MeasureOutcome,
    Probe,
    RunSetup,
    TimeReps,
)
from corpus.harvest.plan import PlannedConfig, PlannedRun
from corpus.harvest.resume import SETUP_FAILED, read_existing
from corpus.harvest.rows import kernel_row, measurement_row, now, run_row
from corpus.harvest.sass_batch import SassBatcher, batcher_for_target, fill_row
from corpus.harvest.scheduler import Scheduler
from corpus.harvest.workers import WorkerCrashed, WorkerError, WorkerProcess, WorkerTimeout
from corpus.suite.spec import KernelSpec
from schemas import DatasetWriter
from schemas.enums import DEVICE_INTERPRETER, Status
from schemas.errors import WriteFailedError

if TYPE_CHECKING:
    from corpus.harvest.guided import GuidedRun, RunGuide

COMPILE_FACTORY = "corpus.harvest.compile_worker:make_handler"
MEASURE_FACTORY = "corpus.harvest.measure_worker:make_handler"
COMPILE_NICENESS = 10
"""Added to compile workers' niceness: when cores are short the benchmark workers (and the
host work their timings include) run first."""
MEASURED_ELSEWHERE = "measured by another harvest"
"""What progress hears for a config a concurrent harvest committed first (not a row status)."""
IR_TABLES = ("ir_nodes", "ir_edges", "ir_graphs")
"""The IR tables in write order: a graph's ``ir_graphs`` row last. Writers take a graph whose
row the dataset holds for stored whole (:func:`existing_ids`) and never write it again, so its
row must not land before its nodes and edges: a writer stopped in between (a full disk, a kill)
leaves a graph without a row, which the rerun writes again whole (identical copies of content
rows, which readers drop), not a row whose nodes never come."""
BUFFERED_TABLES = ("kernels", *IR_TABLES, "measurements", "runs")


@dataclass(frozen=True)
class Execution:
    """How the harvest executes (resolved from the CLI by :mod:`corpus.harvest.app`)."""

    out: str
    suite: tuple[str, ...]
    devices: tuple[str, ...]
    """Benchmark devices: ('interpreter',) or ('cuda:0', 'cuda:1', ...)."""
    target: str
    workers: int
    compile_timeout_s: float
    bench_timeout_s: float
    warmup: int
    passes: int
    """Interleaved timing passes over each run's checked configs (see corpus.harvest.interleave)."""
    reps_per_pass: int
    timer: str
    l2_flush: bool
    l2_flush_bytes: int
    static_stats: bool = True
    interleave: bool = True
    """False: the version-1 schedule (each config timed in one go right after its check), kept
    so ``python -m corpus.bench harvest`` can measure what interleaving costs."""
    dedupe: bool = True
    """Time configs with an identical binary and launch once (``same_binary_as``)."""
    pipeline: bool = True
    lookahead: int = 2
    cache_dir: str | None = None
    flush_every_s: float = 15.0
    """Finished runs are buffered and written together at most this often (and at the end,
    and on interrupt): fewer, larger files. A crash loses at most this much finished work,
    which resume redoes."""
    host: str | None = None
    """What ``runs.hostname`` records: the host name with ``--record-host``, else this
    machine's anonymous id (None: the anonymous id)."""
    recycle_runs: int = 200
    """A benchmark worker is replaced after serving this many runs (0: never): whatever a
    long-lived process accumulates (allocator fragmentation, leaked host memory) is dropped."""
    recycle_rss_bytes: int = 16 << 30
    """A benchmark worker whose resident host memory exceeds this many bytes when a run
    starts is replaced first (0: no limit)."""
    sm_count: int | None = None
    """SM count of the benchmark GPU (None on the interpreter): runs are planned and compiled
    for its device-dependent arguments (:func:`corpus.suite.targets.on_sm_count`)."""


def bench_settings(execution: Execution) -> dict[str, Any]:
    """The timing settings every ``runs`` row of this harvest records (and resume compares)."""
    reps = execution.passes * execution.reps_per_pass
    return {
        "timer": execution.timer,
        "l2_flush": execution.l2_flush,
        "l2_flush_bytes": execution.l2_flush_bytes,
        "warmup": execution.warmup,
        "rep": reps,
        "timing_passes": execution.passes if execution.interleave else 1,
        "reps_per_pass": execution.reps_per_pass if execution.interleave else reps,
    }


@dataclass
class RunResult:
    run: PlannedRun
    rows: list[dict[str, Any]]
    compile_s: float
    bench_s: float
    bookkeeping_s: float = 0.0
    timing: dict[str, Any] = field(default_factory=dict)
    """The run's timing settings as ``runs`` records them (timer, timing_passes, ...)."""
    static_stats_s: float = 0.0
    """Compile-worker seconds spent on the run's static stats (``cuobjdump``)."""


@dataclass
class HarvestTotals:
    """Counters the progress display and the summary read."""

    runs_done: int = 0
    configs_done: int = 0
    runs_elsewhere: int = 0
    """Runs of the plan that another harvest (a shard, a Ray harvest) committed whole while
    this one waited for their claims: done, but not measured (nor counted in ``runs_done``)."""
    by_status: dict[str, int] = field(default_factory=dict)
    compile_s: float = 0.0
    bench_s: float = 0.0
    bookkeeping_s: float = 0.0
    static_stats_s: float = 0.0
    """Static-stats seconds: ``cuobjdump`` in the compile workers plus the batched
    ``nvdisasm`` calls of this process (:class:`corpus.harvest.sass_batch.SassBatcher`)."""
    sass_calls: int = 0
    """``nvdisasm`` calls the harvest made (one per batch of cubins)."""
    results: list[RunResult] = field(default_factory=list)
    workers_replaced: list[str] = field(default_factory=list)
    """Why each measure worker was replaced (sticky error, failed probe, recycling, ...)."""


def existing_ids(out: str, table: str, column: str) -> set[str]:
    """Values of ``column`` already in the dataset (empty when the table does not exist yet)."""
    found = read_existing(out, table, [column])
    return set() if found is None else set(found.column(column).to_pylist())


class CompilePool:
    """``workers`` compile processes; each thread of the executor owns one process."""

    def __init__(self, execution: Execution, environment: Mapping[str, str]) -> None:
        self.init = CompileInit(execution.suite, execution.target, execution.static_stats, execution.sm_count)
        self.environment = environment
        self.timeout_s = execution.compile_timeout_s
        self.local = threading.local()
        self.processes: list[WorkerProcess] = []
        self.lock = threading.Lock()
        self.size = execution.workers
        self.executor = ThreadPoolExecutor(max_workers=self.size, thread_name_prefix="compile")

    def _worker(self) -> WorkerProcess:
        worker = getattr(self.local, "worker", None)
        if worker is None:
            with self.lock:
                worker = WorkerProcess(
                    f"compile-{len(self.processes)}",
                    COMPILE_FACTORY,
                    self.init,
                    self.environment,
                    niceness=COMPILE_NICENESS,
                )
                self.processes.append(worker)
            self.local.worker = worker
        return worker

    def _compile(self, task: CompileTask) -> CompileOutcome:
        try:
            return self._worker().call(task, self.timeout_s)
        except WorkerTimeout:
            return CompileOutcome(Status.COMPILE_TIMEOUT.value, f"compile exceeded {self.timeout_s:g} s; worker killed")
        except WorkerCrashed as exc:
            return CompileOutcome(Status.COMPILE_ERROR.value, f"compiler process crashed: {exc}")
        except WorkerError as exc:
            return CompileOutcome(Status.COMPILE_ERROR.value, str(exc).strip().splitlines()[-1][:400])

    def submit(self, task: CompileTask) -> Future[CompileOutcome]:
        return self.executor.submit(self._compile, task)

    def start_workers(self) -> list[Future[None]]:
        """Start every worker process now, in parallel, instead of on first use; returns at
        once (each future fails if its worker cannot start). Compiles submitted afterwards
        queue behind the starts."""
        barrier = threading.Barrier(self.size)

        def start() -> None:
            worker = self._worker()
            barrier.wait(timeout=300)
            if not worker.alive:
                worker.start()

        return [self.executor.submit(start) for _ in range(self.size)]

    def warm_up(self) -> None:
        """Start every worker process now, in parallel, and wait until they run."""
        for future in self.start_workers():
            future.result()

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
        for worker in self.processes:
            worker.kill()


class Compiler(Protocol):
    """What :class:`Harvester` needs of a compile pool (:class:`CompilePool`, or the Ray one in
    :mod:`corpus.harvest.cluster`)."""

    def submit(self, task: CompileTask) -> Future[CompileOutcome]: ...

    def warm_up(self) -> None: ...

    def close(self) -> None: ...


class Worker(Protocol):
    """What a lane needs of its worker (:class:`corpus.harvest.workers.WorkerProcess`, or an
    in-process fake in tests)."""

    restarts: int

    @property
    def pid(self) -> int | None: ...

    def call(self, request: Any, timeout_s: float) -> Any: ...

    def start(self) -> None: ...

    def kill(self) -> None: ...

    def close(self) -> None: ...


def resident_bytes(pid: int | None) -> int | None:
    """Resident set size of process ``pid`` in bytes (Linux ``/proc``; None when unknown)."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _last_line(text: str, limit: int = 400) -> str:
    lines = str(text).strip().splitlines()
    return (lines[-1] if lines else "")[:limit]


class MeasureLane:
    """One benchmark worker process on one device, benchmarking runs one after another."""

    def __init__(
        self,
        device: str,
        execution: Execution,
        environment: Mapping[str, str],
        worker: Worker | None = None,
    ) -> None:
        init = MeasureInit(execution.suite, device, execution.timer, execution.warmup, execution.l2_flush)
        self.worker: Worker = worker or WorkerProcess(f"measure-{device}", MEASURE_FACTORY, init, environment)
        self.timeout_s = execution.bench_timeout_s
        self.recycle_runs = execution.recycle_runs
        self.recycle_rss_bytes = execution.recycle_rss_bytes
        self.prepared: RunSetup | None = None
        self.prepared_pid: int | None = None
        """The worker process that holds ``prepared`` (a respawned one holds no run)."""
        self.runs_served = 0
        """Runs set up by the current worker process."""
        self.replaced: list[str] = []
        """Why each worker was replaced, in order (the summary and tests read it)."""

    def start(self) -> None:
        """Start the benchmark worker now: the lane's thread calls this before it takes a run,
        so the worker starts while the compile workers do. A worker that cannot start here is
        started again, and its failure reported, by the first run's setup."""
        if self.worker.pid is None:
            with contextlib.suppress(WorkerTimeout, WorkerCrashed, WorkerError):
                self.worker.start()

    def setup(self, setup: RunSetup) -> str | None:
        """Build ``setup``'s inputs and reference on the worker (recycling it first when due);
        returns None, or why the run cannot be set up."""
        self._recycle_if_due()
        try:
            self.worker.call(setup, self.timeout_s)
        except WorkerTimeout:
            self._replaced("setup timed out")
            return f"no setup within {self.timeout_s:g} s; benchmark worker killed"
        except WorkerCrashed as exc:
            self._replaced("crashed during setup")
            return f"benchmark worker crashed: {exc}"
        except WorkerError as exc:
            self._after_error(str(exc))
            return _last_line(str(exc))
        self.prepared, self.prepared_pid = setup, self.worker.pid
        self.runs_served += 1
        return None

    def check(self, setup: RunSetup, planned: PlannedConfig, binary_hash: str | None) -> MeasureOutcome:
        """Launch once and compare with the reference."""
        return self._call(setup, ConfigCheck(planned.config, binary_hash))

    def time(self, setup: RunSetup, planned: PlannedConfig, reps: int) -> MeasureOutcome:
        """``reps`` timed reps of a checked config (its warmup on the first call of the run)."""
        return self._call(setup, TimeReps(planned.config, reps))

    def _call(self, setup: RunSetup, request: ConfigCheck | TimeReps) -> MeasureOutcome:
        if self.prepared != setup or self.worker.pid != self.prepared_pid:
            # a new run, or a worker replaced (or found dead while idle) since the setup
            problem = self.setup(setup)
            if problem is not None:
                return MeasureOutcome(Status.RUNTIME_ERROR.value, SETUP_FAILED + problem)
        try:
            outcome: MeasureOutcome = self.worker.call(request, self.timeout_s)
        except WorkerTimeout:
            self._replaced("request timed out")
            return MeasureOutcome(Status.TIMEOUT.value, f"no result within {self.timeout_s:g} s; benchmark worker killed")
        except WorkerCrashed as exc:
            self._replaced("crashed")
            return MeasureOutcome(Status.RUNTIME_ERROR.value, f"benchmark worker crashed: {exc}")
        except WorkerError as exc:
            status, _ = classify_launch_error(str(exc))
            self._after_error(str(exc))
            return MeasureOutcome(status, _last_line(str(exc)))
        if outcome.status == Status.OK.value:
            return outcome
        if outcome.sticky:  # the CUDA context is poisoned: start over in a fresh process
            self._replace("sticky error")
            return outcome
        probe = self.probe()
        if probe is not None:
            outcome.error = f"{outcome.error or ''} [device probe failed afterwards: {probe}; worker replaced]".strip()
        return outcome

    def probe(self) -> str | None:
        """Ask the worker to synchronize its device; on any failure replace the worker and
        return why (None: the device is fine)."""
        try:
            self.worker.call(Probe(), self.timeout_s)
        except WorkerTimeout:
            self._replaced("probe timed out")
            return "no answer to the probe"
        except WorkerCrashed as exc:
            self._replaced("crashed during the probe")
            return str(exc)
        except WorkerError as exc:
            self._replace("probe failed")
            return _last_line(str(exc))
        return None

    def _after_error(self, text: str) -> None:
        """A request raised in the worker: a sticky error, or one of unknown cause, replaces
        the worker; a known, non-sticky one (e.g. out of memory) only needs the probe."""
        status, sticky = classify_launch_error(text)
        if sticky or is_sticky(text):
            self._replace("sticky error")
        elif status == Status.RUNTIME_ERROR.value:
            self._replace("error of unknown cause")
        else:
            self.prepared = None
            self.probe()

    def _recycle_if_due(self) -> None:
        if self.recycle_runs and self.runs_served >= self.recycle_runs:
            self._replace(f"served {self.runs_served} runs")
            return
        rss = resident_bytes(self.worker.pid) if self.recycle_rss_bytes else None
        if rss is not None and rss > self.recycle_rss_bytes:
            self._replace(f"resident memory {rss >> 20} MiB")

    def _replace(self, why: str) -> None:
        self.worker.kill()  # the next request starts a fresh process
        self._replaced(why)

    def _replaced(self, why: str) -> None:
        self.prepared = None
        self.runs_served = 0
        self.replaced.append(why)

    def close(self) -> None:
        self.worker.close()


class Harvester:
    """Runs planned runs through the compile pool and benchmark lanes and writes the rows."""

    def __init__(
        self,
        execution: Execution,
        specs: Mapping[str, KernelSpec],
        facts: DeviceFacts,
        toolchain: Mapping[str, Any],
        versions: Mapping[str, str],
        environment_for: Callable[[bool], Mapping[str, str]],
        on_config: Callable[[str], None] | None = None,
        on_run: Callable[[RunResult], None] | None = None,
        pool: Compiler | None = None,
        claims: RunClaims | None = None,
        writer_id: str | None = None,
        guide: RunGuide | None = None,
    ) -> None:
        """``pool``: where compiles run (default: a :class:`CompilePool` of local processes; the
        Ray harvest passes one that submits Ray tasks). ``claims``: run claims on the dataset
        (:mod:`corpus.harvest.claims`), so a harvest whose plan overlaps this one's never
        measures a run at the same time (None: no claims). ``writer_id``: what the names of the
        files it writes start with (default: a new one), as recorded before the harvest writes
        (:mod:`corpus.harvest.pending`). ``guide``: benchmark only what a model chooses of each
        run (``--rank-with``, :mod:`corpus.harvest.guided`)."""
        self.execution = execution
        self.specs = specs
        self.facts = facts
        self.toolchain = toolchain
        self.versions = versions
        self.harvest_id = uuid.uuid4().hex[:16]
        self.writer = DatasetWriter(execution.out, writer_id=writer_id)
        self.write_lock = threading.Lock()
        self.stop = threading.Event()
        self.on_config = on_config or (lambda status: None)
        self.on_run = on_run or (lambda result: None)
        self.totals = HarvestTotals()
        self.buffer: dict[str, list[Any]] = {name: [] for name in BUFFERED_TABLES}
        self.last_flush = time.monotonic()
        self.known_ir = existing_ids(execution.out, "ir_graphs", "ir_id")
        self.known_kernels = existing_ids(execution.out, "kernels", "kernel_id")
        self.pool: Compiler = pool or CompilePool(execution, environment_for(False))
        self.interpreter = execution.devices == (DEVICE_INTERPRETER,)
        self.lanes = [MeasureLane(d, execution, environment_for(self.interpreter)) for d in execution.devices]
        self.bench_settings = bench_settings(execution)
        self.claims = claims
        self.guide = guide
        self.sass: SassBatcher | None = batcher_for_target(execution.target) if execution.static_stats else None
        self.unfilled: list[tuple[dict[str, Any], Future[Any]]] = []
        """Buffered measurement rows whose instruction columns the batcher has yet to give."""
        self.starting: list[Future[None]] = []
        """Compile workers being started (:meth:`run`)."""

    # -- compile scheduling ---------------------------------------------------------------

    def _task(self, run: PlannedRun, planned: PlannedConfig) -> CompileTask:
        return CompileTask(run.family, run.dims, run.dtype, run.seed, planned.config)

    def _submit_run(self, run: PlannedRun) -> dict[str, Future[CompileOutcome]]:
        self._compilers_started()
        futures = {
            p.config.id: self.pool.submit(self._task(run, p)) for p in run.configs if p.skip_reason is None
        }
        for future in futures.values():  # the batcher sees each cubin as soon as it exists
            future.add_done_callback(self._stats_when_compiled)
        return futures

    def _compilers_started(self) -> None:
        """Wait for the compile workers started by :meth:`run` (raises if one could not start:
        a harvest whose compilers cannot run stops before its first compile)."""
        for future in self.starting:
            future.result()

    def _stats_when_compiled(self, future: Future[CompileOutcome]) -> None:
        if not future.cancelled() and future.exception() is None:
            self._defer_stats(future.result())

    def _defer_stats(self, compiled: CompileOutcome | None) -> Future[Any] | None:
        """The future instruction columns of ``compiled`` (None: its stats are complete)."""
        if compiled is None or compiled.sass_code is None or self.sass is None:
            return None
        return self.sass.submit(compiled.sass_code)

    # -- one run ----------------------------------------------------------------------------

    def _identity(self, compiled: CompileOutcome) -> tuple[str, ...] | None:
        """What a config executes on this harvest's device; configs of a run that agree are
        timed once. The interpreter runs the Python source and ignores num_warps, num_stages,
        num_ctas and maxnreg, so there the grid and every argument identify the program; on a
        GPU it is the binary and the launch (grid, runtime arguments)."""
        if not self.execution.dedupe:
            return None
        if self.interpreter:
            return (compiled.program_key,) if compiled.program_key else None
        if compiled.binary_hash and compiled.launch_key:
            return (compiled.binary_hash, compiled.launch_key)
        return None

    def _execute_run(
        self, lane: MeasureLane, run: PlannedRun, compiles: dict[str, Future[CompileOutcome]] | None
    ) -> RunResult | None:
        """Check every config as its compile arrives (identical ones once), then time the
        checked ones in interleaved passes; returns None when the harvest is stopping, or when
        another harvest measured the whole run meanwhile (claims)."""
        if self.claims is not None:
            claimed = self.claims.claim(run, self.bench_settings, self.harvest_id, self.flush)
            if claimed is None:
                self._measured_elsewhere(run, run.configs)
                return None
            if len(claimed.configs) < len(run.configs):
                kept = {p.config.id for p in claimed.configs}
                self._measured_elsewhere(run, [p for p in run.configs if p.config.id not in kept])
            run = claimed
        started = now()
        host_load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        setup = RunSetup(run.family, run.dims, run.dtype, run.seed)
        compiled_of: dict[str, CompileOutcome | None] = {}
        bench_of: dict[str, MeasureOutcome | None] = {}
        twins: dict[str, str] = {}
        """config_id -> config_id of the identical config that was checked and timed instead."""
        seen: dict[tuple[str, ...], str] = {}
        checked: dict[str, PlannedConfig] = {}
        plan = PassPlan(self.execution.passes, self.execution.reps_per_pass, run.seed)
        compile_s = bench_s = static_s = 0.0
        begin = time.perf_counter()
        setup_error = lane.setup(setup)  # overlaps the run's first compiles
        bench_s += time.perf_counter() - begin

        def time_reps(config_id: str, reps: int) -> list[float] | None:
            if self.stop.is_set():  # the run is dropped anyway; do not respawn a killed worker
                return None
            outcome = lane.time(setup, checked[config_id], reps)
            if outcome.status == Status.OK.value:
                return outcome.samples_ms
            check = bench_of[config_id]
            outcome.max_abs_error = check.max_abs_error if check else None
            bench_of[config_id] = outcome
            return None

        def visit(planned: PlannedConfig, compiled: CompileOutcome) -> None:
            """Check a compiled config (a twin of one checked before shares its outcome)."""
            config_id = planned.config.id
            identity = self._identity(compiled)
            if identity is not None and identity in seen:
                twins[config_id] = seen[identity]
                return
            if identity is not None:
                seen[identity] = config_id
            bench_of[config_id] = check = lane.check(setup, planned, compiled.binary_hash)
            if check.status == Status.OK.value:
                checked[config_id] = planned
                if not self.execution.interleave:
                    self._keep_samples(bench_of, run_sequential([config_id], time_reps, plan))
            else:
                self.on_config(check.status)

        guided = None
        if self.guide is not None:  # the model needs every compile of the run to rank it
            compiles = compiles if compiles is not None else self._submit_run(run)
            guided = self._guide_run(run, compiles)
        deferred: dict[str, PlannedConfig] = {}
        for planned in run.configs:
            if self.stop.is_set():
                return None
            config_id = planned.config.id
            compiled_of[config_id] = bench_of[config_id] = None
            if planned.skip_reason is not None:  # ruled out by the family: a row, no work,
                continue  # so no tick of the progress display, whose total is the configs to measure
            if compiles is None:  # naive mode: compile, then benchmark, one config at a time
                self._compilers_started()
                compiled = self.pool.submit(self._task(run, planned)).result()
            else:
                compiled = compiles[config_id].result()
            compiled_of[config_id] = compiled
            compile_s += compiled.compile_time_s or 0.0
            static_s += compiled.stats_s
            self._defer_stats(compiled)
            if compiled.status != Status.OK.value:
                self.on_config(compiled.status)
                continue
            if setup_error is not None:  # compile outcomes and IR stay; nothing is benchmarked
                bench_of[config_id] = MeasureOutcome(Status.SKIPPED.value, SETUP_FAILED + setup_error)
                self.on_config(Status.SKIPPED.value)
                continue
            if guided is not None and not guided.wants(config_id):
                deferred[config_id] = planned  # the model's verdict comes after the first ones
                continue
            begin = time.perf_counter()
            visit(planned, compiled)
            bench_s += time.perf_counter() - begin
        if guided is not None:
            begin = time.perf_counter()
            if setup_error is None:  # a run that cannot be set up benchmarks nothing
                self._guided_rounds(guided, deferred, compiled_of, visit, twins, checked, time_reps, plan)
            for config_id in deferred:  # compiled, IR kept, not benchmarked: say why
                bench_of[config_id] = MeasureOutcome(Status.SKIPPED.value, guided.skip_reason(config_id))
                self.on_config(Status.SKIPPED.value)
            assert self.guide is not None
            self.guide.count_benchmarked(len(guided.order) - len(deferred))
            bench_s += time.perf_counter() - begin
        if self.execution.interleave and checked:
            begin = time.perf_counter()
            self._keep_samples(bench_of, run_passes(list(checked), time_reps, plan))
            bench_s += time.perf_counter() - begin
        for config_id, twin in twins.items():
            bench_of[config_id] = bench_of[twin]
        for config_id in [*checked, *twins]:
            outcome = bench_of[config_id]
            self.on_config(outcome.status if outcome else Status.RUNTIME_ERROR.value)
        if self.stop.is_set():
            return None
        outcomes = [(p, compiled_of[p.config.id], bench_of[p.config.id]) for p in run.configs]
        return self._write_run(
            run,
            outcomes,
            started,
            compile_s,
            bench_s,
            twins=twins,
            host_load=host_load,
            setup_error=setup_error,
            static_stats_s=static_s,
        )

    def _measured_elsewhere(self, run: PlannedRun, configs: Sequence[PlannedConfig]) -> None:
        """Configs another harvest committed while this one waited for the run's claim: done,
        neither measured nor skipped here (the progress display counts those it would have
        measured as done; the family's ruled-out ones are not in its total)."""
        for planned in configs:
            if planned.skip_reason is None:
                self.on_config(MEASURED_ELSEWHERE)
        if len(configs) == len(run.configs):
            with self.write_lock:
                self.totals.runs_elsewhere += 1
            self.on_run(RunResult(run, [], 0.0, 0.0))

    def _guide_run(self, run: PlannedRun, compiles: dict[str, Future[CompileOutcome]]) -> GuidedRun:
        """Wait for every compile of ``run`` and let the guide choose what to benchmark."""
        # Imported here: train (torch, the model's featurizers) loads only for a guided harvest.
        from corpus.guide.candidates import run_columns

        assert self.guide is not None
        wanted = {planned.config.id for planned in run.configs}  # a claim may have trimmed the run
        outcomes = {config_id: future.result() for config_id, future in compiles.items() if config_id in wanted}
        spec = self.specs[run.family]
        columns = run_columns(
            run, self.facts, self.execution.target, spec.flops(run.dims), spec.bytes_moved(run.dims, run.dtype)
        )
        # The model was trained with the SASS statistics the batched disassembler adds later.
        pending = {config_id: future for config_id, o in outcomes.items() if (future := self._defer_stats(o)) is not None}
        if pending and self.sass is not None:
            self.sass.wait(pending.values())
        sass = {config_id: future.result() for config_id, future in pending.items()}
        return self.guide.plan(run, outcomes, columns, self.facts.arch, sass)

    def _guided_rounds(
        self,
        guided: GuidedRun,
        deferred: dict[str, PlannedConfig],
        compiled_of: Mapping[str, CompileOutcome | None],
        visit: Callable[[PlannedConfig, CompileOutcome], None],
        twins: Mapping[str, str],
        checked: dict[str, PlannedConfig],
        time_reps: Callable[[str, int], list[float] | None],
        plan: PassPlan,
    ) -> None:
        """``--budget auto``: time each chosen config once (one pass), tell the guide, and
        check and time the config it asks for next, until it stops. ``deferred`` keeps the
        configs never chosen. The decision passes' samples are dropped: the labels come from
        the interleaved passes over every checked config that follow."""
        if not guided.adaptive:
            return
        medians: dict[str, float | None] = {}
        one_pass = PassPlan(1, plan.reps_per_pass, plan.seed)

        def median_of(config_id: str) -> float | None:
            source = twins.get(config_id, config_id)
            if source not in medians:
                samples = run_passes([source], time_reps, one_pass) if source in checked else {}
                medians[source] = float(statistics.median(samples[source])) if source in samples else None
                if source not in samples:
                    checked.pop(source, None)  # failed its timing: no interleaved passes either
            return medians[source]

        for config_id in guided.first:
            guided.observe(config_id, median_of(config_id))
        while not self.stop.is_set() and (config_id := guided.next()) is not None:
            compiled = compiled_of[config_id]
            assert compiled is not None
            visit(deferred.pop(config_id), compiled)
            guided.observe(config_id, median_of(config_id))

    @staticmethod
    def _keep_samples(bench_of: dict[str, MeasureOutcome | None], samples: Mapping[str, list[float]]) -> None:
        for config_id, taken in samples.items():
            outcome = bench_of[config_id]
            assert outcome is not None
            outcome.samples_ms = taken

    def _write_run(
        self,
        run: PlannedRun,
        outcomes: list[tuple[PlannedConfig, CompileOutcome | None, MeasureOutcome | None]],
        started: datetime,
        compile_s: float,
        bench_s: float,
        *,
        twins: Mapping[str, str],
        host_load: float | None,
        setup_error: str | None = None,
        static_stats_s: float = 0.0,
    ) -> RunResult:
        begin = time.perf_counter()
        arch = self.facts.arch
        rows = [measurement_row(run, p, self.harvest_id, arch, c, b, twins.get(p.config.id)) for p, c, b in outcomes]
        unfilled = [(row, self._defer_stats(c)) for row, (_, c, _) in zip(rows, outcomes)]
        spec = self.specs[run.family]
        run_record = run_row(
            run,
            self.harvest_id,
            self.facts,
            self.versions,
            self.toolchain,
            {**self.bench_settings, "host_load_1m": host_load},
            rows,
            spec.flops(run.dims),
            spec.bytes_moved(run.dims, run.dtype),
            started,
            host=self.execution.host,
            ir_target=self.execution.target,
            setup_error=setup_error,
        )
        with self.write_lock:
            for _, compiled, _ in outcomes:
                for ir_id, tables in (compiled.graphs if compiled else {}).items():
                    if ir_id not in self.known_ir:
                        self.known_ir.add(ir_id)
                        for name in IR_TABLES:
                            self.buffer[name].append(tables[name])
            if run.kernel_id not in self.known_kernels:
                self.known_kernels.add(run.kernel_id)
                self.buffer["kernels"].append(pa.Table.from_pylist([kernel_row(spec, type(spec).__module__)]))
            self.buffer["measurements"].extend(rows)
            self.unfilled.extend((row, future) for row, future in unfilled if future is not None)
            self.buffer["runs"].append(run_record)
            result = RunResult(
                run,
                rows,
                compile_s,
                bench_s,
                time.perf_counter() - begin,
                timing=self.bench_settings,
                static_stats_s=static_stats_s,
            )
            self._count(result)
            if self._flush_due():
                self._flush_locked()  # accounts its own time
        self.on_run(result)
        return result

    def _flush_due(self) -> bool:
        return time.monotonic() - self.last_flush >= self.execution.flush_every_s

    def flush(self) -> None:
        """Write every buffered finished run: IR, kernels and measurements, then ``runs``."""
        with self.write_lock:
            self._flush_locked()

    def _fill_stats(self) -> None:
        """Complete the buffered rows' instruction columns (waiting for the batcher if need be)."""
        if not self.unfilled:
            return
        assert self.sass is not None
        self.sass.wait(future for _, future in self.unfilled)
        for row, future in self.unfilled:
            fill_row(row, future.result())
        self.unfilled = []

    def _flush_locked(self) -> None:
        """Write the buffers table by table (``runs`` last). Idempotent under failure: each
        table's buffer is emptied as soon as its rows are durable, and a write that fails
        part-way leaves only its unwritten rows buffered, so a retried flush (the final one
        after an error, or the next periodic one) never writes a row twice."""
        begin = time.perf_counter()
        committing = [row["run_id"] for row in self.buffer["runs"]]
        try:
            self._fill_stats()
            for name in ("kernels", *IR_TABLES, "measurements", "runs"):
                pieces = self.buffer[name]
                if not pieces:
                    continue
                rows = pa.concat_tables(pieces, promote_options="permissive") if name in ("kernels", *IR_TABLES) else pieces
                try:
                    self.writer.write(name, rows)
                except WriteFailedError as exc:
                    left = exc.remaining
                    self.buffer[name] = [left] if isinstance(rows, pa.Table) else left.to_pylist()
                    raise
                self.buffer[name] = []
        finally:
            self.totals.bookkeeping_s += time.perf_counter() - begin
        self.last_flush = time.monotonic()
        if self.claims is not None:  # committed: other harvests may look at these runs now
            self.claims.release(committing)

    def _count(self, result: RunResult) -> None:
        totals = self.totals
        totals.runs_done += 1
        totals.configs_done += len(result.rows)
        for row in result.rows:
            totals.by_status[row["status"]] = totals.by_status.get(row["status"], 0) + 1
        totals.compile_s += result.compile_s
        totals.static_stats_s += result.static_stats_s
        totals.bench_s += result.bench_s
        totals.bookkeeping_s += result.bookkeeping_s
        totals.results.append(result)

    def submit_compiles(self, run: PlannedRun) -> dict[str, Future[CompileOutcome]]:
        """Queue ``run``'s compiles now (config_id -> outcome), ahead of :meth:`execute_one`."""
        return self._submit_run(run)

    def execute_one(
        self, run: PlannedRun, compiles: dict[str, Future[CompileOutcome]] | None = None
    ) -> RunResult | None:
        """Execute ``run`` on the first lane and commit it before returning (the Ray actor's
        unit of work: a run handed back is durable). ``compiles``: from
        :meth:`submit_compiles`, else queued now. None when the harvest is stopping, or when
        another harvest committed the whole run while this one waited for its claim."""
        if compiles is None:
            compiles = self._submit_run(run)
        try:
            result = self._execute_run(self.lanes[0], run, compiles)
            self.flush()
        finally:
            self.release_claims()  # committed (the flush gave it back), or it never will be
        return result

    # -- the whole harvest --------------------------------------------------------------------

    def run(self, runs: list[PlannedRun]) -> HarvestTotals:
        """Execute ``runs``; on KeyboardInterrupt, stop, kill workers and re-raise (committed
        runs stay; the rest resume on the next invocation).

        Compile workers start while the lanes start their benchmark workers: the first
        compiles wait for the former (:meth:`_compilers_started`), a lane's run setup does not."""
        if isinstance(self.pool, CompilePool):
            self.starting = self.pool.start_workers()
        else:
            self.pool.warm_up()
        scheduler: Scheduler[MeasureLane, PlannedRun, dict[str, Future[CompileOutcome]]] = Scheduler(
            self.lanes,
            self._execute_run,
            self._submit_run,
            pipeline=self.execution.pipeline,
            lookahead=self.execution.lookahead,
            stop=self.stop,
            prepare=MeasureLane.start,
        )
        try:
            scheduler.run(runs)
        except BaseException:
            try:
                self.close()
            finally:
                try:
                    self.flush()  # finished runs are complete: commit them, whatever stopping cost
                finally:
                    self._close_stats()
                    self.release_claims()
            raise
        self.close()
        self.flush()
        self._close_stats()
        self.release_claims()
        return self.totals

    def release_claims(self) -> None:
        """Give back every claim still held (runs stopped before their commit)."""
        if self.claims is not None:
            self.claims.release_all()

    def _close_stats(self) -> None:
        """Stop the batcher (after the last flush) and count its time."""
        if self.sass is not None:
            self.sass.close()
            self.totals.static_stats_s += self.sass.busy_s
            self.totals.sass_calls += self.sass.calls

    def close(self) -> None:
        self.pool.close()
        for lane in self.lanes:
            lane.close()
        self.totals.workers_replaced = [why for lane in self.lanes for why in lane.replaced]


def default_cache_dir() -> str:
    """A Triton cache shared by compile and benchmark workers of this harvest."""
    return tempfile.mkdtemp(prefix="kernel-corpus-triton-cache-")
