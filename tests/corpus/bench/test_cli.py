"""``python -m corpus.bench``'s command line: the documented defaults parse, nonsense is
refused in one line (exit 2) before any work."""

from __future__ import annotations

import pytest

from corpus.bench.__main__ import main, parse
from corpus.bench.calibrate import CalibrateConfig
from corpus.bench.harvest import HarvestBenchConfig
from schemas import DatasetWriter

from ...schemas.conftest import write_run


def test_calibrate_without_families_measures_every_family() -> None:
    config = parse(["calibrate"])  # the README's command as written
    assert isinstance(config, CalibrateConfig) and config.families == ()
    assert parse(["calibrate", "--families", "softmax, matmul"]).families == ("softmax", "matmul")


def test_timing_rounds_zero_skips_the_timing_comparison() -> None:
    config = parse(["harvest", "--timing-rounds", "0"])  # help: "0: skip"
    assert isinstance(config, HarvestBenchConfig) and config.timing_rounds == 0
    assert parse(["harvest"]).families == ("add_broadcast", "softmax", "matmul")


@pytest.mark.parametrize(
    "argv",
    [
        ["harvest", "--timing-only", "--timing-rounds", "0"],  # nothing left to measure
        ["harvest", "--timing-rounds", "-1"],
        ["calibrate", "--families", ""],
    ],
)
def test_nonsense_is_refused_before_any_work(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "error:" in err and "Traceback" not in err


def test_repro_with_nothing_to_compare_says_so(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """repro A on a dataset with one harvest per run (or two datasets with no run in common)
    printed 'runs compared: 0' and nan figures, exit 0; now one line saying why, exit 2."""
    one, other = str(tmp_path / "one"), str(tmp_path / "other")
    write_run(DatasetWriter(one), 0)
    write_run(DatasetWriter(other), 1)
    assert main(["repro", one]) == 2
    printed = " ".join(capsys.readouterr().out.split())
    assert f"error: {one}: no run has two harvests to compare" in printed and "nan" not in printed
    assert main(["repro", one, other]) == 2
    assert f"error: {one} and {other} have no run in common" in " ".join(capsys.readouterr().out.split())
    bracketed = str(tmp_path / "[red]x")  # printed as it is, not read as console markup
    write_run(DatasetWriter(bracketed), 0)
    assert main(["repro", bracketed]) == 2
    assert f"error: {bracketed}: no run has two harvests" in " ".join(capsys.readouterr().out.split())
    write_run(DatasetWriter(one), 0, harvest_id="h1")  # a second harvest of the run: compared
    assert main(["repro", one]) == 0
    assert "runs compared: 1" in capsys.readouterr().out
