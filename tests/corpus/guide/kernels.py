"""A plain ``@triton.jit`` kernel the plug-in tests autotune (our own code)."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, 2.0 * x + 1.0, mask=mask)


@triton.heuristics({"EVEN": lambda args: args["n_elements"] % args["BLOCK"] == 0})
@triton.jit
def even_scale_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    """``scale_kernel`` whose mask a ``@triton.heuristics`` drops when the blocks tile exactly:
    compiling a config needs EVEN, which only the heuristic gives."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offsets, 2.0 * tl.load(x_ptr + offsets) + 1.0)
    else:
        mask = offsets < n_elements
        tl.store(out_ptr + offsets, 2.0 * tl.load(x_ptr + offsets, mask=mask) + 1.0, mask=mask)


@triton.jit
def desc_copy_kernel(desc, out, n, BLOCK: tl.constexpr):
    """Copies through a ``TensorDescriptor`` whose block shape must be ``[BLOCK]``: each config's
    ``pre_hook`` sets it, as liger-kernel's kernels do; compiled with another block shape the
    load and the store disagree and the compile fails."""
    start = tl.program_id(0) * BLOCK
    x = desc.load([start])
    offsets = start + tl.arange(0, BLOCK)
    tl.store(out + offsets, x, mask=offsets < n)


@triton.jit
def relu(x):
    return tl.maximum(x, 0.0)


@triton.jit
def activation_kernel(x_ptr, out_ptr, n_elements, ACTIVATION: tl.constexpr, BLOCK: tl.constexpr):
    """Applies the ``@triton.jit`` function passed as ``ACTIVATION`` (a common way to share one
    kernel between activations)."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, ACTIVATION(tl.load(x_ptr + offsets, mask=mask)), mask=mask)


@triton.jit
def atomic_scale_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    """``scale_kernel`` that adds into a zeroed output with ``tl.atomic_add``: an op (tt.atomic_rmw)
    none of the demo families has, so a model trained on them never saw it."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.atomic_add(out_ptr + offsets, 2.0 * x + 1.0, mask=mask)
