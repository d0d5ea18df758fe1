"""Compile one recorded config for an explicit target: IR graphs, static stats, binary hash.

The SASS listing's columns are left to the caller (``CompileOutcome.sass_code``), which lists
every config of a run in one ``nvdisasm`` call
(:func:`corpus.harvest.sass_batch.instruction_stats_now`): a start-up of ~0.2 s per config
otherwise.

The same extraction the harvest's compile worker does, run in the recording process on the
recorded call's own arguments (real tensors: only dtype and alignment matter to the compiler).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from corpus.errors import classify_compile_error
from corpus.harvest.binary import binary_hash
from corpus.harvest.compile_worker import CompileOutcome, cubin_stats
from corpus.suite.spec import Config
from schemas.enums import Level, Status


def _short(exc: BaseException, limit: int = 400) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    text = f"{type(exc).__name__}: {lines[-1] if lines else ''}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


Heuristic = tuple[str, Callable[[dict[str, Any]], Any]]
"""(meta-parameter, rule) of a ``@triton.heuristics``: the rule maps every argument to its value."""


def heuristics_of(jit: Any) -> tuple[Heuristic, ...]:
    """The ``@triton.heuristics`` around ``jit`` (outermost first), found as the worker finds
    the kernel: the object its module binds to the function's name, seen through
    (:func:`extract.kernel_loading.unwrap`); empty when the module binds none."""
    import sys

    from extract.kernel_loading import unwrap

    module = sys.modules.get(getattr(jit.fn, "__module__", ""))
    bound = getattr(module, jit.fn.__name__, None) if module is not None else None
    if bound is None:
        return ()
    try:
        return unwrap(bound, jit.fn.__name__).heuristics
    except Exception:  # a name bound to something else: nothing to evaluate
        return ()


def call_arguments(
    jit: Any, args: Mapping[str, Any], config: Config, heuristics: tuple[Heuristic, ...] = ()
) -> dict[str, Any]:
    """Every parameter of ``jit`` for one config: the call's arguments, the config's
    meta-parameters, what the ``heuristics`` choose from them (as Triton evaluates them at a
    launch: outermost first, each seeing the arguments, the config and the launch options),
    and the defaults of constexpr parameters nobody set."""
    merged = {**args, **config.kwargs}
    launch = {"num_warps": config.num_warps, "num_stages": config.num_stages, "num_ctas": config.num_ctas}
    for name, rule in heuristics:
        merged[name] = rule({**merged, **launch})
    for param in jit.params:
        if param.name not in merged and param.is_constexpr and param.has_default:
            merged[param.name] = param.default
    return {name: merged[name] for name in jit.arg_names if name in merged}


@contextlib.contextmanager
def _compiler_mode() -> Iterator[None]:
    """Triton's code generator, not its interpreter, for the duration of a compile: a
    recording on the interpreter still extracts the IR the kernel compiles to for the target.
    (``knobs.runtime.scope`` restores the knob and its environment variable afterwards.)"""
    from triton import knobs

    with knobs.runtime.scope():
        knobs.runtime.interpret = False
        yield


def compile_config(
    jit: Any,
    args: Mapping[str, Any],
    config: Config,
    target: str,
    *,
    always_compile: bool,
    heuristics: tuple[Heuristic, ...] = (),
) -> tuple[CompileOutcome, str | None]:
    """(outcome, Triton's metadata hash of the compiled kernel) for one config. The outcome's
    instruction columns are unfilled where ``sass_code`` is set (see the module docstring).

    ``always_compile`` times a real compile (the interpreter compiled nothing); otherwise
    Triton's on-disk cache serves the compile the workload itself did. ``heuristics``: those
    of the kernel's ``@triton.heuristics`` (:func:`heuristics_of`), evaluated per config."""
    from extract.compile import compile_call
    from extract.graph import IrGraph

    try:
        with _compiler_mode():
            result = compile_call(
                jit,
                call_arguments(jit, args, config, heuristics),
                target=target,
                always_compile=always_compile,
                **config.compile_options(),
            )
    except Exception as exc:
        return CompileOutcome(classify_compile_error(exc), _short(exc)), None
    outcome = CompileOutcome(
        Status.OK.value,
        compile_time_s=result.compile_time_s,
        cache_hit=bool(result.metadata.get("cache_hit")),
    )
    outcome.binary_hash = binary_hash(result.asm, result.metadata)
    for level in (Level.TTIR.value, Level.TTGIR.value):
        if level in result.asm:
            graph = IrGraph.from_compiled(result, level)
            outcome.graphs[graph.ir_id] = graph.to_arrow()
            setattr(outcome, f"{level}_id", graph.ir_id)
    outcome.stats, outcome.sass_code = cubin_stats(result)
    digest = result.metadata.get("hash")
    return outcome, None if digest is None else str(digest)
