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
    import json
    import shutil

    model = tmp_path_factory.mktemp("foreign-model") / "checkpoint"
    shutil.copytree(guide_model, model)
    meta = json.loads((model / "checkpoint.json").read_text())
    meta["seen"]["arches"] = ["sm_90"]
    (model / "checkpoint.json").write_text(json.dumps(meta))
    return model
