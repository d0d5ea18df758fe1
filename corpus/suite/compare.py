"""Compare a kernel's output with its reference where both live, in bounded memory.

One pass over the output, chunk by chunk, on the tensors' own device: per chunk it counts the
elements outside the tolerance and keeps the largest absolute error, so a 500M-element output
on a GPU costs a few temporaries of ``chunk_elements`` each, never a float64 copy on the host.

Elements that are NaN in the output but not in the reference are counted apart: outputs are
NaN-poisoned before every checked launch (:func:`corpus.suite.verify.poison_outputs`), so these
are elements the kernel never wrote, a different bug from a wrong value.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

CHUNK_ELEMENTS = 1 << 22
"""Elements compared at once: 4M elements are 32 MB per float64 temporary, and a handful of
temporaries live at a time, so the extra memory stays well under 256 MB for any output."""


@dataclass(frozen=True)
class Comparison:
    """Outcome of comparing one output with its reference."""

    name: str
    elements: int
    """Elements of the reference."""
    unwritten: int
    """Elements NaN in the output but not in the reference (never written by the kernel)."""
    wrong: int
    """Other elements outside ``atol + rtol * |expected|``."""
    max_abs_error: float
    """Largest ``|actual - expected|`` (0 where both are NaN or equal infinities; inf where
    exactly one side is NaN, or on a shape mismatch)."""
    atol: float
    rtol: float
    shape_error: str | None = None
    """Set when the shapes differ; then nothing else was compared."""

    @property
    def ok(self) -> bool:
        return self.shape_error is None and self.unwritten == 0 and self.wrong == 0

    def describe(self) -> str:
        """Why the output failed, e.g. ``"512 of 1024 elements never written (NaN), 3 differ
        (max abs error 0.5, atol=1e-4, rtol=1e-4)"``; empty when it matched."""
        if self.shape_error is not None:
            return self.shape_error
        if self.ok:
            return ""
        parts = []
        if self.unwritten:
            parts.append(f"{self.unwritten} of {self.elements} elements never written (NaN)")
        if self.wrong:
            prefix = "" if self.unwritten else f" of {self.elements} elements"
            parts.append(f"{self.wrong}{prefix} differ")
        return (
            f"{', '.join(parts)} (max abs error {self.max_abs_error:.3g}, "
            f"atol={self.atol:g}, rtol={self.rtol:g})"
        )


def compare_tensor(
    name: str,
    actual: Any,
    expected: Any,
    atol: float,
    rtol: float,
    chunk_elements: int = CHUNK_ELEMENTS,
) -> Comparison:
    """Compare ``actual`` with ``expected`` (tensors of any dtype and layout, the reference
    moved to ``actual``'s device if needed) chunk by chunk, in float64: an element matches when
    ``|actual - expected| <= atol + rtol * |expected|``, NaN matches NaN, equal infinities match."""
    import torch

    if chunk_elements <= 0:
        raise ValueError(f"chunk_elements must be positive, got {chunk_elements}")
    actual = torch.as_tensor(actual).detach()
    expected = torch.as_tensor(expected).detach().to(actual.device)
    elements = expected.numel()
    if actual.shape != expected.shape:
        shape_error = f"shape {tuple(actual.shape)} != expected {tuple(expected.shape)}"
        return Comparison(name, elements, 0, 0, math.inf, atol, rtol, shape_error)
    unwritten = wrong = 0
    worst = 0.0
    for got, want in zip(_chunks(actual, chunk_elements), _chunks(expected, chunk_elements)):
        got, want = got.to(torch.float64), want.to(torch.float64)
        got_nan, want_nan = torch.isnan(got), torch.isnan(want)
        close = torch.isclose(got, want, atol=atol, rtol=rtol, equal_nan=True)
        never = int((got_nan & ~want_nan).sum())
        unwritten += never
        wrong += int((~close).sum()) - never
        error = torch.where(got == want, 0.0, (got - want).abs()).masked_fill_(
            got_nan & want_nan, 0.0
        )
        if error.numel():
            worst = max(worst, float(error.nan_to_num_(nan=math.inf).max()))
    return Comparison(name, elements, unwritten, wrong, worst, atol, rtol)


def _chunks(tensor: Any, chunk_elements: int) -> Iterator[Any]:
    """Flat pieces of ``tensor`` of about ``chunk_elements`` each, in element order: slices of
    the flat view when contiguous, else whole rows of the first dimension (a non-contiguous
    piece is copied, so the copy is bounded by the chunk too, unless one row is larger)."""
    if tensor.dim() == 0:
        yield tensor.reshape(1)
        return
    if tensor.is_contiguous():
        flat = tensor.view(-1)
        for start in range(0, flat.numel(), chunk_elements):
            yield flat[start : start + chunk_elements]
        return
    row = max(1, tensor[0].numel()) if tensor.shape[0] else 1
    rows = max(1, chunk_elements // row)
    for start in range(0, tensor.shape[0], rows):
        yield tensor[start : start + rows].reshape(-1)
