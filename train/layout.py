"""Where ``python -m train`` puts its models in ``--out``, and how other code finds them.

::

    OUT/checkpoint/                          the model to ship: the --final model, else the
                                             first split kind's seed-0 model of the first
                                             neural model asked for
    OUT/checkpoints/<model>/<kind>/seed-<N>/ every evaluation model: neural model <model>
                                             (gnn, gnn-plain, mlp) trained on seed N's split
                                             of kind <kind> (family, cluster, ...)
    OUT/splits.parquet                       kind, seed, run_id, split of every evaluation split
    OUT/metrics.json, OUT/report.md, *.png   the numbers, the report and its plots
    OUT/replay/                              what ``python -m train.replay --model OUT`` writes

``python -m train`` builds all of it in a hidden sibling of ``OUT`` and renames it into place
when everything is written (:mod:`train.staging`): an ``OUT`` that exists is one finished run.

Every evaluation model is kept so that a replay (:mod:`train.replay`) or a paired comparison
can judge each seed's model on the runs its own split held out. ``checkpoint.json``'s
``extra`` records the same facts (``split``: the kind, ``seed``), so a checkpoint directory
copied elsewhere still says which split it belongs to.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from train.plots import PLOT_FILES

SHIPPED = "checkpoint"
CHECKPOINTS = "checkpoints"
SPLITS_FILE = "splits.parquet"
META = "checkpoint.json"
_SEED = "seed-"
REPLAYS = "replay"
OUTPUT_NAMES = frozenset(
    {SHIPPED, CHECKPOINTS, SPLITS_FILE, "metrics.json", "report.md", *PLOT_FILES, REPLAYS}
)
"""What ``python -m train`` (and a replay's default ``--out``) put in ``OUT``: a rerun replaces
a directory holding only these, and refuses one holding anything else rather than delete it."""


def seed_checkpoint_dir(out: str | Path, model: str, kind: str, seed: int) -> Path:
    """``OUT/checkpoints/<model>/<kind>/seed-<seed>``: where the evaluation model of ``model``
    on seed ``seed``'s ``kind`` split is saved."""
    return Path(out) / CHECKPOINTS / model / kind / f"{_SEED}{seed}"


@dataclass(frozen=True)
class SeedCheckpoint:
    """One saved evaluation model: its directory, neural model name, split kind and seed."""

    path: Path
    model: str
    kind: str
    seed: int


def seed_checkpoints(out: str | Path) -> list[SeedCheckpoint]:
    """Every evaluation checkpoint under ``OUT/checkpoints`` (a directory holding
    ``checkpoint.json``), sorted by model, kind and seed; empty when there is none."""
    root = Path(out) / CHECKPOINTS
    found = []
    for meta in root.glob(f"*/*/{_SEED}*/{META}"):
        seed_dir = meta.parent
        number = seed_dir.name.removeprefix(_SEED)
        if not number.isdigit():
            continue
        found.append(
            SeedCheckpoint(seed_dir, seed_dir.parent.parent.name, seed_dir.parent.name, int(number))
        )
    return sorted(found, key=lambda c: (c.model, c.kind, c.seed))


def find_splits_file(checkpoint_dir: str | Path, levels: int = 4) -> Path | None:
    """The ``splits.parquet`` of the ``python -m train`` output a checkpoint directory belongs
    to: in the directory itself or up to ``levels`` parents (``OUT/checkpoint`` is one level
    below it, ``OUT/checkpoints/<model>/<kind>/seed-N`` four); None when there is none."""
    directory = Path(checkpoint_dir).resolve()
    for candidate in [directory, *directory.parents][: levels + 1]:
        if (candidate / SPLITS_FILE).is_file():
            _check_split(candidate / SPLITS_FILE, directory)
            return candidate / SPLITS_FILE
    return None


def replays_in(out: str | Path) -> list[str]:
    """What ``python -m train.replay`` wrote in ``OUT/replay`` (its entries as ``replay/NAME``,
    sorted; empty when there is none): a new ``python -m train`` into ``OUT`` deletes them with
    the old output, since they judged the models it replaces, and says so first."""
    root = Path(out) / REPLAYS
    if not root.is_dir():
        return []
    return sorted(f"{REPLAYS}/{entry.name}" for entry in root.iterdir())


def _check_split(path: Path, checkpoint_dir: Path) -> None:
    """Raise ValueError when ``path`` holds runs of the checkpoint's split kind and seed that
    are not the split it was trained on (``extra.split_digest`` in its ``checkpoint.json``):
    the file was edited, or is another run's (a checkpoint copied into another output). A
    replay read it as is and judged the model on runs it trained on. Checkpoints that record
    no digest (older ones, the --final model) and files without that kind and seed pass."""
    import json

    import polars as pl

    from train.splits import split_digest

    try:
        extra = json.loads((checkpoint_dir / META).read_text()).get("extra", {})
    except (OSError, ValueError, AttributeError):
        return  # no readable checkpoint.json here: loading the checkpoint says why
    recorded = extra.get("split_digest") if isinstance(extra, dict) else None
    if recorded is None:
        return
    table = pl.read_parquet(path).filter(
        (pl.col("kind") == extra.get("split")) & (pl.col("seed") == extra.get("seed"))
    )
    if not table.is_empty() and split_digest(table) != recorded:
        raise ValueError(
            f"{path}: its {extra.get('split')} split of seed {extra.get('seed')} is not the one "
            f"{checkpoint_dir} was trained on (the file was edited, or is another run's); a replay "
            "would judge the model on runs it trained on: use the splits.parquet of the run that "
            "wrote the checkpoint, or a copy of the checkpoint alone (the split is then drawn again)"
        )


def out_problem(out: str | Path, option: str = "--out") -> str | None:
    """Why the directory ``out`` cannot take a command's outputs (it is created when missing,
    and a file is written and removed there), or None: checked before any work, so hours of
    training or a replay are not lost to a mistyped or read-only path."""
    path = Path(out)
    if path.exists() and not path.is_dir():
        return f"{option} {out}: exists and is not a directory"
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".probe-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return f"{option} {out}: cannot write there ({exc.strerror or exc})"
    return None
