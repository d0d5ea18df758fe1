"""``num_stages`` must change the compiled kernel of every family that tunes it.

Triton pipelines only loads that feed a ``tl.dot`` on its own; a loop of plain loads is
pipelined only when its ``tl.range`` carries ``num_stages`` (see ``kernels/_rowwise.py``).
A family that sweeps num_stages without that gives configs that differ in name only. For
each such family, two configs that differ only in ``num_stages`` (lowest vs highest, valid on
the same ``default`` shape) are compiled for sm_90 without a GPU and their TTGIR compared.
"""

from __future__ import annotations

import re

import pytest

from corpus.suite.spec import Config, Dims, KernelSpec, shape_name

TARGET = "sm_90"
LOCATION = re.compile(r"\s*loc\(.*?\)$|^#loc.*$", re.MULTILINE)


def stage_pair(spec: KernelSpec) -> tuple[Dims, str, Config, Config] | None:
    """(shape, dtype, config, same config with the highest num_stages) for the smallest
    ``default`` shape where both are valid; None when the space does not vary num_stages."""
    space = spec.config_space()
    stages = sorted({c.num_stages for c in space})
    if len(stages) < 2:
        return None
    dtype = spec.dtypes[0]
    in_space = {c.id for c in space}
    for dims in sorted(spec.shapes_for("default"), key=lambda d: spec.bytes_moved(d, dtype)):
        for low in space:
            if low.num_stages != stages[0] or spec.invalid_reason(low, dims, dtype):
                continue
            high = Config(low.kwargs, low.num_warps, stages[-1], low.num_ctas, low.maxnreg)
            if high.id in in_space and spec.invalid_reason(high, dims, dtype) is None:
                return dims, dtype, low, high
    raise AssertionError(
        f"{spec.name} sweeps num_stages {stages} but no two configs differing only in it are valid"
    )


def ttgir(spec: KernelSpec, dims: Dims, dtype: str, config: Config) -> str:
    from extract.compile import compile_call

    _, args = spec.bind(spec.make_inputs(dims, dtype, "meta", 0), dims, config)
    result = compile_call(spec.kernel, args, target=TARGET, **config.compile_options())
    return LOCATION.sub("", str(result.asm["ttgir"]))


@pytest.mark.slow
def test_num_stages_changes_the_compiled_kernel(specs: dict[str, KernelSpec], family: str) -> None:
    spec = specs[family]
    pair = stage_pair(spec)
    if pair is None:
        pytest.skip(f"{family} does not sweep num_stages")
    dims, dtype, low, high = pair
    assert ttgir(spec, dims, dtype, low) != ttgir(spec, dims, dtype, high), (
        f"{low.launch} and num_stages={high.num_stages} compile to the same TTGIR on {shape_name(dims)}: "
        "put num_stages on the load loop (tl.range(..., num_stages=NUM_STAGES))"
    )
