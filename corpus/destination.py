"""``--out`` of the commands that write a dataset: the harvest, ``corpus.record`` and
``corpus.ingest`` refuse a wrong one the same way, before any work, with one override flag.

:func:`probe_out` is the one check all three call first (:func:`schemas.destination.prepare_destination`
under the commands' own words): an empty value, a non-empty directory that holds no dataset, a
dataset root whose README.md or card.json kernel-corpus did not write, and storage that cannot
take files are each one line naming ``--out``; :data:`FORCE_OUT` accepts the second and third.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable, Iterator

from schemas.destination import NewDirectories, check_destination, prepare_destination
from schemas.errors import DatasetError

FORCE_OUT = "--force-out"
"""The option that accepts a non-dataset directory or foreign README.md/card.json as ``--out``."""


class OutRefused(ValueError):
    """``--out`` is no place for this dataset; the message (one line) names it and says why."""


def probe_out(out: str, *, force: bool = False) -> None:
    """Refuse ``out`` (:class:`OutRefused`) unless it is a dataset, new, or an empty directory,
    holds no README.md/card.json that kernel-corpus did not write (``force`` accepts a
    non-dataset directory and those files), and can take files; creates every table directory
    (so even a source with rows for some tables only leaves a dataset ``python -m schemas
    check`` reads)."""
    try:
        prepare_destination(out, force=force, force_flag=FORCE_OUT)
    except DatasetError as exc:
        raise OutRefused(f"--out {exc}") from None


def check_out(out: str, *, force: bool = False) -> None:
    """:func:`probe_out`'s refusals that need no write (a dry run's): everything but storage
    that cannot take files; creates nothing."""
    try:
        check_destination(out, force=force, force_flag=FORCE_OUT)
    except DatasetError as exc:
        raise OutRefused(f"--out {exc}") from None


@contextlib.contextmanager
def out_as_found_unless_work(out: str) -> Iterator[Callable[[], None]]:
    """Around a command from before :func:`probe_out` until its work begins: yields
    ``work_begins``, to call when the command starts writing its data. Left before that by an
    exception (a refusal, an interrupt), it removes the directories of ``out`` that were not
    there when it was entered and are empty (:class:`NewDirectories`): the probe's table
    directories, and ``out`` itself when it was new. After ``work_begins()`` they stay: a
    dataset whose harvest failed keeps every table directory."""
    new = NewDirectories.at(out)
    begun = False

    def work_begins() -> None:
        nonlocal begun
        begun = True

    try:
        yield work_begins
    except BaseException:
        if new is not None and not begun:
            new.remove_empty()
        raise


def add_force_out(parser: argparse.ArgumentParser, *, card: bool = False) -> None:
    """Add :data:`FORCE_OUT` (``args.force_out``) to ``parser``; ``card``: the command writes
    the dataset card, which then replaces those files."""
    replaced = (
        ", and replace a README.md or card.json there that kernel-corpus did not write with the dataset card"
        if card
        else ", or a dataset whose README.md or card.json kernel-corpus did not write"
    )
    parser.add_argument(
        FORCE_OUT,
        action="store_true",
        help=f"write into an --out that is a non-empty directory holding no dataset{replaced} "
        "(default: refused before any work)",
    )
