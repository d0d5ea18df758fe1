"""The compile worker: compiles one config for an explicit target, without a GPU, and
extracts its IR graphs (ttir, ttgir) and static SASS statistics.

Runs inside a :class:`corpus.harvest.workers.WorkerProcess` with ``TRITON_INTERPRET=0``; the parent
enforces the per-compile timeout by killing the process.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from corpus.errors import classify_compile_error
from corpus.harvest.binary import binary_hash, launch_key
from corpus.suite.registry import load_suite
from corpus.suite.spec import Config
from schemas.enums import Level, Status


@dataclass(frozen=True)
class CompileInit:
    suite: tuple[str, ...]
    target: str
    static_stats: bool = True


@dataclass(frozen=True)
class CompileTask:
    family: str
    dims: Mapping[str, int]
    dtype: str
    seed: int
    config: Config


@dataclass
class CompileOutcome:
    """What the harvest records of one compile. ``graphs`` maps ir_id to the Arrow tables of
    that graph (``ir_graphs``, ``ir_nodes``, ``ir_edges``); ``stats`` holds the static SASS
    columns of ``measurements``."""

    status: str
    error: str | None = None
    compile_time_s: float | None = None
    ttir_id: str | None = None
    ttgir_id: str | None = None
    graphs: dict[str, dict[str, pa.Table]] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    cache_hit: bool = False
    binary_hash: str | None = None
    """:func:`corpus.harvest.binary.binary_hash` of the compiled binary (``measurements.binary_hash``)."""
    launch_key: str | None = None
    """Grid and runtime arguments (:func:`corpus.harvest.binary.launch_key`): with ``binary_hash``, what
    a GPU executes."""
    program_key: str | None = None
    """Grid and every argument, constexprs included: what the interpreter executes."""


def _short(exc: BaseException, limit: int = 400) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    text = f"{type(exc).__name__}: {lines[-1] if lines else ''}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


class CompileHandler:
    """Serves :class:`CompileTask` requests in a worker process."""

    def __init__(self, init: CompileInit) -> None:
        self.init = init
        self.specs = load_suite(init.suite)

    def __call__(self, task: CompileTask) -> CompileOutcome:
        from extract.compile import compile_call

        spec = self.specs[task.family]
        inputs = spec.make_inputs(task.dims, task.dtype, "meta", task.seed)
        grid, args = spec.bind(inputs, task.dims, task.config)
        try:
            # always_compile: compile_time_s must be a real compile, not a cache load
            result = compile_call(
                spec.kernel, args, target=self.init.target, always_compile=True, **task.config.compile_options()
            )
        except Exception as exc:
            return CompileOutcome(status=classify_compile_error(exc), error=_short(exc))
        outcome = CompileOutcome(
            status=Status.OK.value,
            compile_time_s=result.compile_time_s,
            cache_hit=bool(result.metadata.get("cache_hit", False)),
        )
        self._add_identity(outcome, result, spec.kernel, grid, args)
        notes = []
        try:
            self._add_graphs(outcome, result)
        except Exception as exc:  # keep the measurement; the graph is what is lost
            notes.append(f"IR extraction failed: {_short(exc)}")
        if self.init.static_stats:
            try:
                outcome.stats = self._stats(result)
            except Exception as exc:
                notes.append(f"static stats failed: {_short(exc)}")
        if notes:
            outcome.stats["stats_note"] = "; ".join(filter(None, [outcome.stats.get("stats_note"), *notes]))
        return outcome

    @staticmethod
    def _add_identity(outcome: CompileOutcome, result: Any, kernel: Any, grid: Any, args: Mapping[str, Any]) -> None:
        """What this config executes: binary and launch (configs of a run that agree are timed once)."""
        constexprs = frozenset(p.name for p in kernel.params if getattr(p, "is_constexpr", False))
        outcome.binary_hash = binary_hash(result.asm, result.metadata)
        outcome.launch_key = launch_key(grid, args, constexprs)
        outcome.program_key = launch_key(grid, args, constexprs, constexprs=True)

    def _add_graphs(self, outcome: CompileOutcome, result: Any) -> None:
        from extract.graph import IrGraph

        for level in (Level.TTIR.value, Level.TTGIR.value):
            if level not in result.asm:
                continue
            graph = IrGraph.from_compiled(result, level)
            outcome.graphs[graph.ir_id] = graph.to_arrow()
            setattr(outcome, f"{level}_id", graph.ir_id)

    def _stats(self, result: Any) -> dict[str, Any]:
        from extract.sass import static_stats

        cubin = result.asm.get("cubin")
        if not isinstance(cubin, (bytes, bytearray)):
            return {"stats_note": "no cubin for this target"}
        stats = static_stats(
            bytes(cubin),
            kernel_name=result.metadata.get("name"),
            dynamic_shared_bytes=result.metadata.get("shared"),
        )
        return stats.to_row()


def make_handler(init: CompileInit) -> CompileHandler:
    """Factory named in ``WorkerProcess(factory="corpus.harvest.compile_worker:make_handler")``."""
    return CompileHandler(init)
