"""A ``--budget`` harvest says what it will benchmark before any work, not only in the summary."""

from __future__ import annotations

import shutil
from pathlib import Path

from .conftest import harvest_in_process


def test_a_budgeted_harvest_says_what_it_will_benchmark_before_it_starts(
    demo_dataset: Path, demo_train: Path, tmp_path: Path
) -> None:
    """The start lines said "N to measure (the progress bar's total)" and nothing of the budget,
    which only the summary at the end named (the dry run alone said it up front). Extending make
    demo's softmax runs by one config each keeps the harvest to three compiles."""
    out = tmp_path / "extended"
    shutil.copytree(demo_dataset, out)
    printed = harvest_in_process(
        out, "--families", "softmax", "--dtypes", "float32", "--max-configs", "5", "--workers", "1",
        "--rank-with", str(demo_train / "checkpoint"), "--budget", "1",
    )  # fmt: skip
    flat = " ".join(printed.split())
    start = flat[: flat.index("harvest finished")]
    # each run measures its one new config: the budget covers all of them, which the start
    # lines say (said nothing of it: "at most 3 of 3 configs; ... the rest written as skipped")
    assert "budget --budget 1 benchmarks all 3 configs to measure (the default and model checkpoint@" in start
    assert start.count("it saves no benchmark over a harvest without --budget") == 1
