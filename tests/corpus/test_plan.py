from __future__ import annotations

from corpus.plan import PlanRequest, plan_runs, shard
from corpus.suite.registry import load_suite, select


def _plan(max_configs=3, seed=0, model="interpreter"):
    specs = select(load_suite(), ["softmax", "add_broadcast"])
    request = PlanRequest("tiny", ("float32",), (), max_configs, seed, model, {"triton": "x"})
    return plan_runs(specs, request)


def test_plan_is_deterministic_and_keyed_by_device_model():
    first, second = _plan(), _plan()
    assert [r.run_id for r in first] == [r.run_id for r in second]
    assert [[p.config.id for p in r.configs] for r in first] == [[p.config.id for p in r.configs] for r in second]
    assert {r.run_id for r in _plan(model="NVIDIA H100 (sm 9.0)")}.isdisjoint({r.run_id for r in first})
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
