"""What the ``python -m extract`` command lines do (the entry point only parses arguments)."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from extract.compile import CompileResult, compile_call
from extract.graph import IrGraph
from extract.sass import static_stats

# ------------------------------------------------------------------ python -m extract FILE


@dataclass(frozen=True)
class DescribeConfig:
    """``python -m extract FILE``: print the graph of one IR file."""

    path: Path
    output_format: str = "json"  # 'json' (node-link) or 'summary'
    target: str | None = None
    num_stages: int | None = None


def describe(config: DescribeConfig, out: TextIO | None = None) -> IrGraph:
    """Build the graph of ``config.path`` and print it as node-link JSON or a summary."""
    out = out or sys.stdout
    graph = IrGraph.from_file(config.path, target=config.target, num_stages=config.num_stages)
    if config.output_format == "summary":
        out.write(summary_table(graph))
    else:
        json.dump(graph.to_node_link(), out, indent=None, separators=(",", ":"))
        out.write("\n")
    return graph


def summary_table(graph: IrGraph, top_ops: int = 12) -> str:
    """A readable table of a graph's facts and its most frequent operations."""
    facts = graph.facts()
    counts = graph.counts()
    rows = [(key, facts[key]) for key in ("ir_id", "level", "entry_name", "target", "num_warps", "num_stages", "num_ctas")]
    rows += [(key, value) for key, value in counts.items()]
    width = max(len(key) for key, _ in rows)
    lines = [f"{key.ljust(width)}  {value}" for key, value in rows]
    ops = Counter(node.op_name for node in graph.nodes if node.node_kind == "op")
    lines.append("")
    lines.append(f"{'operation'.ljust(32)}  count")
    for name, count in ops.most_common(top_ops):
        lines.append(f"{str(name).ljust(32)}  {count}")
    if len(ops) > top_ops:
        lines.append(f"{'(other ops)'.ljust(32)}  {sum(ops.values()) - sum(c for _, c in ops.most_common(top_ops))}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ python -m extract compile


@dataclass(frozen=True)
class CompileConfig:
    """``python -m extract compile FILE.py:KERNEL ...``: compile without a GPU, write outputs."""

    kernel: str  # 'path/to/file.py:KERNEL'
    signature: tuple[str, ...]
    constexprs: tuple[tuple[str, str], ...]
    target: str
    num_warps: int
    num_stages: int
    num_ctas: int
    out_dir: Path


def load_kernel(spec: str) -> Any:
    """Import ``path/to/file.py:NAME`` and return the ``@triton.jit`` function ``NAME``."""
    path_text, _, name = spec.rpartition(":")
    if not path_text or not name:
        raise ValueError(f"expected FILE.py:KERNEL, got {spec!r}")
    path = Path(path_text).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"no such kernel file: {path}")
    module_name = f"_extract_kernel_{path.stem}"
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    if module_spec is None or module_spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module
    sys.path.insert(0, str(path.parent))
    try:
        module_spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    try:
        return getattr(module, name)
    except AttributeError:
        raise AttributeError(f"{path} defines no {name!r}") from None


_TORCH_DTYPES = {
    "fp16": "float16",
    "bf16": "bfloat16",
    "fp32": "float32",
    "fp64": "float64",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "u8": "uint8",
    "i1": "bool",
    "u1": "bool",
    "fp8e4nv": "float8_e4m3fn",
    "fp8e5": "float8_e5m2",
}


def signature_args(fn: Any, signature: tuple[str, ...], constexprs: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """Turn ``--signature`` entries and ``--constexpr`` pairs into ``compile_call`` args.

    An entry is ``TYPE`` (positional over the non-constexpr parameters) or ``NAME:TYPE``.
    ``*DTYPE`` is a pointer (a meta tensor; 16-byte aligned like any torch allocation);
    integer types take a specialization hint as in Triton's AOT tool: ``i32:16`` (divisible
    by 16), ``i32:1`` (equal to 1), ``i32`` (neither); float scalars are ``fp32``/``fp64``.
    """
    import torch

    values = dict(constexprs)
    constexpr_names = [p.name for p in fn.params if p.is_constexpr]
    runtime_names = [name for name in fn.arg_names if name not in constexpr_names]
    args: dict[str, Any] = {name: _constexpr_value(values[name]) for name in constexpr_names if name in values}
    for position, entry in enumerate(item.strip() for item in signature if item.strip()):
        name, type_text = _signature_entry(entry, position, runtime_names)
        args[name] = _example_value(type_text, torch)
    missing = [name for name in fn.arg_names if name not in args]
    if missing:
        raise ValueError(f"no --signature/--constexpr value for: {', '.join(missing)}")
    return args


def _signature_entry(entry: str, position: int, runtime_names: list[str]) -> tuple[str, str]:
    head, sep, rest = entry.partition(":")
    if sep and head in runtime_names:
        return head, rest
    if position >= len(runtime_names):
        raise ValueError(f"--signature has more entries than the kernel has parameters: {entry!r}")
    return runtime_names[position], entry


def _example_value(type_text: str, torch: Any) -> Any:
    base, _, hint = type_text.partition(":")
    if base.startswith("*"):
        dtype = getattr(torch, _TORCH_DTYPES.get(base[1:], base[1:]))
        return torch.empty(16, dtype=dtype, device="meta")
    if base in ("fp16", "bf16", "fp32", "fp64"):
        return 1.5
    if base in ("i1", "u1"):
        return False
    if hint == "1":
        return 1
    if hint == "16":
        return 16
    return 3


def _constexpr_value(text: str) -> Any:
    if text in ("True", "true"):
        return True
    if text in ("False", "false"):
        return False
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def compile_to_dir(config: CompileConfig, out: TextIO | None = None) -> CompileResult:
    """Compile, then write IR files, graph JSON (TTIR, TTGIR) and static stats to the
    output directory; print one line per file written."""
    out = out or sys.stdout
    fn = load_kernel(config.kernel)
    args = signature_args(fn, config.signature, config.constexprs)
    result = compile_call(
        fn,
        args,
        target=config.target,
        num_warps=config.num_warps,
        num_stages=config.num_stages,
        num_ctas=config.num_ctas,
    )
    config.out_dir.mkdir(parents=True, exist_ok=True)
    name = str(result.metadata.get("name", fn.__name__))
    written: list[Path] = []
    for stage, content in result.asm.items():
        path = config.out_dir / f"{name}.{stage}"
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        written.append(path)
    for level in ("ttir", "ttgir"):
        if level in result.asm:
            graph = IrGraph.from_compiled(result, level)
            path = config.out_dir / f"{name}.{level}.graph.json"
            path.write_text(json.dumps(graph.to_node_link(), separators=(",", ":")))
            written.append(path)
    stats = static_stats(result.asm["cubin"], kernel_name=name, dynamic_shared_bytes=result.metadata.get("shared")) if isinstance(result.asm.get("cubin"), bytes) else None
    report = {
        "kernel": name,
        "target": result.target,
        "compile_time_s": result.compile_time_s,
        "num_warps": result.metadata.get("num_warps"),
        "num_stages": result.metadata.get("num_stages"),
        "num_ctas": result.metadata.get("num_ctas"),
        "shared": result.metadata.get("shared"),
        "static_stats": stats.to_row() if stats else {"stats_note": "no cubin produced"},
    }
    path = config.out_dir / f"{name}.stats.json"
    path.write_text(json.dumps(report, indent=2, sort_keys=True))
    written.append(path)
    for item in written:
        out.write(f"wrote {item}\n")
    return result
