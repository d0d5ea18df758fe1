from __future__ import annotations

from corpus.harvest.plan import PlanRequest, launch_grid, plan_runs, shard
from corpus.suite.registry import load_suite, select
from corpus.suite.spec import Config


def _plan(max_configs=3, seed=0, model="interpreter"):
    specs = select(load_suite(), ["softmax", "add_broadcast"])
    request = PlanRequest("tiny", ("float32",), (), max_configs, seed, model, {"triton": "x"})
    return plan_runs(specs, request)


def test_plan_is_deterministic_and_keyed_by_device_model():
    first, second = _plan(), _plan()
    assert [r.run_id for r in first] == [r.run_id for r in second]
    assert [[p.config.id for p in r.configs] for r in first] == [
        [p.config.id for p in r.configs] for r in second
    ]
    assert {r.run_id for r in _plan(model="NVIDIA H100 (sm 9.0)")}.isdisjoint(
        {r.run_id for r in first}
    )
    assert len({r.run_id for r in first}) == len(first)


def test_sample_includes_the_default_config():
    for run in _plan(max_configs=2):
        assert len(run.configs) == 2
        assert run.default_config_id in {p.config.id for p in run.configs}


def test_shards_partition_the_plan():
    runs = _plan()
    parts = [shard(runs, i, 3) for i in range(3)]
    ids = [r.run_id for part in parts for r in part]
    assert sorted(ids) == sorted(r.run_id for r in runs)
    assert len(ids) == len(set(ids))


def test_plan_carries_launch_grids_roles_and_the_problem_split():
    specs = select(load_suite(), ["matmul", "softmax"])
    request = PlanRequest("tiny", ("float32",), (), None, 0, "interpreter", {"triton": "x"})
    runs = plan_runs(specs, request)
    skipped_with_grid = 0
    for run in runs:
        spec = specs[run.family]
        # The benchmark worker binds real tensors; the plan bound meta ones.
        real = spec.make_inputs(run.dims, run.dtype, "cpu", run.seed)
        for planned in run.configs:
            assert planned.grid == tuple(spec.bind(real, run.dims, planned.config)[0]), (
                planned.config.launch
            )
            skipped_with_grid += planned.skip_reason is not None
        assert {**run.sizes, **run.flags} == dict(run.dims)
        assert set(run.flags) == set(spec.flag_dims)
        knobs = {name for p in run.configs for name in p.config.kwargs}
        assert run.roles == {name: spec.role_of(name) for name in knobs}
    assert skipped_with_grid, (
        "configs the spec rules out still get a grid (bind does not refuse them)"
    )
    matmul = next(r for r in runs if r.family == "matmul")
    assert set(matmul.flags) == {"TRANS_B"} and set(matmul.sizes) == {"M", "N", "K"}
    assert matmul.roles["BLOCK_K"] == "tile_k" and matmul.roles["GROUP_M"] == "group"


def test_a_config_bind_refuses_is_planned_without_a_grid():
    spec = load_suite()["add_broadcast"]
    dims = spec.shapes_for("tiny")[0]
    inputs = spec.make_inputs(dims, "float32", "meta", 0)
    assert launch_grid(spec, inputs, dims, spec.default_config()) == (1, 2)
    # A config without the meta-parameters bind reads: bind raises, the plan records no grid.
    assert launch_grid(spec, inputs, dims, Config({"BLOCK_M": 16})) is None


def test_resume_line_groups_thousands_as_the_estimate_beside_it_does():
    from collections import Counter

    from corpus.harvest.resume import ResumePlan

    line = ResumePlan(todo=[], complete_runs=82, skipped_configs=9400, remeasured=Counter({"timer x": 1200})).describe()
    # "9400 config(s) already measured" sat above "this harvest measures 3,198 configs"
    assert "9,400 config(s) measured before" in line and "1,200 config(s) measured again (timer x)" in line
    # "... already measured ... skipped" read as the progress bar's skipped status (ruled out)
    assert "skipped" not in line


def test_a_harvest_that_skips_nothing_says_only_what_it_does():
    from corpus.harvest.resume import ResumePlan

    # "12 run(s) to do; 0 run(s) complete; 0 config(s) already measured ... skipped" on a new dataset
    assert ResumePlan(todo=[]).describe() == "0 run(s) to do"
    assert ResumePlan(todo=[], complete_runs=1).describe() == (
        "0 run(s) to do; 1 run(s) complete; 0 config(s) measured before with the same bench settings, not measured again"
    )
