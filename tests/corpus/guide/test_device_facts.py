"""GPU-only: the Triton plug-in reads the device's facts (torch's properties and two
``nvidia-smi`` calls) once per GPU and process, not once per tuning it ranks. Skipped without
CUDA."""

from __future__ import annotations

import pytest
import torch


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_device_facts_are_read_once_per_gpu() -> None:
    from corpus.guide.plugin import _device

    interpreter, first = _device()
    again = _device()[1]
    assert interpreter is False and first.device_kind == "cuda"
    assert again is first, "every tuning ran nvidia-smi again"
