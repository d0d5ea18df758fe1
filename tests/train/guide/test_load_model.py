"""Loading a model to guide a tuner (:func:`train.guide.load_model`, what ``--rank-with`` and the
plug-in call): a checkpoint that cannot be read is named in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from train.checkpoint import META, WEIGHTS
from train.guide import load_model


@pytest.mark.parametrize("content", ["", '{"format_version": 1', "[1, 2]"])
def test_a_damaged_checkpoint_json_is_named(tmp_path: Path, content: str) -> None:
    """A truncated checkpoint.json made --rank-with say "Expecting value: line 1 column 1
    (char 0)", naming no file."""
    (tmp_path / META).write_text(content)
    (tmp_path / WEIGHTS).write_bytes(b"weights")
    with pytest.raises(ValueError, match=f"{tmp_path / META}: not (valid JSON|a checkpoint's JSON object)"):
        load_model(tmp_path)
