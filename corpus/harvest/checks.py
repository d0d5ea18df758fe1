"""Refuse a harvest that cannot succeed before any work starts, each with a one-line reason.

Called by :func:`corpus.harvest.app.run_harvest` in this order: the suite imports and has
families, the dtypes exist, the compile target is one the installed Triton can build, the
plan is not empty, ``--out`` can take files, and no identical harvest is running into the
same dataset (:func:`harvest_lock`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import subprocess
import traceback
from collections.abc import Iterator, Mapping, Sequence

from corpus.harvest.plan import PlannedRun
from corpus.suite.registry import load_suite, select
from corpus.suite.spec import KernelSpec
from schemas.errors import DatasetError
from schemas.identity import content_hash
from schemas.locking import LockHeldError, dataset_lock
from schemas.storage import probe_writable, resolve
from schemas.tables import TABLES


class HarvestInputError(ValueError):
    """A command-line value the harvest cannot work with; the message names it."""


def load_families(suite: Sequence[str], families: Sequence[str]) -> dict[str, KernelSpec]:
    """The selected families of the suite modules; a module that fails to import or registers
    no family is a HarvestInputError naming it (user suites are arbitrary code)."""
    specs: dict[str, KernelSpec] = {}
    for module in suite:
        try:
            found = load_suite(module)
        except ModuleNotFoundError as exc:
            raise HarvestInputError(f"--suite {module}: {exc}") from None
        except Exception as exc:  # any error of the user's module: say where, not a traceback
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            raise HarvestInputError(
                f"--suite {module}: importing it raised {type(exc).__name__}: {exc} "
                f"({frame.filename}, line {frame.lineno})"
            ) from None
        if not found:
            raise HarvestInputError(
                f"--suite {module}: the module registers no kernel families "
                "(decorate KernelSpec subclasses with @corpus.suite.registry.register)"
            )
        specs.update(found)
    return select(dict(sorted(specs.items())), families or None)


def check_dtypes(dtypes: Sequence[str], specs: Mapping[str, KernelSpec]) -> None:
    """Every requested dtype is one some selected family supports."""
    known = sorted({dtype for spec in specs.values() for dtype in spec.dtypes})
    unknown = [dtype for dtype in dtypes if dtype not in known]
    if unknown:
        raise HarvestInputError(
            f"--dtypes {','.join(unknown)}: not a dtype of the selected families ({', '.join(known)})"
        )


@functools.cache
def ptxas_architectures(capability: int) -> frozenset[str] | None:
    """``sm_*`` names the ptxas that Triton uses for ``capability`` accepts (from its
    ``--help``), or None when that cannot be determined (other Triton layouts)."""
    try:
        from triton.backends.nvidia.compiler import get_ptxas

        path = get_ptxas(capability).path
        text = subprocess.run(
            [path, "--help"], capture_output=True, text=True, timeout=60, check=False
        ).stdout
    except Exception:  # a Triton without this helper, or no ptxas: nothing to check against
        return None
    section = text.split("--gpu-name", 1)[-1].split("\n--", 1)[0]
    names = frozenset(re.findall(r"'(sm_\d+)[a-z]?'", section))
    return names or None


def check_target(target: str) -> None:
    """``target`` parses and, for CUDA, is an architecture the installed Triton's ptxas
    can generate code for (``--target sm_1000`` would otherwise fail every compile)."""
    from extract.compile import parse_target

    try:
        gpu = parse_target(target)
    except ValueError as exc:
        raise HarvestInputError(f"--target {target}: {exc}") from None
    if gpu.backend != "cuda":
        return
    known = ptxas_architectures(int(gpu.arch))
    if known is not None and f"sm_{gpu.arch}" not in known:
        ordered = sorted(known, key=lambda name: int(name[3:]))
        raise HarvestInputError(
            f"--target {target}: the installed Triton cannot compile for sm_{gpu.arch} "
            f"(its ptxas knows {ordered[0]} .. {ordered[-1]})"
        )


def check_interpreter() -> None:
    """The installed Triton/NumPy pair can run kernels in the interpreter (CPU harvests)."""
    from extract.versions import interpreter_defect

    defect = interpreter_defect()
    if defect is not None:
        raise HarvestInputError(f"--device cpu: {defect}")


def check_plan(
    planned: Sequence[PlannedRun], *, why_empty: Sequence[str], allow_empty: bool
) -> None:
    """A selection that plans no run is an error unless ``allow_empty``; ``why_empty`` lists
    the likely reasons (excluded dtypes, shard)."""
    if planned or allow_empty:
        return
    reasons = f" ({'; '.join(why_empty)})" if why_empty else ""
    raise HarvestInputError(
        f"the selection plans no runs{reasons}; nothing to do (pass --allow-empty to accept that)"
    )


def probe_out(out: str) -> None:
    """Create the table directories of ``out`` and write and remove a file in each."""
    try:
        probe_writable(resolve(out), list(TABLES))
    except DatasetError as exc:
        raise HarvestInputError(f"--out {exc}") from None


def plan_key(planned: Sequence[PlannedRun]) -> str:
    """Key of a plan: its run_ids. Two invocations with the same key would redo each other."""
    return content_hash(*sorted(run.run_id for run in planned))


@contextlib.contextmanager
def harvest_lock(
    out: str, planned: Sequence[PlannedRun], *, allow_repeat: bool
) -> Iterator[str | None]:
    """Hold the advisory lock of (``out``, plan) while the harvest runs.

    A second identical harvest into the same dataset stops with HarvestInputError unless
    ``allow_repeat``. Yields a warning line for the user when no lock could be taken (a
    non-local ``out``), else None.
    """
    if allow_repeat:
        yield None
        return
    name = f"harvest-{plan_key(planned)}"
    holder = f"pid {os.getpid()} on {os.uname().nodename}"
    try:
        with dataset_lock(resolve(out), name, wait=False, holder=holder) as path:
            yield (
                None
                if path is not None
                else (
                    f"--out {out} is not a local path: a second identical harvest into it is not detected"
                )
            )
    except LockHeldError as exc:
        raise HarvestInputError(
            f"another harvest of the same runs is writing into {out} ({exc.holder or 'lock held'}); "
            "let it finish (then rerun to resume), or pass --allow-repeat to harvest them again beside it"
        ) from None
