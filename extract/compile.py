"""Compile a ``@triton.jit`` kernel for an explicit GPU target, on a machine without a GPU.

The arguments are specialized by Triton's own JIT code (pointer alignment to 16 bytes,
integers divisible by 16, integers equal to 1, ...) with the backend of the explicit target,
so the on-disk cache entry written here is the one a later launch of the same kernel with
the same arguments on a real GPU of that target looks up.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from triton.backends.compiler import GPUTarget

from extract import triton_compat

__all__ = ["CompileResult", "check_target", "compile_call", "parse_target", "target_string"]

CUDA_WARP_SIZE = 32
HIP_WAVE_SIZE = 64


@dataclass(frozen=True)
class CompileResult:
    """One compiled variant.

    ``asm`` maps stage names ('ttir', 'ttgir', 'llir', 'ptx', 'cubin', ...) to text (bytes
    for binaries). ``metadata`` is Triton's kernel metadata as a dict (``name``,
    ``num_warps``, ``num_stages``, ``num_ctas``, ``shared`` in bytes, ``target`` as
    'cuda:90', ...) plus ``cache_hit`` (True when Triton's on-disk cache served it, in which
    case ``compile_time_s`` is the cache-load time). ``compile_time_s`` is the wall time of
    ``triton.compile`` in seconds. ``target`` is canonical, e.g. 'cuda:90'.
    """

    asm: dict[str, str | bytes]
    metadata: dict[str, Any]
    compile_time_s: float
    target: str


_CUDA_FORMS = (
    re.compile(r"^sm_?(\d+)[a-z]?$"),
    re.compile(r"^cuda:(\d+)[a-z]?$"),
    re.compile(r"^(\d+)$"),
)
_HIP_FORMS = (re.compile(r"^(?:hip:)?(gfx[0-9a-z]+)$"),)


def parse_target(text: str) -> GPUTarget:
    """Parse 'sm_90', 'sm_90a', 'sm90', 'cuda:90', '90' (and 'hip:gfx942' / 'gfx942').

    The 'a' suffix (arch-specific features) is dropped: Triton's CUDA backend selects
    sm_90a by itself for compute capability 9.0.
    """
    cleaned = text.strip().lower()
    for form in _CUDA_FORMS:
        match = form.match(cleaned)
        if match:
            return GPUTarget("cuda", int(match.group(1)), CUDA_WARP_SIZE)
    for form in _HIP_FORMS:
        match = form.match(cleaned)
        if match:
            return GPUTarget("hip", match.group(1), HIP_WAVE_SIZE)
    raise ValueError(
        f"unrecognised GPU target {text!r}; expected e.g. 'sm_90', 'sm_80', 'cuda:90' or '90'"
    )


@functools.cache
def ptxas_architectures(capability: int) -> frozenset[str] | None:
    """``sm_*`` names the ptxas that Triton uses for ``capability`` accepts (from its
    ``--help``; asked once per process), or None when that cannot be determined (other
    Triton layouts, no ptxas)."""
    try:
        from triton.backends.nvidia.compiler import get_ptxas

        path = get_ptxas(capability).path
        text = subprocess.run(
            [path, "--help"], capture_output=True, text=True, timeout=60, check=False
        ).stdout
    except Exception:  # a Triton without this helper, or no ptxas: nothing to check against
        return None
    section = text.split("--gpu-name", 1)[-1].split("\n--", 1)[0]
    names = frozenset(re.findall(r"'(sm_\d+)[a-z]?'", section))
    return names or None


def check_target(target: str | GPUTarget) -> GPUTarget:
    """``target`` parsed (:func:`parse_target`) and, for CUDA, one the installed Triton's
    ptxas can generate code for; ValueError with a one-line reason otherwise. Compiling for
    an unknown architecture (``sm_1000``) would fail only at ptxas, after LLVM printed a
    warning per function and Triton printed the whole PTX."""
    gpu = parse_target(target) if isinstance(target, str) else target
    if gpu.backend != "cuda":
        return gpu
    known = ptxas_architectures(int(gpu.arch))
    if known is not None and f"sm_{gpu.arch}" not in known:
        ordered = sorted(known, key=lambda name: int(name[3:]))
        raise ValueError(
            f"the installed Triton cannot compile for sm_{gpu.arch} "
            f"(its ptxas knows {ordered[0]} .. {ordered[-1]})"
        )
    return gpu


_scratch_lock = threading.Lock()
_scratch_users = 0
_scratch_saved: str | None = None
_scratch_dir: str | None = None
_TRITON_TEMPORARY = re.compile(r"^tmp[\w-]+\.(?:ptx|log|ptx\.o)$")


@contextlib.contextmanager
def _compiler_scratch() -> Iterator[None]:
    """Python temporary files made while compiling land in a private directory, removed
    afterwards: Triton keeps its ``tmp*.ptx`` (for the repro command) when ptxas fails, and
    would otherwise leave one in ``$TMPDIR`` per failed compile. Shared by concurrent compiles
    of the process (counted); files other code put there meanwhile are left alone."""
    global _scratch_users, _scratch_saved, _scratch_dir
    with _scratch_lock:
        if _scratch_users == 0:
            _scratch_saved = tempfile.tempdir
            _scratch_dir = tempfile.mkdtemp(prefix="extract-compile-")
            tempfile.tempdir = _scratch_dir
        _scratch_users += 1
    try:
        yield
    finally:
        with _scratch_lock:
            _scratch_users -= 1
            if _scratch_users == 0 and _scratch_dir is not None:
                tempfile.tempdir = _scratch_saved
                _remove_compiler_temporaries(_scratch_dir)
                _scratch_dir = None


def _remove_compiler_temporaries(directory: str) -> None:
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            if _TRITON_TEMPORARY.match(name):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(directory, name))
        if not os.listdir(directory):
            shutil.rmtree(directory, ignore_errors=True)


def target_string(target: str | GPUTarget) -> str:
    """Canonical text of a target: 'cuda:90', 'hip:gfx942'."""
    resolved = parse_target(target) if isinstance(target, str) else target
    return f"{resolved.backend}:{resolved.arch}"


def compile_call(
    fn: Any,
    args: Mapping[str, Any],
    *,
    target: str | GPUTarget,
    num_warps: int = 4,
    num_stages: int = 3,
    num_ctas: int = 1,
    maxnreg: int | None = None,
    always_compile: bool = False,
    types: Mapping[str, str] | None = None,
) -> CompileResult:
    """Compile ``fn`` for ``args`` and ``target`` without a GPU.

    ``args`` names every parameter of ``fn``: tensors (any device, ``device="meta"`` included;
    only dtype and data-pointer alignment matter), Python scalars, and the values of the
    constexpr parameters. ``always_compile`` bypasses Triton's on-disk cache lookup (for
    timing compiles). ``types`` overrides the Triton type the JIT infers for runtime
    parameters (name -> 'i64', '*u32', 'fp16', ...): a Python int or float cannot say that it
    is an ``i64`` or an ``fp16``, and a pointer's element type need not be a torch dtype.
    Parameters the JIT specialized to constants (integers equal to 1) keep that
    specialization. A target the installed Triton cannot compile for is a ValueError before
    any work (:func:`check_target`); compile failures raise Triton's original exception.
    """
    resolved = check_target(target)
    missing = [name for name in fn.arg_names if name not in args]
    if missing:
        raise TypeError(
            f"compile_call({fn.__name__}): no value for parameter(s) {', '.join(missing)}"
        )
    options: dict[str, Any] = {
        "num_warps": num_warps,
        "num_stages": num_stages,
        "num_ctas": num_ctas,
    }
    if maxnreg is not None:
        options["maxnreg"] = maxnreg
    spec = triton_compat.specialize(fn, args, resolved, options)
    if types:
        signature = dict(spec.signature)
        for name, type_text in types.items():
            if signature.get(name) not in (None, "constexpr"):
                signature[name] = type_text
        spec = dataclasses.replace(spec, signature=signature)
    with _compiler_scratch():
        variant = triton_compat.compile_ast(fn, spec, resolved, always_compile=always_compile)
    metadata = dict(variant.metadata)
    metadata["cache_hit"] = variant.cache_hit
    return CompileResult(
        asm=variant.asm,
        metadata=metadata,
        compile_time_s=variant.compile_time_s,
        target=target_string(resolved),
    )
