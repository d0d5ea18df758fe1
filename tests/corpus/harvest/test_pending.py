"""The record of harvests whose last step is not done (``.locks/harvest-<plan>.pending``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from corpus.harvest.pending import PendingFinish
from schemas.errors import DatasetError
from tests.fifo import raised_beside_fifo


def test_writer_ids_are_recorded_and_removed(tmp_path: Path) -> None:
    pending = PendingFinish(str(tmp_path), "harvest-plan")
    assert pending.writers() == []
    pending.add("w1")
    pending.add("w2")
    assert pending.writers() == ["w1", "w2"]
    pending.remove(["w1", "w2"])
    assert pending.writers() == [] and not os.path.exists(pending.path)


def test_a_linked_record_is_refused_not_read(tmp_path: Path) -> None:
    """A record that links elsewhere (it travels with a copied dataset) would name another
    file's writer ids, whose files the next harvest would compact as its predecessors'."""
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps(["someone-else"]))
    dataset = tmp_path / "ds"
    (dataset / ".locks").mkdir(parents=True)
    pending = PendingFinish(str(dataset), "harvest-plan")
    Path(pending.path).symlink_to(elsewhere)
    with pytest.raises(DatasetError, match="a symbolic link"):
        pending.writers()


def test_a_fifo_in_place_of_the_record_is_refused_without_hanging(tmp_path: Path) -> None:
    (tmp_path / ".locks").mkdir()
    pending = PendingFinish(str(tmp_path), "harvest-plan")
    os.mkfifo(pending.path)
    raised = raised_beside_fifo(pending.writers, Path(pending.path))
    assert isinstance(raised, DatasetError) and "not a regular file" in str(raised)
