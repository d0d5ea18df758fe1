"""Run suite configs once and compare their outputs with the family's torch reference.

This is the correctness check behind ``python -m corpus.suite check`` and the suite tests.
On a machine without a GPU it runs in Triton's interpreter, which must be selected (the
``TRITON_INTERPRET=1`` environment variable) before any kernel module is imported; the
entry point does that, this library does not read the environment.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from corpus.errors import is_sticky
from corpus.suite.spec import Config, KernelSpec, shape_name
from corpus.suite.verify import checked_launch


@dataclass(frozen=True)
class CheckCase:
    """One launch to check: a family's shape, dtype and config."""

    family: str
    dims: Mapping[str, int]
    dtype: str
    config: Config
    is_default: bool


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one :class:`CheckCase` (JSON-friendly)."""

    family: str
    shape: str
    dtype: str
    config: str
    is_default: bool
    ok: bool
    error: str | None
    seconds: float
    """Wall time of the launch alone, seconds (inputs and reference excluded; in the
    interpreter the first launch of a process also pays its one-time start-up)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def plan_cases(
    spec: KernelSpec,
    scale: str,
    dtypes: Sequence[str] | None = None,
    samples: int = 3,
    seed: int = 0,
    every_config: bool = False,
) -> list[CheckCase]:
    """The default config on every shape x dtype of ``scale`` (where it is valid), plus
    ``samples`` other valid (shape, dtype, config) combinations drawn with ``seed`` — or every
    valid combination with ``every_config``. ``dtypes`` limits the family's dtypes."""
    chosen_dtypes = [d for d in spec.dtypes if dtypes is None or d in dtypes]
    default = spec.default_config()
    cases: list[CheckCase] = []
    others: list[CheckCase] = []
    for dims in spec.shapes_for(scale):
        for dtype in chosen_dtypes:
            for config in spec.valid_configs(dims, dtype):
                case = CheckCase(spec.name, dims, dtype, config, config == default)
                (cases if case.is_default else others).append(case)
    if every_config:
        return cases + others
    rng = random.Random(f"{seed}:{spec.name}")
    return cases + rng.sample(others, min(samples, len(others)))


def run_case(spec: KernelSpec, case: CheckCase, device: str, seed: int = 0) -> CheckResult:
    """Build seeded inputs, then :func:`corpus.suite.verify.checked_launch` (the benchmark
    worker's own check: outputs NaN-poisoned, one launch, compared on the device) against the
    reference computed from pristine copies of the inputs. Exceptions become failed results."""
    seconds = 0.0
    try:
        inputs = spec.make_inputs(case.dims, case.dtype, device, seed)
        expected = spec.reference(_copy_inputs(inputs), case.dims)
        started = time.perf_counter()
        checked = checked_launch(spec, inputs, case.dims, case.config, case.dtype, expected)
        seconds = time.perf_counter() - started
        error = checked.problems()
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    return _result(spec, case, error, seconds)


def _result(spec: KernelSpec, case: CheckCase, error: str | None, seconds: float) -> CheckResult:
    """The result of ``case`` of ``spec``: ok when there is no ``error``."""
    return CheckResult(
        family=spec.name,
        shape=shape_name(case.dims),
        dtype=case.dtype,
        config=case.config.launch,
        is_default=case.is_default,
        ok=error is None,
        error=error,
        seconds=seconds,
    )


def _copy_inputs(inputs: Mapping[str, Any]) -> dict[str, Any]:
    return {
        name: value.clone() if hasattr(value, "clone") else value for name, value in inputs.items()
    }


def check_suite(
    specs: Mapping[str, KernelSpec],
    scale: str,
    device: str,
    dtypes: Sequence[str] | None = None,
    samples: int = 3,
    seed: int = 0,
    every_config: bool = False,
) -> list[CheckResult]:
    """:func:`run_case` over :func:`plan_cases` of every family, in family order, with
    ``device`` (``cuda:N``) torch's current device: Triton launches on the current device
    whatever device the arguments live on, so ``cuda:1`` inputs launched from device 0 would
    be read across devices (an illegal address without peer access).

    A sticky CUDA error (an illegal address, ...: :func:`corpus.errors.is_sticky`) leaves this
    process's CUDA context unusable, so every later launch would fail with that case's error:
    the cases after one are not run, and each says so (failed, naming the case at fault)."""
    results = []
    poisoned: CheckResult | None = None
    with on_device(device):
        for spec in specs.values():
            for case in plan_cases(spec, scale, dtypes, samples, seed, every_config):
                if poisoned is not None:
                    results.append(_not_run(spec, case, poisoned))
                    continue
                result = run_case(spec, case, device, seed)
                results.append(result)
                if result.error is not None and is_sticky(result.error):
                    poisoned = result
    return results


def _not_run(spec: KernelSpec, case: CheckCase, poisoned: CheckResult) -> CheckResult:
    """The result of ``case``, not run after ``poisoned`` failed with a sticky CUDA error."""
    error = (
        f"not run: {poisoned.family} {poisoned.shape} {poisoned.dtype} {poisoned.config} left "
        "the CUDA context unusable (a sticky error); check the families after it again"
    )
    return _result(spec, case, error, 0.0)


def on_device(device: str) -> contextlib.AbstractContextManager[Any]:
    """``torch.cuda.device(device)`` for a CUDA device (``cuda`` alone: the current one stays),
    nothing for another."""
    import torch

    target = torch.device(device)
    if target.type != "cuda" or target.index is None:
        return contextlib.nullcontext()
    return torch.cuda.device(target)


@dataclass(frozen=True)
class CompileJob:
    """One distinct compile standing for ``covers`` configs of a family's space."""

    family: str
    dims: Mapping[str, int]
    dtype: str
    config: Config
    covers: int


@dataclass(frozen=True)
class CompilePlan:
    """What compiling a family's whole config space takes at one scale."""

    family: str
    space: int
    """Configs in the space."""
    jobs: list[CompileJob]
    invalid: dict[str, str]
    """``launch string -> reason`` for configs invalid on every shape of the scale."""
    distinct: int = 0
    """Distinct compiles the valid configs need; more than ``len(jobs)`` after
    :func:`limit_jobs`."""

    @property
    def valid(self) -> int:
        """Configs valid on at least one shape (``space - len(invalid)``)."""
        return self.space - len(self.invalid)


def plan_compiles(
    spec: KernelSpec, scale: str = "default", dtype: str | None = None
) -> CompilePlan:
    """Compile every config of ``spec`` once, on the smallest shape of ``scale`` (by bytes
    moved) where it is valid, in ``dtype`` (default: the family's first). Configs whose
    constexpr values and compile options coincide share one job: they are the same binary."""
    dtype = dtype or spec.dtypes[0]
    shapes = sorted(spec.shapes_for(scale), key=lambda dims: spec.bytes_moved(dims, dtype))
    constexprs = constexpr_names(spec.kernel)
    jobs: dict[tuple[Any, ...], CompileJob] = {}
    invalid: dict[str, str] = {}
    for config in spec.config_space():
        reasons = [spec.invalid_reason(config, dims, dtype) for dims in shapes]
        if all(reasons):
            invalid[config.launch] = reasons[0] or "no shape"
            continue
        dims = shapes[reasons.index(None)]
        _, args = spec.bind(spec.make_inputs(dims, dtype, "meta", 0), dims, config)
        key = (
            tuple(sorted((n, args[n]) for n in constexprs)),
            tuple(sorted(config.compile_options().items())),
        )
        seen = jobs.get(key)
        if seen is None:
            jobs[key] = CompileJob(spec.name, dims, dtype, config, 1)
        else:
            jobs[key] = CompileJob(seen.family, seen.dims, seen.dtype, seen.config, seen.covers + 1)
    return CompilePlan(spec.name, len(spec.config_space()), list(jobs.values()), invalid, len(jobs))


def limit_jobs(
    plan: CompilePlan, limit: int, default: Config | None = None, seed: int = 0
) -> CompilePlan:
    """At most ``limit`` of the plan's jobs (all when ``limit <= 0``), chosen to cover every
    value of every knob at least once where the limit allows: the default config first, then
    jobs that add an uncovered (knob, value), then a seeded random fill."""
    if limit <= 0 or len(plan.jobs) <= limit:
        return plan
    order = list(plan.jobs)
    random.Random(f"{seed}:{plan.family}").shuffle(order)
    order.sort(key=lambda job: job.config != default)  # stable: default first, rest shuffled
    chosen: list[CompileJob] = []
    covered: set[tuple[str, Any]] = set()
    for job in order:
        knobs = set({**job.config.kwargs, **job.config.compile_options()}.items())
        if len(chosen) < limit and (job.config == default or knobs - covered):
            chosen.append(job)
            covered |= knobs
    for job in order:
        if len(chosen) >= limit:
            break
        if job not in chosen:
            chosen.append(job)
    return CompilePlan(plan.family, plan.space, chosen, plan.invalid, plan.distinct)


def constexpr_names(kernel: Any) -> list[str]:
    """Names of the ``tl.constexpr`` parameters of a ``@triton.jit`` function."""
    return [p.name for p in getattr(kernel, "params", ()) if getattr(p, "is_constexpr", False)]


@dataclass(frozen=True)
class CompileOutcome:
    """Result of compiling one :class:`CompileJob` (picklable, for process pools)."""

    family: str
    config: str
    covers: int
    ok: bool
    error: str | None
    seconds: float
    """Wall time of the compile call, seconds."""


def compile_job(suites: Sequence[str], job: CompileJob, target: str = "sm_90") -> CompileOutcome:
    """Compile ``job`` for ``target`` with :func:`extract.compile.compile_call` on meta inputs
    (no GPU needed). Runs in pool workers: loads the suite itself. Failures are outcomes."""
    from corpus.suite.registry import load_suite
    from extract.compile import compile_call

    started = time.perf_counter()
    try:
        spec = load_suite(list(suites))[job.family]
        _, args = spec.bind(spec.make_inputs(job.dims, job.dtype, "meta", 0), job.dims, job.config)
        compile_call(spec.kernel, args, target=target, **job.config.compile_options())
        error = None
    except Exception as exc:
        error = f"{type(exc).__name__}: {str(exc)[:2000]}"
    return CompileOutcome(
        job.family,
        job.config.launch,
        job.covers,
        error is None,
        error,
        time.perf_counter() - started,
    )
