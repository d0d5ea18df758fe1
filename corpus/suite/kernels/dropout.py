"""Seeded dropout: ``out = x * keep / (1 - p)`` where ``keep = rand(seed, offset) > p``.

The random numbers come from Triton's counter-based Philox generator (``tl.rand``), so the
mask depends only on (seed, element offset), never on the launch config. The reference
re-implements Philox-4x32-10 with torch integer ops to reproduce the mask bit for bit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import triton
import triton.language as tl

from corpus.suite.registry import register
from corpus.suite.spec import (
    Config,
    Dims,
    KernelSpec,
    cdiv,
    dtype_bytes,
    next_pow2,
    output_buffer,
    per_thread_reason,
    product_configs,
    seeded_randn,
)
from schemas.enums import Role

DROP_PROBABILITY = 0.1
PHILOX_SEED = 20240611


@triton.jit
def dropout_kernel(x_ptr, out_ptr, numel, p, scale, seed, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < numel
    x = tl.load(x_ptr + offsets, mask=mask)
    keep = tl.rand(seed, offsets) > p
    out = tl.where(keep, x.to(tl.float32) * scale, 0.0)
    tl.store(out_ptr + offsets, out.to(out_ptr.dtype.element_ty), mask=mask)


_MASK32 = 0xFFFFFFFF
_ROUND_A, _ROUND_B = 0xD2511F53, 0xCD9E8D57
_KEY_A, _KEY_B = 0x9E3779B9, 0xBB67AE85


def _mul_hi_lo(constant: int, values: Any) -> tuple[Any, Any]:
    """High and low 32 bits of ``constant * values`` for uint32 values held in int64
    tensors, via 16-bit limbs so no partial product overflows int64."""
    c_hi, c_lo = constant >> 16, constant & 0xFFFF
    v_hi, v_lo = values >> 16, values & 0xFFFF
    low = v_lo * c_lo
    middle = v_hi * c_lo + v_lo * c_hi
    carry = (((middle & 0xFFFF) << 16) + low) >> 32
    high = (v_hi * c_hi + (middle >> 16) + carry) & _MASK32
    return high, (values * c_lo + ((values * c_hi) << 16)) & _MASK32


def philox_uniform(seed: int, offsets: Any, rounds: int = 10) -> Any:
    """What ``tl.rand(seed, offsets)`` returns for 32-bit offsets and a seed below 2**31:
    Philox-4x32 on counter (offset, 0, 0, 0) with key (seed, 0), first word to [0, 1)."""
    import torch

    c0 = offsets.to(torch.int64) & _MASK32
    c1 = torch.zeros_like(c0)
    c2 = torch.zeros_like(c0)
    c3 = torch.zeros_like(c0)
    k0, k1 = seed & _MASK32, 0
    for _ in range(rounds):
        hi_b, lo_b = _mul_hi_lo(_ROUND_B, c2)
        hi_a, lo_a = _mul_hi_lo(_ROUND_A, c0)
        c0, c1, c2, c3 = hi_b ^ c1 ^ k0, lo_b, hi_a ^ c3 ^ k1, lo_a
        k0, k1 = (k0 + _KEY_A) & _MASK32, (k1 + _KEY_B) & _MASK32
    # As int32: negative values are mirrored with bitwise not, then scaled below 1.0.
    folded = torch.where(c0 >= 2**31, _MASK32 - c0, c0)
    return folded.to(torch.float32) * torch.tensor(4.6566127342e-10, dtype=torch.float32, device=c0.device)


def _shape(m: int, n: int) -> dict[str, int]:
    return {"M": m, "N": n}


@register
class Dropout(KernelSpec):
    name = "dropout"
    category = "pointwise"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("out",)
    roles: ClassVar[Mapping[str, str]] = {"BLOCK": Role.TILE_N}
    shapes: ClassVar[Mapping[str, list[Dims]]] = {
        "tiny": [_shape(4, 500), _shape(32, 40)],
        "small": [_shape(1024, 1024), _shape(512, 3072)],
        "default": [
            _shape(4096, 4096),  # attention output / residual of a 7B model
            _shape(8192, 4096),
            _shape(4096, 11008),  # MLP hidden
            _shape(2048, 8192),
            _shape(16384, 1024),
            _shape(12544, 768),  # ViT-B activations, batch 64
            _shape(32768, 2048),
            _shape(1024, 50304),
        ],
        "large": [_shape(16384, 8192), _shape(8192, 28672), _shape(65536, 4096)],
    }

    @property
    def kernel(self) -> Any:
        return dropout_kernel

    def config_space(self) -> list[Config]:
        return product_configs({"BLOCK": (256, 512, 1024, 2048, 4096, 8192)}, num_warps=(1, 2, 4, 8, 16))

    def default_config(self) -> Config:
        return Config({"BLOCK": 1024}, num_warps=4, num_stages=2)

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        block = config.kwargs["BLOCK"]
        numel = dims["M"] * dims["N"]
        if numel >= 2**31:
            return f"{numel} elements overflow the 32-bit Philox counter offsets"
        if block > 2 * next_pow2(numel):
            return f"BLOCK={block} is over twice the tensor's {numel} elements"
        # Philox keeps four 32-bit words per element live: fewer elements per thread fit.
        return per_thread_reason(block, config.num_warps, high=16)

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        shape = (dims["M"], dims["N"])
        return {
            "x": seeded_randn(shape, dtype, device, seed),
            "out": output_buffer(shape, dtype, device),
            "p": DROP_PROBABILITY,
            "seed": PHILOX_SEED + seed,
        }

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        numel = dims["M"] * dims["N"]
        args = {
            "x_ptr": inputs["x"],
            "out_ptr": inputs["out"],
            "numel": numel,
            "p": inputs["p"],
            "scale": 1.0 / (1.0 - inputs["p"]),
            "seed": inputs["seed"],
            **config.kwargs,
        }
        return (cdiv(numel, config.kwargs["BLOCK"]),), args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        import torch

        x = inputs["x"]
        offsets = torch.arange(x.numel(), device=x.device).view(x.shape)
        keep = philox_uniform(inputs["seed"], offsets) > torch.tensor(inputs["p"], dtype=torch.float32)
        scale = torch.tensor(1.0 / (1.0 - inputs["p"]), dtype=torch.float32)
        out = torch.where(keep, x.float() * scale, torch.zeros((), dtype=torch.float32, device=x.device))
        return {"out": out.to(x.dtype)}

    def flops(self, dims: Dims) -> int:
        # Philox: 10 rounds x (2 mulhi + 2 mul + 4 xor + 2 add) integer ops, plus scale/select.
        return 102 * dims["M"] * dims["N"]

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        return dtype_bytes(dtype) * 2 * dims["M"] * dims["N"]
