"""``python -m corpus.suite check`` and the harvest's benchmark worker give one verdict: both
run :func:`corpus.suite.verify.checked_launch`, NaN-poisoning included.

The test suite's kernel runs in Triton's interpreter, selected while these tests run
(``@triton.jit`` decides at decoration, Triton's own helpers at launch).
"""

from __future__ import annotations

import importlib
import math
import sys
from collections.abc import Iterator

import pytest
import torch
import triton.language  # noqa: F401  (Triton's own helpers decorated for the compiler, as elsewhere)

from corpus.harvest.measure_worker import ConfigCheck, MeasureHandler, MeasureInit, RunSetup
from corpus.suite.check import check_suite, plan_cases, run_case
from corpus.suite.registry import load_suite
from corpus.suite.spec import KernelSpec
from corpus.suite.verify import checked_launch, poison_outputs
from schemas.enums import DEVICE_INTERPRETER, Status, Timer

SUITE = "tests.corpus.suite.partial_write_kernels"


@pytest.fixture(scope="module")
def partial_write() -> Iterator[KernelSpec]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRITON_INTERPRET", "1")
        sys.modules.pop(SUITE, None)
        importlib.import_module(SUITE)
        yield load_suite([SUITE])["test_partial_write"]


def test_suite_check_fails_the_kernel_that_leaves_half_its_output_unwritten(
    partial_write: KernelSpec,
) -> None:
    inputs = partial_write.make_inputs({"N": 64}, "float32", "cpu", 0)
    expected = partial_write.reference(inputs, {"N": 64})
    launched_unpoisoned = partial_write.launch(inputs, {"N": 64}, partial_write.default_config())
    del launched_unpoisoned
    assert not partial_write.mismatches(inputs, expected, "float32"), (
        "without poisoning the zero-filled buffer matches: the bug this check exists for"
    )
    [result] = check_suite({partial_write.name: partial_write}, "tiny", "cpu")
    assert not result.ok
    assert (
        result.error
        == "out_ptr: 32 of 64 elements never written (NaN) (max abs error inf, atol=0.0001, rtol=0.0001)"
    )


def test_suite_check_and_the_benchmark_worker_agree(partial_write: KernelSpec) -> None:
    threads = torch.get_num_threads()
    try:
        handler = MeasureHandler(MeasureInit((SUITE,), DEVICE_INTERPRETER, Timer.THREAD_CPU.value, 0))
        [case] = plan_cases(partial_write, "tiny")
        handler(RunSetup(partial_write.name, case.dims, case.dtype, seed=0))
        outcome = handler(ConfigCheck(case.config))
    finally:
        torch.set_num_threads(threads)
    checked = run_case(partial_write, case, "cpu", seed=0)
    assert outcome.status == Status.MISMATCH.value and not checked.ok
    assert outcome.error == checked.error
    assert outcome.max_abs_error == math.inf


def test_poisoning_skips_mutated_inputs_and_restores_them(partial_write: KernelSpec) -> None:
    inputs = partial_write.make_inputs({"N": 64}, "float32", "cpu", 0)
    poison_outputs(partial_write, inputs)
    assert torch.isnan(inputs["out_ptr"]).all() and not torch.isnan(inputs["x_ptr"]).any()
    expected = partial_write.reference(inputs, {"N": 64})
    original = inputs["x_ptr"].clone()
    inputs["x_ptr"].zero_()
    checked = checked_launch(
        partial_write,
        inputs,
        {"N": 64},
        partial_write.default_config(),
        "float32",
        expected,
        snapshots={"x_ptr": original},
    )
    assert torch.equal(inputs["x_ptr"], original), "snapshots restored before the launch"
    assert checked.comparisons["out_ptr"].unwritten == 32
    assert checked.comparisons["out_ptr"].wrong == 0



def _poisoner(like: KernelSpec) -> KernelSpec:
    """Fault injection: ``like``'s family under another name, whose launch fails as an illegal
    memory access does on a GPU (the CUDA driver's text; there it poisons the process's
    context)."""

    class Poisoner(type(like)):  # type: ignore[misc]
        name = "test_poisoner"

        def launch(self, inputs, dims, config):
            raise RuntimeError("Triton Error [CUDA]: an illegal memory access was encountered")

    return Poisoner()


def test_suite_check_runs_nothing_after_a_sticky_cuda_error(partial_write: KernelSpec) -> None:
    """After an illegal address every launch of the process fails with it: the later cases
    were reported as failures of their own families (each with the poisoner's error)."""
    poisoner = _poisoner(partial_write)
    first, after = check_suite({poisoner.name: poisoner, partial_write.name: partial_write}, "tiny", "cpu")
    assert first.family == "test_poisoner" and "illegal memory access" in (first.error or "")
    assert after.family == "test_partial_write" and not after.ok
    assert after.error == (
        "not run: test_poisoner N64 float32 triton.Config({'BLOCK': 32}, num_warps=1, num_stages=2) "
        "left the CUDA context unusable (a sticky error); check the families after it again"
    )
