"""A CPU harvest refuses a Triton/NumPy pair whose interpreter is known to fail."""

from __future__ import annotations

import pytest

from corpus.harvest.checks import HarvestInputError, check_interpreter
from extract.versions import interpreter_defect


def test_the_harvest_check_agrees_with_the_installed_versions():
    defect = interpreter_defect()
    if defect is None:
        check_interpreter()
    else:
        with pytest.raises(HarvestInputError, match="numpy"):
            check_interpreter()
