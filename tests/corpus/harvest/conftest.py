from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

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


def measured_keys(out: Path) -> set[tuple[str, str]]:
    table = read_table(str(out), "measurements", columns=["run_id", "config_id"])
    return set(zip(table.column("run_id").to_pylist(), table.column("config_id").to_pylist()))


@pytest.fixture(scope="session")
def reference_dataset(tmp_path_factory) -> Path:
    """One uninterrupted, unsharded tiny harvest the other tests compare against."""
    out = tmp_path_factory.mktemp("harvest") / "reference"
    run_harvest(out, *BASE_ARGS)
    return out
