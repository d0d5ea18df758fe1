"""The extract test kernels with the arguments to compile them with.

Each case names a ``@triton.jit`` function and gives every parameter (tensors on the meta
device: only dtype and alignment matter for compiling). Used by the tests, by
``tests/extract/make_fixtures.py`` and by ``python -m extract.bench``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from tests.extract.kernels.atomics import atomic_kernel
from tests.extract.kernels.call import call_kernel
from tests.extract.kernels.control import if_else_kernel, while_kernel
from tests.extract.kernels.dot import matmul_kernel
from tests.extract.kernels.large import long_chain_kernel
from tests.extract.kernels.loops import nested_loops_kernel, row_sum_kernel, staged_loop_kernel
from tests.extract.kernels.pointwise import add_kernel
from tests.extract.kernels.reduction import softmax_kernel
from tests.extract.kernels.scan import cumsum_kernel


def _tensor(dtype: torch.dtype = torch.float32, numel: int = 4096) -> torch.Tensor:
    return torch.empty(numel, dtype=dtype, device="meta")


@dataclass(frozen=True)
class Case:
    """A kernel plus everything ``compile_call`` needs."""

    name: str
    fn: Any
    args: dict[str, Any]
    num_warps: int = 4
    num_stages: int = 3
    fixture: bool = True  # committed as IR fixtures (the large benchmark kernel is not)
    tags: tuple[str, ...] = field(default_factory=tuple)


def cases() -> list[Case]:
    """All cases, in a fixed order."""
    f16 = torch.float16
    return [
        Case("pointwise", add_kernel, {"x_ptr": _tensor(f16), "y_ptr": _tensor(f16), "out_ptr": _tensor(f16), "n_elements": 4000, "BLOCK": 256}),
        Case("reduction", softmax_kernel, {"out_ptr": _tensor(), "in_ptr": _tensor(), "row_stride": 1024, "n_cols": 1000, "BLOCK": 1024}),
        Case("scan", cumsum_kernel, {"x_ptr": _tensor(), "out_ptr": _tensor(), "BLOCK": 128}, num_warps=2),
        Case("for_loop", row_sum_kernel, {"x_ptr": _tensor(), "out_ptr": _tensor(), "n_cols": 1000, "BLOCK": 128}),
        Case("nested_loops", nested_loops_kernel, {"x_ptr": _tensor(), "out_ptr": _tensor(), "n_rows": 64, "n_cols": 1000, "BLOCK": 128}),
        Case("if_else", if_else_kernel, {"x_ptr": _tensor(), "out_ptr": _tensor(), "scale": 2.0, "BLOCK": 128}),
        Case("while_loop", while_kernel, {"out_ptr": _tensor(torch.int32), "limit": 1000}, num_warps=1),
        Case("atomics", atomic_kernel, {"x_ptr": _tensor(), "sum_ptr": _tensor(), "lock_ptr": _tensor(torch.int32), "n_elements": 1000, "BLOCK": 256}),
        Case("dot", matmul_kernel, {"a_ptr": _tensor(f16), "b_ptr": _tensor(f16), "c_ptr": _tensor(f16), "M": 512, "N": 512, "K": 512, "stride_am": 512, "stride_bk": 512, "stride_cm": 512, "BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}),
        Case("call", call_kernel, {"x_ptr": _tensor(), "out_ptr": _tensor(), "factor": 3.0, "BLOCK": 128}),
        Case("staged_loop", staged_loop_kernel, {"x_ptr": _tensor(), "out_ptr": _tensor(), "n_cols": 1000, "BLOCK": 128, "STAGES": 3}, fixture=False),
        Case("large", long_chain_kernel, {"x_ptr": _tensor(), "y_ptr": _tensor(), "out_ptr": _tensor(), "n_elements": 4000, "BLOCK": 256, "TERMS": 72}, fixture=False),
    ]


def case(name: str) -> Case:
    """The case called ``name``."""
    for item in cases():
        if item.name == name:
            return item
    raise KeyError(name)
