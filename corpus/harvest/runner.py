"""The harvest: plan runs, compile configs in a worker pool, benchmark them on one worker per
device, and write every outcome through :class:`schemas.DatasetWriter`.

Pipeline: compile tasks are queued in plan order up to ``lookahead`` runs ahead of the
benchmark lanes, so devices rarely wait for the compiler. Each run's rows are written when
the run finishes: IR tables and measurements first, the ``runs`` row last (the commit).
"""

from __future__ import annotations

import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from corpus.bench_worker import BenchInit, BenchOutcome, ConfigBench, RunSetup
from corpus.compile_worker import CompileInit, CompileOutcome, CompileTask
from corpus.device import DeviceFacts
from corpus.harvest.rows import kernel_row, measurement_row, now, run_row
from corpus.plan import PlannedConfig, PlannedRun
from corpus.suite.spec import KernelSpec
from corpus.workers import WorkerCrashed, WorkerError, WorkerProcess, WorkerTimeout
from schemas import DatasetError, DatasetWriter, read_table
from schemas.enums import DEVICE_INTERPRETER, Status

COMPILE_FACTORY = "corpus.compile_worker:make_handler"
BENCH_FACTORY = "corpus.bench_worker:make_handler"
IR_TABLES = ("ir_graphs", "ir_nodes", "ir_edges")
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
    rep: int
    timer: str
    l2_flush: bool
    l2_flush_bytes: int
    static_stats: bool = True
    pipeline: bool = True
    lookahead: int = 2
    cache_dir: str | None = None
    flush_every_s: float = 15.0
    """Finished runs are buffered and written together at most this often (and at the end,
    and on interrupt): fewer, larger files. A crash loses at most this much finished work,
    which resume redoes."""


@dataclass
class RunResult:
    run: PlannedRun
    rows: list[dict[str, Any]]
    compile_s: float
    bench_s: float
    bookkeeping_s: float = 0.0


@dataclass
class HarvestTotals:
    """Counters the progress display and the summary read."""

    runs_done: int = 0
    configs_done: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    compile_s: float = 0.0
    bench_s: float = 0.0
    bookkeeping_s: float = 0.0
    results: list[RunResult] = field(default_factory=list)


def existing_ids(out: str, table: str, column: str) -> set[str]:
    """Values of ``column`` already in the dataset (empty when the table does not exist yet)."""
    try:
        return set(read_table(out, table, columns=[column]).column(column).to_pylist())
    except DatasetError as exc:
        if "not found" in str(exc):
            return set()
        raise


class CompilePool:
    """``workers`` compile processes; each thread of the executor owns one process."""

    def __init__(self, execution: Execution, environment: Mapping[str, str]) -> None:
        self.init = CompileInit(execution.suite, execution.target, execution.static_stats)
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
                worker = WorkerProcess(f"compile-{len(self.processes)}", COMPILE_FACTORY, self.init, self.environment)
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

    def warm_up(self) -> None:
        """Start every worker process now, in parallel, instead of on first use."""
        barrier = threading.Barrier(self.size)

        def start() -> None:
            worker = self._worker()
            barrier.wait(timeout=300)
            if not worker.alive:
                worker.start()

        for future in [self.executor.submit(start) for _ in range(self.size)]:
            future.result()

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
        for worker in self.processes:
            worker.kill()


class BenchLane:
    """One benchmark worker process on one device, benchmarking runs one after another."""

    def __init__(self, device: str, execution: Execution, environment: Mapping[str, str]) -> None:
        init = BenchInit(execution.suite, device, execution.timer, execution.warmup, execution.rep, execution.l2_flush)
        self.worker = WorkerProcess(f"bench-{device}", BENCH_FACTORY, init, environment)
        self.timeout_s = execution.bench_timeout_s
        self.prepared: RunSetup | None = None

    def bench(self, setup: RunSetup, config: PlannedConfig) -> BenchOutcome:
        try:
            if self.prepared != setup:
                self.worker.call(setup, self.timeout_s)
                self.prepared = setup
            outcome: BenchOutcome = self.worker.call(ConfigBench(config.config), self.timeout_s)
        except WorkerTimeout:
            self.prepared = None
            return BenchOutcome(Status.TIMEOUT.value, f"no result within {self.timeout_s:g} s; benchmark worker killed")
        except WorkerCrashed as exc:
            self.prepared = None
            return BenchOutcome(Status.RUNTIME_ERROR.value, f"benchmark worker crashed: {exc}")
        except WorkerError as exc:
            self.prepared = None
            return BenchOutcome(Status.RUNTIME_ERROR.value, str(exc).strip().splitlines()[-1][:400])
        if outcome.sticky:  # the CUDA context is poisoned: start over in a fresh process
            self.worker.kill()
            self.prepared = None
        return outcome

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
    ) -> None:
        self.execution = execution
        self.specs = specs
        self.facts = facts
        self.toolchain = toolchain
        self.versions = versions
        self.harvest_id = uuid.uuid4().hex[:16]
        self.writer = DatasetWriter(execution.out)
        self.write_lock = threading.Lock()
        self.stop = threading.Event()
        self.on_config = on_config or (lambda status: None)
        self.on_run = on_run or (lambda result: None)
        self.totals = HarvestTotals()
        self.buffer: dict[str, list[Any]] = {name: [] for name in BUFFERED_TABLES}
        self.last_flush = time.monotonic()
        self.known_ir = existing_ids(execution.out, "ir_graphs", "ir_id")
        self.known_kernels = existing_ids(execution.out, "kernels", "kernel_id")
        self.pool = CompilePool(execution, environment_for(False))
        interpret = execution.devices == (DEVICE_INTERPRETER,)
        self.lanes = [BenchLane(d, execution, environment_for(interpret)) for d in execution.devices]
        self.bench_settings = {
            "timer": execution.timer,
            "l2_flush": execution.l2_flush,
            "l2_flush_bytes": execution.l2_flush_bytes,
            "warmup": execution.warmup,
            "rep": execution.rep,
        }

    # -- compile scheduling ---------------------------------------------------------------

    def _task(self, run: PlannedRun, planned: PlannedConfig) -> CompileTask:
        return CompileTask(run.family, run.dims, run.dtype, run.seed, planned.config)

    def _submit_run(self, run: PlannedRun) -> dict[str, Future[CompileOutcome]]:
        return {
            p.config.id: self.pool.submit(self._task(run, p)) for p in run.configs if p.skip_reason is None
        }

    # -- one run ----------------------------------------------------------------------------

    def _execute_run(
        self, lane: BenchLane, run: PlannedRun, compiles: dict[str, Future[CompileOutcome]] | None
    ) -> RunResult | None:
        started = now()
        setup = RunSetup(run.family, run.dims, run.dtype, run.seed)
        outcomes: list[tuple[PlannedConfig, CompileOutcome | None, BenchOutcome | None]] = []
        compile_s = bench_s = 0.0
        for planned in run.configs:
            if self.stop.is_set():
                return None
            if planned.skip_reason is not None:
                outcomes.append((planned, None, None))
                self.on_config(Status.SKIPPED.value)
                continue
            if compiles is None:  # naive mode: compile, then benchmark, one config at a time
                compiled = self.pool.submit(self._task(run, planned)).result()
            else:
                compiled = compiles[planned.config.id].result()
            compile_s += compiled.compile_time_s or 0.0
            bench = None
            if compiled.status == Status.OK.value:
                started_bench = time.perf_counter()
                bench = lane.bench(setup, planned)
                bench_s += time.perf_counter() - started_bench
            outcomes.append((planned, compiled, bench))
            self.on_config(bench.status if bench else compiled.status)
        if self.stop.is_set():
            return None
        return self._write_run(run, outcomes, started, compile_s, bench_s)

    def _write_run(self, run, outcomes, started, compile_s: float, bench_s: float) -> RunResult:
        begin = time.perf_counter()
        rows = [measurement_row(run, p, self.harvest_id, self.facts.arch, c, b) for p, c, b in outcomes]
        spec = self.specs[run.family]
        run_record = run_row(
            run,
            self.harvest_id,
            self.facts,
            self.versions,
            self.toolchain,
            self.bench_settings,
            rows,
            spec.flops(run.dims),
            spec.bytes_moved(run.dims, run.dtype),
            started,
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
            self.buffer["runs"].append(run_record)
            result = RunResult(run, rows, compile_s, bench_s, time.perf_counter() - begin)
            self._count(result)
            if time.monotonic() - self.last_flush >= self.execution.flush_every_s:
                self._flush_locked()  # accounts its own time
        self.on_run(result)
        return result

    def flush(self) -> None:
        """Write every buffered finished run: IR, kernels and measurements, then ``runs``."""
        with self.write_lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        begin = time.perf_counter()
        for name in ("kernels", *IR_TABLES):
            pieces = self.buffer[name]
            if pieces:
                self.writer.write(name, pa.concat_tables(pieces, promote_options="permissive"))
        if self.buffer["measurements"]:
            self.writer.write("measurements", self.buffer["measurements"])
        if self.buffer["runs"]:
            self.writer.commit_run(self.buffer["runs"])
        self.buffer = {name: [] for name in BUFFERED_TABLES}
        self.last_flush = time.monotonic()
        self.totals.bookkeeping_s += time.perf_counter() - begin

    def _count(self, result: RunResult) -> None:
        totals = self.totals
        totals.runs_done += 1
        totals.configs_done += len(result.rows)
        for row in result.rows:
            totals.by_status[row["status"]] = totals.by_status.get(row["status"], 0) + 1
        totals.compile_s += result.compile_s
        totals.bench_s += result.bench_s
        totals.bookkeeping_s += result.bookkeeping_s
        totals.results.append(result)

    # -- the whole harvest --------------------------------------------------------------------

    def run(self, runs: list[PlannedRun]) -> HarvestTotals:
        """Execute ``runs``; on KeyboardInterrupt, stop, kill workers and re-raise (committed
        runs stay; the rest resume on the next invocation)."""
        self.pool.warm_up()
        pending = list(runs)
        queue_lock = threading.Lock()
        slots = threading.Semaphore(self.execution.lookahead + len(self.lanes))
        submitted: dict[str, dict[str, Future[CompileOutcome]]] = {}
        submit_done = threading.Event()

        def submitter() -> None:
            for run in runs:
                slots.acquire()
                if self.stop.is_set():
                    return
                submitted[run.run_id] = self._submit_run(run)
            submit_done.set()

        failures: list[BaseException] = []

        def lane_loop(lane: BenchLane) -> None:
            try:
                serve(lane)
            except BaseException as exc:  # surfaced in the main thread below
                failures.append(exc)
                self.stop.set()

        def serve(lane: BenchLane) -> None:
            while not self.stop.is_set():
                with queue_lock:
                    if not pending:
                        return
                    run = pending.pop(0)
                compiles = None
                if self.execution.pipeline:
                    while run.run_id not in submitted and not self.stop.is_set():
                        time.sleep(0.01)
                    compiles = submitted.pop(run.run_id, None)
                self._execute_run(lane, run, compiles)
                slots.release()

        if self.execution.pipeline:
            threading.Thread(target=submitter, name="submitter", daemon=True).start()
        threads = [threading.Thread(target=lane_loop, args=(lane,), name=f"lane-{i}", daemon=True) for i, lane in enumerate(self.lanes)]
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                while thread.is_alive():
                    thread.join(timeout=0.2)
        except BaseException:
            self.stop.set()
            slots.release()
            self.close()
            self.flush()  # finished runs are complete: commit them
            raise
        self.close()
        self.flush()
        if failures:
            raise failures[0]
        return self.totals

    def close(self) -> None:
        self.pool.close()
        for lane in self.lanes:
            lane.close()


def default_cache_dir() -> str:
    """A Triton cache shared by compile and benchmark workers of this harvest."""
    return tempfile.mkdtemp(prefix="kernel-corpus-triton-cache-")
