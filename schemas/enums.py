"""Closed vocabularies used in the tables (status, timer, IR level, edge and node kinds)."""

from __future__ import annotations

from enum import Enum


class Status(str, Enum):
    """Outcome of one (run, config). Failures are rows, never omissions."""

    OK = "ok"
    COMPILE_ERROR = "compile_error"
    OUT_OF_RESOURCES = "out_of_resources"
    COMPILE_TIMEOUT = "compile_timeout"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    MISMATCH = "mismatch"
    SKIPPED = "skipped"


class Timer(str, Enum):
    """How latencies were measured."""

    CUDA_EVENT = "cuda_event"
    CUDA_GRAPH = "cuda_graph"
    THREAD_CPU = "thread_cpu"
    """CPU time of the benchmark worker's launching thread (the interpreter, version 2)."""
    PROCESS_CPU = "process_cpu"
    """CPU time of the whole benchmark worker process (the interpreter, version 2)."""
    WALL = "wall"
    """Wall clock around each launch (the interpreter, version 1)."""
    TRITON_DO_BENCH = "triton_do_bench"
    """Timed by Triton's own autotuner (``corpus.record``)."""
    EXTERNAL = "external"
    """Imported from another tool's log; ``runs.source`` names the tool."""


class Level(str, Enum):
    """IR level of a graph."""

    TTIR = "ttir"
    TTGIR = "ttgir"
    HELION_FX = "helion_fx"
    """Helion's device IR (an FX graph), imported from Helion's autotune logs."""


class EdgeKind(str, Enum):
    DATA = "data"
    REGION = "region"


class Source(str, Enum):
    """Where a run's rows came from (``runs.source``)."""

    HARVEST = "harvest"
    RECORD = "record"
    HELION = "helion"
    TRITONPARSE = "tritonparse"


class Role(str, Enum):
    """Role of a meta-parameter across kernel families (``measurements.config_roles``)."""

    TILE_M = "tile_m"
    TILE_N = "tile_n"
    TILE_K = "tile_k"
    REDUCTION_BLOCK = "reduction_block"
    SPLIT = "split"
    PROGRAMS = "programs"
    GROUP = "group"
    ROWS_PER_PROGRAM = "rows_per_program"
    OTHER = "other"


class NodeKind(str, Enum):
    OP = "op"
    BLOCK_ARG = "block_arg"


DEVICE_INTERPRETER = "interpreter"
"""Value of ``runs.arch`` and ``runs.device_kind`` for Triton's CPU interpreter."""

STATUSES: tuple[str, ...] = tuple(s.value for s in Status)
TIMERS: tuple[str, ...] = tuple(t.value for t in Timer)
LEVELS: tuple[str, ...] = tuple(lv.value for lv in Level)
ROLES: tuple[str, ...] = tuple(r.value for r in Role)
SOURCES: tuple[str, ...] = tuple(s.value for s in Source)
