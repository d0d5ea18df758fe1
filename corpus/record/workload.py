"""Run a Python workload in this process under the recorder.

``python workload.py ARGS`` and ``python -m package.module ARGS`` run as they would on their
own (``sys.argv``, ``__main__``, the script's directory on ``sys.path``), but in the process
where the recorder's hooks are installed.
"""

from __future__ import annotations

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
    """Refuse ``python -m MODULE`` whose top-level package cannot be found (a typo), as a
    missing script is refused: before ``--out`` is made or anything is imported. Only the
    top-level name is looked up: finding ``pkg.mod`` would import ``pkg``, whose kernels must
    not be imported before the recorder picks the interpreter."""
    top = module.partition(".")[0]
    saved = list(sys.path)
    sys.path.insert(0, os.getcwd())  # where run_workload looks first, as python -m does
    try:
        found = top in sys.modules or importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        found = False
    finally:
        sys.path[:] = saved
    if not found:
        raise WorkloadError(f"no such workload module: {top} (for python -m {module})")


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
