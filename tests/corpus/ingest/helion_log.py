"""Write real Helion autotune logs with Helion's own code, on the CPU:
``python -m tests.corpus.ingest.helion_log OUT_DIR`` (the Helion tests run it in a subprocess;
tested with helion 1.5.1, torch 2.13.0 CPU, triton 3.9.0).

Helion's Triton backend runs on Triton's interpreter here (``TRITON_INTERPRET=1``, CPU
tensors), with the settings that let it tune without a GPU: the benchmark subprocess and the
precompile fork off (``HELION_AUTOTUNE_BENCHMARK_SUBPROCESS=0``,
``HELION_AUTOTUNE_PRECOMPILE=0``), and ``do_bench`` / ``interleaved_bench`` -- CUDA-event
timers, which Helion's ``Backend.get_do_bench`` docstring says tests may patch -- replaced by
Helion's own wall-clock timers (``do_bench_generic``, ``interleaved_bench_generic``, what its
Pallas and Metal backends use). Every file is then written by Helion's ``AutotuneLogSink``
(``HELION_AUTOTUNE_LOG=BASE``, ``HELION_AUTOTUNE_LOG_DETAILS=1``).

Written (every tuning is a ``FiniteSearch`` over four configs: two that run, one with a block
size Triton cannot compile, one persistent kernel the interpreter cannot run; with
``HELION_AUTOTUNE_IGNORE_ERRORS=1`` the last two are logged as errors):

- ``OUT_DIR/a.{csv,meta.jsonl}``: ``row_sum`` on a (32, 64) input tuned twice (the same Helion
  run_id twice in one appended log), then on a (16, 128) input;
- ``OUT_DIR/b.{csv,meta.jsonl}``: ``row_sum`` on the (32, 64) input again, from a kernel built
  with another log path and another random seed: the same thing logged elsewhere;
- ``OUT_DIR/c.{csv,meta.jsonl,sources.csv}``: Helion's Triton backend never reports generated
  source hashes (only its CuTe backend, which needs a GPU, does), so this log is written the way
  Helion's own tests write one (``test/test_kernel_metadata.py``): its ``AutotuneLogSink`` fed
  ``AutotuneLogEntry`` values by hand -- one config timed, one ``deduplicated`` with the same
  source hash, and a third of another source;
- ``OUT_DIR/d.{csv,meta.jsonl}``: ``row_sum`` on the (32, 64) input tuned over configs a user
  may well list, which differ only in Helion's defaults written out (``num_warps=4``,
  ``num_stages=1``): Helion benchmarks and logs each under a config id of its own;
- ``OUT_DIR/e.{csv,meta.jsonl}``: two kernels in one log: ``row_sum`` on the (32, 64) input,
  then ``scale_add`` (two tensors and a float) on float32 (32, 64) and float16 (16, 32) inputs.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

if __name__ == "__main__":  # before Triton is imported: the interpreter is chosen at import
    os.environ["TRITON_INTERPRET"] = "1"

import helion
import helion.language as hl
import torch

SHAPES = ((32, 64), (16, 128))


def _environment(base: Path, seed: int) -> None:
    os.environ.update(
        {
            "TRITON_INTERPRET": "1",
            "HELION_AUTOTUNE_LOG": str(base),
            "HELION_AUTOTUNE_LOG_DETAILS": "1",
            "HELION_AUTOTUNE_BENCHMARK_SUBPROCESS": "0",
            "HELION_AUTOTUNE_PRECOMPILE": "0",
            "HELION_AUTOTUNE_PROGRESS_BAR": "0",
            "HELION_AUTOTUNE_LOG_LEVEL": "0",
            "HELION_AUTOTUNE_IGNORE_ERRORS": "1",
            "HELION_AUTOTUNE_RANDOM_SEED": str(seed),
        }
    )


def row_sum(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty([m], dtype=torch.float32, device=x.device)
    for tile_m in hl.tile(m):
        acc = hl.zeros([tile_m], dtype=torch.float32)
        for tile_n in hl.tile(n):
            acc = acc + x[tile_m, tile_n].to(torch.float32).sum(-1)
        out[tile_m] = acc
    return out


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size()):
        out[tile] = x[tile] + alpha * y[tile]
    return out


CONFIGS = (
    helion.Config(block_sizes=[8, 16], num_warps=2),
    helion.Config(block_sizes=[16, 32], num_warps=4, num_stages=2),
    helion.Config(block_sizes=[24, 16]),  # not a power of two: Triton refuses it
    helion.Config(block_sizes=[16, 16], pid_type="persistent_interleaved"),  # no SM count here
)
TWINS = (  # one program: Helion's defaults are 4 warps and 1 stage
    helion.Config(block_sizes=[8, 16]),
    helion.Config(block_sizes=[8, 16], num_warps=4),
    helion.Config(block_sizes=[8, 16], num_warps=4, num_stages=1),
)


SCALE_ADD_CONFIGS = (
    helion.Config(block_sizes=[8, 16]),
    helion.Config(block_sizes=[16, 16], num_warps=2),
    helion.Config(block_sizes=[24, 16]),  # not a power of two: Triton refuses it
)


def _tune(
    kernel: helion.Kernel, shape: tuple[int, int], configs: tuple[helion.Config, ...] = CONFIGS, args: tuple = ()
) -> None:
    from helion.autotuner.finite_search import FiniteSearch

    args = args or (torch.randn(shape),)
    random.seed(0)
    FiniteSearch(kernel.bind(args), args, configs=list(configs)).autotune()


def write_logs(out: Path) -> None:
    from unittest import mock

    _environment(out / "a", seed=1)
    from helion.autotuner import base_search, benchmark_provider, benchmarking

    timers = (
        mock.patch.object(benchmark_provider, "do_bench", benchmarking.do_bench_generic),
        mock.patch.object(base_search, "do_bench", benchmarking.do_bench_generic),
        mock.patch.object(base_search, "interleaved_bench", benchmarking.interleaved_bench_generic),
    )
    for timer in timers:
        timer.start()
    kernel = helion.kernel(row_sum)  # settings (the log path among them) read now
    _tune(kernel, SHAPES[0])
    _tune(kernel, SHAPES[0])
    _tune(kernel, SHAPES[1])
    _environment(out / "b", seed=2)
    _tune(helion.kernel(row_sum), SHAPES[0])
    _environment(out / "d", seed=3)
    _tune(helion.kernel(row_sum), SHAPES[0], TWINS)
    _environment(out / "e", seed=4)
    _tune(helion.kernel(row_sum), SHAPES[0])
    adder = helion.kernel(scale_add)
    for shape, dtype, alpha in ((SHAPES[0], torch.float32, 0.5), ((16, 32), torch.float16, 2.0)):
        x, y = torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype)
        _tune(adder, shape, SCALE_ADD_CONFIGS, (x, y, alpha))
    for timer in timers:
        timer.stop()
    _sources_log(out / "c")


def _sources_log(base: Path) -> None:
    from helion.autotuner.logger import AutotuneLogEntry, AutotuneLogSink
    from helion.autotuner.metrics import KernelMetadata
    from helion.autotuner.search_space_logger import canonical_config_id

    metadata = KernelMetadata(
        kernel_name="row_sum", kernel_source="def row_sum(x): ...", input_shapes="[(8, 8)]",
        dtypes="['torch.float32']", hardware="NVIDIA H100", settings={"backend": "cute"},
    )  # fmt: skip
    outcomes = (("1111", "ok", 0.5), ("1111", "deduplicated", None), ("2222", "ok", 0.75))
    with AutotuneLogSink(str(base), metadata, collect_dataset=True) as sink:
        sink.start_run()
        for block, (digest, status, perf) in zip((8, 16, 32), outcomes):
            config = helion.Config(block_sizes=[block, 8])
            config_id = sink.register_config(config) or canonical_config_id(config)
            entry = AutotuneLogEntry(0, status, perf, 0.25, config_id, config, source_hash=digest)
            sink.record(entry)
        sink.end_run()


if __name__ == "__main__":
    write_logs(Path(sys.argv[1]))
