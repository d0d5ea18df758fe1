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

from schemas import SCHEMA_VERSION, DatasetWriter
from tests.train.synthetic import graph_rows, run_rows, write_dataset
from train.cli import main, parse_args
from train.data import load_dataset
from train.experiment import ExperimentConfig, UsageError, check_config
from train.graphs import GraphFeaturizer
from train.layout import seed_checkpoints
from train.splits import assign_splits, split_frame

ROOT = Path(__file__).resolve().parents[2]


def test_cli_writes_checkpoint_metrics_report_and_splits(harvested, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["--data", harvested, "--out", str(out), "--epochs", "2", "--seeds", "2",
            "--split", "family,cluster", "--models", "gnn,mlp,random,analytic", "--final",
            "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
    assert main(argv) == 0
    captured = capsys.readouterr()
    printed = captured.out
    assert "val tau nan" not in captured.err  # the final model has no validation runs to judge it
    # stderr is no terminal here, as in a Slurm log: a line per seed says how far it has come,
    # and no bar (drawn once at the end, it named the last model trained: "final gnn ━━━ 18/18")
    assert "family split seed 0: 4 models trained, 1/4 seeds done, 0:00:" in captured.err
    assert "cluster split seed 1: 4 models trained, 4/4 seeds done" in captured.err
    assert "━" not in captured.err and "18/18" not in captured.err, captured.err
    titles = [line for line in printed.splitlines() if "split, test runs:" in line]
    assert [t.split(",")[0] for t in titles] == ["family split"] * 2 + ["cluster split"] * 2
    assert any("each model minus analytic" in t or "each model minus random" in t for t in titles)
    models = {line.split()[0] for line in printed.splitlines() if line.strip()}
    assert {"gnn", "mlp", "random", "analytic"} <= models
    assert f"files in {out}/" in printed
    listed = {line.split()[0] for line in printed.split(f"files in {out}/")[1].splitlines() if line[:1].strip()}
    assert {"checkpoint/", "checkpoints/", "metrics.json", "splits.parquet"} <= listed
    assert (out / "checkpoint" / "model.safetensors").exists()
    metrics = json.loads((out / "metrics.json").read_text())
    got = {(r["split_kind"], r["model"], r["partition"], r["seed"]) for r in metrics["results"]}
    # The fixture's 4 families form 3 clusters (cumsum + softmax: both scan/reduce rows).
    assert got == {
        (k, m, p, s)
        for k in ("family", "cluster")
        for m in ("gnn", "mlp", "random", "analytic")
        for p in ("train", "val", "test")
        for s in (0, 1)
    }
    for kind in ("family", "cluster"):
        tau = metrics["summary"][kind]["test"]["gnn"]["kendall_tau"]
        assert tau["n"] == 2 and tau["low"] <= tau["mean"] <= tau["high"]
        assert metrics["paired"][kind]["test"]["models"]["gnn"]["kendall_tau"]["diff"]["n"] == 2
    assert set(metrics["meta"]["held_out_nearest_jaccard_median"]) == {"family", "cluster"}
    assert "cumsum+softmax" in metrics["meta"]["clusters"]
    assert list(out.glob("*.png"))
    # The shipped model saw every family and says what it saw.
    checkpoint = json.loads((out / "checkpoint" / "checkpoint.json").read_text())
    samples = load_dataset(harvested, cache_dir=tmp_path / "cache").samples
    assert checkpoint["extra"]["final"] is True and checkpoint["name"] in ("gnn", "mlp")
    assert checkpoint["seen"]["families"] == sorted(samples["family"].unique())
    assert checkpoint["seen"]["arches"] == ["interpreter"]
    assert checkpoint["seen"]["schema_version"] == SCHEMA_VERSION
    # Every evaluation model is kept, where train.layout says, recording its own split.
    saved = seed_checkpoints(out)
    assert [(c.model, c.kind, c.seed) for c in saved] == [
        (m, k, s) for m in ("gnn", "mlp") for k in ("cluster", "family") for s in (0, 1)
    ]
    for c in saved:
        extra = json.loads((c.path / "checkpoint.json").read_text())["extra"]
        assert (extra["split"], extra["seed"], extra["final"]) == (c.kind, c.seed, False)
    splits = pl.read_parquet(out / "splits.parquet")
    for (kind, seed), chosen in splits.group_by("kind", "seed"):
        # Every run in exactly one partition: no run straddles splits.
        assert chosen["run_id"].n_unique() == chosen.height == samples["run_id"].n_unique()
        joined = samples.join(chosen, on="run_id")
        # A held-out family's kernels never appear in training.
        train_kernels = set(joined.filter(pl.col("split") == "train")["kernel_id"])
        held_out = set(joined.filter(pl.col("split") != "train")["kernel_id"])
        assert not train_kernels & held_out, (kind, seed)


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
    # One process writes: the shipped model and seed 0's (the same model) once each.
    assert sorted(str(p.parent.relative_to(out)) for p in out.rglob("model.safetensors")) == [
        "checkpoint",
        "checkpoints/gnn/family/seed-0",
    ]
    metrics = json.loads((out / "metrics.json").read_text())
    assert {r["model"] for r in metrics["results"]} == {"gnn"}


def _all_failed(root: Path) -> str:
    writer = DatasetWriter(str(root))
    for index, family in enumerate(("fa", "fb", "fc")):
        rows = run_rows(family, (64, 256), index=index, n_configs=3, seed=0)
        for row in rows["measurements"]:
            row.update(status="compile_error", median_ms=None, p20_ms=None, p80_ms=None,
                       samples_ms=None)  # fmt: skip
        writer.write("ir_graphs", rows["ir_graphs"])
        for table, graph_table in zip(("ir_nodes", "ir_edges"), graph_rows(rows["ir_graphs"])):
            writer.write(table, graph_table)
        writer.write("measurements", rows["measurements"])
        writer.commit_run(rows["runs"])
    return str(root)


def _one_family_runs(root: Path) -> str:
    """Three families, of which only ``fa``'s configs ran: a family split that holds ``fa``
    out of training leaves nothing to learn an order from."""
    writer = DatasetWriter(str(root))
    for index, family in enumerate(("fa", "fb", "fc")):
        rows = run_rows(family, (64, 256), index=index, n_configs=3, seed=0)
        for row in rows["measurements"] if family != "fa" else []:
            row.update(status="compile_error", median_ms=None, p20_ms=None, p80_ms=None,
                       samples_ms=None)  # fmt: skip
        writer.write("ir_graphs", rows["ir_graphs"])
        for table, graph_table in zip(("ir_nodes", "ir_edges"), graph_rows(rows["ir_graphs"])):
            writer.write(table, graph_table)
        writer.write("measurements", rows["measurements"])
        writer.commit_run(rows["runs"])
    return str(root)


@pytest.mark.parametrize(
    ("case", "extra", "message"),
    [
        ("empty", [], "table directory 'runs' not found"),
        ("failed", [], "none of its 9 configs ran ok"),
        ("one_valid_family", ["--seeds", "3"], "training runs have no run with two configs that ran ok"),
        ("one_family", [], "--split family: split 'family' needs at least 2"),
        ("synthetic", ["--split", "device"], "--split device: split 'device' needs at least 2"),
        ("synthetic", ["--final", "--models", "tabular"], "--final trains a neural model"),
        # a repeated model or split kind was counted as more seeds, narrowing every interval
        ("synthetic", ["--models", "mlp,mlp,tabular"], "--models: mlp given twice"),
        ("synthetic", ["--split", "family,family"], "--split: family given twice"),
        ("synthetic", ["--device", "gpu"], "--device gpu: not a device torch can use here"),
    ],
)
def test_bad_datasets_and_options_are_one_line_errors(tmp_path, capsys, case, extra, message):
    data = tmp_path / "data"
    if case == "empty":
        data.mkdir()
    elif case == "failed":
        _all_failed(data)
    elif case == "one_valid_family":
        _one_family_runs(data)
    else:
        write_dataset(str(data), n_families=1 if case == "one_family" else 3)
    seeds = [] if "--seeds" in extra else ["--seeds", "1"]
    argv = ["--data", str(data), "--out", str(tmp_path / "out"), "--epochs", "1", *seeds,
            "--cache-dir", str(tmp_path / "cache"), *extra]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    "option",
    [["--hidden", "-4"], ["--lr", "nan"], ["--runs-per-batch", "0"], ["--seeds", "0"],
     ["--split", "family,planet"], ["--models", ""], ["--cluster-distance", "2"]],
)  # fmt: skip
def test_bad_numbers_are_refused_at_parse_time(tmp_path, capsys, option):
    with pytest.raises(SystemExit) as stop:
        parse_args(["--data", str(tmp_path), "--out", str(tmp_path / "o"), *option])
    assert stop.value.code == 2
    assert f"argument {option[0]}" in capsys.readouterr().err


def test_bad_out_is_refused_before_training(tmp_path, capsys):
    data = write_dataset(str(tmp_path / "data"), n_families=3).root
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    for out in (blocker, blocker / "sub"):
        argv = ["--data", data, "--out", str(out), "--seeds", "1", "--epochs", "1",
                "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert f"--out {out}" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "cache").exists()  # refused before the dataset was even loaded


def test_training_leaves_no_pyg_files_in_tmpdir(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    code = "from train.model import CostModel, ModelConfig; CostModel(ModelConfig((3,), 4, 5))"
    env = {**os.environ, "TMPDIR": str(scratch), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not list(scratch.glob("*propagate*")), list(scratch.iterdir())


def test_excluded_families_stay_out_of_the_shipped_model(tmp_path):
    data = write_dataset(str(tmp_path / "data"), n_families=4).root
    out = tmp_path / "out"
    argv = ["--data", data, "--out", str(out), "--seeds", "1", "--epochs", "2", "--models",
            "mlp", "--final", "--exclude-families", "fam0", "--cache-dir", str(tmp_path / "c")]  # fmt: skip
    assert main(argv) == 0
    seen = json.loads((out / "checkpoint" / "checkpoint.json").read_text())["seen"]
    assert seen["families"] == ["fam1", "fam2", "fam3"]
    splits = pl.read_parquet(out / "splits.parquet")
    assert splits.height == 6  # the 2 runs of each of the 3 families left


def test_a_rerun_into_the_same_out_keeps_no_model_of_the_earlier_run(tmp_path):
    """Per-seed models of an earlier command would pass for this one's (a replay would judge
    them on splits they were not trained on): a rerun replaces them all."""
    data = write_dataset(str(tmp_path / "data"), n_families=4).root
    out = tmp_path / "out"
    argv = ["--data", data, "--out", str(out), "--epochs", "1", "--models", "mlp",
            "--cache-dir", str(tmp_path / "c")]  # fmt: skip
    assert main([*argv, "--seeds", "2"]) == 0
    assert [c.seed for c in seed_checkpoints(out)] == [0, 1]
    assert main([*argv, "--seeds", "1"]) == 0
    assert [(c.model, c.kind, c.seed) for c in seed_checkpoints(out)] == [("mlp", "family", 0)]
    assert set(pl.read_parquet(out / "splits.parquet")["seed"]) == {0}
    assert (out / "checkpoint").is_dir()
    # baselines only: no model is trained, so none of the earlier run's may look shipped
    assert main([*argv[:-3], "tabular", *argv[-2:], "--seeds", "1"]) == 0
    assert not (out / "checkpoint").exists() and not seed_checkpoints(out)


def test_train_baselines_judges_lightgbm_as_python_m_train_does(harvested, tmp_path):
    """Same data, split and seed: python -m train.baselines and python -m train's LightGBM give
    the same figures (the former fitted on every twin of a binary; train collapses them)."""
    from train.baselines.__main__ import main as baselines_main

    out = tmp_path / "train"
    assert main(["--data", harvested, "--out", str(out), "--models", "tabular", "--seeds", "1",
                 "--cache-dir", str(tmp_path / "cache")]) == 0  # fmt: skip
    assert baselines_main(["--data", harvested, "--seeds", "1", "--models", "tabular",
                           "--out", str(tmp_path / "baselines")]) == 0  # fmt: skip

    def taus(path: Path) -> dict:
        results = json.loads((path / "metrics.json").read_text())["results"]
        return {
            r["partition"]: r["metrics"]["kendall_tau"]
            for r in results
            if r["model"] == "tabular" and r["partition"] in ("val", "test")
        }

    assert taus(tmp_path / "baselines") == taus(out)


def test_a_rerun_says_which_replays_it_deletes_before_training(tmp_path, capsys):
    """OUT/replay/ (python -m train.replay's results for the earlier models) went with the old
    output without a word: the rerun names what goes before any training."""
    data = write_dataset(str(tmp_path / "data"), n_families=4).root
    out = tmp_path / "out"
    argv = ["--data", data, "--out", str(out), "--epochs", "1", "--models", "mlp", "--seeds", "1",
            "--cache-dir", str(tmp_path / "c")]  # fmt: skip
    assert main(argv) == 0
    assert "train.replay" not in capsys.readouterr().err  # nothing to delete: nothing said
    for name in ("mlp-family", "mlp-family-val"):
        (out / "replay" / name).mkdir(parents=True)
        (out / "replay" / name / "replay.md").write_text("# Tuning replay\n")
    assert main(argv) == 0
    err = " ".join(capsys.readouterr().err.split())
    said = err.index("holds python -m train.replay results (replay/mlp-family, replay/mlp-family-val)")
    assert "deleted when it finishes" in err
    assert said < err.index("loaded ")  # before the training
    assert not (out / "replay").exists()


def test_a_splits_file_that_is_not_the_checkpoints_split_is_refused(harvested, tmp_path):
    """splits.parquet edited (a training run marked test), or another run's beside a copied
    checkpoint: train.replay took it as is and judged the model on runs it trained on. Each
    checkpoint records its split's digest, and finding its splits file checks it."""
    from train.layout import find_splits_file

    out = tmp_path / "out"
    argv = ["--data", harvested, "--out", str(out), "--epochs", "1", "--seeds", "1",
            "--models", "mlp", "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
    assert main(argv) == 0
    seed_dir = out / "checkpoints" / "mlp" / "family" / "seed-0"
    for checkpoint in (seed_dir, out / "checkpoint"):  # the shipped copy of seed 0 as well
        assert find_splits_file(checkpoint) == out / "splits.parquet"
    splits = pl.read_parquet(out / "splits.parquet")
    trained_on = splits.filter(pl.col("split") == "train")["run_id"][0]
    splits.with_columns(
        pl.when(pl.col("run_id") == trained_on).then(pl.lit("test")).otherwise(pl.col("split")).alias("split")
    ).write_parquet(out / "splits.parquet")
    for checkpoint in (seed_dir, out / "checkpoint"):
        with pytest.raises(ValueError, match=r"splits.parquet: its family split of seed 0 is not the one"):
            find_splits_file(checkpoint)


def test_refit_fits_every_model_again_on_train_and_val_and_judges_it_on_test(tmp_path, capsys):
    """--refit: the seed's models are fitted on its train runs (the neural one early-stopped on
    its val runs), judged on train and val, then fitted again on train + val and judged on
    test; the saved checkpoint is the refit one and says so."""
    from train.baselines.compare import evaluate_baselines
    from train.splits import val_into_train

    data = write_dataset(str(tmp_path / "data"), n_families=5).root
    out = tmp_path / "out"
    argv = ["--data", data, "--out", str(out), "--seeds", "1", "--epochs", "3", "--models",
            "mlp,tabular", "--refit", "--cache-dir", str(tmp_path / "c")]  # fmt: skip
    assert main(argv) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "models fitted again on train + val runs (--refit)" in printed  # a training fact
    splits = pl.read_parquet(out / "splits.parquet").filter(pl.col("kind") == "family")
    samples = load_dataset(data, cache_dir=tmp_path / "c").samples
    fitted = val_into_train(splits.select("run_id", "split"))
    fitted_families = sorted(split_frame(samples, fitted, "train")["family"].unique())
    assert len(fitted_families) > len(split_frame(samples, splits, "train")["family"].unique())
    (checkpoint,) = seed_checkpoints(out)
    meta = json.loads((checkpoint.path / "checkpoint.json").read_text())
    assert meta["seen"]["families"] == fitted_families  # the val families were trained on
    refit = meta["extra"]["refit"]
    assert refit["epochs"] == meta["extra"]["best_epoch"] >= 1
    assert refit["train_runs"] == split_frame(samples, fitted, "train")["run_id"].n_unique()
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["meta"]["refit"] is True
    got = {(r["model"], r["partition"]) for r in metrics["results"]}
    assert got == {(m, p) for m in ("mlp", "tabular") for p in ("train", "val", "test")}
    # LightGBM's test figure is that of its fit on train + val, its val figure its fit on train
    tabular = {r["partition"]: r["metrics"] for r in metrics["results"] if r["model"] == "tabular"}
    options = {"seed": 0, "split_kind": "family", "collapse": True}
    (refit_test,) = evaluate_baselines(["tabular"], samples, fitted, partitions=("test",), **options)
    (first_val,) = evaluate_baselines(["tabular"], samples, splits, partitions=("val",), **options)
    assert tabular["test"]["kendall_tau"] == refit_test.metrics["kendall_tau"]
    assert tabular["val"]["kendall_tau"] == first_val.metrics["kendall_tau"]
