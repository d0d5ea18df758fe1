"""The test session cleans up after itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_session_triton_cache_is_removed_when_the_session_ends(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_CACHE_DIR"}
    env.update(TMPDIR=str(tmp_path), PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/schemas/test_argtypes.py", "--basetemp", str(tmp_path / "basetemp")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert not list(tmp_path.glob("kernel-corpus-test-cache-*"))
