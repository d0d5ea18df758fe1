"""The error line every command prints (schemas.console.print_error): its message printed as
text, whatever brackets it holds, on one line."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from schemas.__main__ import main
from schemas.console import print_error


def test_the_message_is_text_not_markup() -> None:
    out = io.StringIO()
    message = "--out data[/x]: [bold]not[/bold] a [red]dataset " + "long " * 30
    print_error(Console(file=out, width=40), message)
    assert out.getvalue() == f"error: {message}\n"  # nothing dropped, not wrapped at 40 columns


def test_a_path_with_brackets_is_one_line_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The defect: the message went to rich as markup, so a dataset path such as ``runs[/x]``
    stopped the command with a MarkupError traceback (and ``[bold]`` in a path vanished)."""
    for name in ("runs[/x]", "a[bold]b"):  # runs[/x]: x] in a directory runs[ (neither exists)
        root = tmp_path / name
        assert main(["compact", str(root)]) == 2
        printed = capsys.readouterr().out
        assert printed.startswith("error: ") and str(root) in printed, printed
        assert len(printed.strip().splitlines()) == 1


def test_key_values_show_brackets_in_values_as_they_are():
    """A dataset path with brackets lost them: rich read "[ds]" as a style."""
    import io

    from rich.console import Console

    from schemas.console import key_values

    console = Console(file=io.StringIO(), width=200)
    console.print(key_values([("dataset", "/tmp/runs[ds]/copy"), ("[bold]key[/]", "x")]))
    printed = console.file.getvalue()
    assert "/tmp/runs[ds]/copy" in printed and "[bold]key[/]" in printed
