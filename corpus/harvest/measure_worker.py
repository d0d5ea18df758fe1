"""The measure worker (the harvest's benchmark stage): checks configs against the reference,
then times them.

Runs inside a :class:`corpus.harvest.workers.WorkerProcess`: one per GPU (device ``cuda:N``), or one
with Triton's interpreter (device ``interpreter``; the parent sets ``TRITON_INTERPRET=1``
before this module imports any kernel). Requests are :class:`RunSetup` (build inputs,
reference and snapshots once per run, after releasing the previous run's), :class:`ConfigCheck`
(one launch, compared with the reference), :class:`TimeReps` (a few timed reps of one config:
the parent interleaves these over the run's configs, see :mod:`corpus.harvest.interleave`) and
:class:`Probe` (is the device still usable after a failure?).
"""

from __future__ import annotations

import gc
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from corpus.errors import classify_launch_error
from corpus.harvest.binary import binary_hash
from corpus.harvest.timing import (
    HOST_TIMERS,
    CudaEventTimer,
    CudaGraphTimer,
    LatencyTimer,
    l2_flush_bytes,
)
from corpus.suite.registry import load_suite
from corpus.suite.spec import Config, KernelSpec
from corpus.suite.verify import checked_launch
from schemas.enums import DEVICE_INTERPRETER, Status, Timer


@dataclass(frozen=True)
class MeasureInit:
    suite: tuple[str, ...]
    device: str
    """'interpreter' or 'cuda:N'."""
    timer: str
    """A :class:`schemas.enums.Timer` value: thread_cpu, process_cpu or wall on the
    interpreter, cuda_event or cuda_graph on a GPU."""
    warmup: int
    """Untimed launches of a config before its first timed rep."""
    l2_flush: bool = True


@dataclass(frozen=True)
class RunSetup:
    family: str
    dims: Mapping[str, int]
    dtype: str
    seed: int


@dataclass(frozen=True)
class ConfigCheck:
    """Launch ``config`` once and compare every output with the reference. ``binary_hash`` is
    what the compile worker built; on a GPU the launched kernel is compared with it."""

    config: Config
    binary_hash: str | None = None


@dataclass(frozen=True)
class TimeReps:
    """Time ``reps`` launches of ``config`` (checked before); the first request for a config in
    a run also does the warmup launches."""

    config: Config
    reps: int


@dataclass(frozen=True)
class Probe:
    """After a failed request: synchronize the device (a trivial ping on the interpreter). A
    poisoned CUDA context raises here, and the lane then replaces the worker."""


@dataclass
class MeasureOutcome:
    """Result of one request: status, error text, max error vs reference, per-rep samples (ms),
    and whether the launched binary was the compiled one (None when unknown: the interpreter)."""

    status: str
    error: str | None = None
    max_abs_error: float | None = None
    samples_ms: list[float] = field(default_factory=list)
    sticky: bool = False
    launch_verified: bool | None = None
    grid: tuple[int, ...] | None = None
    """Launch grid the check launched with, from ``bind`` on the real inputs (it can differ
    from the planned one when an input scalar depends on the device, e.g. a persistent
    kernel's program count); None when no launch was checked."""


def _short(exc: BaseException, limit: int = 400) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _limit_math_threads() -> None:
    """One math thread in the interpreter worker, also for libraries already loaded (the
    environment of :func:`corpus.harvest.settings.worker_environment` only reaches later loads)."""
    import torch
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    torch.set_num_threads(1)


def _make_timer(init: MeasureInit, device: str) -> LatencyTimer:
    if init.device == DEVICE_INTERPRETER:
        if init.timer not in HOST_TIMERS:
            raise ValueError(
                f"timer {init.timer!r} cannot time the interpreter; use one of {', '.join(HOST_TIMERS)}"
            )
        return HOST_TIMERS[init.timer]()
    import torch

    torch.cuda.set_device(device)
    props = torch.cuda.get_device_properties(device)
    flush = l2_flush_bytes(getattr(props, "L2_cache_size", 0)) if init.l2_flush else 0
    timer_class = CudaGraphTimer if init.timer == Timer.CUDA_GRAPH.value else CudaEventTimer
    return timer_class(device, flush)


class MeasureHandler:
    """Serves :class:`RunSetup`, :class:`ConfigCheck` and :class:`TimeReps` requests."""

    def __init__(self, init: MeasureInit) -> None:
        import torch

        self.torch = torch
        self.init = init
        self.specs = load_suite(init.suite)
        self.interpreter = init.device == DEVICE_INTERPRETER
        self.device = "cpu" if self.interpreter else init.device
        if self.interpreter:
            _limit_math_threads()
        self.timer = _make_timer(init, self.device)
        self.spec: KernelSpec | None = None
        self.setup: RunSetup | None = None
        self.prepared: dict[str, Callable[[], Any]] = {}
        """Per config_id of the current run: the warmed-up, prepared launch to time."""

    def __call__(self, request: RunSetup | ConfigCheck | TimeReps | Probe) -> Any:
        if isinstance(request, Probe):
            return self._probe()
        if isinstance(request, RunSetup):
            return self._setup(request)
        if isinstance(request, ConfigCheck):
            return self._check(request)
        return self._time(request)

    def _probe(self) -> bool:
        if not self.interpreter:
            self.torch.cuda.synchronize(self.device)  # raises the context's sticky error, if any
        return True

    def _release(self) -> None:
        """Drop the current run's tensors (inputs, reference, snapshots, captured graphs) and
        return the cached device memory, so the next run's inputs fit beside nothing else."""
        self.inputs = self.reference = self.snapshots = {}
        self.prepared = {}
        self.spec = self.setup = None
        gc.collect()  # graphs and closures can hold tensors in reference cycles
        if not self.interpreter:
            self.torch.cuda.empty_cache()

    def _setup(self, setup: RunSetup) -> dict[str, Any]:
        torch = self.torch
        self._release()
        spec = self.specs[setup.family]
        torch.manual_seed(setup.seed)
        random.seed(setup.seed)
        inputs = spec.make_inputs(setup.dims, setup.dtype, self.device, setup.seed)
        pristine = {
            name: value.clone() if torch.is_tensor(value) else value
            for name, value in inputs.items()
        }
        self.reference = spec.reference(pristine, setup.dims)
        self.snapshots = {name: inputs[name].clone() for name in spec.mutated}
        self.inputs, self.spec, self.setup = inputs, spec, setup
        self.prepared = {}
        return {"outputs": sorted(self.reference)}

    def _restore(self) -> None:
        for name, snapshot in self.snapshots.items():
            self.inputs[name].copy_(snapshot)

    def _launcher(self, config: Config) -> Callable[[], Any]:
        assert self.spec is not None and self.setup is not None, "RunSetup must come first"
        return self.spec.bound_launch(self.inputs, self.setup.dims, config)

    def _verified(self, launched: Any, expected: str | None) -> bool | None:
        """Whether the kernel the launch ran is the binary the compile worker built."""
        if self.interpreter or expected is None or not hasattr(launched, "asm"):
            return None
        from extract.triton_compat import compiled_asm, compiled_metadata

        return binary_hash(compiled_asm(launched), compiled_metadata(launched)) == expected

    def _check(self, request: ConfigCheck) -> MeasureOutcome:
        assert self.spec is not None and self.setup is not None, "RunSetup must come first"
        spec, setup = self.spec, self.setup
        try:  # the same checked launch as `python -m corpus.suite check`
            checked = checked_launch(
                spec, self.inputs, setup.dims, request.config, setup.dtype, self.reference, self.snapshots
            )
        except Exception as exc:
            status, sticky = classify_launch_error(exc)
            return MeasureOutcome(status=status, error=_short(exc), sticky=sticky)
        verified = self._verified(checked.launched, request.binary_hash)
        grid = tuple(int(g) for g in spec.bind(self.inputs, setup.dims, request.config)[0])
        details = checked.problems()
        if details is not None:
            return MeasureOutcome(
                Status.MISMATCH.value, details[:400], checked.max_abs_error, launch_verified=verified, grid=grid
            )
        return MeasureOutcome(Status.OK.value, max_abs_error=checked.max_abs_error, launch_verified=verified, grid=grid)

    def _time(self, request: TimeReps) -> MeasureOutcome:
        config = request.config
        restore = self._restore if self.snapshots else None
        try:
            timed = self.prepared.get(config.id)
            if timed is None:
                launch = self._launcher(config)
                for _ in range(self.init.warmup):
                    self._restore()
                    launch()
                timed = self.prepared[config.id] = self.timer.prepare(launch)
            samples = self.timer.time_reps(timed, restore, request.reps)
        except Exception as exc:
            self.prepared.pop(config.id, None)
            status, sticky = classify_launch_error(exc)
            return MeasureOutcome(status=status, error=_short(exc), sticky=sticky)
        return MeasureOutcome(status=Status.OK.value, samples_ms=samples)


def make_handler(init: MeasureInit) -> MeasureHandler:
    """Factory named in ``WorkerProcess(factory="corpus.harvest.measure_worker:make_handler")``."""
    return MeasureHandler(init)
