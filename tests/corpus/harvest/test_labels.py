"""Version-2 labels from real in-process harvests on the CPU (Triton interpreter): CPU-time
timer, interleaved passes, identical binaries timed once, compaction, reproducibility."""

from __future__ import annotations

import io
import math
import shutil
from collections import Counter
from pathlib import Path

import pytest
from rich.console import Console

from corpus.bench.__main__ import main as bench_main
from corpus.bench.repro import Reproducibility, agreement, reproducibility
from corpus.bench.repro_harvests import ReproHarvestConfig, harvest_twice
from corpus.harvest.app import (
    HarvestConfig,
    HarvestError,
    compact_own_files,
    resolve_timer,
    run_harvest,
)
from corpus.harvest.settings import read_settings
from schemas import read_table
from schemas.check import check_dataset
from tests.corpus.harvest.twin_kernels import OTHER, TWINS

SUITE = ("tests.corpus.harvest.twin_kernels",)


def harvest(out: Path, **overrides) -> None:
    config = HarvestConfig(
        out=str(out),
        suite=SUITE,
        device="cpu",
        workers=1,
        passes=3,
        rep=2,
        flush_every_s=0.0,
        static_stats=False,
        **overrides,
    )
    run_harvest(config, read_settings(), Console(file=io.StringIO()))


@pytest.fixture(scope="module")
def repro_harvests(tmp_path_factory) -> tuple[Path, Reproducibility]:
    """`python -m corpus.bench repro --harvest --with-load` on the twin suite: two harvests
    of one plan into root/a and root/b while a third loops beside them."""
    root = tmp_path_factory.mktemp("labels")
    config = ReproHarvestConfig(
        ("test_scale_copy",),
        max_configs=4,
        passes=3,
        rep=2,
        workers=1,
        with_load=True,
        root=str(root),
        suite=SUITE,
    )
    return root, harvest_twice(config, read_settings(), Console(file=io.StringIO()))


@pytest.fixture(scope="module")
def twin_dataset(repro_harvests) -> Path:
    return repro_harvests[0] / "a"


def test_runs_record_cpu_timer_passes_and_load(twin_dataset: Path):
    runs = read_table(str(twin_dataset), "runs").to_pylist()
    assert len(runs) == 2
    for run in runs:
        assert run["timer"] == "thread_cpu"
        assert (run["timing_passes"], run["reps_per_pass"], run["rep"]) == (3, 2, 6)
        assert run["host_load_1m"] is not None and run["host_load_1m"] >= 0


@pytest.mark.parametrize("n", [1000, 1500])
def test_identical_binaries_are_timed_once_and_share_the_measurement(twin_dataset: Path, n: int):
    [run_id] = [
        r["run_id"]
        for r in read_table(str(twin_dataset), "runs").to_pylist()
        if r["shape_name"] == f"N{n}"
    ]
    measurements = read_table(str(twin_dataset), "measurements").to_pylist()
    rows = {r["config_id"]: r for r in measurements if r["run_id"] == run_id}
    assert {r["status"] for r in rows.values()} == {"ok"}
    twins = [rows[c.id] for c in TWINS]
    timed = [r for r in twins if r["same_binary_as"] is None]
    assert len(timed) == 1, "exactly one of the num_stages variants is timed"
    [measured] = timed
    for row in twins:
        assert row["binary_hash"] == measured["binary_hash"]
        if row is not measured:
            assert row["same_binary_as"] == measured["config_id"]
            assert row["samples_ms"] == measured["samples_ms"]
            assert row["median_ms"] == measured["median_ms"]
    other = rows[OTHER.id]
    assert other["same_binary_as"] is None and other["binary_hash"] != measured["binary_hash"]
    for row in (measured, other):
        assert len(row["samples_ms"]) == 6 and row["n_reps"] == 6 and row["median_ms"] > 0
    assert all(
        r["launch_verified"] is None for r in rows.values()
    )  # nothing to verify on the interpreter


def files_per_partition(out: Path) -> Counter[Path]:
    return Counter(p.parent.relative_to(out) for p in out.rglob("*.parquet"))


def test_the_finished_harvest_is_compacted(twin_dataset: Path):
    files = files_per_partition(twin_dataset)
    assert files and set(files.values()) == {1}, files  # one run per flush wrote 2 files each
    assert check_dataset(str(twin_dataset)).ok


@pytest.fixture(scope="module")
def sequential_dataset(tmp_path_factory) -> Path:
    """The same plan again, timed by the version-1 schedule, files left as written."""
    out = tmp_path_factory.mktemp("labels") / "sequential"
    harvest(out, compact=False, interleave=False)
    return out


def test_no_compact_leaves_the_files_and_sequential_mode_times_in_one_go(sequential_dataset: Path):
    out = sequential_dataset
    assert files_per_partition(out)[Path("runs", "arch=interpreter")] == 2
    runs = read_table(str(out), "runs").to_pylist()
    assert {(run["timing_passes"], run["reps_per_pass"]) for run in runs} == {(1, 6)}
    samples = (
        read_table(str(out), "measurements", columns=["samples_ms"])
        .column("samples_ms")
        .to_pylist()
    )
    assert {len(s) for s in samples} == {6}


def test_agreement_is_kendall_tau_b_with_ties():
    a = {"x": 1.0, "y": 2.0, "z": 3.0, "w": 4.0}
    assert agreement(a, a)[0] == pytest.approx(1.0)
    assert agreement(a, {k: -v + 10 for k, v in a.items()})[0] == pytest.approx(-1.0)
    tau, diffs = agreement(a, {"x": 1.0, "y": 2.2, "z": 3.0, "q": 9.0})
    assert tau == pytest.approx(1.0) and sorted(diffs) == pytest.approx([0.0, 0.0, 0.2 / 2.1])
    assert math.isnan(agreement({"x": 1.0}, {"x": 1.0})[0])


def test_repro_harvest_command_compares_two_harvests_made_beside_a_load(repro_harvests):
    root, result = repro_harvests
    assert len(result.runs) == 2 and not result.unranked
    assert all(run.configs == 4 and -1.0 <= run.tau <= 1.0 for run in result.runs)
    assert (root / "load" / "runs").is_dir(), "the load harvest wrote nothing"
    assert result.mean_tau == pytest.approx(
        reproducibility(str(root / "a"), str(root / "b")).mean_tau
    )


def test_repro_of_two_harvests_in_one_dataset_and_across_datasets(
    twin_dataset: Path, sequential_dataset: Path, tmp_path: Path, capsys
):
    other = sequential_dataset
    across = reproducibility(str(twin_dataset), str(other))
    assert len(across.runs) == 2
    assert all(run.configs == 4 and -1.0 <= run.tau <= 1.0 for run in across.runs)
    assert len(across.rel_diffs) == 8 and across.median_rel_diff >= 0
    both = tmp_path / "both"  # two harvests of one plan in one dataset: the files of both
    for source in (twin_dataset, other):
        shutil.copytree(source, both, dirs_exist_ok=True)
    within = reproducibility(str(both))
    assert sorted(r.run_id for r in within.runs) == sorted(r.run_id for r in across.runs)
    assert reproducibility(str(twin_dataset), str(twin_dataset)).mean_tau == pytest.approx(1.0)
    assert bench_main(["repro", str(twin_dataset), str(other)]) == 0
    assert "per-run Kendall tau-b: mean" in capsys.readouterr().out
    assert bench_main(["repro", str(tmp_path / "missing")]) == 2


def test_compaction_of_own_files_leaves_other_writers_files_alone(
    sequential_dataset: Path, tmp_path: Path
):
    out = tmp_path / "shared"
    shutil.copytree(sequential_dataset, out)
    before = {
        table: read_table(str(out), table).num_rows
        for table in ("runs", "measurements", "ir_nodes")
    }
    own = [
        p for p in out.rglob("*.parquet") if p.relative_to(out).parts[0] in ("runs", "measurements")
    ]
    foreign = sorted(p for p in out.rglob("*.parquet") if p not in own)
    assert len(own) == 4 and foreign
    compact_own_files(str(out), [str(p) for p in own], Console(file=io.StringIO()))
    files = files_per_partition(out)
    assert (
        files[Path("runs", "arch=interpreter")]
        == files[Path("measurements", "arch=interpreter")]
        == 1
    )
    assert (
        sorted(
            p
            for p in out.rglob("*.parquet")
            if p.relative_to(out).parts[0] not in ("runs", "measurements")
        )
        == foreign
    )
    assert {table: read_table(str(out), table).num_rows for table in before} == before
    assert check_dataset(str(out)).ok


def test_timer_must_fit_the_device():
    assert resolve_timer("auto", interpreter=True) == "thread_cpu"
    assert resolve_timer("auto", interpreter=False) == "cuda_event"
    assert resolve_timer("process_cpu", interpreter=True) == "process_cpu"
    with pytest.raises(HarvestError, match="--timer cuda_graph: the interpreter"):
        resolve_timer("cuda_graph", interpreter=True)
    with pytest.raises(HarvestError, match="--timer thread_cpu: a GPU"):
        resolve_timer("thread_cpu", interpreter=False)
