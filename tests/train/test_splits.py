from __future__ import annotations

import polars as pl
import pytest

from tests.train.synthetic import write_dataset
from train.splits import assign_splits, split_frame
from train.tables import load_samples


@pytest.fixture(scope="module")
def frame(tmp_path_factory) -> pl.DataFrame:
    data = write_dataset(
        str(tmp_path_factory.mktemp("ds") / "d"), n_families=5, shapes_per_family=3
    )
    return load_samples(data.root)


def _groups_by_split(frame: pl.DataFrame, splits: pl.DataFrame, column: str) -> dict[str, set[str]]:
    joined = frame.join(splits, on="run_id")
    return {p: set(joined.filter(pl.col("split") == p)[column]) for p in ("train", "val", "test")}


def test_family_split_holds_out_whole_families(frame):
    splits = assign_splits(frame, "family", seed=0)
    assert splits.height == frame["run_id"].n_unique()
    assert splits["run_id"].is_unique().all()
    families = _groups_by_split(frame, splits, "family")
    kernels = _groups_by_split(frame, splits, "kernel_id")
    assert len(families["test"]) == 1 and len(families["val"]) == 1 and len(families["train"]) == 3
    assert not families["test"] & families["train"] and not families["val"] & families["train"]
    assert not kernels["test"] & kernels["train"]


def test_no_run_straddles_partitions(frame):
    splits = assign_splits(frame, "random", seed=3)
    parts = [split_frame(frame, splits, p) for p in ("train", "val", "test")]
    assert sum(p.height for p in parts) == frame.height
    run_sets = [set(p["run_id"]) for p in parts]
    assert (
        not run_sets[0] & run_sets[1]
        and not run_sets[0] & run_sets[2]
        and not run_sets[1] & run_sets[2]
    )


def test_seeded(frame):
    first = assign_splits(frame, "family", seed=7)
    assert first.equals(assign_splits(frame, "family", seed=7))
    assignments = {tuple(assign_splits(frame, "family", seed=s)["split"]) for s in range(8)}
    assert len(assignments) > 1


def test_shape_split_groups_family_and_shape(frame):
    splits = assign_splits(frame, "shape", seed=1)
    joined = frame.join(splits, on="run_id").with_columns(
        pl.concat_str("family", "shape_name").alias("g")
    )
    per_group = joined.group_by("g").agg(pl.col("split").n_unique())
    assert (per_group["split"] == 1).all()
    assert set(splits["split"]) == {"train", "val", "test"}


def test_fractions_zero_val(frame):
    splits = assign_splits(frame, "family", seed=0, val_fraction=0.0, test_fraction=0.4)
    assert set(splits["split"]) == {"train", "test"}
    assert len(_groups_by_split(frame, splits, "family")["test"]) == 2


def test_too_few_groups_and_bad_input_are_refused(frame):
    with pytest.raises(ValueError, match="device"):
        assign_splits(frame, "device")  # one device only
    with pytest.raises(ValueError, match="split kind 'kernel'"):
        assign_splits(frame, "kernel")
    with pytest.raises(ValueError, match="val_fraction"):
        assign_splits(frame, "family", val_fraction=0.6, test_fraction=0.5)
    with pytest.raises(ValueError, match="partition 'dev'"):
        split_frame(frame, assign_splits(frame), "dev")
