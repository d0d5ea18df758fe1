"""Every config of every family compiles for sm_90 without a GPU, or is invalid with a reason.

Each config is compiled on the smallest ``default`` shape where it is valid, in the family's
first dtype, with ``extract.compile.compile_call`` and an explicit target. Configs that bind to
the same constexpr values and compile options share one compile. Compiles run in a pool of two
spawned processes with a private Triton cache (so every one really compiles).

The whole suite needs about 3,000 distinct compiles (0.3-2 s each): too long for every CI
run on two cores. By default each family compiles at most ``SUITE_COMPILE_LIMIT`` (env,
default 16) of them, chosen to cover every value of every knob; ``SUITE_COMPILE_LIMIT=0``
compiles all of them. Validity is checked for every config either way.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

import pytest

from corpus.suite.check import CompileOutcome, compile_job, limit_jobs, plan_compiles
from corpus.suite.registry import BUILTIN_SUITE
from corpus.suite.spec import KernelSpec

from .conftest import SUITE_REPORT

TARGET = "sm_90"
WORKERS = 2
COMPILE_LIMIT = int(os.environ.get("SUITE_COMPILE_LIMIT", "16"))
REPORT_TITLE = f"suite: compile configs for {TARGET}"


@pytest.fixture(scope="module")
def compile_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessPoolExecutor]:
    cache = tmp_path_factory.mktemp("triton-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRITON_CACHE_DIR", str(cache))
        patch.delenv("TRITON_INTERPRET", raising=False)
        pool = ProcessPoolExecutor(
            max_workers=WORKERS, mp_context=multiprocessing.get_context("spawn")
        )
        # Start the workers now: they inherit the environment patched above.
        for future in [pool.submit(os.getpid) for _ in range(WORKERS)]:
            future.result()
    limit = (
        "all"
        if COMPILE_LIMIT <= 0
        else f"at most {COMPILE_LIMIT} per family (SUITE_COMPILE_LIMIT=0: all)"
    )
    SUITE_REPORT[REPORT_TITLE] = [f"distinct compiles: {limit}"]
    started = time.perf_counter()
    yield pool
    pool.shutdown()
    SUITE_REPORT[REPORT_TITLE].append(
        f"total wall time {time.perf_counter() - started:.0f} s with {WORKERS} workers"
    )


@pytest.mark.slow
def test_every_config_compiles_or_is_invalid(
    specs: dict[str, KernelSpec], compile_pool: ProcessPoolExecutor, family: str
) -> None:
    spec = specs[family]
    full = plan_compiles(spec, scale="default")
    plan = limit_jobs(full, COMPILE_LIMIT, default=spec.default_config())
    futures = [compile_pool.submit(compile_job, (BUILTIN_SUITE,), job, TARGET) for job in plan.jobs]
    outcomes: list[CompileOutcome] = [f.result() for f in futures]
    compiled = sum(o.covers for o in outcomes if o.ok)
    failed = [o for o in outcomes if not o.ok]
    seconds = sum(o.seconds for o in outcomes)
    SUITE_REPORT[REPORT_TITLE].append(
        f"{family:22} {plan.space:4} configs: {plan.valid:4} valid, {len(plan.invalid):4} invalid with reason; "
        f"{len(plan.jobs):4} of {plan.distinct:4} distinct compiles run ({compiled} configs) in {seconds:6.1f} s, "
        f"{len(failed)} failed"
    )
    assert not failed, "\n".join(f"{o.config}: {o.error}" for o in failed[:5])
    assert plan.valid + len(plan.invalid) == plan.space
    assert sum(job.covers for job in full.jobs) == full.valid, (
        "every valid config maps to one compile"
    )
    assert all(reason.strip() for reason in plan.invalid.values())
    if COMPILE_LIMIT <= 0:
        assert compiled == plan.valid
