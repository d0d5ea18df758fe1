"""Session-wide test set-up: a private Triton cache, so results never depend on what other
checkouts (other paths, other source locations) left in ~/.triton/cache; removed when the
session ends (when this file made it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

_OWN_TRITON_CACHE: str | None = None
if "TRITON_CACHE_DIR" not in os.environ:
    _OWN_TRITON_CACHE = tempfile.mkdtemp(prefix="kernel-corpus-test-cache-")
    os.environ["TRITON_CACHE_DIR"] = _OWN_TRITON_CACHE


def pytest_sessionfinish(session, exitstatus) -> None:
    if _OWN_TRITON_CACHE is not None:
        shutil.rmtree(_OWN_TRITON_CACHE, ignore_errors=True)


def harvest_tiny(out: Path, families: Sequence[str], max_configs: int) -> str:
    """A tiny interpreter harvest of ``families`` into ``out``, run as a subprocess from a
    scratch directory (the harvest's own process model, and no import of corpus needed by the
    caller); returns ``out``. Session fixtures of the train and notebook tests share it."""
    command = [
        sys.executable, "-m", "corpus.harvest", "--scale", "tiny", "--max-configs", str(max_configs),
        "--dtypes", "float32", "--families", ",".join(families), "--out", str(out),
    ]  # fmt: skip
    done = subprocess.run(command, cwd=out.parent, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"tiny harvest failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return str(out)
