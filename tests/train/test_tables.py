from __future__ import annotations

import math
import shutil

import numpy as np
import polars as pl
import pytest

from schemas import CorruptFileError, DatasetError, DatasetWriter, MixedTimingError, read_table
from schemas.storage import resolve, write_atomic
from schemas.tables import TABLES
from schemas.writer import conform, new_writer_id, with_file_metadata
from tests.train.synthetic import run_rows, write_dataset
from train.tables import IR_COUNT_COLUMNS, collapse_identical, load_samples, ranked_runs


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    return write_dataset(str(tmp_path_factory.mktemp("ds") / "data"))


def test_one_row_per_measurement_all_statuses(synthetic):
    frame = load_samples(synthetic.root)
    assert frame.height == synthetic.n_measurements
    assert frame.select("run_id", "config_id").n_unique() == frame.height
    assert (frame["status"] != "ok").sum() == synthetic.n_failed
    assert set(frame["family"].unique()) == set(synthetic.families)


def test_targets(synthetic):
    frame = load_samples(synthetic.root)
    failed = frame.filter(~pl.col("valid"))
    assert failed["status"].to_list() == ["compile_error"] * synthetic.n_failed
    assert failed["log_latency"].null_count() == failed.height
    assert failed["norm_runtime"].null_count() == failed.height
    ok = frame.filter(pl.col("valid"))
    for row in ok.iter_rows(named=True):
        assert row["log_latency"] == pytest.approx(math.log(row["median_ms"]))
        assert row["norm_runtime"] == pytest.approx(row["run_best_ms"] / row["median_ms"])
    per_run = ok.group_by("run_id").agg(
        pl.col("norm_runtime").max(), pl.col("median_ms").min(), pl.col("run_best_ms").first()
    )
    assert per_run["norm_runtime"].to_list() == pytest.approx([1.0] * per_run.height)
    assert per_run["median_ms"].to_list() == per_run["run_best_ms"].to_list()


def test_level_picks_ir_id_and_graph_counts(synthetic):
    ttgir = load_samples(synthetic.root, level="ttgir")
    assert ttgir["ir_id"].to_list() == ttgir["ttgir_id"].to_list()
    ok = ttgir.filter(pl.col("valid"))
    assert ok["ir_num_nodes"].null_count() == 0
    assert (ok["ir_num_nodes"] >= 10).all()
    ttir = load_samples(synthetic.root, level="ttir")
    assert ttir["ir_id"].to_list() == ttir["ttir_id"].to_list()
    # Only TTGIR graphs were written: TTIR samples carry null counts, not another level's.
    assert all(ttir[c].null_count() == ttir.height for c in IR_COUNT_COLUMNS)


def test_run_columns_joined_and_intensity_derived(synthetic):
    frame = load_samples(synthetic.root)
    row = frame.row(0, named=True)
    assert row["family"].startswith("fam")
    assert row["device_kind"] == "interpreter"
    # The runs rows carry no arithmetic_intensity: it is flops / bytes_moved.
    assert row["arithmetic_intensity"] == pytest.approx(row["flops"] / row["bytes_moved"])


def test_uncommitted_measurements_are_ignored(tmp_path):
    root = str(tmp_path / "d")
    write_dataset(root, n_families=1, shapes_per_family=1)
    rows = run_rows("late", (64, 64), index=9, n_configs=3, seed=0)
    DatasetWriter(root).write("measurements", rows["measurements"])  # no runs row: uncommitted
    frame = load_samples(root)
    assert "late" not in frame["family"].to_list()
    assert frame.height == 6


def _two_harvests(root: str) -> tuple[list[dict], list[dict]]:
    writer = DatasetWriter(root)
    first = run_rows(
        "fam", (64, 256), index=0, n_configs=4, seed=0, harvest_id="h1", finished_minute=1
    )
    second = run_rows(
        "fam", (64, 256), index=0, n_configs=4, seed=0, harvest_id="h2", finished_minute=5
    )
    for m in second["measurements"]:
        if m["median_ms"] is not None:
            m["median_ms"] *= 2.0
            m["samples_ms"] = [2.0 * v for v in m["samples_ms"]]
    for rows in (second, first):  # later harvest written first: order on disk must not matter
        writer.write("ir_graphs", rows["ir_graphs"])
        writer.write("measurements", rows["measurements"])
        writer.commit_run(rows["runs"])
    return first["measurements"], second["measurements"]


def test_repeated_harvests_latest_pooled_all(tmp_path):
    root = str(tmp_path / "d")
    first, second = _two_harvests(root)
    latest = load_samples(root, harvests="latest")
    assert latest.height == 4
    assert set(latest["harvest_id"]) == {"h2"}
    by_config = {m["config_id"]: m for m in second}
    for row in latest.iter_rows(named=True):
        assert row["median_ms"] == by_config[row["config_id"]]["median_ms"]
    pooled = load_samples(root, harvests="pooled")
    assert pooled.height == 4
    older = {m["config_id"]: m for m in first}
    for row in pooled.filter(pl.col("valid")).iter_rows(named=True):
        samples = older[row["config_id"]]["samples_ms"] + by_config[row["config_id"]]["samples_ms"]
        assert row["median_ms"] == pytest.approx(float(np.median(samples)))
    everything = load_samples(root, harvests="all")
    assert everything.height == 8
    assert set(everything["harvest_id"]) == {"h1", "h2"}


def test_version1_columns_null_still_load(tmp_path):
    data = write_dataset(str(tmp_path / "d"), n_families=2, shapes_per_family=1, with_v2=False)
    frame = load_samples(data.root)
    assert frame.height == data.n_measurements
    assert frame["num_programs"].null_count() == frame.height


def test_dataset_without_ir_graphs(tmp_path):
    root = str(tmp_path / "d")
    rows = run_rows("fam", (64, 256), index=0, n_configs=3, seed=0)
    for row in rows["measurements"]:  # no IR stored: every compile failed, say
        row["ttgir_id"] = row["ttir_id"] = None
    writer = DatasetWriter(root)
    writer.write("measurements", rows["measurements"])
    writer.commit_run(rows["runs"])
    frame = load_samples(root)
    assert frame.height == 3
    assert frame["ir_num_nodes"].null_count() == 3


def test_measurements_naming_graphs_of_a_lost_ir_graphs_table_are_refused(tmp_path):
    """Without its ir_graphs directory (a partial copy, a table deleted to save space) every
    sample got null graph counts, as a config that never compiled does, without a word."""
    root = tmp_path / "d"
    write_dataset(str(root), n_families=1, shapes_per_family=1)
    load_samples(str(root))
    shutil.rmtree(root / "ir_graphs")
    with pytest.raises(DatasetError, match="name 5 ttgir graph.*'ir_graphs' not found"):
        load_samples(str(root))


def test_ranked_runs_need_two_valid_configs(tmp_path):
    root = str(tmp_path / "d")
    writer = DatasetWriter(root)
    big = run_rows("fam", (64, 256), index=0, n_configs=3, seed=0)
    small = run_rows("fam", (128, 512), index=1, n_configs=2, seed=0)  # 1 ok + 1 failed
    for rows in (big, small):
        writer.write("ir_graphs", rows["ir_graphs"])
        writer.write("measurements", rows["measurements"])
        writer.commit_run(rows["runs"])
    assert ranked_runs(load_samples(root)) == [big["runs"][0]["run_id"]]


@pytest.mark.parametrize(("option", "value"), [("level", "llir"), ("harvests", "newest")])
def test_bad_options_are_refused(synthetic, option, value):
    with pytest.raises(ValueError, match=value):
        load_samples(synthetic.root, **{option: value})


def test_missing_dataset_names_the_path(tmp_path):
    with pytest.raises(DatasetError, match="nowhere"):
        load_samples(str(tmp_path / "nowhere"))


def test_a_real_harvest(harvested):
    # The session's tiny interpreter harvest (tests/train/conftest.py): every committed
    # measurement is a sample, and the version-2 columns and IR summaries come through.
    frame = load_samples(harvested)
    measurements = read_table(
        harvested, "measurements", columns=["run_id", "config_id"], harvests="latest"
    )
    assert frame.height == measurements.num_rows
    assert frame["ttgir_id"].drop_nulls().len() > 0
    graphs = pl.from_arrow(
        read_table(
            harvested,
            "ir_graphs",
            columns=["ir_id", "num_nodes"],
            filters=[("level", "=", "ttgir")],
        )
    )
    joined = frame.drop_nulls("ir_id").join(graphs, on="ir_id", how="left")
    assert joined["ir_num_nodes"].to_list() == joined["num_nodes"].to_list()
    ok = frame.filter(pl.col("valid"))
    assert ok["num_programs"].null_count() == 0 and ok["config_roles"].null_count() == 0
    assert set(ok["arch"]) == {"interpreter"}


def test_a_corrupt_ir_graphs_file_is_not_hidden(tmp_path):
    root = str(tmp_path / "d")
    write_dataset(root, n_families=1, shapes_per_family=1)
    bad = tmp_path / "d" / "ir_graphs" / "level=ttgir" / "part-broken-000001.parquet"
    bad.write_bytes(b"not parquet at all")
    with pytest.raises(CorruptFileError, match="part-broken"):
        load_samples(root)


def test_collapse_identical_keeps_one_config_per_program():
    frame = pl.DataFrame(
        {
            "run_id": ["r", "r", "r", "r", "s", "s"],
            "config_id": ["b", "a", "c", "d", "a", "b"],
            # b and d compile to a's binary in run r (measured once, as a); in run s nothing.
            "same_binary_as": ["a", None, None, "a", None, None],
            "median_ms": [1.0, 1.0, 2.0, 1.0, 3.0, 4.0],
        }
    )
    kept = collapse_identical(frame)
    assert kept.select("run_id", "config_id").rows() == [
        ("r", "a"),
        ("r", "c"),
        ("s", "a"),
        ("s", "b"),
    ]
    assert collapse_identical(frame.drop("same_binary_as")).height == frame.height


def test_impossible_measurement_values_are_refused_not_learnt(tmp_path):
    """The gap: a NaN median of an 'ok' row (a foreign writer's, or damage) was a valid sample
    whose log_latency was NaN, and a status outside the vocabulary one more failure; both went
    into training without a word. Now load_samples refuses them, naming the row."""
    root = write_dataset(str(tmp_path / "data"), n_families=2, shapes_per_family=1, n_configs=3).root
    rows = run_rows("fam9", (64, 64), index=99, n_configs=3, seed=1)
    first_ok = next(r for r in rows["measurements"] if r["status"] == "ok")
    first_ok["median_ms"] = float("nan")
    spec = TABLES["measurements"]
    table = with_file_metadata(conform(spec, rows["measurements"]), spec)
    directory = f"{root}/measurements/arch={rows['measurements'][0]['arch']}"
    write_atomic(resolve(root), directory, f"part-{new_writer_id()}-000001.parquet", table)
    writer = DatasetWriter(root)
    for name in ("kernels", "ir_graphs", "ir_nodes", "ir_edges"):
        if rows.get(name):
            writer.write(name, rows[name])
    writer.commit_run(rows["runs"])
    with pytest.raises(DatasetError, match=f"1 median_ms value.s. are NaN or infinite, e.g. run_id={first_ok['run_id']}"):
        load_samples(root)


def test_a_run_timed_by_two_timers_is_refused_in_every_harvests_mode(tmp_path):
    """The gap: with --harvests all, a run harvested with one timer and again with another was
    one group of rows whose best and normalized runtimes mixed both timers' latencies; now
    every mode refuses it (latest/pooled in the reader, all here)."""
    root = write_dataset(str(tmp_path / "data"), n_families=2, shapes_per_family=1, n_configs=3).root
    again = run_rows("fam0", (64, 256), index=0, n_configs=3, seed=0, harvest_id="h-wall", finished_minute=5)
    again["measurements"] = again["measurements"][:1]  # one config timed again, by the wall clock
    again["runs"][0] |= {"timer": "wall", "n_configs": 1}
    writer = DatasetWriter(root)
    writer.write("measurements", again["measurements"])
    writer.commit_run(again["runs"])
    for mode in ("all", "latest", "pooled"):
        with pytest.raises(MixedTimingError, match="timed in different ways"):
            load_samples(root, harvests=mode)
