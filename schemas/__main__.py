"""``python -m schemas {check,compact,doc}``: dataset maintenance commands."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from schemas.cli import run_check, run_compact, run_doc


@dataclass(frozen=True)
class Command:
    name: str
    dataset: str | None
    out: Path
    check_only: bool
    min_files: int


def parse(argv: list[str] | None = None) -> Command:
    parser = argparse.ArgumentParser(prog="python -m schemas", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="validate a dataset; exit 1 on problems")
    check.add_argument("dataset", help="dataset root (local path or fsspec URL)")
    compact = sub.add_parser("compact", help="merge small files per partition, atomically")
    compact.add_argument("dataset")
    compact.add_argument("--min-files", type=int, default=2, help="merge partitions with at least this many files")
    doc = sub.add_parser("doc", help="write the schema reference generated from the code")
    doc.add_argument("--out", type=Path, default=Path("docs/SCHEMA.md"))
    doc.add_argument("--check", action="store_true", help="exit 1 if the file is stale instead of writing it")
    args = parser.parse_args(argv)
    return Command(
        name=args.command,
        dataset=getattr(args, "dataset", None),
        out=getattr(args, "out", Path("docs/SCHEMA.md")),
        check_only=getattr(args, "check", False),
        min_files=getattr(args, "min_files", 2),
    )


def main(argv: list[str] | None = None) -> int:
    command = parse(argv)
    if command.name == "check":
        return run_check(command.dataset)
    if command.name == "compact":
        return run_compact(command.dataset, command.min_files)
    return run_doc(command.out, command.check_only)


if __name__ == "__main__":
    sys.exit(main())
