"""``python -m extract FILE.ttgir [--format json|summary]`` and
``python -m extract compile FILE.py:KERNEL --signature ... --target sm_90 --out DIR``
(``KERNEL`` may also be ``package.module:KERNEL``)."""

from __future__ import annotations

import argparse
import sys
import traceback

from rich.console import Console

from extract.commands import (
    CompileConfig,
    DescribeConfig,
    KernelCompileError,
    compile_to_dir,
    describe,
)
from extract.graph import IrParseError
from extract.kernel_args import split_signature
from extract.kernel_loading import KernelLoadError
from schemas.argtypes import non_empty_path, non_empty_text, positive_int
from schemas.console import print_error


def _describe_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m extract",
        description="Print the graph of a TTIR/TTGIR file (node-link JSON), or see "
        "'python -m extract compile -h' to compile a kernel without a GPU.",
    )
    parser.add_argument("file", type=non_empty_path, help="a .ttir or .ttgir file")
    parser.add_argument(
        "--format", choices=("json", "summary"), default="json", help="output (default: json)"
    )
    parser.add_argument(
        "--target", help="compile target to record when the IR has none, e.g. cuda:90 (default: none)"
    )
    return parser


def _compile_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m extract compile",
        description="Compile a @triton.jit kernel for an explicit target (no GPU needed); write its "
        "IR files, graph JSON and static SASS stats.",
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
        help="repeatable; parameters with defaults or @triton.heuristics need none; dtypes as tl.float32",
    )
    parser.add_argument(
        "--all-configs",
        action="store_true",
        help="compile every config of the kernel's @triton.autotune, each into OUT/config_NN",
    )
    parser.add_argument(
        "--target", default="sm_90", help="sm_80, sm_90, cuda:90, ... (default: sm_90)"
    )
    parser.add_argument("--num-warps", type=positive_int, default=4, help="warps per program (default: 4)")
    parser.add_argument(
        "--num-stages", type=positive_int, default=3, help="software-pipelining stages of loops (default: 3)"
    )
    parser.add_argument(
        "--num-ctas", type=positive_int, default=1, help="CTAs per cluster, sm_90 and newer (default: 1)"
    )
    parser.add_argument("--out", type=non_empty_path, required=True, help="output directory")
    parser.add_argument(
        "--traceback", action="store_true", help="print the full traceback of a failure"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _main(argv)
    except KernelLoadError as exc:
        # KERNEL names nothing compilable: bad input on the command line, exit 2 as argparse's
        # refusals and the other commands' bad input do (1 is for input that fails later).
        print_error(Console(stderr=True), str(exc))
        return 2
    except (IrParseError, OSError, ValueError, ImportError, KernelCompileError) as exc:
        if "--traceback" in argv:
            traceback.print_exception(exc.__cause__ or exc, file=sys.stderr)
        print_error(Console(stderr=True), str(exc))
        return 1


def _main(argv: list[str]) -> int:
    if argv and argv[0] == "compile":
        args = _compile_parser().parse_args(argv[1:])
        pairs = []
        for item in args.constexpr:
            name, sep, value = item.partition("=")
            if not sep:
                raise SystemExit(f"--constexpr expects NAME=VALUE, got {item!r}")
            pairs.append((name.strip(), value.strip()))
        config = CompileConfig(
            kernel=args.kernel,
            signature=tuple(split_signature(args.signature)),
            constexprs=tuple(pairs),
            target=args.target,
            num_warps=args.num_warps,
            num_stages=args.num_stages,
            num_ctas=args.num_ctas,
            out_dir=args.out,
            all_configs=args.all_configs,
        )
        compile_to_dir(config)
        return 0
    args = _describe_parser().parse_args(argv)
    describe(
        DescribeConfig(
            path=args.file,
            output_format=args.format,
            target=args.target,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
