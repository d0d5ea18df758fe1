"""Fixtures of the model-guided tuning tests: a small real cost model, trained once per session
on the session's demo dataset (``demo_dataset``: what ``make demo`` harvests; python -m train,
2 epochs: the tests check what the harvest and the plug-in do with a model's ranking, not how
good it is)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def guide_model(demo_dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkpoint directory (``OUT/checkpoint`` of ``python -m train``)."""
    import torch

    from train.cli import main

    root = tmp_path_factory.mktemp("guide-model")
    data = str(demo_dataset)
    threads = torch.get_num_threads()
    argv = ["--data", data, "--out", str(root / "out"), "--epochs", "2", "--seeds", "1",
            "--models", "gnn", "--split", "random", "--threads", "1",
            "--cache-dir", str(root / "cache")]  # fmt: skip
    try:
        assert main(argv) == 0
    finally:
        torch.set_num_threads(threads)
    return root / "out" / "checkpoint"


@pytest.fixture(scope="session")
def foreign_model(guide_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``guide_model`` as if trained on an sm_90 GPU only (its ``seen`` arches): a model that
    refuses to rank for this machine's device, the interpreter."""
    return _with_seen(guide_model, tmp_path_factory.mktemp("foreign-model"), arches=["sm_90"])


@pytest.fixture(scope="session")
def sm20_model(guide_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``guide_model`` as if it had read IR compiled for sm_20 (its ``seen`` IR targets), a
    target nothing compiles for: a model that accepts the target and then has nothing to rank."""
    return _with_seen(guide_model, tmp_path_factory.mktemp("sm20-model"), ir_targets=["sm_20"])


def _with_seen(model: Path, root: Path, **seen: list[str]) -> Path:
    """A copy of checkpoint ``model`` under ``root`` whose ``checkpoint.json`` records ``seen``."""
    import json
    import shutil

    from train.checkpoint import write_meta

    copy = root / "checkpoint"
    shutil.copytree(model, copy)
    meta = json.loads((copy / "checkpoint.json").read_text())
    meta["seen"].update(seen)
    write_meta(copy / "checkpoint.json", meta)  # as a training on that data writes it
    return copy
