"""``python -m corpus.harvest --self-test``: what a user runs first on a new machine.

Checks, each with a verdict (``ok``, ``warn``, ``fail`` or ``skipped``) and the figures behind it:

- device facts: the lanes' physical GPUs (by UUID), clocks (current and max), L2, shared memory;
- copy bandwidth: a 256 MiB copy kernel's achieved DRAM bandwidth against the theoretical peak
  (2 x memory clock x bus width);
- L2 flush: a 1 MiB copy timed with and without the flush between reps (with the flush it
  must read DRAM, so it must be slower: otherwise the flush does not evict the L2);
- compile worker -> launch: a suite config compiled in a compile worker process for the
  device's target into the harvest's Triton cache, then launched here: the launch must load
  that binary (no new compiled kernel in the cache, same binary hash) instead of compiling again;
- timers: one config timed by each timer of the device.

Without a GPU it runs the interpreter subset (facts, the copy kernel in Triton's interpreter
with every CPU timer, the compile worker's extraction for sm_90) and marks the GPU checks
skipped. The copy kernel lives in :mod:`corpus.harvest.selftest_kernel`, imported only after
the interpreter was (or was not) selected.
"""

from __future__ import annotations

import math
import os
import statistics
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

from corpus.errors import is_sticky
from corpus.harvest.device import (
    DeviceFacts,
    Lane,
    cuda_facts,
    cuda_lanes,
    interpreter_facts,
    with_smi_memory_clock,
)
from corpus.harvest.settings import (
    Settings,
    compiler_selected,
    select_interpreter,
    worker_environment,
)
from schemas.console import plain_text
from schemas.enums import Timer

OK, WARN, FAIL, SKIPPED = "ok", "warn", "fail", "skipped"

COPY_BYTES = 256 << 20
"""Bytes the bandwidth check copies (read once, written once): far beyond any L2."""
SMALL_COPY_BYTES = 1 << 20
"""Bytes the L2-flush check copies: fits any L2 of the last decade."""
INTERPRETER_COPY_ELEMENTS = 4096
GOOD_BANDWIDTH = 0.6
"""Achieved / peak bandwidth of a plain copy below which the check warns (H100-class GPUs
reach 0.8-0.9; much less means clocks held low, a shared GPU, or a MIG slice)."""
FLUSH_EFFECT = 1.05
"""The flushed small copy must take at least this factor longer than the unflushed one."""
REPS = 20
HOLD_MS = 0.5
"""GPU time (ms) the L2-flush check holds the GPU busy before each rep of both arms, touching no
memory (``torch.cuda._sleep``), so the host enqueues the copy before its start event fires:
without it the unflushed arm, whose GPU idles between reps, timed Triton's host launch overhead
(tens of us) instead of a 1 MiB copy (a few us), while the flushed arm's flush hid that overhead,
and the check reported an L2 that the flush does not evict."""
DEFAULT_SM_CLOCK_MHZ = 2000
"""SM clock assumed for :data:`HOLD_MS` when the device reports none (more cycles: a longer hold)."""
CACHE_FAMILY = "add_broadcast"
"""Suite family compiled by the compile-worker check (small, compiles in about a second)."""


@dataclass(frozen=True)
class SelfTestConfig:
    """What ``--self-test`` checks: ``device`` as ``--device`` takes it ('auto', 'cpu',
    'cuda:N'); ``cache_dir`` is the harvest's Triton cache the compile worker writes into."""

    device: str
    suite: tuple[str, ...]
    cache_dir: str


def self_test_config(device: str, suite: tuple[str, ...], settings: Settings) -> SelfTestConfig:
    """The config of ``--self-test --device DEVICE``: the compile worker writes into the
    Triton cache a harvest would use (TRITON_CACHE_DIR, else the stable per-toolchain one)."""
    from corpus.harvest.identity import toolchain_fingerprint
    from corpus.harvest.settings import triton_cache_dir

    if "," in device:  # torch would raise on the list in the middle of the checks
        raise ValueError(f"--self-test --device {device}: the self-test checks one GPU; give --device cuda:N")
    cache = settings.triton_cache_dir or triton_cache_dir(
        settings, toolchain_fingerprint(settings.codegen_env, ir_target=None)
    )
    return SelfTestConfig(device, suite, cache)


def exit_code(verdicts: list[Verdict]) -> int:
    """1 when a check failed, else 0 (warnings and skipped checks pass)."""
    return 1 if any(v.verdict == FAIL for v in verdicts) else 0


@dataclass(frozen=True)
class Verdict:
    """Outcome of one check."""

    check: str
    verdict: str
    detail: str


def run_self_test(
    config: SelfTestConfig, settings: Settings, console: Console | None = None
) -> list[Verdict]:
    """Run every check for ``config.device``, print a table of verdicts, return them."""
    console = console or Console()
    import torch

    gpu = config.device != "cpu" and torch.cuda.is_available()
    if config.device.startswith("cuda") and not gpu:
        raise ValueError(f"--device {config.device}: CUDA is not available here")
    if gpu:
        device = config.device if config.device.startswith("cuda:") else "cuda:0"
        if torch.device(device).index >= torch.cuda.device_count():
            raise ValueError(f"--device {device}: no such GPU (this machine has {torch.cuda.device_count()})")
        verdicts = _gpu_checks(device, config, settings)
    else:
        select_interpreter()
        verdicts = _interpreter_checks(config, settings)
    console.print(_table(verdicts))
    return verdicts


def _table(verdicts: list[Verdict]) -> Table:
    colours = {OK: "green", WARN: "yellow", FAIL: "red", SKIPPED: "dim"}
    table = Table(title="harvest self-test")
    for column in ("check", "verdict", "detail"):
        table.add_column(column, overflow="fold")
    for v in verdicts:
        table.add_row(v.check, f"[{colours[v.verdict]}]{v.verdict}[/]", plain_text(v.detail))  # detail: paths, errors
    return table


def _guarded(name: str, check: Callable[[], Verdict]) -> Verdict:
    """Run one check; an exception is its failure, the other checks still run."""
    try:
        return check()
    except Exception as exc:
        return Verdict(name, FAIL, f"{type(exc).__name__}: {str(exc)[:300]}")


def _run_checks(checks: Sequence[tuple[str, Callable[[], Verdict]]]) -> list[Verdict]:
    """:func:`_guarded` of each check in order, until one fails with a sticky CUDA error
    (:func:`corpus.errors.is_sticky`): that leaves this process's CUDA context unusable, so the
    checks after it are skipped, naming it, instead of each failing with its error."""
    verdicts: list[Verdict] = []
    poisoned: str | None = None
    for name, check in checks:
        if poisoned is not None:
            verdicts.append(
                Verdict(name, SKIPPED, f"not run: '{poisoned}' left the CUDA context unusable (a sticky error)")
            )
            continue
        verdict = _guarded(name, check)
        verdicts.append(verdict)
        if verdict.verdict == FAIL and is_sticky(verdict.detail):
            poisoned = name
    return verdicts


# --- the interpreter subset ------------------------------------------------------------


def _interpreter_checks(config: SelfTestConfig, settings: Settings) -> list[Verdict]:
    verdicts = [_guarded("device facts", lambda: _facts_verdict(interpreter_facts(), None))]
    verdicts += [_guarded(f"timer {t}", lambda t=t: _interpreter_timer(t)) for t in _HOST]
    verdicts.append(
        _guarded("compile worker", lambda: _compile_worker_check(config, settings, "sm_90"))
    )
    for name in ("copy bandwidth", "L2 flush", "compile worker -> launch"):
        verdicts.append(Verdict(name, SKIPPED, "needs a GPU"))
    return verdicts


_HOST = (Timer.THREAD_CPU.value, Timer.PROCESS_CPU.value, Timer.WALL.value)


def _interpreter_timer(kind: str) -> Verdict:
    import torch

    from corpus.harvest.selftest_kernel import copy_launch
    from corpus.harvest.timing import HOST_TIMERS

    src = torch.arange(INTERPRETER_COPY_ELEMENTS, dtype=torch.float32)
    dst = torch.full_like(src, math.nan)
    launch = copy_launch(src, dst)
    timer = HOST_TIMERS[kind]()
    samples = timer.time_reps(timer.prepare(launch), None, 3)
    if not torch.equal(src, dst):
        return Verdict(f"timer {kind}", FAIL, "the interpreted copy kernel copied wrongly")
    return _samples_verdict(f"timer {kind}", samples, "interpreted copy of 16 KiB")


def _samples_verdict(name: str, samples: list[float], what: str) -> Verdict:
    if not samples or not all(math.isfinite(s) and s > 0 for s in samples):
        return Verdict(name, FAIL, f"{what}: samples not all positive: {samples}")
    return Verdict(name, OK, f"{what}: median {statistics.median(samples):.4g} ms")


# --- facts -----------------------------------------------------------------------------


def _facts_verdict(facts: DeviceFacts, lanes: list[Lane] | None) -> Verdict:
    parts = [f"{facts.device_name} ({facts.arch})"]
    if lanes:
        parts.append("lanes " + ", ".join(f"{lane.device}={lane.uuid}" for lane in lanes))
    if facts.device_kind != "cuda":
        return Verdict("device facts", OK, "; ".join(parts))
    parts.append(
        f"{facts.sm_count} SMs, L2 {(facts.l2_bytes or 0) >> 20} MiB, "
        f"smem/block {(facts.smem_per_block_bytes or 0) >> 10} KiB"
    )
    parts.append(
        f"SM clock {facts.sm_clock_mhz}/{facts.sm_clock_max_mhz} MHz, "
        f"memory clock {facts.mem_clock_mhz}/{facts.mem_clock_max_mhz} MHz (current/max), "
        f"driver {facts.driver_version}"
    )
    missing = facts.sm_clock_mhz is None or facts.driver_version is None
    verdict = WARN if missing else OK
    if missing:
        parts.append("nvidia-smi gave no current clocks or driver: runs record them as null")
    return Verdict("device facts", verdict, "; ".join(parts))


# --- GPU checks ------------------------------------------------------------------------


def _gpu_checks(device: str, config: SelfTestConfig, settings: Settings) -> list[Verdict]:
    import torch

    torch.cuda.set_device(device)
    lanes = cuda_lanes([device], settings.visible_devices)
    facts = cuda_facts(device, settings.visible_devices)
    return _run_checks(
        [
            ("device facts", lambda: _facts_verdict(facts, lanes)),
            ("copy bandwidth", lambda: _bandwidth_check(device, with_smi_memory_clock(lanes[0], facts))),
            ("L2 flush", lambda: _flush_check(device, facts)),
            (
                "compile worker -> launch",
                lambda: _cache_hit_check(device, config, settings, facts.arch),
            ),
            *((f"timer {t}", lambda t=t: _gpu_timer(device, t, facts)) for t in _GPU),
        ]
    )


_GPU = (Timer.CUDA_EVENT.value, Timer.CUDA_GRAPH.value)


def _copy_buffers(device: str, nbytes: int) -> tuple[Any, Any]:
    import torch

    src = torch.randn(nbytes // 4, device=device)
    return src, torch.empty_like(src)


def _median_ms(timer: Any, launch: Callable[[], Any], reps: int = REPS) -> float:
    launch()  # compile and warm up outside the timed reps
    return statistics.median(timer.time_reps(timer.prepare(launch), None, reps))


def _bandwidth_check(device: str, lane: Lane) -> Verdict:
    from corpus.harvest.selftest_kernel import copy_launch
    from corpus.harvest.timing import CudaEventTimer

    src, dst = _copy_buffers(device, COPY_BYTES)
    milliseconds = _median_ms(CudaEventTimer(device, 0), copy_launch(src, dst))
    achieved = 2 * COPY_BYTES / (milliseconds / 1e3)
    peak = lane.peak_bandwidth_bytes_per_s
    detail = f"{achieved / 1e9:.0f} GB/s ({milliseconds:.3f} ms for 2 x {COPY_BYTES >> 20} MiB)"
    if peak is None:
        return Verdict("copy bandwidth", WARN, detail + "; peak unknown (no bus width or clock)")
    ratio = achieved / peak
    verdict = OK if ratio >= GOOD_BANDWIDTH else WARN
    return Verdict(
        "copy bandwidth", verdict, f"{detail}, {ratio:.0%} of {peak / 1e9:.0f} GB/s peak"
    )


def hold_cycles(sm_clock_max_mhz: int | None, hold_ms: float = HOLD_MS) -> int:
    """SM clock cycles that keep the GPU busy for ``hold_ms`` at its maximum SM clock (MHz; a
    lower real clock only lengthens the hold)."""
    return int(hold_ms * 1e3 * (sm_clock_max_mhz or DEFAULT_SM_CLOCK_MHZ))


def _flush_check(device: str, facts: DeviceFacts) -> Verdict:
    from corpus.harvest.selftest_kernel import copy_launch
    from corpus.harvest.timing import CudaEventTimer, l2_flush_bytes

    src, dst = _copy_buffers(device, SMALL_COPY_BYTES)
    launch = copy_launch(src, dst)
    flush = l2_flush_bytes(facts.l2_bytes)
    cycles = hold_cycles(facts.sm_clock_max_mhz)
    flushed = _median_ms(CudaEventTimer(device, flush, hold_cycles=cycles), launch)
    warm = _median_ms(CudaEventTimer(device, 0, hold_cycles=cycles), launch)
    detail = (
        f"1 MiB copy: {flushed * 1e3:.1f} us flushed ({flush >> 20} MiB flush) vs "
        f"{warm * 1e3:.1f} us unflushed ({flushed / warm:.2f}x)"
    )
    verdict = OK if flushed >= warm * FLUSH_EFFECT else WARN
    return Verdict("L2 flush", verdict, detail)


def _gpu_timer(device: str, kind: str, facts: DeviceFacts) -> Verdict:
    from corpus.harvest.selftest_kernel import copy_launch
    from corpus.harvest.timing import CudaEventTimer, CudaGraphTimer, l2_flush_bytes

    src, dst = _copy_buffers(device, SMALL_COPY_BYTES)
    timer_class = CudaGraphTimer if kind == Timer.CUDA_GRAPH.value else CudaEventTimer
    timer = timer_class(device, l2_flush_bytes(facts.l2_bytes))
    launch = copy_launch(src, dst)
    launch()
    samples = timer.time_reps(timer.prepare(launch), None, 5)
    return _samples_verdict(f"timer {kind}", samples, "1 MiB copy, L2 flushed")


# --- compile worker --------------------------------------------------------------------


def _compile_in_worker(config: SelfTestConfig, settings: Settings, target: str) -> Any:
    """(outcome, task) of compiling :data:`CACHE_FAMILY`'s default config on its first tiny
    shape in a compile worker process writing into ``config.cache_dir``."""
    from corpus.harvest.compile_worker import CompileInit, CompileTask
    from corpus.harvest.runner import COMPILE_FACTORY
    from corpus.harvest.workers import WorkerProcess
    from corpus.suite.registry import load_suite

    spec = load_suite(config.suite)[CACHE_FAMILY]
    dims = spec.shapes_for("tiny")[0]
    task = CompileTask(CACHE_FAMILY, dims, spec.dtypes[0], 0, spec.default_config())
    with tempfile.TemporaryDirectory(prefix="selftest-scratch-") as scratch:
        environment = worker_environment(
            settings, interpret=False, cache_dir=config.cache_dir, scratch_dir=scratch
        )
        worker = WorkerProcess(
            "selftest-compile", COMPILE_FACTORY, CompileInit(config.suite, target), environment
        )
        try:
            with compiler_selected():  # the spawned child re-imports our main module first
                worker.start()
            return worker.call(task, timeout_s=300), task
        finally:
            worker.close()


def _compile_worker_check(config: SelfTestConfig, settings: Settings, target: str) -> Verdict:
    outcome, task = _compile_in_worker(config, settings, target)
    if outcome.status != "ok":
        return Verdict("compile worker", FAIL, f"{task.family}: {outcome.status}: {outcome.error}")
    levels = [name for name in ("ttir", "ttgir") if getattr(outcome, f"{name}_id")]
    verdict = OK if len(levels) == 2 and outcome.binary_hash else FAIL
    return Verdict(
        "compile worker",
        verdict,
        f"{task.family} for {target} in {outcome.compile_time_s:.2f} s; graphs: "
        f"{', '.join(levels) or 'none'}; binary {outcome.binary_hash}",
    )


KERNEL_BINARY_SUFFIXES = (".cubin", ".hsaco")
"""Files that make a Triton cache entry a compiled kernel (CUDA, HIP)."""


def _cache_entries(cache_dir: str) -> set[str]:
    """The entries of Triton's cache ``cache_dir`` that hold a compiled kernel. A launch also
    caches host modules there, which are no recompile: Triton 3.6 builds a launcher per kernel
    signature (``__triton_launcher.so``) at the first launch of each, and every version builds
    its driver's utilities (``cuda_utils.so``) on first use."""
    if not os.path.isdir(cache_dir):
        return set()
    return {
        name
        for name in os.listdir(cache_dir)
        if os.path.isdir(entry := os.path.join(cache_dir, name))
        and any(file.endswith(KERNEL_BINARY_SUFFIXES) for file in os.listdir(entry))
    }


def _cache_hit_check(device: str, config: SelfTestConfig, settings: Settings, arch: str) -> Verdict:
    from triton import knobs

    from corpus.harvest.binary import binary_hash
    from corpus.suite.registry import load_suite
    from extract.triton_compat import compiled_asm, compiled_metadata

    outcome, task = _compile_in_worker(config, settings, arch)
    if outcome.status != "ok":
        return Verdict(
            "compile worker -> launch", FAIL, f"compile: {outcome.status}: {outcome.error}"
        )
    spec = load_suite(config.suite)[task.family]
    inputs = spec.make_inputs(task.dims, task.dtype, device, task.seed)
    before = _cache_entries(config.cache_dir)
    with knobs.cache.scope():
        knobs.cache.dir = config.cache_dir
        launched = spec.launch(inputs, task.dims, task.config)
    new = _cache_entries(config.cache_dir) - before
    launched_hash = binary_hash(compiled_asm(launched), compiled_metadata(launched))
    same = launched_hash == outcome.binary_hash
    detail = (
        f"{task.family} compiled for {arch} in a worker, launched here: "
        f"{len(new)} new compiled kernel{'' if len(new) == 1 else 's'} in the cache, binary "
        f"{'matches' if same else 'differs'} ({launched_hash} vs {outcome.binary_hash})"
    )
    return Verdict("compile worker -> launch", OK if same and not new else FAIL, detail)
