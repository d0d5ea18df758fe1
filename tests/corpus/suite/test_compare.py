"""The chunked output comparator (``corpus.suite.compare``) on CPU tensors."""

from __future__ import annotations

import math

import pytest
import torch

from corpus.suite.compare import compare_tensor
from corpus.suite.spec import DEFAULT_TOLERANCES


def _reference(n: int = 1000, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.linspace(-3.0, 3.0, n).to(dtype)


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 22])
def test_counts_and_max_error_do_not_depend_on_the_chunk_size(chunk: int) -> None:
    want = _reference()
    got = want.clone()
    got[10:20] = math.nan  # never written
    got[500] += 0.5  # wrong
    got[900] -= 2.0  # wrong, the worst
    result = compare_tensor("out", got, want, 1e-4, 1e-4, chunk_elements=chunk)
    assert (result.unwritten, result.wrong, result.elements) == (10, 2, 1000)
    assert result.max_abs_error == math.inf, "an unwritten element has no finite error"
    assert not result.ok
    assert "10 of 1000 elements never written (NaN), 2 differ" in result.describe()
    got[10:20] = want[10:20]
    written = compare_tensor("out", got, want, 1e-4, 1e-4, chunk_elements=chunk)
    assert (written.unwritten, written.wrong) == (0, 2)
    assert written.max_abs_error == pytest.approx(2.0, rel=1e-6)


def test_equal_outputs_match_with_nan_and_inf_in_the_reference() -> None:
    want = _reference()
    want[0], want[1], want[2] = math.nan, math.inf, -math.inf
    result = compare_tensor("out", want.clone(), want, 0.0, 0.0, chunk_elements=3)
    assert result.ok and result.describe() == ""
    assert (result.unwritten, result.wrong, result.max_abs_error) == (0, 0, 0.0)


def test_a_value_where_the_reference_is_nan_is_wrong_not_unwritten() -> None:
    want = torch.tensor([math.nan, 1.0])
    result = compare_tensor("out", torch.tensor([0.0, 1.0]), want, 1e-4, 1e-4)
    assert (result.unwritten, result.wrong, result.max_abs_error) == (0, 1, math.inf)
    assert "1 of 2 elements differ" in result.describe()


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_tolerance_per_dtype_accepts_inside_and_rejects_outside(dtype: str) -> None:
    atol, rtol = DEFAULT_TOLERANCES[dtype]
    want = torch.zeros(4, dtype=getattr(torch, dtype))
    inside = torch.full((4,), atol * 0.5, dtype=torch.float64).to(want.dtype)
    outside = torch.full((4,), atol * 4.0, dtype=torch.float64).to(want.dtype)
    assert compare_tensor("out", inside, want, atol, rtol).ok
    result = compare_tensor("out", outside, want, atol, rtol)
    assert result.wrong == 4 and result.max_abs_error == pytest.approx(float(outside[0]))


def test_relative_tolerance_scales_with_the_reference() -> None:
    want = torch.tensor([1000.0, 1.0])
    got = torch.tensor([1000.05, 1.05])
    result = compare_tensor("out", got, want, 0.0, 1e-4)
    assert (result.wrong, result.unwritten) == (1, 0), "0.05 is within 1e-4 of 1000, not of 1"


def test_non_contiguous_and_integer_outputs() -> None:
    want = torch.arange(60, dtype=torch.int64).reshape(6, 10).t()  # non-contiguous
    got = want.clone().t().contiguous().t()
    got[3, 2] = -1  # the poison value of integer outputs: counted as wrong
    result = compare_tensor("idx", got, want, 0.0, 0.0, chunk_elements=4)
    assert (result.wrong, result.unwritten, result.elements) == (1, 0, 60)
    assert result.max_abs_error == float(abs(-1 - want[3, 2]))


def test_shape_mismatch_is_reported_without_comparing() -> None:
    result = compare_tensor("out", torch.zeros(3), torch.zeros(4), 1e-4, 1e-4)
    assert not result.ok and result.max_abs_error == math.inf
    assert result.describe() == "shape (3,) != expected (4,)"


def test_zero_dim_and_empty_tensors() -> None:
    assert compare_tensor("s", torch.tensor(1.0), torch.tensor(1.0), 0.0, 0.0).ok
    empty = compare_tensor("e", torch.zeros(0, 5), torch.zeros(0, 5), 0.0, 0.0)
    assert empty.ok and empty.elements == 0


def test_bad_chunk_size_is_refused() -> None:
    with pytest.raises(ValueError, match="chunk_elements"):
        compare_tensor("out", torch.zeros(1), torch.zeros(1), 0.0, 0.0, chunk_elements=0)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_large_output_is_compared_on_the_device_in_bounded_memory() -> None:
    want = torch.randn(64 << 20, device="cuda")  # 256 MiB of float32
    got = want.clone()
    got[-1000:] = math.nan
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    result = compare_tensor("out", got, want, 1e-4, 1e-4)
    extra = torch.cuda.max_memory_allocated() - before
    assert (result.unwritten, result.wrong) == (1000, 0)
    assert extra < 16 * (1 << 22) * 8, f"{extra / 2**20:.0f} MiB extra: not bounded by the chunk"
