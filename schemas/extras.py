"""The optional extras of kernel-corpus, and the one line a command prints when one is missing.

kernel-corpus without extras is the reader alone (this package: pyarrow, polars, fsspec, rich);
``extract``, ``corpus`` and ``train`` need the heavy stack (torch, Triton, PyTorch Geometric...)
from an extra. Each of those packages calls :func:`require_extra` once, in its ``__init__``,
so a missing dependency is reported in one place per package, before any of its modules
fails half-way through an import.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence


class MissingExtraError(ModuleNotFoundError):
    """A package of kernel-corpus was imported without the extra that provides its dependencies."""


def missing_modules(modules: Sequence[str]) -> list[str]:
    """The top-level ``modules`` that cannot be imported here (found without importing them)."""
    return [name for name in modules if importlib.util.find_spec(name) is None]


def missing_extra_message(package: str, extra: str, missing: Sequence[str]) -> str:
    """One line: what is missing and the install command that brings it."""
    return (
        f"{package} needs the '{extra}' extra of kernel-corpus ({', '.join(missing)} not installed): "
        f"pip install 'kernel-corpus[{extra}]' (in a clone: pip install -e '.[{extra}]')"
    )


def require_extra(package: str, extra: str, modules: Sequence[str]) -> None:
    """Stop unless every module of ``extra`` can be imported.

    Under ``python -m package...`` (a command: Python documents ``sys.argv[0]`` as ``"-m"``
    while it imports the packages of the module to run) this prints one line on stderr and
    exits with status 1; imported from a library or a script, it raises
    :class:`MissingExtraError` with the same message.
    """
    missing = missing_modules(modules)
    if not missing:
        return
    message = missing_extra_message(package, extra, missing)
    if sys.argv[:1] == ["-m"]:
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(1)
    raise MissingExtraError(message, name=missing[0])
