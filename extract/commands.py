"""What the ``python -m extract`` command lines do (the entry point only parses arguments)."""

from __future__ import annotations

import json
import os
import re
import sys
import traceback
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from extract.compile import CompileResult, compile_call, target_string
from extract.graph import IrGraph
from extract.kernel_args import CompileArgs, compile_args
from extract.kernel_loading import KernelLoadError, LoadedKernel, load_kernel, names_a_file
from extract.sass import static_stats
from extract.triton_compat import def_line_number

# ------------------------------------------------------------------ python -m extract FILE


@dataclass(frozen=True)
class DescribeConfig:
    """``python -m extract FILE``: print the graph of one IR file."""

    path: Path
    output_format: str = "json"  # 'json' (node-link) or 'summary'
    target: str | None = None


class UsageError(ValueError):
    """Bad input, refused before any work starts (``python -m extract`` exits 2); the message
    is one line naming the thing at fault."""


_IR_TARGET = re.compile(r'\bttg\.target\s*=\s*"([^"]*)"')


def read_ir_text(path: Path) -> str:
    """The text of an IR file; :class:`UsageError` naming the file for one that cannot be read
    or cannot be IR text: missing, a directory, unreadable, empty, or not UTF-8 (a cubin or an
    archive passed by mistake) -- before the parser sees it."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file (expected a .ttir or .ttgir file)") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory (expected a .ttir or .ttgir file)") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not data.strip():
        raise UsageError(f"{path}: the file is empty (expected TTIR or TTGIR text)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"{path}: not a text file (byte {exc.start} is not UTF-8); expected TTIR or TTGIR text"
        ) from None


def canonical_target(text: str) -> str:
    """``text`` as the dataset records targets ('sm_90' -> 'cuda:90'); :class:`UsageError`
    naming it when it is no GPU target."""
    try:
        return target_string(text)
    except ValueError as exc:
        raise UsageError(f"--target {text}: {exc}") from None


def describe(config: DescribeConfig, out: TextIO | None = None) -> IrGraph:
    """Build the graph of ``config.path`` and print it as node-link JSON or a summary.

    ``config.target`` is recorded when the IR names none (TTIR); a target the IR contradicts
    (its ``ttg.target``) is refused, as are files that cannot be IR text (:class:`UsageError`).
    """
    out = out or sys.stdout
    target = canonical_target(config.target) if config.target is not None else None
    text = read_ir_text(config.path)
    named = _IR_TARGET.search(text)
    if target is not None and named is not None and named.group(1) != target:
        raise UsageError(
            f"--target {config.target}: {config.path} was compiled for {named.group(1)} "
            "(its ttg.target); leave --target out"
        )
    graph = IrGraph.from_file(config.path, target=target)
    if config.output_format == "summary":
        out.write(summary_table(graph))
    else:
        json.dump(graph.to_node_link(), out, indent=None, separators=(",", ":"))
        out.write("\n")
    return graph


def summary_table(graph: IrGraph, top_ops: int = 12) -> str:
    """A readable table of a graph's facts and its ``top_ops`` most frequent operations, the
    rest counted on one line (named, when only one is left)."""
    facts = graph.facts()
    counts = graph.counts()
    rows = [
        (key, facts[key])
        for key in ("ir_id", "level", "entry_name", "target", "num_warps", "num_ctas")
    ]
    rows += [(key, value) for key, value in counts.items()]
    width = max(len(key) for key, _ in rows)
    lines = [f"{key.ljust(width)}  {value}" for key, value in rows]
    ops = Counter(node.op_name for node in graph.nodes if node.node_kind == "op")
    lines.append("")
    lines.append(f"{'operation'.ljust(32)}  count")
    # one op left over takes the line a "(1 other op)" would: name it instead
    shown = ops.most_common(top_ops if len(ops) > top_ops + 1 else None)
    for name, count in shown:
        lines.append(f"{str(name).ljust(32)}  {count}")
    if len(shown) < len(ops):
        rest = f"({len(ops) - len(shown)} other ops)"
        lines.append(f"{rest.ljust(32)}  {sum(ops.values()) - sum(c for _, c in shown)}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ python -m extract compile


@dataclass(frozen=True)
class CompileConfig:
    """``python -m extract compile KERNEL ...``: compile without a GPU, write outputs.

    ``kernel`` is ``path/to/file.py:NAME`` or ``package.module:NAME``. With ``all_configs``
    every config of the kernel's ``@triton.autotune`` is compiled into its own subdirectory
    ``config_NN`` (its kwargs and num_warps/num_stages override the command line's).
    """

    kernel: str
    signature: tuple[str, ...]
    constexprs: tuple[tuple[str, str], ...]
    target: str
    num_warps: int
    num_stages: int
    num_ctas: int
    out_dir: Path
    all_configs: bool = False


class KernelCompileError(Exception):
    """Triton could not compile the kernel; the message holds the lines that matter (Triton's
    message and the offending source line), ``__cause__`` the full original exception."""


@dataclass(frozen=True)
class CompilePlan:
    """What ``compile`` will do, every argument checked: the kernel, and per output directory
    the arguments of its compile (one per autotune config with ``all_configs``)."""

    kernel: LoadedKernel
    jobs: tuple[tuple[Path, CompileArgs], ...]


def plan_compile(config: CompileConfig) -> CompilePlan:
    """Load the kernel and check every argument against it, compiling nothing and writing
    nothing; :class:`UsageError` (one line naming the thing at fault) for bad input."""
    kernel = _load_kernel(config.kernel)
    constexprs = dict(config.constexprs)
    try:
        if config.all_configs:
            if not kernel.configs:
                raise ValueError(f"--all-configs: {kernel.name} has no @triton.autotune configs")
            jobs = tuple(
                (
                    config.out_dir / f"config_{index:02d}",
                    compile_args(kernel, config.signature, constexprs, autotune),
                )
                for index, autotune in enumerate(kernel.configs)
            )
        else:
            jobs = ((config.out_dir, compile_args(kernel, config.signature, constexprs)),)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    for out_dir, _ in jobs:
        check_out_dir(out_dir, config.out_dir)
    return CompilePlan(kernel, jobs)


def check_out_dir(path: Path, option: Path | None = None) -> None:
    """Refuse (:class:`UsageError`, naming ``--out``) a directory that cannot be made or written
    into: it, or the closest part of it that exists, is not a directory or not writable.
    ``option`` is the ``--out`` given, when ``path`` lies under it."""
    given = option if option is not None else path
    existing = path
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(f"--out {given}: {existing} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"--out {given}: {existing} is not writable")


def _load_kernel(spec: str) -> LoadedKernel:
    """``load_kernel(spec)``, every way it can fail on bad input as a :class:`UsageError`: a
    malformed spec, a missing or unreadable file, a module that does not import (its own
    exception, where it was raised, in the message; the original as ``__cause__``), a name it
    lacks or that is no kernel."""
    location, _, name = spec.rpartition(":")
    if not location or not name:
        raise UsageError(f"KERNEL {spec!r}: expected path/to/file.py:NAME or package.module:NAME")
    if names_a_file(location):
        path = Path(location)
        try:
            path.open("rb").close()
        except FileNotFoundError:
            raise UsageError(f"KERNEL {spec!r}: no such kernel file: {path}") from None
        except IsADirectoryError:
            raise UsageError(f"KERNEL {spec!r}: {path} is a directory, not a Python file") from None
        except OSError as exc:
            raise UsageError(f"KERNEL {spec!r}: cannot read {path} ({exc.strerror or exc})") from None
    try:
        return load_kernel(spec)
    except KernelLoadError as exc:  # the name is missing or is no kernel
        raise UsageError(str(exc)) from None
    except ModuleNotFoundError as exc:
        if not names_a_file(location):  # import_kernel_module's message names both modules
            raise UsageError(str(exc)) from exc
        raise UsageError(f"importing {location} failed: {_exception_line(exc)}") from exc
    except (Exception, SystemExit) as exc:  # the module's own code may raise anything, exit too
        raise UsageError(f"importing {location} failed: {_exception_line(exc)}") from exc


def _exception_line(exc: BaseException) -> str:
    """``Type: message`` on one line, and where it was raised (a syntax error's message says
    where already)."""
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    line = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if not frame.filename.startswith("<frozen")  # importlib's own machinery
    ]
    if frames and not isinstance(exc, SyntaxError):
        line += f" (at {frames[-1].filename}:{frames[-1].lineno})"
    return line


def compile_to_dir(config: CompileConfig, out: TextIO | None = None) -> list[CompileResult]:
    """Compile, then write IR files, graph JSON (TTIR, TTGIR) and static stats to the
    output directory (one subdirectory per autotune config with ``all_configs``); print one
    line per file written. Bad input raises :class:`UsageError` before anything compiles
    (:func:`plan_compile`); a compile failure :class:`KernelCompileError`."""
    out = out or sys.stdout
    plan = plan_compile(config)
    kernel = plan.kernel
    if len(kernel.wrappers) > 0:
        out.write(f"{kernel.name}: unwrapped {' -> '.join(kernel.wrappers)} -> JITFunction\n")
    results = []
    for out_dir, prepared in plan.jobs:
        options = {
            "num_warps": config.num_warps,
            "num_stages": config.num_stages,
            "num_ctas": config.num_ctas,
        }
        options.update(prepared.options)
        if prepared.heuristics:
            chosen = ", ".join(f"{k}={v}" for k, v in prepared.heuristics.items())
            out.write(f"{kernel.name}: @triton.heuristics chose {chosen}\n")
        try:
            result = compile_call(
                kernel.fn, prepared.args, target=config.target, types=prepared.types, **options
            )
        except Exception as exc:
            raise KernelCompileError(
                describe_compile_error(exc, kernel.fn, target_string(config.target))
            ) from exc
        _write_outputs(result, kernel.fn, out_dir, out)
        results.append(result)
    return results


def describe_compile_error(exc: BaseException, fn: Any, target: str) -> str:
    """The few lines of a compile failure that matter: where (file:line and the source line,
    when Triton's frontend reported it) and Triton's own message."""
    lines = [f"compiling {fn.__name__} for {target} failed"]
    node = getattr(exc, "node", None)
    src = getattr(exc, "src", None)
    if isinstance(src, str) and hasattr(node, "lineno"):
        source_line = (
            src.split("\n")[node.lineno - 1].strip()
            if 0 < node.lineno <= src.count("\n") + 1
            else ""
        )
        if src == getattr(fn, "src", None):
            where = f"{fn.fn.__code__.co_filename}:{def_line_number(fn) + node.lineno - 1}"
        else:  # raised inside a called @triton.jit function
            where = f"line {node.lineno} of a function called by {fn.__name__}"
        lines.append(f"  {where}: {source_line}")
        message = exc.error_message or ""
        innermost = exc
        while isinstance(innermost.__cause__, BaseException):
            innermost = innermost.__cause__
        if innermost is not exc:
            message = f"{type(innermost).__name__}: {innermost}".splitlines()[-1]
        lines.append(f"  {message.strip() or type(exc).__name__}")
    else:
        text = [line for line in str(exc).splitlines() if line.strip()]
        lines.append(f"  {type(exc).__name__}: {' '.join(text[-3:]) if text else ''}")
    lines.append("  (--traceback prints the full traceback)")
    return "\n".join(lines)


def run_command(config: DescribeConfig | CompileConfig, out: TextIO | None = None) -> None:
    """Do what one ``python -m extract`` command line asks: describe an IR file or compile a
    kernel into a directory."""
    if isinstance(config, CompileConfig):
        compile_to_dir(config, out)
    else:
        describe(config, out)


def _write_outputs(result: CompileResult, fn: Any, out_dir: Path, out: TextIO) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    name = str(result.metadata.get("name", fn.__name__))
    written: list[Path] = []
    for stage, content in result.asm.items():
        path = out_dir / f"{name}.{stage}"
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        written.append(path)
    for level in ("ttir", "ttgir"):
        if level in result.asm:
            graph = IrGraph.from_compiled(result, level)
            path = out_dir / f"{name}.{level}.graph.json"
            path.write_text(json.dumps(graph.to_node_link(), separators=(",", ":")))
            written.append(path)
    cubin = result.asm.get("cubin")
    stats = (
        static_stats(cubin, kernel_name=name, dynamic_shared_bytes=result.metadata.get("shared"))
        if isinstance(cubin, bytes)
        else None
    )
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
    path = out_dir / f"{name}.stats.json"
    path.write_text(json.dumps(report, indent=2, sort_keys=True))
    written.append(path)
    for item in written:
        out.write(f"wrote {item}\n")
