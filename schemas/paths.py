"""Paths of the writing machine in dataset text: find them and rewrite them relative.

A published dataset must not carry the absolute paths of the machine that wrote it (a user's
home directory, a cluster's scratch layout). Two places hold them:

- source locations in IR text, ``loc("/home/me/proj/pkg/k.py":12:5)``: the path is rewritten
  relative to the package root, ``pkg/k.py``, the same form as ``kernels.source_path``
  (locations are excluded from ``ir_id``, so ids do not change);
- free text such as error messages, where any absolute path is rewritten the same way.

The rewriting itself takes a function ``path -> relative path``: extraction passes one that
looks at the file system (:func:`extract.locations.package_relative`); ``scrub``, which may run
on another machine, uses :func:`relative_path`, which works from the text alone.

The patterns are RE2-compatible so ``check`` can scan whole columns with
``pyarrow.compute.match_substring_regex``.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable

LOCATION_PATH_RE2 = r'"(?:/|[A-Za-z]:[\\/]|~/)[^"]*":\d+:\d+'
"""An absolute file path in an MLIR file location: ``"/abs/path.py":LINE:COL``."""

FREE_PATH_RE2 = r"(?:^|[^\w.~:/)\]\-])(?:/|~/)[^\s/\"':,()\[\]]+/[^\s\"':,()\[\]]+"
"""An absolute path of at least two components in free text (``/home/me/x``), not a URL's
``//host/...`` and not a ratio such as ``a/b``."""

_LOCATION = re.compile(r'"((?:/|[A-Za-z]:[\\/]|~/)(?:[^"\\]|\\.)*)"(?=:\d+:\d+)')
_FREE = re.compile(r"(^|[^\w.~:/)\]\-])((?:/|~/)[^\s/\"':,()\[\]]+/[^\s\"':,()\[\]]+)")
_PACKAGE_DIRS = ("/site-packages/", "/dist-packages/")

Rewrite = Callable[[str], str]


def is_absolute(path: str) -> bool:
    """True for POSIX, home-relative and Windows drive paths."""
    return path.startswith(("/", "~/")) or bool(re.match(r"[A-Za-z]:[\\/]", path))


def relativize_locations(ir_text: str, rewrite: Rewrite) -> str:
    """``ir_text`` with the absolute path of every file location replaced by
    ``rewrite(path)``; relative paths, names and everything else are left as they are."""
    if (
        '"/' not in ir_text
        and ":\\" not in ir_text
        and ":/" not in ir_text
        and '"~/' not in ir_text
    ):
        return ir_text  # the common case after extraction: nothing to do, no regex pass
    return _LOCATION.sub(lambda m: '"' + _escape(rewrite(_unescape(m.group(1)))) + '"', ir_text)


def relativize_free_text(text: str, rewrite: Rewrite) -> str:
    """``text`` (an error message, a note) with every absolute path replaced by
    ``rewrite(path)``."""
    if "/" not in text:
        return text
    return _FREE.sub(lambda m: m.group(1) + rewrite(m.group(2)), text)


def location_paths(ir_text: str) -> set[str]:
    """The absolute paths of the file locations in ``ir_text``."""
    return {_unescape(path) for path in _LOCATION.findall(ir_text)}


def relative_path(path: str, known: Iterable[str] = ()) -> str:
    """``path`` relative to its package root, worked out from the text alone.

    ``known``: relative paths the dataset already uses (``kernels.source_path``); a path
    ending in one of them becomes that path. Otherwise the part after the last
    ``site-packages``/``dist-packages`` directory (``triton/language/standard.py``), else the
    file name. Relative paths are returned unchanged.
    """
    if not is_absolute(path):
        return path
    posix = path.replace("\\", "/")
    for candidate in sorted(known, key=len, reverse=True):
        if candidate and posix.endswith("/" + candidate.lstrip("/")):
            return candidate.lstrip("/")
    for marker in _PACKAGE_DIRS:
        index = posix.rfind(marker)
        if index >= 0 and posix[index + len(marker) :]:
            return posix[index + len(marker) :]
    return posixpath.basename(posix.rstrip("/")) or "."


def _unescape(path: str) -> str:
    return path.replace('\\"', '"').replace("\\\\", "\\")


def _escape(path: str) -> str:
    return path.replace("\\", "\\\\").replace('"', '\\"')
