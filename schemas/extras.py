"""The optional extras of kernel-corpus, and the one line a command prints when one is missing.

kernel-corpus without extras is the reader alone (this package: pyarrow, polars, fsspec, rich);
``extract``, ``corpus`` and ``train`` need the heavy stack (torch, Triton, PyTorch Geometric...)
from an extra. Each of those packages calls :func:`require_extra` once, in its ``__init__``,
so a missing dependency is reported in one place per package, before any of its modules
fails half-way through an import; ``schemas`` itself calls :func:`require_reader` (in
:mod:`schemas._deps`, its first import) for the reader's own dependencies. This module imports
nothing outside the standard library: it runs before any of them is known to be there.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path

# What `pip install kernel-corpus` (no extras) brings; `schemas` needs them all (pyarrow at
# import, the others in its commands and scan_table).
READER_MODULES = ("pyarrow", "polars", "fsspec", "rich")


class MissingExtraError(ModuleNotFoundError):
    """A package of kernel-corpus was imported without the extra that provides its dependencies."""


def missing_modules(modules: Sequence[str]) -> list[str]:
    """The top-level ``modules`` that cannot be imported here (found without importing them)."""
    return [name for name in modules if importlib.util.find_spec(name) is None]


def clone_venv_hint() -> str:
    """``"; ..."`` naming the clone's ``.venv`` when this code runs from a clone that has one
    (``make setup`` made it) but the running Python is another: a shell where ``source
    .venv/bin/activate`` was forgotten is the likeliest reason for a missing dependency there,
    and installing into that other Python is then the wrong fix. Empty otherwise (an installed
    package, or the clone's own venv)."""
    venv = Path(__file__).resolve().parents[1] / ".venv"
    if not (venv / "bin" / "python").exists() or Path(sys.prefix).resolve() == venv.resolve():
        return ""
    return f"; this Python ({sys.executable}) is not the clone's venv: source {venv}/bin/activate"


def missing_extra_message(package: str, extra: str, missing: Sequence[str]) -> str:
    """One line: what is missing and the install command that brings it."""
    return (
        f"{package} needs the '{extra}' extra of kernel-corpus ({', '.join(missing)} not installed): "
        f"pip install 'kernel-corpus[{extra}]' (in a clone: pip install -e '.[{extra}]')"
        f"{clone_venv_hint()}"
    )


def missing_reader_message(missing: Sequence[str]) -> str:
    """One line for a Python without the reader's own dependencies: kernel-corpus is most likely
    not installed in it at all (it is not on PyPI, so no bare `pip install kernel-corpus`)."""
    return (
        f"kernel-corpus is not installed in this Python ({', '.join(missing)} not installed): "
        f"pip install -e . in a clone, or pip install PATH-OR-GIT-URL (README: Install)"
        f"{clone_venv_hint()}"
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
    _stop(missing_extra_message(package, extra, missing), missing)


def require_reader() -> None:
    """Stop unless the reader's own dependencies (:data:`READER_MODULES`) can be imported: as
    :func:`require_extra` does, one line under ``python -m`` rather than a traceback from the
    first ``import pyarrow``."""
    missing = missing_modules(READER_MODULES)
    if missing:
        _stop(missing_reader_message(missing), missing)


def _stop(message: str, missing: Sequence[str]) -> None:
    """One line on stderr and exit 1 under ``python -m``; :class:`MissingExtraError` otherwise."""
    if sys.argv[:1] == ["-m"]:
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(1)
    raise MissingExtraError(message, name=missing[0])
