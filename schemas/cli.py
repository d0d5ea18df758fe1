"""Library side of ``python -m schemas``: each command is one function returning an exit code."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from schemas.card import CARD_JSON, CARD_MARKDOWN, write_card
from schemas.check import check_dataset
from schemas.compact import compact
from schemas.doc import render_schema_doc
from schemas.errors import DatasetError
from schemas.scrub import scrub_dataset
from schemas.storage import STALE_TEMPORARY_AGE_S


def run_check(
    url: str,
    console: Console | None = None,
    *,
    fix: bool = False,
    temporary_age_s: float = STALE_TEMPORARY_AGE_S,
) -> int:
    """Print the check report of the dataset at ``url``; 0 when it has no problems.

    ``fix``: first remove write temporaries older than ``temporary_age_s`` seconds and repair
    repeated keys (:func:`schemas.repair.repair_repeats`); what was changed is printed."""
    console = console or Console()
    report = check_dataset(url, fix=fix, temporary_age_s=temporary_age_s)
    for line in report.fixed:
        console.print(f"[cyan]fixed[/]: {line}", soft_wrap=True)
    table = Table(title=f"dataset {url}")
    table.add_column("table")
    table.add_column("files", justify="right")
    table.add_column("rows", justify="right")
    for name, rows in report.rows.items():
        table.add_row(name, str(report.files.get(name, "?")), f"{rows:,}")
    console.print(table)
    for key, value in report.facts.items():
        console.print(f"[bold]{key}[/]: {value}", soft_wrap=True)
    for warning in report.warnings:
        console.print(f"[yellow]warning[/]: {warning}", soft_wrap=True)
    for problem in report.problems:
        console.print(f"[red]problem[/]: {problem}", soft_wrap=True)
    console.print("[green]OK[/]" if report.ok else f"[red]{len(report.problems)} problem(s)[/]")
    return 0 if report.ok else 1


def run_compact(
    url: str,
    min_files: int,
    console: Console | None = None,
    *,
    temporary_age_s: float = STALE_TEMPORARY_AGE_S,
) -> int:
    """Compact the dataset at ``url`` and print what was merged; 1 (nothing changed) when the
    dataset is missing or has an invalid file."""
    console = console or Console()
    try:
        report = compact(url, min_files=min_files, temporary_age_s=temporary_age_s)
    except DatasetError as exc:
        console.print(f"[red]error[/]: {exc}", soft_wrap=True)
        return 1
    for note in report.notes:
        console.print(f"[yellow]note[/]: {note}", soft_wrap=True)
    for result in report.merged:
        where = f"{result.table}/{result.partition}" if result.partition else result.table
        console.print(f"{where}: {result.files_before} files -> 1 ({result.rows:,} rows)")
    if report.removed_temporaries:
        console.print(f"removed {report.removed_temporaries} stale write temporaries")
    if not report.merged:
        console.print("nothing to compact")
    return 0


def run_doc(out: Path, check_only: bool, console: Console | None = None) -> int:
    """Write the schema reference to ``out``, or with ``check_only`` report whether it is stale."""
    console = console or Console()
    text = render_schema_doc()
    if check_only:
        current = out.read_text() if out.exists() else ""
        if current != text:
            console.print(f"[red]{out} is stale[/]: run `python -m schemas doc`")
            return 1
        console.print(f"{out} is current")
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    console.print(f"wrote {out}")
    return 0


def run_scrub(url: str, console: Console | None = None) -> int:
    """Scrub the dataset at ``url`` (:func:`schemas.scrub.scrub_dataset`) and print what
    changed; 1 when it cannot be read."""
    console = console or Console()
    try:
        results = scrub_dataset(url)
    except DatasetError as exc:
        console.print(f"[red]error[/]: {exc}", soft_wrap=True)
        return 1
    for result in results:
        values = ", ".join(f"{column} {count:,}" for column, count in result.values_changed.items())
        console.print(
            f"{result.table}: {result.files_rewritten} file(s) rewritten, {result.files_renamed} renamed"
            + (f"; values changed: {values}" if values else "")
        )
    if not any(r.files_rewritten or r.files_renamed for r in results):
        console.print("nothing to scrub")
    return 0


def run_card(
    url: str,
    console: Console | None = None,
    *,
    title: str | None = None,
    license: str | None = None,
) -> int:
    """Write the dataset card of ``url`` (:func:`schemas.card.write_card`); 1 when the
    dataset cannot be read."""
    console = console or Console()
    try:
        write_card(url, title=title, license=license)
    except DatasetError as exc:
        console.print(f"[red]error[/]: {exc}", soft_wrap=True)
        return 1
    console.print(f"wrote {url.rstrip('/')}/{CARD_MARKDOWN} and {CARD_JSON}")
    return 0
