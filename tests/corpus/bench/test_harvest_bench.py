"""The harvest benchmark's building blocks: plain-autotune arguments of a suite family, and
rounds that alternate their sides."""

from __future__ import annotations

from corpus.bench.autotune import autotune_arguments, thread_cpu_bench
from corpus.bench.harvest import alternate, ratio_text
from corpus.harvest.plan import PlanRequest, plan_runs
from corpus.suite.registry import load_suite, select


def test_derived_constexprs_become_per_config_arguments_and_the_grid_follows_them() -> None:
    specs = select(load_suite(("corpus.suite.kernels",)), ("softmax",))
    run = plan_runs(specs, PlanRequest("tiny", ("float32",), (), 4, 0, "interpreter", {"t": "x"}))[0]
    spec = specs["softmax"]
    configs = [p.config for p in run.configs if p.skip_reason is None]
    inputs = spec.make_inputs(run.dims, run.dtype, "meta", run.seed)
    shared, own, grid = autotune_arguments(spec, inputs, run.dims, configs)
    for config, values in zip(configs, own):
        expected_grid, args = spec.bind(inputs, run.dims, config)
        assert {**shared, **values} == args  # together, exactly the harvest's launch arguments
        assert set(config.kwargs) <= set(values) and not set(values) & set(shared)
        assert grid({**shared, **values}) == expected_grid
    assert any(len(values) > len(config.kwargs) for config, values in zip(configs, own))  # e.g. SINGLE_CHUNK


def test_the_bench_launches_each_config_once_untimed_then_the_timed_reps() -> None:
    calls = []
    quantiles = thread_cpu_bench(4)(lambda: calls.append(1), quantiles=(0.5, 0.2, 0.8))
    assert len(calls) == 5 and len(quantiles) == 3 and all(q >= 0 for q in quantiles)


def test_rounds_alternate_which_side_goes_first() -> None:
    order = []
    results = alternate(3, [lambda r: order.append(("a", r)) or r, lambda r: order.append(("b", r)) or -r])
    assert order == [("a", 0), ("b", 0), ("b", 1), ("a", 1), ("a", 2), ("b", 2)]
    assert results == [[0, 1, 2], [0, -1, -2]]
    assert ratio_text([1.0, 2.0, 4.0]).startswith("2.00x (median of 3 rounds, 1.00-4.00)")
