"""The harvest's scratch directory: the TMPDIR of its worker processes.

Workers write scratch files (MLIR parse files, ptxas output) and are killed on timeouts and at
the end, so they cannot clean up after themselves. They get a directory the harvest owns and
removes when it ends; one whose owner was killed too (SIGKILL of the whole harvest) is removed
by the next harvest on the machine.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator

from schemas.machine import process_alive

PREFIX = "kernel-corpus-scratch-"
_OWNED = re.compile(re.escape(PREFIX) + r"(\d+)-")


def remove_orphans(parent: str | None = None) -> list[str]:
    """Delete scratch directories under ``parent`` (the temp dir) whose owner process is gone."""
    parent = parent or tempfile.gettempdir()
    removed = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(parent):
            match = _OWNED.match(entry.name)
            if match and entry.is_dir(follow_symlinks=False) and not process_alive(int(match.group(1))):
                shutil.rmtree(entry.path, ignore_errors=True)
                removed.append(entry.path)
    return removed


@contextlib.contextmanager
def scratch_directory() -> Iterator[str]:
    """A fresh scratch directory named after this process, removed on exit (orphans of killed
    harvests are removed first)."""
    remove_orphans()
    with tempfile.TemporaryDirectory(
        prefix=f"{PREFIX}{os.getpid()}-", ignore_cleanup_errors=True
    ) as path:
        yield path
