"""Rows of one recorded autotune event, built with the harvest's own row code.

A recorded tuning becomes a :class:`corpus.harvest.plan.PlannedRun` (kernel id, signature from the
actual arguments, run id) with one :class:`corpus.harvest.plan.PlannedConfig` per config, and each
benchmarked config a :class:`corpus.harvest.measure_worker.MeasureOutcome` -- so
:func:`corpus.harvest.rows.measurement_row` and :func:`corpus.harvest.rows.run_row` build the
rows exactly as they do for a harvest, and the keys are derived the same way.
"""

from __future__ import annotations

import inspect
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from corpus.errors import classify_compile_error
from corpus.harvest.compile_worker import CompileOutcome
from corpus.harvest.device import DeviceFacts
from corpus.harvest.identity import stride_pattern, triton_type
from corpus.harvest.measure_worker import MeasureOutcome
from corpus.harvest.plan import PlannedConfig, PlannedRun
from corpus.harvest.rows import measurement_row, run_row
from corpus.harvest.sass_batch import fill_row, instruction_stats_now
from corpus.record.hooks import AutotuneEvent, BenchedConfig
from corpus.record.replay import HookReplayError, config_arguments, is_descriptor
from corpus.run_writer import RunRows
from corpus.suite.spec import Config
from extract.locations import package_relative, publishable_message
from schemas.enums import Source, Status
from schemas.identity import content_hash, kernel_id, run_id

PRUNED = "pruned by the autotuner (early_config_prune / perf_model) before benchmarking"
INF_TIMING = (
    "the autotuner's bench returned inf (OutOfResources, CompileTimeAssertionFailure or PTXASError)"
)


Compiler = Callable[[Any, Mapping[str, Any], Config], tuple[CompileOutcome, "str | None"]]
"""Compiles one config of a recorded call (kernel, call arguments, config) for the recording's
target: (outcome with graphs and static stats, Triton's metadata hash)."""


@dataclass(frozen=True)
class RecordContext:
    """What is fixed for a whole recording (one per process)."""

    harvest_id: str
    facts: DeviceFacts
    versions: Mapping[str, str]
    toolchain: Mapping[str, Any]
    ir_target: str
    """Target the IR graphs and static stats are compiled for."""
    interpreter: bool
    bench_settings: Mapping[str, Any]
    """``timer``, ``warmup``, ``rep`` ... columns of ``runs``."""
    compiler: Compiler | None = None
    """None: no IR graphs or static stats."""
    tunings: Counter[str] = field(default_factory=Counter, init=False, compare=False)
    """Events recorded so far per run_id (see :func:`tuning_harvest_id`); a context made by
    ``dataclasses.replace`` starts its own count."""


def tuning_harvest_id(context: RecordContext, run: str) -> str:
    """The ``harvest_id`` of the next recorded event of run ``run``: the recording's own for its
    first, one derived from it for each later one. A workload may tune one kernel on one
    signature again (its module imported twice, so two autotuners; a cleared autotune cache; a
    disk-cache hit after the tuning): under the recording's one id both tunings would share the
    ``runs`` and ``measurements`` keys, which readers refuse. Each is a harvest of its own
    instead, as the importers keep a log's repeated tunings."""
    occurrence = context.tunings[run]
    context.tunings[run] += 1
    if occurrence == 0:
        return context.harvest_id
    return content_hash("record", context.harvest_id, run, str(occurrence))


EventRows = RunRows
"""The rows of one recorded event (see :class:`corpus.run_writer.RunRows`)."""


def kernel_function(fn: Any) -> Any:
    """A ``JITFunction`` for ``fn`` (the interpreter's ``InterpretedFunction`` wraps the same
    Python function; compiling for a target needs the JIT's view of it)."""
    from triton.runtime import JITFunction

    return fn if isinstance(fn, JITFunction) else JITFunction(fn.fn)


def kernel_source(fn: Any) -> tuple[str, str, str]:
    """(text of the module file defining ``fn``, entry name, package-relative path)."""
    path = inspect.getsourcefile(fn.fn)
    if path is None:
        raise ValueError(f"cannot find the source file of kernel {fn.__name__}")
    return Path(path).read_text(), fn.fn.__name__, package_relative(path)


def argument_signature(jit: Any, args: Mapping[str, Any], tuned: set[str]) -> dict[str, Any]:
    """What ``run_id`` hashes about a recorded call: every argument the caller passed (names,
    Triton types, shapes, stride patterns, scalar values); meta-parameters the autotuner sets
    are per config, not part of the run."""
    import torch

    constexprs = {p.name for p in jit.params if p.is_constexpr}
    entries = []
    for name in jit.arg_names:
        if name not in args or name in tuned:
            continue
        value = args[name]
        entry: dict[str, Any] = {"name": name}
        if torch.is_tensor(value):
            entry.update(
                type=triton_type(value), shape=list(value.shape), strides=stride_pattern(value)
            )
        elif is_descriptor(value):
            entry.update(descriptor_entry(value))
        else:
            entry["type"] = "constexpr" if name in constexprs else triton_type(value)
            if isinstance(value, (bool, int, float, str)) or value is None:
                entry["value"] = value  # other objects: their type only (a repr may hold data or addresses)
        entries.append(entry)
    return {"kernel": jit.__name__, "args": entries}


def descriptor_entry(desc: Any) -> dict[str, Any]:
    """A ``TensorDescriptor`` argument in a run's signature: ``tensordesc<DTYPE>``, the
    described shape and the stride pattern. Its block shape is left out: configs' hooks set it
    per config (on the caller's own object, so what it holds depends on the config tried last)."""
    strides = "".join("0" if s == 0 else "1" if s == 1 else "n" for s in desc.strides)
    return {
        "type": "tensordesc<" + triton_type(desc.base).removeprefix("*") + ">",
        "shape": [int(d) for d in desc.shape],
        "strides": strides,
    }


def as_config(config: Any) -> Config:
    """A ``triton.Config`` as the suite's :class:`Config` (what ``config_id`` hashes)."""
    return Config(
        kwargs=dict(config.kwargs),
        num_warps=int(config.num_warps),
        num_stages=int(config.num_stages),
        num_ctas=int(getattr(config, "num_ctas", 1) or 1),
        maxnreg=getattr(config, "maxnreg", None),
    )


def config_grid(grid: Any, args: Mapping[str, Any], config: Config) -> tuple[int, ...] | None:
    """The grid ``config`` launches with: ``grid`` itself, or what the callable gives for the
    call's ``args`` and the config's meta-parameters; None when it cannot say."""
    try:
        value = grid({**args, **config.kwargs}) if callable(grid) else grid
        return tuple(int(g) for g in value) if value is not None else None
    except Exception:  # a grid function that needs more than the arguments: unknown
        return None


@dataclass(frozen=True)
class AutotunedProblem:
    """What an autotuned call's key says of its problem: ``dims``, the integer and boolean
    arguments the autotuner keys on (booleans as 0/1); ``flags``, the boolean ones (mode
    switches, as a suite's ``problem_flags``); ``dtype`` of the first tensor argument, or
    ``TensorDescriptor`` argument's tensor (None: none)."""

    dims: dict[str, int]
    flags: dict[str, int]
    dtype: str | None


def autotuned_problem(args: Mapping[str, Any], keys: Sequence[str]) -> AutotunedProblem:
    """The :class:`AutotunedProblem` of a call with ``args`` to a kernel autotuned on ``keys``."""
    dims = {name: int(args[name]) for name in keys if isinstance(args.get(name), int)}  # bool is an int
    flags = {name: dims[name] for name in dims if isinstance(args[name], bool)}
    # A TensorDescriptor argument (liger-kernel's kernels take nothing else) has its tensor's
    # dtype: without it such a run's dtype was null, and the model ranked it without one.
    values = [v.base if is_descriptor(v) else v for v in args.values()]
    tensors = [v for v in values if hasattr(v, "dtype") and hasattr(v, "shape")]
    return AutotunedProblem(dims, flags, str(tensors[0].dtype).removeprefix("torch.") if tensors else None)


def _timing_figures(timing: Any) -> list[float]:
    """What an autotuner's bench returned for one config, as a list of ms figures. Triton's
    ``do_bench`` returns the requested quantiles (median, p20, p80) as a list, but the autotuner
    takes any ``do_bench=`` a user gives, and one that ignores ``quantiles`` returns a single
    float (``triton.testing.do_bench(fn)`` does): Triton ranks by that figure as it ranks by a
    list's first, so it stands where the median stands."""
    if isinstance(timing, (int, float)):
        return [float(timing)]
    return [float(value) for value in timing]


def _bench_outcome(timing: Any, benched: BenchedConfig | None) -> MeasureOutcome:
    timing = _timing_figures(timing)
    if benched is not None and benched.error is not None:
        return MeasureOutcome(
            classify_compile_error(benched.error),
            f"{type(benched.error).__name__}: {benched.error}"[:400],
        )
    if not timing or not math.isfinite(timing[0]):
        return MeasureOutcome(Status.COMPILE_ERROR.value, INF_TIMING)
    return MeasureOutcome(Status.OK.value, samples_ms=list(benched.samples_ms) if benched else [])


def _quantile_columns(timing: Any) -> dict[str, Any]:
    """Timing columns from the autotuner's own bench (median, p20, p80 in ms; no samples; a
    single figure is the median, see :func:`_timing_figures`)."""
    names = ("median_ms", "p20_ms", "p80_ms")
    return {name: value for name, value in zip(names, _timing_figures(timing)) if math.isfinite(value)}


def first_of_each_id(configs: Sequence[Any]) -> list[int]:
    """Indices of the first of ``configs`` (``triton.Config``) with each config id. Configs that
    differ only in their ``pre_hook`` or ``ir_override`` are two configs to Triton (benchmarked
    apart) and one ``config_id`` to the dataset: one row each, or the run repeats a key and
    readers refuse the table."""
    seen: set[str] = set()
    first = []
    for index, config in enumerate(configs):
        config_id = as_config(config).id
        if config_id not in seen:
            seen.add(config_id)
            first.append(index)
    return first


def twins_left_out(event: AutotuneEvent) -> int:
    """Benchmarked configs of ``event`` not recorded: each shares its config id with one
    benchmarked before it (another ``pre_hook`` or ``ir_override``), whose row stands."""
    return 0 if event.cache_hit else len(event.timings) - len(first_of_each_id(list(event.timings)))


def _planned_run(
    event: AutotuneEvent, context: RecordContext, kernel_key: str, entry: str
) -> PlannedRun:
    """The recorded tuning as a planned run: benchmarked configs first (in the autotuner's
    order; of configs sharing a config id, the first: see :func:`first_of_each_id`), then the
    pruned ones as ``skipped``. Problem dims are the integer arguments the autotuner keys on
    (booleans as 0/1, also its flags)."""
    jit = kernel_function(event.fn)
    timed = list(event.timings)
    benchmarked = [as_config(timed[i]) for i in first_of_each_id(timed)]
    all_configs = [as_config(c) for c in event.autotuner.configs]
    tuned = {name for config in all_configs + benchmarked for name in config.kwargs}
    signature = argument_signature(jit, event.args, tuned)
    problem = autotuned_problem(event.args, event.autotuner.keys)
    benched_ids = {c.id for c in benchmarked}
    planned = [PlannedConfig(c, None, config_grid(event.grid, event.args, c)) for c in benchmarked]
    if not event.cache_hit:
        # A provider that knows why it pruned a config (corpus.guide.prune_configs) says so.
        reason_for = getattr(event.autotuner.early_config_prune, "skip_reason_for", None)
        planned += [
            PlannedConfig(c, (reason_for(original) if reason_for else None) or PRUNED, config_grid(event.grid, event.args, c))
            for original, c in (
                (event.autotuner.configs[i], all_configs[i]) for i in first_of_each_id(event.autotuner.configs)
            )
            if c.id not in benched_ids
        ]
    return PlannedRun(
        family=entry,
        scale=None,  # type: ignore[arg-type]  # not from a suite scale
        dims=problem.dims,
        dtype=problem.dtype,  # type: ignore[arg-type]
        seed=None,  # type: ignore[arg-type]
        run_id=run_id(kernel_key, signature, context.facts.model, context.toolchain),
        kernel_id=kernel_key,
        signature=signature,
        configs=tuple(planned),
        default_config_id=None,  # type: ignore[arg-type]  # a recorded kernel has no untuned default
        sizes={k: v for k, v in problem.dims.items() if k not in problem.flags},
        flags=problem.flags,
    )


def _compiled(
    context: RecordContext,
    compile_times: Mapping[str, float | None],
    event: AutotuneEvent,
    config: Config,
    triton_config: Any,
) -> CompileOutcome:
    """IR graphs, static stats and compile time of one config (an empty outcome without a
    compiler), compiled with the arguments that config launched with (its hooks replayed on
    copies, see :mod:`corpus.record.replay`). A config that does not compile for the target,
    or whose ``ir_override`` replaces what its source compiles to, keeps its bench outcome;
    only its IR is missing, and ``stats_note`` says why."""
    if context.compiler is None:
        return CompileOutcome(Status.OK.value)
    if (override := getattr(triton_config, "ir_override", None)) is not None:
        # The launch ran the IR in that file, not what the kernel's source compiles to: the
        # source's IR would describe another program, silently.
        outcome = CompileOutcome(Status.OK.value)
        note = f"IR not recorded: the config replaces its IR (ir_override={Path(str(override)).name})"
        outcome.stats["stats_note"] = publishable_message(note)
        return outcome
    try:
        args = config_arguments(event.autotuner, triton_config, event.args)
    except HookReplayError as exc:
        compiled, triton_hash = CompileOutcome(Status.COMPILE_ERROR.value, str(exc)[:400]), None
    else:
        compiled, triton_hash = context.compiler(event.fn, args, config)
    if triton_hash in compile_times:  # the workload's own compile (None: Triton's cache served it)
        compiled.compile_time_s = compile_times[triton_hash]
    if compiled.status != Status.OK.value:
        note = f"IR compile for {context.ir_target} failed: {compiled.error}"
        compiled.stats["stats_note"] = publishable_message(note)
        compiled.status, compiled.error = Status.OK.value, None
    return compiled


def event_rows(
    event: AutotuneEvent,
    context: RecordContext,
    started_at: datetime,
    compile_times: Mapping[str, float | None],
) -> EventRows:
    """All rows of one event. A cache hit of Triton's autotune cache is a run with no
    measurements (nothing was benchmarked now), ``autotune_cache_hit`` set and the cached
    choice as ``best_config_id``."""
    jit = kernel_function(event.fn)
    source, entry, source_path = kernel_source(jit)
    kernel_key = kernel_id(source, entry)
    run = _planned_run(event, context, kernel_key, entry)
    harvest_id = tuning_harvest_id(context, run.run_id)
    kept = first_of_each_id(list(event.timings))  # the benchmarked rows of run.configs, in order
    timings = [list(event.timings.values())[i] for i in kept]
    use_samples = len(event.benched) == len(event.timings)
    benched = [event.benched[i] for i in kept] if use_samples else []
    # Each config id's Triton config: the one benchmarked (recorded) first, else the first
    # listed. Keyed the other way round, a later twin's hooks compiled the IR of the first's
    # measurement.
    originals: dict[str, Any] = {}
    for config in [*event.timings, *event.autotuner.configs]:
        originals.setdefault(as_config(config).id, config)
    graphs: dict[str, dict[str, pa.Table]] = {}
    measurements: list[dict[str, Any]] = []
    configs = () if event.cache_hit else run.configs
    outcomes = {
        item.config.id: _compiled(context, compile_times, event, item.config, originals.get(item.config.id))
        for item in configs
        if item.skip_reason is None
    }
    # The configs corpus.guide.prune_configs compiled to rank and then pruned keep that IR in
    # their skipped rows (as a budgeted harvest's do): without it a ranking of the recorded run
    # compares them, graph-less, with the benchmarked ones.
    compiled_for = getattr(event.autotuner.early_config_prune, "compiled_for", None)
    ranked = {
        item.config.id: outcome
        for item in configs
        if item.skip_reason is not None and compiled_for is not None and context.compiler is not None
        and (outcome := compiled_for(originals.get(item.config.id), context.ir_target)) is not None
    }  # fmt: skip
    listed = instruction_stats_now(
        {k: o.sass_code for k, o in {**outcomes, **ranked}.items()}, context.ir_target
    )
    for index, item in enumerate(configs):
        compiled = outcomes.get(item.config.id)
        if item.config.id in ranked:  # skipped, compiled to rank it
            compiled = ranked[item.config.id]
            graphs.update(compiled.graphs)
            not_run = MeasureOutcome(Status.SKIPPED.value, item.skip_reason)
            row = measurement_row(
                run, replace(item, skip_reason=None), harvest_id, context.facts.arch, compiled, not_run
            )
            if item.config.id in listed:
                fill_row(row, listed[item.config.id])
            measurements.append(row)
            continue
        if compiled is None:  # skipped: never benchmarked, nothing compiled
            measurements.append(
                measurement_row(run, item, harvest_id, context.facts.arch, None, None)
            )
            continue
        bench = _bench_outcome(timings[index], benched[index] if use_samples else None)
        graphs.update(compiled.graphs)
        row = measurement_row(run, item, harvest_id, context.facts.arch, compiled, bench)
        if item.config.id in listed:
            fill_row(row, listed[item.config.id])
        if not bench.samples_ms and bench.status == Status.OK.value:
            row.update(_quantile_columns(timings[index]))
        measurements.append(row)
    row = run_row(
        run, harvest_id, context.facts, context.versions, context.toolchain, context.bench_settings,
        measurements, None, None, started_at, ir_target=context.ir_target, source=Source.RECORD.value,  # type: ignore[arg-type]
    )  # fmt: skip
    row["autotune_cache_hit"] = event.cache_hit
    if event.cache_hit:
        row["best_config_id"] = as_config(event.best).id
    kernel = {
        "kernel_id": kernel_key,
        "family": entry,
        "category": None,
        "suite": jit.fn.__module__,
        "entry_name": entry,
        "source": source,
        "source_path": source_path,
    }
    return EventRows(graphs, kernel, measurements, row)
