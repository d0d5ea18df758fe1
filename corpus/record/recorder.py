"""The recorder: Triton's hooks in, one committed run per autotune event out.

Each event's rows are written as soon as the tuning finishes -- IR tables, kernel, then
measurements, and the ``runs`` row last (the commit) -- so a workload that crashes or is
interrupted leaves every finished tuning committed and nothing half-written visible.
"""

from __future__ import annotations

import os
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from corpus.destination import probe_out
from corpus.harvest.device import DeviceFacts, cuda_facts, interpreter_facts, target_mismatch
from corpus.harvest.identity import toolchain_fingerprint
from corpus.harvest.rows import now
from corpus.harvest.settings import Settings, compiler_selected, read_settings, worker_environment
from corpus.record.compile_worker import WorkerCompiler
from corpus.record.compiled import compile_config, heuristics_of
from corpus.record.hooks import AutotuneEvent, CpuBench, TritonHooks
from corpus.record.rows import Compiler, RecordContext, event_rows, kernel_function, twins_left_out
from corpus.run_writer import RunRows, RunWriter
from schemas import DatasetWriter
from schemas.enums import Status, Timer

DEFAULT_IR_TARGET = "sm_90"
"""IR target on the interpreter (the harvest's default too)."""


class RecordError(RuntimeError):
    """Recording cannot start as asked; the message says what to change."""


@dataclass(frozen=True)
class RecordOptions:
    """How to record. ``target``: compile target of the IR graphs and static stats (default:
    the GPU's own arch, ``sm_90`` on the interpreter). ``warmup``/``rep``: untimed and timed
    calls per config of the CPU bench supplied on the interpreter (a GPU uses Triton's own
    bench). ``compile_ir=False`` skips IR extraction. ``use_listener``: force the
    ``knobs.autotuning.listener`` path on or off (None: use it where Triton has it and the
    kernel is compiled; Triton's listener cannot handle interpreted kernels)."""

    out: str
    target: str | None = None
    warmup: int = 1
    rep: int = 5
    compile_ir: bool = True
    use_listener: bool | None = None

    def __post_init__(self) -> None:
        if self.rep < 1 or self.warmup < 0:
            raise RecordError(
                f"rep must be >= 1 and warmup >= 0 (got rep={self.rep}, warmup={self.warmup})"
            )
        if self.target is not None:
            from extract.compile import parse_target

            parse_target(self.target)  # a bad target is refused before the workload starts


@dataclass
class RecordSummary:
    """What a recording wrote and saw."""

    runs: int = 0
    measurements: int = 0
    ir_graphs: int = 0
    cache_hits: int = 0
    """Tunings served by Triton's autotune (disk) cache: runs without measurements."""
    cache_hits_in_memory: int = 0
    """Launches whose key was already tuned in this process: nothing recorded."""
    failures: list[str] = field(default_factory=list)
    """Events that could not be recorded (the workload went on)."""
    failed_tunings: list[str] = field(default_factory=list)
    """Autotuned calls that raised before their tuning finished: nothing to record."""
    unseen_tunings: list[str] = field(default_factory=list)
    """Tunings (or tries) by an autotuner with a ``run`` of its own that bypasses Triton's
    (flag-gems' ``LibTuner``): not recorded."""
    untuned_launches: dict[str, int] = field(default_factory=dict)
    """Kernel name -> launches no autotuner tuned (plain ``@triton.jit``, a single config):
    nothing recorded."""
    not_measured: dict[str, int] = field(default_factory=dict)
    """Status -> configs benchmarked but never measured (``compile_error``: a config Triton's
    bench scored ``inf``, or whose ``tl.static_assert`` failed; the ``error`` column says why)."""
    configs_without_ir: int = 0
    """Measured configs whose IR could not be compiled (their ``stats_note`` says why)."""
    without_ir: list[str] = field(default_factory=list)
    """The first few of them: kernel, config and reason."""
    twins_left_out: int = 0
    """Benchmarked configs not recorded: each differs from a recorded one only in its
    ``pre_hook`` or ``ir_override`` (one config id: see :func:`corpus.record.rows.first_of_each_id`)."""
    record_s: float = 0.0
    """Seconds spent building and writing rows (compiling IR included), inside the tunings."""

    def lost(self) -> str:
        """What the recording could not keep, in a line ('' when nothing): configs without IR
        (the first example), tunings that failed, events not recorded."""
        parts = []
        if self.configs_without_ir:
            parts.append(
                f"{self.configs_without_ir} measured config(s) without IR graphs (stats_note says "
                f"why; e.g. {self.without_ir[0]})"
            )
        if self.twins_left_out:
            parts.append(
                f"{self.twins_left_out} benchmarked config(s) not recorded: each differs from a "
                "config benchmarked before it only in its pre_hook or ir_override (one config_id; "
                "the first one's measurement is recorded)"
            )
        if self.failed_tunings:
            parts.append(f"{len(self.failed_tunings)} tuning(s) failed ({self.failed_tunings[0]})")
        if self.failures:
            parts.append(f"{len(self.failures)} autotune event(s) not recorded ({self.failures[0]})")
        if self.unseen_tunings:
            parts.append(f"{len(self.unseen_tunings)} tuning(s) not recorded: {self.unseen_tunings[0]}")
        if self.untuned_launches and not self.runs:  # beside recorded runs they are no loss
            parts.append(self.untuned())
        return "; ".join(parts)

    def failed_configs(self) -> str:
        """The configs that failed before they were measured, in a line ('' when none): rows
        kept, so not lost, but a count to see."""
        if not self.not_measured:
            return ""
        counts = ", ".join(f"{status} x{count}" for status, count in self.not_measured.items())
        return f"{sum(self.not_measured.values())} config(s) not measured (the error column says why): {counts}"

    def untuned(self) -> str:
        """The kernels launched without a tuning, in a line ('' when none)."""
        if not self.untuned_launches:
            return ""
        named = ", ".join(f"{name} x{count}" for name, count in self.untuned_launches.items())
        return (
            f"{len(self.untuned_launches)} kernel(s) launched untuned, nothing to record (plain "
            f"@triton.jit, or an autotuner of one config): {named}"
        )


def _versions() -> dict[str, str]:
    import torch
    import triton

    return {"triton": triton.__version__, "torch": torch.__version__}


def _device() -> tuple[bool, DeviceFacts]:
    """(interpreter?, facts) of where the workload's kernels run."""
    import torch
    from triton import knobs

    if knobs.runtime.interpret:
        return True, interpreter_facts()
    if not torch.cuda.is_available():
        raise RecordError(
            "no GPU here and Triton's interpreter is off: set TRITON_INTERPRET=1 before the "
            "workload imports its kernels, or run it with 'python -m corpus.record --out DATASET "
            "-- python workload.py', which selects the interpreter itself"
        )
    return False, cuda_facts(f"cuda:{torch.cuda.current_device()}")


class Recorder:
    """Context manager recording every autotune event of the code it wraps into ``out``.

    ``writer`` is for tests that inject write faults; by default a :class:`DatasetWriter`.
    """

    def __init__(
        self, options: RecordOptions, writer: DatasetWriter | None = None, *, warn_at_exit: bool = True
    ) -> None:
        self.options = options
        self.warn_at_exit = warn_at_exit
        """Warn at the end of the block what was not recorded (the CLI prints its own summary)."""
        self.writer = writer or DatasetWriter(options.out)
        self.summary = RecordSummary()
        self._hooks: TritonHooks | None = None
        self._installed: Any = None
        self._closers: list[Callable[[], None]] = []

    def __enter__(self) -> Recorder:
        interpreter, facts = _device()
        settings = read_settings(allow_interpret=True)
        target = self.options.target or (DEFAULT_IR_TARGET if interpreter else facts.arch)
        if (mismatch := target_mismatch(target, facts)) is not None:
            raise RecordError(f"target {target}: {mismatch}")
        bench_settings: dict[str, Any] = {"timer": Timer.TRITON_DO_BENCH.value}
        if interpreter:
            bench_settings = {
                "timer": Timer.THREAD_CPU.value,
                "warmup": self.options.warmup,
                "rep": self.options.rep,
                "timing_passes": 1,
                "reps_per_pass": self.options.rep,
                "l2_flush": False,
                "l2_flush_bytes": 0,
            }
        self.context = RecordContext(
            harvest_id=uuid.uuid4().hex[:16],
            facts=facts,
            versions=_versions(),
            toolchain=toolchain_fingerprint(
                settings.codegen_env, ir_target=target if interpreter else None
            ),
            ir_target=target,
            interpreter=interpreter,
            bench_settings=bench_settings,
            compiler=self._compiler(interpreter, target, settings)
            if self.options.compile_ir
            else None,
        )
        self.sink = RunWriter.for_dataset(self.options.out, self.writer)
        bench = CpuBench(self.options.warmup, self.options.rep) if interpreter else None
        use_listener = self.options.use_listener
        if use_listener is None and interpreter:
            use_listener = False
        self._hooks = TritonHooks(self._on_event, bench, use_listener)
        self._installed = self._hooks.installed()
        self._installed.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._hooks is not None
        self._installed.__exit__(exc_type, exc, tb)
        self.summary.cache_hits_in_memory = self._hooks.cache_hits_in_memory
        self.summary.failed_tunings = list(self._hooks.failed_tunings)
        self.summary.unseen_tunings = list(self._hooks.unseen_tunings)
        self.summary.untuned_launches = dict(self._hooks.untuned_launches)
        for close in self._closers:
            close()
        lost = self.summary.lost()
        if lost and self.warn_at_exit:  # else a with-block would end silently
            warnings.warn(f"corpus.record into {self.options.out}: {lost}", stacklevel=2)

    def _compiler(self, interpreter: bool, target: str, settings: Settings) -> Compiler:
        """On a GPU, compile in this process (Triton's cache holds the workload's own compiles);
        on the interpreter, in a worker where Triton compiles (see
        :mod:`corpus.record.compile_worker`)."""
        if not interpreter:
            return lambda fn, args, config: compile_config(
                kernel_function(fn), args, config, target, always_compile=False,
                heuristics=heuristics_of(kernel_function(fn)),
            )
        scratch = tempfile.TemporaryDirectory(prefix="corpus-record-")
        cache_dir = settings.triton_cache_dir or os.path.join(scratch.name, "triton-cache")
        environment = worker_environment(settings, interpret=False, cache_dir=cache_dir)
        with compiler_selected():
            compiler = WorkerCompiler(target, environment)
        self._closers += [compiler.close, scratch.cleanup]
        return compiler

    def _on_event(self, event: AutotuneEvent) -> None:
        started = now()
        begin = time.perf_counter()
        try:
            rows = event_rows(
                event, self.context, started, self._hooks.compile_times if self._hooks else {}
            )
        except Exception as exc:  # the workload goes on; the event is reported as lost
            message = f"{getattr(event.fn, '__name__', event.fn)}: {type(exc).__name__}: {exc}"
            self.summary.failures.append(message)
            warnings.warn(
                f"corpus.record could not record an autotune event of {message}", stacklevel=2
            )
            return
        self._write(rows)
        self._count_outcomes(rows)
        self.summary.twins_left_out += twins_left_out(event)
        self.summary.runs += 1
        self.summary.measurements += len(rows.measurements)
        self.summary.cache_hits += int(event.cache_hit)
        self.summary.record_s += time.perf_counter() - begin

    def _count_outcomes(self, rows: RunRows, examples: int = 5) -> None:
        """Count the configs that failed before a timing, and the measured ones without IR.
        A failed one is not counted as lacking IR: its IR compile fails as its launch did
        (a failed ``tl.static_assert``), so that count would be noise."""
        not_measured = self.summary.not_measured
        for row in rows.measurements:
            if row["status"] not in (Status.OK.value, Status.SKIPPED.value):
                not_measured[row["status"]] = not_measured.get(row["status"], 0) + 1
        if self.context.compiler is None:
            return
        for row in rows.measurements:
            if row["status"] != Status.OK.value or row.get("ttgir_id") is not None:
                continue
            self.summary.configs_without_ir += 1
            if len(self.summary.without_ir) < examples:
                self.summary.without_ir.append(
                    f"{rows.kernel['entry_name']} {row.get('launch')}: {row.get('stats_note')}"
                )

    def _write(self, rows: RunRows) -> None:
        before = self.sink.new_graphs
        self.sink.write(rows)
        self.summary.ir_graphs += self.sink.new_graphs - before


def record(out: str, **options: Any) -> Recorder:
    """``with corpus.record(out="dataset"): ...`` records every autotune event of the block.

    ``options`` are the fields of :class:`RecordOptions` (``target``, ``warmup``, ``rep``,
    ``compile_ir``, ``use_listener``). On a machine without a GPU, Triton's interpreter must be
    selected (``TRITON_INTERPRET=1``) before the kernels are imported. ``out`` is checked and
    every table directory created first, as ``python -m corpus.record`` does
    (:class:`corpus.destination.OutRefused` for a directory that holds something else), so the
    dataset passes ``python -m schemas check`` even when no IR graph is written.
    """
    probe_out(out)
    return Recorder(RecordOptions(out=out, **options))
