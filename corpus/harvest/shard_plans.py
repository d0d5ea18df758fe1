"""Static shards of one plan, recorded in the dataset, so that a shard of another plan is refused.

``--shard i/N`` harvests the runs that the cost balancer deals to shard i of the *whole* plan
(:func:`corpus.harvest.plan.shard_assignment`), so every shard of a harvest must be given the
same selection (``--families``, ``--scale``, ``--dtypes``, ``--max-configs``, ...). Shards given
different ones split different plans: some runs fall to no shard and are never harvested,
others to two, and every shard still ends with "harvest finished" and ``schemas check`` says OK
(measured: ``--max-configs 2`` for shard 0/2 and ``--max-configs 40`` for shard 1/2 of the tiny
float32 plan left 20 of its 69 runs to no shard).

So each shard records its plan's split in ``DIR/.locks/shard-plans/<key>.json`` (the run ->
shard assignment, the shard count and the command) before it measures, and a shard whose split
differs from that of an unfinished sharded harvest sharing runs with it is refused, naming that
harvest's command. A recorded harvest is finished once every run of its plan is committed
(then its record is removed). Shards of one plan write the same record; the ``--seed`` and
configs per run do not change the split unless they change a run's estimated cost.

Local datasets only (the record's check-and-write runs under a flock), as the other locks of
a harvest.
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from corpus.harvest.checks import HarvestInputError
from corpus.harvest.claims import committed_harvests
from corpus.harvest.plan import PlannedRun, shard_assignment
from schemas.errors import DatasetError
from schemas.identity import content_hash
from schemas.locking import LOCK_DIR, dataset_lock, holder_line, is_lockable, read_record
from schemas.storage import resolve

RECORDS = "shard-plans"
"""Directory of the records, under the dataset's ``.locks``."""
LOCK_NAME = "shard-plans"
"""The lock under which a shard checks the records and adds its own."""


@dataclass(frozen=True)
class ShardPlan:
    """How a sharded harvest splits its whole plan: run_id -> shard, of ``count`` shards."""

    count: int
    assignment: dict[str, int]
    command: str = ""
    """The command line of the shard that recorded it (shown when another one is refused)."""

    @classmethod
    def of(cls, runs: Sequence[PlannedRun], count: int, command: str = "") -> ShardPlan:
        """The split of the whole plan ``runs`` into ``count`` shards."""
        return cls(count, shard_assignment(runs, count), command)

    @property
    def key(self) -> str:
        """Equal for every shard of one plan, different for shards that split differently."""
        return content_hash(
            str(self.count), *sorted(f"{r}={i}" for r, i in self.assignment.items())
        )


def _records(directory: str) -> list[tuple[str, ShardPlan]]:
    """(path, plan) of every readable record in ``directory``."""
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return []
    found = []
    for name in names:
        if not name.endswith(".json"):
            continue
        path = posixpath.join(directory, name)
        try:
            text = read_record(path)  # never through a link, never a FIFO (DatasetError)
            if text is None:
                continue  # removed meanwhile
            data = json.loads(text)
            plan = ShardPlan(
                int(data["count"]),
                {str(k): int(v) for k, v in data["runs"].items()},
                str(data.get("command", "")),
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue  # a torn or foreign file: it proves nothing either way
        found.append((path, plan))
    return found


def _store(path: str, plan: ShardPlan) -> None:
    temporary = f"{path}.{os.getpid()}-{secrets.token_hex(4)}"
    try:
        os.makedirs(posixpath.dirname(path), exist_ok=True)
        with open(temporary, "w") as handle:
            json.dump(
                {"count": plan.count, "command": plan.command, "runs": plan.assignment}, handle
            )
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise DatasetError(
            f"{path}: cannot record the shard plan ({exc.strerror or exc})"
        ) from None


def check_shard_plan(out: str, index: int, plan: ShardPlan, *, record: bool) -> None:
    """Refuse shard ``index`` of ``plan`` when ``out`` holds an unfinished sharded harvest of
    another split that shares runs with it (:class:`HarvestInputError` naming that harvest's
    command and its record); ``record``: then record ``plan`` (a dry run only checks). Records
    of finished harvests are removed on the way."""
    loc = resolve(out)
    if not is_lockable(loc):
        return
    directory = posixpath.join(loc.root, LOCK_DIR, RECORDS)
    if not record and not os.path.isdir(directory):
        return
    with dataset_lock(loc, LOCK_NAME, wait=True, holder=holder_line("harvest")):
        others = [(path, other) for path, other in _records(directory) if other.key != plan.key]
        committed = {run_id for run_id, _ in committed_harvests(out)} if others else set()
        for path, other in others:
            left = set(other.assignment) - committed
            if not left:
                if record:
                    with contextlib.suppress(OSError):
                        os.unlink(path)
                continue
            shared = set(other.assignment) & set(plan.assignment)
            if shared:
                raise HarvestInputError(
                    f"--shard {index}/{plan.count}: {out} holds an unfinished harvest split into "
                    f"{other.count} shard(s) another way ({len(left)} of its {len(other.assignment)} "
                    f"runs not committed, {len(shared)} of its runs in this plan too), started as "
                    f"`{other.command or '?'}`. Shards of different plans leave some runs to no "
                    "shard and others to two: give every shard the same --families, --scale, "
                    "--dtypes, --max-configs and --seed as that harvest. If it is abandoned, "
                    f"delete {path} and rerun"
                )
        if record:
            own = posixpath.join(directory, f"{plan.key}.json")
            if not os.path.exists(own):
                _store(own, plan)
