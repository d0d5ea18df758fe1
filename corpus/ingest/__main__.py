"""``python -m corpus.ingest helion LOG.csv [--meta LOG.meta.jsonl] --out DATASET [--strict]``
and ``python -m corpus.ingest tritonparse TRACE.ndjson --out DATASET [--strict]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from corpus.destination import OutRefused, add_force_out
from corpus.ingest.app import IngestConfig, ingest
from corpus.ingest.problems import IngestError
from schemas.argtypes import non_empty_text
from schemas.console import print_error
from schemas.errors import DatasetError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m corpus.ingest",
        description="Import Helion autotune logs or tritonparse traces into a dataset.",
    )
    sub = parser.add_subparsers(dest="format", required=True)
    helion = sub.add_parser("helion", help="Helion's autotune CSV and its .meta.jsonl sidecar")
    helion.add_argument("log", type=Path, help="LOG.csv")
    helion.add_argument("--meta", type=Path, help="LOG.meta.jsonl (default: beside the CSV)")
    trace = sub.add_parser("tritonparse", help="a tritonparse NDJSON trace")
    trace.add_argument("log", type=Path, help="TRACE.ndjson")
    for command in (helion, trace):
        command.add_argument(
            "--out",
            required=True,
            type=non_empty_text,
            help="dataset directory or URL: a new or empty directory, or a dataset (see --force-out)",
        )
        add_force_out(command)
        command.add_argument(
            "--strict",
            action="store_true",
            help="stop at the first unknown or malformed record (default: skip it and count it)",
        )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    config = IngestConfig(
        format=args.format,
        log=args.log,
        out=args.out,
        meta=getattr(args, "meta", None),
        strict=args.strict,
        force_out=args.force_out,
    )
    try:
        summary = ingest(config)
    except (IngestError, OutRefused, OSError, DatasetError) as exc:
        print_error(Console(stderr=True), str(exc))
        return 2
    for line in summary.lines(config.out):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
