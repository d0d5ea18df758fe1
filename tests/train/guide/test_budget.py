"""``--budget`` as the harvest parses it (:func:`train.guide.parse_budget`)."""

from __future__ import annotations

import pytest

from train.guide import parse_budget


@pytest.mark.parametrize("text", ["0", "00", "-1", "150%", "0%", "5x", "2.5", "", "AUTO", "+3", "1e2"])
def test_a_budget_that_lets_the_model_choose_nothing_or_is_no_budget_is_refused(text: str) -> None:
    """--budget 0 used to run: the default config alone was benchmarked, the summary said the
    harvest was "guided by model" and found a config "1.00x faster than the default"."""
    with pytest.raises(ValueError, match="--budget") as refused:
        parse_budget(text)
    assert "\n" not in str(refused.value)


def test_budgets_count_configs_beyond_the_default() -> None:
    assert parse_budget("1").most_benchmarked(8) == 2
    assert parse_budget(" 3").most_benchmarked(8) == 4
    assert parse_budget("100%").most_benchmarked(8) == 8
    assert parse_budget("0.5%").most_benchmarked(8) == 2  # at least one beyond the default
    assert parse_budget("auto").auto
