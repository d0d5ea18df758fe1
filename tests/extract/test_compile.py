"""Compiling for an explicit target without a GPU, with the JIT's own specialization."""

from __future__ import annotations

import os

import pytest
import torch
import triton
from triton.backends.compiler import GPUTarget

from extract.compile import CompileResult, compile_call, parse_target, target_string
from extract.graph import IrGraph
from tests.extract.kernels.cases import case
from tests.extract.kernels.pointwise import add_kernel


@pytest.mark.parametrize(
    "text,arch",
    [("sm_90", 90), ("sm_90a", 90), ("SM_80", 80), ("sm80", 80), ("cuda:90", 90), ("90", 90), ("sm_100a", 100)],
)
def test_parse_target_cuda_forms(text: str, arch: int) -> None:
    target = parse_target(text)
    assert (target.backend, target.arch, target.warp_size) == ("cuda", arch, 32)
    assert target_string(text) == f"cuda:{arch}"


def test_parse_target_hip_and_errors() -> None:
    assert parse_target("hip:gfx942") == GPUTarget("hip", "gfx942", 64)
    with pytest.raises(ValueError, match="unrecognised GPU target"):
        parse_target("volta")


def _pointwise_args(n_elements: int) -> dict:
    tensor = torch.empty(4096, dtype=torch.float16, device="meta")
    return {"x_ptr": tensor, "y_ptr": tensor, "out_ptr": tensor, "n_elements": n_elements, "BLOCK": 256}


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_compile_call_produces_every_stage(target: str) -> None:
    result = compile_call(add_kernel, _pointwise_args(4096), target=target, num_warps=4, num_stages=2)
    assert isinstance(result, CompileResult)
    assert {"ttir", "ttgir", "llir", "ptx", "cubin"} <= set(result.asm)
    assert isinstance(result.asm["cubin"], bytes) and result.asm["cubin"][:4] == b"\x7fELF"
    assert result.target == target_string(target)
    meta = result.metadata
    assert (meta["name"], meta["num_warps"], meta["num_stages"], meta["num_ctas"]) == ("add_kernel", 4, 2, 1)
    assert meta["target"] == result.target and meta["shared"] == 0
    assert result.compile_time_s > 0
    assert f'ttg.target = "{result.target}"' in result.asm["ttgir"]


def test_specialization_follows_the_jit() -> None:
    """Integers divisible by 16 get tt.divisibility, others not, 1 becomes a constant --
    exactly what Triton's launcher does with the same arguments."""
    divisible = compile_call(add_kernel, _pointwise_args(4096), target="sm_90").asm["ttir"]
    odd = compile_call(add_kernel, _pointwise_args(4001), target="sm_90").asm["ttir"]
    one = compile_call(add_kernel, _pointwise_args(1), target="sm_90").asm["ttir"]
    signature = divisible[divisible.index("@add_kernel") :].split("\n", 1)[0]
    assert signature.count("tt.divisibility = 16") == 4  # three pointers and n_elements
    odd_signature = odd[odd.index("@add_kernel") :].split("\n", 1)[0]
    assert odd_signature.count("tt.divisibility = 16") == 3
    one_signature = one[one.index("@add_kernel") :].split("\n", 1)[0]
    assert "%n_elements" not in one_signature  # specialized away as the constant 1


def test_cache_hit_is_reported_and_can_be_bypassed() -> None:
    args = _pointwise_args(2048)
    compile_call(add_kernel, args, target="sm_80", num_warps=2)
    again = compile_call(add_kernel, args, target="sm_80", num_warps=2)
    assert again.metadata["cache_hit"] is True
    fresh = compile_call(add_kernel, args, target="sm_80", num_warps=2, always_compile=True)
    assert fresh.metadata["cache_hit"] is False
    assert fresh.asm["ttgir"] == again.asm["ttgir"]


@pytest.mark.parametrize("before", [None, "1"])
def test_compiling_leaves_the_environment_as_it_was(before: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Setting a Triton knob writes its environment variable: a compile that bypasses the
    cache must not leave TRITON_ALWAYS_COMPILE behind, nor remove the user's (a later harvest
    in the process, or its workers, would fingerprint another toolchain)."""
    from triton import knobs

    if before is None:
        monkeypatch.delenv("TRITON_ALWAYS_COMPILE", raising=False)
    else:
        monkeypatch.setenv("TRITON_ALWAYS_COMPILE", before)
    knob_before = knobs.compilation.always_compile
    for always in (False, True):
        compile_call(add_kernel, _pointwise_args(1024), target="sm_80", num_warps=1, always_compile=always)
        assert os.environ.get("TRITON_ALWAYS_COMPILE") == before
        assert knobs.compilation.always_compile == knob_before
        assert "always_compile" not in vars(knobs.compilation)  # no override left behind


def test_missing_argument_is_named() -> None:
    args = _pointwise_args(64)
    del args["y_ptr"]
    with pytest.raises(TypeError, match="y_ptr"):
        compile_call(add_kernel, args, target="sm_90")


def test_compile_errors_are_tritons_own() -> None:
    args = {**_pointwise_args(64), "BLOCK": 100}  # tl.arange needs a power of two
    with pytest.raises(triton.compiler.errors.CompilationError):
        compile_call(add_kernel, args, target="sm_90")


def test_graphs_from_a_compile_result() -> None:
    item = case("for_loop")
    result = compile_call(item.fn, item.args, target="sm_90", num_stages=2)
    for level in ("ttir", "ttgir"):
        graph = IrGraph.from_compiled(result, level)
        assert graph.ir_id == IrGraph.from_text(result.asm[level], level=level).ir_id
        assert (graph.level, graph.target) == (level, "cuda:90")
        assert "num_stages" not in graph.facts()  # a compile option, not a property of the IR
    with pytest.raises(KeyError):
        IrGraph.from_compiled(result, "sass")


@pytest.mark.gpu
def test_precompiled_variant_is_the_one_a_gpu_launch_uses() -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    major, minor = torch.cuda.get_device_capability()
    x = torch.randn(4096, device="cuda", dtype=torch.float16)
    out = torch.empty_like(x)
    args = {"x_ptr": x, "y_ptr": x, "out_ptr": out, "n_elements": 4096, "BLOCK": 256}
    result = compile_call(add_kernel, args, target=f"sm_{major}{minor}", num_warps=4, num_stages=3)
    launched = add_kernel[(16,)](x, x, out, 4096, BLOCK=256, num_warps=4, num_stages=3)
    assert launched.hash == result.metadata["hash"]
    torch.testing.assert_close(out, x + x)


def test_graphs_from_tritons_compiled_kernel() -> None:
    from triton.compiler import ASTSource

    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32", "BLOCK": "constexpr"}
    kernel = triton.compile(ASTSource(add_kernel, signature, {(4,): 128}), target=GPUTarget("cuda", 80, 32))
    graph = IrGraph.from_compiled(kernel, "ttgir")
    assert (graph.entry_name, graph.target, graph.level) == ("add_kernel", "cuda:80", "ttgir")
    assert graph.ir_id == IrGraph.from_text(kernel.asm["ttgir"]).ir_id
