"""Plain ``triton.autotune`` on the interpreter, over the same configs and launches as a
harvest run, for ``python -m corpus.bench harvest``'s comparison.

Each :class:`AutotuneTask` wraps the family's kernel in ``triton.autotune`` with the run's
configs and a ``do_bench`` that launches each config as the harvest does (once for the check,
then ``timed`` reps timed by thread CPU time), and launches it once: the autotuner benchmarks
every config, then runs the best. The handler answers the in-process seconds of that launch.
It runs in a worker process whose environment selects the interpreter (``@triton.jit``
decides when it decorates), so only the autotuning is timed, not the process's imports.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from corpus.suite.registry import load_suite
from corpus.suite.spec import Config, KernelSpec

FACTORY = "corpus.bench.autotune:make_handler"


@dataclass(frozen=True)
class AutotuneTask:
    """One harvest run's configs, autotuned on the interpreter with ``timed`` timed reps each."""

    family: str
    dims: Mapping[str, int]
    dtype: str
    seed: int
    configs: tuple[Config, ...]
    timed: int


def thread_cpu_bench(timed: int) -> Callable[..., list[float]]:
    """A ``do_bench`` for ``triton.autotune``: one untimed launch (the harvest's check), then
    ``timed`` launches timed by this thread's CPU time; median, p20, p80 in ms."""

    def bench(kernel_call: Callable[[], Any], quantiles: Sequence[float] = (0.5, 0.2, 0.8)) -> list[float]:
        kernel_call()
        samples = []
        for _ in range(timed):
            start = time.thread_time()
            kernel_call()
            samples.append(1e3 * (time.thread_time() - start))
        samples.sort()
        return [samples[min(len(samples) - 1, int(q * len(samples)))] for q in quantiles]

    return bench


def autotune_arguments(
    spec: KernelSpec, inputs: Mapping[str, Any], dims: Mapping[str, int], configs: Sequence[Config]
) -> tuple[dict[str, Any], list[dict[str, Any]], Callable[[Mapping[str, Any]], tuple[int, ...]]]:
    """(arguments every config shares, each config's own arguments, the grid as a function of
    the autotuner's META). A config's own arguments are its meta-parameters and whatever the
    family derives from them (a ``SINGLE_CHUNK`` flag, ``NUM_STAGES``): Config kwargs to Triton."""
    bound = [spec.bind(inputs, dims, config) for config in configs]
    first = bound[0][1]
    own = {name for config in configs for name in config.kwargs}
    own |= {name for name, value in first.items() for _, args in bound[1:] if not _same(args.get(name), value)}
    shared = {name: value for name, value in first.items() if name not in own}
    per_config = [{name: args[name] for name in sorted(own)} for _, args in bound]
    grids = {tuple(values.items()): grid for values, (grid, _) in zip(per_config, bound)}

    def grid(meta: Mapping[str, Any]) -> tuple[int, ...]:
        return grids[tuple((name, meta[name]) for name in sorted(own))]

    return shared, per_config, grid


def _same(a: Any, b: Any) -> bool:
    return a is b or (not hasattr(a, "shape") and not hasattr(b, "shape") and a == b)


class AutotuneHandler:
    """Serves :class:`AutotuneTask` requests: seconds of the autotuning launch."""

    def __init__(self, suite: tuple[str, ...]) -> None:
        self.specs = load_suite(suite)

    def __call__(self, task: AutotuneTask) -> float:
        import triton

        spec = self.specs[task.family]
        inputs = spec.make_inputs(task.dims, task.dtype, "cpu", task.seed)
        spec.prepare(inputs)
        arguments, own, grid = autotune_arguments(spec, inputs, task.dims, task.configs)
        configs = [
            triton.Config(values, num_warps=c.num_warps, num_stages=c.num_stages, num_ctas=c.num_ctas, maxnreg=c.maxnreg)
            for c, values in zip(task.configs, own)
        ]
        tuned = triton.autotune(configs=configs, key=[], do_bench=thread_cpu_bench(task.timed))(spec.kernel)
        start = time.perf_counter()
        tuned[grid](**arguments)
        return time.perf_counter() - start


def make_handler(suite: tuple[str, ...]) -> AutotuneHandler:
    """Factory named in ``WorkerProcess(factory=FACTORY)``."""
    return AutotuneHandler(suite)

