"""The compile worker: compiles one config for an explicit target, without a GPU, and
extracts its IR graphs (ttir, ttgir) and static SASS statistics.

Runs inside a :class:`corpus.harvest.workers.WorkerProcess` with ``TRITON_INTERPRET=0``; the parent
enforces the per-compile timeout by killing the process.

Static stats are split where they cost least: the worker reads registers and shared memory
(``cuobjdump``, ~2 ms) and hands back the cubin's code; the parent fills the instruction columns
from one ``nvdisasm`` call over many cubins (:mod:`corpus.harvest.sass_batch`), since each call
costs ~0.2 s of start-up however small the cubin. A worker also keeps the graphs of the IR texts
it extracted last: configs that differ only in num_warps or num_stages share their TTIR.
"""

from __future__ import annotations

import resource
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from corpus.errors import classify_compile_error
from corpus.harvest.binary import binary_hash, launch_key
from corpus.suite.registry import load_suite
from corpus.suite.spec import Config
from corpus.suite.targets import on_sm_count
from schemas.enums import Level, Status


@dataclass(frozen=True)
class CompileInit:
    suite: tuple[str, ...]
    target: str
    static_stats: bool = True
    sm_count: int | None = None
    """SM count of the GPU the harvest measures on (None: unknown, the interpreter): the meta
    inputs stand for its arguments (:func:`corpus.suite.targets.on_sm_count`), so the compile
    is specialized as that GPU's launch will be and the launch finds it in Triton's cache."""


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
    sass_code: bytes | None = None
    """The cubin's code sections (:func:`extract.sass.code_sections`) whose instruction columns
    (``sass_instructions``, ``sass_mix``, ``spill_bytes``) the parent fills; None when ``stats``
    is complete (static stats off, no cubin, or computed here)."""
    stats_s: float = 0.0
    """Seconds this worker spent on static stats (the parent's batched nvdisasm is extra)."""
    graphs_s: float = 0.0
    """Seconds this worker spent extracting IR graphs (cached ones cost ~0)."""
    worker_s: float = 0.0
    """Wall seconds of the whole request in the worker."""
    cpu_s: float = 0.0
    """CPU seconds of the whole request in the worker, the tools it ran (ptxas, cuobjdump)
    included: what a config costs a core, however loaded the machine (cost estimates)."""


def cpu_seconds() -> float:
    """CPU seconds this process and its finished children (ptxas, the CUDA tools) have used."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _short(exc: BaseException, limit: int = 400) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    text = f"{type(exc).__name__}: {lines[-1] if lines else ''}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


GRAPH_CACHE_SIZE = 64
"""IR texts whose graphs a worker keeps (a run's configs repeat a few TTIRs)."""


class CompileHandler:
    """Serves :class:`CompileTask` requests in a worker process."""

    def __init__(self, init: CompileInit) -> None:
        self.init = init
        self.specs = load_suite(init.suite)
        self.graphs: OrderedDict[tuple[str, str | None, str], tuple[str, dict[str, pa.Table]]] = OrderedDict()
        """(level, target, IR text) -> (ir_id, Arrow tables), least recently used first."""

    def __call__(self, task: CompileTask) -> CompileOutcome:
        begin, wall = cpu_seconds(), time.perf_counter()
        outcome = self._serve(task)
        outcome.cpu_s = cpu_seconds() - begin
        outcome.worker_s = time.perf_counter() - wall
        return outcome

    def _serve(self, task: CompileTask) -> CompileOutcome:
        from extract.compile import compile_call

        spec = self.specs[task.family]
        with on_sm_count(self.init.sm_count):
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
        begin = time.perf_counter()
        try:
            self._add_graphs(outcome, result)
        except Exception as exc:  # keep the measurement; the graph is what is lost
            notes.append(f"IR extraction failed: {_short(exc)}")
        outcome.graphs_s = time.perf_counter() - begin
        if self.init.static_stats:
            begin = time.perf_counter()
            try:
                outcome.stats, outcome.sass_code = cubin_stats(result)
            except Exception as exc:
                notes.append(f"static stats failed: {_short(exc)}")
            outcome.stats_s = time.perf_counter() - begin
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
        for level in (Level.TTIR.value, Level.TTGIR.value):
            if level not in result.asm:
                continue
            ir_id, tables = self._graph(result, level)
            outcome.graphs[ir_id] = tables
            setattr(outcome, f"{level}_id", ir_id)

    def _graph(self, result: Any, level: str) -> tuple[str, dict[str, pa.Table]]:
        """(ir_id, tables) of ``result``'s IR at ``level``, from the cache when this worker
        extracted the same text for the same target before (the graph depends on nothing else)."""
        from extract.graph import IrGraph

        text = result.asm[level]
        key = (level, result.target, text if isinstance(text, str) else bytes(text).decode())
        cached = self.graphs.get(key)
        if cached is not None:
            self.graphs.move_to_end(key)
            return cached
        graph = IrGraph.from_compiled(result, level)
        self.graphs[key] = entry = (graph.ir_id, graph.to_arrow())
        if len(self.graphs) > GRAPH_CACHE_SIZE:
            self.graphs.popitem(last=False)
        return entry

def cubin_stats(result: Any) -> tuple[dict[str, Any], bytes | None]:
    """The static-stats columns of a compile ``result`` known without listing its SASS, and
    the code whose instruction columns a caller fills in one batch for many configs
    (:func:`extract.sass.instruction_stats_many`); None: the columns are complete."""
    from extract.sass import code_sections, resource_stats, static_stats

    cubin = result.asm.get("cubin")
    if not isinstance(cubin, (bytes, bytearray)):
        return {"stats_note": "no cubin for this target"}, None
    cubin = bytes(cubin)
    facts = {"kernel_name": result.metadata.get("name"), "dynamic_shared_bytes": result.metadata.get("shared")}
    try:
        code = code_sections(cubin)
    except ValueError:  # not an ELF file we can cut: the whole listing, here, as before
        return static_stats(cubin, **facts).to_row(), None
    return resource_stats(cubin, **facts).to_row(), code


def make_handler(init: CompileInit) -> CompileHandler:
    """Factory named in ``WorkerProcess(factory="corpus.harvest.compile_worker:make_handler")``."""
    return CompileHandler(init)
