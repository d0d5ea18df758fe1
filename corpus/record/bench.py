"""``python -m corpus.record.bench``: the recorder's overhead on a workload outside autotuning.

Once a key is tuned, every further launch of an autotuned kernel goes through the recorder's
wrapper of ``Autotuner.run`` (it binds the arguments and looks for new tunings). Two figures:

- the wrapper alone: host CPU time per call of ``Autotuner.run`` through the wrapper minus the
  same call without it (what a GPU launch, ~10-30 us of host time, pays);
- end to end on the interpreter: CPU time per launch of an already-tuned kernel without and
  with the recorder installed (blocks alternate, so drift hits both).

Runs on the interpreter, in its own process (the interpreter must be selected before Triton
is imported).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from schemas.helptext import plain


@dataclass(frozen=True)
class RecordBenchConfig:
    launches: int = 200
    """Launches per timed block on the interpreter."""
    blocks: int = 5
    """Alternating blocks per setting."""
    wrapper_calls: int = 20000
    """Calls per timing of the bare wrapper."""


def _kernel() -> Any:
    import triton
    import triton.language as tl

    @triton.autotune(
        configs=[
            triton.Config({"BLOCK": 16}, num_warps=1),
            triton.Config({"BLOCK": 32}, num_warps=1),
        ],
        key=["n"],
    )
    @triton.jit
    def bench_copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)

    return bench_copy_kernel


def _per_call_us(function: Callable[[], Any], calls: int) -> float:
    start = time.thread_time()
    for _ in range(calls):
        function()
    return (time.thread_time() - start) / calls * 1e6


def wrapper_overhead_us(config: RecordBenchConfig) -> tuple[float, float]:
    """(bare call, wrapped call) in us of CPU time: ``Autotuner.run`` stubbed so only the
    wrapper's own work is measured, on a real autotuner with a tuned key."""
    import torch

    from corpus.record.hooks import TritonHooks

    kernel = _kernel()
    kernel.cache[(64, "torch.float32", "torch.float32")] = kernel.configs[0]
    x = torch.zeros(64)

    def stub(autotuner: Any, *args: Any, **kwargs: Any) -> None:
        return None

    wrapped = TritonHooks(lambda event: None, bench=None, use_listener=True)._wrap_run(stub)
    grid = (4,)
    bare = statistics.median(
        _per_call_us(lambda: stub(kernel, x, x, 64, grid=grid, warmup=False), config.wrapper_calls)
        for _ in range(5)
    )
    through = statistics.median(
        _per_call_us(
            lambda: wrapped(kernel, x, x, 64, grid=grid, warmup=False), config.wrapper_calls
        )
        for _ in range(5)
    )
    return bare, through


def interpreter_launch_ms(config: RecordBenchConfig) -> tuple[float, float]:
    """(without, with the recorder) median CPU ms per launch of a tuned kernel."""
    import torch

    from corpus.record import record

    kernel = _kernel()
    x, out = torch.randn(64), torch.empty(64)

    def launches() -> float:
        return _per_call_us(lambda: kernel[(4,)](x, out, 64), config.launches) / 1e3

    with tempfile.TemporaryDirectory() as scratch:
        recorder = record(os.path.join(scratch, "d"), rep=1, compile_ir=False)
        with recorder:
            kernel[(4,)](x, out, 64)  # the tuning (recorded) happens here, outside the timing
        without, with_recorder = [], []
        for block in range(config.blocks):
            if block % 2:  # alternate which setting goes first
                without.append(launches())
            with recorder.__class__(recorder.options):
                with_recorder.append(launches())
            if not block % 2:
                without.append(launches())
    return statistics.median(without), statistics.median(with_recorder)


def run_bench(config: RecordBenchConfig, out: Any = None) -> None:
    """Print the figures and ratios."""
    out = out or sys.stdout
    bare, through = wrapper_overhead_us(config)
    out.write(
        f"wrapper: {bare:.2f} us bare call, {through:.2f} us wrapped: +{through - bare:.2f} us per launch\n"
    )
    without, with_recorder = interpreter_launch_ms(config)
    ratio = with_recorder / without
    out.write(
        f"interpreter launch of a tuned kernel: {without:.3f} ms without, {with_recorder:.3f} ms with "
        f"the recorder (ratio {ratio:.3f})\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m corpus.record.bench", description=plain(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--launches", type=int, default=200, help="launches per timed block (default: 200)"
    )
    parser.add_argument(
        "--blocks", type=int, default=5, help="alternating timed blocks per setting (default: 5)"
    )
    args = parser.parse_args(argv)
    from corpus.harvest.settings import select_interpreter

    select_interpreter()
    run_bench(RecordBenchConfig(launches=args.launches, blocks=args.blocks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
