"""Fixtures of the train tests: one tiny real harvest per session (interpreter, 4 families).

The harvest runs as a subprocess (train itself never imports corpus), from a scratch working
directory so the package it runs is the installed one.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from tests.conftest import harvest_tiny

# Small graph batches: one intra-op thread is several times faster on a shared 2-core runner.
torch.set_num_threads(1)

HARVEST_FAMILIES = ("add_broadcast", "softmax", "bias_gelu", "cumsum")
"""Four families (a family split needs train, val and test groups) that the interpreter runs
in seconds at the tiny scale."""


@pytest.fixture(scope="session")
def harvested(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Path of a dataset harvested once per session: tiny scale, <= 4 configs per run.

    ``KERNEL_CORPUS_TRAIN_TEST_DATASET`` may name an existing dataset harvested by this same
    command, to skip the harvest when iterating on the train tests locally."""
    prebuilt = os.environ.get("KERNEL_CORPUS_TRAIN_TEST_DATASET")
    if prebuilt:
        return prebuilt
    out = harvest_tiny(tmp_path_factory.mktemp("train-harvest") / "dataset", HARVEST_FAMILIES, 4)
    assert (Path(out) / "ir_nodes").is_dir(), "the harvest wrote no IR graphs"
    return str(out)


@pytest.fixture()
def cache_dir(tmp_path: Path) -> Path:
    """A private processed-data cache root."""
    return tmp_path / "cache"
