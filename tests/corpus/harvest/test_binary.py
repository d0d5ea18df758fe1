"""Identity of what a config executes: real compiles for sm_90 on the CPU."""

from __future__ import annotations

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
