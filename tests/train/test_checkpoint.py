"""Checkpoint round trip without pickle (train.checkpoint) and predict (train.predict)."""

from __future__ import annotations

import copy
import json
import pickle
import re
import shutil
import warnings

import numpy as np
import polars as pl
import pytest
import torch

from train.candidates import read_candidates_csv
from train.checkpoint import (
    CONTENT_DIGEST,
    META,
    WEIGHTS,
    load_checkpoint,
    save_checkpoint,
    write_meta,
)
from train.data import load_dataset, read_ir_tables
from train.experiment import ExperimentConfig, run_gnn
from train.features import TabularFeatures
from train.fit import TrainConfig, predict_samples
from train.guide import arch_refusal
from train.predict import (
    OUTPUT_COLUMNS,
    MissingInputsWarning,
    UnseenArchError,
    UnseenArchWarning,
    UnseenIrValuesWarning,
    main,
    rank_configs,
    rank_dataset,
    rank_ir_dir,
)
from train.splits import assign_splits, split_frame


@pytest.fixture(scope="module")
def trained(harvested, tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    loaded = load_dataset(harvested, cache_dir=cache)
    splits = assign_splits(loaded.samples, "family", 0)
    parts = {p: split_frame(loaded.samples, splits, p) for p in ("train", "val", "test")}
    config = ExperimentConfig(data=harvested, out="", train=TrainConfig(epochs=3))
    checkpoint, samples = run_gnn(config, 0, parts, TabularFeatures().fit(parts["train"]), loaded)
    directory = tmp_path_factory.mktemp("ckpt") / "checkpoint"
    save_checkpoint(directory, checkpoint)
    return checkpoint, samples, parts, directory


def test_round_trip_gives_identical_predictions(trained, monkeypatch):
    checkpoint, samples, _, directory = trained

    def no_pickle(*args, **kwargs):
        raise AssertionError("pickle used while loading a checkpoint")

    monkeypatch.setattr(pickle, "load", no_pickle)
    monkeypatch.setattr(pickle, "loads", no_pickle)
    monkeypatch.setattr(torch, "load", no_pickle)
    loaded = load_checkpoint(directory)
    for partition in ("test", "val"):
        before = predict_samples(checkpoint.model, samples[partition])
        after = predict_samples(loaded.model, samples[partition])
        assert np.array_equal(before.score, after.score)
        assert np.array_equal(before.latency_ms, after.latency_ms)
        assert np.array_equal(before.p_valid, after.p_valid)
    assert sorted(p.name for p in directory.iterdir()) == sorted([WEIGHTS, META])


def test_checkpoint_json_records_what_featurizing_needs(trained):
    _, _, _, directory = trained
    meta = json.loads((directory / META).read_text())
    for key in (
        "featurizer_version",
        "schema_version",
        "level",
        "model",
        "graph_featurizer",
        "tabular",
    ):
        assert key in meta, key
    assert meta["graph_featurizer"]["vocabularies"]["op_name"]
    assert meta["extra"]["split"] == "family"


def test_other_featurizer_version_is_refused(trained, tmp_path):
    _, _, _, directory = trained
    meta = json.loads((directory / META).read_text())
    meta["featurizer_version"] = 999
    write_meta(tmp_path / META, meta)  # as another code version writes it: its digest matches
    (tmp_path / WEIGHTS).write_bytes((directory / WEIGHTS).read_bytes())
    with pytest.raises(ValueError, match="featurizer version 999"):
        load_checkpoint(tmp_path)


def test_damaged_weights_are_refused_naming_the_file(trained, tmp_path):
    """A truncated copy of model.safetensors: a ValueError naming it (what --rank-with, the
    replay and the plug-in report in one line), not the safetensors library's own error."""
    _, _, _, directory = trained
    (tmp_path / META).write_text((directory / META).read_text())
    (tmp_path / WEIGHTS).write_bytes((directory / WEIGHTS).read_bytes()[:1000])
    with pytest.raises(ValueError, match=f"{WEIGHTS}: the weights do not load"):
        load_checkpoint(tmp_path)


def test_weights_of_another_checkpoint_are_refused(trained, tmp_path):
    """Another training's model.safetensors of the same shapes copied beside this
    checkpoint.json loaded without a word, and its scores went through this JSON's
    vocabularies and statistics: a silently wrong ranking."""
    checkpoint, _, _, directory = trained
    other = copy.deepcopy(checkpoint)
    with torch.no_grad():
        for parameter in other.model.parameters():
            parameter.add_(0.5)
    save_checkpoint(tmp_path / "other", other)
    (tmp_path / "mixed").mkdir()
    (tmp_path / "mixed" / META).write_text((directory / META).read_text())
    (tmp_path / "mixed" / WEIGHTS).write_bytes((tmp_path / "other" / WEIGHTS).read_bytes())
    with pytest.raises(ValueError, match=f"{WEIGHTS}: not the weights .*{META} was written with"):
        load_checkpoint(tmp_path / "mixed")
    # The other way round: another checkpoint's JSON (its statistics) beside these weights.
    (tmp_path / "mixed" / META).write_text((tmp_path / "other" / META).read_text())
    (tmp_path / "mixed" / WEIGHTS).write_bytes((directory / WEIGHTS).read_bytes())
    with pytest.raises(ValueError, match=f"{WEIGHTS}: not the weights .*{META} was written with"):
        load_checkpoint(tmp_path / "mixed")
    load_checkpoint(tmp_path / "other")  # its own pair loads


def test_a_checkpoint_json_without_a_weights_digest_still_loads(trained, tmp_path):
    """Checkpoints written before weights_sha256 was recorded are not refused for lacking it."""
    _, _, _, directory = trained
    meta = json.loads((directory / META).read_text())
    assert len(meta.pop("weights_sha256")) == 64
    assert len(meta.pop(CONTENT_DIGEST)) == 64  # written before either digest
    (tmp_path / META).write_text(json.dumps(meta))
    (tmp_path / WEIGHTS).write_bytes((directory / WEIGHTS).read_bytes())
    load_checkpoint(tmp_path)


def _edit_vocabulary(meta: dict) -> None:
    vocabulary = meta["graph_featurizer"]["vocabularies"]["op_name"]
    vocabulary[0], vocabulary[1] = vocabulary[1], vocabulary[0]  # same shapes: loads, ranks wrong


def _edit_statistic(meta: dict) -> None:
    meta["tabular"]["mean"][0] += 1.0  # a normalization statistic


@pytest.mark.parametrize(
    "edit",
    [_edit_vocabulary, _edit_statistic, lambda meta: meta["seen"].update(arches=["sm_90"]), "merge"],
    ids=["vocabulary", "statistic", "seen-arch", "merge"],
)
def test_an_edited_checkpoint_json_is_refused_naming_it(trained, tmp_path, edit):
    """A hand-edited vocabulary or statistic, or a JSON merged from two checkpoints', loaded
    without a word (its weights are the ones it was written with) and ranked silently wrong."""
    checkpoint, _, _, directory = trained
    meta = json.loads((directory / META).read_text())
    if edit == "merge":
        other = copy.deepcopy(checkpoint)
        other.tabular = TabularFeatures().fit(trained[2]["val"])  # another training's statistics
        save_checkpoint(tmp_path / "other", other)
        edited = json.loads((tmp_path / "other" / META).read_text())
        assert edited["tabular"] != meta["tabular"]
        meta["tabular"] = edited["tabular"]  # half of another checkpoint's JSON
    else:
        edit(meta)
    (tmp_path / META).write_text(json.dumps(meta, indent=1))
    (tmp_path / WEIGHTS).write_bytes((directory / WEIGHTS).read_bytes())
    with pytest.raises(ValueError) as refused:
        load_checkpoint(tmp_path)
    message = str(refused.value)
    assert message.startswith(f"{tmp_path / META}: its content is not what was written")
    assert "restore the file" in message and "retrain" in message


def test_an_equal_checkpoint_json_in_another_layout_still_loads(trained, tmp_path):
    """The digest is of the content, not the text: keys reordered and whitespace changed (a
    pretty-printer, an editor's reformat) still load, with the same featurizer state."""
    _, _, _, directory = trained
    text = (directory / META).read_text()
    meta = json.loads(text)

    def reversed_keys(node):
        if isinstance(node, dict):
            return {k: reversed_keys(node[k]) for k in reversed(list(node))}
        if isinstance(node, list):
            return [reversed_keys(v) for v in node]
        return node

    other = json.dumps(reversed_keys(meta), indent="\t", separators=(" ,", " : "))
    assert other != text and json.loads(other) == meta
    (tmp_path / META).write_text(other)
    (tmp_path / WEIGHTS).write_bytes((directory / WEIGHTS).read_bytes())
    loaded = load_checkpoint(tmp_path)
    assert loaded.graph_featurizer.to_dict() == load_checkpoint(directory).graph_featurizer.to_dict()


def test_write_meta_records_a_digest_of_the_content_it_wrote(trained, tmp_path):
    """What write_meta returns is what the file holds, and a stale digest passed in is replaced."""
    _, _, _, directory = trained
    meta = json.loads((directory / META).read_text())
    meta["extra"]["note"] = "rewritten"
    written = write_meta(tmp_path / META, meta)
    assert written == json.loads((tmp_path / META).read_text())
    assert written[CONTENT_DIGEST] != meta[CONTENT_DIGEST]
    (tmp_path / WEIGHTS).write_bytes((directory / WEIGHTS).read_bytes())
    assert load_checkpoint(tmp_path).extra["note"] == "rewritten"


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda meta: meta["model"].update(colour="red"), "not a checkpoint this code wrote (TypeError"),
        (lambda meta: meta.pop("tabular"), "not a checkpoint this code wrote (KeyError"),
        (lambda meta: meta.update(level="ttx"), "level 'ttx' is not an IR level"),
    ],
    ids=["unknown-model-key", "no-tabular", "bad-level"],
)
def test_a_damaged_checkpoint_json_is_a_value_error_naming_it(trained, tmp_path, damage, message):
    _, _, _, directory = trained
    meta = json.loads((directory / META).read_text())
    damage(meta)
    write_meta(tmp_path / META, meta)  # a consistent digest: the structural check is what refuses
    (tmp_path / WEIGHTS).write_bytes((directory / WEIGHTS).read_bytes())
    with pytest.raises(ValueError, match=re.escape(message)):
        load_checkpoint(tmp_path)


def test_rank_configs_from_ir_tables_matches_the_samples_path(trained, harvested):
    checkpoint, samples, parts, directory = trained
    test = parts["test"]
    nodes, edges = read_ir_tables(harvested, "ttgir")
    # Only the candidates' own graphs, and no outcome: no status, timing or target columns.
    wanted = set(test["ir_id"].drop_nulls())
    outcome = ["status", "median_ms", "p20_ms", "p80_ms", "std_ms", "n_reps", "valid", "run_best_ms",
               "log_latency", "norm_runtime", "same_binary_as", "compile_time_s"]  # fmt: skip
    candidates = test.drop(outcome)
    ranking = rank_configs(
        directory,
        candidates,
        nodes.filter(pl.col("ir_id").is_in(wanted)),
        edges.filter(pl.col("ir_id").is_in(wanted)),
    )
    assert ranking.columns[: len(OUTPUT_COLUMNS)] == list(OUTPUT_COLUMNS)
    assert ranking.height == test.height
    for run in ranking.partition_by("run_id"):
        assert sorted(run["rank"].to_list()) == list(range(1, run.height + 1))
        assert run.sort("rank")["score"].is_sorted()
    reference = predict_samples(checkpoint.model, samples["test"])
    # config_id repeats across runs (it hashes the config alone): key on (run_id, config_id).
    expected = dict(
        zip(zip(test["run_id"].to_list(), test["config_id"].to_list()), reference.score)
    )
    for key, score in zip(
        zip(ranking["run_id"].to_list(), ranking["config_id"].to_list()), ranking["score"].to_list()
    ):
        assert np.isclose(score, expected[key], rtol=1e-5, atol=1e-6)
    assert ranking["p_valid"].is_between(0, 1).all()


def test_rank_dataset_and_cli(trained, harvested, tmp_path, capsys):
    _, _, _, directory = trained
    ranking = rank_dataset(directory, harvested)
    assert ranking.height == load_dataset(harvested, use_cache=False).samples.height
    out = tmp_path / "ranking.parquet"
    assert (
        main(["--checkpoint", str(directory), "--data", harvested, "--out", str(out), "--top", "1"])
        == 0
    )
    assert pl.read_parquet(out).height == ranking.height
    printed = capsys.readouterr().out
    lines = printed.splitlines()
    # Runs under their family and shape, not their run_id; configs by their knobs.
    families = sorted(set(ranking["family"]))
    assert all(any(line.startswith(f"    {f} ") or f" {f} " in line for line in lines)
               for f in families)  # fmt: skip
    assert not any(run_id in printed for run_id in ranking["run_id"].unique())
    # the 80-column terminal may put the path on the line after "wrote" (a long temp path)
    assert "predicted ms" in printed and f"wrote {out}" in " ".join(printed.split())
    assert max(map(len, lines)) <= 80 and not any(line != line.rstrip() for line in lines)


def test_cli_refuses_a_missing_checkpoint(tmp_path):
    with pytest.raises(SystemExit):
        main(["--checkpoint", str(tmp_path), "--data", str(tmp_path)])


def test_cli_points_a_train_output_at_the_checkpoint_it_ships(trained, tmp_path, capsys):
    _, _, _, directory = trained
    with pytest.raises(SystemExit):
        main(["--checkpoint", str(directory.parent), "--data", str(tmp_path)])
    assert f"give --checkpoint {directory} " in capsys.readouterr().err


@pytest.mark.parametrize(
    ("option", "candidates"),
    [("--ir", None), ("--ir", "cands.csv"), ("--data", None)],
    ids=["ir", "ir-with-candidates", "data"],
)
def test_cli_names_an_input_directory_that_does_not_exist(trained, tmp_path, capsys, option, candidates):
    """It used to say that dataset tables need a candidates file (--ir), or that the table
    'runs' was missing (--data)."""
    _, _, _, directory = trained
    missing = tmp_path / "no-such-dir"
    argv = ["--checkpoint", str(directory), option, str(missing)]
    if candidates:
        (tmp_path / candidates).write_text("ir_id\nx\n")
        argv += ["--candidates", str(tmp_path / candidates)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {option} {missing}: no such directory"]


@pytest.mark.parametrize(("name", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_cli_stopped_while_ranking_says_so_in_one_line(trained, harvested, capsys, name, code):
    """Ctrl-C used to end the ranking with a KeyboardInterrupt traceback, SIGTERM without a
    word. The first forward pass of the model sends the signal."""
    import os
    import signal

    _, _, _, directory = trained

    def hook(module: torch.nn.Module, args: object, output: object) -> None:
        handle.remove()
        os.kill(os.getpid(), signal.Signals[name])

    handle = torch.nn.modules.module.register_module_forward_hook(hook)
    try:
        assert main(["--checkpoint", str(directory), "--data", harvested]) == code
    except KeyboardInterrupt:
        pytest.fail("the signal escaped python -m train.predict's main as a traceback")
    finally:
        handle.remove()
    what = "interrupted" if name == "SIGINT" else f"stopped by {name}"
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"{what}: the ranking was not finished"


def test_cli_refuses_an_arch_a_dataset_would_ignore(trained, tmp_path, capsys):
    _, _, _, directory = trained
    with pytest.raises(SystemExit):
        main(["--checkpoint", str(directory), "--data", str(tmp_path), "--arch", "sm_90"])
    assert "--arch is for --candidates/--ir" in capsys.readouterr().err


def test_cli_refuses_an_out_it_could_not_write_before_ranking(trained, harvested, tmp_path, capsys):
    _, _, _, directory = trained
    (tmp_path / "afile").write_text("not a directory")
    with pytest.raises(SystemExit) as exit_:
        main(["--checkpoint", str(directory), "--data", harvested, "--out", str(tmp_path / "afile" / "r.parquet")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "its directory" in err and "exists and is not a directory" in err and "Traceback" not in err
    # a missing directory is made, as python -m train makes its --out
    assert main(["--checkpoint", str(directory), "--data", harvested, "--out", str(tmp_path / "new" / "r.csv")]) == 0
    assert (tmp_path / "new" / "r.csv").is_file()


def test_cli_ranks_a_candidates_file_against_ir_tables(trained, harvested, tmp_path):
    _, _, parts, directory = trained
    outcome = ["status", "median_ms", "p20_ms", "p80_ms", "valid", "log_latency", "norm_runtime"]
    candidates = tmp_path / "candidates.parquet"
    parts["test"].drop(outcome).write_parquet(candidates)
    out = tmp_path / "ranking.csv"
    argv = [
        "--checkpoint",
        str(directory),
        "--candidates",
        str(candidates),
        "--ir",
        harvested,
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    ranking = pl.read_csv(out)
    assert ranking.height == parts["test"].height
    assert (
        ranking.group_by("run_id").agg(pl.col("rank").min())["rank"].to_list()
        == [1] * ranking["run_id"].n_unique()
    )


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """``python -m extract compile --all-configs`` output (extract's own CLI, in process): a
    two-config autotuned kernel compiled for sm_90, one directory per config."""
    from extract.__main__ import main as extract_main

    out = tmp_path_factory.mktemp("compiled") / "scale"
    argv = ["compile", "tests.extract.kernels.byok.ops:scale_kernel", "--signature",
            "*fp32,*fp32,fp32,i32", "--all-configs", "--out", str(out)]  # fmt: skip
    assert extract_main(argv) == 0
    return out


def test_unseen_arch_is_refused_or_warned(trained, harvested):
    checkpoint, _, parts, directory = trained
    nodes, edges = read_ir_tables(harvested, "ttgir")
    test = parts["test"].drop("status", "median_ms", "valid")
    assert checkpoint.seen["arches"] == ["interpreter"]
    gpu = test.with_columns(pl.lit("sm_90").alias("arch"))
    with pytest.raises(UnseenArchError, match="trained on interpreter only; candidates are for"):
        rank_configs(directory, gpu, nodes, edges)
    with pytest.warns(UnseenArchWarning, match="sm_90"):
        ranking = rank_configs(directory, gpu, nodes, edges, allow_unseen_arch=True)
    assert ranking.height == test.height
    # No arch at all: the checkpoint's only one, said aloud; or the one given, silently.
    with pytest.warns(UnseenArchWarning, match="name no arch"):
        rank_configs(directory, test.drop("arch"), nodes, edges)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnseenArchWarning)
        rank_configs(directory, test.drop("arch"), nodes, edges, arch="interpreter")


def test_ir_compiled_for_another_target_is_refused_or_warned(trained, harvested):
    checkpoint, _, parts, directory = trained
    nodes, edges = read_ir_tables(harvested, "ttgir")
    test = parts["test"].drop("status", "median_ms", "valid")
    assert checkpoint.seen["ir_targets"] == ["sm_90"] and set(test["ir_target"]) == {"sm_90"}
    ampere = test.with_columns(pl.lit("sm_80").alias("ir_target"))
    with pytest.raises(UnseenArchError, match="read IR compiled for sm_90 only; the candidates' IR is compiled for sm_80"):
        rank_configs(directory, ampere, nodes, edges)
    with pytest.warns(UnseenArchWarning, match="sm_80"):
        assert rank_configs(directory, ampere, nodes, edges, allow_unseen_arch=True).height == test.height
    assert arch_refusal(checkpoint, "interpreter", "sm_80") == "the model read IR compiled for sm_90 only, not for sm_80"
    assert arch_refusal(checkpoint, "interpreter", "sm_90") is None
    assert arch_refusal(checkpoint, "interpreter") is None
    with warnings.catch_warnings():  # unknown target: not checked
        warnings.simplefilter("error", UnseenArchWarning)
        rank_configs(directory, test.drop("ir_target"), nodes, edges)


def test_missing_inputs_are_named_in_a_warning(trained, harvested):
    _, _, parts, directory = trained
    nodes, edges = read_ir_tables(harvested, "ttgir")
    test = parts["test"]
    with pytest.warns(MissingInputsWarning) as caught:
        rank_configs(directory, test.drop("num_programs", "grid", "n_regs"), nodes, edges)
    message = str(caught[0].message)
    assert "grid" in message and "num_programs" in message and "n_regs" in message
    assert "num_warps" not in message
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingInputsWarning)
        rank_configs(directory, test, nodes, edges)


def test_a_long_missing_inputs_warning_says_what_to_do_first_and_names_a_few(trained, harvested):
    """Candidates lacking most inputs got one line naming every one of them after the
    sentence: now the first line says what and what to do, the next names eight and counts
    the rest, saying where they are all listed."""
    _, _, parts, directory = trained
    nodes, edges = read_ir_tables(harvested, "ttgir")
    test = parts["test"]
    known = json.loads((directory / META).read_text())["seen"]["input_columns"]
    dropped = [c for c in known if c in test.columns and c not in ("run_id", "ir_id", "arch", "status")]
    assert len(dropped) > 10
    with pytest.warns(MissingInputsWarning) as caught:
        rank_configs(directory, test.drop(dropped), nodes, edges)
    (message,) = [str(w.message) for w in caught if "input(s) the model was trained with" in str(w.message)]
    first, *details = message.splitlines()
    assert len(first) <= 120 and first.endswith("(add them to the candidates)"), first
    assert details == [
        f"  {', '.join(dropped[:8])} and {len(dropped) - 8} more (checkpoint.json's seen.input_columns lists them all)"
    ]



def test_a_run_lacking_an_input_every_training_run_had_is_named_in_a_warning(trained, harvested):
    """The warning judged the whole frame: a dataset or candidates file where only some runs
    lack flops and bytes counts (a recorded workload's kernels beside the suite's) ranked those
    runs without them, on inputs the model never saw missing, and nothing said so."""
    _, _, parts, directory = trained
    seen = json.loads((directory / META).read_text())["seen"]
    assert {"flops", "bytes_moved"} <= set(seen["inputs_of_every_run"])
    assert "ir_id" not in seen["inputs_of_every_run"]
    nodes, edges = read_ir_tables(harvested, "ttgir")
    test = parts["test"]
    one = test["run_id"][0]
    unknown = pl.col("run_id") == one
    partial = test.with_columns(
        pl.when(unknown).then(None).otherwise(pl.col(c)).alias(c) for c in ("flops", "bytes_moved")
    )
    runs = test["run_id"].n_unique()
    with pytest.warns(MissingInputsWarning) as caught:
        rank_configs(directory, partial, nodes, edges)
    (message,) = [str(w.message) for w in caught if w.category is MissingInputsWarning]
    assert f"flops (1 of {runs} runs)" in message and f"bytes_moved (1 of {runs} runs)" in message
    # Lacking in every run: the frame-wide warning says it, once.
    with pytest.warns(MissingInputsWarning) as caught:
        rank_configs(directory, test.drop("flops"), nodes, edges)
    assert [str(w.message).count("flops") for w in caught if w.category is MissingInputsWarning] == [1]


def test_candidates_without_their_graph_are_named_in_a_warning(trained, harvested):
    """The gap: corpus.record's rows of configs it never benchmarked have no IR; ranked beside
    configs with a graph, on side features alone, they took places of no meaning (rank 1 of
    32 for a ttir model on liger's fused MLP), and nothing said so. A config that did not
    compile has no graph by nature: no warning for it."""
    _, _, parts, directory = trained
    nodes, edges = read_ir_tables(harvested, "ttgir")
    test = parts["test"]
    first = test["config_id"][0]
    unbenchmarked = test.with_columns(
        pl.when(pl.col("config_id") == first).then(None).otherwise(pl.col("ir_id")).alias("ir_id")
    )
    with pytest.warns(MissingInputsWarning, match=r"candidates have no ttgir graph"):
        rank_configs(directory, unbenchmarked, nodes, edges)
    failed = unbenchmarked.with_columns(
        pl.when(pl.col("config_id") == first).then(pl.lit("compile_error")).otherwise(pl.col("status")).alias("status")
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingInputsWarning)
        rank_configs(directory, failed, nodes, edges)


def _renamed_op(nodes: pl.DataFrame, old: str, new: str) -> pl.DataFrame:
    """A copy of a real ``ir_nodes`` frame where op ``old`` is called ``new`` (a newer Triton's
    op, as a model trained before it sees it)."""
    renamed = pl.when(pl.col("op_name") == old).then(pl.lit(new)).otherwise(pl.col("op_name"))
    return nodes.with_columns(renamed.alias("op_name"))


def _unseen_ir_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, UnseenIrValuesWarning)]


def test_ir_values_the_model_never_saw_are_named_in_one_warning(trained, harvested):
    """Ops the training data never had (a new Triton's, another backend's) went to the
    out-of-vocabulary bucket silently: a ranking of graphs partly unreadable to the model,
    with no hint. Only the graphs the candidates reference count, not the whole IR table."""
    _, _, parts, directory = trained
    nodes, edges = read_ir_tables(harvested, "ttgir")
    train = parts["train"]
    with warnings.catch_warnings():  # the training data itself: every value was seen
        warnings.simplefilter("error", UnseenIrValuesWarning)
        rank_configs(directory, train, nodes, edges)
    # tt.load encloses no region: renaming it leaves every parent_op as it was.
    future = _renamed_op(nodes, "tt.load", "tt.future_load")
    referenced = nodes.filter(pl.col("ir_id").is_in(train["ir_id"].unique().to_list()))
    loads = referenced.filter(pl.col("op_name") == "tt.load")
    graphs = referenced["ir_id"].n_unique()
    assert 0 < loads.height < nodes.filter(pl.col("op_name") == "tt.load").height
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ranking = rank_configs(directory, train, future, edges)
    assert ranking.height == train.height
    (message,) = _unseen_ir_warnings(caught)
    assert message.splitlines()[1:] == [
        f"  op_name: {loads.height} of {referenced.height} nodes in "
        f"{loads['ir_id'].n_unique()} of {graphs} graphs (tt.future_load)"
    ], message


def test_an_unseen_ir_warning_says_what_to_do_first_and_names_three_values_per_column(trained, harvested):
    """Every op renamed: op_name and parent_op (the op of each node's enclosing region op)
    both unseen. The warning was one ~400-character line; now its first line says what and
    what to do, and a line per column lists its first three values in sorted order and counts
    the rest."""
    _, _, parts, directory = trained
    nodes, edges = read_ir_tables(harvested, "ttgir")
    train = parts["train"]
    referenced = nodes.filter(pl.col("ir_id").is_in(train["ir_id"].unique().to_list()))
    ops = sorted(f"new.{op}" for op in referenced["op_name"].unique())
    assert len(ops) > 5
    renamed = nodes.with_columns(("new." + pl.col("op_name")).alias("op_name"))
    with pytest.warns(UnseenIrValuesWarning) as caught:
        rank_configs(directory, train, renamed, edges)
    (message,) = _unseen_ir_warnings(caught)
    graphs = referenced["ir_id"].n_unique()
    first, *details = message.splitlines()
    assert first == (
        "the candidates' IR holds values the model never saw in training: its ranking of those "
        "graphs degrades (train it on runs that hold them to rank them fully)"
    )
    assert details[0] == (
        f"  op_name: {referenced.height} of {referenced.height} nodes in {graphs} of {graphs} "
        f"graphs ({', '.join(ops[:3])} and {len(ops) - 3} more)"
    )
    assert [line.split(":")[0] for line in details] == ["  op_name", "  parent_op"]
    assert all(len(line) <= 120 for line in details), details


def test_input_warnings_go_to_the_callers_sink_and_others_are_raised(trained, harvested):
    """on_input_warning: a caller ranking from several threads (the budgeted harvest's lanes)
    takes the missing-inputs and unseen-IR warnings without warnings.catch_warnings, whose
    filters are process-wide, and the unseen arch it allowed (the harvest said so once, before
    any work; raised, it was a Python warning per process amid the progress display); a
    candidate naming no arch is still warned as before."""
    _, _, parts, directory = trained
    nodes, edges = read_ir_tables(harvested, "ttgir")
    gpu = parts["train"].drop("flops").with_columns(pl.lit("sm_90").alias("arch"))
    future = _renamed_op(nodes, "tt.load", "tt.future_load")
    told: list[UserWarning] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rank_configs(directory, gpu, future, edges, allow_unseen_arch=True, on_input_warning=told.append)
    assert {type(w) for w in told} == {MissingInputsWarning, UnseenIrValuesWarning, UnseenArchWarning}
    assert any("tt.future_load" in str(w) for w in told) and any("flops" in str(w) for w in told)
    assert any("candidates are for sm_90" in str(w) for w in told if isinstance(w, UnseenArchWarning))
    assert not {w.category for w in caught} & {MissingInputsWarning, UnseenIrValuesWarning, UnseenArchWarning}
    nameless = gpu.drop("arch").head(2)  # the checkpoint saw one arch: ranked for it, warned
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rank_configs(directory, nameless, nodes, edges, on_input_warning=told.append)
    assert any(w.category is UnseenArchWarning and "name no arch" in str(w.message) for w in caught)


def test_cli_shows_the_unseen_ir_warning(trained, compiled, tmp_path, capsys):
    """python -m train.predict prints it as it prints the missing-inputs warning."""
    _, _, _, directory = trained
    argv = ["--checkpoint", str(directory), "--arch", "interpreter"]
    assert main([*argv, "--ir", str(compiled)]) == 0
    assert "never saw in training" not in capsys.readouterr().err
    future = tmp_path / "future"
    shutil.copytree(compiled, future)
    for graph in future.glob("config_*/*.ttgir.graph.json"):
        graph.write_text(graph.read_text().replace('"op_name":"tt.load"', '"op_name":"tt.future_load"'))
    assert main([*argv, "--ir", str(future)]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "warning: the candidates' IR holds values the model never saw in training" in err
    assert "op_name: 2 of " in err and "in 2 of 2 graphs (tt.future_load)" in err


def test_ranking_puts_predicted_failures_last(trained, harvested):
    checkpoint, _, parts, _ = trained
    nodes, edges = read_ir_tables(harvested, "ttgir")
    test = parts["test"]
    model = copy.deepcopy(checkpoint)
    # A validity head that predicts failure exactly for the configs scored fastest in each run.
    base = rank_configs(model, test, nodes, edges)
    threshold = float(base["score"].median())
    with torch.no_grad():
        model.model.heads.weight[2] = -model.model.heads.weight[0]
        model.model.heads.bias[2] = threshold - model.model.heads.bias[0]
    ranking = rank_configs(model, test, nodes, edges)
    assert (ranking["p_valid"] < 0.5).any() and (ranking["p_valid"] >= 0.5).any()
    for run in ranking.partition_by("run_id"):
        ok = (run.sort("rank")["p_valid"] >= 0.5).to_list()
        assert ok == sorted(ok, reverse=True)  # every predicted-ok config before the others
        for part in (run.filter(pl.col("p_valid") >= 0.5), run.filter(pl.col("p_valid") < 0.5)):
            assert part.sort("rank")["score"].is_sorted()


def test_rank_extract_compile_output(trained, compiled, tmp_path, capsys):
    _, _, _, directory = trained
    ranking = rank_ir_dir(directory, None, str(compiled), arch="interpreter")
    assert sorted(ranking["config_id"]) == ["config_00", "config_01"]
    assert sorted(ranking["rank"]) == [1, 2]
    facts = {row["config_id"]: row for row in ranking.iter_rows(named=True)}
    # The compile outputs' own facts become features: warps from stats.json, graph counts.
    assert facts["config_00"]["num_warps"] == 2 and facts["config_01"]["num_warps"] == 4
    assert facts["config_00"]["ir_num_nodes"] > 0 and facts["config_00"]["ir_target"] == "sm_90"
    # A candidates file joins its knobs on ir_dir; unknown directories are refused.
    candidates = tmp_path / "cands.csv"
    pl.DataFrame(
        {"ir_dir": ["config_00", "config_01"], "num_programs": [64, 32], "dtype": ["float32"] * 2}
    ).write_csv(candidates)
    out = tmp_path / "ranking.parquet"
    argv = ["--checkpoint", str(directory), "--candidates", str(candidates), "--ir", str(compiled),
            "--arch", "interpreter", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    written = pl.read_parquet(out)
    assert written.height == 2 and set(written["num_programs"]) == {64, 32}
    assert "warning: candidates lack" in capsys.readouterr().err
    pl.DataFrame({"ir_dir": ["config_07"]}).write_csv(candidates)
    assert main([*argv[:-2]]) == 2
    assert "config_07" in capsys.readouterr().err
    # The graph was compiled for sm_90: ranking it as an sm_90 config is refused (never seen).
    assert main(["--checkpoint", str(directory), "--ir", str(compiled), "--arch", "sm_90"]) == 2
    err = capsys.readouterr().err
    assert "candidates are for sm_90" in err and len(err.strip().splitlines()) == 1


def test_a_candidates_csv_carries_list_columns_as_json_text(trained, compiled, tmp_path, capsys):
    _, _, _, directory = trained
    candidates = tmp_path / "cands.csv"
    candidates.write_text(
        "ir_dir,run_id,grid,config_params,num_programs\n"
        'config_00,007,"[64, 1, 1]","[{""name"": ""BLOCK"", ""value"": 256}]",64\n'
        'config_01,007,"[32, 1, 1]","[{""name"": ""BLOCK"", ""value"": 512}]",32\n'
    )
    out = tmp_path / "ranking.csv"
    argv = ["--checkpoint", str(directory), "--ir", str(compiled), "--arch", "interpreter"]
    assert main([*argv, "--candidates", str(candidates), "--out", str(out)]) == 0
    ranking = read_candidates_csv(out)  # the ranking's CSV reads back as candidates, lists included
    assert ranking["run_id"].to_list() == ["007", "007"]  # text stays text: no int, no lost zeros
    assert sorted(ranking["grid"].to_list()) == [[32, 1, 1], [64, 1, 1]]
    assert {row[0]["value"] for row in ranking["config_params"]} == {256, 512}
    # A list cell that is no JSON list: one line naming the column, no traceback.
    candidates.write_text("ir_dir,grid\nconfig_00,64x1x1\nconfig_01,32x1x1\n")
    capsys.readouterr()
    assert main([*argv, "--candidates", str(candidates)]) == 2
    err = capsys.readouterr().err
    assert "candidates column grid" in err and "'64x1x1'" in err and "Traceback" not in err
