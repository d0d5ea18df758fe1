"""A workload calling liger-kernel's fused MoE forward (``LigerFusedMoEFunction``: three
``triton.autotune`` kernels of 32, 32 and 40 configs, decorated by liger-kernel) with
:func:`corpus.guide.attach` guiding them. Our own code; liger-kernel comes from PyPI.

``python liger_moe.py REPORT.json MODEL FOREIGN_MODEL``: the two GEMM kernels are guided by
MODEL (top 2), the token gather by FOREIGN_MODEL (a model that cannot rank here, so Triton
benchmarks every config). Each kernel first keeps 5 configs by a prune of its own (set as a
library would, before attaching), to keep the interpreter run short. Writes what Triton
benchmarked, the warnings given and whether the output is right."""

from __future__ import annotations

import json
import sys
import warnings
from typing import Any


def first_five(configs: list[Any], named_args: dict[str, Any], **kwargs: Any) -> list[Any]:
    """The kernel's own ``early_config_prune``: its first five configs."""
    return list(configs)[:5]


def main(report: str, model: str, foreign_model: str) -> None:
    import torch
    from liger_kernel.ops import fused_moe_kernels as kernels
    from liger_kernel.ops.fused_moe import LigerFusedMoEFunction

    from corpus.guide import attach

    guided = [kernels._fused_up_proj_swiglu_kernel, kernels._fused_down_proj_kernel]
    fallback = kernels._token_gather_weighted_sum_kernel
    rankers = {}
    for tuner, checkpoint in [(guided[0], model), (guided[1], model), (fallback, foreign_model)]:
        tuner.early_config_prune = first_five
        rankers[tuner.fn.__name__] = attach(tuner, checkpoint, top_k=2)
    torch.manual_seed(0)
    tokens, hidden, inner, experts, k = 8, 64, 32, 2, 2
    x = torch.randn(tokens, hidden)
    gate_up, down = torch.randn(experts, 2 * inner, hidden) * 0.1, torch.randn(experts, hidden, inner) * 0.1
    index = torch.randint(0, experts, (tokens, k), dtype=torch.int32)
    weights = torch.rand(tokens, k)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = LigerFusedMoEFunction.apply(x, gate_up, down, index, weights)
    expected = torch.zeros(tokens, hidden)
    for t in range(tokens):
        for j in range(k):
            e = int(index[t, j])
            g, u = (gate_up[e] @ x[t]).split(inner)
            expected[t] += weights[t, j] * (down[e] @ (torch.nn.functional.silu(g) * u))
    kernels_report = {
        tuner.fn.__name__: {
            "all": [str(c) for c in tuner.configs[:5]],
            "benchmarked": [str(c) for c in tuner.configs_timings],
            "best": str(tuner.best_config),
            "compiles": rankers[tuner.fn.__name__].compiles,
        }
        for tuner in [*guided, fallback]
    }
    fallbacks = [str(w.message) for w in caught if "cannot rank" in str(w.message)]
    result = {"correct": bool(torch.allclose(out, expected, atol=1e-4)), "kernels": kernels_report,
              "fallback_warnings": fallbacks}  # fmt: skip
    with open(report, "w") as file:
        json.dump(result, file)


if __name__ == "__main__":
    main(*sys.argv[1:4])
