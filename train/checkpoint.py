"""Checkpoints without pickle: ``model.safetensors`` (weights) + ``checkpoint.json``.

The JSON holds everything needed to featurize new data exactly as in training: the graph
featurizer's vocabularies and statistics, the tabular featurizer's state, the model and
training hyperparameters, the featurizer version, the IR level and the schema version the
data was read as; and what the model has seen (``seen``: :func:`seen_facts`), so
``train.predict`` can refuse candidates for an arch it never saw. :func:`load_checkpoint`
refuses a checkpoint from another featurizer or features version, and weights that are not
the ones its ``checkpoint.json`` was written with (``weights_sha256``): the vocabularies and
normalization statistics in the JSON are those of one training, and another training's
weights of the same shapes load without complaint and rank silently wrong. The JSON records
the digest of its own content too (``content_sha256``: :func:`content_digest`), which
:func:`read_meta` checks: a hand-edited vocabulary or statistic, or a merge of two
checkpoints' JSON, is refused instead of ranking silently wrong. Every write of the file goes
through :func:`write_meta`, which records that digest.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from schemas import SCHEMA_VERSION
from train.features import FEATURES_VERSION, INPUT_COLUMNS, TabularFeatures
from train.graphs import FEATURIZER_VERSION, GraphFeaturizer
from train.model import CostModel, ModelConfig

WEIGHTS = "model.safetensors"
META = "checkpoint.json"
FORMAT_VERSION = 2
CONTENT_DIGEST = "content_sha256"
"""The ``checkpoint.json`` field holding :func:`content_digest` of every other field."""


def seen_facts(frame: pl.DataFrame) -> dict[str, Any]:
    """What a model trained on the samples ``frame`` has seen: ``arches`` (measurement arch,
    ``interpreter`` for the CPU interpreter), ``devices`` (device names), ``ir_targets``,
    ``families``, ``dtypes``, counts of ``runs`` and ``configs``, ``schema_version`` (the
    version the rows were read as), ``input_columns``: the feature inputs that were known
    for at least one row (candidates lacking one of them are warned about), and
    ``inputs_of_every_run``: those known in every run (a candidate run lacking one of them is
    warned about: the model never saw a run without it)."""

    def distinct(column: str) -> list[str]:
        if column not in frame.columns:
            return []
        return sorted(str(v) for v in frame[column].drop_nulls().unique().to_list())

    known = [
        c
        for c in (*INPUT_COLUMNS, "ir_id")
        if c in frame.columns and c != "run_id" and frame[c].null_count() < frame.height
    ]
    runs = frame["run_id"].n_unique() if frame.height else 0
    every_run = [  # a run without graphs (every config failed to compile) is no gap: ir_id left out
        c
        for c in known
        if c != "ir_id" and runs and frame.filter(pl.col(c).is_not_null())["run_id"].n_unique() == runs
    ]
    return {
        "arches": distinct("arch"),
        "devices": distinct("device_name"),
        "ir_targets": distinct("ir_target"),
        "families": distinct("family"),
        "dtypes": distinct("dtype"),
        "runs": int(frame["run_id"].n_unique()) if frame.height else 0,
        "configs": int(frame.height),
        "schema_version": SCHEMA_VERSION,
        "input_columns": known,
        "inputs_of_every_run": every_run,
    }


@dataclass
class Checkpoint:
    """A trained model and what it needs to featurize inputs."""

    model: CostModel
    graph_featurizer: GraphFeaturizer
    tabular: TabularFeatures
    level: str
    extra: dict[str, Any]
    """Training facts: train config, split, seed, best epoch, dataset key (informational)."""
    seen: dict[str, Any] = field(default_factory=dict)
    """:func:`seen_facts` of the training rows (arches, devices, families, schema version)."""
    name: str = "gnn"
    """The model's name in ``python -m train`` (gnn, gnn-plain, mlp)."""


def save_checkpoint(directory: str | Path, checkpoint: Checkpoint) -> Path:
    """Write ``checkpoint`` into ``directory`` (created); each file appears by atomic rename."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().contiguous() for k, v in checkpoint.model.state_dict().items()}
    meta = {
        "format_version": FORMAT_VERSION,
        "featurizer_version": FEATURIZER_VERSION,
        "features_version": FEATURES_VERSION,
        "schema_version": SCHEMA_VERSION,
        "name": checkpoint.name,
        "seen": checkpoint.seen,
        "level": checkpoint.level,
        "model": checkpoint.model.config.to_dict(),
        "graph_featurizer": checkpoint.graph_featurizer.to_dict(),
        "tabular": checkpoint.tabular.to_dict(),
        "extra": checkpoint.extra,
    }
    _atomic(out / WEIGHTS, lambda path: save_file(state, str(path)))
    meta["weights_sha256"] = weights_digest(out / WEIGHTS)
    write_meta(out / META, meta)
    return out


def write_meta(path: str | Path, meta: dict[str, Any]) -> dict[str, Any]:
    """Write ``meta`` as the ``checkpoint.json`` at ``path`` (atomic rename), with its
    ``content_sha256`` (:func:`content_digest`) in place of any it held; return what was
    written (plain JSON values). The one writer of the file: any other write breaks the digest
    and the file is refused on reading."""
    # Digest the JSON round trip, not ``meta``: what is read back is what is checked (tuples
    # become lists, dataclasses dicts, int keys strings, which sort otherwise).
    plain = json.loads(json.dumps(meta, default=_jsonable))
    plain.pop(CONTENT_DIGEST, None)
    plain[CONTENT_DIGEST] = content_digest(plain)
    _atomic(Path(path), lambda tmp: Path(tmp).write_text(json.dumps(plain, indent=1)))
    return plain


def content_digest(meta: dict[str, Any]) -> str:
    """Hex SHA-256 of ``meta``'s canonical JSON (sorted keys, no whitespace, ASCII) without
    its ``content_sha256`` field: equal for any whitespace or key order of the same content."""
    content = {k: v for k, v in meta.items() if k != CONTENT_DIGEST}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def weights_digest(path: str | Path) -> str:
    """Hex SHA-256 of the weights file at ``path``: what ``checkpoint.json`` records as
    ``weights_sha256`` and :func:`load_checkpoint` checks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_meta(path: str | Path) -> dict[str, Any]:
    """The ``checkpoint.json`` at ``path`` as a dict; a ``ValueError`` naming the file when it
    is no JSON object (a truncated copy: json's bare "Expecting value: line 1 column 1" named
    no file, and the commands printed just that), or when its content is not the one its
    ``content_sha256`` was computed on (a file without that field is not checked)."""
    try:
        meta = json.loads(Path(path).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not valid JSON ({exc}); copy the checkpoint again or retrain") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: not a checkpoint's JSON object; copy the checkpoint again or retrain")
    recorded = meta.get(CONTENT_DIGEST)  # absent in checkpoints written before it was recorded
    if recorded is not None and content_digest(meta) != recorded:
        raise ValueError(
            f"{path}: its content is not what was written (its SHA-256 differs from its "
            f"{CONTENT_DIGEST}: edited by hand, merged from another checkpoint's, or damaged); "
            "its vocabularies and statistics may not be the training's: restore the file from "
            "a good copy of the checkpoint, or retrain"
        )
    return meta


def load_checkpoint(directory: str | Path, *, device: str = "cpu") -> Checkpoint:
    """Read a checkpoint written by :func:`save_checkpoint` (no pickle involved)."""
    src = Path(directory)
    meta = read_meta(src / META)
    if meta.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"{src / META}: checkpoint format {meta.get('format_version')} differs from this "
            f"code's {FORMAT_VERSION}; retrain or use the matching kernel-corpus version"
        )
    if meta.get("featurizer_version") != FEATURIZER_VERSION:
        raise ValueError(
            f"{src / META}: featurizer version {meta.get('featurizer_version')} differs from this "
            f"code's {FEATURIZER_VERSION}; retrain or use the matching kernel-corpus version"
        )
    try:
        model = CostModel(ModelConfig.from_dict(meta["model"]))
        graph_featurizer = GraphFeaturizer.from_dict(meta["graph_featurizer"])
        tabular = TabularFeatures.from_dict(meta["tabular"])
        level = str(meta["level"])
    except (KeyError, TypeError, AttributeError) as exc:  # a hand-edited or truncated file
        raise ValueError(
            f"{src / META}: not a checkpoint this code wrote ({type(exc).__name__}: {exc}); "
            "retrain or copy the checkpoint again"
        ) from None
    if level not in ("ttgir", "ttir"):
        raise ValueError(f"{src / META}: level {level!r} is not an IR level a model is trained on")
    try:
        model.load_state_dict(load_file(str(src / WEIGHTS), device=device))
    except (SafetensorError, RuntimeError) as exc:  # truncated or foreign weights
        reason = str(exc).splitlines()[0]
        raise ValueError(
            f"{src / WEIGHTS}: the weights do not load ({reason}); the checkpoint is damaged or "
            "not this checkpoint.json's: copy it again or retrain"
        ) from None
    recorded = meta.get("weights_sha256")  # absent in checkpoints written before it was recorded
    if recorded is not None and weights_digest(src / WEIGHTS) != recorded:
        raise ValueError(
            f"{src / WEIGHTS}: not the weights {src / META} was written with (their SHA-256 differs "
            "from its weights_sha256: copied from another checkpoint, or damaged); the vocabularies "
            "and statistics in the JSON belong to other weights: copy the checkpoint's two files "
            "together, or retrain"
        )
    model.to(device).eval()
    return Checkpoint(
        model=model,
        graph_featurizer=graph_featurizer,
        tabular=tabular,
        level=level,
        extra=dict(meta.get("extra", {})),
        seen=dict(meta.get("seen", {})),
        name=str(meta.get("name", "gnn")),
    )


def _atomic(final: Path, write: Callable[[str], object]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", dir=final.parent)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, final)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _jsonable(value: Any) -> Any:
    if hasattr(value, "__dataclass_fields__"):
        return asdict(value)
    raise TypeError(f"not JSON-serializable: {type(value).__name__}")
