"""The harvest summary states static-stats time beside Triton's compile time."""

from __future__ import annotations

import io

from rich.console import Console

from corpus.harvest.report import print_summary
from corpus.harvest.runner import HarvestTotals


def test_summary_names_static_stats_time_and_nvdisasm_calls() -> None:
    out = io.StringIO()
    totals = HarvestTotals(runs_done=1, configs_done=4, compile_s=2.0, static_stats_s=0.75, sass_calls=2)
    print_summary(Console(file=out, width=200), totals, elapsed_s=3.0, out="ds")
    text = out.getvalue()
    assert "compile 2.0 s" in text and "static stats 0.8 s (2 nvdisasm call(s))" in text
