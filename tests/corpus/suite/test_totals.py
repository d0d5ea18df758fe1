"""Size of the suite: (family, shape, dtype, config) combinations per scale, and the goal
for the ``default`` scale (a dataset worth training on)."""

from __future__ import annotations

from corpus.suite.report import suite_totals
from corpus.suite.spec import SCALES, KernelSpec

from .conftest import SUITE_REPORT

MIN_FAMILIES = 24
MIN_DEFAULT_RUNS = 500
MIN_DEFAULT_VALID_CONFIGS = 20_000


def test_suite_size_per_scale(specs: dict[str, KernelSpec]) -> None:
    lines = []
    for scale in SCALES:
        total = suite_totals(specs, scale)
        lines.append(
            f"{scale:8} {total.families} families, {total.runs:5} runs, "
            f"{total.valid_configs:6} valid of {total.combinations:6} (family, shape, dtype, config) combinations"
        )
    SUITE_REPORT["suite: size per scale"] = lines
    print("\n".join(lines))
    default = suite_totals(specs, "default")
    assert default.families >= MIN_FAMILIES, f"{default.families} families, goal {MIN_FAMILIES}"
    assert default.runs >= MIN_DEFAULT_RUNS, (
        f"{default.runs} runs at 'default', goal {MIN_DEFAULT_RUNS}"
    )
    assert default.valid_configs >= MIN_DEFAULT_VALID_CONFIGS, (
        f"{default.valid_configs} valid configs at 'default', goal {MIN_DEFAULT_VALID_CONFIGS}"
    )
    assert len({spec.category for spec in specs.values()}) >= 8, (
        "families must spread over the categories"
    )
