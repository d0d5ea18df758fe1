"""The experiment driver and ``python -m train`` (train.experiment, train.cli), and torchrun."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from train.cli import main, parse_args
from train.data import load_dataset
from train.experiment import ExperimentConfig, UsageError, check_config
from train.graphs import GraphFeaturizer
from train.splits import assign_splits, split_frame

ROOT = Path(__file__).resolve().parents[2]


def test_cli_writes_checkpoint_metrics_report_and_splits(harvested, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["--data", harvested, "--out", str(out), "--epochs", "2", "--seeds", "2",
            "--models", "gnn,mlp,random,analytic", "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "| gnn |" in printed and "| random |" in printed
    assert (out / "checkpoint" / "model.safetensors").exists()
    metrics = json.loads((out / "metrics.json").read_text())
    got = {(r["model"], r["partition"], r["seed"]) for r in metrics["results"]}
    assert got == {
        (m, p, s)
        for m in ("gnn", "mlp", "random", "analytic")
        for p in ("train", "val", "test")
        for s in (0, 1)
    }
    assert list(out.glob("*.png"))
    splits = pl.read_parquet(out / "splits.parquet")
    samples = load_dataset(harvested, cache_dir=tmp_path / "cache").samples
    for seed in (0, 1):
        chosen = splits.filter(pl.col("seed") == seed)
        # Every run in exactly one partition: no run straddles splits.
        assert chosen["run_id"].n_unique() == chosen.height == samples["run_id"].n_unique()
        joined = samples.join(chosen, on="run_id")
        assert (joined.group_by("run_id").agg(pl.col("split").n_unique())["split"] == 1).all()
        # A held-out family's kernels never appear in training.
        train_kernels = set(joined.filter(pl.col("split") == "train")["kernel_id"])
        held_out = set(joined.filter(pl.col("split") != "train")["kernel_id"])
        assert not train_kernels & held_out


def test_graph_featurizer_sees_training_graphs_only(harvested, tmp_path):
    loaded = load_dataset(harvested, cache_dir=tmp_path)
    splits = assign_splits(loaded.samples, "family", 0)
    train = split_frame(loaded.samples, splits, "train")
    test = split_frame(loaded.samples, splits, "test")
    indices = loaded.graph_indices(train)
    assert {loaded.graphs.ir_ids[i] for i in indices} == set(train["ir_id"].drop_nulls())
    assert not {loaded.graphs.ir_ids[i] for i in indices} & set(test["ir_id"].drop_nulls())
    featurizer = GraphFeaturizer.fit(loaded.graphs, indices)
    assert featurizer.vocabularies["op_name"]


def test_bad_options_are_refused_before_work(tmp_path, capsys):
    assert main(["--data", str(tmp_path / "nowhere"), "--out", str(tmp_path / "out")]) == 2
    assert "nowhere: no such dataset directory" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    with pytest.raises(UsageError, match="--models"):
        check_config(
            ExperimentConfig(data=str(tmp_path), out=str(tmp_path), models=("gnn", "xgboost"))
        )
    with pytest.raises(SystemExit):
        parse_args(["--data", "d", "--out", "o", "--split", "nonsense"])
    with pytest.raises(SystemExit):
        parse_args(["--data", "d", "--out", "o", "--models", "gnn,nope"])


@pytest.mark.skipif(
    shutil.which("torchrun") is None and not Path(sys.executable).with_name("torchrun").exists(),
    reason="no torchrun",
)
def test_torchrun_two_cpu_processes_train_and_write_one_checkpoint(harvested, tmp_path):
    out = tmp_path / "ddp"
    torchrun = str(Path(sys.executable).with_name("torchrun"))
    command = [torchrun, "--standalone", "--nproc_per_node", "2", "-m", "train", "--data", harvested,
               "--out", str(out), "--epochs", "2", "--seeds", "1", "--models", "gnn",
               "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(p.name for p in (out / "checkpoint").iterdir()) == [
        "checkpoint.json",
        "model.safetensors",
    ]
    assert len(list(out.rglob("model.safetensors"))) == 1
    metrics = json.loads((out / "metrics.json").read_text())
    assert {r["model"] for r in metrics["results"]} == {"gnn"}
