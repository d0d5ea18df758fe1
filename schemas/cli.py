"""Library side of ``python -m schemas``: each command is one function returning an exit code."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from schemas.check import check_dataset
from schemas.compact import compact_dataset
from schemas.doc import render_schema_doc
from schemas.errors import DatasetError


def run_check(url: str, console: Console | None = None) -> int:
    """Print the check report of the dataset at ``url``; 0 when it has no problems."""
    console = console or Console()
    report = check_dataset(url)
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


def run_compact(url: str, min_files: int, console: Console | None = None) -> int:
    """Compact the dataset at ``url`` and print what was merged."""
    console = console or Console()
    try:
        results = compact_dataset(url, min_files=min_files)
    except DatasetError as exc:
        console.print(f"[red]error[/]: {exc}")
        return 1
    for result in results:
        where = f"{result.table}/{result.partition}" if result.partition else result.table
        console.print(f"{where}: {result.files_before} files -> 1 ({result.rows:,} rows)")
    if not results:
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
