"""Session-wide test set-up: a private Triton cache, so results never depend on what other
checkouts (other paths, other source locations) left in ~/.triton/cache."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="kernel-corpus-test-cache-"))


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
