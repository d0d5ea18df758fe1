from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from rich.console import Console

from schemas import read_table

if TYPE_CHECKING:
    from corpus.harvest.app import HarvestConfig

REPO = Path(__file__).resolve().parents[3]
FAMILIES = "add_broadcast,softmax"
BASE_ARGS = ("--families", FAMILIES, "--max-configs", "2", "--dtypes", "float32", "--workers", "2", "--flush-every", "0")


def harvest_command(out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "corpus.harvest", "--out", str(out), *extra]


def run_harvest(out: Path, *extra: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(harvest_command(out, *extra), capture_output=True, text=True, timeout=timeout, cwd=REPO, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def harvest_in_process(out: Path, *extra: str) -> str:
    """The harvest ``python -m corpus.harvest --out OUT *extra`` runs, called in this process
    (the same parsing and :func:`run_harvest`; workers are processes either way); returns what
    it printed. Cheaper than :func:`run_harvest` by an interpreter start and its imports: use it
    unless the test needs the harvest to be a process of its own (to kill it, say)."""
    from corpus.harvest.__main__ import parse
    from corpus.harvest.app import run_harvest as run
    from corpus.harvest.settings import read_settings

    console = Console(file=io.StringIO(), width=200)
    run(parse(["--out", str(out), *extra]), read_settings(), console)
    return console.file.getvalue()


def measured_keys(out: Path) -> set[tuple[str, str]]:
    table = read_table(str(out), "measurements", columns=["run_id", "config_id"])
    return set(zip(table.column("run_id").to_pylist(), table.column("config_id").to_pylist()))


@pytest.fixture(scope="session")
def reference_dataset(tmp_path_factory) -> Path:
    """One uninterrupted, unsharded tiny harvest the other tests compare against."""
    from tests.progress import announce

    out = tmp_path_factory.mktemp("harvest") / "reference"
    announce("harvesting the reference dataset the harvest tests compare with (under a minute)")
    run_harvest(out, *BASE_ARGS)
    return out


ONE_RUN_FAMILY = "add_broadcast"
"""The family of :func:`one_run_shard`'s plan (two runs with these arguments)."""
ONE_RUN_ARGS = ("--families", ONE_RUN_FAMILY, "--max-configs", "2", "--dtypes", "float32", "--device", "cpu")


@pytest.fixture(scope="session")
def one_run_shard() -> tuple[int, int]:
    """A shard of the plan of :data:`ONE_RUN_ARGS` holding exactly one run (keeps a harvest of
    it short; the Ray tests keep a run of the whole plan busy with it)."""
    from corpus.harvest.__main__ import parse
    from corpus.harvest.app import run_harvest as run
    from corpus.harvest.settings import read_settings

    for index in range(4):
        config = parse([*ONE_RUN_ARGS, "--shard", f"{index}/4", "--dry-run", "--allow-empty"])
        planned = run(config, read_settings(), Console(file=io.StringIO())).planned
        if len(planned) == 1:
            return (index, 4)
    pytest.skip("no shard of the tiny plan holds exactly one run")


def die_in_final_compaction(out: Path, monkeypatch: pytest.MonkeyPatch, harvest: Callable[[], object]) -> None:
    """Call ``harvest`` (into ``out``, two runs: two files per partition) with its final
    compaction dying after its first merged file landed, before it deleted the files that file
    replaces, as a killed process would; check it left its files unmerged, no card, and a
    pending record."""
    from schemas import replacement
    from schemas.card import CARD_MARKDOWN

    deletes = []

    def dying_delete(loc, path):
        deletes.append(path)
        raise KeyboardInterrupt  # the process dies here

    with monkeypatch.context() as patched:
        patched.setattr(replacement, "delete_replaced", dying_delete)
        with pytest.raises(KeyboardInterrupt):
            harvest()
    assert deletes and not (out / CARD_MARKDOWN).exists()
    assert list((out / ".locks").glob("harvest-*.pending"))


def assert_rerun_finished(out: Path, config: HarvestConfig) -> None:
    """Rerun ``config`` (the plan of :func:`die_in_final_compaction`'s harvest): with nothing
    left to measure it completes the last step, one file per partition, the card, no pending
    record, a clean check."""
    from corpus.harvest.app import run_harvest as run
    from corpus.harvest.settings import read_settings
    from schemas.card import CARD_MARKDOWN, read_card
    from schemas.check import check_dataset

    printed = io.StringIO()
    outcome = run(config, read_settings(), Console(file=printed, width=300))
    assert outcome.totals is None  # nothing left to measure
    assert "finishing 1 interrupted harvest(s)" in printed.getvalue()
    for table in ("runs", "measurements"):
        for partition in (out / table).iterdir():
            assert len(list(partition.glob("part-*.parquet"))) == 1, partition
    assert (out / CARD_MARKDOWN).exists() and read_card(str(out)).rows["runs"] == 2
    assert not list((out / ".locks").glob("harvest-*.pending"))
    report = check_dataset(str(out))
    assert report.ok and report.warnings == [], (report.problems, report.warnings)
