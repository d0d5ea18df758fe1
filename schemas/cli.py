"""Library side of ``python -m schemas``: each command is one function returning an exit code.

Exit codes: 0 done; 1 ``check`` found problems; 2 the command could not do its work (not a
dataset, an invalid file it refuses to touch, read-only or full storage, a malformed card),
said in one line naming the file or directory at fault, never a traceback.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec

from rich.console import Console
from rich.table import Table

from schemas.card import CARD_JSON, CARD_MARKDOWN, write_card
from schemas.check import check_dataset
from schemas.compact import compact, require_dataset
from schemas.console import fill_markup, print_error, print_labelled
from schemas.doc import render_schema_doc
from schemas.errors import DatasetError
from schemas.scrub import scrub_dataset
from schemas.storage import STALE_TEMPORARY_AGE_S, resolve

P = ParamSpec("P")

EXIT_ERROR = 2


def error_line(exc: BaseException) -> str:
    """One line for a failed command: the message of a DatasetError, or for an OSError the
    file and the reason the system gave."""
    if isinstance(exc, OSError) and not isinstance(exc, DatasetError):
        where = f"{exc.filename}: " if exc.filename else ""
        text = f"{where}{exc.strerror or exc}"
    else:
        text = str(exc)
    return " ".join(text.split())


def one_line_errors(command: Callable[P, int]) -> Callable[P, int]:
    """``command`` returning :data:`EXIT_ERROR` with one printed line instead of raising a
    DatasetError or OSError (its ``console`` keyword, else a new one, prints it)."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> int:
        try:
            return command(*args, **kwargs)
        except (DatasetError, OSError) as exc:
            print_error(kwargs.get("console") or Console(), error_line(exc))  # type: ignore[arg-type]
            return EXIT_ERROR

    return run


@one_line_errors
def run_check(
    url: str,
    console: Console | None = None,
    *,
    fix: bool = False,
    temporary_age_s: float = STALE_TEMPORARY_AGE_S,
) -> int:
    """Print the check report of the dataset at ``url``; 0 when it has no problems, 1 when it
    has some, 2 (one line) when ``url`` holds no dataset at all.

    ``fix``: first remove write temporaries older than ``temporary_age_s`` seconds and repair
    repeated keys (:func:`schemas.repair.repair_repeats`); what was changed is printed."""
    console = console or Console()
    require_dataset(resolve(url))  # not a dataset: one line and 2, as compact says it
    report = check_dataset(
        url, fix=fix, temporary_age_s=temporary_age_s, on_wait=_waiting(console, "check --fix")
    )
    for line in report.fixed:
        print_labelled(console, "fixed", "cyan", line)
    table = Table(title=fill_markup("dataset {url}", url=url))  # a path: "runs[x]" is text
    table.add_column("table")
    table.add_column("files", justify="right")
    table.add_column("rows", justify="right")
    for name, rows in report.rows.items():
        table.add_row(name, str(report.files.get(name, "?")), f"{rows:,}")
    console.print(table)
    for key, value in report.facts.items():
        console.print(fill_markup("[bold]{key}[/]: {value}", key=key, value=value), soft_wrap=True)
    for warning in report.warnings:
        print_labelled(console, "warning", "yellow", warning)
    for problem in report.problems:
        print_labelled(console, "problem", "red", problem)
    console.print("[green]OK[/]" if report.ok else f"[red]{len(report.problems)} problem(s)[/]")
    return 0 if report.ok else 1


def _waiting(console: Console, command: str) -> Callable[[str], None]:
    return lambda holder: console.print(
        f"{command}: waiting for the dataset's maintenance lock, held by {holder or 'another process'}",
        soft_wrap=True,
        highlight=False,
        markup=False,  # the holder names a host and a command line: text
    )


@one_line_errors
def run_compact(
    url: str,
    min_files: int,
    console: Console | None = None,
    *,
    temporary_age_s: float = STALE_TEMPORARY_AGE_S,
) -> int:
    """Compact the dataset at ``url`` and print what was merged; 2 (nothing changed) when the
    dataset is missing, has an invalid file or cannot be written."""
    console = console or Console()
    report = compact(
        url,
        min_files=min_files,
        temporary_age_s=temporary_age_s,
        on_wait=_waiting(console, "compact"),
    )
    for note in report.notes:
        print_labelled(console, "note", "yellow", note)
    for result in report.merged:
        where = f"{result.table}/{result.partition}" if result.partition else result.table
        console.print(f"{where}: {result.files_before} files -> 1 ({result.rows:,} rows)", markup=False)
    if report.removed_temporaries:
        console.print(f"removed {report.removed_temporaries} stale write temporaries")
    if not report.merged:
        console.print("nothing to compact")
    return 0


@one_line_errors
def run_doc(out: Path, check_only: bool, console: Console | None = None) -> int:
    """Write the schema reference to ``out``, or with ``check_only`` report whether it is stale."""
    console = console or Console()
    text = render_schema_doc()
    if check_only:
        current = out.read_text() if out.exists() else ""
        if current != text:
            console.print(fill_markup("[red]{out} is stale[/]: run `python -m schemas doc`", out=out))
            return 1
        console.print(f"{out} is current", markup=False)  # paths: text
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    console.print(f"wrote {out}", markup=False)
    return 0


@one_line_errors
def run_scrub(url: str, console: Console | None = None) -> int:
    """Scrub the dataset at ``url`` (:func:`schemas.scrub.scrub_dataset`) and print what
    changed; 2 when it cannot be read or written."""
    console = console or Console()
    results = scrub_dataset(url, on_wait=_waiting(console, "scrub"))
    for result in results:
        values = ", ".join(f"{column} {count:,}" for column, count in result.values_changed.items())
        console.print(
            f"{result.table}: {result.files_rewritten} file(s) rewritten, {result.files_renamed} renamed"
            + (f"; values changed: {values}" if values else "")
        )
    if not any(r.files_rewritten or r.files_renamed for r in results):
        console.print("nothing to scrub")
    return 0


@one_line_errors
def run_card(
    url: str,
    console: Console | None = None,
    *,
    title: str | None = None,
    license: str | None = None,
    force: bool = False,
) -> int:
    """Write the dataset card of ``url`` (:func:`schemas.card.write_card`); 2 when the dataset
    cannot be read, the card files are malformed or not kernel-corpus's (unless ``force``),
    or they cannot be written."""
    console = console or Console()
    write_card(url, title=title, license=license, force=force)
    console.print(f"wrote {url.rstrip('/')}/{CARD_MARKDOWN} and {CARD_JSON}", markup=False)
    return 0
