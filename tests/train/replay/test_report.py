"""The replay's written outputs: ``replay.json`` is strict JSON whose unknown figures are null,
and whose texts (paths, family names) are kept as they are."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from train.replay.report import DASH, to_markdown, write_outputs
from train.replay.strategies import TOLERANCES, RunOutcome
from train.replay.summary import FRACTIONS, budget_of, one_benchmark_note


def _outcome(seed: int, strategy: str, family: str, needed: float) -> RunOutcome:
    return RunOutcome(
        seed=seed,
        run_id=f"run-{seed}",
        family=family,
        strategy=strategy,
        n_configs=4,
        curve=np.array([0.5, 0.2, 0.0, 0.0]),
        needed={t: needed for t in TOLERANCES},
    )


def test_replay_json_nulls_unknown_figures_and_keeps_texts(tmp_path: Path) -> None:
    family = "fill_NaN_or_Infinity"  # a recorded kernel's name can be anything
    outcomes = [
        _outcome(0, "random", family, 3.0),
        _outcome(0, "model", family, math.inf),  # never reached: no finite figure
    ]
    meta = {"data": "/data/NaN-runs", "notes": ["seed 0: Infinity of reasons"]}
    write_outputs(tmp_path, outcomes, ["random", "model"], meta)
    summary = json.loads(
        (tmp_path / "replay.json").read_text(),
        parse_constant=lambda name: (_ for _ in ()).throw(ValueError(f"not strict JSON: {name}")),
    )
    assert summary["meta"] == meta
    assert [row["family"] for row in summary["families"]] == [family]
    assert summary["families"][0]["model"] is None
    assert summary["strategies"]["model"]["configs_to"]["0.02"]["mean"] is None
    assert summary["strategies"]["random"]["configs_to"]["0.02"]["mean"] == 3.0


def test_per_seed_ratios_are_what_vs_random_averages(tmp_path: Path) -> None:
    outcomes = [
        _outcome(0, "random", "softmax", 4.0),
        _outcome(0, "model", "softmax", 1.0),
        _outcome(1, "random", "welford", 2.0),
        _outcome(1, "model", "welford", 3.0),  # the model loses on this seed's family
    ]
    markdown = to_markdown(write_outputs(tmp_path, outcomes, ["random", "model"], {"seeds": [0, 1]}))
    summary = json.loads((tmp_path / "replay.json").read_text())
    seeds = summary["seeds"]
    assert [(row["seed"], row["families"], row["model"]) for row in seeds] == [
        (0, ["softmax"], 0.25),
        (1, ["welford"], 1.5),
    ]
    assert summary["strategies"]["model"]["vs_random"]["mean"] == np.mean([0.25, 1.5])
    assert "| 1 | 1 | welford | 1.50 |" in markdown


def test_the_auto_line_and_header_give_the_settings_replayed(tmp_path: Path) -> None:
    """--ei-threshold 1e-9 was reported as "stops when expected improvement < 0%" and 0.999999
    as "< 100%"; the header named lfbo's draws per run ("adaptive draws") when lfbo was not
    replayed."""
    auto = RunOutcome(
        seed=0, run_id="run-0", family="softmax", strategy="auto", n_configs=4,
        curve=np.array([0.5, 0.2, 0.0, 0.0]), needed={t: 3.0 for t in TOLERANCES}, spent=3.0,
    )  # fmt: skip
    outcomes = [_outcome(0, "random", "softmax", 3.0), auto]
    for threshold, shown in ((1e-9, "< 1e-07%"), (0.999999, "< 99.9999%"), (0.01, "< 1%")):
        meta = {"seeds": [0], "ei_threshold": threshold, "repeats": 3}
        markdown = to_markdown(write_outputs(tmp_path, outcomes, ["random", "auto"], meta))
        assert f"(stops when expected improvement {shown})" in markdown
        assert "draws per run" not in markdown
    markdown = to_markdown(write_outputs(tmp_path, [*outcomes, _outcome(0, "lfbo", "softmax", 2.0)], ["random", "lfbo", "auto"], meta))
    assert "lfbo draws per run: 3" in markdown


def test_the_header_says_how_many_seeds_contributed_runs(tmp_path: Path) -> None:
    """Seeds 0-2 listed, seed 1's split held out no run to replay: the header listed all three
    as if each were in the figures (only a note further down said otherwise)."""
    outcomes = [
        _outcome(0, "random", "softmax", 4.0),
        _outcome(2, "random", "welford", 2.0),
    ]
    meta = {"seeds": [0, 1, 2], "runs": 2, "configs": 8}
    markdown = to_markdown(write_outputs(tmp_path, outcomes, ["random"], meta))
    header = markdown.splitlines()[2]
    assert "seeds 0, 1, 2 (2 of the 3 contributed runs, seed(s) 1 none to replay; 2 held-out runs" in header
    every = to_markdown(write_outputs(tmp_path, outcomes, ["random"], {**meta, "seeds": [0, 2]}))
    assert "seeds 0, 2 (2 held-out runs over all seeds, 8 configs)" in every


def test_a_dash_in_the_per_seed_and_family_tables_is_explained(tmp_path: Path) -> None:
    """auto stops when it expects no gain, sometimes before it is within 2% of the best: its
    per-seed and per-family cells were a bare '-'; the captions now say what it means."""
    outcomes = [
        _outcome(0, "random", "softmax", 3.0), _outcome(0, "auto", "softmax", math.inf),
        _outcome(1, "random", "cumsum", 3.0), _outcome(1, "auto", "cumsum", 2.0),
    ]  # fmt: skip
    markdown = to_markdown(write_outputs(tmp_path, outcomes, ["random", "auto"], {"seeds": [0, 1]}))
    assert "| 0 | 1 | softmax | - |" in markdown
    per_seed = next(line for line in markdown.splitlines() if line.startswith("Configs to reach 2% regret over"))
    assert per_seed.endswith(f"averages these; {DASH}):")
    per_family = next(line for line in markdown.splitlines() if "per held-out family" in line)
    assert per_family.endswith(f"(pooled over seeds; {DASH}):")
    every_run = [_outcome(0, "random", "softmax", 3.0), _outcome(0, "auto", "softmax", 2.0)]
    assert DASH not in to_markdown(write_outputs(tmp_path, every_run, ["random", "auto"], {"seeds": [0]}))


def test_runs_too_small_for_the_regret_budgets_to_differ_get_a_note() -> None:
    """On demo-dataset (4 configs a run) 1%, 5%, 10% and 20% of a run's configs are each one
    benchmark, so the four regret columns repeat one figure: a note says why, and only then."""
    note = one_benchmark_note([4, 4, 5])
    assert note.startswith("runs have at most 5 configs: 1% to 20% of a run's configs is one benchmark")
    assert budget_of(max(FRACTIONS), 5) == 1 and budget_of(max(FRACTIONS), 6) == 2
    assert one_benchmark_note([4, 6]) == "" and one_benchmark_note([]) == ""
