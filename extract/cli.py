"""Command line of ``python -m extract``: argument parsing into a frozen config, exit codes.

``python -m extract FILE`` prints the graph of an IR file (:class:`~extract.commands.DescribeConfig`);
``python -m extract compile KERNEL ...`` compiles a kernel without a GPU
(:class:`~extract.commands.CompileConfig`). What they do is :func:`extract.commands.run_command`.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from dataclasses import dataclass

from rich.console import Console

from extract.commands import (
    CompileConfig,
    DescribeConfig,
    KernelCompileError,
    UsageError,
    run_command,
)
from extract.compile import check_target, target_string
from extract.graph import IrParseError
from extract.kernel_args import split_signature
from schemas.argtypes import non_empty_path, non_empty_text, positive_int
from schemas.console import print_error


@dataclass(frozen=True)
class Command:
    """One parsed command line: what to do, and whether a failure prints its traceback."""

    config: DescribeConfig | CompileConfig
    show_traceback: bool = False


def build_describe_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m extract FILE``."""
    parser = argparse.ArgumentParser(
        prog="python -m extract",
        description="Print the graph of a TTIR/TTGIR file as node-link JSON or a summary table, "
        "or see 'python -m extract compile -h' to compile a kernel without a GPU. Exit 2: bad "
        "input (a file that cannot be read or is not text, a bad --target), refused before "
        "parsing; exit 1: the IR is invalid (FILE:LINE:COL named).",
    )
    parser.add_argument(
        "file",
        type=non_empty_path,
        help="a .ttir or .ttgir file (the suffix gives the level; another suffix: read from the IR)",
    )
    parser.add_argument(
        "--format",
        choices=("json", "summary"),
        default="json",
        help="json: the node-link graph on one line, for networkx.node_link_graph(data, "
        "edges='edges'); summary: graph facts and the most frequent operations (default: json)",
    )
    parser.add_argument(
        "--target",
        help="compile target to record when the IR names none (TTIR), e.g. sm_90 or cuda:90, "
        "recorded as cuda:90; refused when it contradicts a TTGIR file's ttg.target (default: none)",
    )
    # the usage line showed only this form: say the subcommand there too, in argparse's layout
    parser.usage = parser.format_usage().removeprefix("usage: ").rstrip() + "\n       " + _compile_usage()
    return parser


def _compile_usage() -> str:
    """``python -m extract compile``'s usage in one line: its required options and the
    kernel, the rest left to its own ``-h``."""
    parser = build_compile_parser()
    required = [f"{a.option_strings[0]} {a.metavar or a.dest.upper()}" for a in parser._actions if a.required and a.option_strings]
    return f"{parser.prog} [-h] {' '.join(required)} [...] kernel"


def build_compile_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m extract compile KERNEL ...``."""
    parser = argparse.ArgumentParser(
        prog="python -m extract compile",
        description="Compile a @triton.jit kernel for an explicit target (no GPU needed); write its "
        "IR files, graph JSON and static SASS stats. Exit 2: bad input (kernel, signature, "
        "constexprs, target, options, --out), refused before compiling, one line naming it; "
        "exit 1: Triton could not compile the kernel.",
    )
    parser.add_argument(
        "kernel",
        help="path/to/file.py:KERNEL or package.module:KERNEL (a @triton.jit function, possibly "
        "wrapped by @triton.autotune / @triton.heuristics or any wrapper holding it as .fn, "
        "such as flag-gems' @libentry())",
    )
    parser.add_argument(
        "--signature",
        type=non_empty_text,
        required=True,
        help="comma-separated types of the non-constexpr parameters, positional or NAME:TYPE, "
        "e.g. '*fp16,*fp16,*fp16,i32:16' (':16' divisible by 16, ':1' equal to 1; 'N:i32=4096' "
        "gives the value a launch passes, which @triton.heuristics read). Types: "
        "i1 i8 i16 i32 i64 u1 u8 u16 u32 u64 fp8e4nv fp8e5 fp8e4b15 fp8e4b8 fp8e5b16 fp16 bf16 "
        "fp32 fp64, '*TYPE' for pointers, 'tensordesc<fp16[64,64]>' for a TensorDescriptor "
        "(element type and block shape)",
    )
    parser.add_argument(
        "--constexpr",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="repeatable, once per NAME; integers, floats, True/False, Triton dtypes as tl.float32, "
        "else a string; parameters with defaults or @triton.heuristics need none, and the "
        "command line wins over both and over autotune configs",
    )
    parser.add_argument(
        "--all-configs",
        action="store_true",
        help="compile every config of the kernel's @triton.autotune, each into OUT/config_NN "
        "(a config's num_warps and num_stages replace the command line's)",
    )
    parser.add_argument(
        "--target",
        default="sm_90",
        help="sm_80, sm_90, cuda:90, 90, or hip:gfx942 for AMD; a CUDA arch the installed "
        "Triton's ptxas knows (default: sm_90)",
    )
    parser.add_argument("--num-warps", type=positive_int, default=4, help="warps per program, a power of 2; an autotune config's or a heuristic's wins (default: 4)")
    parser.add_argument(
        "--num-stages", type=positive_int, default=3, help="software-pipelining stages of loops (default: 3)"
    )
    parser.add_argument(
        "--num-ctas", type=positive_int, default=1, help="CTAs per cluster; more than 1 needs sm_90 or newer (default: 1)"
    )
    parser.add_argument(
        "--out",
        type=non_empty_path,
        required=True,
        help="output directory, made if missing; files of the same names in it are replaced",
    )
    parser.add_argument(
        "--traceback", action="store_true", help="print the full traceback of a failed compile or of a kernel module's failed import"
    )
    return parser


def parse(argv: list[str]) -> Command:
    """The command ``argv`` asks for. A malformed command line exits 2 (argparse); a value that
    cannot be right whatever the kernel (a target, a warp count, a ``--constexpr`` without
    ``=``, an empty ``--signature`` entry) is a :class:`UsageError`."""
    if argv and argv[0] == "compile":
        args = build_compile_parser().parse_args(argv[1:])
        return Command(_compile_config(args), show_traceback=args.traceback)
    args = build_describe_parser().parse_args(argv)
    return Command(DescribeConfig(path=args.file, output_format=args.format, target=args.target))


def _compile_config(args: argparse.Namespace) -> CompileConfig:
    try:
        target = check_target(args.target)  # also: one the installed Triton's ptxas knows
    except ValueError as exc:
        raise UsageError(f"--target {args.target}: {exc}") from None
    if args.num_warps & (args.num_warps - 1):
        raise UsageError(f"--num-warps {args.num_warps}: Triton needs a power of 2 (1, 2, 4, 8, ...)")
    if args.num_ctas > 1 and target.backend == "cuda" and int(target.arch) < 90:
        raise UsageError(
            f"--num-ctas {args.num_ctas}: CTA clusters need sm_90 or newer; the target is "
            f"{target_string(target)}"
        )
    return CompileConfig(
        kernel=args.kernel,
        signature=_signature_entries(args.signature),
        constexprs=_constexpr_pairs(args.constexpr),
        target=target_string(target),
        num_warps=args.num_warps,
        num_stages=args.num_stages,
        num_ctas=args.num_ctas,
        out_dir=args.out,
        all_configs=args.all_configs,
    )


def _signature_entries(text: str) -> tuple[str, ...]:
    """``--signature``'s entries; an empty one is refused: dropping it would move every later
    positional type onto the wrong parameter."""
    entries = tuple(entry.strip() for entry in split_signature(text))
    for position, entry in enumerate(entries, 1):
        if not entry:
            raise UsageError(f"--signature {text!r}: entry {position} of {len(entries)} is empty")
    return entries


def _constexpr_pairs(items: list[str]) -> tuple[tuple[str, str], ...]:
    """``--constexpr NAME=VALUE`` options as pairs; a NAME that is no identifier, or given
    twice (the last one would win silently), is refused."""
    pairs: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise UsageError(f"--constexpr {item!r}: expected NAME=VALUE, e.g. BLOCK=128")
        if name in pairs:
            raise UsageError(f"--constexpr {name} is given twice ({pairs[name]} and {value.strip()})")
        pairs[name] = value.strip()
    return tuple(pairs.items())


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m extract`` on ``argv`` (default: the process's arguments); the exit code:
    0 done, 2 bad input refused before any work (one line names it), 1 the work failed
    (invalid IR, a kernel Triton cannot compile, an output that could not be written)."""
    console = Console(stderr=True)
    try:
        command = parse(list(sys.argv[1:] if argv is None else argv))
    except UsageError as exc:
        print_error(console, str(exc))
        return 2
    try:
        run_command(command.config)
    except UsageError as exc:
        if command.show_traceback and exc.__cause__ is not None:  # a kernel module's import
            traceback.print_exception(exc.__cause__, file=sys.stderr)
        print_error(console, str(exc))
        return 2
    except (IrParseError, OSError, ValueError, ImportError, KernelCompileError) as exc:
        if command.show_traceback:
            traceback.print_exception(exc.__cause__ or exc, file=sys.stderr)
        print_error(console, str(exc))
        return 1
    return 0
