"""``python -m train.replay`` end to end on a tiny real harvest and a 2-seed model trained on
two split kinds: every strategy on every held-out run of both seeds, the held-out runs are the
test runs of each checkpoint's own split kind and seed (from splits.parquet, or drawn again the
same way without it), outputs written, bad options refused with one line naming what exists."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tests.terminal import as_terminal, unstyled
from train.checkpoint import write_meta
from train.cli import main as train_main
from train.predict import MissingInputsWarning, UnseenArchWarning, UnseenIrValuesWarning
from train.replay.app import Selection, _warn_unless_unseen_ir, default_out, other_data_problem
from train.replay.cli import main
from train.replay.strategies import STRATEGIES
from train.replay.summary import FRACTIONS
from train.splits import split_digest
from train.tables import load_samples, ranked_runs


@pytest.fixture(scope="module")
def trained(harvested: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("replay-model")
    argv = ["--data", harvested, "--out", str(out), "--epochs", "2", "--seeds", "2",
            "--split", "family,cluster", "--models", "gnn", "--cache-dir", str(out / "cache")]  # fmt: skip
    assert train_main(argv) == 0
    return out


def _test_runs(trained: Path, kind: str, seed: int, partition: str = "test") -> set[str]:
    splits = pl.read_parquet(trained / "splits.parquet")
    chosen = splits.filter((pl.col("kind") == kind) & (pl.col("seed") == seed) & (pl.col("split") == partition))
    return set(chosen["run_id"])


def test_replay_writes_every_strategy_for_every_seed(harvested, trained, tmp_path, capsys):
    out = tmp_path / "replay"
    assert main(["--data", harvested, "--model", str(trained), "--out", str(out), "--repeats", "2"]) == 0
    printed = capsys.readouterr().out
    for name in STRATEGIES:
        assert f"| {name} |" in printed
    assert "model `gnn`, split `family`" in printed  # the defaults: the shipped model, the first kind
    # a handful of held-out runs per seed: the ± intervals come with python -m train's warning
    held_out = {seed: len(_test_runs(trained, "family", seed)) for seed in (0, 1)}
    assert max(held_out.values()) < 10
    (few,) = [line for line in printed.splitlines() if "too few" in line]
    assert few.startswith("Note: ") and "test runs per seed, 2 seeds: too few for these numbers to tell strategies apart" in few
    runs = pl.read_parquet(out / "runs.parquet")
    assert sorted(runs["seed"].unique()) == [0, 1]  # checkpoints/gnn/family/seed-0 and seed-1
    for seed in (0, 1):
        replayed = set(runs.filter(pl.col("seed") == seed)["run_id"])
        assert replayed and replayed <= _test_runs(trained, "family", seed)  # held-out runs only
        counts = runs.filter(pl.col("seed") == seed).group_by("strategy").len()
        assert counts["len"].n_unique() == 1  # every strategy on every run
    regret = runs.select([f"regret_at_{f:g}" for f in FRACTIONS]).to_numpy()
    assert np.all(np.diff(regret, axis=1) <= 1e-12) and np.all(regret >= 0)
    not_auto = runs.filter(pl.col("strategy") != "auto")
    assert (not_auto["configs_to_0"] <= not_auto["n_configs"]).all()
    summary = json.loads((out / "replay.json").read_text())
    assert set(summary["strategies"]) == set(STRATEGIES)
    assert summary["strategies"]["random"]["vs_random"]["mean"] == pytest.approx(1.0)
    assert (out / "regret.png").stat().st_size > 0


def test_a_terminal_gets_tables_that_fit_and_a_pipe_gets_replay_md(harvested, trained, tmp_path, capsys, monkeypatch):
    """On a terminal the replay printed replay.md's Markdown, whose strategy table has a dozen
    columns on ~150 characters; now tables cut to the terminal's width, the strategy named in
    each. Piped (a log, grep), stdout is replay.md as written."""
    argv = ["--data", harvested, "--model", str(trained), "--strategies", "random,model,hedged"]
    assert main([*argv, "--out", str(tmp_path / "piped")]) == 0
    assert capsys.readouterr().out == (tmp_path / "piped" / "replay.md").read_text() + "\n"
    as_terminal(monkeypatch, 80)
    assert main([*argv, "--out", str(tmp_path / "shown")]) == 0
    lines = unstyled(capsys.readouterr().out)
    assert max(map(len, lines)) <= 80 and all(line == line.rstrip() for line in lines)
    assert not any(line.startswith("|") or "`" in line for line in lines)
    strategy_headers = [line for line in lines if line.startswith("strategy ")]
    assert len(strategy_headers) >= 2  # the strategy table in two or more groups of columns
    assert "configs to <= 2%" in " ".join(strategy_headers) and "regret @ 20%" in " ".join(strategy_headers)
    for name in ("random", "model", "hedged"):  # a row in each group
        assert sum(line.startswith(f"{name} ") for line in lines) >= len(strategy_headers)
    assert "| random |" in (tmp_path / "shown" / "replay.md").read_text()  # the file is Markdown still


def test_each_split_kind_replays_its_own_checkpoints_and_held_out_runs(harvested, trained, capsys):
    strategies = ["--strategies", "random,model"]
    assert main(["--data", harvested, "--model", str(trained), "--split", "cluster", *strategies]) == 0
    assert "split `cluster`" in capsys.readouterr().out
    runs = pl.read_parquet(trained / "replay" / "gnn-cluster" / "runs.parquet")  # the default --out
    for seed in (0, 1):
        replayed = set(runs.filter(pl.col("seed") == seed)["run_id"])
        assert replayed == _test_runs(trained, "cluster", seed) & set(ranked_runs(load_samples(harvested)))


def test_the_val_partition_replays_the_val_runs_into_a_directory_of_its_own(harvested, trained, capsys):
    """Settings of a tuner are chosen on val runs (--partition val), so the test figures they
    are judged by were never looked at; the report does not overwrite the test replay's."""
    assert main(["--data", harvested, "--model", str(trained), "--partition", "val", "--strategies", "random,ei"]) == 0
    assert "held-out val runs" in capsys.readouterr().out
    runs = pl.read_parquet(trained / "replay" / "gnn-family-val" / "runs.parquet")
    rankable = set(ranked_runs(load_samples(harvested)))
    for seed in (0, 1):
        replayed = set(runs.filter(pl.col("seed") == seed)["run_id"])
        assert replayed and replayed == _test_runs(trained, "family", seed, "val") & rankable
        assert not replayed & _test_runs(trained, "family", seed)
    summary = json.loads((trained / "replay" / "gnn-family-val" / "replay.json").read_text())
    assert summary["meta"]["partition"] == "val"


@pytest.mark.parametrize("kind", ["family", "cluster"])
def test_a_checkpoint_without_its_splits_file_redraws_the_same_split(harvested, trained, tmp_path, kind, capsys):
    """A seed's checkpoint copied away from its output (no splits.parquet above it) replays
    the same held-out runs: the split is drawn again as python -m train drew it (the cluster
    split from the dataset's graphs at the recorded distance)."""
    model = tmp_path / "seed-1"
    shutil.copytree(trained / "checkpoints" / "gnn" / kind / "seed-1", model)
    out = tmp_path / "replay"
    argv = ["--data", harvested, "--model", str(model), "--out", str(out), "--strategies", "random"]
    assert main(argv) == 0
    assert "drawn again" in capsys.readouterr().out
    runs = pl.read_parquet(out / "runs.parquet")
    expected = _test_runs(trained, kind, 1) & set(ranked_runs(load_samples(harvested)))
    assert set(runs["run_id"]) == expected and set(runs["seed"]) == {1}


def test_a_splits_file_of_other_data_is_named_when_the_split_is_redrawn(harvested, trained, tmp_path, capsys):
    """A checkpoint whose output's splits.parquet names none of --data's runs (a model trained
    on another dataset): the note says so, rather than that no splits file is there."""
    model = tmp_path / "other" / "checkpoints" / "gnn" / "family" / "seed-1"
    shutil.copytree(trained / "checkpoints" / "gnn" / "family" / "seed-1", model)
    splits = pl.read_parquet(trained / "splits.parquet")
    splits.with_columns(pl.lit("run-of-other-data").alias("run_id")).write_parquet(tmp_path / "other" / "splits.parquet")
    _trained_on(tmp_path / "other" / "splits.parquet", model)
    argv = ["--data", harvested, "--model", str(model), "--out", str(tmp_path / "r"), "--strategies", "random"]
    main(argv)
    printed = " ".join(capsys.readouterr().out.split())
    assert "splits.parquet names no run of --data for this seed (a model trained on other data)" in printed


def test_runs_the_stored_split_does_not_know_and_a_seed_with_none_held_out_are_named(
    harvested, trained, tmp_path, capsys
):
    """--data with runs the training never saw (in no partition of splits.parquet) left them out
    without a word, and a seed whose held-out runs --data lacks was said to have "no held-out
    run with two valid configs"."""
    model = _copy_output(trained, tmp_path / "other")
    splits = pl.read_parquet(model / "splits.parquet")
    lost = (pl.col("kind") == "family") & (pl.col("seed") == 0) & (pl.col("split") == "test")
    gone = sorted(set(splits.filter(lost)["run_id"]))  # as if trained on data without them
    splits.with_columns(pl.when(lost).then(pl.lit("run-of-other-data")).otherwise(pl.col("run_id")).alias("run_id")).write_parquet(
        model / "splits.parquet"
    )
    _trained_on(model / "splits.parquet", model)
    argv = ["--data", harvested, "--model", str(model), "--out", str(tmp_path / "r"), "--strategies", "random"]
    assert main(argv) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert f"seed 0: {len(gone)} run(s) of --data" in printed and "are in none of its partitions" in printed
    assert "seed 0: no held-out run to replay (--data holds none of the test runs of its split)" in printed
    assert "seed 1: " not in printed  # its split knows every run
    assert "seeds 0, 1 (1 of the 2 contributed runs, seed(s) 0 none to replay;" in printed  # the header


def test_a_redrawn_split_never_judges_families_the_model_trained_on(harvested, trained, tmp_path, capsys):
    """A checkpoint replayed on data its split cannot be found for: the split drawn again may
    hold out families the model trained on (another dataset's model); their runs are left out,
    said in the note, and when nothing else is held out the replay refuses."""
    model = tmp_path / "seed-1"
    shutil.copytree(trained / "checkpoints" / "gnn" / "family" / "seed-1", model)
    samples = load_samples(harvested)
    held_out = sorted(set(samples.filter(pl.col("run_id").is_in(_test_runs(trained, "family", 1)))["family"]))
    meta = json.loads((model / "checkpoint.json").read_text())
    meta["seen"]["families"] = sorted({*meta["seen"]["families"], held_out[0]})  # as if trained on it
    write_meta(model / "checkpoint.json", meta)
    argv = ["--data", harvested, "--model", str(model), "--out", str(tmp_path / "r"), "--strategies", "random"]
    if len(held_out) > 1:
        assert main(argv) == 0
        assert f"families the model trained on are left out ({held_out[0]})" in capsys.readouterr().out
        replayed = pl.read_parquet(tmp_path / "r" / "runs.parquet")["run_id"]
        assert not samples.filter(pl.col("run_id").is_in(replayed) & (pl.col("family") == held_out[0])).height
    meta["seen"]["families"] = sorted({*meta["seen"]["families"], *held_out})
    write_meta(model / "checkpoint.json", meta)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "no held-out run to replay" in err and "families the model trained on are left out" in err


def test_random_is_replayed_whatever_strategies_are_asked_for(harvested, trained, tmp_path, capsys):
    """--strategies model,auto left the goal's column, "vs random", empty ("-") and the per-seed
    ratios out: random, what it divides by, was not replayed."""
    out = tmp_path / "r"
    assert main(["--data", harvested, "--model", str(trained), "--out", str(out), "--strategies", "model,auto"]) == 0
    assert "| random |" in capsys.readouterr().out
    summary = json.loads((out / "replay.json").read_text())
    assert summary["strategies"]["model"]["vs_random"]["mean"] is not None


def test_bad_options_are_refused_with_one_line(harvested, trained, tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("not a directory")
    for argv, message in (
        (["--model", str(tmp_path)], "no checkpoint.json"),
        # a directory inside the output: the output itself is what the replay takes
        (["--model", str(trained / "checkpoints" / "gnn")], f"give --model {trained}, the python -m train output"),
        (["--model", str(trained), "--strategies", "random,psychic"], "unknown psychic"),
        (["--model", str(trained), "--repeats", "0"], "--repeats: expected an integer >= 1"),
        (["--model", str(trained), "--split", "shape"], "gnn has family, cluster only"),
        (["--model", str(trained), "--model-name", "mlp"], "checkpoints has gnn"),
        (["--model", str(trained / "checkpoint"), "--split", "cluster"], "trained on the family split"),
        (["--model", str(trained), "--partition", "train"], "invalid choice: 'train'"),
        (["--model", str(trained), "--ei-lengthscale", "0"], "--ei-lengthscale"),
        (["--model", str(trained), "--strategies", "model,random,model"], "model given twice"),
        (["--model", str(trained), "--harvests", "all"], "invalid choice: 'all'"),
        (["--model", str(trained), "--out", str(afile / "replay")], "cannot write there (Not a directory)"),
        (["--model", str(trained), "--out", str(afile)], "exists and is not a directory"),
        # the replay's files used to land in the dataset, or in the train output, whose rerun
        # then refused to replace it
        (["--model", str(trained), "--out", harvested], "is the dataset --data"),
        (["--model", str(trained), "--out", str(trained)], f"goes to {trained / 'replay' / 'gnn-family'}"),
        # ordered by the latencies it is judged by, "remeasured" always found the best at once
        (["--model", str(trained), "--remeasured", harvested + "/"], "is --data itself"),
    ):
        with pytest.raises(SystemExit) as exit_:
            main(["--data", harvested, *argv])
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err


def _trained_on(splits_file: Path, checkpoints: Path) -> None:
    """Make every checkpoint under ``checkpoints`` record the split of its kind and seed that
    ``splits_file`` holds (``extra.split_digest``): as if trained on the runs the file names
    (another dataset's), so the file is that training's own, not an edited one (refused)."""
    splits = pl.read_parquet(splits_file)
    for meta_path in checkpoints.rglob("checkpoint.json"):
        meta = json.loads(meta_path.read_text())
        extra = meta["extra"]
        chosen = splits.filter((pl.col("kind") == extra["split"]) & (pl.col("seed") == extra["seed"]))
        extra["split_digest"] = split_digest(chosen)
        write_meta(meta_path, meta)


def _copy_output(trained: Path, target: Path) -> Path:
    """The python -m train output ``trained`` copied to ``target`` (without its data cache and
    replays), to break."""
    shutil.copytree(trained, target, ignore=shutil.ignore_patterns("cache", "replay"))
    return target


@pytest.mark.parametrize("lost", ["model.safetensors", "checkpoint.json"])
def test_an_incomplete_seed_checkpoint_is_refused_before_the_replay_starts(harvested, trained, tmp_path, lost, capsys):
    """A seed directory without its weights used to end the replay in a FileNotFoundError
    traceback after it had started; one without its checkpoint.json was left out without a
    word, and the means were over the other seeds."""
    model = _copy_output(trained, tmp_path / "broken")
    (model / "checkpoints" / "gnn" / "family" / "seed-1" / lost).unlink()
    with pytest.raises(SystemExit) as exit_:
        main(["--data", harvested, "--model", str(model), "--out", str(tmp_path / "r"), "--strategies", "random"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"seed-1 holds no {lost} (an incomplete checkpoint)" in err
    assert "Traceback" not in err and "replaying" not in err  # refused before any work


@pytest.mark.parametrize("damage", ["truncated", "edited"])
@pytest.mark.parametrize("where", ["seed", "single"])
def test_a_damaged_checkpoint_json_is_named(harvested, trained, tmp_path, where, damage, capsys):
    """A truncated checkpoint.json ended the replay with json's bare "Expecting value: line 1
    column 1 (char 0)", naming no file (a seed's, after the replay had started); an edited one
    (a normalization statistic changed by hand) is refused as well, before any work."""
    model = _copy_output(trained, tmp_path / "damaged")
    meta = model / "checkpoints" / "gnn" / "family" / "seed-1" / "checkpoint.json"
    argv = ["--data", harvested, "--model", str(model), "--out", str(tmp_path / "r"), "--strategies", "random"]
    if where == "single":
        meta = model / "checkpoint" / "checkpoint.json"
        argv[3] = str(meta.parent)
    if damage == "truncated":
        meta.write_text(meta.read_text()[:10])
    else:
        content = json.loads(meta.read_text())
        content["tabular"]["mean"][0] += 1.0
        meta.write_text(json.dumps(content, indent=1))
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    said = "not valid JSON" if damage == "truncated" else "its content is not what was written"
    assert f"{meta}: {said}" in err and "Traceback" not in err and "replaying" not in err


def test_a_seed_removed_from_the_output_is_named_in_the_report(harvested, trained, tmp_path, capsys):
    """splits.parquet lists seeds 0 and 1; with seed 0's checkpoint removed, the figures are
    over seed 1 alone, and the replay says so instead of passing them off as the training's."""
    model = _copy_output(trained, tmp_path / "one-seed")
    shutil.rmtree(model / "checkpoints" / "gnn" / "family" / "seed-0")
    out = tmp_path / "r"
    assert main(["--data", harvested, "--model", str(model), "--out", str(out), "--strategies", "random"]) == 0
    captured = capsys.readouterr()
    assert "seed(s) 0 of the family split have no gnn checkpoint" in captured.err
    assert "the figures are over seed(s) 1 only" in " ".join(captured.out.split())
    assert set(pl.read_parquet(out / "runs.parquet")["seed"]) == {1}


def test_a_model_refuses_runs_of_an_arch_it_never_saw(harvested, trained, tmp_path, capsys):
    model = tmp_path / "sm90"
    shutil.copytree(trained / "checkpoint", model)
    meta = json.loads((model / "checkpoint.json").read_text())
    meta["seen"]["arches"] = ["sm_90"]
    write_meta(model / "checkpoint.json", meta)
    argv = ["--data", harvested, "--model", str(model), "--out", str(tmp_path / "r"), "--strategies", "model"]
    assert main(argv) == 2
    assert "trained on sm_90 only" in capsys.readouterr().err
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        assert main([*argv, "--allow-unseen-arch"]) == 0
    kinds = {type(w.message) for w in told}
    assert UnseenArchWarning in kinds  # allowed, but said
    assert UnseenIrValuesWarning not in kinds  # what a held-out family is expected to hold


def test_the_replay_passes_on_every_ranking_warning_but_unseen_ir_values():
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        for warning in (UnseenIrValuesWarning("ops"), MissingInputsWarning("flops"), UnseenArchWarning("sm_90")):
            _warn_unless_unseen_ir(warning)
    assert [type(w.message) for w in told] == [MissingInputsWarning, UnseenArchWarning]


def test_a_model_without_a_split_replays_every_run_without_lightgbm(harvested, trained, tmp_path, capsys):
    """A checkpoint that records no split (a model trained on everything) holds nothing out:
    every rankable run is replayed, LightGBM (nothing to fit it on) is left out, the report
    says so."""
    model = tmp_path / "final"
    shutil.copytree(trained / "checkpoint", model)
    meta = json.loads((model / "checkpoint.json").read_text())
    del meta["extra"]["split"]
    write_meta(model / "checkpoint.json", meta)
    out = tmp_path / "replay"
    argv = ["--data", harvested, "--model", str(model), "--out", str(out),
            "--strategies", "random,tabular,analytic,model"]  # fmt: skip
    assert main(argv) == 0
    assert "records no split" in capsys.readouterr().out
    runs = pl.read_parquet(out / "runs.parquet")
    assert set(runs["strategy"]) == {"random", "analytic", "model"}
    assert runs["run_id"].n_unique() == len(ranked_runs(load_samples(harvested)))


def test_the_val_runs_of_a_model_without_a_split_are_refused(harvested, trained, tmp_path, capsys):
    """A model trained on every run has no validation runs: --partition val used to replay
    every run and call them "held-out val runs" in the report."""
    model = tmp_path / "final"
    shutil.copytree(trained / "checkpoint", model)
    meta = json.loads((model / "checkpoint.json").read_text())
    del meta["extra"]["split"]
    write_meta(model / "checkpoint.json", meta)
    with pytest.raises(SystemExit) as exit_:
        main(["--data", harvested, "--model", str(model), "--partition", "val", "--out", str(tmp_path / "r")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--partition val: the checkpoint" in err and "has no val runs" in err
    assert not (tmp_path / "r" / "replay.md").exists()


def _copy_without_run(source: str, target: Path, run_id: str) -> None:
    """A dataset holding every table of ``source`` but the rows of one run (written by the
    dataset writer, committing the runs rows last)."""
    from schemas import DatasetWriter, read_table

    writer = DatasetWriter(str(target))
    for table in ("kernels", "ir_graphs", "ir_nodes", "ir_edges", "measurements", "runs"):
        rows = read_table(source, table)
        if "run_id" in rows.column_names:
            rows = pl.from_arrow(rows).filter(pl.col("run_id") != run_id).to_arrow()
        if table == "runs":
            writer.commit_run(rows)
        else:
            writer.write(table, rows)


def test_remeasured_orders_by_another_measurement_of_the_runs(harvested, trained, tmp_path, capsys):
    """--remeasured DIR: the strategy ``remeasured`` ranks by DIR's latencies. With --data's own
    measurements (a copy: --data itself is refused) it is an oracle (the best config first: zero regret at budget 1), and held-out
    runs DIR lacks are left out of every strategy, with a note."""
    out = tmp_path / "oracle"
    argv = ["--data", harvested, "--model", str(trained), "--split", "cluster", "--strategies", "random,model"]
    same = tmp_path / "same"  # --data itself is refused as --remeasured: a copy of it is the oracle
    shutil.copytree(harvested, same)
    assert main([*argv, "--remeasured", str(same), "--out", str(out)]) == 0
    runs = pl.read_parquet(out / "runs.parquet")
    oracle = runs.filter(pl.col("strategy") == "remeasured")
    assert oracle.height == runs.filter(pl.col("strategy") == "random").height > 0
    assert (oracle["configs_to_0"] == 1.0).all() and (oracle["regret_at_0.01"] == 0.0).all()

    dropped = sorted(runs["run_id"].unique())[0]
    partial = tmp_path / "partial"
    _copy_without_run(harvested, partial, dropped)
    assert main([*argv, "--remeasured", str(partial), "--out", str(tmp_path / "partial-replay")]) == 0
    assert "1 held-out run(s) not remeasured" in capsys.readouterr().out
    replayed = pl.read_parquet(tmp_path / "partial-replay" / "runs.parquet")
    assert dropped not in set(replayed["run_id"]) and replayed["run_id"].n_unique() == runs["run_id"].n_unique() - 1

    with pytest.raises(SystemExit):
        main([*argv[:-1], "random,remeasured"])  # the strategy without a second measurement
    assert "needs --remeasured DIR" in capsys.readouterr().err


def _copy_as_budgeted(source: str, target: Path) -> None:
    """A dataset holding every table of ``source``, every non-default config ``skipped`` as a
    ``--budget`` harvest that benchmarked only the default writes it (no timing)."""
    from schemas import DatasetWriter, read_table

    timing = ["max_abs_error", "median_ms", "mean_ms", "min_ms", "max_ms", "p20_ms", "p80_ms",
              "std_ms", "n_reps", "samples_ms", "same_binary_as", "launch_verified"]  # fmt: skip
    writer = DatasetWriter(str(target))
    for table in ("kernels", "ir_graphs", "ir_nodes", "ir_edges", "measurements", "runs"):
        rows = read_table(source, table)
        if table == "measurements":
            frame = pl.from_arrow(rows)
            skipped = ~pl.col("is_default")
            rows = frame.with_columns(
                pl.when(skipped).then(pl.lit("skipped")).otherwise(pl.col("status")).alias("status"),
                pl.when(skipped).then(pl.lit("not benchmarked under --budget 1")).otherwise(pl.col("error")).alias("error"),
                *[pl.when(skipped).then(None).otherwise(pl.col(c)).alias(c) for c in timing],
            ).to_arrow().cast(rows.schema)
        if table == "runs":
            writer.commit_run(rows)
        else:
            writer.write(table, rows)


def test_a_budgeted_harvest_with_no_fully_measured_run_says_so(harvested, trained, tmp_path, capsys):
    """Every run of a --budget harvest holds skipped configs: the replay has no ground truth
    and says what to do, in one line (it used to complain that the family split found 0
    family groups)."""
    budgeted = tmp_path / "budgeted"
    _copy_as_budgeted(harvested, budgeted)
    assert main(["--data", str(budgeted), "--model", str(trained), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "no fully measured run to replay" in err and "skipped" in err
    assert "without --budget" in err and "split" not in err


@pytest.fixture()
def signal_at_first_forward():
    """Arm: the first forward pass of any torch module (the model scoring a run) sends the
    given signal to this process."""
    import os

    import torch

    handles = []

    def arm(number: int) -> None:
        def hook(module: torch.nn.Module, args: object, output: object) -> None:
            handles[0].remove()
            os.kill(os.getpid(), number)

        handles.append(torch.nn.modules.module.register_module_forward_hook(hook))

    yield arm
    for handle in handles:
        handle.remove()


@pytest.mark.parametrize(("name", "code"), [("SIGINT", 130), ("SIGTERM", 143), ("SIGHUP", 129)])
def test_a_stopped_replay_says_so_in_one_line(
    harvested, trained, tmp_path, capsys, signal_at_first_forward, hangup_as_in_a_terminal, name, code
):
    """Ctrl-C used to end the replay with a KeyboardInterrupt traceback, SIGTERM and SIGHUP
    without a word."""
    import signal

    out = tmp_path / "r"
    signal_at_first_forward(signal.Signals[name])
    try:
        assert main(["--data", harvested, "--model", str(trained), "--out", str(out), "--strategies", "model"]) == code
    except KeyboardInterrupt:
        pytest.fail("the signal escaped python -m train.replay's main as a traceback")
    what = "interrupted" if name == "SIGINT" else f"stopped by {name}"
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"{what}: nothing written"
    assert not (out / "replay.md").exists()



@pytest.mark.parametrize(("name", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_replay_stopped_while_it_imports_says_so_in_one_line(harvested, trained, tmp_path, name, code):
    """Ctrl-C in the seconds python -m train.replay spends importing torch printed a
    KeyboardInterrupt traceback (the package imported everything before __main__ ran), and
    SIGTERM killed it without a word. A process of its own: the imports are the point. The
    signal goes once torch's compiled core is imported (-X importtime), with most of torch
    still to import."""
    import os
    import signal
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[3]
    command = [sys.executable, "-X", "importtime", "-m", "train.replay", "--data", harvested,
               "--model", str(trained), "--out", str(tmp_path / "r")]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(repo)}
    process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, cwd=repo, env=env)
    assert process.stderr is not None
    lines = []
    for line in process.stderr:
        lines.append(line)
        if line.startswith("import time:") and line.split("|")[-1].strip() == "torch._C":
            process.send_signal(signal.Signals[name])
            break
    _, rest = process.communicate(timeout=120)
    err = [line for line in (*lines, *rest.splitlines(keepends=True)) if not line.startswith("import time:")]
    assert process.returncode == code, "".join(err)[-3000:]
    what = "interrupted" if name == "SIGINT" else f"stopped by {name}"
    assert [line.strip() for line in err] == [f"{what}: nothing written"]
    assert not (tmp_path / "r" / "replay.md").exists()


def test_without_a_shipped_checkpoint_the_default_model_is_the_first_of_gnn_gnn_plain_mlp(tmp_path):
    """--model-name's default, as its help says: the model checkpoint/ ships, else the first of
    gnn, gnn-plain, mlp the output holds (whatever order --models gave)."""
    from train.replay.app import _default_name

    assert _default_name(tmp_path, ["mlp", "gnn-plain"]) == "gnn-plain"
    assert _default_name(tmp_path, ["mlp", "gnn"]) == "gnn"


def test_a_replay_of_other_data_never_replaces_the_default_one(harvested, trained, tmp_path, capsys):
    """The default --out names the model, not the data: replaying the model on another dataset
    used to replace the replay of its own data without a word. Now that is refused before any
    work, naming the folder and the data it holds; an --out of its own keeps both; the same
    data (however its path is spelt) replaces its own replay, as any rerun does."""
    model = _copy_output(trained, tmp_path / "model")
    other = tmp_path / "other-data"
    shutil.copytree(harvested, other)  # the same runs elsewhere: another dataset to the replay
    quick = ["--model", str(model), "--strategies", "random,model"]
    assert main(["--data", harvested, *quick]) == 0
    default = model / "replay" / "gnn-family"
    before = (default / "replay.json").read_bytes()
    assert json.loads(before)["meta"]["data_location"] == str(Path(harvested).resolve())
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["--data", str(other), *quick])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"{default} (the default --out) holds the replay of another dataset ({Path(harvested).resolve()})" in err
    assert "give --out DIR to keep both" in err and "Traceback" not in err
    assert (default / "replay.json").read_bytes() == before  # untouched
    assert main(["--data", str(other), *quick, "--out", str(tmp_path / "on-other")]) == 0
    kept = json.loads((tmp_path / "on-other" / "replay.json").read_text())
    assert kept["meta"]["data_location"] == str(other.resolve())
    (default / "replay.md").write_text("stale")
    assert main(["--data", harvested.rstrip("/") + "/", *quick]) == 0  # a rerun on its own data
    assert (default / "replay.md").read_text() != "stale"


def test_a_default_out_whose_replay_json_cannot_tell_its_data_is_kept(tmp_path: Path) -> None:
    """A replay.json of an older version (``data`` as given, no ``data_location``) is judged by
    that path; one that names no dataset, or is no JSON, is kept rather than guessed about."""
    out, data = tmp_path / "gnn-family", tmp_path / "data"
    out.mkdir()
    data.mkdir()
    assert other_data_problem(out, str(data)) is None  # nothing there to lose
    for text, problem in (
        (json.dumps({"meta": {"data": str(data)}}), None),
        (json.dumps({"meta": {"data": str(tmp_path / "elsewhere")}}), "holds the replay of another dataset"),
        (json.dumps({"meta": {}}), "does not say which dataset"),
        ("{not json", "does not say which dataset"),
    ):
        (out / "replay.json").write_text(text)
        said = other_data_problem(out, str(data))
        assert (said is None) if problem is None else (problem in str(said) and str(out) in str(said))


def test_default_out_keeps_the_partitions_and_the_remeasured_reports_apart(tmp_path: Path) -> None:
    """A --remeasured replay covers the remeasured runs only: by default it used to write over
    the report of the whole partition that the same command without it had written."""
    selection = Selection("gnn", "cluster", ())
    outs = {
        default_out(tmp_path, selection),
        default_out(tmp_path, selection, "val"),
        default_out(tmp_path, selection, remeasured="rep20"),
        default_out(tmp_path, selection, "val", remeasured="rep20"),
    }
    assert {p.name for p in outs} == {"gnn-cluster", "gnn-cluster-val", "gnn-cluster-remeasured", "gnn-cluster-val-remeasured"}


def test_a_refit_model_replays_its_test_runs_with_baselines_fitted_as_it_was(harvested, tmp_path, capsys):
    """A --refit checkpoint trained on its val runs: its replay fits LightGBM on train + val
    like the model, says it was refit, and --partition val (its own training runs) is refused."""
    from train.replay.app import ReplayConfig, partitions, seed_models, select_checkpoints

    trained = tmp_path / "refit"
    argv = ["--data", harvested, "--out", str(trained), "--epochs", "2", "--seeds", "1",
            "--models", "gnn", "--refit", "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
    assert train_main(argv) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["--data", harvested, "--model", str(trained), "--partition", "val"])
    assert exit_.value.code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "--partition val:" in err and "was refit on its val runs (python -m train --refit)" in err
    config = ReplayConfig(data=harvested, model=str(trained))
    (seed_model,) = seed_models(select_checkpoints(trained, None, None))
    samples = load_samples(harvested)
    fitted, held, _ = partitions(config, samples, seed_model, "ttgir")
    assert set(fitted["run_id"]) == _test_runs(trained, "family", 0, "train") | _test_runs(trained, "family", 0, "val")
    assert set(held["run_id"]) == _test_runs(trained, "family", 0)
    assert main(["--data", harvested, "--model", str(trained), "--strategies", "tabular,model"]) == 0
    assert "model `gnn` (refit on train + val runs)" in (trained / "replay" / "gnn-family" / "replay.md").read_text()


def test_a_bracketed_model_path_is_named_as_it_is(tmp_path, capsys):
    """Brackets in a path are text (rich, which the other commands print through, read "[x]"
    as a style and "[/b]" as a closing tag): the refusal names the directory as given."""
    model = tmp_path / "runs[x][/b]"
    model.mkdir(parents=True)
    with pytest.raises(SystemExit) as stop:
        main(["--data", str(tmp_path), "--model", str(model)])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("python -m train.replay: error: ") and f"--model {model}: no checkpoint.json" in err, err
