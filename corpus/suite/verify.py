"""One checked launch: restore, poison, launch, synchronize, compare.

``python -m corpus.suite check`` and the harvest's benchmark worker both call
:func:`checked_launch`, so a config gets the same verdict in both: pure outputs are filled with
NaN (or -1) before the launch, so an element the kernel skips can neither match the reference
by luck nor keep a value an earlier config left behind.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from corpus.suite.compare import Comparison, compare_tensor
from corpus.suite.spec import Config, Dims, KernelSpec


@dataclass(frozen=True)
class CheckedLaunch:
    """What one checked launch returned and how its outputs compared."""

    launched: Any
    """What Triton's launch returned (the compiled kernel on a GPU)."""
    comparisons: dict[str, Comparison]
    """Per output name, in ``spec.outputs`` order."""

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.comparisons.values())

    @property
    def max_abs_error(self) -> float:
        """Largest absolute error over every output (0.0 when there are none)."""
        return max((c.max_abs_error for c in self.comparisons.values()), default=0.0)

    def problems(self) -> str | None:
        """``"name: why; ..."`` for the outputs that failed, None when all matched."""
        failed = [f"{name}: {c.describe()}" for name, c in self.comparisons.items() if not c.ok]
        return "; ".join(failed) or None


def poison_outputs(spec: KernelSpec, inputs: Mapping[str, Any]) -> None:
    """Fill every pure output (in ``outputs``, not in ``mutated``) with NaN, or -1 for integer
    dtypes (bool outputs are left alone: no value is invalid)."""
    import torch

    for name in spec.outputs:
        if name in spec.mutated:
            continue
        tensor = inputs[name]
        if tensor.dtype.is_floating_point:
            tensor.fill_(math.nan)
        elif tensor.dtype != torch.bool:
            tensor.fill_(-1)


def restore_mutated(inputs: Mapping[str, Any], snapshots: Mapping[str, Any]) -> None:
    """Copy each snapshot back into the input it was taken from (outside any timed region)."""
    for name, snapshot in snapshots.items():
        inputs[name].copy_(snapshot)


def compare_outputs(
    spec: KernelSpec, actual: Mapping[str, Any], expected: Mapping[str, Any], dtype: str
) -> dict[str, Comparison]:
    """:func:`corpus.suite.compare.compare_tensor` of every name in ``spec.outputs`` with its
    :meth:`KernelSpec.output_tolerance`."""
    comparisons = {}
    for name in spec.outputs:
        atol, rtol = spec.output_tolerance(name, dtype)
        comparisons[name] = compare_tensor(name, actual[name], expected[name], atol, rtol)
    return comparisons


def checked_launch(
    spec: KernelSpec,
    inputs: Mapping[str, Any],
    dims: Dims,
    config: Config,
    dtype: str,
    expected: Mapping[str, Any],
    snapshots: Mapping[str, Any] | None = None,
) -> CheckedLaunch:
    """Restore mutated inputs from ``snapshots`` (when given), poison pure outputs, launch
    ``config`` once, wait for the device, and compare every output with ``expected`` on the
    outputs' device. Launch and device errors propagate (callers classify them)."""
    if snapshots:
        restore_mutated(inputs, snapshots)
    poison_outputs(spec, inputs)
    launched = spec.launch(inputs, dims, config)
    _synchronize(inputs, spec.outputs)
    return CheckedLaunch(launched, compare_outputs(spec, inputs, expected, dtype))


def _synchronize(inputs: Mapping[str, Any], outputs: tuple[str, ...]) -> None:
    """Wait for the device the outputs live on, so a launch's asynchronous error surfaces here."""
    import torch

    devices = {inputs[name].device for name in outputs}
    for device in devices:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
