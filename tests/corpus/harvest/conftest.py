from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from schemas import read_table

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
