"""A workload that records itself with ``with corpus.record(...)`` and turns Triton's
interpreter on in its own first lines (as users without a GPU do), its kernel defined here:
``python in_code_workload.py OUT``. The second config asks for 3 warps, which the interpreter
ignores and Triton's compiler refuses: a config without IR, which the block's end reports."""

import os

os.environ["TRITON_INTERPRET"] = "1"

import sys

import torch
import triton
import triton.language as tl

import corpus.record


@triton.autotune(
    configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32}, num_warps=3), triton.Config({"BLOCK": 64})],
    key=["n"],
)
@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)


if __name__ == "__main__":
    print("workload ran")
    x = torch.zeros(100)
    with corpus.record(out=sys.argv[1], rep=1, warmup=0):
        add_one[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, 100)
