"""Run a Python workload in this process under the recorder.

``python workload.py ARGS`` and ``python -m package.module ARGS`` run as they would on their
own (``sys.argv``, ``__main__``, the script's directory on ``sys.path``), but in the process
where the recorder's hooks are installed.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import runpy
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


class WorkloadError(ValueError):
    """The command cannot be run in-process; the message names what is wrong."""


@dataclass(frozen=True)
class Workload:
    """A parsed ``python [-m MODULE | SCRIPT] ARGS`` command."""

    script: Path | None
    module: str | None
    args: tuple[str, ...]


def parse_command(command: Sequence[str]) -> Workload:
    """Parse the command after ``--``; anything but a Python program is refused (its kernels
    must run in the process that holds the hooks)."""
    if not command:
        raise WorkloadError("no workload: give it after '--', e.g. -- python workload.py")
    program, *rest = command
    if not os.path.basename(program).startswith("python"):
        raise WorkloadError(
            f"{program!r} is not a Python interpreter: corpus.record runs 'python SCRIPT ...' or "
            "'python -m MODULE ...' in its own process"
        )
    if rest[:1] == ["-m"]:
        if len(rest) < 2:
            raise WorkloadError("'python -m' needs a module name")
        _check_module(rest[1])
        return Workload(None, rest[1], tuple(rest[2:]))
    if not rest or rest[0].startswith("-"):
        raise WorkloadError(
            f"expected 'python SCRIPT ...' or 'python -m MODULE ...', got {' '.join(command)!r}"
        )
    script = Path(rest[0])
    if not script.is_file():
        raise WorkloadError(f"no such workload script: {script}")
    return Workload(script, None, tuple(rest[1:]))


def _check_module(module: str) -> None:
    """Refuse ``python -m MODULE`` that cannot be found (a typo), as a missing script is
    refused: before ``--out`` is made or anything is imported. Each dotted part is looked up in
    its parent's directories without importing the parent (``importlib.util.find_spec`` would
    import ``pkg`` to find ``pkg.mod``, and a package's kernels must not be imported before the
    recorder picks the interpreter)."""
    saved = list(sys.path)
    sys.path.insert(0, os.getcwd())  # where run_workload looks first, as python -m does
    try:
        missing = _first_missing(module)
    finally:
        sys.path[:] = saved
    if missing is not None:
        raise WorkloadError(f"no such workload module: {missing} (for python -m {module})")


def _first_missing(module: str) -> str | None:
    """The first dotted prefix of ``module`` that no finder finds, or None (also when a part
    is found by a finder that cannot say where its children are: the import will tell)."""
    parts = module.split(".")
    search: list[str] | None = None
    for depth in range(1, len(parts) + 1):
        name = ".".join(parts[:depth])
        if name in sys.modules:
            spec = getattr(sys.modules[name], "__spec__", None)
        else:
            try:
                spec = (
                    importlib.util.find_spec(name)
                    if search is None
                    else importlib.machinery.PathFinder.find_spec(name, search)
                )
            except (ImportError, ValueError):
                spec = None
            if spec is None:
                return name
        locations = getattr(spec, "submodule_search_locations", None)
        if depth < len(parts) and locations is None:
            return None if spec is None else ".".join(parts[: depth + 1])  # a module has no children
        search = list(locations or [])
    return None


def run_workload(workload: Workload) -> int:
    """Run it; returns its exit status (0 when it returns normally)."""
    saved_argv, saved_path = list(sys.argv), list(sys.path)
    try:
        if workload.script is not None:
            sys.argv = [str(workload.script), *workload.args]
            sys.path.insert(0, str(workload.script.resolve().parent))
            runpy.run_path(str(workload.script), run_name="__main__")
        else:
            sys.argv = [workload.module or "", *workload.args]
            sys.path.insert(0, os.getcwd())
            runpy.run_module(workload.module or "", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    return 0
