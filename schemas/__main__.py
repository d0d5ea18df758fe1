"""``python -m schemas {check,compact,doc,scrub,card}``: dataset maintenance commands.

Exit codes: 0 done; 1 ``check`` found problems (or ``doc --check`` found the file stale); 2
bad arguments, or the command could not do its work (one line says why).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from schemas.argtypes import non_empty_path, non_empty_text, non_negative_float, positive_int
from schemas.cli import run_card, run_check, run_compact, run_doc, run_scrub
from schemas.helptext import plain
from schemas.storage import STALE_TEMPORARY_AGE_S


@dataclass(frozen=True)
class Command:
    name: str
    dataset: str | None
    out: Path
    check_only: bool
    min_files: int
    fix: bool
    temporary_age_s: float
    title: str | None = None
    license: str | None = None
    force: bool = False


def parse(argv: list[str] | None = None) -> Command:
    parser = argparse.ArgumentParser(prog="python -m schemas", description=plain(__doc__))
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="validate a dataset; exit 1 on problems")
    check.add_argument("dataset", type=non_empty_text, help="dataset root (local path or fsspec URL)")
    check.add_argument(
        "--fix",
        action="store_true",
        help="remove stale write temporaries of killed writers and drop identical repeated "
        "runs/measurements rows of a retried flush (differing repeats are refused)",
    )
    compact = sub.add_parser(
        "compact", help="merge small files per partition, atomically; remove stale temporaries"
    )
    compact.add_argument("dataset", type=non_empty_text, help="dataset root (local path or fsspec URL)")
    compact.add_argument(
        "--min-files",
        type=positive_int,
        default=2,
        help="merge partitions with at least this many files (default: 2; 1 also rewrites lone "
        "files, e.g. to give files written before page checksums their checksums)",
    )
    for command in (check, compact):
        command.add_argument(
            "--tmp-age",
            type=non_negative_float,
            default=STALE_TEMPORARY_AGE_S,
            help=f"seconds after which a hidden .tmp-* file counts as a killed writer's leftover (default: {STALE_TEMPORARY_AGE_S:g})",
        )
    doc = sub.add_parser("doc", help="write the schema reference generated from the code")
    doc.add_argument("--out", type=non_empty_path, default=Path("docs/SCHEMA.md"), help="file to write (default: docs/SCHEMA.md)")
    doc.add_argument(
        "--check", action="store_true", help="exit 1 if the file is stale instead of writing it"
    )
    scrub = sub.add_parser(
        "scrub", help="rewrite machine paths and host names out of a dataset, atomically"
    )
    scrub.add_argument("dataset", type=non_empty_text, help="dataset root (local path or fsspec URL)")
    card = sub.add_parser(
        "card", help="write the dataset card DIR/README.md and its JSON twin DIR/card.json"
    )
    card.add_argument("dataset", type=non_empty_text, help="dataset root (local path or fsspec URL)")
    card.add_argument(
        "--title", type=non_empty_text, default=None, help="title of the card, kept on later refreshes (default: the card's, or 'kernel-corpus dataset')"
    )
    card.add_argument(
        "--license",
        type=non_empty_text,
        default=None,
        help="licence of the dataset, e.g. an SPDX id, kept on later refreshes (default: the card's, or 'other': not stated)",
    )
    card.add_argument(
        "--force",
        action="store_true",
        help="replace a README.md or card.json that kernel-corpus did not write, or a "
        "malformed card.json (its title, licence and commands are lost)",
    )
    args = parser.parse_args(argv)
    return Command(
        name=args.command,
        dataset=getattr(args, "dataset", None),
        out=getattr(args, "out", Path("docs/SCHEMA.md")),
        check_only=getattr(args, "check", False),
        min_files=getattr(args, "min_files", 2),
        fix=getattr(args, "fix", False),
        temporary_age_s=getattr(args, "tmp_age", STALE_TEMPORARY_AGE_S),
        title=getattr(args, "title", None),
        license=getattr(args, "license", None),
        force=getattr(args, "force", False),
    )


def main(argv: list[str] | None = None) -> int:
    command = parse(argv)
    if command.name == "check":
        return run_check(command.dataset, fix=command.fix, temporary_age_s=command.temporary_age_s)
    if command.name == "compact":
        return run_compact(
            command.dataset, command.min_files, temporary_age_s=command.temporary_age_s
        )
    if command.name == "scrub":
        return run_scrub(command.dataset)
    if command.name == "card":
        return run_card(
            command.dataset, title=command.title, license=command.license, force=command.force
        )
    return run_doc(command.out, command.check_only)


if __name__ == "__main__":
    sys.exit(main())
