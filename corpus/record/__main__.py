"""``python -m corpus.record --out DATASET [options] -- python workload.py ARGS``."""

from __future__ import annotations

import argparse
import shlex
import sys

from rich.console import Console

from corpus.destination import OutRefused, add_force_out
from corpus.record.app import RecordCommand, record_workload
from corpus.record.recorder import RecordError, RecordOptions
from corpus.record.workload import WorkloadError, parse_command
from schemas.argtypes import non_empty_text
from schemas.console import print_error


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m corpus.record",
        description="Run a Python workload and record every @triton.autotune tuning it does "
        "(configs, timings, IR graphs, static stats) into a dataset.",
        epilog="example: python -m corpus.record --out dataset -- python train.py --steps 10",
    )
    parser.add_argument(
        "--out",
        required=True,
        type=non_empty_text,
        help="dataset directory or URL: a new or empty directory, or a dataset (see --force-out)",
    )
    add_force_out(parser)
    parser.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="auto: the interpreter when there is no GPU, else the GPU; cpu: the interpreter (default: auto)",
    )
    parser.add_argument(
        "--target",
        help="compile target of the IR graphs (default: the GPU's arch, the only one a GPU accepts; sm_90 on the interpreter)",
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=1,
        help="interpreter bench: untimed calls per config (default: 1)",
    )
    parser.add_argument(
        "--rep", type=int, default=5, help="interpreter bench: timed calls per config (default: 5)"
    )
    parser.add_argument("--no-ir", action="store_true", help="skip IR graphs and static stats")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    split = argv.index("--") if "--" in argv else len(argv)
    parser = _parser()
    if split == len(argv):
        # Without '--' the workload's words are no recorder options: name the fix rather than
        # argparse's "unrecognized arguments: python workload.py" (--help still prints help).
        _, workload = parser.parse_known_args(argv)
        example = shlex.join(workload) if workload else "python workload.py"
        parser.error(f"give the workload after '--', e.g. -- {example}")
    args = parser.parse_args(argv[:split])
    try:
        command = RecordCommand(
            options=RecordOptions(
                out=args.out,
                target=args.target,
                warmup=args.warmup,
                rep=args.rep,
                compile_ir=not args.no_ir,
            ),
            workload=parse_command(argv[split + 1 :]),
            device=args.device,
            force_out=args.force_out,
        )
    except (RecordError, WorkloadError, ValueError) as exc:  # refused before the workload starts
        print_error(Console(stderr=True), str(exc))
        return 2
    try:
        return record_workload(command)  # the workload's own exceptions propagate as usual
    except (RecordError, OutRefused) as exc:
        print_error(Console(stderr=True), str(exc))
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
