"""A workload of liger-kernel kernels the recorder can only partly record on the interpreter:
its experimental int8 x int2 matmul (``matmul_kernel``: 15 autotune configs, a
``tl.static_assert`` that ``K`` is a multiple of ``4 * BLOCK_SIZE_K``), called with ``K = 128``
so that only the configs with ``BLOCK_SIZE_K = 32`` compile, and its softmax (two plain
``@triton.jit`` kernels, nothing autotuned). Our own code; liger-kernel comes from PyPI (the
``thirdparty`` extra). ``python liger_untuned.py``."""

from __future__ import annotations

import torch
from liger_kernel.ops.experimental.mm_int8int2 import matmul, pack_weights
from liger_kernel.ops.softmax import LigerSoftmaxFunction


def main() -> None:
    torch.manual_seed(0)
    a = torch.randint(-8, 8, (8, 128), dtype=torch.int8)
    w = torch.randint(-1, 2, (128, 16), dtype=torch.int8)  # ternary weights, packed 4 per byte
    product = matmul(a, pack_weights(w.clone(), 2))
    assert torch.equal(product, a.to(torch.int32) @ w.to(torch.int32))
    x = torch.randn(4, 64, requires_grad=True)
    y = LigerSoftmaxFunction.apply(x)
    torch.testing.assert_close(y, torch.softmax(x, -1))
    y.sum().backward()


if __name__ == "__main__":
    main()
