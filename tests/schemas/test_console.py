"""The error line every command prints (schemas.console.print_error): its message printed as
text, whatever brackets it holds, on one line."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from schemas.__main__ import main
from schemas.console import fill_markup, plain_text, print_error, print_labelled


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


# Values from outside the code: tags rich would apply ("[x]", "[bold]"), a closing tag it stops
# on ("[/x]"), a bracket that is no tag, backslashes before brackets and at the end (rich drops
# one before any "[" and halves those before a tag).
ODD_VALUES = ("runs[x]/out", "a[/x]", "[bold]b", "[1, 2]", "a\\[1]", "\\[y]", "dir\\", "x[", "plain")


def _plain(markup: str) -> str:
    """What rich prints of ``markup``, without styles."""
    console = Console(file=io.StringIO(), width=400, color_system=None)
    console.print(markup, soft_wrap=True)
    return console.file.getvalue().rstrip("\n")


@pytest.mark.parametrize("value", ODD_VALUES)
@pytest.mark.parametrize("template", ["{v}", "[bold]{v}[/]: done", "--out {v}[red] x[/]", "{v}{v}", "{v}bold] y"])
def test_fill_markup_prints_values_as_they_are_and_the_templates_markup_as_markup(template, value):
    expected = template.replace("[bold]", "").replace("[red]", "").replace("[/]", "").replace("{v}", value)
    assert _plain(fill_markup(template, v=value)) == expected


def test_fill_markup_styles_the_template_and_formats_fields_as_an_f_string_would():
    console = Console(file=io.StringIO(), width=200, force_terminal=True, color_system="standard")
    line = fill_markup("[bold]{what}[/] {n:,} in {s:.1f} s", what="a[x]", n=12345, s=2.25)
    console.print(line, highlight=False)
    assert console.file.getvalue() == "\x1b[1ma[x]\x1b[0m 12,345 in 2.2 s\n"
    # without brackets the line is the f-string's, byte for byte
    assert fill_markup("[bold]wrote[/] {out} ({n})", out="/tmp/d", n=3) == "[bold]wrote[/] /tmp/d (3)"


def test_plain_text_cells_keep_brackets_in_a_table():
    from rich.table import Table

    table = Table()
    table.add_column(plain_text("model [x]"))
    table.add_row(plain_text("gnn[/b]"))
    console = Console(file=io.StringIO(), width=80)
    console.print(table)
    assert "model [x]" in console.file.getvalue() and "gnn[/b]" in console.file.getvalue()


def test_doc_check_names_a_bracketed_out_as_it_is(tmp_path: Path) -> None:
    from schemas.cli import run_doc

    out = tmp_path / "docs[x][/b]" / "SCHEMA.md"
    console = Console(file=io.StringIO(), width=400)
    assert run_doc(out, check_only=True, console=console) == 1
    assert f"{out} is stale: run" in console.file.getvalue()
    assert run_doc(out, check_only=False, console=console) == 0
    assert run_doc(out, check_only=True, console=console) == 0
    assert console.file.getvalue().splitlines()[-2:] == [f"wrote {out}", f"{out} is current"]


def test_a_wrapped_labelled_line_ends_in_no_blank() -> None:
    """rich broke 'note: this harvest measures 6,500 configs: ...' (the harvest's long-run
    notice) at spaces it kept: every wrapped line but the last ended in a blank."""
    out = io.StringIO()
    message = "this harvest measures 6,500 configs: about 19 min 46 s here (estimated). For a first look"
    print_labelled(Console(file=out, width=40), "note", "yellow", message, soft_wrap=False)
    lines = out.getvalue().splitlines()
    assert len(lines) > 1 and all(len(line) <= 40 and line == line.rstrip() for line in lines), lines
    assert " ".join(lines) == f"note: {message}"
