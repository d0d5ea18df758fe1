"""Candidates read from a CSV (``python -m train.predict --candidates``): a value that does not
fit its column is refused naming the column, never rounded, truncated or dropped to null."""

from __future__ import annotations

import polars as pl
import pytest

from train.candidates import CandidateError, read_candidates_csv, typed_candidates


def _read(tmp_path, text: str) -> pl.DataFrame:
    path = tmp_path / "candidates.csv"
    path.write_text(text)
    return read_candidates_csv(path)


def test_whole_values_are_read_as_they_are(tmp_path):
    frame = _read(
        tmp_path,
        "run_id,num_warps,grid,config_params,median_ms,is_default\n"
        '007,4,"[64, 1, 1]","[{""name"": ""BLOCK"", ""value"": 256}]",1.5,1\n'
        '007,8.0,"[32, 1, 1]","[{""name"": ""BLOCK"", ""value"": 512.0}]",,0\n'
        ",,,,,\n",
    )
    assert frame["run_id"].to_list() == ["007", "007", None]
    assert frame["num_warps"].to_list() == [4, 8, None]
    assert frame["grid"].to_list() == [[64, 1, 1], [32, 1, 1], None]
    assert frame["config_params"].to_list() == [[{"name": "BLOCK", "value": 256}], [{"name": "BLOCK", "value": 512}], None]
    assert frame["is_default"].to_list() == [True, False, None]


@pytest.mark.parametrize(
    ("column", "cell", "shown"),
    [
        ("num_warps", "4.5", "4.5"),  # was read as 4
        ("is_default", "2", "2"),  # was read as True
        ("grid", '"[1.7, 2]"', "[1.7, 2]"),  # was [1, 2]
        ("grid", '"[1e30]"', "[1e30]"),  # was [null]
        ("grid", '"[99999999999999999999999]"', "[99999999999999999999999]"),  # was [null]
        ("grid", "5", "5"),  # a number is no list: was [5]
        ("config_params", '"[{""nm"": ""BLOCK"", ""value"": 256}]"', '"nm"'),  # name was null
        ("config_params", '"[{""name"": ""BLOCK""}]"', "BLOCK"),  # value was null
        ("config_params", '"[{""name"": ""BLOCK"", ""value"": 2.5}]"', "2.5"),  # was 2
        ("sass_mix", '"[{""cls"": ""alu"", ""count"": 99999999999}]"', "99999999999"),  # was null
    ],
)
def test_a_value_that_does_not_fit_its_column_is_refused_naming_it(tmp_path, column, cell, shown):
    with pytest.raises(CandidateError, match=f"candidates column {column}:") as caught:
        _read(tmp_path, f"ir_dir,{column}\nconfig_00,{cell}\n")
    assert shown in str(caught.value)


def test_a_frame_whose_floats_would_be_truncated_is_refused():
    with pytest.raises(CandidateError, match="num_warps"):
        typed_candidates(pl.DataFrame({"num_warps": [4.0, 4.5]}))
    with pytest.raises(CandidateError, match="grid"):
        typed_candidates(pl.DataFrame({"grid": [[64.0, 1.0], [1.5]]}))
    assert typed_candidates(pl.DataFrame({"num_warps": [4.0, None]}))["num_warps"].to_list() == [4, None]


def test_a_column_named_twice_is_refused(tmp_path):
    """polars renamed the second num_warps column and the first one was used without a word."""
    with pytest.raises(CandidateError, match="num_warps"):
        _read(tmp_path, "num_warps,num_warps\n4,8\n")
