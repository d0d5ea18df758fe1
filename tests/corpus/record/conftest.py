"""Record fixtures: the recorder's scenarios, run once per session in their own process
(see :mod:`tests.corpus.record.drive` for why not in-process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
WORKLOAD = Path(__file__).resolve().parent / "workload.py"


@pytest.fixture(scope="session")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """(directory holding one dataset per scenario, the driver's report)."""
    root = tmp_path_factory.mktemp("recorded")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    completed = subprocess.run(
        [sys.executable, "-W", "ignore", "-m", "tests.corpus.record.drive", str(root)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-4000:]
    return root, json.loads((root / "report.json").read_text())
