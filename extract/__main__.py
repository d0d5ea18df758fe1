"""``python -m extract FILE.ttgir [--format json|summary]`` and
``python -m extract compile FILE.py:KERNEL --signature ... --target sm_90 --out DIR``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from extract.commands import CompileConfig, DescribeConfig, compile_to_dir, describe
from extract.graph import IrParseError


def _describe_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m extract",
        description="Print the graph of a TTIR/TTGIR file (node-link JSON), or see "
        "'python -m extract compile -h' to compile a kernel without a GPU.",
    )
    parser.add_argument("file", type=Path, help="a .ttir or .ttgir file")
    parser.add_argument("--format", choices=("json", "summary"), default="json", help="output (default: json)")
    parser.add_argument("--target", help="compile target to record when the IR has none, e.g. cuda:90")
    parser.add_argument("--num-stages", type=int, help="num_stages to record (not in the IR)")
    return parser


def _compile_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m extract compile",
        description="Compile a @triton.jit kernel for an explicit target (no GPU needed); write its "
        "IR files, graph JSON and static SASS stats.",
    )
    parser.add_argument("kernel", help="path/to/file.py:KERNEL")
    parser.add_argument(
        "--signature",
        required=True,
        help="comma-separated types of the non-constexpr parameters, positional or NAME:TYPE, "
        "e.g. '*fp16,*fp16,*fp16,i32:16' (':16' divisible by 16, ':1' equal to 1)",
    )
    parser.add_argument("--constexpr", action="append", default=[], metavar="NAME=VALUE", help="repeatable")
    parser.add_argument("--target", default="sm_90", help="sm_80, sm_90, cuda:90, ... (default sm_90)")
    parser.add_argument("--num-warps", type=int, default=4)
    parser.add_argument("--num-stages", type=int, default=3)
    parser.add_argument("--num-ctas", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except (IrParseError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
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
            signature=tuple(args.signature.split(",")),
            constexprs=tuple(pairs),
            target=args.target,
            num_warps=args.num_warps,
            num_stages=args.num_stages,
            num_ctas=args.num_ctas,
            out_dir=args.out,
        )
        compile_to_dir(config)
        return 0
    args = _describe_parser().parse_args(argv)
    describe(DescribeConfig(path=args.file, output_format=args.format, target=args.target, num_stages=args.num_stages))
    return 0


if __name__ == "__main__":
    sys.exit(main())
