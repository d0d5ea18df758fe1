"""The parts of Triton's private API that the GPU paths of corpus.record and corpus.guide rely
on, checked on real Triton objects without a GPU (``make test-compat`` runs this under 3.6 too):
a GPU session must not be the first to find one renamed.

- ``Autotuner.do_bench`` is a ``cached_property`` (the recorder and the plug-in hand an
  autotuner a bench by setting an instance attribute of that name), ``_do_bench`` holds a bench
  the user gave;
- ``Autotuner.prune_configs`` calls ``early_config_prune(configs, named_args, **kwargs)``
  itself (the plug-in finds its autotuner as ``self`` of its caller's frame);
- the knobs read and set by name exist;
- Triton's ptxas is found by ``get_ptxas(arch).path`` (without it the target check is skipped
  silently).
"""

from __future__ import annotations

import functools
from typing import Any

import triton
import triton.language as tl
from triton import knobs
from triton.runtime.autotuner import Autotuner

from corpus.guide.plugin import _calling_autotuner
from extract.compile import ptxas_architectures

CONFIGS = [triton.Config({"BLOCK": 32}, num_warps=1), triton.Config({"BLOCK": 64}, num_warps=2)]


def _kernel(pruner: Any = None, do_bench: Any = None) -> Any:
    @triton.jit
    def scale(x_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) * 2, mask=offsets < n)

    prune = {"early_config_prune": pruner} if pruner else None
    return triton.autotune(CONFIGS, key=["n"], prune_configs_by=prune, do_bench=do_bench)(scale)


def test_do_bench_is_a_cached_property_an_instance_attribute_replaces() -> None:
    assert isinstance(Autotuner.__dict__["do_bench"], functools.cached_property)
    tuner = _kernel()
    assert tuner._do_bench is None  # no bench given: Triton's driver would supply one

    def bench(fn: Any, quantiles: Any = None) -> list[float]:
        return [1.0, 1.0, 1.0]

    tuner.__dict__["do_bench"] = bench  # what corpus.record and corpus.guide do
    assert tuner.do_bench is bench
    assert _kernel(do_bench=bench)._do_bench is bench


def test_prune_configs_calls_early_config_prune_from_the_autotuner_itself() -> None:
    seen: dict[str, Any] = {}

    def pruner(configs: list[Any], named_args: dict[str, Any], **kwargs: Any) -> list[Any]:
        seen.update(autotuner=_calling_autotuner(), named_args=named_args, kwargs=kwargs)
        return configs[:1]

    tuner = _kernel(pruner)
    tuner.nargs = {"x_ptr": None, "n": 100}  # what Autotuner.run sets before pruning
    assert tuner.prune_configs({"grid": (1,)}) == CONFIGS[:1]
    assert seen["autotuner"] is tuner
    assert seen["named_args"] == {"x_ptr": None, "n": 100} and seen["kwargs"] == {"grid": (1,)}
    assert (tuner.keys, list(tuner.cache), tuner.configs) == (["n"], [], CONFIGS)
    assert callable(tuner.pre_hook)  # reset_to_zero / restore_value, replayed on copies


def test_the_knobs_used_by_name_exist() -> None:
    for group, names in (
        (knobs.cache, ("dir",)),
        (knobs.runtime, ("interpret", "debug", "launch_enter_hook", "launch_exit_hook")),
        (knobs.compilation, ("listener", "always_compile", "instrumentation_mode")),
        (knobs.nvidia, ("cuobjdump", "nvdisasm", "ptxas")),
    ):
        for name in names:
            assert hasattr(group, name), f"knobs.{type(group).__name__}.{name}"
    for group in (knobs.cache, knobs.runtime):
        with group.scope():  # the self-test and the compile-mode switch rely on it
            pass


def test_tritons_ptxas_knows_the_h100() -> None:
    known = ptxas_architectures(90)
    assert known is not None and "sm_90" in known and "sm_80" in known
