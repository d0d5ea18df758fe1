"""Error classification (``corpus.errors``) on the messages the toolchain really raises:
Triton's exception classes built here, ptxas's and the CUDA driver's texts as they print."""

from __future__ import annotations

import pytest
from triton.compiler.errors import CompilationError
from triton.runtime.errors import OutOfResources, PTXASError

from corpus.errors import (
    STICKY_CUDA_TEXTS,
    classify_compile_error,
    classify_launch_error,
    error_text,
    is_sticky,
)
from schemas.enums import Status

PTXAS_SHARED = (
    "`ptxas` failed with error code 255\n`ptxas` stderr:\n"
    "ptxas error   : Entry function 'matmul_kernel' uses too much shared data "
    "(0x3a000 bytes, 0x38c00 max)\nRepro command: ptxas -lineinfo ..."
)
PTXAS_SYNTAX = "Internal Triton PTX codegen error\n`ptxas` stderr:\nptxas fatal   : Parsing error"
CUDA_STICKY = [
    "an illegal memory access was encountered",
    "misaligned address",
    "unspecified launch failure",
    "an illegal instruction was encountered",
    "invalid program counter",
    "hardware stack error",
    "operation not supported on global/shared address space",
    "the launch timed out and was terminated",
    "uncorrectable ECC error encountered",
    "device-side assert triggered",
]
"""cudaGetErrorString texts (libcudart of CUDA 13) of the context-poisoning errors."""


def test_triton_out_of_resources_at_load_is_not_sticky() -> None:
    for name, required, limit in (("shared memory", 262144, 232448), ("threads", 2048, 1024)):
        error = OutOfResources(required, limit, name)
        assert classify_launch_error(error) == (Status.OUT_OF_RESOURCES.value, False)
        assert classify_compile_error(error) == Status.OUT_OF_RESOURCES.value
        assert classify_compile_error(error_text(error)) == Status.OUT_OF_RESOURCES.value


def test_ptxas_errors_split_into_out_of_resources_and_compile_error() -> None:
    assert classify_compile_error(PTXASError(PTXAS_SHARED)) == Status.OUT_OF_RESOURCES.value
    assert classify_compile_error(PTXASError(PTXAS_SYNTAX)) == Status.COMPILE_ERROR.value
    assert classify_launch_error(PTXASError(PTXAS_SYNTAX)) == (Status.COMPILE_ERROR.value, False)


def test_front_end_errors_are_compile_errors() -> None:
    error = CompilationError("def k(): ...", None, "arange's range must be a power of 2")
    assert classify_compile_error(error) == Status.COMPILE_ERROR.value
    assert classify_launch_error(error) == (Status.COMPILE_ERROR.value, False)


@pytest.mark.parametrize("text", CUDA_STICKY)
def test_sticky_cuda_errors_as_triton_and_torch_raise_them(text: str) -> None:
    triton_launch = RuntimeError(f"Triton Error [CUDA]: {text}")
    torch_sync = RuntimeError(
        f"CUDA error: {text}\nCUDA kernel errors might be asynchronously reported at some "
        "other API call, so the stacktrace below might be incorrect."
    )
    for error in (triton_launch, torch_sync):
        assert is_sticky(error) and is_sticky(str(error))
        assert classify_launch_error(error) == (Status.RUNTIME_ERROR.value, True)


def test_every_sticky_text_is_covered_by_a_real_message() -> None:
    assert sorted(STICKY_CUDA_TEXTS) == sorted(t.lower() for t in CUDA_STICKY)


def test_recoverable_runtime_errors_are_not_sticky() -> None:
    for text in (
        "CUDA out of memory. Tried to allocate 2.00 GiB",
        "Triton Error [CUDA]: invalid argument",
        "ValueError: pointer argument cannot be accessed from Triton (cpu tensor?)",
    ):
        assert classify_launch_error(RuntimeError(text)) == (Status.RUNTIME_ERROR.value, False)
    too_big = RuntimeError("Triton Error [CUDA]: too many resources requested for launch")
    assert classify_launch_error(too_big) == (Status.OUT_OF_RESOURCES.value, False)
