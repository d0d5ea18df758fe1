"""Refuse a harvest that cannot succeed before any work starts, each with a one-line reason.

Called by :func:`corpus.harvest.app.run_harvest` in this order: the suite imports and has
families, the dtypes exist, the compile target is one the installed Triton can build, the
plan is not empty, ``--out`` is a place for a dataset (:func:`corpus.destination.probe_out`,
shared with the other commands that write one), and no identical harvest is running into the
same dataset (:func:`harvest_lock`).
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Iterator, Mapping, Sequence

from corpus.harvest.plan import PlannedRun
from corpus.suite.registry import load_suite, select
from corpus.suite.spec import KernelSpec
from schemas.identity import content_hash
from schemas.locking import LockHeldError, dataset_lock, holder_line
from schemas.storage import resolve


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


DTYPE_SHORTHANDS = {
    "fp32": "float32", "f32": "float32", "float": "float32",
    "fp16": "float16", "f16": "float16", "half": "float16",
    "bf16": "bfloat16",
}  # fmt: skip
"""Common short names of dtypes, suggested as their full name (the dataset stores full names)."""


def check_dtypes(dtypes: Sequence[str], specs: Mapping[str, KernelSpec]) -> None:
    """Every requested dtype is one some selected family supports; a short name such as
    ``fp32`` is answered with its full name."""
    known = sorted({dtype for spec in specs.values() for dtype in spec.dtypes})
    unknown = [dtype for dtype in dtypes if dtype not in known]
    if unknown:
        hints = [
            f"{dtype} is {DTYPE_SHORTHANDS[dtype.lower()]}"
            for dtype in unknown
            if DTYPE_SHORTHANDS.get(dtype.lower()) in known
        ]
        hint = f"; did you mean the full name? ({', '.join(hints)})" if hints else ""
        raise HarvestInputError(
            f"--dtypes {','.join(unknown)}: not a dtype of the selected families ({', '.join(known)}){hint}"
        )


def check_target(target: str) -> None:
    """``target`` parses and, for CUDA, is an architecture the installed Triton's ptxas
    can generate code for (``--target sm_1000`` would otherwise fail every compile):
    :func:`extract.compile.check_target`."""
    from extract.compile import check_target as check

    try:
        check(target)
    except ValueError as exc:
        raise HarvestInputError(f"--target {target}: {exc}") from None


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


def plan_key(planned: Sequence[PlannedRun]) -> str:
    """Key of a plan: its run_ids. Two invocations with the same key would redo each other."""
    return content_hash(*sorted(run.run_id for run in planned))


def plan_lock_name(planned: Sequence[PlannedRun]) -> str:
    """Name of the plan's lock in ``DIR/.locks/`` (also names its pending record)."""
    return f"harvest-{plan_key(planned)}"


@contextlib.contextmanager
def harvest_lock(
    out: str, planned: Sequence[PlannedRun], *, allow_repeat: bool, hint: str = ""
) -> Iterator[str | None]:
    """Hold the advisory lock of (``out``, plan) while the harvest runs.

    A second identical harvest into the same dataset stops with HarvestInputError unless
    ``allow_repeat`` (``hint``, when given, ends its message). Yields a warning line for the
    user when no lock could be taken (a non-local ``out``), else None.
    """
    if allow_repeat:
        yield None
        return
    try:
        with dataset_lock(
            resolve(out), plan_lock_name(planned), wait=False, holder=holder_line("harvest")
        ) as path:
            yield (
                None
                if path is not None
                else (
                    f"--out {out} is not a local path: a second identical harvest into it is not detected"
                )
            )
    except LockHeldError as exc:
        raise HarvestInputError(
            f"another harvest of the same runs is writing into {out}: {exc.holder or 'its lock is held'}. "
            "Let it finish (then rerun to resume), or pass --allow-repeat to harvest them again beside it"
            + hint
        ) from None
