"""Extraction benchmark: how long building an :class:`~extract.graph.IrGraph` takes, per
graph, in nodes per second, and relative to ``triton.compile`` of the same kernel.

Kernels come from a cases file (default ``tests/extract/kernels/cases.py``, run from the
repository root): each case is compiled with Triton's cache bypassed (so the compile time is
real), then its TTIR and TTGIR graphs are built ``reps`` times. With ``fixtures`` set, the
IR files in that directory are timed instead (no compile times).

Each graph is timed by the wall clock (median and best of the reps) and by this thread's CPU
time (median): on a machine other jobs load, the CPU figure is the steadier one.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from extract.graph import IrGraph

DEFAULT_CASES = Path("tests/extract/kernels/cases.py")
TARGET_GRAPH_MS = 20.0  # a ~1,000-op TTGIR
TARGET_COMPILE_SHARE = 0.05


@dataclass(frozen=True)
class BenchConfig:
    """What to time. ``only`` filters case names; ``reps`` extractions per graph."""

    cases_file: Path = DEFAULT_CASES
    fixtures: Path | None = None
    target: str = "sm_90"
    reps: int = 7
    only: tuple[str, ...] = ()


@dataclass(frozen=True)
class GraphTiming:
    """One graph: median extraction time (ms) over the reps, and compile time (s) if known."""

    name: str
    level: str
    nodes: int
    median_ms: float
    compile_s: float | None
    best_ms: float | None = None  # fastest rep: less sensitive to a busy machine
    cpu_ms: float | None = None  # median thread CPU time of the reps: steadier still

    @property
    def nodes_per_s(self) -> float:
        return self.nodes / (self.median_ms / 1e3) if self.median_ms > 0 else float("inf")


@dataclass(frozen=True)
class BenchResult:
    timings: list[GraphTiming]

    def summary(self) -> dict[str, float | None]:
        """Median ms per graph, overall nodes/s, extraction time as % of compile time
        (both IR levels of a kernel against its one compile), and the largest graph."""
        times = [t.median_ms for t in self.timings]
        total_nodes = sum(t.nodes for t in self.timings)
        largest = max(self.timings, key=lambda t: t.nodes)
        shares = []
        by_kernel: dict[str, list[GraphTiming]] = {}
        for timing in self.timings:
            by_kernel.setdefault(timing.name, []).append(timing)
        for group in by_kernel.values():
            compile_s = group[0].compile_s
            if compile_s:
                shares.append(100.0 * sum(t.median_ms for t in group) / 1e3 / compile_s)
        return {
            "graphs": len(self.timings),
            "median_ms_per_graph": statistics.median(times),
            "nodes_per_s": total_nodes / (sum(times) / 1e3),
            "median_pct_of_compile": statistics.median(shares) if shares else None,
            "max_pct_of_compile": max(shares) if shares else None,
            "largest_graph_nodes": largest.nodes,
            "largest_graph_ms": largest.median_ms,
            "largest_graph_best_ms": largest.best_ms if largest.best_ms is not None else largest.median_ms,
            "largest_graph_cpu_ms": largest.cpu_ms,
        }


def _time_ms(build: Callable[[], Any], reps: int) -> tuple[float, float, float, Any]:
    """(median wall ms, best wall ms, median thread-CPU ms, last result) of ``reps`` calls."""
    samples, cpu = [], []
    result = None
    for _ in range(max(1, reps)):
        start, start_cpu = time.perf_counter(), time.thread_time()
        result = build()
        cpu.append((time.thread_time() - start_cpu) * 1e3)
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples), min(samples), statistics.median(cpu), result


def _load_cases(path: Path) -> list[Any]:
    spec = importlib.util.spec_from_file_location("_extract_bench_cases", path.resolve())
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load cases from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses in the file look their module up
    spec.loader.exec_module(module)
    return list(module.cases())


def _time_compiled(config: BenchConfig) -> Iterable[GraphTiming]:
    from extract.compile import compile_call

    for case in _load_cases(config.cases_file):
        if config.only and case.name not in config.only:
            continue
        result = compile_call(
            case.fn,
            case.args,
            target=config.target,
            num_warps=case.num_warps,
            num_stages=case.num_stages,
            always_compile=True,
        )
        for level in ("ttir", "ttgir"):
            median, best, cpu, graph = _time_ms(
                lambda level=level, result=result: IrGraph.from_compiled(result, level), config.reps
            )
            yield GraphTiming(case.name, level, len(graph.nodes), median, result.compile_time_s, best, cpu)


def _time_fixtures(config: BenchConfig) -> Iterable[GraphTiming]:
    assert config.fixtures is not None
    for path in sorted(config.fixtures.glob("*.tt*ir")):
        if config.only and path.name.split(".")[0] not in config.only:
            continue
        text = path.read_text()
        median, best, cpu, graph = _time_ms(
            lambda text=text, path=path: IrGraph.from_text(text, source=str(path)), config.reps
        )
        yield GraphTiming(path.stem, graph.level, len(graph.nodes), median, None, best, cpu)


def run_bench(config: BenchConfig, out: TextIO | None = None) -> BenchResult:
    """Time extraction as configured and print a per-graph table and the summary."""
    out = out or sys.stdout
    timings = list(_time_fixtures(config) if config.fixtures else _time_compiled(config))
    if not timings:
        raise ValueError("nothing to benchmark (check --cases / --fixtures / --only)")
    result = BenchResult(timings)
    out.write(
        f"{'graph':28} {'level':6} {'nodes':>6} {'median ms':>10} {'best ms':>8} {'nodes/s':>10} "
        f"{'compile s':>10} {'% compile':>10}\n"
    )
    for t in timings:
        compile_s = f"{t.compile_s:10.3f}" if t.compile_s else f"{'-':>10}"
        share = f"{100 * t.median_ms / 1e3 / t.compile_s:9.2f}%" if t.compile_s else f"{'-':>10}"
        best = t.best_ms if t.best_ms is not None else t.median_ms
        out.write(
            f"{t.name:28} {t.level:6} {t.nodes:6d} {t.median_ms:10.2f} {best:8.2f} {t.nodes_per_s:10.0f} "
            f"{compile_s} {share}\n"
        )
    summary = result.summary()
    out.write("\n")
    out.write(f"graphs                         {summary['graphs']}\n")
    out.write(f"median extraction per graph    {summary['median_ms_per_graph']:.2f} ms\n")
    out.write(f"throughput                     {summary['nodes_per_s']:.0f} nodes/s\n")
    out.write(
        f"largest graph                  {summary['largest_graph_nodes']} nodes in {summary['largest_graph_ms']:.2f} ms median, "
        f"{summary['largest_graph_best_ms']:.2f} ms best, {summary['largest_graph_cpu_ms'] or 0:.2f} ms CPU "
        f"(target < {TARGET_GRAPH_MS:.0f} ms for ~1,000 ops; load average {os.getloadavg()[0]:.2f})\n"
    )
    if summary["median_pct_of_compile"] is not None:
        out.write(
            f"extraction / triton.compile    median {summary['median_pct_of_compile']:.2f}%, "
            f"max {summary['max_pct_of_compile']:.2f}% (TTIR+TTGIR vs one compile; target < {100 * TARGET_COMPILE_SHARE:.0f}%)\n"
        )
    return result
