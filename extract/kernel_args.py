"""Turn command-line words (``--signature``, ``--constexpr``) into the arguments of one compile.

A signature entry is ``TYPE`` (positional over the kernel's runtime parameters) or
``NAME:TYPE``. ``TYPE`` is one of Triton's scalar words (:data:`SCALAR_TYPES`), ``*`` and
one of them for a pointer, or ``tensordesc<fp16[64,64]>`` for a host ``TensorDescriptor``
(element type and block shape). Integer types take a specialization hint as in Triton's AOT
tool: ``i32:16`` (divisible by 16), ``i32:1`` (equal to 1), or a value: ``N:i32=4096`` -- the
value a launch would pass, which ``@triton.heuristics`` read (Triton specializes it as it
would at launch). Entries are separated by commas outside brackets. Constexpr values are
``True``/``False``, integers, floats, Triton dtypes (``tl.float32``) or, failing those,
strings.

Heuristics are evaluated on the values given (``--constexpr``, ``=VALUE`` in the signature,
the autotune config, earlier heuristics, pointer arguments' dtypes); one that reads a value
nobody gave is an error naming it. A heuristic for ``num_warps`` / ``num_stages`` /
``num_ctas`` / ``maxnreg`` sets that compile option, as at launch.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import triton.language as tl

from extract.kernel_loading import LoadedKernel

__all__ = [
    "SCALAR_TYPES",
    "CompileArgs",
    "compile_args",
    "constexpr_value",
    "parse_type",
    "split_signature",
]

INTEGER_TYPES = ("i1", "i8", "i16", "i32", "i64", "u1", "u8", "u16", "u32", "u64")
FP8_TYPES = ("fp8e4nv", "fp8e5", "fp8e4b15", "fp8e4b8", "fp8e5b16")
FLOAT_TYPES = (*FP8_TYPES, "fp16", "bf16", "fp32", "fp64")
SCALAR_TYPES: tuple[str, ...] = (*INTEGER_TYPES, *FLOAT_TYPES)
"""Triton's signature words for scalars; a pointer is ``*`` followed by one of them. (Which
fp8 formats a target supports is Triton's to say when compiling.)"""

_TORCH_DTYPES = {
    "i1": "bool", "u1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2", "fp8e4b8": "float8_e4m3fnuz",
    "fp8e5b16": "float8_e5m2fnuz", "fp16": "float16", "bf16": "bfloat16", "fp32": "float32",
    "fp64": "float64",
}  # fmt: skip
"""Torch dtype of the example tensor behind a pointer, so heuristics that read ``.dtype`` see
the right one (the compiled type comes from the signature word either way)."""

_HINTS = {"16": 16, "1": 1}
_PLAIN_INT = 3  # neither divisible by 16 nor equal to 1: the JIT specializes nothing
_DESCRIPTOR = re.compile(r"^tensordesc<(\w+)\[([\d,\s]+)\]>$")
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
"""Names a ``@triton.heuristics`` may set that are compile options, not kernel arguments."""


@dataclass(frozen=True)
class ParsedType:
    """One validated signature type: ``word`` ('*fp16', 'i64', 'tensordesc<fp16[64,64]>'),
    its integer hint, the value given with ``=VALUE``, a descriptor's block shape."""

    word: str
    hint: int | None = None
    value: Any = None
    block_shape: tuple[int, ...] | None = None

    @property
    def is_pointer(self) -> bool:
        return self.word.startswith("*")

    @property
    def is_descriptor(self) -> bool:
        return self.block_shape is not None


def split_signature(text: str) -> list[str]:
    """``--signature`` entries: split at commas outside ``<...>`` and ``[...]``."""
    entries, depth, current = [], 0, []
    for char in text:
        depth += char in "<["
        depth -= char in ">]"
        if char == "," and depth == 0:
            entries.append("".join(current))
            current = []
        else:
            current.append(char)
    entries.append("".join(current))
    return entries


def _valid_words() -> str:
    return (
        ", ".join(SCALAR_TYPES) + " (prefix '*' for a pointer; integer types may add ':16' or ':1')"
    )


def parse_type(text: str, entry: str) -> ParsedType:
    """Validate a signature type such as ``*fp16``, ``i64:16``, ``i32=4096``, ``bf16`` or
    ``tensordesc<fp16[64,64]>``; ``entry`` (the whole ``--signature`` entry) is named in the
    error."""
    text, eq, value_text = text.strip().partition("=")
    descriptor = _DESCRIPTOR.match(text.replace(" ", ""))
    if descriptor is not None and not eq:
        element, dims = descriptor.groups()
        if element not in SCALAR_TYPES:
            raise ValueError(
                f"unknown element type {element!r} in --signature entry {entry!r}; valid types: {_valid_words()}"
            )
        shape = tuple(int(d) for d in dims.split(",") if d.strip())
        return ParsedType(f"tensordesc<{element}[{','.join(map(str, shape))}]>", block_shape=shape)
    if eq:
        parsed = parse_type(text, entry)
        if parsed.is_pointer or parsed.is_descriptor or parsed.hint is not None:
            raise ValueError(
                f"--signature entry {entry!r}: only a scalar type without hint takes '=VALUE'"
            )
        try:
            value = (float if parsed.word in FLOAT_TYPES else int)(value_text)
        except ValueError:
            raise ValueError(f"--signature entry {entry!r}: {value_text!r} is not a {parsed.word} value") from None
        return ParsedType(parsed.word, value=value)
    base, sep, hint_text = text.strip().partition(":")
    scalar = base[1:] if base.startswith("*") else base
    if scalar not in SCALAR_TYPES:
        raise ValueError(
            f"unknown type {base!r} in --signature entry {entry!r}; valid types: {_valid_words()}"
        )
    if not sep:
        return ParsedType(base)
    if base.startswith("*") or scalar not in INTEGER_TYPES or hint_text not in _HINTS:
        raise ValueError(
            f"bad hint in --signature entry {entry!r}: only integer scalars take one, and it is ':16' "
            "(divisible by 16) or ':1' (equal to 1)"
        )
    return ParsedType(base, _HINTS[hint_text])


def constexpr_value(text: str) -> Any:
    """``True``/``False``, an int, a float, a Triton dtype (``tl.float32``,
    ``triton.language.bfloat16``), or else the text itself."""
    if text in ("True", "true"):
        return True
    if text in ("False", "false"):
        return False
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    for prefix in ("tl.", "triton.language."):
        if text.startswith(prefix):
            value = getattr(tl, text.removeprefix(prefix), None)
            if not isinstance(value, tl.dtype):
                raise ValueError(
                    f"{text!r} is not a Triton dtype (e.g. tl.float16, tl.bfloat16, tl.int32)"
                )
            return value
    return text


def _example_value(parsed: ParsedType) -> Any:
    import torch

    if parsed.value is not None:
        return parsed.value
    if parsed.is_descriptor:
        from triton.tools.tensor_descriptor import TensorDescriptor

        dtype = getattr(torch, _TORCH_DTYPES.get(parsed.word[len("tensordesc<"):].split("[")[0], "int8"))
        base = torch.empty(parsed.block_shape, dtype=dtype, device="meta")  # type: ignore[arg-type]
        return TensorDescriptor.from_tensor(base, list(parsed.block_shape))  # type: ignore[arg-type]
    if parsed.is_pointer:
        dtype = getattr(torch, _TORCH_DTYPES.get(parsed.word[1:], "int8"), torch.int8)
        return torch.empty(16, dtype=dtype, device="meta")
    if parsed.word in ("i1", "u1"):
        return False
    if parsed.word in FLOAT_TYPES:
        return 1.5
    return parsed.hint if parsed.hint is not None else _PLAIN_INT


@dataclass(frozen=True)
class CompileArgs:
    """Everything ``compile_call`` needs besides the kernel: ``args`` names every parameter,
    ``types`` the Triton type of every runtime parameter, ``options`` num_warps/num_stages/...
    taken from an autotune config (empty when none was chosen)."""

    args: dict[str, Any]
    types: dict[str, str]
    options: dict[str, int] = field(default_factory=dict)
    heuristics: dict[str, Any] = field(default_factory=dict)
    """What the kernel's ``@triton.heuristics`` chose (launch options among them)."""


def _runtime_types(fn: Any, signature: Sequence[str]) -> dict[str, ParsedType]:
    constexpr_names = {p.name for p in fn.params if p.is_constexpr}
    runtime_names = [name for name in fn.arg_names if name not in constexpr_names]
    types: dict[str, ParsedType] = {}
    entries = [item.strip() for item in signature if item.strip()]
    for position, entry in enumerate(entries):
        head, sep, rest = entry.partition(":")
        if sep and head in constexpr_names:
            raise ValueError(
                f"--signature entry {entry!r}: {head} is a constexpr parameter; give it with --constexpr {head}=VALUE"
            )
        if sep and head in runtime_names:
            name, type_text = head, rest
        elif sep and head.lstrip("*") not in SCALAR_TYPES:
            raise ValueError(
                f"--signature entry {entry!r}: {fn.__name__} has no runtime parameter {head!r}; "
                f"its runtime parameters are {', '.join(runtime_names)}"
            )
        elif position >= len(runtime_names):
            raise ValueError(
                f"--signature has {len(entries)} entries but {fn.__name__} has {len(runtime_names)} "
                f"runtime parameters ({', '.join(runtime_names)})"
            )
        else:
            name, type_text = runtime_names[position], entry
        if name in types:
            raise ValueError(f"--signature gives {name} twice")
        types[name] = parse_type(type_text, entry)
    return types


def _check_constexpr_names(kernel: LoadedKernel, constexprs: Mapping[str, str]) -> None:
    constexpr_names = [p.name for p in kernel.fn.params if p.is_constexpr]
    for name in constexprs:
        if name in constexpr_names:
            continue
        if name in kernel.fn.arg_names:
            raise ValueError(
                f"--constexpr {name}: {name} is a runtime parameter of {kernel.name}; give its type in --signature"
            )
        raise ValueError(
            f"--constexpr {name}: {kernel.name} has no constexpr parameter {name!r}; "
            f"its constexpr parameters are {', '.join(constexpr_names) or '(none)'}"
        )


def _apply_heuristics(
    kernel: LoadedKernel, args: dict[str, Any], given: set[str], fixed: set[str]
) -> dict[str, Any]:
    """Evaluate ``@triton.heuristics`` for what nobody set, as the launch would, on the values
    given (``given``: names whose value in ``args`` is real, not a placeholder). Returns what
    they chose (launch options among them); a heuristic that reads a value nobody gave is an
    error naming that value."""
    chosen: dict[str, Any] = {}
    for name, heuristic in kernel.heuristics:
        if name in fixed:
            continue
        visible = {k: v for k, v in args.items() if k in given}
        try:
            value = heuristic(visible)
        except KeyError as exc:
            needed = exc.args[0] if exc.args else "?"
            how = (
                f"--constexpr {needed}=VALUE"
                if any(p.name == needed and p.is_constexpr for p in kernel.fn.params)
                else f"--signature {needed}:TYPE=VALUE"
            )
            raise ValueError(
                f"the @triton.heuristics value of {name} reads {needed}, which has no value: give it "
                f"({how}), or set {name} itself with --constexpr {name}=VALUE"
            ) from exc
        except Exception as exc:
            raise ValueError(
                f"the @triton.heuristics value of {name} failed on the values given "
                f"({type(exc).__name__}: {exc}); give it with --constexpr {name}=VALUE"
            ) from exc
        chosen[name] = value
        if name not in LAUNCH_OPTIONS:
            args[name] = value
            given.add(name)
    return chosen


def compile_args(
    kernel: LoadedKernel,
    signature: Sequence[str],
    constexprs: Mapping[str, str],
    config: Any | None = None,
) -> CompileArgs:
    """Arguments of one compile of ``kernel``.

    Constexpr values come from, in order of precedence: ``constexprs`` (the command line), the
    autotune ``config`` (a ``triton.Config``) when given, the kernel's ``@triton.heuristics``,
    and the parameters' defaults. Every parameter must end up with a value.
    """
    fn = kernel.fn
    _check_constexpr_names(kernel, constexprs)
    types = _runtime_types(fn, signature)
    args: dict[str, Any] = {name: _example_value(parsed) for name, parsed in types.items()}
    given = {n for n, p in types.items() if p.value is not None or p.is_pointer or p.is_descriptor}
    for name, text in constexprs.items():
        try:
            args[name] = constexpr_value(text)
        except ValueError as exc:
            raise ValueError(f"--constexpr {name}={text}: {exc}") from None
    options: dict[str, int] = {}
    if config is not None:
        args.update({k: v for k, v in config.kwargs.items() if k not in constexprs})
        options = {k: getattr(config, k) for k in LAUNCH_OPTIONS}
        options = {k: v for k, v in options.items() if v is not None}
    fixed = set(constexprs) | set(getattr(config, "kwargs", {}))
    chosen = _apply_heuristics(kernel, args, given | fixed, fixed | set(options))
    options.update({k: int(v) for k, v in chosen.items() if k in LAUNCH_OPTIONS})
    for param in fn.params:
        if param.name not in args and param.is_constexpr and param.has_default:
            args[param.name] = param.default
    missing = [name for name in fn.arg_names if name not in args]
    if missing:
        raise ValueError(_missing_message(kernel, missing, from_config=config is not None))
    ordered = {name: args[name] for name in fn.arg_names}  # extra heuristic outputs dropped
    words = {name: parsed.word for name, parsed in types.items() if not parsed.is_descriptor}
    return CompileArgs(ordered, words, options, chosen)


def _missing_message(kernel: LoadedKernel, missing: list[str], from_config: bool = False) -> str:
    constexpr_names = {p.name for p in kernel.fn.params if p.is_constexpr}
    runtime = [name for name in missing if name not in constexpr_names]
    constant = [name for name in missing if name in constexpr_names]
    parts = []
    if runtime:
        parts.append(f"no --signature type for: {', '.join(runtime)}")
    if constant:
        if from_config:  # --all-configs: what the configs leave out, the caller passes at launch
            it = "it" if len(constant) == 1 else "them"
            hint = f" (its @triton.autotune configs do not set {it}: its caller passes {it} at launch)"
        elif kernel.configs:
            hint = " (or --all-configs to take them from its @triton.autotune configs)"
        else:
            hint = ""
        parts.append(f"no --constexpr value for: {', '.join(constant)}{hint}")
    return f"{kernel.name}: " + "; ".join(parts)
