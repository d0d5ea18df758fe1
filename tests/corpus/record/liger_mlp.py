"""A workload calling liger-kernel's fused SwiGLU projection in inference mode (liger's
``_swiglu_kernel_forward_inference``: 32 autotune configs, TensorDescriptor arguments, a
per-config ``pre_hook`` that sets the descriptors' block shapes). Our own code; liger-kernel
comes from PyPI (the ``thirdparty`` extra). ``python liger_mlp.py``."""

from __future__ import annotations

import torch
from liger_kernel.ops.mlp import gemm_swiglu


def main() -> None:
    torch.manual_seed(0)
    x = torch.randn(1, 32, 64, dtype=torch.float16)
    gate, up = torch.randn(128, 64, dtype=torch.float16), torch.randn(128, 64, dtype=torch.float16)
    out, _ = gemm_swiglu(x, gate, up, gate_multiplier=1.0, store_preact=False)
    expected = torch.nn.functional.silu(x.float() @ gate.float().T) * (x.float() @ up.float().T)
    torch.testing.assert_close(out.float(), expected, atol=0.1, rtol=0.05)


if __name__ == "__main__":
    main()
