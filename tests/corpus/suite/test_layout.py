"""``suite list`` and ``suite show`` laid out for an 80-column terminal and for a wide one:
no line longer than the terminal, none ending in blanks, no family or shape name cut."""

from __future__ import annotations

import pytest

from corpus.suite.__main__ import main
from corpus.suite.registry import BUILTIN_SUITE, load_suite
from corpus.suite.spec import SCALES, shape_name


def lines_of(capsys, monkeypatch, width: int, argv: list[str]) -> list[str]:
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= width, max(lines, key=len)
    assert not [line for line in lines if line != line.rstrip()], "trailing blanks"
    return lines


@pytest.mark.parametrize("width", [80, 160])
def test_list_fits_and_names_every_family_whole(capsys, monkeypatch, width):
    specs = load_suite(BUILTIN_SUITE)
    lines = lines_of(capsys, monkeypatch, width, ["list"])
    words = {word for line in lines for word in line.split()}
    assert set(specs) <= words
    assert f"{len(specs)} families in" in " ".join(lines)


@pytest.mark.parametrize("width", [80, 160])
def test_show_fits_and_names_every_shape_whole(capsys, monkeypatch, width):
    spec = load_suite(BUILTIN_SUITE)["attention_decode"]  # the longest shape names of the suite
    lines = lines_of(capsys, monkeypatch, width, ["show", "attention_decode"])
    words = {word for line in lines for word in line.split()}
    assert {shape_name(dims) for scale in SCALES for dims in spec.shapes_for(scale)} <= words
    assert spec.default_config().launch in " ".join(lines)
