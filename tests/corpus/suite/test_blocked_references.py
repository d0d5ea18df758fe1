"""The attention references are computed in blocks (bounded memory at the large scale); the
blocks must not change a value."""

from __future__ import annotations

import pytest
import torch

from corpus.suite.kernels import attention_decode, flash_attention
from corpus.suite.registry import load_suite

SPECS = load_suite(("corpus.suite.kernels",))


def family_of(module) -> str:
    [name] = [n for n, spec in SPECS.items() if type(spec).__module__ == module.__name__]
    return name


@pytest.mark.parametrize("module", [flash_attention, attention_decode], ids=lambda m: m.__name__)
def test_many_blocks_equal_one_block(module, monkeypatch):
    spec = SPECS[family_of(module)]
    for dims in spec.shapes["tiny"]:
        inputs = spec.make_inputs(dims, "float32", "cpu", 0)
        monkeypatch.setattr(module, "REFERENCE_BLOCK_BYTES", 1 << 40)
        whole = spec.reference(inputs, dims)
        monkeypatch.setattr(module, "REFERENCE_BLOCK_BYTES", 1)  # one row / sequence per block
        blocked = spec.reference(inputs, dims)
        assert whole.keys() == blocked.keys()
        for name in whole:
            torch.testing.assert_close(
                blocked[name], whole[name], rtol=1e-6, atol=1e-6, equal_nan=True
            )
