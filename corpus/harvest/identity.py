"""Identity of harvest rows: input signatures, toolchain fingerprint, device model.

The keys themselves are computed by :mod:`schemas.identity`; this module builds what they
hash from live objects (tensors, the installed Triton, the device).
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import os
import sys
from collections.abc import Mapping
from typing import Any

from corpus.suite.spec import Dims, KernelSpec
from schemas.identity import kernel_id
from schemas.paths import is_absolute


def stride_pattern(tensor: Any) -> str:
    """One char per dim: '0' broadcast, '1' unit stride, 'n' anything else."""
    return "".join("0" if s == 0 else "1" if s == 1 else "n" for s in tensor.stride())


def triton_type(value: Any) -> str:
    """Triton-style type text of a kernel argument: '*fp16', 'i32', 'fp32', 'i1'."""
    import torch

    if torch.is_tensor(value):
        names = {
            torch.float16: "fp16",
            torch.bfloat16: "bf16",
            torch.float32: "fp32",
            torch.float64: "fp64",
            torch.int8: "i8",
            torch.uint8: "u8",
            torch.int16: "i16",
            torch.int32: "i32",
            torch.int64: "i64",
            torch.bool: "i1",
        }
        return "*" + names.get(value.dtype, str(value.dtype).removeprefix("torch."))
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32" if -(2**31) <= value < 2**31 else "i64"
    if isinstance(value, float):
        return "fp32"
    return type(value).__name__


def input_signature(spec: KernelSpec, dims: Dims, dtype: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """What ``run_id`` hashes about the inputs: names, types, shapes, stride patterns, and
    the values of scalar arguments (they specialize the compiled code)."""
    import torch

    args = []
    for name, value in inputs.items():
        entry: dict[str, Any] = {"name": name, "type": triton_type(value)}
        if torch.is_tensor(value):
            entry["shape"] = list(value.shape)
            entry["strides"] = stride_pattern(value)
        else:
            entry["value"] = value
        args.append(entry)
    return {"family": spec.name, "dims": dict(dims), "dtype": dtype, "args": args}


def kernel_source(spec: KernelSpec) -> tuple[str, str, str]:
    """(module source text, entry name, module name) of the spec's entry kernel."""
    function = getattr(spec.kernel, "fn", spec.kernel)
    module = sys.modules.get(function.__module__) or importlib.import_module(function.__module__)
    return inspect.getsource(module), function.__name__, function.__module__


def spec_source(spec: KernelSpec) -> str:
    """What defines ``spec``'s measurements besides the kernel's module: the module-qualified
    name of each spec class in its MRO (up to :class:`KernelSpec`), then the source of each of
    their modules that is not the kernel's module (a family whose spec and kernel share one
    module is covered by the kernel source already)."""
    _, _, kernel_module = kernel_source(spec)
    names: list[str] = []
    modules: list[str] = []
    for cls in type(spec).__mro__:
        if cls is KernelSpec or not issubclass(cls, KernelSpec):
            continue
        names.append(f"{cls.__module__}:{cls.__qualname__}")
        if cls.__module__ != kernel_module and cls.__module__ not in modules:
            modules.append(cls.__module__)
    sources = [inspect.getsource(sys.modules[name]) for name in modules]
    return "\n".join(names + sources)


def spec_kernel_id(spec: KernelSpec) -> str:
    """``kernel_id`` of a suite family: its kernel's module source and entry name, and
    :func:`spec_source` (editing a reference or a bind changes it, and so every run_id)."""
    source, entry, _ = kernel_source(spec)
    return kernel_id(source, entry, spec_source(spec))


def portable_env_value(value: str) -> str:
    """An environment value as the fingerprint (and so ``runs.toolchain_json``) records it:
    an absolute path becomes ``<file name>@<content hash>`` for a file (the same tool installed
    anywhere gives the same run_id; another version of it does not) and ``<name>/`` for a
    directory or a missing path, so the dataset never carries this machine's paths.
    ``os.pathsep``-separated lists are mapped item by item; other values are kept."""
    if not any(is_absolute(part) for part in value.split(os.pathsep)):
        return value
    return os.pathsep.join(_portable_path(part) if is_absolute(part) else part for part in value.split(os.pathsep))


def _portable_path(path: str) -> str:
    name = os.path.basename(path.rstrip("/")) or "/"
    if not os.path.isfile(path):
        return f"{name}/"
    digest = hashlib.blake2b(digest_size=8)
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return f"{name}@{digest.hexdigest()}"


def toolchain_fingerprint(codegen_env: Mapping[str, str], *, ir_target: str | None) -> dict[str, Any]:
    """Triton version and compiler-content hash, plus codegen-affecting environment knobs.

    ``ir_target`` is recorded for interpreter runs, whose IR comes from an explicit target.
    """
    from extract.triton_compat import TRITON_VERSION, compiler_key

    env = {name: portable_env_value(value) for name, value in codegen_env.items()}
    fingerprint: dict[str, Any] = {"triton": TRITON_VERSION, "triton_key": compiler_key(), "env": env}
    if ir_target is not None:
        fingerprint["ir_target"] = ir_target
    return fingerprint
