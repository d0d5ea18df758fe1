"""Identity of what a config executes: real compiles for sm_90 on the CPU."""

from __future__ import annotations

from dataclasses import replace

import pytest

from corpus.harvest.binary import binary_hash, launch_key
from corpus.harvest.compile_worker import CompileHandler, CompileInit, CompileTask
from corpus.suite.spec import Config
from schemas.enums import Status
from tests.corpus.harvest.twin_kernels import OTHER, TWINS

DIMS = {"N": 1000}


@pytest.fixture(scope="module")
def compiled():
    handler = CompileHandler(
        CompileInit(("tests.corpus.harvest.twin_kernels",), "sm_90", static_stats=False)
    )

    def compile_config(config: Config):
        outcome = handler(CompileTask("test_scale_copy", DIMS, "float32", 0, config))
        assert outcome.status == Status.OK.value, outcome.error
        return outcome

    return compile_config


def test_num_stages_of_a_loop_free_kernel_is_one_binary_and_one_launch(compiled):
    outcomes = [compiled(config) for config in TWINS]
    assert len({o.binary_hash for o in outcomes}) == 1
    assert len({o.launch_key for o in outcomes}) == 1
    assert len({o.program_key for o in outcomes}) == 1
    assert all(o.binary_hash and len(o.binary_hash) == 16 for o in outcomes)


def test_other_meta_parameters_or_warps_are_other_binaries(compiled):
    twin = compiled(TWINS[0])
    other = compiled(OTHER)
    more_warps = compiled(Config({"BLOCK": 64}, num_warps=4, num_stages=1))
    assert len({twin.binary_hash, other.binary_hash, more_warps.binary_hash}) == 3
    assert other.launch_key != twin.launch_key  # BLOCK=128 halves the grid
    # the interpreter ignores num_warps: same program as the twin, another binary on a GPU
    assert more_warps.program_key == twin.program_key


def test_binary_hash_covers_bytes_and_launch_metadata_but_not_build_options():
    asm = {"ttir": "module {}", "cubin": b"\x7fELF-binary"}
    meta = {"name": "k", "num_warps": 4, "shared": 0, "num_stages": 2, "hash": "abc"}
    base = binary_hash(asm, meta)
    assert base == binary_hash(asm, {**meta, "num_stages": 3, "hash": "def"})
    assert base != binary_hash(asm, {**meta, "shared": 1024})
    assert base != binary_hash(asm, {**meta, "some_new_launch_field": 1})
    assert base != binary_hash({**asm, "cubin": b"\x7fELF-other"}, meta)
    assert binary_hash({"ttir": "module {}"}, meta) is None


def test_launch_key_leaves_out_constexprs_unless_asked():
    args = {"n": 10, "BLOCK": 64}
    constexprs = frozenset({"BLOCK"})
    assert launch_key((4,), args, constexprs) == launch_key(
        (4,), {**args, "BLOCK": 128}, constexprs
    )
    assert launch_key((4,), args, constexprs, constexprs=True) != launch_key(
        (4,), {**args, "BLOCK": 128}, constexprs, constexprs=True
    )
    assert launch_key((4,), args, constexprs) != launch_key((2,), args, constexprs)
    assert launch_key((4,), args, constexprs) != launch_key((4,), {**args, "n": 11}, constexprs)


H100_PCIE_SMS = 114
"""An SM count that is not the nominal H100 SXM's 132 that meta inputs assume by default."""


def test_compile_and_plan_bind_the_harvested_gpus_sm_count():
    """A persistent kernel's program count is a runtime argument Triton specializes (divisible
    by 16 or not): 128 tiles on the nominal 132-SM device launch 128 programs, on a 114-SM GPU
    114. Compiled and planned with the nominal count, every such config's launch on that GPU
    missed Triton's cache (the benchmark worker compiled another binary than the one whose IR
    and statistics the row holds, ``launch_verified`` false) and the planned grid was wrong."""
    from corpus.harvest.plan import PlanRequest, plan_runs
    from corpus.suite.registry import load_suite, select

    specs = select(load_suite(), ["persistent_matmul"])
    spec = specs["persistent_matmul"]
    dims = {"M": 512, "N": 1024, "K": 64, "TRANS_B": 1}
    config = Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4, num_stages=2)
    handler = CompileHandler(CompileInit(("corpus.suite.kernels",), "sm_90", static_stats=False, sm_count=H100_PCIE_SMS))
    outcome = handler(CompileTask("persistent_matmul", dims, "float16", 0, config))
    assert outcome.status == Status.OK.value, outcome.error
    # what a launch on the 114-SM GPU binds: its inputs carry the device's SM count
    on_gpu = {**spec.make_inputs(dims, "float16", "meta", 0), "num_programs": H100_PCIE_SMS}
    grid, args = spec.bind(on_gpu, dims, config)
    assert grid == (H100_PCIE_SMS,) and args["NUM_PROGRAMS"] == H100_PCIE_SMS
    constexprs = frozenset(p.name for p in spec.kernel.params if p.is_constexpr)
    assert outcome.launch_key == launch_key(grid, args, constexprs)

    request = PlanRequest("default", ("float16",), (), None, 0, "NVIDIA H100 PCIe (sm 9.0)", {}, "sm_90", H100_PCIE_SMS)
    grids = [p.grid[0] for run in plan_runs(specs, request) for p in run.configs if p.grid]
    assert max(grids) == H100_PCIE_SMS
    nominal = replace(request, sm_count=None)  # a CPU plan or an unknown GPU keeps the nominal count
    assert [r.run_id for r in plan_runs(specs, nominal)] != [r.run_id for r in plan_runs(specs, request)]
