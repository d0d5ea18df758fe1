"""The one door from model-guided tuning into the cost model: score candidate configs with a
checkpoint.

Everything in :mod:`train.guide`, :mod:`train.replay`, the budgeted harvest and the Triton
plug-in ranks configs through :func:`score_candidates` (which calls
:func:`train.predict.rank_configs`), so a change in how the model ranks (validity-aware
ranking, arch checks) reaches every tuner at once.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from train.checkpoint import META, WEIGHTS, Checkpoint, load_checkpoint
from train.predict import (
    InputWarningSink,
    UnseenArchError,
    check_ir_target,
    rank_configs,
    resolve_arch,
)

_ROW = "__guide_row"
"""Input position of each candidate, carried through the ranking to restore the order."""


@dataclass(frozen=True)
class Scores:
    """A model's verdict on candidate configs, row for row with the candidates.

    ``rank``: int [n], 1 = predicted fastest within its ``run_id`` group; ``predicted_ms``:
    float [n], the model's latency estimate in ms; ``p_valid``: float [n], its probability
    that the config runs correctly (status ok)."""

    rank: np.ndarray
    predicted_ms: np.ndarray
    p_valid: np.ndarray


@dataclass(frozen=True)
class GuideModel:
    """A loaded checkpoint with the name reasons and summaries quote."""

    checkpoint: Checkpoint
    name: str
    """``<directory name>@<12 hex of its files' content>``: names the model without the
    machine's paths (a dataset that quotes it stays publishable)."""

    @property
    def level(self) -> str:
        """IR level the model reads (``ttgir`` or ``ttir``)."""
        return self.checkpoint.level


def model_name(directory: str | Path) -> str:
    """``<directory name>@<hash>``: the last path component and a content hash of
    ``checkpoint.json`` and the weights (two copies of one model share the hash). A seed's
    checkpoint that ``python -m train`` keeps (``checkpoints/<model>/<split>/seed-N``) is named
    ``<model>/<split>/seed-N@<hash>``: ``seed-N`` alone would not say which model it is."""
    path = Path(directory)
    digest = hashlib.blake2b(digest_size=6)
    for name in (META, WEIGHTS):
        digest.update((path / name).read_bytes())
    resolved = path.resolve()
    kept = len(resolved.parts) > 4 and resolved.parts[-4] == "checkpoints"
    parts = resolved.parts[-3:] if kept and re.fullmatch(r"seed-\d+", resolved.name) else (resolved.name,)
    return f"{'/'.join(parts)}@{digest.hexdigest()}"


def load_model(directory: str | Path) -> GuideModel:
    """Load the checkpoint in ``directory`` (``OUT/checkpoint`` of ``python -m train``).
    Raises ``FileNotFoundError`` naming the missing file, ``ValueError`` for an incompatible
    checkpoint (the message says why)."""
    path = Path(directory)
    if path.is_file() and path.name == META:
        path = path.parent  # the checkpoint.json itself: its directory is meant
    if not path.is_dir():  # else "no checkpoint.json there", as if a directory existed
        raise FileNotFoundError(f"{path}: no such directory, so no checkpoint.json (expected a python -m train checkpoint)")
    for name in (META, WEIGHTS):
        if not (path / name).is_file():
            shipped = path / "checkpoint" / META
            hint = f"; the model python -m train ships is {path / 'checkpoint'}" if shipped.is_file() else ""
            raise FileNotFoundError(
                f"{path}: no {name} there (expected a python -m train checkpoint){hint}"
            )
    return GuideModel(load_checkpoint(path), model_name(path))


def arch_refusal(model: GuideModel | Checkpoint, arch: str, ir_target: str | None = None) -> str | None:
    """Why ``model`` refuses to rank configs for the device ``arch`` whose IR is compiled for
    ``ir_target`` (``runs.ir_target`` spelling, e.g. ``sm_90``; None: not checked) -- what
    :func:`train.predict.rank_configs` refuses, in a line a tuner's warning can quote -- or None
    when it ranks them: lets a tuner fall back once, before compiling anything to rank."""
    checkpoint = model.checkpoint if isinstance(model, GuideModel) else model
    try:
        resolve_arch(checkpoint, pl.DataFrame({"arch": [arch]}), None, allow_unseen_arch=False)
    except UnseenArchError:
        seen = ", ".join(checkpoint.seen.get("arches", [])) or "no recorded arch"
        return f"the model was trained on {seen} only, not on {arch}"
    if ir_target is not None:
        try:
            check_ir_target(checkpoint, pl.DataFrame({"ir_target": [ir_target]}), allow_unseen_arch=False)
        except UnseenArchError:
            seen = ", ".join(checkpoint.seen.get("ir_targets", []))
            return f"the model read IR compiled for {seen} only, not for {ir_target}"
    return None


def score_candidates(
    model: GuideModel | Checkpoint,
    candidates: pl.DataFrame,
    ir_nodes: pl.DataFrame,
    ir_edges: pl.DataFrame,
    ir_graphs: pl.DataFrame | None = None,
    *,
    arch: str | None = None,
    allow_unseen_arch: bool = False,
    on_input_warning: InputWarningSink | None = None,
) -> Scores:
    """Score every row of ``candidates`` (samples-table columns, see
    :func:`train.predict.rank_configs`; rows grouped into runs by ``run_id``: pass every
    config of a run together, the run-relative features compare each with the others) and
    return the verdict in the candidates' own row order.

    ``arch``: the device the configs run on, for rows without an ``arch``. A model refuses an
    arch it never saw with :class:`train.predict.UnseenArchError` (a ``ValueError``) unless
    ``allow_unseen_arch``, which ranks with a warning. ``on_input_warning``: where the
    candidates' missing inputs and unseen IR values (and an allowed unseen arch) are told
    instead of raised as warnings (see :func:`train.predict.rank_configs`)."""
    checkpoint = model.checkpoint if isinstance(model, GuideModel) else model
    framed = candidates.with_row_index(_ROW)
    ranked = rank_configs(
        checkpoint,
        framed,
        ir_nodes,
        ir_edges,
        ir_graphs,
        arch=arch,
        allow_unseen_arch=allow_unseen_arch,
        on_input_warning=on_input_warning,
    ).sort(_ROW)
    return Scores(
        rank=ranked["rank"].to_numpy().astype(np.int64),
        predicted_ms=ranked["predicted_ms"].to_numpy().astype(np.float64),
        p_valid=ranked["p_valid"].to_numpy().astype(np.float64),
    )
