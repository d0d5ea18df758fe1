from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest

from tests.train.synthetic import write_dataset
from train.features import FEATURES_VERSION, TabularFeatures, raw_features
from train.tables import load_samples


@pytest.fixture(scope="module")
def frame(tmp_path_factory) -> pl.DataFrame:
    return load_samples(write_dataset(str(tmp_path_factory.mktemp("ds") / "d")).root)


@pytest.fixture(scope="module")
def v1_frame(tmp_path_factory) -> pl.DataFrame:
    data = write_dataset(str(tmp_path_factory.mktemp("ds1") / "d"), n_families=2, with_v2=False)
    return load_samples(data.root)


def _col(features: TabularFeatures, x: np.ndarray, name: str) -> np.ndarray:
    return x[:, features.names.index(name)]


def test_shape_dtype_and_names(frame):
    features = TabularFeatures().fit(frame)
    x = features.transform(frame)
    assert x.dtype == np.float32
    assert x.shape == (frame.height, len(features.names))
    assert np.isfinite(x).all()
    assert len(set(features.names)) == len(features.names)
    for name in (
        "knob:num_warps",
        "role:tile_m",
        "role:tile_n",
        "launch:num_programs",
        "static:n_regs",
        "graph:num_nodes",
        "problem:flops",
        "dims:0",
        "device:interpreter",
    ):
        assert name in features.names


def test_statistics_come_from_the_fitted_frame_only(frame):
    train = frame.filter(pl.col("family") == "fam0")
    features = TabularFeatures().fit(train)
    warps = train["num_warps"].to_numpy().astype(float)
    index = features.raw_names.index("knob:num_warps")
    assert features.mean[index] == pytest.approx(np.log2(warps).mean())
    standardized = _col(features, features.transform(train), "launch:num_programs")
    assert standardized.mean() == pytest.approx(0.0, abs=1e-5)
    assert standardized.std() == pytest.approx(1.0, abs=1e-4)


def test_log2_scaling_of_knobs_by_role(frame):
    features = TabularFeatures().fit(frame)
    x = features.transform(frame)
    index = features.raw_names.index("role:tile_m")
    tile_m = _col(features, x, "role:tile_m") * features.std[index] + features.mean[index]
    expected = [
        math.log2(next(p["value"] for p in params if p["name"] == "BLOCK_M"))
        for params in frame["config_params"].to_list()
    ]
    assert tile_m == pytest.approx(expected, abs=1e-4)


def test_roles_line_up_across_parameter_names(frame):
    renamed = frame.with_columns(
        pl.col("config_roles").list.eval(
            pl.struct(
                pl.element().struct.field("name").replace({"BLOCK_N": "BLOCK_V"}),
                pl.element().struct.field("role"),
                pl.element().struct.field("value"),
            )
        )
    )
    features = TabularFeatures().fit(frame)
    assert np.array_equal(features.transform(frame), features.transform(renamed))


def test_missing_values_are_zero_with_an_indicator(frame, v1_frame):
    features = TabularFeatures().fit(frame)
    new = features.transform(frame)
    old = features.transform(v1_frame)
    # Version-1 rows: no num_programs, no roles (every meta-parameter counts as `other`).
    assert (_col(features, old, "launch:num_programs") == 0).all()
    assert (_col(features, old, "missing:num_programs") == 1).all()
    assert (_col(features, new, "missing:num_programs") == 0).all()
    assert (_col(features, old, "missing:role:tile_m") == 1).all()
    assert (_col(features, old, "missing:role:other") == 0).all()
    # Failed configs have no IR graph: the graph counts are unknown together.
    failed = (~frame["valid"]).to_numpy()
    assert (_col(features, new, "missing:graph")[failed] == 1).all()
    assert (_col(features, new, "missing:graph")[~failed] == 0).all()
    # Device facts are unknown on the interpreter.
    assert (_col(features, new, "missing:device") == 1).all()


def test_fit_on_old_data_transform_new(v1_frame, frame):
    features = TabularFeatures().fit(v1_frame)
    x = features.transform(frame)
    assert np.isfinite(x).all()
    assert "role:tile_m" in features.names  # roles are always featurized


def test_json_round_trip_gives_identical_features(frame):
    features = TabularFeatures().fit(frame)
    state = json.loads(json.dumps(features.to_dict()))
    restored = TabularFeatures.from_dict(state)
    assert restored.names == features.names
    assert np.array_equal(restored.transform(frame), features.transform(frame))
    with pytest.raises(ValueError, match="version"):
        TabularFeatures.from_dict({**state, "version": FEATURES_VERSION + 1})


def test_refuses_empty_or_unfitted(frame):
    with pytest.raises(ValueError, match="empty"):
        TabularFeatures().fit(frame.head(0))
    with pytest.raises(RuntimeError, match="before fit"):
        TabularFeatures().transform(frame)


def test_raw_features_row_order_is_kept(frame):
    shuffled = frame.sample(fraction=1.0, shuffle=True, seed=1)
    raw = raw_features(shuffled)
    assert raw["knob:num_warps"].to_list() == pytest.approx(
        np.log2(shuffled["num_warps"].to_numpy()).tolist()
    )
    assert raw["launch:num_programs"].to_list() == pytest.approx(
        np.log2(shuffled["num_programs"].to_numpy()).tolist()
    )


def test_a_frame_for_prediction_may_lack_columns(frame):
    # Unmeasured candidate configs: only what is known before running them.
    features = TabularFeatures().fit(frame)
    candidates = frame.select(
        "run_id", "config_params", "config_roles", "num_warps", "num_stages", "problem_dims"
    )
    x = features.transform(candidates)
    assert np.isfinite(x).all()
    full = features.transform(frame)
    known = ["knob:num_warps", "role:tile_m", "role:tile_n", "dims:0", "launch:programs_estimate"]
    for name in known:
        assert np.array_equal(_col(features, x, name), _col(features, full, name)), name
    assert (_col(features, x, "missing:num_programs") == 1).all()
    assert (_col(features, x, "missing:static") == 1).all()
    with pytest.raises(ValueError, match="run_id"):
        features.transform(candidates.drop("run_id"))


def test_run_relative_copies_of_config_features(frame):
    features = TabularFeatures().fit(frame)
    x = features.transform(frame)
    assert "rel:knob:num_warps" in features.names and "rel:launch:num_programs" in features.names
    # Run-level features are constant within a run: no relative copy.
    assert not any(n.startswith(("rel:problem", "rel:dims", "rel:device")) for n in features.names)
    warps = _col(features, x, "knob:num_warps")
    relative = _col(features, x, "rel:knob:num_warps")
    runs = frame["run_id"].to_numpy()
    for run in np.unique(runs):
        mine = runs == run
        assert relative[mine] == pytest.approx(warps[mine] - warps[mine].mean(), abs=1e-5)
    # A run of one config has nothing to compare with: its relative features are 0.
    single = frame.head(1)
    assert (
        features.transform(single)[0, len(features.raw_names) :][: len(features.relative_names)]
        == 0
    ).all()
    plain = TabularFeatures(relative=False).fit(frame)
    assert not any(n.startswith("rel:") for n in plain.names)
    assert plain.transform(frame).shape[1] == len(plain.names)
    assert TabularFeatures.from_dict(plain.to_dict()).relative is False
