"""The budgeted harvest (python -m corpus.harvest --rank-with MODEL --budget K|P%|auto),
in-process with real compile and benchmark workers on the interpreter: K + 1 measured rows per
run and the rest skipped naming the model; the model reads every input it was trained with; the
same budget again does nothing; a rerun without budget measures the rest, and no config is
measured twice; a model that never saw the device's arch or the IR's target is refused before
any work (dry run and Ray too), or with --allow-unseen-arch ranks with one warning; a dry run
says what the budget benchmarks."""

from __future__ import annotations

import importlib.util
import io
import re
import shutil
import warnings
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from rich.console import Console

from corpus.harvest.__main__ import main
from corpus.harvest.app import GuideRefused, HarvestConfig, HarvestError, run_harvest
from corpus.harvest.resume import BUDGET_SKIP
from corpus.harvest.settings import read_settings
from schemas import read_table
from schemas.check import check_dataset
from train.predict import (
    MissingInputsWarning,
    UnseenArchWarning,
    UnseenIrValuesWarning,
    rank_dataset,
)
from train.tables import load_samples

BASE = {"families": ("softmax",), "dtypes": ("float32",), "max_configs": 4, "workers": 1, "flush_every_s": 0.0}


def harvest(out: Path, **options) -> str:
    console = Console(file=io.StringIO(), width=200)
    run_harvest(HarvestConfig(out=str(out), **BASE, **options), read_settings(), console)
    return console.file.getvalue()


def rows(out: Path, harvests: str = "latest") -> pl.DataFrame:
    columns = ["run_id", "config_id", "status", "error", "ttgir_id", "is_default"]
    return pl.from_arrow(read_table(str(out), "measurements", columns=columns, harvests=harvests))


def test_budget_then_rerun_without_budget(guide_model: Path, tmp_path: Path) -> None:
    out = tmp_path / "dataset"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        printed = harvest(out, rank_with=str(guide_model), budget="1")
    # The candidates carry every input the model was trained with (SASS statistics included,
    # which the harvest disassembles in batches after compiling).
    assert not [w for w in caught if issubclass(w.category, MissingInputsWarning)]
    assert "candidates lack" not in printed and "without some inputs" not in printed  # the guide's note, summary
    first = rows(out)
    assert first["run_id"].n_unique() == 3
    for run_id, group in first.group_by("run_id"):
        statuses = Counter(group["status"])
        assert statuses == {"ok": 2, "skipped": 2}, run_id  # the default + the top 1; 4 compiled
        assert group.filter(pl.col("is_default"))["status"].to_list() == ["ok"]
    skipped = first.filter(pl.col("status") == "skipped")
    assert all(e.startswith(f"{BUDGET_SKIP} 1: model checkpoint@") for e in skipped["error"])
    # Each skipped config says where the hedged order put it: the two benchmarked configs hold
    # the other two places, and the default aside the benchmarked one came before every skipped one.
    for run_id, group in first.group_by("run_id"):
        places = [int(re.search(r", (\d+) in its hedged order$", e).group(1)) for e in group["error"].drop_nulls()]
        benchmarked = {1, 2, 3, 4} - set(places)
        assert len(places) == 2 and len(benchmarked) == 2, run_id
        assert min(benchmarked) < min(places), run_id
    assert skipped["ttgir_id"].null_count() == 0  # compiled: the IR is in the dataset
    assert "benchmarked 6 of 12 compiled config(s)" in printed.replace("\n", " ")
    samples = load_samples(str(out))  # what training reads: a skipped config is no label
    assert samples.height == 6 and set(samples["status"]) == {"ok"}
    ranked = rank_dataset(str(guide_model), str(out))  # what a user ranks: every config
    assert ranked.height == 12

    harvest(out, rank_with=str(guide_model), budget="1")  # the same budget: nothing left to do
    assert rows(out, "all").height == first.height

    harvest(out)  # no budget: the skipped configs are measured now
    latest = rows(out)
    assert latest.height == 12 and latest.select("run_id", "config_id").n_unique() == 12
    assert set(latest["status"]) == {"ok"}
    pooled = rows(out, "pooled")  # a budget's skip was no failed repeat
    assert pooled.height == 12 and set(pooled["status"]) == {"ok"}
    measured = rows(out, "all").filter(pl.col("status") != "skipped")
    assert measured.select("run_id", "config_id").is_duplicated().sum() == 0  # none measured twice
    checked = check_dataset(str(out))  # its summary counts the configs as measured now, not the skips
    assert checked.ok and checked.facts["statuses"] == {"ok": 12}, checked.problems
    assert str(checked.facts["superseded"]).startswith("6 row(s) of earlier harvests (skipped 6) ")


def test_a_budgeted_harvest_on_ray_plans_as_one_machine_does(guide_model: Path, ray_cluster, tmp_path: Path) -> None:
    """The dry run plans the budget; each lane ranks its runs with the model: K + 1 measured rows
    per run, the rest skipped naming the model; the driver's summary counts what the lanes benchmarked; a rerun without
    budget (on Ray too) measures the rest, none twice."""
    out = tmp_path / "ray"
    planned = harvest(out, rank_with=str(guide_model), budget="1", ray="auto", device="cpu", dry_run=True)
    assert "at most 6 of 12 configs" in " ".join(planned.split()) and not out.exists()
    printed = harvest(out, rank_with=str(guide_model), budget="1", ray="auto", device="cpu")
    first = rows(out)
    assert first["run_id"].n_unique() == 3
    for run_id, group in first.group_by("run_id"):
        assert Counter(group["status"]) == {"ok": 2, "skipped": 2}, run_id
        assert group.filter(pl.col("is_default"))["status"].to_list() == ["ok"]
    skipped = first.filter(pl.col("status") == "skipped")
    assert all(e.startswith(f"{BUDGET_SKIP} 1: model checkpoint@") for e in skipped["error"])
    flat = " ".join(printed.split())
    assert "benchmarked 6 of 12 compiled config(s)" in flat and "best config per run" in flat
    # the driver's start lines name the budget, as a local harvest's do (they did not)
    start = flat[flat.index("harvest on Ray:") : flat.index("run 1/3 ")]
    assert "budget --budget 1 benchmarks the default and model checkpoint@" in start
    assert "at most 6 of 12 configs" in start

    harvest(out, ray="auto", device="cpu")
    latest = rows(out)
    assert latest.height == 12 and set(latest["status"]) == {"ok"}
    measured = rows(out, "all").filter(pl.col("status") != "skipped")
    assert measured.select("run_id", "config_id").is_duplicated().sum() == 0


def test_auto_budget_benchmarks_the_models_best_and_the_default(guide_model: Path, tmp_path: Path) -> None:
    out = tmp_path / "auto"
    harvest(out, rank_with=str(guide_model), budget="auto")
    found = rows(out)
    for _, group in found.group_by("run_id"):
        measured = group.filter(pl.col("status") == "ok")
        assert 2 <= measured.height <= 4 and measured["is_default"].any()
    assert all("auto: model checkpoint@" in e for e in found.filter(pl.col("status") == "skipped")["error"])


REFUSAL = (
    "cannot rank for this device (the model was trained on sm_90 only, not on interpreter): "
    "train a model on this device's harvests, drop --rank-with/--budget to benchmark every "
    "config, or add --allow-unseen-arch to rank with it anyway"
)


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_model_that_never_saw_the_device_is_refused_before_any_work(
    foreign_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], dry_run: bool
) -> None:
    """A budget asked for and a model that cannot rank here: benchmarking every config instead
    spent a whole harvest (hours on a GPU) with one warning; now exit 2 naming the model, why,
    and the ways out. A dry run, which shows what the harvest would do, refuses the same way."""
    out = tmp_path / "foreign"
    argv = ["--families", "softmax", "--dtypes", "float32", "--max-configs", "2", "--workers", "1",
            "--out", str(out), "--rank-with", str(foreign_model), "--budget", "1"]  # fmt: skip
    assert main([*argv, "--dry-run"] if dry_run else argv) == 2
    printed = " ".join(capsys.readouterr().out.split())
    assert f"--rank-with {foreign_model} {REFUSAL}" in printed
    assert "measured config(s)" not in printed and "benchmarks the default" not in printed  # no plan shown
    assert not out.exists()


def test_allow_unseen_arch_ranks_with_one_warning(foreign_model: Path, tmp_path: Path) -> None:
    """--allow-unseen-arch: the model ranks for the device it never saw, said once before any
    work; the budget holds (the default + K per run benchmarked, the rest skipped)."""
    out = tmp_path / "foreign"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        printed = " ".join(harvest(out, rank_with=str(foreign_model), budget="1", allow_unseen_arch=True).split())
    # once: not again as a Python warning of each run's ranking, amid the progress display
    assert not [w for w in caught if issubclass(w.category, UnseenArchWarning)]
    assert printed.count("warning:") == 1, printed
    assert printed.count("cannot rank for this device (the model was trained on sm_90 only, not on interpreter); ranking with it anyway (--allow-unseen-arch)") == 1
    assert printed.index("cannot rank for this device") < printed.index("run 1/3 ")  # before any work
    assert "could not rank" not in printed  # no run fell back to benchmarking in full
    found = rows(out)
    assert found["run_id"].n_unique() == 3
    for run_id, group in found.group_by("run_id"):
        assert Counter(group["status"]) == {"ok": 2, "skipped": 2}, run_id
        assert group.filter(pl.col("is_default"))["status"].to_list() == ["ok"]
    assert "benchmarked 6 of 12 compiled config(s)" in printed


def test_a_budgeted_harvest_on_ray_refuses_a_model_that_cannot_rank(
    foreign_model: Path, ray_cluster, tmp_path: Path
) -> None:
    """On Ray the lanes report the device; the driver refuses with the local harvest's message
    before any run (the lanes, running the same check, hand theirs to it rather than failing to
    start), and leaves --out as it was: absent (the probe of --out, before a cluster starts, made
    its table directories, which the refusal left behind); --allow-unseen-arch ranks, said once
    by the driver."""
    out = tmp_path / "ray"
    for dry_run in (True, False):
        with pytest.raises(HarvestError) as refused:
            harvest(out, rank_with=str(foreign_model), budget="1", ray="auto", device="cpu", dry_run=dry_run)
        assert " ".join(str(refused.value).split()) == f"--rank-with {foreign_model} {REFUSAL}"
        assert not out.exists()
    printed = " ".join(harvest(out, rank_with=str(foreign_model), budget="1", ray="auto", device="cpu", allow_unseen_arch=True).split())
    assert printed.count("ranking with it anyway (--allow-unseen-arch)") == 1
    assert Counter(rows(out)["status"]) == {"ok": 6, "skipped": 6}  # the default + 1 of 4, 3 runs


def test_a_ray_lane_that_finds_another_model_at_the_path_refuses_the_harvest(
    guide_model: Path, foreign_model: Path, demo_dataset: Path, ray_cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each lane loads --rank-with's model from the path on its own node; the driver checks the
    one on its node. A lane whose checkpoint there is another model, which cannot rank for the
    lanes' device, hands its refusal to the driver (LaneFacts.refusal), which refuses the
    harvest with it before any run, though its own model ranks; an existing dataset as --out is
    left unchanged. One machine has one checkpoint at a path, so here it is replaced after the
    driver read it and before the lanes start (as a training that overwrites it would): both
    lanes load the other model for real. Without the lanes' check the harvest ran, unbudgeted."""
    from corpus.harvest import cluster

    model = tmp_path / "model"
    shutil.copytree(guide_model, model)  # ranks on the interpreter
    drivers_read = cluster.load_guide_inputs

    def read_then_replaced(config: HarvestConfig) -> object:
        inputs = drivers_read(config)
        shutil.rmtree(model)
        shutil.copytree(foreign_model, model)  # trained on sm_90 only
        return inputs

    monkeypatch.setattr(cluster, "load_guide_inputs", read_then_replaced)
    out = tmp_path / "dataset"
    shutil.copytree(demo_dataset, out)
    before = tree(out)
    with pytest.raises(GuideRefused) as refused:
        harvest(out, rank_with=str(model), budget="1", ray="auto", device="cpu")
    assert " ".join(str(refused.value).split()) == f"--rank-with {model} {REFUSAL}"
    assert tree(out) == before


def tree(root: Path) -> dict[str, tuple[int, int] | None]:
    """Every entry under ``root``: a file's (size, mtime in ns), None for a directory."""
    return {
        str(path.relative_to(root)): None if path.is_dir() else (path.stat().st_size, path.stat().st_mtime_ns)
        for path in root.rglob("*")
    }


def test_a_dry_run_plans_what_the_budget_benchmarks(guide_model: Path, tmp_path: Path) -> None:
    printed = harvest(tmp_path / "plan", rank_with=str(guide_model), budget="1", dry_run=True).replace("\n", " ")
    printed = " ".join(printed.split())
    assert "--budget 1 benchmarks the default and model checkpoint@" in printed
    assert "at most 6 of 12 configs" in printed  # 3 runs of 4 configs: the default + 1 each
    assert "at most 6 of 12 compiled config(s) benchmarked" in printed
    assert not (tmp_path / "plan").exists()


@pytest.mark.parametrize("budget", ["100%", "3", "9"])
def test_a_budget_that_covers_every_config_says_it_saves_nothing(guide_model: Path, tmp_path: Path, budget: str) -> None:
    """3 runs of 4 configs: 100%, or K >= 3 beyond the default, benchmarks every config, and the
    plan said "at most 12 of 12 configs ... the rest written as skipped rows" as if it saved some."""
    printed = " ".join(harvest(tmp_path / "plan", rank_with=str(guide_model), budget=budget, dry_run=True).split())
    assert f"--budget {budget} benchmarks all 12 configs to measure" in printed
    assert printed.count("it saves no benchmark over a harvest without --budget") == 1  # once, not per run
    assert "the rest written as skipped rows" not in printed


def test_a_budget_that_covers_some_runs_says_how_many(guide_model: Path) -> None:
    """Runs of 4, 2 and 8 configs under --budget 2 (the default + 2): the run of 2 is benchmarked
    whole, the others save configs."""
    from corpus.harvest.guided import RunGuide
    from train.guide import load_model, parse_budget

    text = RunGuide(load_model(guide_model), parse_budget("2")).plan_text([4, 2, 8])
    assert "at most 8 of 14 configs (every config of 1 of the 3 runs);" in text
    assert "saves no benchmark" not in text


def test_a_model_that_never_read_the_ir_target_is_refused(guide_model: Path, tmp_path: Path) -> None:
    with pytest.raises(HarvestError, match="read IR compiled for sm_90 only, not for sm_80") as refused:
        harvest(tmp_path / "sm80", rank_with=str(guide_model), budget="1", dry_run=True, target="sm_80")
    assert "or add --allow-unseen-arch to rank with it anyway" in str(refused.value)
    printed = harvest(tmp_path / "sm80", rank_with=str(guide_model), budget="1", dry_run=True, target="sm_80", allow_unseen_arch=True)
    printed = " ".join(printed.split())
    assert printed.count("cannot rank") == 1 and "read IR compiled for sm_90 only, not for sm_80" in printed
    assert "--budget 1 benchmarks the default and model checkpoint@" in printed  # it plans the budget


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--budget", "4"], "--budget needs --rank-with"),
        (["--rank-with", "x"], "--rank-with needs --budget"),
        (["--allow-unseen-arch"], "--allow-unseen-arch ranks with the model of --rank-with: add --rank-with MODEL"),
        (["--budget", "4", "--allow-unseen-arch"], "--budget needs --rank-with"),
        (["--rank-with", "no-such-model", "--budget", "4"], "no checkpoint.json"),
        (["--rank-with", "MODEL", "--budget", "lots"], "--budget 'lots'"),
        (["--rank-with", "MODEL/..", "--budget", "4"], "the model python -m train ships is"),
        pytest.param(
            ["--rank-with", "no-such-model", "--budget", "4", "--ray", "local"],
            "no checkpoint.json",
            # without Ray, --ray is refused first ("--ray needs Ray"), which says nothing here
            marks=pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="Ray is not installed"),
        ),
    ],
)
def test_bad_guidance_is_refused_before_any_work(argv, message, guide_model, tmp_path, capsys) -> None:
    argv = [a.replace("MODEL", str(guide_model)) for a in argv]  # MODEL/..: the train output
    assert main(["--families", "softmax", "--out", str(tmp_path / "d"), *argv]) == 2
    printed = capsys.readouterr().out
    assert message in printed.replace("\n", " ")
    assert not (tmp_path / "d").exists()


def test_a_summary_with_nothing_compiled_says_so(guide_model: Path) -> None:
    from corpus.harvest.guided import RunGuide
    from train.guide import load_model, parse_budget

    guide = RunGuide(load_model(guide_model), parse_budget("2"))
    guide.stats.runs = 3  # every config of three runs failed to compile
    console = Console(file=io.StringIO(), width=200)
    guide.print_summary(console, [])
    assert "no config compiled in 3 run(s), nothing to rank" in console.file.getvalue()
    assert "0 of 0" not in console.file.getvalue()


def test_the_guided_summary_wraps_with_no_line_ending_in_a_blank(guide_model: Path) -> None:
    """On an 80-column terminal 'guided by model ...: benchmarked 8 of 24 ' ended in the blank
    rich leaves where it breaks a line (so did 'best found: ...')."""
    from corpus.harvest.guided import RunGuide
    from corpus.harvest.report import BestOfRun
    from train.guide import load_model, parse_budget

    guide = RunGuide(load_model(guide_model), parse_budget("auto"))
    guide.stats.runs, guide.stats.compiled, guide.stats.benchmarked = 3, 24, 8
    best = [BestOfRun("softmax", "M4_N1024", "float32", "2/8", 3.0, 9.0, "BLOCK_M=4 w2 s1")]
    console = Console(file=io.StringIO(), width=50)
    guide.print_summary(console, best)
    lines = console.file.getvalue().splitlines()
    assert len(lines) > 2 and all(line == line.rstrip() and len(line) <= 50 for line in lines), lines
    flat = " ".join(lines)
    assert "benchmarked 8 of 24 compiled config(s) (33%) in 3 run(s)" in flat and "best found: 3.00x" in flat


def test_configs_that_compile_to_one_graph_are_ranked(guide_model: Path, tmp_path: Path) -> None:
    """The gap: configs differing only in num_stages of a loop-free kernel (or maxnreg, or a
    pre_hook) share one IR graph; the candidates' IR tables held it once per config, the
    model's graph encoder refused them ("node_id of some graph is not 0..n-1") and the run was
    benchmarked in full, as if no model guided it (suite matmul float16 M96_N80_K72 does this)."""
    out = tmp_path / "staged"
    options = {**BASE, "families": ("test_staged_scale",), "suite": ("tests.corpus.guide.stage_kernels",)}
    console = Console(file=io.StringIO(), width=200)
    run_harvest(HarvestConfig(out=str(out), rank_with=str(guide_model), budget="1", **options), read_settings(), console)
    printed = console.file.getvalue().replace("\n", " ")
    assert "could not rank" not in printed, printed
    found = rows(out)
    assert found["ttgir_id"].n_unique() == 2  # four configs, two graphs
    assert Counter(found["status"]) == {"ok": 2, "skipped": 2}  # the default + the top 1


def test_a_budgeted_harvest_that_waited_for_a_claim_keeps_its_budget(
    guide_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Harvest B (--budget 1) plans while the runs are claimed by harvest A (--budget 1 too),
    which commits them meanwhile; B then finds them done, as a budgeted rerun would. The gap:
    B's claim asked as an unbudgeted rerun, so the configs A's budget skipped were B's to
    measure, and B benchmarked its budget of them on top of A's (its "budget" was per harvest,
    not per run)."""
    import threading

    from corpus.harvest.claims import RunClaims
    from schemas.locking import FileLock

    out = tmp_path / "dataset"
    guided = {"rank_with": str(guide_model), "budget": "1"}
    console = Console(file=io.StringIO(), width=200)
    planned = run_harvest(HarvestConfig(out=str(out), **BASE, **guided, dry_run=True), read_settings(), console).planned
    waiting = threading.Event()
    acquire = FileLock.acquire

    def signalling_acquire(lock, *, wait, on_wait=None):  # instrumentation: B reached a claim
        if wait and "/.locks/runs/" in lock.path:
            waiting.set()
        return acquire(lock, wait=wait, on_wait=on_wait)

    monkeypatch.setattr(FileLock, "acquire", signalling_acquire)
    claims_a = RunClaims(str(out), known=())  # A's lanes hold every run's claim
    for run in planned:
        assert claims_a.claim(run, {}, own_harvest="a", before_waiting=lambda: None) is run
    errors: list[BaseException] = []

    def harvest_b() -> None:
        try:
            harvest(out, **guided)
        except BaseException as exc:
            errors.append(exc)

    b = threading.Thread(target=harvest_b, daemon=True)
    b.start()
    while b.is_alive() and not waiting.is_set():
        b.join(0.05)
    assert waiting.is_set(), "harvest B did not wait for a run's claim"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        harvest(out, **guided, allow_repeat=True, resume=False)  # A: measures and commits its plan
    claims_a.release_all()
    b.join(600)
    assert not b.is_alive() and errors == []
    every = pl.from_arrow(read_table(str(out), "measurements", columns=["harvest_id", "status"]))
    assert every["harvest_id"].n_unique() == 1  # B wrote nothing: every run was done
    statuses = Counter(every["status"])
    assert statuses == {"ok": 6, "skipped": 6}  # A's default + top 1 per run, the rest skipped


def test_what_the_model_could_not_read_is_said_once_and_counted(guide_model: Path, tmp_path: Path) -> None:
    """A family the model never trained on (atomic_sum: its atomic ops are in no demo family)
    holds IR values the model never saw in every run. Its UnseenIrValuesWarning carries
    per-run counts, so Python's default filter printed one per run amid the progress display;
    now one note says it, the summary counts the runs, and no raw warning escapes."""
    out = tmp_path / "unseen"
    options = {**BASE, "families": ("atomic_sum",), "max_configs": 2}
    console = Console(file=io.StringIO(), width=200)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_harvest(HarvestConfig(out=str(out), rank_with=str(guide_model), budget="1", **options), read_settings(), console)
    printed = " ".join(console.file.getvalue().split())
    assert not [w for w in caught if issubclass(w.category, UnseenIrValuesWarning)]
    runs = rows(out)["run_id"].n_unique()
    assert runs >= 2
    # the note as the first run's ranking says it (what, what to do, then the values), then
    # the summary's line counting the runs and quoting the first run's values
    assert printed.count("the candidates' IR holds values the model never saw in training") == 1
    assert printed.count("(tt.atomic_rmw) (said for the first run only") == 1
    assert f"in {runs} of {runs} guided run(s) the model ranked the candidates on IR values it never saw" in printed
    assert "never saw in training; in the first: op_name: " in printed
    lines = console.file.getvalue().splitlines()
    note = next(i for i, line in enumerate(lines) if "the candidates' IR holds values" in line)
    assert lines[note].endswith("(train it on runs that hold them to rank them fully)")
    assert lines[note + 1].startswith("  op_name: ")


def test_a_lanes_share_of_the_warnings_reaches_the_driver() -> None:
    """Ray lanes send each run's share of their guide's counts (since) to the driver (add):
    the runs that warned travel with them, and the driver keeps the first message it got."""
    from corpus.harvest.guided import GuideStats

    lane = GuideStats(runs=1, warned=Counter({"UnseenIrValuesWarning": 1}), first_warning={"UnseenIrValuesWarning": "a"})
    before = lane.copy()
    lane.runs += 2
    lane.warned.update(["UnseenIrValuesWarning", "UnseenIrValuesWarning", "MissingInputsWarning"])
    lane.first_warning["MissingInputsWarning"] = "b"
    share = lane.since(before)
    assert share.warned == {"UnseenIrValuesWarning": 2, "MissingInputsWarning": 1}
    assert share.first_warning == {"MissingInputsWarning": "b"}  # the lane said the other one already
    driver = GuideStats(warned=Counter({"MissingInputsWarning": 1}), first_warning={"MissingInputsWarning": "c"})
    driver.add(before)
    driver.add(share)
    assert driver.warned == {"UnseenIrValuesWarning": 3, "MissingInputsWarning": 2}
    assert driver.first_warning == {"MissingInputsWarning": "c", "UnseenIrValuesWarning": "a"}


def test_a_note_with_brackets_is_printed_as_it_is(guide_model: Path) -> None:
    """Why a run could not be ranked is an exception's text: rich read "[dtype]" in it as a style
    and dropped it, and a "[/...]" as a closing tag, stopping the summary with a MarkupError."""
    from corpus.harvest.guided import RunGuide
    from train.guide import load_model, parse_budget

    guide = RunGuide(load_model(guide_model), parse_budget("1"))
    note = "RuntimeError: tensor[dtype] at [/tmp/x] differs"
    guide.stats.runs, guide.stats.compiled = 1, 4
    guide.stats.notes[note] += 1
    console = Console(file=io.StringIO(), width=400)
    guide.print_summary(console, [])
    assert note in console.file.getvalue()
