"""The benchmark worker: checks each config against the reference, then times it.

Runs inside a :class:`corpus.workers.WorkerProcess`: one per GPU (device ``cuda:N``), or one
with Triton's interpreter (device ``interpreter``; the parent sets ``TRITON_INTERPRET=1``
before this module imports any kernel). Requests are :class:`RunSetup` (build inputs,
reference and snapshots once per run) and :class:`ConfigBench` (one config).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from corpus.suite.registry import load_suite
from corpus.suite.spec import Config, KernelSpec
from corpus.timing import CudaEventTimer, CudaGraphTimer, WallTimer, l2_flush_bytes
from schemas.enums import DEVICE_INTERPRETER, Status, Timer

STICKY_CUDA_ERRORS = (
    "illegal memory access",
    "misaligned address",
    "unspecified launch failure",
    "illegal instruction",
    "device-side assert",
    "an illegal",
)
"""Errors after which the CUDA context is unusable: the worker must be replaced."""


@dataclass(frozen=True)
class BenchInit:
    suite: tuple[str, ...]
    device: str
    """'interpreter' or 'cuda:N'."""
    timer: str
    warmup: int
    rep: int
    l2_flush: bool = True


@dataclass(frozen=True)
class RunSetup:
    family: str
    dims: Mapping[str, int]
    dtype: str
    seed: int


@dataclass(frozen=True)
class ConfigBench:
    config: Config


@dataclass
class BenchOutcome:
    """Result of one config: status, error text, max error vs reference, per-rep samples (ms)."""

    status: str
    error: str | None = None
    max_abs_error: float | None = None
    samples_ms: list[float] = field(default_factory=list)
    sticky: bool = False


def _short(exc: BaseException, limit: int = 400) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def classify_launch_error(exc: BaseException) -> tuple[str, bool]:
    """(status, sticky) for an exception raised by a launch."""
    text = f"{type(exc).__name__} {exc}".lower()
    if "outofresources" in text or "out of resource" in text:
        return Status.OUT_OF_RESOURCES.value, False
    sticky = any(marker in text for marker in STICKY_CUDA_ERRORS)
    return Status.RUNTIME_ERROR.value, sticky


def max_abs_error(actual: Any, expected: Any) -> float:
    """Largest |actual - expected| in float32 (inf where exactly one side is NaN/inf)."""
    import torch

    a = actual.detach().to(torch.float32)
    b = expected.detach().to(device=a.device, dtype=torch.float32)
    if a.shape != b.shape:
        return math.inf
    both_nan = torch.isnan(a) & torch.isnan(b)
    difference = (a - b).abs().masked_fill(both_nan, 0.0)
    difference = torch.nan_to_num(difference, nan=math.inf)
    return float(difference.max()) if difference.numel() else 0.0


class BenchHandler:
    """Serves :class:`RunSetup` and :class:`ConfigBench` requests."""

    def __init__(self, init: BenchInit) -> None:
        import torch

        self.torch = torch
        self.init = init
        self.specs = load_suite(init.suite)
        self.interpreter = init.device == DEVICE_INTERPRETER
        self.device = "cpu" if self.interpreter else init.device
        if self.interpreter:
            self.timer = WallTimer()
        else:
            torch.cuda.set_device(self.device)
            props = torch.cuda.get_device_properties(self.device)
            flush = l2_flush_bytes(getattr(props, "L2_cache_size", 0)) if init.l2_flush else 0
            timer_class = CudaGraphTimer if init.timer == Timer.CUDA_GRAPH.value else CudaEventTimer
            self.timer = timer_class(self.device, flush)
        self.spec: KernelSpec | None = None
        self.setup: RunSetup | None = None

    def __call__(self, request: RunSetup | ConfigBench) -> Any:
        if isinstance(request, RunSetup):
            return self._setup(request)
        return self._bench(request.config)

    def _setup(self, setup: RunSetup) -> dict[str, Any]:
        torch = self.torch
        spec = self.specs[setup.family]
        torch.manual_seed(setup.seed)
        random.seed(setup.seed)
        inputs = spec.make_inputs(setup.dims, setup.dtype, self.device, setup.seed)
        pristine = {name: value.clone() if torch.is_tensor(value) else value for name, value in inputs.items()}
        self.reference = spec.reference(pristine, setup.dims)
        self.snapshots = {name: inputs[name].clone() for name in spec.mutated}
        self.inputs, self.spec, self.setup = inputs, spec, setup
        return {"outputs": sorted(self.reference)}

    def _restore(self) -> None:
        for name, snapshot in self.snapshots.items():
            self.inputs[name].copy_(snapshot)

    def _poison_outputs(self) -> None:
        """Fill pure outputs with NaN (or -1) so a config that skips elements cannot pass on
        values an earlier config left behind."""
        torch = self.torch
        assert self.spec is not None
        for name in self.spec.outputs:
            if name in self.snapshots:
                continue
            tensor = self.inputs[name]
            if tensor.dtype.is_floating_point:
                tensor.fill_(math.nan)
            elif tensor.dtype != torch.bool:
                tensor.fill_(-1)

    def _bench(self, config: Config) -> BenchOutcome:
        assert self.spec is not None and self.setup is not None, "RunSetup must come first"
        spec, setup = self.spec, self.setup

        def launch() -> Any:
            return spec.launch(self.inputs, setup.dims, config)

        try:
            self._restore()
            self._poison_outputs()
            launch()
            if not self.interpreter:
                self.torch.cuda.synchronize()
        except Exception as exc:
            status, sticky = classify_launch_error(exc)
            return BenchOutcome(status=status, error=_short(exc), sticky=sticky)
        error = max((max_abs_error(self.inputs[name], expected) for name, expected in self.reference.items()), default=0.0)
        wrong = spec.mismatches(self.inputs, self.reference, setup.dtype)
        if wrong:
            details = "; ".join(f"{name}: {why}" for name, why in sorted(wrong.items()))
            return BenchOutcome(status=Status.MISMATCH.value, error=details[:400], max_abs_error=error)
        restore = self._restore if self.snapshots else None
        try:
            samples = self.timer.measure(launch, restore, self.init.warmup, self.init.rep)
        except Exception as exc:
            status, sticky = classify_launch_error(exc)
            return BenchOutcome(status=status, error=_short(exc), max_abs_error=error, sticky=sticky)
        return BenchOutcome(status=Status.OK.value, max_abs_error=error, samples_ms=samples)


def make_handler(init: BenchInit) -> BenchHandler:
    """Factory named in ``WorkerProcess(factory="corpus.bench_worker:make_handler")``."""
    return BenchHandler(init)
