"""Compile a ``@triton.jit`` kernel for an explicit GPU target, on a machine without a GPU.

The arguments are specialized by Triton's own JIT code (pointer alignment to 16 bytes,
integers divisible by 16, integers equal to 1, ...) with the backend of the explicit target,
so the on-disk cache entry written here is the one a later launch of the same kernel with
the same arguments on a real GPU of that target looks up.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from triton.backends.compiler import GPUTarget

from extract import triton_compat

__all__ = ["CompileResult", "compile_call", "parse_target", "target_string"]

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
    specialization. Compile failures raise Triton's original exception.
    """
    resolved = parse_target(target) if isinstance(target, str) else target
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
    variant = triton_compat.compile_ast(fn, spec, resolved, always_compile=always_compile)
    metadata = dict(variant.metadata)
    metadata["cache_hit"] = variant.cache_hit
    return CompileResult(
        asm=variant.asm,
        metadata=metadata,
        compile_time_s=variant.compile_time_s,
        target=target_string(resolved),
    )
