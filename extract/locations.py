"""Source locations of extracted IR without the paths of this machine.

Every source of ``ir_graphs`` rows (the harvest, ``corpus.record``, ``corpus.ingest``) stores
IR text through :func:`publishable_ir_text`, so ``loc("/home/me/proj/pkg/k.py":12:5)``
becomes ``loc("pkg/k.py":12:5)``: the path relative to the root of the Python package that
holds the file, the same form as ``kernels.source_path``. ``ir_id`` hashes the text without
locations, so it is the same before and after.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from schemas.paths import relative_path, relativize_free_text, relativize_locations


@lru_cache(maxsize=4096)
def package_relative(path: str) -> str:
    """``path`` relative to the directory above its top-level package.

    ``/x/corpus/suite/kernels/softmax.py`` -> ``corpus/suite/kernels/softmax.py`` when
    ``corpus/``, ``suite/`` and ``kernels/`` are packages (hold ``__init__.py``);
    ``/venv/.../site-packages/triton/language/standard.py`` -> ``triton/language/standard.py``.
    A file outside any package, or one this machine does not have (IR from elsewhere), falls
    back to :func:`schemas.paths.relative_path` (text only: after ``site-packages``, else the
    file name). Relative paths are returned unchanged.
    """
    file = Path(path)
    if not file.is_absolute():
        return path
    root = file.parent
    try:
        while (root / "__init__.py").is_file():
            root = root.parent
    except OSError:  # unreadable directory: treat as outside any package
        root = file.parent
    if root == file.parent:
        return relative_path(path)
    return file.relative_to(root).as_posix()


def publishable_ir_text(ir_text: str) -> str:
    """``ir_text`` with every absolute location path made package-relative."""
    return relativize_locations(ir_text, package_relative)


def publishable_message(text: str | None) -> str | None:
    """An error message or note with absolute paths made package-relative (None stays None)."""
    return None if text is None else relativize_free_text(text, package_relative)
