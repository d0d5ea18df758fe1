"""What resume, claims and imports take to be committed already (:mod:`corpus.harvest.resume`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas import CorruptFileError, DatasetWriter

from ...schemas.conftest import write_run


def _partial_copy(path: Path) -> None:
    """What an interrupted copy leaves: the file's first half, so no Parquet footer (pyarrow:
    'Parquet magic bytes not found in footer')."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_an_unreadable_runs_file_is_refused_not_taken_for_a_new_dataset(tmp_path: Path) -> None:
    """A partly copied ``runs`` file made resume read no committed run: the rerun of a finished
    harvest measured every run again, and an import wrote every tuning again under the
    harvest_id it had (pyarrow's message says 'not found', which was taken for a missing table)."""
    from corpus.harvest.claims import committed_harvests
    from corpus.harvest.resume import read_existing

    out = str(tmp_path / "ds")
    writer = DatasetWriter(out)
    for index in range(2):
        write_run(writer, index)
    assert len(committed_harvests(out)) == 2
    victim = sorted(Path(out, "runs").rglob("*.parquet"))[0]
    _partial_copy(victim)
    with pytest.raises(CorruptFileError, match=victim.name):
        committed_harvests(out)
    with pytest.raises(CorruptFileError, match=victim.name):
        read_existing(out, "runs", ["run_id"])


def test_a_missing_table_is_a_new_dataset(tmp_path: Path) -> None:
    from corpus.harvest.claims import committed_harvests
    from corpus.harvest.resume import read_existing

    assert read_existing(str(tmp_path / "nothing"), "runs", ["run_id"]) is None
    assert committed_harvests(str(tmp_path / "nothing")) == set()
