"""A workload whose autotuned kernels have per-config hooks (our own code; run as
``python hooked_workload.py``): ``desc_copy`` takes a TensorDescriptor whose block shape each
config's ``pre_hook`` sets, as liger-kernel's kernels do; ``broken_hook``'s second config has a
``pre_hook`` that raises, so its tuning fails (the workload catches that and goes on); ``odd_warps``'s second config
asks for 3 warps, which the interpreter ignores and Triton's compiler refuses (no IR for it)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


def set_block(nargs):  # type: ignore[no-untyped-def]
    nargs["desc"].block_shape = [nargs["BLOCK"]]
    nargs["out"].zero_()  # touches data: must only ever run on copies when recording


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=1, pre_hook=set_block) for b in (16, 32, 64)],
    key=["n"],
)
@triton.jit
def desc_copy(desc, out, n, BLOCK: tl.constexpr):
    start = tl.program_id(0) * BLOCK
    x = desc.load([start])
    offsets = start + tl.arange(0, BLOCK)
    tl.store(out + offsets, x, mask=offsets < n)


def explode(nargs):  # type: ignore[no-untyped-def]
    raise RuntimeError("this config's pre_hook always fails")


@triton.autotune(
    configs=[triton.Config({"BLOCK": 16}, num_warps=1), triton.Config({"BLOCK": 32}, num_warps=1, pre_hook=explode)],
    key=["n"],
)
@triton.jit
def broken_hook(x, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x + offsets, tl.load(x + offsets, mask=offsets < n) * 2, mask=offsets < n)


@triton.autotune(
    configs=[triton.Config({"BLOCK": 16}, num_warps=1), triton.Config({"BLOCK": 16}, num_warps=3)],
    key=["n"],
)
@triton.jit
def odd_warps(x, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x + offsets, tl.load(x + offsets, mask=offsets < n) + 1, mask=offsets < n)


def main() -> None:
    x = torch.arange(64, dtype=torch.float32)
    out = torch.empty(64, dtype=torch.float32)
    desc = TensorDescriptor.from_tensor(x, block_shape=[16])
    desc_copy[lambda meta: (triton.cdiv(64, meta["BLOCK"]),)](desc, out, 64)
    assert torch.equal(out, x), "desc_copy copied wrongly"
    try:
        broken_hook[lambda meta: (triton.cdiv(64, meta["BLOCK"]),)](x, 64)
    except RuntimeError as exc:
        print(f"tuning failed as expected: {exc}")
    odd_warps[lambda meta: (triton.cdiv(64, meta["BLOCK"]),)](x, 64)


if __name__ == "__main__":
    main()
