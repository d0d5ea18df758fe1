"""The name a guided harvest's skip reasons and the plug-in's summaries quote for a model."""

from __future__ import annotations

from pathlib import Path

from train.checkpoint import META, WEIGHTS
from train.guide import model_name


def _checkpoint(directory: Path, content: bytes) -> Path:
    directory.mkdir(parents=True)
    (directory / META).write_bytes(b'{"format_version": 1}')
    (directory / WEIGHTS).write_bytes(content)
    return directory


def test_a_seed_checkpoint_is_named_with_its_model_and_split(tmp_path: Path) -> None:
    seed = _checkpoint(tmp_path / "out" / "checkpoints" / "mlp" / "family" / "seed-0", b"weights")
    shipped = _checkpoint(tmp_path / "out" / "checkpoint", b"weights")
    other = _checkpoint(tmp_path / "other" / "seed-0", b"other weights")
    name, digest = model_name(seed).split("@")
    assert name == "mlp/family/seed-0"  # 'seed-0' alone would not say which model it is
    assert model_name(shipped) == f"checkpoint@{digest}"  # the same files: the same hash
    # Elsewhere a seed-N directory is named alone: the directories above it are the machine's.
    assert model_name(other).split("@")[0] == "seed-0"
    assert model_name(other).split("@")[1] != digest
