"""Triton's hooks, installed for the duration of a recording and removed afterwards.

- ``knobs.autotuning.listener`` (Triton 3.9 has it, 3.6 does not: feature-detected) reports
  each finished tuning: the configs benchmarked with their timings, the best one, and whether
  Triton's autotune cache served it. Where the installed Triton has no such knob, and on the
  interpreter (Triton's listener call walks ``.fn`` to a ``JITFunction`` and fails on an
  interpreted kernel), the same event is derived from the autotuner's state around each call
  (``Autotuner.cache`` gains the new key, ``configs_timings`` holds the timings) -- the
  "equivalent wrapper" of the autotuner.
- ``knobs.compilation.listener`` reports each compile: its metadata hash and stage times, so a
  GPU workload's own compile times are recorded (the interpreter never compiles).
- ``Autotuner.run`` is wrapped to see the actual arguments of the tuned call (the listener does
  not pass them) and, on the interpreter, to hand the autotuner a CPU-time bench (Triton's own
  benchmarker needs a GPU driver).
- A subclass of ``Autotuner`` with a ``run`` of its own that never calls ``Autotuner.run``
  (flag-gems' ``LibTuner``: its own key strategy, policy and SQLite cache) tunes where neither
  hook sees it. Its ``run`` is wrapped too (classes made during the recording included, through
  ``Autotuner.__init_subclass__``), only to report each such tuning as not recorded: it used to
  pass in silence, a flag-gems workload ending in "recorded 0 run(s)".
- ``JITFunction.run`` (``InterpretedFunction.run`` on the interpreter) is wrapped to count the
  launches of kernels that no autotuner tunes (plain ``@triton.jit``, or an autotuner with a
  single config), by kernel name: there is nothing to record of them, and a workload of such
  kernels (most of liger-kernel's) also ended in a bare "recorded 0 run(s)".

The knob listeners go through :mod:`extract.triton_compat` (chained to the hooks installed
before, which are back in place on exit); ``Autotuner.run`` is restored on exit too.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from corpus.harvest.timing import ThreadCpuTimer, measure, summarize

__all__ = ["LAUNCH_OPTIONS", "AutotuneEvent", "BenchedConfig", "CpuBench", "TritonHooks", "has_autotune_listener"]


@dataclass
class BenchedConfig:
    """What the recorder's CPU bench saw of one config: per-rep samples (ms) or the error."""

    samples_ms: list[float] = field(default_factory=list)
    error: BaseException | None = None


@dataclass(frozen=True)
class AutotuneEvent:
    """One finished tuning of one autotuned kernel for one key.

    ``fn`` is the ``JITFunction``; ``autotuner`` the ``triton.runtime.Autotuner``; ``args`` the
    call's arguments by parameter name (positional ones bound, keyword ones as passed, launch
    options such as ``grid`` removed); ``grid`` the call's grid (a tuple or a callable of the
    meta-parameters); ``timings`` maps each benchmarked ``triton.Config`` to what the
    autotuner's bench returned (ms: median, p20, p80; ``inf`` for a failed config); ``benched``
    holds, in the same order, what the recorder's CPU bench measured (empty on a GPU, where
    Triton's bench ran); ``cache_hit`` is True when Triton's autotune cache served the result.
    """

    fn: Any
    autotuner: Any
    key: tuple[Any, ...]
    args: dict[str, Any]
    grid: Any
    timings: dict[Any, list[float]]
    best: Any
    cache_hit: bool
    duration_s: float | None
    benched: list[BenchedConfig]


LAUNCH_OPTIONS = ("grid", "warmup")
"""Keyword arguments of ``Autotuner.run`` that are launch options, not kernel arguments."""


class StaticAssertFailure(Exception):
    """A config's ``tl.static_assert`` failed on the interpreter: on a GPU the compile raises
    ``CompileTimeAssertionFailure`` and Triton's autotuner scores the config ``inf``; the
    interpreter raises a bare ``AssertionError`` at launch, which ended the whole tuning."""


def _static_assert_failure(error: BaseException) -> StaticAssertFailure | None:
    """The failure, when ``error`` (or what caused it) is the interpreter's ``tl.static_assert``
    failing: an ``AssertionError`` raised by ``triton.runtime.interpreter``'s stand-in for it."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, AssertionError) and seen.__traceback__ is not None:
            tb = seen.__traceback__
            while tb.tb_next is not None:
                tb = tb.tb_next
            code = tb.tb_frame.f_code
            if code.co_name == "_new_static_assert" and code.co_filename.endswith("interpreter.py"):
                return StaticAssertFailure(f"tl.static_assert failed: {seen}")
        seen = seen.__cause__
    return None


class CpuBench:
    """The bench the recorder supplies to Triton's autotuner on the interpreter: CPU time of
    the launching thread (:class:`corpus.harvest.timing.ThreadCpuTimer`), ``warmup`` untimed then
    ``rep`` timed calls. Returns what Triton's ``do_bench`` returns for ``quantiles``; ``inf``
    for a config whose ``tl.static_assert`` fails, as Triton's autotuner scores it on a GPU."""

    def __init__(self, warmup: int, rep: int) -> None:
        self.warmup = warmup
        self.rep = rep
        self.timer = ThreadCpuTimer()

    def __call__(
        self, kernel_call: Callable[[], Any], quantiles: tuple[float, ...] | None = None, **_: Any
    ) -> Any:
        benched = BenchedConfig()
        _current_call().benched.append(benched)
        try:
            benched.samples_ms = measure(self.timer, kernel_call, None, self.warmup, self.rep)
        except BaseException as exc:
            benched.error = _static_assert_failure(exc) or exc
            if benched.error is exc:
                raise
            return math.inf if quantiles is None else [math.inf for _ in quantiles]
        stats = summarize(benched.samples_ms)
        by_quantile = {0.5: stats.median_ms, 0.2: stats.p20_ms, 0.8: stats.p80_ms}
        if quantiles is None:
            return stats.mean_ms
        return [by_quantile.get(q, stats.median_ms) for q in quantiles]


@dataclass
class _Call:
    """One ``Autotuner.run`` call in flight. The arguments are bound to names only when a
    tuning is recorded: launches of tuned keys, the common case, pay for nothing else."""

    autotuner: Any
    positional: tuple[Any, ...]
    keywords: dict[str, Any]
    benched: list[BenchedConfig] = field(default_factory=list)

    @property
    def args(self) -> dict[str, Any]:
        bound = dict(zip(self.autotuner.arg_names, self.positional))
        bound.update({k: v for k, v in self.keywords.items() if k not in LAUNCH_OPTIONS})
        return bound

    @property
    def grid(self) -> Any:
        return self.keywords.get("grid")


_local = threading.local()


def _stack() -> list[_Call]:
    if not hasattr(_local, "calls"):
        _local.calls = []
    return _local.calls


def _current_call() -> _Call:
    stack = _stack()
    if not stack:
        raise RuntimeError("the recorder's bench was called outside an autotuned launch")
    return stack[-1]


def _jit_function(obj: Any) -> Any:
    """The innermost Triton kernel object under autotune/heuristics wrappers: a
    ``JITFunction``, or the interpreter's ``InterpretedFunction`` (both wrap the Python
    function as ``.fn``)."""
    while hasattr(getattr(obj, "fn", None), "fn"):
        obj = obj.fn
    return obj


def _count(counts: dict[int, list[Any]], kernel: Any) -> None:
    entry = counts.get(id(kernel))
    if entry is None:
        counts[id(kernel)] = [kernel, 1]  # the object held: its id is not reused meanwhile
    else:
        entry[1] += 1


def has_autotune_listener() -> bool:
    """Whether the installed Triton reports tunings through ``knobs.autotuning.listener``."""
    from triton import knobs

    return hasattr(getattr(knobs, "autotuning", None), "listener")


def _compile_total_s(times: Any) -> float | None:
    try:
        return (times.ir_initialization + times.total_lowering + times.store_results) / 1e6
    except AttributeError:
        return None


class TritonHooks:
    """Installs the hooks (see the module docstring) and calls ``on_event`` for each tuning.

    ``bench`` is the CPU bench to supply on the interpreter (None on a GPU).
    ``use_listener=False`` forces the wrapper-derived events even where the knob exists (the
    path older Triton versions take; tests exercise it here).
    """

    def __init__(
        self,
        on_event: Callable[[AutotuneEvent], None],
        bench: CpuBench | None,
        use_listener: bool | None = None,
    ) -> None:
        self.on_event = on_event
        self.bench = bench
        self.use_listener = has_autotune_listener() if use_listener is None else use_listener
        self.compile_times: dict[str, float | None] = {}
        """Metadata hash -> compile seconds (None when Triton's cache served it), as the
        workload compiled."""
        self.cache_hits_in_memory = 0
        """Tuned calls served from the autotuner's in-memory cache (no event, nothing written)."""
        self.failed_tunings: list[str] = []
        """Autotuned calls that raised before their tuning finished (kernel: exception)."""
        self.unseen_tunings: list[str] = []
        """Tunings by an autotuner whose own ``run`` bypasses ``Autotuner.run`` (kernel and
        tuner class): not recorded."""
        self._seen_runs = 0
        """``Autotuner.run`` calls so far: a subclass's ``run`` that reached it was recorded."""
        self._untuned_by_kernel: dict[int, list[Any]] = {}
        """id -> [kernel object (or single-config autotuner), launches no tuning covered]
        (by id: a kernel class may define ``__eq__`` and no hash)."""

    @contextlib.contextmanager
    def installed(self) -> Iterator[TritonHooks]:
        from triton.runtime import Autotuner

        from extract.triton_compat import autotuning_listener, compilation_listener

        original_run = Autotuner.run
        with contextlib.ExitStack() as stack:
            stack.enter_context(compilation_listener(self._on_compile))
            if self.use_listener:
                stack.enter_context(autotuning_listener(self._on_autotune))
            stack.enter_context(self._own_runs_watched(Autotuner))
            stack.enter_context(self._untuned_launches_counted())
            Autotuner.run = self._wrap_run(original_run)
            try:
                yield self
            finally:
                Autotuner.run = original_run

    @contextlib.contextmanager
    def _own_runs_watched(self, base: type) -> Iterator[None]:
        """Wrap the ``run`` of every subclass of ``base`` that defines its own, now and as new
        ones are defined (a workload imports flag-gems after the hooks are in); all restored."""
        wrapped: dict[type, Callable[..., Any]] = {}

        def watch(cls: type) -> None:
            if "run" in cls.__dict__ and cls not in wrapped:
                wrapped[cls] = cls.__dict__["run"]
                cls.run = self._watch_own_run(cls, cls.__dict__["run"])  # type: ignore[attr-defined]
            for sub in cls.__subclasses__():
                watch(sub)

        for sub in base.__subclasses__():
            watch(sub)
        had_hook = "__init_subclass__" in base.__dict__
        previous = base.__dict__.get("__init_subclass__")

        def init_subclass(cls: type, **kwargs: Any) -> None:
            if previous is not None:  # base's own hook first, as without ours
                previous.__get__(None, cls)(**kwargs)
            else:
                super(base, cls).__init_subclass__(**kwargs)  # type: ignore[misc]
            watch(cls)

        base.__init_subclass__ = classmethod(init_subclass)  # type: ignore[assignment,method-assign]
        try:
            yield
        finally:
            if had_hook:
                base.__init_subclass__ = previous  # type: ignore[method-assign]
            else:
                del base.__init_subclass__
            for cls, run in wrapped.items():
                cls.run = run  # type: ignore[attr-defined]

    @contextlib.contextmanager
    def _untuned_launches_counted(self) -> Iterator[None]:
        """Wrap the ``run`` of Triton's kernel classes (restored on exit): a launch with no
        autotuner's run in flight on this thread is one no tuning covers."""
        from triton.runtime.jit import JITFunction

        classes: list[type] = [JITFunction]
        with contextlib.suppress(ImportError):
            from triton.runtime.interpreter import InterpretedFunction

            classes.append(InterpretedFunction)
        originals = {cls: cls.__dict__["run"] for cls in classes if "run" in cls.__dict__}
        for cls, run in originals.items():
            cls.run = self._count_untuned(run)  # type: ignore[attr-defined]
        try:
            yield
        finally:
            for cls, run in originals.items():
                cls.run = run  # type: ignore[attr-defined]

    def _count_untuned(self, original_run: Callable[..., Any]) -> Callable[..., Any]:
        counts = self._untuned_by_kernel  # named once, at the end: a launch pays a dict update

        def run(kernel: Any, *args: Any, **kwargs: Any) -> Any:
            # no autotuner's run in flight on this thread, and no warmup (a compile, not a launch)
            if not _stack() and not kwargs.get("warmup"):
                _count(counts, kernel)
            return original_run(kernel, *args, **kwargs)

        return run

    @property
    def untuned_launches(self) -> dict[str, int]:
        """Kernel name -> launches outside any autotuner's run, or by a single-config autotuner
        (nothing tuned, nothing recorded)."""
        named: dict[str, int] = {}
        for kernel, count in self._untuned_by_kernel.values():
            name = str(getattr(_jit_function(kernel), "__name__", "kernel"))
            named[name] = named.get(name, 0) + count
        return named

    def _watch_own_run(self, owner: type, own_run: Callable[..., Any]) -> Callable[..., Any]:
        hooks = self
        tuner = f"{owner.__module__}.{owner.__qualname__}"  # the class whose run() it is

        def run(autotuner: Any, *args: Any, **kwargs: Any) -> Any:
            seen_before, reported_before = hooks._seen_runs, len(hooks.unseen_tunings)
            timings_before = getattr(autotuner, "configs_timings", None)
            raised = False
            try:
                return own_run(autotuner, *args, **kwargs)
            except BaseException:
                raised = True
                raise
            finally:
                reached_triton = hooks._seen_runs != seen_before  # recorded (or reported) there
                # a subclass's run calling its parent's (both wrapped): the innermost one says it
                said = len(hooks.unseen_tunings) != reported_before
                tuned = raised or getattr(autotuner, "configs_timings", None) is not timings_before
                if not (reached_triton or said) and tuned and len(getattr(autotuner, "configs", ())) > 1:
                    name = getattr(_jit_function(autotuner), "__name__", "kernel")
                    hooks.unseen_tunings.append(f"{name} (tuned by {tuner}, whose own run() corpus.record cannot see)")

        return run

    # -- hooks (extract.triton_compat chains them to the ones installed before) ---------------

    def _on_compile(
        self, *, metadata: dict[str, Any], times: Any, cache_hit: bool, **_: Any
    ) -> None:
        digest = metadata.get("hash")
        if digest is None:
            return
        if cache_hit:  # a load: it must not erase the compile the workload did (the recorder's
            self.compile_times.setdefault(str(digest), None)  # own IR compile hits that entry)
        else:
            self.compile_times[str(digest)] = _compile_total_s(times)

    def _on_autotune(
        self,
        *,
        key: tuple[Any, ...],
        best_config: Any,
        configs_timings: dict[Any, list[float]],
        duration: float | None,
        cache_hit: bool,
        **_: Any,
    ) -> None:
        stack = _stack()
        if not stack:  # a tuning outside any wrapped call (the autotuner's run was captured
            return  # before recording started): nothing to bind its arguments to
        self._emit(stack[-1], key, best_config, configs_timings, cache_hit, duration)

    def _wrap_run(self, original_run: Callable[..., Any]) -> Callable[..., Any]:
        hooks = self

        def run(autotuner: Any, *args: Any, **kwargs: Any) -> Any:
            hooks._seen_runs += 1
            call = _Call(autotuner, args, kwargs)
            keys_before = len(autotuner.cache)  # the cache only grows: new keys come last
            bench_time_before = getattr(autotuner, "bench_time", None)
            supplied = hooks._supply_bench(autotuner)
            stack = _stack()
            stack.append(call)
            raised: BaseException | None = None
            try:
                return original_run(autotuner, *args, **kwargs)
            except BaseException as exc:
                raised = exc
                raise
            finally:
                stack.pop()
                if supplied:
                    del autotuner.__dict__["do_bench"]
                if len(autotuner.cache) > keys_before and not hooks.use_listener:
                    hooks._derive_events(call, keys_before, bench_time_before)
                elif raised is not None and len(autotuner.configs) > 1:  # not "already tuned"
                    name = getattr(_jit_function(autotuner), "__name__", "kernel")
                    hooks.failed_tunings.append(f"{name}: {type(raised).__name__}: {raised}"[:400])
                elif len(autotuner.configs) <= 1:  # Triton launches its one config untuned
                    _count(hooks._untuned_by_kernel, autotuner)
                elif len(autotuner.cache) == keys_before:
                    hooks.cache_hits_in_memory += 1

        return run

    def _supply_bench(self, autotuner: Any) -> bool:
        """Hand the autotuner the CPU bench unless it brought its own ``do_bench``.
        ``Autotuner.do_bench`` is a cached property: an instance attribute takes its place. The
        one ``corpus.guide``'s provider set on the interpreter (``replaceable``) is no user's
        choice: replaced, else a kernel guided before recording began lost its samples."""
        if self.bench is None or getattr(autotuner, "_do_bench", None) is not None:
            return False
        if "do_bench" in autotuner.__dict__ and not getattr(autotuner.__dict__["do_bench"], "replaceable", False):
            return False
        autotuner.__dict__["do_bench"] = self.bench
        return True

    def _derive_events(self, call: _Call, keys_before: int, bench_time_before: Any) -> None:
        """The listener's events from the autotuner's state, for Triton versions without
        ``knobs.autotuning.listener`` (and the interpreter, where Triton's listener fails)."""
        autotuner = call.autotuner
        timings = getattr(autotuner, "configs_timings", None)
        bench_time = getattr(autotuner, "bench_time", None)
        for key in list(autotuner.cache)[keys_before:]:
            if timings is None or len(timings) < 2:
                continue  # one config left after pruning: nothing was benchmarked
            cache_hit = bench_time is bench_time_before  # Triton's disk cache answered
            self._emit(
                call,
                key,
                autotuner.cache[key],
                timings,
                cache_hit,
                None if cache_hit else bench_time,
            )

    def _emit(
        self,
        call: _Call,
        key: tuple[Any, ...],
        best: Any,
        timings: dict[Any, list[float]],
        cache_hit: bool,
        duration: float | None,
    ) -> None:
        event = AutotuneEvent(
            fn=_jit_function(call.autotuner),
            autotuner=call.autotuner,
            key=tuple(key),
            args=dict(call.args),
            grid=call.grid,
            timings=dict(timings),
            best=best,
            cache_hit=bool(cache_hit),
            duration_s=duration,
            benched=list(call.benched),
        )
        self.on_event(event)
