"""Static shards: ``--shard auto`` from job-array variables, and shards balanced by cost."""

from __future__ import annotations

import io
import os
import random
import re
import shutil
from dataclasses import replace

import pytest
from rich.console import Console

from corpus.harvest.app import HarvestConfig, run_harvest
from corpus.harvest.checks import HarvestInputError, harvest_lock
from corpus.harvest.plan import PlanRequest, plan_runs, shard, shard_assignment
from corpus.harvest.settings import SettingsError, array_shard, read_settings
from corpus.harvest.shard_plans import RECORDS, ShardPlan, check_shard_plan
from corpus.suite.registry import load_suite
from schemas import read_table

BALANCE_FACTOR = 1.05
"""Stated bound: on the default-scale plan split 8 ways, the most expensive shard's estimated
cost is within 5% of the mean (split by run_id hash it is about 2.2x the mean)."""


def _shard_of(**env: str) -> tuple[int, int]:
    return array_shard(read_settings({"HOME": "/nonexistent", **env}))


def test_slurm_array_variables_give_the_shard():
    assert _shard_of(SLURM_ARRAY_TASK_ID="2", SLURM_ARRAY_TASK_COUNT="4") == (2, 4)
    # --array=3-6: ids start at SLURM_ARRAY_TASK_MIN
    assert _shard_of(
        SLURM_ARRAY_TASK_ID="5", SLURM_ARRAY_TASK_COUNT="4", SLURM_ARRAY_TASK_MIN="3"
    ) == (2, 4)
    # --array=10-16:2 -> ids 10, 12, 14, 16
    step = {
        "SLURM_ARRAY_TASK_COUNT": "4",
        "SLURM_ARRAY_TASK_MIN": "10",
        "SLURM_ARRAY_TASK_STEP": "2",
    }
    assert [_shard_of(SLURM_ARRAY_TASK_ID=str(i), **step)[0] for i in (10, 12, 14, 16)] == [
        0,
        1,
        2,
        3,
    ]


def test_a_slurm_array_of_uneven_ids_is_refused_by_every_task():
    # --array=0-3,5: 5 tasks, ids 0..3 and 5 (MIN 0, MAX 5, COUNT 5); with a step of 1, ids
    # 0..3 harvested shards 0..3 and id 5 alone stopped (shard 5 of 5), so shard 4 was never
    # harvested. Every task now stops, naming the variables.
    uneven = {"SLURM_ARRAY_TASK_COUNT": "5", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "5"}
    for task in ("0", "3", "5"):
        with pytest.raises(SettingsError, match=r"not evenly spaced .*SLURM_ARRAY_TASK_MAX=5"):
            _shard_of(SLURM_ARRAY_TASK_ID=task, SLURM_ARRAY_TASK_STEP="1", **uneven)
    # --array=1-7:2 as Slurm exports it: fine
    even = {"SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "7"}
    assert _shard_of(SLURM_ARRAY_TASK_ID="7", SLURM_ARRAY_TASK_STEP="2", **even) == (3, 4)


def test_kubernetes_indexed_job_variables_give_the_shard():
    assert _shard_of(JOB_COMPLETION_INDEX="3", KERNEL_CORPUS_SHARD_COUNT="8") == (3, 8)


def test_slurm_wins_over_kubernetes_when_both_are_set():
    both = {"JOB_COMPLETION_INDEX": "0", "KERNEL_CORPUS_SHARD_COUNT": "8"}
    assert _shard_of(SLURM_ARRAY_TASK_ID="1", SLURM_ARRAY_TASK_COUNT="2", **both) == (1, 2)


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({}, "neither"),
        ({"JOB_COMPLETION_INDEX": "1"}, "KERNEL_CORPUS_SHARD_COUNT"),
        ({"SLURM_ARRAY_TASK_ID": "1"}, "SLURM_ARRAY_TASK_COUNT"),
        ({"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_COUNT": "2"}, "SLURM_ARRAY_TASK_ID='x'"),
        ({"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_COUNT": "4"}, "outside 0..3"),
        (
            {
                "SLURM_ARRAY_TASK_ID": "1",
                "SLURM_ARRAY_TASK_COUNT": "4",
                "SLURM_ARRAY_TASK_MIN": "2",
            },
            "outside",
        ),
        (
            {
                "SLURM_ARRAY_TASK_ID": "3",
                "SLURM_ARRAY_TASK_COUNT": "4",
                "SLURM_ARRAY_TASK_STEP": "2",
            },
            "multiple",
        ),
        ({"JOB_COMPLETION_INDEX": "0", "KERNEL_CORPUS_SHARD_COUNT": "0"}, "outside"),
    ],
)
def test_missing_or_bad_variables_are_refused_by_name(env, named):
    with pytest.raises(SettingsError, match=named):
        _shard_of(**env)


def test_odd_array_variables_do_not_matter_without_shard_auto():
    settings = read_settings({"HOME": "/nonexistent", "SLURM_ARRAY_TASK_ID": "not a number"})
    assert settings.array_env == {"SLURM_ARRAY_TASK_ID": "not a number"}


def test_harvest_with_shard_auto_plans_the_environment_shard(tmp_path):
    env = {"HOME": str(tmp_path), "SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "2"}
    common = {"families": ("softmax", "add_broadcast"), "dtypes": ("float32",), "max_configs": 2}
    common |= {"device": "cpu", "dry_run": True, "allow_empty": True}
    console = Console(file=io.StringIO())
    auto = run_harvest(
        HarvestConfig(str(tmp_path / "d"), shard="auto", **common), read_settings(env), console
    )
    explicit = run_harvest(
        HarvestConfig(str(tmp_path / "d"), shard=(1, 2), **common), read_settings(env), console
    )
    everything = run_harvest(
        HarvestConfig(str(tmp_path / "d"), **common), read_settings(env), console
    )
    assert [r.run_id for r in auto.planned] == [r.run_id for r in explicit.planned]
    assert 0 < len(auto.planned) < len(everything.planned)


def test_a_task_says_which_shard_shard_auto_gave_it(tmp_path):
    # a Slurm task's log did not say which shard --shard auto resolved to (--array=1-7:2:
    # task 5 is shard 2 of 4), nor which variables it read
    env = {"HOME": str(tmp_path), "SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_COUNT": "4"}
    env |= {"SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_STEP": "2"}
    config = HarvestConfig(
        str(tmp_path / "d"), families=("softmax",), dtypes=("float32",), max_configs=2,
        device="cpu", dry_run=True, allow_empty=True, shard="auto",
    )  # fmt: skip
    console = Console(file=io.StringIO(), width=200)
    run_harvest(config, read_settings(env), console)
    printed = console.file.getvalue()
    assert re.search(
        r"^shard +2/4 \(--shard auto: SLURM_ARRAY_TASK_ID=5 SLURM_ARRAY_TASK_MIN=1 "
        r"SLURM_ARRAY_TASK_STEP=2 SLURM_ARRAY_TASK_COUNT=4\)$",
        printed,
        re.M,
    ), printed


@pytest.fixture(scope="module")
def default_plan():
    request = PlanRequest(
        "default", None, (), None, 0, "NVIDIA H100 80GB HBM3", {"triton": "x"}, "sm_90"
    )
    return plan_runs(load_suite(), request)


def test_shards_partition_the_plan_the_same_whatever_its_order(default_plan):
    parts = [shard(default_plan, i, 8) for i in range(8)]
    ids = [r.run_id for part in parts for r in part]
    assert sorted(ids) == sorted(r.run_id for r in default_plan) and len(ids) == len(set(ids))
    shuffled = list(default_plan)
    random.Random(1).shuffle(shuffled)
    assert shard_assignment(shuffled, 8) == shard_assignment(default_plan, 8)


def test_default_plan_shards_are_balanced_by_estimated_cost(default_plan):
    costs = [r.estimated_cost for r in default_plan]
    assert max(costs) > 100 * min(costs), "the plan's run costs should be skewed"
    loads = [sum(r.estimated_cost for r in shard(default_plan, i, 8)) for i in range(8)]
    mean = sum(loads) / len(loads)
    assert max(loads) <= BALANCE_FACTOR * mean, (max(loads) / mean, loads)


def test_cost_grows_with_configs_and_problem_size(default_plan):
    by_family: dict[str, list] = {}
    for run in default_plan:
        by_family.setdefault(run.family, []).append(run)
    runs = max(by_family.values(), key=len)
    small = min(runs, key=lambda r: r.launch_work)
    large = max(runs, key=lambda r: r.launch_work)
    assert large.launch_work > small.launch_work
    halved = type(large)(**{**large.__dict__, "configs": large.configs[: len(large.configs) // 2]})
    assert halved.estimated_cost < large.estimated_cost


def test_command_line_takes_shard_auto_and_ray():
    from corpus.harvest.__main__ import parse

    assert parse(["--shard", "auto"]).shard == "auto"
    assert parse(["--shard", "1/4"]).shard == (1, 4)
    assert parse(["--ray"]).ray == "auto"
    assert parse(["--ray", "ray://head:10001"]).ray == "ray://head:10001"
    assert parse([]).ray is None
    with pytest.raises(SystemExit):
        parse(["--shard", "automatic"])


def test_ray_refuses_a_shard(tmp_path):
    from corpus.harvest.app import HarvestError

    config = HarvestConfig(str(tmp_path / "d"), shard=(0, 2), ray="local", device="cpu")
    with pytest.raises(HarvestError, match="--shard"):
        run_harvest(config, read_settings({"HOME": str(tmp_path)}), Console(file=io.StringIO()))


def _records(out) -> list[str]:
    directory = out / ".locks" / RECORDS
    return sorted(os.listdir(directory)) if directory.is_dir() else []


def test_a_shard_given_other_selection_flags_is_refused_before_any_work(tmp_path):
    # shard 0/2 with --max-configs 2 and shard 1/2 with --max-configs 40 split the plan
    # differently: on the tiny float32 plan 20 of 69 runs fell to no shard, 20 to both, and
    # both shards said "harvest finished"
    out = tmp_path / "d"
    out.mkdir()
    common = {
        "families": ("softmax", "add_broadcast", "cumsum"),
        "dtypes": ("float32",),
        "device": "cpu",
    }

    def shard_of(index: int, max_configs: int, dry_run: bool) -> object:
        config = HarvestConfig(
            str(out),
            shard=(index, 2),
            max_configs=max_configs,
            dry_run=True,
            command=f"mc {max_configs}",
            **common,
        )
        planned = run_harvest(config, read_settings(), Console(file=io.StringIO())).planned
        if (
            not dry_run
        ):  # what the harvest records before it measures (the rest is tested elsewhere)
            whole = run_harvest(
                replace(config, shard=(0, 1)), read_settings(), Console(file=io.StringIO())
            ).planned
            check_shard_plan(str(out), index, ShardPlan.of(whole, 2, config.command), record=True)
        return planned

    shard_of(0, 2, dry_run=False)
    assert len(_records(out)) == 1
    with pytest.raises(
        HarvestInputError,
        match=r"--shard 1/2: .* unfinished harvest split into 2 shard\(s\) another way.*`mc 2`.*--max-configs",
    ):
        shard_of(1, 40, dry_run=True)  # the dry run says what the harvest would refuse
    shard_of(1, 2, dry_run=False)  # the same plan: fine
    shard_of(0, 6, dry_run=False)  # --max-configs 6 splits these runs as 2 does: harmless, accepted
    assert len(_records(out)) == 1


def test_a_finished_sharded_harvest_does_not_stop_the_next_one(reference_dataset, tmp_path):
    out = tmp_path / "d"
    shutil.copytree(reference_dataset, out)
    done = sorted(r["run_id"] for r in read_table(str(out), "runs", columns=["run_id"]).to_pylist())
    finished = ShardPlan(2, {run: i % 2 for i, run in enumerate(done)}, "first")
    check_shard_plan(str(out), 0, finished, record=True)
    unfinished = ShardPlan(
        2, {**{run: (i + 1) % 2 for i, run in enumerate(done)}, "not-harvested": 0}, "second"
    )
    check_shard_plan(str(out), 1, unfinished, record=True)  # the first is finished: its record goes
    assert _records(out) == [f"{unfinished.key}.json"]
    other = ShardPlan(3, {done[0]: 2, "elsewhere": 0}, "third")
    with pytest.raises(HarvestInputError, match=r"\(1 of its \d+ runs not committed.*`second`"):
        check_shard_plan(str(out), 2, other, record=True)
    disjoint = ShardPlan(2, {"a run of another device": 1}, "fourth")
    check_shard_plan(str(out), 1, disjoint, record=True)  # shares no run with it: no harm


def test_array_tasks_without_shard_auto_are_told_to_add_it(tmp_path):
    # a Slurm array whose command lacks --shard auto: every task plans the whole plan, and all
    # but the first stopped with "another harvest of the same runs is writing ... pass
    # --allow-repeat", which hid the missing flag
    out = tmp_path / "d"
    env = {"HOME": str(tmp_path), "SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "2"}
    config = HarvestConfig(str(out), families=("softmax",), dtypes=("float32",), max_configs=1, device="cpu")
    planned = run_harvest(replace(config, dry_run=True), read_settings(env), Console(file=io.StringIO())).planned
    with harvest_lock(str(out), planned, allow_repeat=False), pytest.raises(HarvestInputError) as refused:
        run_harvest(config, read_settings(env), Console(file=io.StringIO()))  # task 0 still runs
    message = str(refused.value)
    assert "another harvest of the same runs is writing" in message
    assert "a task of a job array (SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=2)" in message
    assert message.endswith("add --shard auto to split it between them")
    with harvest_lock(str(out), planned, allow_repeat=False), pytest.raises(HarvestInputError) as plain:
        run_harvest(config, read_settings({"HOME": str(tmp_path)}), Console(file=io.StringIO()))
    assert "--shard auto" not in str(plain.value)  # not in a job array: no such hint


def test_a_fifo_among_the_shard_plan_records_is_refused_without_hanging(tmp_path) -> None:
    """The records travel with a copied dataset; one read with a plain open() hung the harvest
    when it was a FIFO (and read another file's plan through a link)."""
    from schemas.errors import DatasetError
    from schemas.locking import LOCK_DIR
    from tests.fifo import raised_beside_fifo

    records = tmp_path / LOCK_DIR / RECORDS
    records.mkdir(parents=True)
    os.mkfifo(records / "other.json")
    plan = ShardPlan(2, {"run-a": 0, "run-b": 1}, "python -m corpus.harvest --shard 0/2")
    raised = raised_beside_fifo(lambda: check_shard_plan(str(tmp_path), 0, plan, record=True), records / "other.json")
    assert isinstance(raised, DatasetError) and "not a regular file" in str(raised)
