"""A cost model inside Triton's own autotuner: a ``prune_configs_by`` provider.

```python
import triton
from corpus.guide import prune_configs

@triton.autotune(configs, key=["n_elements"], prune_configs_by=prune_configs("results/checkpoint", top_k=4))
@triton.jit
def kernel(...): ...
```

When the autotuner meets a new key it calls the provider with every config. The provider
compiles each config to IR for the target (on a GPU in this process, where Triton's cache then
serves the autotuner's own compiles; on the interpreter in a worker process where Triton
compiles, see :class:`corpus.record.compile_worker.WorkerCompiler`), ranks them with the model
(:func:`train.guide.score_candidates`) and returns the first ``top_k`` of its hedged order
(:func:`train.guide.hedged_order`: the model's best, then its order spread over the knob
space): Triton benchmarks those only.
The choice is cached per autotuner (for as long as it lives) and autotune key (the key Triton
computes: the ``key`` arguments' values and every tensor's dtype), so a key tuned again (a cleared cache, ``Autotuner.warmup``) costs
no compile.

When the model cannot rank -- no config compiles for the target, the model refuses the device,
the kernel's source cannot be loaded -- the provider returns every config (Triton benchmarks
them all, as without it) and warns once per kernel.

On Triton's interpreter the provider also hands the autotuner a CPU-time bench
(:class:`InterpreterBench`) when it has none: Triton's default benchmarker asks the GPU driver
for one and fails there ("0 active drivers"), which left a user to set the private
``kernel._do_bench`` by hand. A bench the user gave (``do_bench=``) or ``corpus.record``
supplies is kept; ``corpus.record`` replaces this one with its own while it records.

Why ``early_config_prune`` and not ``perf_model``/``top_k``: Triton calls ``perf_model`` once
per config with the arguments only (no view of the other configs), and its ``top_k`` differs
between releases (3.6 takes a float of *all* configs and may round to zero; 3.9 takes it of
the pruned ones, at least one). ``early_config_prune(configs, named_args, **kwargs)`` has the
same signature in 3.6 and 3.9 and sees every config at once. The provider finds the kernel
through the autotuner that calls it (``Autotuner.prune_configs`` is its caller in both).
A user's own ``early_config_prune`` still runs first: pass it as ``early_config_prune=``.
"""

from __future__ import annotations

import atexit
import functools
import inspect
import os
import tempfile
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

SKIP = "not benchmarked: not in the top {k} of model {model}'s hedged order (corpus.guide.prune_configs)"
"""What ``corpus.record`` writes as the ``error`` of a config the provider pruned."""
UNCOMPILED = (
    "not benchmarked: did not compile for {target} when corpus.guide.prune_configs ranked the "
    "configs ({error})"
)
"""... and of a config that did not compile when the provider ranked the configs."""


@dataclass(frozen=True)
class Ranking:
    """One tuning's verdict: the configs (``triton.Config``) Triton benchmarks (best first),
    those that did not compile for ranking (config -> why: their ``skipped`` rows say so), and
    the compile outcomes of those that did, for the IR target ``ir_target`` (``runs.ir_target``
    spelling). Keyed by Triton's configs, not config ids: configs differing only in their
    ``pre_hook`` share an id."""

    chosen: tuple[Any, ...]
    uncompiled: Mapping[Any, str]
    compiled: Mapping[Any, Any] = field(default_factory=dict)
    ir_target: str | None = None


class CannotRank(RuntimeError):
    """The model cannot rank this kernel's configs; the message says why."""


def prune_configs(
    model: str | Path,
    top_k: int = 4,
    *,
    target: str | None = None,
    early_config_prune: Callable[..., Sequence[Any]] | None = None,
    compile_timeout_s: float = 120.0,
) -> dict[str, Callable[..., list[Any]]]:
    """``prune_configs_by`` for ``triton.autotune``: benchmark only the ``top_k`` configs the
    checkpoint in ``model`` (``python -m train``'s ``OUT/checkpoint``) ranks best.

    ``target``: the compile target of the IR the model reads (default: the GPU's own arch,
    ``sm_90`` on the interpreter). ``early_config_prune``: the user's own pruning, applied
    first. ``compile_timeout_s``: a compile that takes longer counts as failed (interpreter
    worker only). Raises ``FileNotFoundError``/``ValueError`` for an unusable model at once.
    """
    return {
        "early_config_prune": ConfigRanker(
            model,
            top_k,
            target=target,
            early_config_prune=early_config_prune,
            compile_timeout_s=compile_timeout_s,
        )
    }


def attach(
    kernel: Any,
    model: str | Path,
    top_k: int = 4,
    *,
    target: str | None = None,
    compile_timeout_s: float = 120.0,
) -> ConfigRanker:
    """Guide a kernel that a library already decorated with ``triton.autotune`` (liger-kernel's,
    flag-gems' ``libtuner``): from its next new tuning key on, Triton benchmarks only the
    ``top_k`` configs the checkpoint ``model`` ranks best. Returns the provider (its counters).

    ``kernel`` is the autotuned kernel or a wrapper holding it as ``.fn`` (flag-gems'
    ``@libentry()``). The kernel's own ``early_config_prune`` keeps running first; attaching
    again replaces the provider instead of stacking two. Keys tuned before stay as tuned.
    Raises ``TypeError`` when nothing under ``kernel`` is a ``triton.autotune`` autotuner (there
    is nothing to guide; assigning ``prune_configs_by`` to a decorated kernel is silently
    ignored by Triton, which reads it once, at decoration).
    """
    autotuner = autotuner_of(kernel)
    own = autotuner.early_config_prune
    if isinstance(own, ConfigRanker):  # attached before: keep the kernel's own prune only
        own = own.early_config_prune
    ranker = ConfigRanker(
        model, top_k, target=target, early_config_prune=own, compile_timeout_s=compile_timeout_s
    )
    autotuner.early_config_prune = ranker
    return ranker


def autotuner_of(kernel: Any) -> Any:
    """The ``triton.runtime.Autotuner`` (or subclass, such as flag-gems' ``LibTuner``) that is
    ``kernel`` or lies under its ``.fn`` wrappers; ``TypeError`` naming ``kernel`` if none."""
    from triton.runtime.autotuner import Autotuner

    obj, seen = kernel, 0
    while obj is not None and seen < 16:  # wrappers nest a few deep; a cycle must not hang
        if isinstance(obj, Autotuner):
            return obj
        obj, seen = getattr(obj, "fn", None), seen + 1
    name = getattr(kernel, "__name__", None) or type(kernel).__name__
    raise TypeError(
        f"corpus.guide.attach: {name} is not autotuned (no triton.autotune autotuner under it), "
        f"so there are no configs to rank"
    )


def _calling_autotuner(depth: int = 4) -> Any:
    """The ``triton.runtime.Autotuner`` whose method called us (``self`` of a caller frame)."""
    from triton.runtime.autotuner import Autotuner

    frame = inspect.currentframe()
    for _ in range(depth):
        frame = frame.f_back if frame is not None else None
        candidate = frame.f_locals.get("self") if frame is not None else None
        if isinstance(candidate, Autotuner):
            return candidate
    return None


def _kernel_of(autotuner: Any) -> Any:
    """The ``JITFunction`` (or the interpreter's ``InterpretedFunction``) under the autotuner's
    wrappers (heuristics, ...)."""
    obj = autotuner
    while hasattr(getattr(obj, "fn", None), "fn"):
        obj = obj.fn
    return obj


def tuning_key(autotuner: Any, args: Mapping[str, Any]) -> tuple[Any, ...]:
    """The key Triton's autotuner caches a tuning under: the ``key`` arguments' values, then the
    dtype of every argument that has one."""
    key: list[Any] = [args[name] for name in autotuner.keys if name in args]
    key += [str(value.dtype) for value in args.values() if hasattr(value, "dtype")]
    return tuple(key)


class ConfigRanker:
    """The ``early_config_prune`` callable of :func:`prune_configs` (see the module docstring).

    ``compiles`` counts configs compiled so far (a cache hit compiles none), ``compile_s`` and
    ``rank_s`` the seconds spent compiling and ranking; ``warned`` holds, per kernel (its Python
    function, held weakly), the one-time warnings given for it."""

    def __init__(
        self,
        model: str | Path,
        top_k: int,
        *,
        target: str | None = None,
        early_config_prune: Callable[..., Sequence[Any]] | None = None,
        compile_timeout_s: float = 120.0,
    ) -> None:
        from train.guide import load_model

        if not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"top_k must be a positive int, got {top_k!r}")
        self.model = load_model(model)
        self.top_k = top_k
        self.target = target
        self.early_config_prune = early_config_prune
        self.compile_timeout_s = compile_timeout_s
        self.cache: weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], Ranking | None]] = (
            weakref.WeakKeyDictionary()
        )
        """Rankings per autotuner, then per (tuning key, config ids). Held by the autotuner
        object itself, not its ``id()``: a kernel's autotuner that is freed (a notebook cell run
        again, a kernel made in a loop) gives its address to the next one, which was served the
        freed kernel's ranking without a compile."""
        self.reasons: dict[str, str] = {}
        self.latest: Ranking | None = None
        """The latest tuning's ranking (None: it fell back or ranked nothing), replaced at
        every call as ``reasons`` is."""
        """Why each config the latest tuning did not benchmark was left out (config id ->
        reason); replaced at every call, so reasons never outlive their tuning."""
        self.compiles = 0
        self.compile_s = 0.0
        self.rank_s = 0.0
        self.warned: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
        """Keyed by the kernel's function object, not its name: two kernels of one name in two
        modules each get their warning (keyed by name, the second's fallback was silent)."""
        self.warned_unknown: set[str] = set()
        """... and those given when the kernel is unknown (not called by an autotuner)."""
        self._compiler: Callable[..., Any] | None = None
        self._lock = threading.Lock()

    def __call__(self, configs: Sequence[Any], named_args: Mapping[str, Any], **kwargs: Any) -> list[Any]:
        """Triton's ``early_config_prune(configs, named_args, **kwargs)``."""
        from corpus.record.hooks import LAUNCH_OPTIONS

        self.reasons = {}
        self.latest = None
        autotuner = _calling_autotuner()
        # whatever is pruned, Triton benchmarks what is left right after this call
        supply_interpreter_bench(autotuner)
        if self.early_config_prune is not None:
            configs = list(self.early_config_prune(configs, named_args, **kwargs))
        configs = list(configs)
        if len(configs) <= self.top_k:
            return configs
        if autotuner is None:
            return self._fallback(configs, None, "it was not called by a triton.autotune autotuner")
        # One candidate per config as Triton tells configs apart (its timings are a dict of
        # configs: kwargs, options, ir_override and pre_hook): a config listed twice is ranked
        # once, else the top_k held it twice and Triton benchmarked fewer than top_k. Configs
        # differing only in their pre_hook are two candidates, each compiled with its own hook
        # (it may set what the kernel specializes on): ranked as one, the first stood for both.
        distinct = list(dict.fromkeys(configs))
        overridden = [c for c in distinct if getattr(c, "ir_override", None)]
        rankable = [c for c in distinct if not getattr(c, "ir_override", None)]
        if overridden:
            self._unranked_overrides(autotuner, overridden)
        if len(rankable) <= self.top_k:
            return distinct
        args = {**named_args, **{k: v for k, v in kwargs.items() if k not in LAUNCH_OPTIONS}}
        key = (tuning_key(autotuner, args), tuple(rankable))
        with self._lock:
            rankings = self.cache.setdefault(autotuner, {})
            if key not in rankings:
                rankings[key] = self._choose(autotuner, rankable, args, kwargs.get("grid"))
            ranking = rankings[key]
        if ranking is None:
            return configs
        skip = SKIP.format(k=self.top_k, model=self.model.name)
        self.reasons = {config: skip for config in rankable if config not in ranking.chosen}
        self.reasons.update(ranking.uncompiled)
        self.latest = ranking
        return [*ranking.chosen, *overridden]

    def skip_reason_for(self, config: Any) -> str | None:
        """Why ``config`` (a ``triton.Config``) was not benchmarked, when this provider pruned it
        (``corpus.record`` writes it into the config's ``skipped`` row)."""
        return self.reasons.get(config)

    def compiled_for(self, config: Any, ir_target: str) -> Any:
        """The compile outcome (:class:`corpus.harvest.compile_worker.CompileOutcome`: IR graphs,
        static stats) of ``config`` (a ``triton.Config``) that this provider compiled to rank the
        latest tuning's configs and then pruned, when it compiled for ``ir_target`` (e.g.
        ``sm_90``); else None. ``corpus.record`` stores it in the config's ``skipped`` row, as
        a budgeted harvest keeps the IR of what it did not benchmark."""
        ranking = self.latest
        if ranking is None or ranking.ir_target != ir_target or config in ranking.chosen:
            return None
        return ranking.compiled.get(config)

    def _unranked_overrides(self, autotuner: Any, overridden: list[Any]) -> None:
        """Say once per kernel that configs with ``ir_override`` are benchmarked unranked: they
        launch the IR in their file, and the model would read what their source compiles to
        (ranked by it, one could be pruned or chosen for a program that never runs)."""
        kernel = _kernel_of(autotuner)
        if not self._first_time(kernel, "ir_override"):
            return
        files = ", ".join(sorted({Path(str(c.ir_override)).name for c in overridden}))
        warnings.warn(
            f"corpus.guide: {len(overridden)} config(s) of {_kernel_name(kernel)} replace their IR "
            f"(ir_override: {files}); model {self.model.name} ranks configs by the IR their source "
            f"compiles to, which they do not run, so Triton benchmarks them besides the model's top "
            f"{self.top_k}",
            stacklevel=3,
        )

    def _choose(self, autotuner: Any, configs: list[Any], args: dict[str, Any], grid: Any) -> Ranking | None:
        kernel = _kernel_of(autotuner)
        try:
            return self._rank(kernel, autotuner, configs, args, grid)
        except CannotRank as exc:
            self._fallback(configs, kernel, str(exc))
            return None
        except Exception as exc:  # the autotuner must go on: tune everything, say why once
            self._fallback(configs, kernel, f"{type(exc).__name__}: {exc}")
            return None

    def _first_time(self, kernel: Any, what: str) -> bool:
        """True once per ``kernel`` (a ``JITFunction``, or None when unknown) and ``what``."""
        function = getattr(kernel, "fn", None)
        said = self.warned_unknown if function is None else self.warned.setdefault(function, set())
        if what in said:
            return False
        said.add(what)
        return True

    def _fallback(self, configs: list[Any], kernel: Any, why: str) -> list[Any]:
        if self._first_time(kernel, "fallback"):
            warnings.warn(
                f"corpus.guide: model {self.model.name} cannot rank the configs of {_kernel_name(kernel)} "
                f"({why}); Triton benchmarks all {len(configs)}",
                stacklevel=3,
            )
        return configs

    def _rank(self, kernel: Any, autotuner: Any, configs: list[Any], args: dict[str, Any], grid: Any) -> Ranking:
        from corpus.guide.candidates import candidate_frames, run_columns
        from corpus.harvest.compile_worker import CompileOutcome
        from corpus.harvest.plan import PlannedConfig, PlannedRun
        from corpus.harvest.rows import ir_target_name
        from corpus.harvest.sass_batch import instruction_stats_now
        from corpus.record.replay import HookReplayError, config_arguments
        from corpus.record.rows import (
            as_config,
            autotuned_problem,
            config_grid,
            kernel_function,
            kernel_source,
        )
        from schemas.enums import Status
        from schemas.identity import kernel_id
        from train.guide import arch_refusal, hedged_order, score_candidates
        from train.guide.encoding import knob_matrix

        interpreter, facts = _device()
        target = self.target or ("sm_90" if interpreter else facts.arch)
        refusal = arch_refusal(self.model, facts.arch, ir_target_name(target))
        if refusal is not None:  # before compiling anything
            raise CannotRank(refusal)
        compiler = self._compiler_for(interpreter, target)
        jit = kernel_function(kernel)
        source, entry, _ = kernel_source(jit)
        suite_configs = [as_config(c) for c in configs]
        keys = [str(index) for index in range(len(configs))]  # config ids may repeat (pre_hook)
        outcomes = {}
        begin = time.perf_counter()
        for key, original, config in zip(keys, configs, suite_configs):
            # Compile with the arguments the config launches with: its pre_hook and the
            # autotuner's (reset_to_zero, restore_value, a user's) replayed on copies, as Triton
            # runs them before benchmarking it; liger-kernel's hooks set TensorDescriptor block
            # shapes the compiler specializes on.
            try:
                launched = config_arguments(autotuner, original, args)
            except HookReplayError as exc:
                outcome = CompileOutcome(Status.COMPILE_ERROR.value, str(exc)[:400])
            else:
                outcome, _ = compiler(kernel, launched, config)
                self.compiles += 1
            outcomes[key] = outcome
        sass = instruction_stats_now({k: o.sass_code for k, o in outcomes.items()}, target)
        self.compile_s += time.perf_counter() - begin
        begin = time.perf_counter()
        compiled = [i for i, key in enumerate(keys) if outcomes[key].status == Status.OK.value]
        if not compiled:
            first = next(iter(outcomes.values()))
            raise CannotRank(f"no config compiles for {target}: {first.error}")
        problem = autotuned_problem(args, autotuner.keys)
        run = PlannedRun(
            family=entry,
            scale=None,  # type: ignore[arg-type]  # not a suite scale
            dims=problem.dims,
            dtype=problem.dtype,  # type: ignore[arg-type]
            seed=None,  # type: ignore[arg-type]
            run_id="candidates",
            kernel_id=kernel_id(source, entry),
            signature={},  # the run is never written: nothing hashes it
            configs=(),
            default_config_id=None,  # type: ignore[arg-type]  # no untuned default
            sizes=problem.dims,
            flags=problem.flags,
        )
        planned = [PlannedConfig(suite_configs[i], None, config_grid(grid, args, suite_configs[i])) for i in compiled]
        run = replace(run, configs=tuple(planned))
        candidates = candidate_frames(
            run, planned, outcomes, run_columns(run, facts, target, None, None), arch=facts.arch, level=self.model.level,
            sass=sass, keys=[keys[i] for i in compiled],
        )
        # Handed over, not caught with warnings.catch_warnings, whose filters are process-wide:
        # a program may tune kernels from several threads.
        told: list[UserWarning] = []
        scores = score_candidates(
            self.model, candidates.frame, candidates.ir_nodes, candidates.ir_edges, candidates.ir_graphs,
            arch=facts.arch, on_input_warning=told.append,
        )  # fmt: skip
        self._input_warnings(jit, entry, told)
        # Triton benchmarks the top_k without the model seeing a result in between: the model's
        # order spread over the knobs, so one region it is wrong about cannot take every slot.
        order = hedged_order(
            scores.predicted_ms, scores.p_valid, scores.rank, features=knob_matrix(candidates.frame)
        )
        self.rank_s += time.perf_counter() - begin
        uncompiled = {
            configs[i]: UNCOMPILED.format(target=target, error=(outcome.error or outcome.status).splitlines()[0])
            for i, outcome in enumerate(outcomes[key] for key in keys)
            if outcome.status != Status.OK.value
        }
        return Ranking(
            tuple(configs[compiled[j]] for j in order[: self.top_k]),
            uncompiled,
            {configs[i]: outcomes[keys[i]] for i in compiled},
            ir_target_name(target),
        )

    def _input_warnings(self, jit: Any, entry: str, told: list[UserWarning]) -> None:
        """Say once per kernel and kind, at the kernel's definition rather than at a line of
        corpus.guide's own code, what the model ranked its configs without: inputs (a kernel
        outside the suite has no flops/bytes counts) or IR values it never saw in training."""
        from train.predict import INPUT_WARNINGS, input_warning

        code = getattr(getattr(jit, "fn", None), "__code__", None)
        for warning in told:
            kind = type(warning).__name__
            if not self._first_time(jit, kind):
                continue
            what = INPUT_WARNINGS.get(kind, "with a warning")
            advice = getattr(warning, "advice", "")
            headline = f"corpus.guide: model {self.model.name} ranks the configs of {entry} {what}"
            warnings.warn_explicit(
                input_warning(headline + (f" ({advice})" if advice else ""), _details(warning)),
                type(warning),
                filename=code.co_filename if code else "<kernel>",
                lineno=code.co_firstlineno if code else 0,
            )

    def _compiler_for(self, interpreter: bool, target: str) -> Callable[..., Any]:
        """On a GPU, compile in this process (the autotuner's own compiles then hit Triton's
        cache); on the interpreter, in a worker process where Triton compiles (started once)."""
        if self._compiler is not None:
            return self._compiler
        if not interpreter:
            from corpus.record.compiled import compile_config, heuristics_of
            from corpus.record.rows import kernel_function

            self._compiler = lambda fn, args, config: compile_config(
                kernel_function(fn), args, config, target, always_compile=False,
                heuristics=heuristics_of(kernel_function(fn)),
            )
            return self._compiler
        from corpus.harvest.settings import compiler_selected, read_settings, worker_environment
        from corpus.record.compile_worker import WorkerCompiler

        settings = read_settings(allow_interpret=True)
        scratch = tempfile.TemporaryDirectory(prefix="corpus-guide-")
        cache_dir = settings.triton_cache_dir or os.path.join(scratch.name, "triton-cache")
        environment = worker_environment(settings, interpret=False, cache_dir=cache_dir)
        with compiler_selected():
            worker = WorkerCompiler(target, environment, timeout_s=self.compile_timeout_s)
        atexit.register(scratch.cleanup)  # atexit runs last-in first-out: after worker.close
        atexit.register(worker.close)
        self._compiler = worker
        return worker


class InterpreterBench:
    """The ``do_bench`` the provider hands an autotuner on Triton's interpreter that has none:
    the median of three calls' thread CPU time (ms), as ``python -m corpus.guide.bench`` times
    the interpreter (:func:`corpus.guide.bench.cpu_bench`). Interpreter CPU time says nothing
    about a GPU; it orders the configs Triton benchmarks there."""

    replaceable = True
    """Not the user's choice: ``corpus.record`` swaps in its own bench (which keeps every
    sample) while it records a tuning."""

    def __call__(self, kernel_call: Callable[[], Any], quantiles: Sequence[float] | None = None, **_: Any) -> Any:
        from corpus.guide.bench import cpu_bench

        return cpu_bench(kernel_call, quantiles)


INTERPRETER_BENCH = InterpreterBench()


def supply_interpreter_bench(autotuner: Any) -> bool:
    """Give ``autotuner`` (a ``triton.runtime.Autotuner``, or None) :data:`INTERPRETER_BENCH`
    when Triton's interpreter is on and it has no bench of its own (no ``do_bench=`` given, none
    set on it by ``corpus.record`` or a user); True when it did. ``Autotuner.do_bench`` is a
    cached property, so an instance attribute of that name takes its place."""
    from triton import knobs

    if autotuner is None or not knobs.runtime.interpret:
        return False
    if getattr(autotuner, "_do_bench", None) is not None or "do_bench" in vars(autotuner):
        return False
    autotuner.__dict__["do_bench"] = INTERPRETER_BENCH
    return True


def _kernel_name(kernel: Any) -> str:
    """The kernel's name in a warning: ``module.qualname`` (one name may be defined in two
    modules), or ``kernel`` when unknown."""
    function = getattr(kernel, "fn", None)
    if function is None:
        return "kernel"
    module = getattr(function, "__module__", None)
    name = getattr(function, "__qualname__", None) or getattr(function, "__name__", "kernel")
    return f"{module}.{name}" if module else name


def _device() -> tuple[bool, Any]:
    """(interpreter?, device facts) of where the autotuned kernel runs."""
    import torch
    from triton import knobs

    from corpus.harvest.device import interpreter_facts

    if knobs.runtime.interpret:
        return True, interpreter_facts()
    if not torch.cuda.is_available():
        raise CannotRank("no GPU and Triton's interpreter is off")
    return False, _cuda_facts(torch.cuda.current_device())


@functools.cache
def _cuda_facts(index: int) -> Any:
    """:func:`corpus.harvest.device.cuda_facts` of ``cuda:index``, read once per process: it
    runs ``nvidia-smi`` twice (tens of milliseconds, seconds on a machine of many GPUs without
    persistence mode), which every tuning the provider ranks would otherwise add to its tuning
    time."""
    from corpus.harvest.device import cuda_facts

    return cuda_facts(f"cuda:{index}")


def _details(warning: UserWarning) -> list[str]:
    """The detail lines of a ranking's input warning (what is missing or unseen), or its
    whole text when it has none: the provider words the first line its own way."""
    from train.predict import warning_parts

    headline, details = warning_parts(warning)
    return details or [headline]
