"""What resume, claims and imports take to be committed already (:mod:`corpus.harvest.resume`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas import CorruptFileError, DatasetWriter

from ...schemas.conftest import write_run


def _partial_copy(path: Path) -> None:
    """What an interrupted copy leaves: the file's first half, so no Parquet footer (pyarrow:
    'Parquet magic bytes not found in footer')."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_an_unreadable_runs_file_is_refused_not_taken_for_a_new_dataset(tmp_path: Path) -> None:
    """A partly copied ``runs`` file made resume read no committed run: the rerun of a finished
    harvest measured every run again, and an import wrote every tuning again under the
    harvest_id it had (pyarrow's message says 'not found', which was taken for a missing table)."""
    from corpus.harvest.claims import committed_harvests
    from corpus.harvest.resume import read_existing

    out = str(tmp_path / "ds")
    writer = DatasetWriter(out)
    for index in range(2):
        write_run(writer, index)
    assert len(committed_harvests(out)) == 2
    victim = sorted(Path(out, "runs").rglob("*.parquet"))[0]
    _partial_copy(victim)
    with pytest.raises(CorruptFileError, match=victim.name):
        committed_harvests(out)
    with pytest.raises(CorruptFileError, match=victim.name):
        read_existing(out, "runs", ["run_id"])


def test_a_missing_table_is_a_new_dataset(tmp_path: Path) -> None:
    from corpus.harvest.claims import committed_harvests
    from corpus.harvest.resume import read_existing

    assert read_existing(str(tmp_path / "nothing"), "runs", ["run_id"]) is None
    assert committed_harvests(str(tmp_path / "nothing")) == set()


def test_a_budgeted_harvest_waiting_on_a_claim_counts_what_another_budget_skipped_as_done(
    tmp_path: Path,
) -> None:
    """The gap: a ``--budget`` harvest that waited for another budgeted harvest's claim on a
    run asked resume as a harvest without a budget, so it benchmarked the configs the other's
    budget had skipped, where its rerun (and its own plan) counted them done."""
    from corpus.harvest.claims import RunClaims
    from corpus.harvest.plan import PlannedConfig, PlannedRun
    from corpus.harvest.resume import BENCH_SETTINGS, BUDGET_SKIP
    from corpus.suite.spec import Config

    out = str(tmp_path / "ds")
    configs = tuple(PlannedConfig(Config({"BLOCK": 2**i})) for i in range(3))
    run = PlannedRun(
        "fam", "tiny", {"N": 8}, "float32", 0, "r" * 16, "k1", {}, configs, configs[0].config.id
    )
    settings = {**dict.fromkeys(BENCH_SETTINGS, 1), "timer": "thread_cpu"}
    measured = [{"status": "ok", "median_ms": 1.0}]
    measured += [{"status": "skipped", "error": f"{BUDGET_SKIP} 1 (rank 2 of 3)"}] * 2
    writer = DatasetWriter(out)
    writer.write(
        "measurements",
        [
            {
                "run_id": run.run_id,
                "harvest_id": "a",
                "config_id": p.config.id,
                "arch": "sm_90",
                **row,
            }
            for p, row in zip(configs, measured)
        ],
    )
    committed = {
        "kernel_id": "k1",
        "family": "fam",
        "device_kind": "cuda",
        "arch": "sm_90",
        "n_configs": 3,
    }
    writer.commit_run([{"run_id": run.run_id, "harvest_id": "a", **committed, **settings}])

    budgeted = RunClaims(out, known=(), budgeted=True)
    assert budgeted.claim(run, settings, own_harvest="b", before_waiting=lambda: None) is None
    unbudgeted = RunClaims(out, known=())  # a harvest without --budget measures what was skipped
    left = unbudgeted.claim(run, settings, own_harvest="c", before_waiting=lambda: None)
    assert left is not None and [p.config.id for p in left.configs] == [
        p.config.id for p in configs[1:]
    ]
    unbudgeted.release_all()


def _budgeted_run(out: str) -> tuple[object, dict[str, object]]:
    """A dataset at ``out`` holding one committed run of 3 configs that a ``--budget`` harvest
    tuned: 1 benchmarked, 2 left unbenchmarked. Returns the run's plan and its bench settings."""
    from corpus.harvest.plan import PlannedConfig, PlannedRun
    from corpus.harvest.resume import BENCH_SETTINGS, BUDGET_SKIP
    from corpus.suite.spec import Config

    configs = tuple(PlannedConfig(Config({"BLOCK": 2**i})) for i in range(3))
    run = PlannedRun("fam", "tiny", {"N": 8}, "float32", 0, "r" * 16, "k1", {}, configs, configs[0].config.id)
    settings = {**dict.fromkeys(BENCH_SETTINGS, 1), "timer": "thread_cpu"}
    measured = [{"status": "ok", "median_ms": 1.0}]
    measured += [{"status": "skipped", "error": f"{BUDGET_SKIP} 1: model m@0 ranked it 2 of 3"}] * 2
    writer = DatasetWriter(out)
    writer.write(
        "measurements",
        [
            {"run_id": run.run_id, "harvest_id": "a", "config_id": p.config.id, "arch": "sm_90", **row}
            for p, row in zip(configs, measured)
        ],
    )
    committed = {"kernel_id": "k1", "family": "fam", "device_kind": "cuda", "arch": "sm_90", "n_configs": 3}
    writer.commit_run([{"run_id": run.run_id, "harvest_id": "a", **committed, **settings}])
    return run, settings


def test_a_budgeted_rerun_says_which_configs_it_counts_done_without_a_measurement(tmp_path: Path) -> None:
    """A rerun under another --budget found the run complete and said "3 config(s) already
    measured with the same bench settings skipped", though a budget had left 2 of them
    unbenchmarked; its "nothing to do" pointed at --no-resume (which benchmarks the budget's
    choice again) rather than at a harvest without --budget, which measures them."""
    from corpus.harvest.resume import resume_plan

    out = str(tmp_path / "ds")
    run, settings = _budgeted_run(out)
    again = resume_plan(out, [run], settings, budgeted=True)
    assert again.complete_runs == 1 and not again.todo
    described = again.describe()
    assert "1 config(s) measured before with the same bench settings, not measured again" in described
    assert "2 config(s) an earlier --budget harvest left unbenchmarked" in described
    assert "a harvest without --budget measures them" in again.budget_skip_text()
    unbudgeted = resume_plan(out, [run], settings)
    assert unbudgeted.budget_skipped == 0 and len(unbudgeted.todo[0].configs) == 2
    assert "unbenchmarked" not in unbudgeted.describe()
