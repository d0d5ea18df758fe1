"""Every config of every family compiles for sm_90 without a GPU, or is invalid with a reason.

Each config is compiled once, on the smallest ``default`` shape where it is valid, in the
family's first dtype, with ``extract.compile.compile_call`` and an explicit target. Configs
that bind to the same constexpr values and compile options share one compile. Compiles run
in a pool of two spawned processes with a private Triton cache (so every one really
compiles).
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

import pytest

from corpus.suite.check import CompileOutcome, compile_job, plan_compiles
from corpus.suite.registry import BUILTIN_SUITE
from corpus.suite.spec import KernelSpec

from .conftest import SUITE_REPORT

TARGET = "sm_90"
WORKERS = 2
REPORT_TITLE = f"suite: compile every config for {TARGET}"


@pytest.fixture(scope="module")
def compile_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessPoolExecutor]:
    cache = tmp_path_factory.mktemp("triton-cache")
    with pytest.MonkeyPatch.context() as patch:
        # Spawned workers inherit the environment at spawn time.
        patch.setenv("TRITON_CACHE_DIR", str(cache))
        patch.delenv("TRITON_INTERPRET", raising=False)
        pool = ProcessPoolExecutor(max_workers=WORKERS, mp_context=multiprocessing.get_context("spawn"))
        # Start the workers while the patched environment is in place.
        for future in [pool.submit(os.getpid) for _ in range(WORKERS)]:
            future.result()
    SUITE_REPORT.setdefault(REPORT_TITLE, [])
    started = time.perf_counter()
    yield pool
    pool.shutdown()
    SUITE_REPORT[REPORT_TITLE].append(f"total wall time {time.perf_counter() - started:.0f} s with {WORKERS} workers")


@pytest.mark.slow
def test_every_config_compiles_or_is_invalid(
    specs: dict[str, KernelSpec], compile_pool: ProcessPoolExecutor, family: str
) -> None:
    spec = specs[family]
    plan = plan_compiles(spec, scale="default")
    futures = [compile_pool.submit(compile_job, (BUILTIN_SUITE,), job, TARGET) for job in plan.jobs]
    outcomes: list[CompileOutcome] = [f.result() for f in futures]
    compiled = sum(o.covers for o in outcomes if o.ok)
    failed = [o for o in outcomes if not o.ok]
    seconds = sum(o.seconds for o in outcomes)
    SUITE_REPORT[REPORT_TITLE].append(
        f"{family:22} {plan.space:5} configs: {compiled:5} compiled ({len(plan.jobs)} compiles, {seconds:6.1f} s), "
        f"{len(plan.invalid):4} invalid with reason, {sum(o.covers for o in failed):3} failed"
    )
    assert not failed, "\n".join(f"{o.config}: {o.error}" for o in failed[:5])
    assert compiled + len(plan.invalid) == plan.space
    assert all(reason.strip() for reason in plan.invalid.values())
