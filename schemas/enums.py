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
    WALL = "wall"


class Level(str, Enum):
    """IR level of a graph."""

    TTIR = "ttir"
    TTGIR = "ttgir"


class EdgeKind(str, Enum):
    DATA = "data"
    REGION = "region"


class NodeKind(str, Enum):
    OP = "op"
    BLOCK_ARG = "block_arg"


DEVICE_INTERPRETER = "interpreter"
"""Value of ``runs.arch`` and ``runs.device_kind`` for Triton's CPU interpreter."""

STATUSES: tuple[str, ...] = tuple(s.value for s in Status)
TIMERS: tuple[str, ...] = tuple(t.value for t in Timer)
LEVELS: tuple[str, ...] = tuple(lv.value for lv in Level)
