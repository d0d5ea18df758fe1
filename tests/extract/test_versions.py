"""Known-bad Triton/NumPy pairs for the interpreter are refused before any work."""

from __future__ import annotations

import pytest

from extract.versions import interpreter_defect


def test_triton_36_with_numpy_24_is_a_defect_naming_both_versions():
    reason = interpreter_defect((3, 6, 0), (2, 4, 6))
    assert reason is not None
    assert "triton 3.6.0" in reason and "numpy 2.4.6" in reason and "numpy<2.4" in reason


@pytest.mark.parametrize(
    ("triton", "numpy"), [((3, 6, 0), (2, 3, 5)), ((3, 9, 0), (2, 4, 6)), ((3, 7, 1), (2, 4, 0))]
)
def test_other_pairs_are_fine(triton, numpy):
    assert interpreter_defect(triton, numpy) is None
