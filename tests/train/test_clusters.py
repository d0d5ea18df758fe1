"""Families grouped by IR op sets (train.clusters) and the cluster / random splits."""

from __future__ import annotations

import math

import polars as pl
import pytest

from train.clusters import (
    cluster_families,
    family_op_sets,
    jaccard,
    nearest_training_similarity,
    op_weights,
)
from train.data import load_dataset
from train.splits import assign_splits

BASE = frozenset({"tt.func", "tt.load", "tt.store", "tt.make_range", "tt.get_program_id"})
OPS = {
    "softmax": BASE | {"tt.reduce", "math.exp", "arith.divf", "arith.maxnumf"},
    "log_softmax": BASE | {"tt.reduce", "math.exp", "math.log", "arith.maxnumf"},
    "matmul": BASE | {"tt.dot", "scf.for", "tt.advance"},
    "batched_matmul": BASE | {"tt.dot", "scf.for", "tt.advance", "arith.muli"},
    "add": frozenset({"tt.func", "tt.load", "tt.store", "arith.addf"}),
    "gelu": frozenset({"tt.func", "math.erf", "arith.mulf"}),
}


def test_near_twins_share_a_cluster_and_others_do_not():
    clusters = cluster_families(OPS)
    assert clusters["softmax"] == clusters["log_softmax"] == "log_softmax+softmax"
    assert clusters["matmul"] == clusters["batched_matmul"]
    assert clusters["softmax"] != clusters["matmul"]
    assert clusters["gelu"] == "gelu"
    # A tighter cut splits everything; a loose one joins everything.
    assert len(set(cluster_families(OPS, distance=0.01).values())) == len(OPS)
    assert len(set(cluster_families(OPS, distance=1.0).values())) == 1


def test_weighted_jaccard_ignores_ops_every_family_has():
    assert jaccard(OPS["softmax"], OPS["softmax"]) == 1.0
    assert jaccard(frozenset(), frozenset()) == 0.0
    assert jaccard(frozenset({"a", "b"}), frozenset({"b", "c"})) == pytest.approx(1 / 3)
    weights = op_weights(OPS)
    assert weights["tt.func"] == 0.0  # in all six families: says nothing
    assert weights["tt.dot"] == pytest.approx(math.log(6 / 2))
    # gelu and add share only tt.func: alike by plain Jaccard, unrelated once weighted.
    assert jaccard(OPS["gelu"], OPS["add"]) > 0 and jaccard(OPS["gelu"], OPS["add"], weights) == 0
    # softmax and log_softmax differ by one op each: sum of shared weights over the union's.
    shared = sum(weights[o] for o in OPS["softmax"] & OPS["log_softmax"])
    union = sum(weights[o] for o in OPS["softmax"] | OPS["log_softmax"])
    assert jaccard(OPS["softmax"], OPS["log_softmax"], weights) == pytest.approx(shared / union)
    near = nearest_training_similarity(["softmax", "gelu"], ["log_softmax", "add"], OPS)
    assert near == pytest.approx([shared / union, 0.0])


def _runs(families: list[str], dtypes=("float32", "float16")) -> pl.DataFrame:
    rows = [
        {"run_id": f"{f}-{s}-{d}", "family": f, "shape_name": f"s{s}", "dtype": d,
         "device_name": "dev", "arch": "sm_90"}
        for f in families for s in range(3) for d in dtypes
    ]  # fmt: skip
    return pl.DataFrame(rows)


def test_cluster_split_holds_out_whole_clusters():
    frame = _runs(list(OPS))
    clusters = cluster_families(OPS, distance=0.5)
    for seed in range(6):
        splits = assign_splits(frame, "cluster", seed, groups=clusters).join(frame, on="run_id")
        per_cluster = (
            splits.with_columns(pl.col("family").replace_strict(clusters).alias("cluster"))
            .group_by("cluster")
            .agg(pl.col("split").n_unique())
        )
        assert (per_cluster["split"] == 1).all()
    with pytest.raises(ValueError, match="cluster"):
        assign_splits(frame, "cluster", 0)


def test_random_split_keeps_the_dtypes_of_a_problem_together():
    frame = _runs(["a", "b", "c"])
    for seed in range(5):
        splits = assign_splits(frame, "random", seed).join(frame, on="run_id")
        per_problem = splits.group_by("family", "shape_name").agg(pl.col("split").n_unique())
        assert (per_problem["split"] == 1).all()
        assert splits["split"].n_unique() == 3


def test_op_sets_of_a_real_harvest(harvested, tmp_path):
    loaded = load_dataset(harvested, cache_dir=tmp_path)
    op_sets = family_op_sets(loaded.samples, loaded.graphs)
    assert set(op_sets) == set(loaded.samples["family"])
    # every kernel reads and writes global memory; pipelined loops (num_stages > 1) read it
    # with async copies at TTGIR instead of tt.load
    loads = {"tt.load", "ttg.async_copy_global_to_local", "tt.descriptor_load"}
    assert all(ops & loads and "tt.store" in ops for ops in op_sets.values())
    assert "tt.scan" in op_sets["cumsum"] and "tt.scan" not in op_sets["add_broadcast"]
