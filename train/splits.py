"""Train / validation / test splits that keep runs whole and hold out whole groups.

A group is what a split holds out:

- ``family``: a kernel family (the model never sees the held-out kernels' families);
- ``cluster``: a group of families whose IR is built from similar operations
  (:mod:`train.clusters`), so no near-twin of a held-out kernel stays in training: the honest
  "unseen kernel" split;
- ``shape``: a problem (family + shape name, every dtype and device of it);
- ``device``: a device (name, or arch when unnamed);
- ``random``: a family + shape on one device, every dtype of it together (the float16 run of
  a problem never lands in training while its float32 twin is judged). On a single-device
  dataset it coincides with ``shape``.

Every configuration of a run lands in the same split, so no measurement of a held-out run
leaks into training.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

import numpy as np
import polars as pl

SPLIT_KINDS = ("family", "cluster", "shape", "device", "random")
PARTITIONS = ("train", "val", "test")


def _group_key(kind: str, groups: Mapping[str, str] | None = None) -> pl.Expr:
    if kind == "family":
        return pl.col("family")
    if kind == "cluster":
        if groups is None:
            raise ValueError("the cluster split needs the family -> cluster mapping (groups=)")
        return pl.col("family").replace_strict(dict(groups), default=None, return_dtype=pl.String)
    problem = pl.concat_str(pl.col("family"), pl.col("shape_name").fill_null(""), separator="/")
    if kind == "shape":
        return problem
    device = pl.coalesce(pl.col("device_name"), pl.col("arch"))
    if kind == "device":
        return device
    return pl.concat_str(problem, device.fill_null(""), separator="@")


def _partition_sizes(
    n_groups: int, val_fraction: float, test_fraction: float, kind: str
) -> tuple[int, int]:
    """Groups given to (val, test): at least one each when its fraction is positive, and at
    least one group always left for training."""
    n_test = max(1, round(test_fraction * n_groups)) if test_fraction > 0 else 0
    n_val = max(1, round(val_fraction * n_groups)) if val_fraction > 0 else 0
    if n_groups - n_test - n_val < 1 and n_val > 0 and n_groups - n_test >= 1:
        n_val = max(0, n_groups - n_test - 1)
    if n_groups - n_test - n_val < 1:
        raise ValueError(
            f"split {kind!r} needs at least {n_test + 1} distinct {kind} groups (to hold "
            f"{n_test} out and train on the rest); the data has {n_groups}"
        )
    return n_val, n_test


def assign_splits(
    frame: pl.DataFrame,
    kind: str = "family",
    seed: int = 0,
    val_fraction: float = 0.2,
    test_fraction: float = 0.2,
    *,
    groups: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """Assign every run of ``frame`` (a samples table) to ``train``, ``val`` or ``test``.

    ``groups``: family -> cluster label, needed by (and only read for) the ``cluster`` kind
    (:func:`train.clusters.cluster_families`).

    Groups of ``kind`` (see the module docstring) are shuffled with ``seed`` and dealt out:
    ``round(test_fraction * n_groups)`` groups (at least one) to test, then
    ``round(val_fraction * n_groups)`` (at least one when the fraction is positive and a
    training group remains) to val, the rest to train. Fractions count groups, not runs.

    Returns a DataFrame with columns ``run_id`` (each once) and ``split``, sorted by run_id.
    Raises ``ValueError`` for an unknown kind, bad fractions or too few groups.
    """
    if kind not in SPLIT_KINDS:
        raise ValueError(f"split kind {kind!r} is not one of {', '.join(SPLIT_KINDS)}")
    if not (0 <= val_fraction < 1 and 0 <= test_fraction < 1 and val_fraction + test_fraction < 1):
        raise ValueError(
            f"val_fraction={val_fraction} and test_fraction={test_fraction} must be in [0, 1) "
            "and sum to less than 1"
        )
    key = _group_key(kind, groups)
    pairs = frame.select(pl.col("run_id"), key.alias("group")).unique()
    if pairs["run_id"].n_unique() < pairs.height:
        raise ValueError(
            f"a run has rows from more than one {kind} group; the samples table is inconsistent"
        )
    runs = pairs
    names = sorted(runs["group"].drop_nulls().unique().to_list())
    if runs["group"].null_count():
        raise ValueError(f"{runs['group'].null_count()} run(s) have no {kind} to split on")
    n_val, n_test = _partition_sizes(len(names), val_fraction, test_fraction, kind)
    order = np.random.default_rng(seed).permutation(len(names))
    shuffled = [names[i] for i in order]
    split_of = {g: "test" for g in shuffled[:n_test]}
    split_of.update({g: "val" for g in shuffled[n_test : n_test + n_val]})
    split_of.update({g: "train" for g in shuffled[n_test + n_val :]})
    return (
        runs.with_columns(
            pl.col("group").replace_strict(split_of, return_dtype=pl.String).alias("split")
        )
        .select("run_id", "split")
        .sort("run_id")
    )


def split_frame(frame: pl.DataFrame, splits: pl.DataFrame, partition: str) -> pl.DataFrame:
    """Rows of ``frame`` whose run is assigned to ``partition`` (train, val or test)."""
    if partition not in PARTITIONS:
        raise ValueError(f"partition {partition!r} is not one of {', '.join(PARTITIONS)}")
    chosen = splits.filter(pl.col("split") == partition).select("run_id")
    return frame.join(chosen, on="run_id", how="semi", maintain_order="left")


def val_into_train(splits: pl.DataFrame) -> pl.DataFrame:
    """``splits`` with its val runs moved into train: the runs a ``--refit`` model (see
    :class:`train.experiment.ExperimentConfig`) was fitted on, its test runs unchanged."""
    moved = pl.when(pl.col("split") == "val").then(pl.lit("train")).otherwise(pl.col("split"))
    return splits.with_columns(moved.cast(splits.schema["split"]).alias("split"))


def split_digest(splits: pl.DataFrame) -> str:
    """Hex SHA-256 of a split's (run_id, split) pairs, in any row order: what a checkpoint
    records (``extra.split_digest``) so that the runs a replay takes for its training and
    held-out runs are checked to be the ones it was trained and judged on."""
    pairs = sorted(zip(splits["run_id"].cast(pl.String).to_list(), splits["split"].cast(pl.String).to_list()))
    return hashlib.sha256(json.dumps(pairs).encode()).hexdigest()
