"""Regenerate ``fixtures/tritonparse/gelu.ndjson`` with the real tritonparse (the ``trace``
extra): ``python -m tests.corpus.ingest.make_tritonparse_fixture`` from the repository root
(``... make_tritonparse_fixture two-sizes`` writes ``gelu_two_sizes.ndjson``: the same kernel
tuned and launched on 100 elements, then on 1,000, as a workload calling it twice).
``... make_tritonparse_fixture specializations DIR`` writes a trace into DIR, uncommitted (the
tests run it): the kernel's two configs compiled, tuned and launched on 128 elements, then
compiled again for 99 (Triton specializes ``n_elements`` on divisibility by 16: a second
binary per config), tuned and launched; with ``TRITON_TRACE_COMPRESSION=gzip`` (or ``zstd``)
in the environment tritonparse writes it compressed, as ``*.bin.ndjson``.
``... make_tritonparse_fixture rank DIR RANK INIT_FILE`` is one of two processes of a
``torch.distributed`` group (gloo, rendezvous in INIT_FILE) tracing into DIR, where tritonparse
names each process's file by its rank (``*_rank_0_*``): both ranks tune the kernel on 100
elements (each with timings of its own, as ranks that each benchmark), rank 1 also on 1,000.
``... make_tritonparse_fixture autotuned DIR`` writes a trace whose ``autotune`` event Triton's
own autotuner wrote, and tritonparse's ``unified_parse`` of it (see :func:`generate_autotuned`).
:func:`generate_launch_traced` (called by the tests) writes a trace with tritonparse's launch
tracing on, the launch event written by tritonparse's own launch hook.

What runs here without a GPU, and so what the fixture holds:

- ``compilation`` events: tritonparse's own compilation listener, on two configs of
  :func:`tests.corpus.record.workload.gelu_kernel` compiled for sm_90 (Triton compiles without a
  GPU when given a target);
- ``autotune`` events: tritonparse's own autotune listener function, called with the kernel's
  real ``JITFunction`` and ``triton.Config`` objects and timings we chose (the autotuner
  itself needs a GPU to benchmark): one tuning, then the same key served from the cache;
- one ``launch`` event: tritonparse's event writer and argument extractor on CPU tensors
  (its launch hook fires only on a GPU launch).

Machine paths are rewritten to neutral ones afterwards (``/work/...``, ``~/.triton``).
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parent / "fixtures" / "tritonparse" / "gelu.ndjson"
TWO_SIZES = OUT.with_name("gelu_two_sizes.ndjson")
REPO = Path(__file__).resolve().parents[3]


def _compile(jit, config, size: int = 100) -> str:  # type: ignore[no-untyped-def]
    return _compiled(jit, config, size).metadata.hash


def generate(
    folder: Path, sizes: tuple[int, ...] = (100,), compile_each: bool = False, timing_scale: float = 1.0
) -> Path:
    """Write the trace into ``folder``; ``compile_each``: the configs are compiled again for
    each size (before its tuning, as the autotuner compiles what it benchmarks), not once;
    ``timing_scale`` multiplies every timing (another process's measurements of the same)."""
    import torch
    import tritonparse.structured_logging as tsl
    from triton import knobs

    from tests.corpus.record import workload

    knobs.compilation.always_compile = True  # every config really compiles (and is traced)
    tsl.init(str(folder), enable_full_python_source=True)
    tuner = workload.gelu_kernel
    configs = tuner.configs[:2]
    for config in configs if not compile_each else ():
        _compile(tuner.fn, config)
    for size in sizes:  # each call: its tuning, the key served from the cache, its launch
        for config in configs if compile_each else ():
            _compile(tuner.fn, config, size)
        scale = size / 100 * timing_scale
        timings = {
            configs[0]: [0.0123 * scale, 0.0120 * scale, 0.0127 * scale],
            configs[1]: [0.0091 * scale, 0.0089 * scale, 0.0094 * scale],
        }
        key = (size, "torch.float32", "torch.float32")
        tsl._autotune_listener(
            fn=tuner.fn,
            key=key,
            best_config=configs[1],
            configs_timings=timings,
            duration=0.8,
            cache_hit=False,
        )
        tsl._autotune_listener(
            fn=tuner.fn,
            key=key,
            best_config=configs[1],
            configs_timings=timings,
            duration=None,
            cache_hit=True,
        )
        x = torch.randn(size)
        launch = {
            "name": "gelu_kernel",
            "grid": [-(-size // 64), 1, 1],
            "extracted_args": tsl.extract_arg_info(
                {"x_ptr": x, "out_ptr": torch.empty_like(x), "n_elements": size}
            ),
        }
        tsl.trace_structured_triton("launch", metadata_fn=lambda launch=launch: tsl.convert(launch))
    tsl.clear_logging_config()
    return next(folder.glob("*.ndjson"))


def generate_rank(folder: Path, rank: int, init_file: Path) -> Path:
    """Rank ``rank`` of a 2-process gloo group traces into ``folder`` (see the module's
    docstring); returns its file, which tritonparse named by the rank."""
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=2)
    try:
        sizes = (100,) if rank == 0 else (100, 1000)
        generate(folder, sizes, timing_scale=1.0 + 0.01 * rank)
        return next(folder.glob(f"*_rank_{rank}_*.ndjson"))
    finally:
        dist.destroy_process_group()


def generate_launch_traced(folder: Path, winner: int) -> Path:
    """Write into ``folder`` a trace with tritonparse's launch tracing on
    (``init(enable_trace_launch=True)``): the gelu kernel's two configs compiled for sm_90, one
    tuning on 100 elements that config ``winner`` wins, and the launch event tritonparse's own
    launch hook writes for the call it tuned. Triton hands that hook a ``LazyDict`` holding the
    kernel's name and, through tritonparse's ``add_launch_metadata``, every parameter the
    launch bound -- the winning config's meta-parameters (``BLOCK``) among them, which a
    hand-written launch event leaves out. Built here as ``CompiledKernel.launch_metadata``
    builds it (that method needs a GPU driver)."""
    import torch
    import tritonparse.structured_logging as tsl
    from triton import knobs
    from triton.compiler.compiler import LazyDict

    from tests.corpus.record import workload

    tuner = workload.gelu_kernel
    configs = tuner.configs[:2]
    # scopes: this runs inside the test process, where an override left in a knob's instance
    # (always_compile, tritonparse's launch hooks) would change later tests' compiles
    with knobs.compilation.scope(), knobs.runtime.scope():
        knobs.compilation.always_compile = True
        tsl.init(str(folder), enable_full_python_source=True, enable_trace_launch=True)
        try:
            compiled = [_compiled(tuner.fn, config) for config in configs]
            timings = {config: [0.02, 0.019, 0.021] for config in configs}
            timings[configs[winner]] = [0.01, 0.009, 0.011]
            key = (100, "torch.float32", "torch.float32")
            tsl._autotune_listener(fn=tuner.fn, key=key, best_config=configs[winner], configs_timings=timings,
                                   duration=0.5, cache_hit=False)  # fmt: skip
            x = torch.randn(100)
            bound = {"x_ptr": x, "out_ptr": torch.empty_like(x), "n_elements": 100, **configs[winner].kwargs}
            launch = LazyDict({"name": compiled[winner].name, "function": None, "stream": 0})
            launch.add(tsl.add_launch_metadata, ((2, 1, 1), compiled[winner].metadata, bound))
            knobs.runtime.launch_enter_hook(launch)  # tritonparse's LaunchHookImpl
        finally:
            tsl.clear_logging_config()
    return next(folder.glob("*.ndjson"))


def generate_autotuned(folder: Path) -> Path:
    """Write into ``folder / "raw"`` a trace whose ``autotune`` event Triton's own
    ``Autotuner.run`` wrote through tritonparse's listener, then tritonparse's ``unified_parse``
    of it into ``folder / "parsed"``; returns the parsed ``*_mapped.ndjson.gz``. On the CPU the
    autotuner is given a ``do_bench`` (its documented parameter) that compiles the config for
    sm_90 -- inside the autotuner's ``_bench``, where a GPU compiles it -- and returns fixed
    timings; the launch after the tuning fails (no GPU driver; on a GPU, CPU tensors) after the
    listener has written the tuning."""
    import torch
    import tritonparse.structured_logging as tsl
    from triton import knobs
    from tritonparse.parse import utils

    from tests.corpus.record import workload

    tuner = workload.gelu_kernel
    configs = tuner.configs[:2]  # what its prune (drop_wide_blocks) keeps for 100 elements
    timings = {0: [0.02, 0.019, 0.021], 1: [0.01, 0.009, 0.011]}
    compiled: list[object] = []

    def bench(kernel_call, quantiles=None):  # type: ignore[no-untyped-def]
        compiled.append(_compiled(tuner.fn, configs[len(compiled)]))
        return timings[len(compiled) - 1]

    tuner._do_bench = bench
    knobs.compilation.always_compile = True
    tsl.init(str(folder / "raw"), enable_full_python_source=True)
    try:
        workload.gelu(torch.randn(100))
    except (RuntimeError, ValueError):  # the launch after the tuning: no GPU driver, or a CPU tensor on a GPU
        pass
    finally:
        tsl.clear_logging_config()
    assert len(compiled) == len(configs) == 2
    utils.unified_parse(source=str(folder / "raw"), out=str(folder / "parsed"), overwrite=True)
    return next((folder / "parsed").glob("*.ndjson.gz"))


def _compiled(jit, config, size: int = 100):  # type: ignore[no-untyped-def]
    """Triton's ``CompiledKernel`` of ``config`` on ``size`` float32 elements, for sm_90."""
    import torch
    import triton
    from triton.compiler import ASTSource

    from extract import triton_compat
    from extract.compile import parse_target

    target = parse_target("sm_90")
    x = torch.empty(size, device="meta")
    options = {"num_warps": config.num_warps, "num_stages": config.num_stages, "num_ctas": 1}
    spec = triton_compat.specialize(
        jit, {"x_ptr": x, "out_ptr": x, "n_elements": size, **config.kwargs}, target, options
    )
    source = ASTSource(jit, spec.signature, spec.constexprs, spec.attrs)
    return triton.compile(source, target=target, options=dict(spec.options))


SPECIALIZED_SIZES = (128, 99)
"""Sizes of the ``specializations`` trace: 128 is divisible by 16, 99 is not."""


def neutral_paths(text: str) -> str:
    text = text.replace(str(REPO) + "/", "")
    text = re.sub(r"/[^\"]*?/site-packages/", "site-packages/", text)
    return re.sub(r"/[^\"]*?/\.triton/cache", "~/.triton/cache", text)


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["rank"]:
        print(generate_rank(Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])))
        sys.exit(0)
    if sys.argv[1:2] == ["autotuned"]:
        print(generate_autotuned(Path(sys.argv[2])))
        sys.exit(0)
    if sys.argv[1:2] == ["specializations"]:
        print(generate(Path(sys.argv[2]), SPECIALIZED_SIZES, compile_each=True))
        sys.exit(0)
    two_sizes = sys.argv[1:] == ["two-sizes"]
    out = TWO_SIZES if two_sizes else OUT
    with tempfile.TemporaryDirectory() as scratch:
        trace = generate(Path(scratch), (100, 1000) if two_sizes else (100,))
        lines = [neutral_paths(line) for line in trace.read_text().splitlines() if line.strip()]
    for line in lines:
        json.loads(line)  # still valid JSON after the rewrite
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out} ({len(lines)} events)")
