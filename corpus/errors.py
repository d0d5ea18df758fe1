"""Classify compile and launch failures into measurement statuses, on the real message texts.

The texts are the ones the installed toolchain raises:

- Triton's ``triton.runtime.errors.OutOfResources`` prints ``out of resource: shared memory,
  Required: ..., Hardware limit: ...`` (also ``threads`` and ``tensor memory``) when a binary
  cannot be loaded on the device;
- ``ptxas`` (raised by Triton as ``PTXASError: PTXAS error: ...``) prints ``Entry function 'k'
  uses too much shared data (0x... bytes, 0x... max)`` (also local data, parameter space);
- the CUDA driver's ``cuGetErrorString`` texts, which Triton's launcher raises as
  ``RuntimeError: Triton Error [CUDA]: <text>`` and torch as ``CUDA error: <text>``.

A *sticky* CUDA error leaves the context unusable: every later call in the process fails, so
the benchmark worker that saw one must be replaced (see :func:`is_sticky`).
"""

from __future__ import annotations

from schemas.enums import Status

OUT_OF_RESOURCE_TEXTS: tuple[str, ...] = (
    "out of resource:",  # triton OutOfResources: shared memory, threads, tensor memory
    "uses too much shared data",  # ptxas
    "uses too much local data",  # ptxas
    "uses too much parameter space",  # ptxas
    "too many resources requested for launch",  # CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
)
"""Fragments (lower case) of the messages of a config too big for the device or target."""

OUT_OF_RESOURCE_TYPES: tuple[str, ...] = ("OutOfResources",)
"""Exception class names that always mean out of resources."""

COMPILE_ERROR_TYPES: tuple[str, ...] = (
    "CompilationError",
    "CompileTimeAssertionFailure",
    "UnsupportedLanguageConstruct",
    "PTXASError",
)
"""Exception class names of Triton's front end and of ptxas: a launch that compiles on a cache
miss and fails there failed to compile, not to run."""

STICKY_CUDA_TEXTS: tuple[str, ...] = (
    "an illegal memory access was encountered",  # CUDA_ERROR_ILLEGAL_ADDRESS
    "misaligned address",  # CUDA_ERROR_MISALIGNED_ADDRESS
    "unspecified launch failure",  # CUDA_ERROR_LAUNCH_FAILED
    "an illegal instruction was encountered",  # CUDA_ERROR_ILLEGAL_INSTRUCTION
    "invalid program counter",  # CUDA_ERROR_INVALID_PC
    "hardware stack error",  # CUDA_ERROR_HARDWARE_STACK_ERROR
    "operation not supported on global/shared address space",  # CUDA_ERROR_INVALID_ADDRESS_SPACE
    "the launch timed out and was terminated",  # CUDA_ERROR_LAUNCH_TIMEOUT
    "uncorrectable ecc error encountered",  # CUDA_ERROR_ECC_UNCORRECTABLE
    "device-side assert triggered",  # CUDA_ERROR_ASSERT
)
"""Fragments (lower case) of the CUDA errors after which the context is unusable."""


def error_text(error: BaseException | str) -> str:
    """``"TypeName: message"`` of an exception (a string is returned as it is)."""
    if isinstance(error, str):
        return error
    return f"{type(error).__name__}: {error}"


def _type_names(error: BaseException | str) -> set[str]:
    if isinstance(error, str):
        return set()
    return {cls.__name__ for cls in type(error).__mro__}


def is_out_of_resources(error: BaseException | str) -> bool:
    """Whether ``error`` says the config needs more than the device or target offers."""
    if _type_names(error) & set(OUT_OF_RESOURCE_TYPES):
        return True
    text = error_text(error).lower()
    return any(fragment in text for fragment in OUT_OF_RESOURCE_TEXTS)


def is_sticky(error: BaseException | str) -> bool:
    """Whether ``error`` (an exception or its text) is a CUDA error that poisons the context."""
    text = error_text(error).lower()
    return any(fragment in text for fragment in STICKY_CUDA_TEXTS)


def classify_compile_error(error: BaseException | str) -> str:
    """Status of a failed compile: ``out_of_resources`` or ``compile_error``."""
    if is_out_of_resources(error):
        return Status.OUT_OF_RESOURCES.value
    return Status.COMPILE_ERROR.value


def classify_launch_error(error: BaseException | str) -> tuple[str, bool]:
    """(status, sticky) of a failed launch or device check: ``out_of_resources`` when the
    binary does not fit the device, ``compile_error`` when the launch compiled and that failed,
    else ``runtime_error``; ``sticky`` per :func:`is_sticky`."""
    sticky = is_sticky(error)
    if is_out_of_resources(error):
        return Status.OUT_OF_RESOURCES.value, sticky
    if _type_names(error) & set(COMPILE_ERROR_TYPES):
        return Status.COMPILE_ERROR.value, sticky
    return Status.RUNTIME_ERROR.value, sticky
