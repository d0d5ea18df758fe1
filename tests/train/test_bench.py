"""The training benchmark's pieces (train.bench): whole-run subsets and one size measured.
Figures are printed by ``python -m train.bench``, never asserted on time."""

from __future__ import annotations

import polars as pl

from train.bench import BenchConfig, measure_size, subset_runs
from train.data import load_dataset


def test_subsets_take_whole_runs_until_the_size(harvested, cache_dir):
    samples = load_dataset(harvested, cache_dir=cache_dir).samples
    subset = subset_runs(samples, 10)
    sizes = samples.group_by("run_id").len()
    chosen = sizes.filter(pl.col("run_id").is_in(subset["run_id"].unique().to_list()))
    assert subset.height == chosen["len"].sum() >= 10
    assert subset.height - chosen["len"].min() < 10  # one run fewer would not reach 10
    assert subset_runs(samples, 10).equals(subset)  # seeded
    assert subset_runs(samples, 10**6).height == samples.height


def test_measure_one_size(harvested, cache_dir):
    loaded = load_dataset(harvested, cache_dir=cache_dir)
    result = measure_size(loaded, 12, BenchConfig(harvested, passes=1, hidden=16, layers=1))
    assert result.samples >= 12 and result.runs >= 1
    assert result.epoch_s > 0 and result.pipeline_samples_per_s > 0
    assert result.epoch_s_per_1000 == 1000 * result.epoch_s / result.samples
