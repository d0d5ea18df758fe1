"""``python -m corpus.guide.bench --model DIR``: Triton's autotuner on one kernel, exhaustive
vs guided by a model (:func:`corpus.guide.prune_configs`), in one process, figures and ratios
printed.

The kernel (:mod:`corpus.guide.bench_kernel`, not a suite family) has 24 configs (BLOCK_M x
num_warps). Both tunings start from an empty Triton cache of their own, on disk and in
memory (a JIT function of their own). Printed per tuner:
configs Triton benchmarked, tuning wall time (the guided one includes compiling every config to
IR and ranking), the config chosen and its latency as the exhaustive tuning measured it, and
the ratios guided / exhaustive. Without a GPU (or with ``--device cpu``) the kernel runs in
Triton's interpreter, timed by the thread's CPU time: its latencies say nothing about GPUs.
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from schemas.argtypes import positive_int
from schemas.console import print_labelled
from schemas.helptext import plain

BLOCKS_M = (1, 2, 4, 8, 16, 32)
WARPS = (1, 2, 4, 8)


@dataclass(frozen=True)
class BenchConfig:
    model: str
    top_k: int = 4
    rows: int = 256
    cols: int = 1000
    device: str = "auto"


def cpu_bench(kernel_call: Callable[[], Any], quantiles: Sequence[float] | None = None, **_: Any) -> Any:
    """A ``do_bench`` for Triton's interpreter: the median of three calls' thread CPU time (ms),
    once per requested quantile, as Triton's ``do_bench`` returns."""
    from corpus.harvest.timing import ThreadCpuTimer, measure

    samples = sorted(measure(ThreadCpuTimer(), kernel_call, None, 0, 3))
    middle = samples[len(samples) // 2]
    return middle if quantiles is None else [middle for _ in quantiles]


def select_device(device: str) -> bool:
    """True for the interpreter; selects it (before Triton is imported) when asked or when no
    GPU is there."""
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("python -m corpus.guide.bench: error: --device cuda: CUDA is not available")
    interpreter = device == "cpu" or not torch.cuda.is_available()
    if interpreter:
        from corpus.harvest.settings import select_interpreter

        select_interpreter()
    return interpreter


@dataclass(frozen=True)
class Tuning:
    benchmarked: int
    seconds: float
    best: Any
    timings: dict[Any, Any]
    overhead: str = ""
    """The guided tuner's compile and ranking seconds."""
    kernel: Any = None
    """The kernel object this tuning autotuned: its own (see :func:`tune`)."""


def tune(configs: list[Any], prune: dict[str, Any] | None, interpreter: bool, x: Any, y: Any) -> Tuning:
    """One autotuning of the bench kernel from an empty Triton cache of its own: on disk (a new
    TRITON_CACHE_DIR) and in memory (a new JIT function of the same code: on a GPU a
    ``JITFunction`` keeps every kernel it compiled, so a second tuning of one object would load
    the configs the first benchmarked without compiling them)."""
    import triton

    from corpus.guide.bench_kernel import rms_scale_kernel

    cache = tempfile.TemporaryDirectory(prefix="corpus-guide-bench-")
    atexit.register(cache.cleanup)  # after the provider's compile worker, which may use it, is closed
    os.environ["TRITON_CACHE_DIR"] = cache.name
    kernel = triton.jit(rms_scale_kernel.fn)
    tuned = triton.autotune(
        configs, key=["M", "N"], prune_configs_by=prune, do_bench=cpu_bench if interpreter else None
    )(kernel)
    rows, cols = x.shape
    block_n = triton.next_power_of_2(cols)
    begin = time.perf_counter()
    tuned[lambda meta: (triton.cdiv(rows, meta["BLOCK_M"]),)](x, y, rows, cols, x.stride(0), BLOCK_N=block_n)
    seconds = time.perf_counter() - begin
    ranker = (prune or {}).get("early_config_prune")
    overhead = f" (compile to IR {ranker.compile_s:.2f} s, rank {ranker.rank_s:.2f} s)" if ranker else ""
    return Tuning(
        len(tuned.configs_timings), seconds, tuned.best_config, dict(tuned.configs_timings), overhead, kernel
    )


def run_bench(config: BenchConfig) -> str:
    """Both tunings; returns the printed table."""
    interpreter = select_device(config.device)
    import torch
    import triton

    from corpus.guide import prune_configs

    configs = [triton.Config({"BLOCK_M": m}, num_warps=w) for m in BLOCKS_M for w in WARPS]
    device = "cpu" if interpreter else "cuda"
    x = torch.randn(config.rows, config.cols, device=device)
    y = torch.empty_like(x)
    expected = x / torch.sqrt((x * x).mean(dim=1, keepdim=True) + 1e-6)
    guided = tune(configs, prune_configs(config.model, top_k=config.top_k), interpreter, x, y)
    torch.testing.assert_close(y, expected, rtol=1e-4, atol=1e-4)
    exhaustive = tune(configs, None, interpreter, x, y)
    torch.testing.assert_close(y, expected, rtol=1e-4, atol=1e-4)

    def latency(choice: Any) -> float:
        timing = exhaustive.timings[choice]
        return float(timing[0] if isinstance(timing, (list, tuple)) else timing)

    where = "Triton's interpreter (thread CPU time)" if interpreter else torch.cuda.get_device_name()
    lines = [
        f"rms_scale [{config.rows} x {config.cols}] float32 on {where}; {len(configs)} configs; "
        f"model {config.model}, top_k {config.top_k}",
        "| tuner | configs benchmarked | tuning s | chosen config | its latency ms |",
        "|---|---|---|---|---|",
    ]
    for name, tuning in (("exhaustive", exhaustive), ("guided", guided)):
        chosen = tuning.best
        lines.append(
            f"| {name} | {tuning.benchmarked} | {tuning.seconds:.2f}{tuning.overhead} | BLOCK_M={chosen.kwargs['BLOCK_M']} "
            f"w{chosen.num_warps} | {latency(chosen):.4g} |"
        )
    if interpreter:
        lines.append(
            "(the interpreter ignores num_warps: configs that differ only in warps run the same "
            "program, and their latencies differ by timing noise)"
        )
    lines.append(
        f"guided / exhaustive: benchmarks {guided.benchmarked / exhaustive.benchmarked:.2f}, "
        f"tuning time {guided.seconds / exhaustive.seconds:.2f}, "
        f"latency of the chosen config {latency(guided.best) / latency(exhaustive.best):.3f}"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m corpus.guide.bench", description=plain(__doc__))
    parser.add_argument("--model", required=True, help="checkpoint directory (python -m train's OUT/checkpoint)")
    parser.add_argument("--top-k", type=positive_int, default=4, help="configs the guided tuner benchmarks (default: 4)")
    parser.add_argument("--rows", type=positive_int, default=256, help="M, rows of the input (default: 256)")
    parser.add_argument("--cols", type=positive_int, default=1000, help="N, columns of the input (default: 1000)")
    parser.add_argument(
        "--device", choices=("auto", "cpu", "cuda"), default="auto",
        help="cuda, or cpu for Triton's interpreter (default: auto, cuda when available)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if not os.path.isfile(os.path.join(args.model, "checkpoint.json")):
        parser.error(f"--model {args.model}: no checkpoint.json there")
    with warnings.catch_warnings(record=True) as caught:
        table = run_bench(BenchConfig(args.model, args.top_k, args.rows, args.cols, args.device))
    show_warnings(Console(stderr=True), caught)
    print(table)
    return 0


def show_warnings(console: Console, caught: Sequence[warnings.WarningMessage]) -> None:
    """corpus.guide's warnings (``corpus.guide: ...``, what the model ranked without) as
    ``warning:`` lines, as ``python -m train.predict`` prints them: Python's form named the
    kernel's file and printed its ``@triton.jit`` line, which say nothing at a command line.
    Any other warning is warned again, at its own place, as Python shows it."""
    for item in caught:
        if str(item.message).startswith("corpus.guide: "):
            print_labelled(console, "warning", "yellow", str(item.message).removeprefix("corpus.guide: "))
        else:
            warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)


if __name__ == "__main__":
    sys.exit(main())
