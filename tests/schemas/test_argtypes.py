from __future__ import annotations

import argparse

import pytest

from schemas.argtypes import (
    integer,
    non_empty_csv,
    non_negative_float,
    non_negative_int,
    number,
    positive_float,
    positive_int,
)


def _parser(kind) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tool", exit_on_error=True)
    parser.add_argument("--value", type=kind)
    return parser


@pytest.mark.parametrize(
    ("kind", "text", "expected"),
    [
        (positive_int, "3", 3),
        (non_negative_int, "0", 0),
        (positive_float, "0.5", 0.5),
        (non_negative_float, "0", 0.0),
        (integer(minimum=2, maximum=4), "4", 4),
        (number(maximum=1.0), "-7.5", -7.5),
        (non_empty_csv, " a, b ,,c ", ("a", "b", "c")),
    ],
)
def test_accepts_values_in_range(kind, text, expected) -> None:
    assert _parser(kind).parse_args([f"--value={text}"]).value == expected


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        (positive_int, "0"),
        (positive_int, "-4"),
        (positive_int, "1.5"),
        (non_negative_int, "-1"),
        (positive_float, "0"),
        (positive_float, "nan"),
        (positive_float, "inf"),
        (non_negative_float, "-5"),
        (non_negative_float, "-inf"),
        (integer(minimum=2, maximum=4), "5"),
        (number(maximum=1.0), "1.01"),
        (non_empty_csv, ""),
        (non_empty_csv, " , "),
    ],
)
def test_refuses_at_parse_time_with_exit_2_and_one_line(kind, text, capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        _parser(kind).parse_args([f"--value={text}"])
    assert exited.value.code == 2
    message = capsys.readouterr().err.strip().splitlines()[-1]
    assert message.startswith("tool: error: argument --value: expected")
    assert repr(text) in message
