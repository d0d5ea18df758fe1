"""The one place train/ reads the environment."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "KERNEL_CORPUS_TRAIN_CACHE"
"""Overrides the processed-data cache directory."""


def cache_root() -> Path:
    """Processed-data cache root: ``$KERNEL_CORPUS_TRAIN_CACHE``, else
    ``$XDG_CACHE_HOME/kernel-corpus/train`` (``~/.cache`` when XDG_CACHE_HOME is unset)."""
    return cache_location(None)[0]


def cache_location(cache_dir: str | Path | None) -> tuple[Path, str]:
    """The processed-data cache root ``cache_dir`` (None: :func:`cache_root`'s) and what set
    it, for a message naming the option or variable a user would change."""
    if cache_dir is not None:
        return Path(cache_dir), "--cache-dir"
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit), f"${CACHE_ENV}"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kernel-corpus" / "train", "train's cache"


def distributed_world() -> tuple[int, int, int]:
    """(rank, local_rank, world_size) as set by ``torchrun``; (0, 0, 1) otherwise."""
    return (
        int(os.environ.get("RANK", "0")),
        int(os.environ.get("LOCAL_RANK", "0")),
        int(os.environ.get("WORLD_SIZE", "1")),
    )
