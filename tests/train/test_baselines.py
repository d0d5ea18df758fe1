from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from schemas import DatasetWriter
from tests.train.synthetic import run_rows, write_dataset
from train.baselines import BASELINES, AnalyticBaseline, make_baseline
from train.baselines.analytic import bandwidth_of, estimated_programs_log2, roofline_ms
from train.baselines.tabular import TabularParams, TabularRanker, relevance_grades
from train.features import TabularFeatures
from train.metrics import evaluate, kendall_tau_per_run
from train.splits import assign_splits, split_frame
from train.tables import load_samples


@pytest.fixture(scope="module")
def frame(tmp_path_factory) -> pl.DataFrame:
    data = write_dataset(
        str(tmp_path_factory.mktemp("ds") / "d"), n_families=6, shapes_per_family=3, n_configs=8
    )
    return load_samples(data.root)


@pytest.fixture(scope="module")
def split(frame):
    splits = assign_splits(frame, "family", seed=0)
    train, test = split_frame(frame, splits, "train"), split_frame(frame, splits, "test")
    features = TabularFeatures().fit(train)
    return train, features.transform(train), test, features.transform(test)


def _tau(frame: pl.DataFrame, score: np.ndarray) -> float:
    measured = np.where(
        frame["valid"].to_numpy(), frame["median_ms"].fill_null(np.nan).to_numpy(), np.nan
    )
    return evaluate(frame["run_id"].to_numpy(), measured, score)["kendall_tau"]


def test_every_baseline_scores_every_row(split):
    train, x_train, test, x_test = split
    for name in BASELINES:
        model = make_baseline(name, seed=1).fit(train, x_train)
        score = model.predict(test, x_test)
        assert score.shape == (test.height,) and np.isfinite(score).all(), name
        assert model.predict_valid(test, x_test).shape == (test.height,)
    with pytest.raises(ValueError, match="unknown baseline 'gnn'"):
        make_baseline("gnn")


def test_random_is_seeded(split):
    _, _, test, x_test = split
    first = make_baseline("random", seed=3).predict(test, x_test)
    assert np.array_equal(first, make_baseline("random", seed=3).predict(test, x_test))
    assert not np.array_equal(first, make_baseline("random", seed=4).predict(test, x_test))


def test_default_config_ranks_first(frame):
    score = make_baseline("default", seed=0).predict(frame, np.zeros((frame.height, 0)))
    scored = frame.with_columns(pl.Series("score", score))
    firsts = scored.sort("score").group_by("run_id", maintain_order=True).first()
    assert firsts["is_default"].all()


def test_analytic_on_the_interpreter_is_more_programs_is_slower(frame):
    score = AnalyticBaseline().predict(frame, np.zeros((frame.height, 0)))
    # ln(programs): the prior neural models add their residual to is in ln-latency units.
    assert score == pytest.approx(np.log(frame["num_programs"].to_numpy()))
    # The synthetic law is latency ~ programs: the rule ranks almost perfectly (num_warps ties).
    assert _tau(frame, score) > 0.8


def test_analytic_estimates_programs_from_tiles_on_old_rows(tmp_path, frame):
    old = load_samples(
        write_dataset(
            str(tmp_path / "d"), n_families=6, shapes_per_family=3, n_configs=8, with_v2=False
        ).root
    )
    estimate = estimated_programs_log2(old)
    truth = np.log2(frame["num_programs"].to_numpy())
    assert old["config_id"].to_list() == frame["config_id"].to_list()
    # -log2(BLOCK_M * BLOCK_N) differs from log2(ceil(M/BM) * ceil(N/BN)) by a per-run constant
    # whenever the tiles divide the problem: the within-run order is the true one.
    taus = kendall_tau_per_run(old["run_id"].to_numpy(), truth, estimate)
    assert min(taus.values()) == pytest.approx(1.0)


def _gpu_frame(tmp_path, **overrides) -> pl.DataFrame:
    root = str(tmp_path / "gpu")
    rows = run_rows("fam", (4096, 4096), index=0, n_configs=6, seed=0, gpu=True)
    writer = DatasetWriter(root)
    writer.write("ir_graphs", rows["ir_graphs"])
    writer.write("measurements", rows["measurements"])
    writer.commit_run(rows["runs"])
    return load_samples(root).with_columns(**{k: pl.lit(v) for k, v in overrides.items()})


def test_roofline_by_hand(tmp_path):
    # Memory bound: 3.35e9 bytes at the H100's 3.35e12 B/s is 1 ms, once the machine is full:
    # 132 SMs x 16 resident 4-warp programs = 2112 programs in one wave.
    frame = _gpu_frame(
        tmp_path,
        flops=1000,
        bytes_moved=3_350_000_000,
        num_programs=2112,
        num_warps=4,
        shared_mem_bytes=None,
        spill_bytes=0,
    )
    assert roofline_ms(frame) == pytest.approx(np.full(frame.height, 1.0))
    # A quarter of the SMs busy (16 warps each, enough to saturate): four times slower.
    few = frame.with_columns(pl.lit(33).alias("num_programs"), pl.lit(16).alias("num_warps"))
    assert roofline_ms(few) == pytest.approx(np.full(frame.height, 4.0))
    # With 4 warps per busy SM only half the bandwidth is reached: 8 times slower.
    few_warps = frame.with_columns(pl.lit(33).alias("num_programs"))
    assert roofline_ms(few_warps) == pytest.approx(np.full(frame.height, 8.0))
    # One program more than a wave: a second, almost empty wave.
    spill_over = frame.with_columns(pl.lit(2113).alias("num_programs"))
    assert roofline_ms(spill_over)[0] == pytest.approx(2 * 2112 / 2113)


def test_roofline_compute_bound_and_unknown(tmp_path):
    # FP32 FMA peak of an H100: 256 FLOP/clock/SM x 132 SMs x 1.98 GHz.
    peak = 256 * 132 * 1.98e9
    frame = _gpu_frame(
        tmp_path,
        flops=int(peak),
        bytes_moved=1000,
        num_programs=2112,
        num_warps=4,
        shared_mem_bytes=None,
        spill_bytes=0,
    )
    assert roofline_ms(frame) == pytest.approx(np.full(frame.height, 1000.0))
    unknown = frame.with_columns(pl.lit(None, dtype=pl.Int64).alias("num_programs"))
    assert np.isnan(roofline_ms(unknown)).all()
    assert bandwidth_of("NVIDIA H100 80GB HBM3") == 3.35e12 and bandwidth_of("Mystery GPU") is None


def test_analytic_on_gpu_uses_the_roofline(tmp_path):
    frame = _gpu_frame(tmp_path)
    baseline = AnalyticBaseline()
    score = baseline.predict(frame, np.zeros((frame.height, 0)))
    assert score == pytest.approx(np.log(roofline_ms(frame)))
    assert baseline.predict_ms(frame, np.zeros((frame.height, 0))) == pytest.approx(
        roofline_ms(frame)
    )


def test_relevance_grades():
    # Run a: log latencies 0 (best), log 2 (halfway: 15), log 4 (worst: 0). Run b: one
    # latency only -> top grade; run c: 1 % apart of a 2x span: still within a grade of the best.
    ids = np.array(["a", "a", "a", "b", "c", "c", "c"])
    ms = np.array([1.0, 2.0, 4.0, 7.0, 1.0, 1.01, 2.0])
    assert relevance_grades(ids, ms).tolist() == [30, 15, 0, 30, 30, 30, 0]


def test_tabular_ranks_held_out_families(split):
    train, x_train, test, x_test = split
    model = TabularRanker(seed=0).fit(train, x_train)
    tau = _tau(test, model.predict(test, x_test))
    random_tau = _tau(test, make_baseline("random", seed=0).predict(test, x_test))
    assert tau > 0.6
    assert tau > random_tau + 0.3
    valid = test["valid"].to_numpy()
    predicted_ms = model.predict_ms(test, x_test)[valid]
    relative_error = (
        np.abs(predicted_ms - test["median_ms"].to_numpy()[valid])
        / test["median_ms"].to_numpy()[valid]
    )
    assert np.median(relative_error) < 0.25
    assert np.mean(model.predict_valid(test, x_test) == valid) >= np.mean(valid)


def test_tabular_is_deterministic_and_checks_input(split):
    train, x_train, test, x_test = split
    params = TabularParams(num_boost_round=20)
    first = TabularRanker(seed=5, params=params).fit(train, x_train).predict(test, x_test)
    again = TabularRanker(seed=5, params=params).fit(train, x_train).predict(test, x_test)
    assert np.array_equal(first, again)
    with pytest.raises(ValueError, match="X_train has"):
        TabularRanker(params=params).fit(train, x_train[:-1])
    with pytest.raises(RuntimeError, match="before fit"):
        TabularRanker().predict(test, x_test)
