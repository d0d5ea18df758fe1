"""Fixtures of the train tests: one tiny real harvest per session, the one ``make demo`` makes
(interpreter, 5 families, <= 4 configs per run), shared with the README and notebook tests.

The harvest runs as a subprocess (train itself never imports corpus), from a scratch working
directory so the package it runs is the installed one.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

# Small graph batches: one intra-op thread is several times faster on a shared 2-core runner.
torch.set_num_threads(1)

@pytest.fixture(scope="session")
def harvested(request: pytest.FixtureRequest) -> str:
    """Path of the session's demo dataset (``demo_dataset`` in ``tests/conftest.py``): tiny
    scale, five families (a family split needs train, val and test groups), <= 4 configs per run.

    ``KERNEL_CORPUS_TRAIN_TEST_DATASET`` may name an existing dataset harvested by the same
    command (``make demo``'s), to skip the harvest when iterating on the train tests locally."""
    prebuilt = os.environ.get("KERNEL_CORPUS_TRAIN_TEST_DATASET")
    if prebuilt:
        return prebuilt
    out = request.getfixturevalue("demo_dataset")
    assert (Path(out) / "ir_nodes").is_dir(), "the harvest wrote no IR graphs"
    return str(out)


@pytest.fixture()
def cache_dir(tmp_path: Path) -> Path:
    """A private processed-data cache root."""
    return tmp_path / "cache"
