"""One harvest per run: read_table/scan_table(harvests="all" | "latest" | "pooled")."""

from __future__ import annotations

import random
import statistics
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from schemas import DatasetWriter, MixedTimingError, read_table, scan_table
from schemas.check import check_dataset
from schemas.harvests import grouped_stats
from schemas.identity import config_id

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
C0, C1, C2 = (config_id({"BLOCK": 2**i}, 4, 2) for i in range(3))


def _measurement(
    run: str,
    harvest: str,
    config: str,
    samples: list[float] | None,
    status: str = "ok",
    error: str | None = None,
) -> dict:
    row = {
        "run_id": run,
        "harvest_id": harvest,
        "config_id": config,
        "arch": "sm_90",
        "status": status,
        "error": error,
    }
    if samples:
        row |= {
            "samples_ms": samples,
            "median_ms": statistics.median(samples),
            "n_reps": len(samples),
        }
    return row


def _run(run: str, harvest: str, finished_minutes: int, n_configs: int) -> dict:
    return {
        "run_id": run,
        "harvest_id": harvest,
        "kernel_id": "k1",
        "family": "add",
        "device_kind": "cuda",
        "arch": "sm_90",
        "n_configs": n_configs,
        "finished_at": T0 + timedelta(minutes=finished_minutes),
    }


@pytest.fixture
def two_harvests(tmp_path) -> str:
    """Run r1 harvested twice (the second re-measured two of its three configs: c1 failed
    there) plus an uncommitted third harvest; run r2 harvested once."""
    root = str(tmp_path / "ds")
    writer = DatasetWriter(root)
    writer.write(
        "measurements",
        [
            _measurement("r1", "h1", C0, [1.0, 2.0, 3.0]),
            _measurement("r1", "h1", C1, [10.0, 11.0]),
            _measurement("r1", "h1", C2, [7.0]),
            _measurement("r2", "h1", C0, [5.0, 6.0]),
        ],
    )
    writer.commit_run([_run("r1", "h1", 0, 3), _run("r2", "h1", 1, 1)])
    writer.write(
        "measurements",
        [
            _measurement("r1", "h2", C0, [4.0, 5.0]),
            _measurement("r1", "h2", C1, None, "runtime_error", "boom"),
        ],
    )
    writer.commit_run([_run("r1", "h2", 10, 2)])
    writer.write("measurements", [_measurement("r1", "h3", C0, [99.0])])  # never committed
    return root


def _by_key(table) -> dict[tuple[str, str], dict]:
    return {(row["run_id"], row["config_id"]): row for row in table.to_pylist()}


def test_all_keeps_every_committed_harvest(two_harvests):
    table = read_table(two_harvests, "measurements", harvests="all")
    assert sorted(table.column("harvest_id").to_pylist()) == ["h1", "h1", "h1", "h1", "h2", "h2"]
    assert read_table(two_harvests, "runs").num_rows == 3
    assert table.num_rows == read_table(two_harvests, "measurements").num_rows  # the default


def test_latest_takes_each_config_from_its_most_recent_harvest(two_harvests):
    table = read_table(two_harvests, "measurements", harvests="latest")
    rows = _by_key(table)
    assert len(rows) == table.num_rows == 4
    assert rows[("r1", C0)]["harvest_id"] == "h2" and rows[("r1", C0)]["samples_ms"] == [4.0, 5.0]
    assert rows[("r1", C1)]["status"] == "runtime_error"
    assert rows[("r1", C2)]["harvest_id"] == "h1"  # not re-measured by h2: h1 is its latest
    assert rows[("r2", C0)]["harvest_id"] == "h1"
    runs = read_table(two_harvests, "runs", columns=["run_id", "n_configs"], harvests="latest")
    assert sorted(runs.to_pylist(), key=lambda r: r["run_id"]) == [
        {"run_id": "r1", "n_configs": 3},  # the view's configs of r1: two from h2, one from h1
        {"run_id": "r2", "n_configs": 1},
    ]


def test_pooled_concatenates_samples_and_recomputes_statistics(two_harvests):
    rows = _by_key(read_table(two_harvests, "measurements", harvests="pooled"))
    assert len(rows) == 4
    pooled = rows[("r1", C0)]
    samples = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert pooled["samples_ms"] == samples  # oldest harvest first
    quintiles = statistics.quantiles(samples, n=5, method="inclusive")  # linear interpolation
    assert pooled["n_reps"] == 5 and pooled["status"] == "ok"
    assert pooled["median_ms"] == pytest.approx(statistics.median(samples))
    assert pooled["mean_ms"] == pytest.approx(statistics.fmean(samples))
    assert pooled["std_ms"] == pytest.approx(statistics.pstdev(samples))
    assert (pooled["min_ms"], pooled["max_ms"]) == (1.0, 5.0)
    assert (pooled["p20_ms"], pooled["p80_ms"]) == pytest.approx((quintiles[0], quintiles[3]))
    failed = rows[("r1", C1)]  # ok in h1, runtime_error in h2: not ok, with h2's error
    assert (failed["status"], failed["error"]) == ("runtime_error", "boom")
    assert failed["samples_ms"] == [10.0, 11.0] and failed["n_reps"] == 2
    single = rows[("r1", C2)]  # one repeat: stored as it is
    assert single["samples_ms"] == [7.0] and single["median_ms"] == 7.0


def test_an_older_failure_keeps_a_pooled_config_from_being_ok(tmp_path):
    root = str(tmp_path / "ds")
    writer = DatasetWriter(root)
    writer.write("measurements", [_measurement("r1", "h1", C0, None, "timeout", "slow")])
    writer.commit_run([_run("r1", "h1", 0, 1)])
    writer.write("measurements", [_measurement("r1", "h2", C0, [2.0, 4.0])])
    writer.commit_run([_run("r1", "h2", 5, 1)])
    (row,) = read_table(root, "measurements", harvests="pooled").to_pylist()
    assert (row["status"], row["error"], row["samples_ms"], row["median_ms"]) == (
        "timeout",
        "slow",
        [2.0, 4.0],
        3.0,
    )
    (latest,) = read_table(root, "measurements", harvests="latest").to_pylist()
    assert latest["status"] == "ok"


def test_equal_finish_times_go_to_the_larger_harvest_id(tmp_path):
    root = str(tmp_path / "ds")
    writer = DatasetWriter(root)
    for harvest in ("hb", "ha"):
        writer.write(
            "measurements", [_measurement("r1", harvest, C0, [1.0 if harvest == "ha" else 2.0])]
        )
        writer.commit_run([_run("r1", harvest, 0, 1)])
    (row,) = read_table(root, "measurements", harvests="latest").to_pylist()
    assert row["harvest_id"] == "hb"
    (run,) = read_table(root, "runs", columns=["harvest_id"], harvests="latest").to_pylist()
    assert run["harvest_id"] == "hb"


def test_filters_apply_after_the_choice(two_harvests):
    ok = read_table(
        two_harvests,
        "measurements",
        columns=["run_id", "config_id", "harvest_id"],
        filters=[("status", "=", "ok")],
        harvests="latest",
    )
    assert ok.column_names == ["run_id", "config_id", "harvest_id"]
    # r1/C1 failed in its latest harvest: the older ok row must not stand in for it
    assert sorted(
        zip(ok.column("run_id").to_pylist(), ok.column("config_id").to_pylist())
    ) == sorted([("r1", C0), ("r1", C2), ("r2", C0)])


@pytest.mark.parametrize("mode", ["all", "latest", "pooled"])
def test_scan_table_gives_the_same_rows(two_harvests, mode):
    table = read_table(two_harvests, "measurements", harvests=mode)
    frame = scan_table(two_harvests, "measurements", harvests=mode).collect()
    assert frame.height == table.num_rows
    key = ["run_id", "config_id", "harvest_id"]
    assert frame.select([*key, "median_ms", "n_reps", "status"]).sort(key).rows() == sorted(
        tuple(r[k] for k in [*key, "median_ms", "n_reps", "status"]) for r in table.to_pylist()
    )
    assert scan_table(two_harvests, "runs", harvests=mode).collect().height == (
        3 if mode == "all" else 2
    )


def test_bad_mode_is_refused_before_reading(tmp_path):
    missing = str(tmp_path / "nowhere")  # no dataset: the mode is checked first
    with pytest.raises(ValueError, match="harvests must be one of .*'newest'"):
        read_table(missing, "measurements", harvests="newest")
    with pytest.raises(ValueError, match="harvests must be one of"):
        scan_table(missing, "runs", harvests="first")
    with pytest.raises(ValueError, match="committed_only=True"):
        read_table(missing, "measurements", committed_only=False, harvests="latest")


def test_content_keyed_tables_ignore_the_option(two_harvests):
    writer = DatasetWriter(two_harvests)
    writer.write("kernels", [{"kernel_id": "k1", "family": "add", "entry_name": "add_kernel"}])
    kernels = read_table(two_harvests, "kernels", harvests="pooled")
    assert pc.count(kernels.column("kernel_id")).as_py() == 1


def test_grouped_statistics_match_the_harvest_definitions():
    """Vectorized per-group statistics against the statistics module, group by group."""
    rng = random.Random(7)
    groups = [[rng.uniform(0.1, 9.0) for _ in range(rng.randint(1, 9))] for _ in range(40)]
    groups[5] = []  # a group without samples
    owner = [g for g, samples in enumerate(groups) for _ in samples]
    values = [v for samples in groups for v in samples]
    stats = grouped_stats(pa.array(owner, pa.int64()), pa.array(values), len(groups)).to_pylist()
    for samples, row in zip(groups, stats):
        if not samples:
            assert row["n_reps"] == 0 and row["median_ms"] is None and row["samples_ms"] == []
            continue
        assert row["n_reps"] == len(samples)
        assert row["samples_ms"] == pytest.approx(samples, rel=1e-6)  # float32, timing order
        assert row["median_ms"] == pytest.approx(statistics.median(samples))
        assert row["mean_ms"] == pytest.approx(statistics.fmean(samples))
        assert row["std_ms"] == pytest.approx(statistics.pstdev(samples), abs=1e-12)
        assert (row["min_ms"], row["max_ms"]) == (min(samples), max(samples))
        if len(samples) > 1:
            quintiles = statistics.quantiles(samples, n=5, method="inclusive")
            assert (row["p20_ms"], row["p80_ms"]) == pytest.approx((quintiles[0], quintiles[3]))
        else:
            assert row["p20_ms"] == row["p80_ms"] == samples[0]


def test_a_null_sample_shifts_no_other_configs_pooled_samples(two_harvests):
    """A null inside one repeat's ``samples_ms`` is no sample: that config pools the others,
    and every other config keeps exactly its own samples (group offsets used to count it)."""
    before = _by_key(read_table(two_harvests, "measurements", harvests="pooled"))
    writer = DatasetWriter(two_harvests)
    broken = _measurement("r2", "h4", C0, [8.0, 9.0]) | {"samples_ms": [8.0, None, 9.0]}
    writer.write("measurements", [broken, _measurement("r1", "h4", C2, [6.0])])
    writer.commit_run([_run("r2", "h4", 20, 1), _run("r1", "h4", 20, 1)])
    after = _by_key(read_table(two_harvests, "measurements", harvests="pooled"))
    assert after[("r2", C0)]["samples_ms"] == [5.0, 6.0, 8.0, 9.0]
    assert after[("r2", C0)]["n_reps"] == 4
    assert after[("r1", C2)]["samples_ms"] == [7.0, 6.0]
    assert after[("r1", C0)]["samples_ms"] == before[("r1", C0)]["samples_ms"]


@pytest.mark.parametrize("mode", ["latest", "pooled"])
def test_a_skipped_repeat_neither_hides_nor_taints_a_measurement(tmp_path, mode):
    """``skipped`` (a budget left the config out) is no observation: a later budgeted harvest
    does not hide an earlier measurement, and a config measured after a budget skipped it is
    not reported skipped; a config no harvest measured stays skipped."""
    root = str(tmp_path / "ds")
    writer = DatasetWriter(root)
    skip = {"status": "skipped", "error": "not benchmarked under --budget 1"}
    writer.write(
        "measurements",
        [_measurement("r1", "h1", C0, [1.0, 2.0]), _measurement("r1", "h1", C1, None) | skip,
         _measurement("r1", "h1", C2, None) | skip],
    )  # fmt: skip
    writer.commit_run([_run("r1", "h1", 0, 3)])
    writer.write(
        "measurements",
        [_measurement("r1", "h2", C0, None) | skip, _measurement("r1", "h2", C1, [4.0])],
    )
    writer.commit_run([_run("r1", "h2", 10, 2)])
    rows = _by_key(read_table(root, "measurements", harvests=mode))
    assert rows[("r1", C0)]["status"] == "ok" and rows[("r1", C0)]["samples_ms"] == [1.0, 2.0]
    assert rows[("r1", C1)]["status"] == "ok" and rows[("r1", C1)]["samples_ms"] == [4.0]
    assert rows[("r1", C1)]["error"] is None
    assert rows[("r1", C2)]["status"] == "skipped"


def test_pooled_leaves_out_repeats_timed_another_way(tmp_path):
    """The gap: pooling concatenated the samples of every repeat, so a config harvested with
    --timer thread_cpu and again with --timer wall (resume measures it again: other bench
    settings) was given one median of two different quantities, silently. Now only repeats
    timed as the latest was (timer, L2 flush) are pooled."""
    root = str(tmp_path / "ds")
    writer = DatasetWriter(root)
    timed = [("h1", "thread_cpu", 0, [1.0, 2.0]), ("h2", "wall", 1, [50.0, 60.0]), ("h3", "wall", 2, [70.0])]
    for harvest, timer, minutes, samples in timed:
        writer.write("measurements", [_measurement("r1", harvest, C0, samples)])
        writer.commit_run([_run("r1", harvest, minutes, 1) | {"timer": timer, "l2_flush_bytes": 0}])
    [pooled] = read_table(root, "measurements", harvests="pooled").to_pylist()
    assert pooled["samples_ms"] == [50.0, 60.0, 70.0] and pooled["median_ms"] == 60.0
    [scanned] = scan_table(root, "measurements", harvests="pooled").collect().to_dicts()
    assert scanned["samples_ms"] == [50.0, 60.0, 70.0]


def test_a_run_whose_latest_configs_were_timed_in_different_ways_is_refused(tmp_path):
    """The gap: a run measured in full with --timer thread_cpu, then in part with --timer wall
    (resume measures again what it measured under other settings): 'latest' gave one config's
    wall latency beside the others' CPU times, and training ranked them against each other (the
    run's best, its normalized runtimes) without a word. Now both views refuse such a run."""
    root = str(tmp_path / "ds")
    writer = DatasetWriter(root)
    writer.write("measurements", [_measurement("r1", "h1", c, [float(k + 1)]) for k, c in enumerate((C0, C1, C2))])
    writer.commit_run([_run("r1", "h1", 0, 3) | {"timer": "thread_cpu", "l2_flush_bytes": 0}])
    writer.write("measurements", [_measurement("r1", "h2", C0, [50.0])])
    writer.commit_run([_run("r1", "h2", 1, 1) | {"timer": "wall", "l2_flush_bytes": 0}])
    for mode in ("latest", "pooled"):
        with pytest.raises(MixedTimingError, match="run_id=r1: 2 by timer thread_cpu with L2 flush 0, 1 by timer wall"):
            read_table(root, "measurements", harvests=mode)
    assert read_table(root, "measurements", harvests="all").num_rows == 4
    report = check_dataset(root)  # the rows are sound; the views training reads are refused
    assert any("timed in different ways, e.g. run_id=r1" in w for w in report.warnings)
    # ... and the summary still counts the latest harvest's configs, naming the row h2 replaced
    assert report.facts["statuses"] == {"ok": 3}
    assert str(report.facts["superseded"]).startswith("1 row(s) of earlier harvests (ok 1) ")
    writer.write("measurements", [_measurement("r2", "h4", C0, None, "compile_error", "boom")])
    writer.commit_run([_run("r2", "h4", 3, 1) | {"timer": "wall", "l2_flush_bytes": 0}])
    writer.write("measurements", [_measurement("r2", "h5", C1, [3.0])])
    writer.commit_run([_run("r2", "h5", 4, 1) | {"timer": "thread_cpu", "l2_flush_bytes": 0}])
    with pytest.raises(MixedTimingError, match="1 run"):  # r2: a failure has no latency to compare
        read_table(root, "measurements", harvests="latest")
    writer.write("measurements", [_measurement("r1", "h3", c, [60.0]) for c in (C1, C2)])
    writer.commit_run([_run("r1", "h3", 2, 2) | {"timer": "wall", "l2_flush_bytes": 0}])
    latest = read_table(root, "measurements", harvests="latest")  # every config now timed by wall
    assert sorted(latest.column("harvest_id").to_pylist()) == ["h2", "h3", "h3", "h4", "h5"]


SUMMARY = ["n_configs", "n_ok", "best_config_id", "best_median_ms", "default_median_ms"]


@pytest.fixture
def resumed(tmp_path) -> str:
    """Run r1 harvested in two parts: h1 measured C0 (the default, 3 ms) and C1 (10-11 ms);
    h2, later, measured C1 again (1 ms) and C2, which failed. Each runs row summarizes its own
    harvest's configs. Run r2, harvested once, stores a best its medians do not give (an
    imported run's tuner may choose so)."""
    root = str(tmp_path / "ds")
    writer = DatasetWriter(root)
    writer.write(
        "measurements",
        [
            _measurement("r1", "h1", C0, [3.0]) | {"is_default": True},
            _measurement("r1", "h1", C1, [10.0, 11.0]),
            _measurement("r2", "h1", C0, [5.0]),
            _measurement("r2", "h1", C1, [4.0]),
        ],
    )
    summary = dict(zip(SUMMARY, [2, 2, C0, 3.0, 3.0]))
    writer.commit_run([_run("r1", "h1", 0, 2) | summary, _run("r2", "h1", 0, 2) | summary])
    writer.write(
        "measurements",
        [
            _measurement("r1", "h2", C1, [1.0]),
            _measurement("r1", "h2", C2, None, "runtime_error", "boom"),
        ],
    )
    writer.commit_run([_run("r1", "h2", 10, 2) | dict(zip(SUMMARY, [2, 1, C1, 1.0, None]))])
    return root


def _summaries(root: str, mode: str, **options) -> dict[str, dict]:
    table = read_table(root, "runs", columns=["run_id", *SUMMARY], harvests=mode, **options)
    return {row.pop("run_id"): row for row in table.to_pylist()}


def test_a_resumed_runs_row_summarizes_the_configs_the_view_gives(resumed):
    """The gap: the latest view gave r1's h2 row, whose best (C1, 1 ms of 2 configs) and
    default (null: h2 did not measure it) describe h2 only."""
    latest = _summaries(resumed, "latest")
    assert latest["r1"] == dict(zip(SUMMARY, [3, 2, C1, 1.0, 3.0]))
    # pooled: C1's samples are 10, 11, 1 (median 10), so the default C0 is the best
    pooled = _summaries(resumed, "pooled")
    assert pooled["r1"] == dict(zip(SUMMARY, [3, 2, C0, 3.0, 3.0]))
    for view in (latest, pooled):  # harvested once: its stored row, as it was
        assert view["r2"] == dict(zip(SUMMARY, [2, 2, C0, 3.0, 3.0]))
    stored = read_table(resumed, "runs", columns=["harvest_id", "n_configs"], harvests="all")
    assert sorted(stored.column("n_configs").to_pylist()) == [2, 2, 2]  # each harvest's own


def test_summary_filters_and_scans_see_the_recomputed_values(resumed):
    kept = read_table(
        resumed, "runs", columns=["run_id"], filters=[("best_median_ms", "<", 2.0)], harvests="latest"
    )
    assert kept.column("run_id").to_pylist() == ["r1"]
    frame = scan_table(resumed, "runs", harvests="pooled").collect()
    assert frame.filter(frame["run_id"] == "r1").select(SUMMARY).rows() == [(3, 2, C0, 3.0, 3.0)]


def test_a_summary_over_configs_timed_in_different_ways_is_refused(resumed):
    """r1's ok configs come from h1 and h2: with different timers their medians cannot be
    ranked, so neither can the run's best be named."""
    writer = DatasetWriter(resumed)
    writer.write("measurements", [_measurement("r1", "h3", C2, [0.5])])
    writer.commit_run([_run("r1", "h3", 20, 1) | {"timer": "wall"}])
    with pytest.raises(MixedTimingError, match="run_id=r1"):
        read_table(resumed, "runs", columns=["run_id", "best_config_id"], harvests="latest")
    assert read_table(resumed, "runs", columns=["run_id", "family"], harvests="latest").num_rows == 2
