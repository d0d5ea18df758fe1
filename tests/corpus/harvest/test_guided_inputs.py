"""``--rank-with`` and ``--budget`` checked before any work (:func:`corpus.harvest.app.load_guide_inputs`):
one line naming what is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpus.harvest.app import HarvestConfig, HarvestError, load_guide_inputs


def _refusal(tmp_path: Path, rank_with: str, budget: str = "2") -> str:
    with pytest.raises(HarvestError) as refused:
        load_guide_inputs(HarvestConfig(out=str(tmp_path / "out"), rank_with=rank_with, budget=budget))
    return str(refused.value)


def test_a_missing_or_wrong_model_directory_is_named_once(tmp_path: Path) -> None:
    """--rank-with nothere said "nothere: nothere: no checkpoint.json there", as if the
    directory existed; a python -m train output root named its path twice too."""
    missing = str(tmp_path / "nothere")
    assert _refusal(tmp_path, missing) == f"--rank-with {missing}: no such directory, so no checkpoint.json (expected a python -m train checkpoint)"
    root = tmp_path / "train-out"
    (root / "checkpoint").mkdir(parents=True)
    (root / "checkpoint" / "checkpoint.json").write_text("{}")
    message = _refusal(tmp_path, str(root))
    assert message.count(str(root)) == 2  # the option's value once, and the hint's checkpoint
    assert message.startswith(f"--rank-with {root}: no checkpoint.json there")
    assert message.endswith(f"the model python -m train ships is {root / 'checkpoint'}")


def test_a_budget_is_checked_before_the_model_is_read(tmp_path: Path) -> None:
    assert "--budget '5x'" in _refusal(tmp_path, str(tmp_path / "nothere"), budget="5x")
