"""Build ``python -m train``'s ``--out`` beside it and swap it in whole, so that an ``--out``
that exists always holds one finished run.

A run writes for minutes to hours: its splits first, then a model per seed, then the numbers
and the report. Written in place, an interrupted or failed run left the earlier run's
``metrics.json`` and ``report.md`` beside its own splits and models, and ``train.compare``,
``train.replay`` and ``train.predict`` took the mix for a finished result. So the run writes
into ``.OUT.partial-<pid>`` (same parent, so renaming is atomic and never copies), and only
when everything is there:

1. ``OUT`` is renamed to ``.OUT.replaced-<pid>``, then ``.OUT.partial-<pid>`` to ``OUT``
   (Ctrl-C, SIGTERM and SIGHUP wait until both are done);
2. ``.OUT.replaced-<pid>`` is removed.

An interrupted (Ctrl-C, SIGTERM, SIGHUP: :mod:`schemas.signals`) or failed run removes its
partial directory; one killed outright (SIGKILL) leaves it, and
the next run into the same ``OUT`` (:func:`recover_stale`) removes what a dead process left: a
partial directory, an old output it had moved aside, or (killed between the two renames, no
``OUT`` left) puts the old output back.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from schemas.machine import process_alive
from schemas.signals import TERMINATION_SIGNALS
from train.layout import OUTPUT_NAMES, out_problem

PARTIAL = "partial"
"""Tag of the directory a run builds its output in."""
REPLACED = "replaced"
"""Tag of the earlier output while it is being replaced."""
DEFERRED_SIGNALS = (signal.SIGINT, *TERMINATION_SIGNALS)


def real_out(out: str | Path) -> Path:
    """``out`` with symlinks resolved: the directory that is swapped is the one a symlinked
    ``--out`` points to (renaming the link would leave the old output where it points)."""
    return Path(os.path.realpath(out))


def sibling(out: Path, tag: str, pid: int | None = None) -> Path:
    """``.OUT.<tag>-<pid>`` beside ``out`` (default pid: this process's)."""
    return out.with_name(f".{out.name}.{tag}-{os.getpid() if pid is None else pid}")


def foreign_entries(out: Path) -> list[str]:
    """Names in ``out`` that ``python -m train`` does not write (sorted; empty when ``out`` is
    missing): replacing ``out`` would delete them."""
    if not out.is_dir():
        return []
    return sorted(name for name in os.listdir(out) if name not in OUTPUT_NAMES)


def out_refusal(out: str | Path) -> str | None:
    """Why ``python -m train`` cannot build and swap in ``out``, or None: checked before any
    work, so hours of training are not lost to a path it cannot replace at the end."""
    path = Path(out)
    real = real_out(out)
    if path.exists() and not path.is_dir():
        return f"--out {out}: exists and is not a directory"
    if path.is_dir() and os.path.ismount(real):
        return f"--out {out}: a mount point cannot be replaced by rename; name a directory in it"
    cwd = Path.cwd().resolve()
    if real == cwd or real in cwd.parents:
        return f"--out {out}: holds the working directory, which the finished run replaces"
    foreign = foreign_entries(real)
    if foreign:
        shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
        return (
            f"--out {out}: holds {shown}, which python -m train did not write and would delete "
            "when it replaces the directory; name a new or empty directory"
        )
    return out_problem(real.parent, f"--out {out}: its parent directory")


def _stale(out: Path, tag: str) -> list[Path]:
    """``.OUT.<tag>-<pid>`` directories beside ``out`` whose process is gone."""
    found = []
    for path in out.parent.glob(f".{glob.escape(out.name)}.{tag}-*"):
        pid = path.name.rsplit("-", 1)[1]
        if pid.isdigit() and not process_alive(int(pid)):
            found.append(path)
    return sorted(found)


def recover_stale(out: str | Path) -> None:
    """Clean up after runs into ``out`` that were killed: put back an earlier output a run had
    moved aside when no ``OUT`` replaced it (killed between the two renames), remove every
    other leftover directory of a dead process."""
    real = real_out(out)
    for aside in _stale(real, REPLACED):
        if real.exists():
            shutil.rmtree(aside, ignore_errors=True)
        else:
            os.rename(aside, real)
    for partial in _stale(real, PARTIAL):
        shutil.rmtree(partial, ignore_errors=True)


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold Ctrl-C, SIGTERM and SIGHUP until the block ends, then deliver them: a signal between the
    two renames of :func:`publish` would leave no ``OUT``. Only the main thread can set signal
    handlers; elsewhere the block runs as is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def hold(number: int, frame: FrameType | None) -> None:
        caught.append(number)

    previous = {number: signal.signal(number, hold) for number in DEFERRED_SIGNALS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, signal.SIG_DFL if handler is None else handler)
        for number in dict.fromkeys(caught):
            signal.raise_signal(number)


def publish(partial: Path, out: Path) -> None:
    """Swap the finished ``partial`` in as ``out`` (see the module docstring); when the second
    rename fails the earlier output is put back."""
    aside = sibling(out, REPLACED)
    replacing = out.exists()
    try:
        with signals_deferred():
            if replacing:
                os.rename(out, aside)
            try:
                os.rename(partial, out)
            except OSError:
                if replacing:
                    os.rename(aside, out)
                raise
    finally:
        if out.exists():  # swapped in or put back: the aside (if any) is the old output
            shutil.rmtree(aside, ignore_errors=True)


@contextmanager
def staged_out(out: str | Path, *, writer: bool = True) -> Iterator[Path]:
    """The directory to write ``out``'s files in: a fresh ``.OUT.partial-<pid>``, swapped in
    as ``out`` when the block ends normally and removed when it raises (Ctrl-C included), so
    ``out`` is left as it was. ``writer`` False (a torchrun rank other than 0, which writes
    nothing): ``out`` itself, untouched."""
    if not writer:
        yield Path(out)
        return
    real = real_out(out)
    recover_stale(real)
    partial = sibling(real, PARTIAL)
    shutil.rmtree(partial, ignore_errors=True)  # a dead process's that had this pid
    partial.mkdir(parents=True)
    try:
        yield partial
        publish(partial, real)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)  # gone already once published
        raise
