"""What a person sees of a harvest, laid out for an 80-column terminal and for a wide one:
the dry run's plan, the start lines and the end summary of a real (in-process) harvest."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from corpus.harvest.app import HarvestConfig, run_harvest
from corpus.harvest.cluster import RunDone, cluster_totals
from corpus.harvest.report import (
    BestOfRun,
    HarvestProgress,
    RunSummary,
    format_duration,
    print_summary,
    progress_line,
    timing_line,
)
from corpus.harvest.settings import read_settings
from corpus.terminal import ListingRow, grouped_listing

# attention_decode's tiny shapes have 44-character names: the longest labels of the tiny suite
FAMILIES = ("attention_decode", "add_broadcast")
WIDTHS = (80, 160)


def render(width: int, draw) -> str:
    console = Console(file=io.StringIO(), width=width, force_terminal=False)
    draw(console)
    return console.file.getvalue()


def assert_fits(text: str, width: int) -> None:
    lines = text.splitlines()
    assert lines
    assert max(map(len, lines)) <= width, max(lines, key=len)
    assert not [line for line in lines if line != line.rstrip()], "trailing blanks"


@pytest.fixture(scope="module")
def harvest(tmp_path_factory) -> tuple[object, dict[int, str]]:
    """(the harvest's outcome, {width: its console output at that width} of the dry run)."""
    out = tmp_path_factory.mktemp("report") / "d"
    config = HarvestConfig(str(out), families=FAMILIES, max_configs=2, device="cpu", workers=2, flush_every_s=0.0)
    plans = {
        width: render(width, lambda c: run_harvest(HarvestConfig(**{**config.__dict__, "dry_run": True}), read_settings(), c))
        for width in WIDTHS
    }
    outcome = run_harvest(config, read_settings(), Console(file=io.StringIO()))
    assert outcome.totals is not None and outcome.totals.results
    return outcome, plans


@pytest.mark.parametrize("width", WIDTHS)
def test_summary_fits_the_terminal_and_names_its_units(harvest, width):
    outcome, _ = harvest
    text = render(width, lambda c: print_summary(c, outcome.totals, 75.0, "some/dataset"))
    assert_fits(text, width)
    flat = " ".join(text.split())
    assert "interpreter CPU time" in flat and "milliseconds" in flat
    assert "wN = num_warps, sN = num_stages" in flat
    assert "1 min 15 s" in flat
    for result in outcome.totals.results:
        # a run's label is never cut or wrapped: its shape is whole on one line
        assert re.search(rf"^\s*(\S+\s+)?{result.run.shape_name}\b", text, re.M), result.run.shape_name


def test_a_wide_terminal_gets_one_line_per_run(harvest):
    outcome, _ = harvest
    text = render(240, lambda c: print_summary(c, outcome.totals, 75.0, "some/dataset"))
    assert_fits(text, 240)
    assert "default ms" in text  # the wide table has every column
    for result in outcome.totals.results:
        [line] = [
            line for line in text.splitlines() if f" {result.run.shape_name} " in line and f" {result.run.dtype} " in line
        ]
        assert line.startswith(result.run.family) and re.search(r" w\d+ s\d+$", line)


def test_a_narrow_terminal_groups_runs_under_their_family(harvest):
    outcome, _ = harvest
    text = render(80, lambda c: print_summary(c, outcome.totals, 75.0, "some/dataset"))
    assert "default ms" not in text  # left out, and out of the legend: the speed-up says it
    lines = text.splitlines()
    for family in FAMILIES:
        assert lines.count(family) == 1  # a heading line of its own


@pytest.mark.parametrize("width", WIDTHS)
def test_dry_run_plan_fits_the_terminal(harvest, width):
    outcome, plans = harvest
    assert_fits(plans[width], width)
    for run in outcome.planned:
        assert run.run_id in plans[width] and run.shape_name in plans[width]
    assert f"planned {len(outcome.planned)} runs" in " ".join(plans[width].split())


def test_grouped_listing_folds_only_the_tail_and_gives_long_labels_their_own_line():
    rows = [
        ListingRow("fam", "short", ("1/2", "3.5"), "A=1 B=2 C=3 D=4 E=5 F=6 G=7 H=8 I=9 J=10 K=11"),
        ListingRow("fam", "x" * 50, ("2/2", "10.25"), "A=1"),
        ListingRow("other", "mid", ("0/1", "-"), ""),
    ]
    lines = [line.plain for line in grouped_listing(rows, ("ok", "ms"), "config", 60)]
    assert max(map(len, lines)) <= 60 and all(line == line.rstrip() for line in lines)
    assert lines[1] == "fam" and "other" in lines
    short = next(i for i, line in enumerate(lines) if line.startswith("  short "))
    assert lines[short].split()[1:3] == ["1/2", "3.5"] and lines[short + 1].startswith(" " * 20)  # folded tail
    long = lines.index("  " + "x" * 50)
    assert lines[long + 1].split() == ["2/2", "10.25", "A=1"]  # its cells on the next line


def test_a_misspelled_family_is_one_line_with_the_closest_names(capsys):
    from corpus.harvest.__main__ import main

    assert main(["--families", "softmx", "--dry-run", "--device", "cpu"]) == 2
    [line] = capsys.readouterr().out.splitlines()
    assert line.startswith("error: unknown kernel family softmx (did you mean softmax")
    assert "known families: add_broadcast, " in line and "'" not in line


def test_a_long_harvest_is_called_long_before_it_starts():
    from corpus.harvest.report import LONG_INTERPRETER_CONFIGS, QUICK_LOOK, long_run_notice

    bare = long_run_notice(6500, interpreter=True)  # a bare CPU harvest: every tiny config
    assert bare and "6,500 configs" in bare and QUICK_LOOK in bare and "resumes" in bare
    assert long_run_notice(LONG_INTERPRETER_CONFIGS, interpreter=True) is None
    assert long_run_notice(48, interpreter=True) is None  # make demo's harvest
    assert long_run_notice(6500, interpreter=False) is None  # a GPU: no estimate, no guess
    estimated = long_run_notice(6500, interpreter=False, estimated_s=7200)
    assert estimated and "about 2 h 00 min here (estimated)" in estimated and QUICK_LOOK not in estimated
    assert long_run_notice(6500, interpreter=True, estimated_s=120) is None  # an estimate decides


def test_a_ray_drivers_summary_shows_what_a_local_one_does(harvest):
    """The Ray driver holds no rows: from what its lanes return for each run (RunDone) it
    prints the same counts, time breakdown, timing line and best-config table."""
    outcome, _ = harvest
    results = outcome.totals.results
    done = [
        RunDone(
            r.run.run_id,
            r.run.label,
            "node-a",
            len(r.rows),
            {"ok": sum(row["status"] == "ok" for row in r.rows)},
            1.0,
            summary=RunSummary.of(r),
            compile_s=r.compile_s,
            bench_s=r.bench_s,
            bookkeeping_s=r.bookkeeping_s,
            static_stats_s=r.static_stats_s,
        )
        for r in results
    ]
    totals = cluster_totals(done)
    assert totals.runs_done == len(results) and totals.configs_done == outcome.totals.configs_done
    assert totals.compile_s == pytest.approx(sum(r.compile_s for r in results)) and totals.compile_s > 0
    assert totals.bench_s == pytest.approx(outcome.totals.bench_s) and totals.bench_s > 0
    runs = [d.summary for d in done]
    ray_text = render(240, lambda c: print_summary(c, totals, 75.0, "some/dataset", runs=runs))
    local_text = render(240, lambda c: print_summary(c, outcome.totals, 75.0, "some/dataset"))
    # Everything but the time line (the local harvest adds its batched nvdisasm seconds there).
    def without_time(text: str) -> list[str]:
        return [line for line in text.splitlines() if "summed over workers" not in line]
    assert without_time(ray_text) == without_time(local_text)
    assert "best config per run" in ray_text and "summed over workers" in ray_text


@pytest.mark.parametrize("width", WIDTHS)
def test_a_speed_up_without_a_default_says_why_it_is_a_dash(harvest, width):
    """A harvest that measures what a --budget harvest skipped measures no default config: its
    speed-up is '-', which the legend explains (and only then)."""
    outcome, _ = harvest
    timing = {"timer": "thread_cpu", "timing_passes": 4, "reps_per_pass": 1}
    without = BestOfRun("softmax", "M4_N1024", "float32", "5/5", 6.2, None, "BLOCK_M=4 BLOCK_N=512 w4 s2")
    runs = [RunSummary(without, timing, 0)]
    text = " ".join(render(width, lambda c: print_summary(c, outcome.totals, 75.0, "d", runs=runs)).split())
    assert "-: this harvest measured no default config ok in the run" in text
    plain = render(width, lambda c: print_summary(c, outcome.totals, 75.0, "d"))
    assert "this harvest measured no default config" not in " ".join(plain.split())


def test_the_timing_line_names_twins_only_when_there_are_some():
    best = BestOfRun("softmax", "M4", "float32", "2/2", 1.0, 2.0, "BLOCK=4 w4 s1")
    timing = {"timer": "thread_cpu", "timing_passes": 4, "reps_per_pass": 1}
    alone = timing_line([RunSummary(best, timing, 0)])
    assert alone == "thread_cpu timer, 4 interleaved passes x 1 rep per config"
    twinned = timing_line([RunSummary(best, timing, 1), RunSummary(best, timing, 2)])
    assert twinned.endswith("; 3 configs timed once for a twin (identical binary and launch)")


def test_durations_read_as_a_person_reads_them():
    assert format_duration(42.34) == "42.3 s"
    assert format_duration(192) == "3 min 12 s"
    assert format_duration(2 * 3600 + 5 * 60) == "2 h 05 min"
    assert format_duration(47 * 3600) == "47 h 00 min"
    assert format_duration(4919 * 86400 + 7 * 3600) == "4,919 days 07 h"  # not '118063 h 00 min'


def _progress_of(outcome, console: Console) -> HarvestProgress:
    """A harvest's progress display fed the runs of ``outcome`` as a harvest feeds it."""
    progress = HarvestProgress(console, outcome.planned)
    with progress:
        for result in outcome.totals.results:
            for row in result.rows:
                progress.config_done(row["status"])
            progress.run_done(result)
    return progress


def test_a_log_file_gets_a_line_per_finished_run_with_the_eta(harvest):
    # a Slurm task or Kubernetes pod logs to a file, not a terminal: the bars were drawn once,
    # at the end, so its log said nothing for hours
    outcome, _ = harvest
    console = Console(file=io.StringIO(), width=100, force_terminal=False)
    _progress_of(outcome, console)
    lines = console.file.getvalue().splitlines()
    runs, configs = len(outcome.planned), sum(len(r.configs) for r in outcome.planned)
    assert len(lines) == runs, lines
    for k, line in enumerate(lines, 1):
        assert re.match(rf"run {k}/{runs} \S.*: configs \d+/{configs} \(ok \d+, failed \d+, skipped \d+\), "
                        r"\d+:\d\d:\d\d elapsed, eta \d+:\d\d:\d\d$", line), line
    assert lines[-1].endswith("eta 0:00:00") and f"configs {configs}/{configs}" in lines[-1]


def test_a_terminal_gets_the_bars_not_the_lines(harvest):
    outcome, _ = harvest
    console = Console(file=io.StringIO(), width=100, force_terminal=True)
    _progress_of(outcome, console)
    assert "run 1/" not in console.file.getvalue() and "eta" in console.file.getvalue()


def test_the_progress_line_counts_failures_and_has_no_eta_before_a_config():
    counts = {"ok": 3, "compile_error": 1, "skipped": 2}
    line = progress_line(2, 5, "softmax M4 float32", 6, 12, counts, 30.0)
    assert line == (
        "run 2/5 softmax M4 float32: configs 6/12 (ok 3, failed 1, skipped 2), 0:00:30 elapsed, "
        "eta 0:00:30"
    )
    assert progress_line(0, 5, "x", 0, 12, {}, 1.0).endswith("eta -")


def test_a_run_another_harvest_committed_is_not_counted_as_done_here(harvest):
    # a Ray lane that waited for a run's claim while a shard measured it returns it with no
    # config: the driver counted it in "harvest finished: N runs" as if it had measured it
    outcome, _ = harvest
    measured = outcome.totals.results[0]
    done = [
        RunDone(measured.run.run_id, measured.run.label, "node-a", len(measured.rows), {"ok": len(measured.rows)}, 1.0,
                summary=RunSummary.of(measured)),
        RunDone("other", "softmax M4 float32", "node-a", 0, {}, 0.1),
    ]  # fmt: skip
    totals = cluster_totals(done)
    assert (totals.runs_done, totals.runs_elsewhere) == (1, 1)
    text = render(200, lambda c: print_summary(c, totals, 5.0, "d", runs=[done[0].summary]))
    assert "harvest finished: 1 run, " in text
    assert "; 1 run committed by another harvest meanwhile (not measured here)" in text
    line = progress_line(2, 2, "x", 4, 4, {"ok": 2, "measured by another harvest": 2}, 1.0)
    assert "(ok 2, failed 0, skipped 0, by another harvest 2)" in line


def test_the_progress_total_is_the_configs_to_measure_as_the_notice_says():
    """A bare tiny harvest's progress said 18,630 configs where its notice said 6,500 to
    measure: the total counted the configs the family rules out (rows written at once, no
    work), so the two disagreed and the ETA ran short. The total is now the configs to measure,
    and the start lines give both numbers with what each means."""
    from corpus.harvest.device import DeviceFacts
    from corpus.harvest.estimate import valid_configs
    from corpus.harvest.plan import PlanRequest, plan_runs
    from corpus.harvest.report import print_start
    from corpus.harvest.resume import ResumePlan
    from corpus.harvest.runner import Execution, RunResult
    from corpus.suite.registry import load_suite, select

    specs = select(load_suite("corpus.suite.kernels"), ["softmax"])
    runs = plan_runs(specs, PlanRequest("tiny", ("float32",), (), None, 0, "interpreter", {"triton": "x"}))
    measured = sum(valid_configs(run) for run in runs)
    ruled_out = sum(len(run.configs) for run in runs) - measured
    assert measured and ruled_out, "softmax's tiny runs rule out some configs"
    console = Console(file=io.StringIO(), width=200, force_terminal=False)
    progress = HarvestProgress(console, runs)
    assert progress.configs_total == measured
    with progress:
        for _ in range(measured):  # what the harvest ticks: measured configs only
            progress.config_done("ok")
        for run in runs:
            progress.run_done(RunResult(run, [], 0.0, 0.0))
    assert console.file.getvalue().splitlines()[-1].endswith(f"configs {measured}/{measured} (ok {measured}, "
                                                             "failed 0, skipped 0), 0:00:00 elapsed, eta 0:00:00")
    facts = DeviceFacts(device_kind="interpreter", arch="sm_90", device_name="interpreter", compute_capability="")
    execution = Execution("d", (), ("interpreter",), "sm_90", 1, 5.0, 5.0, 0, 1, 1, "thread_cpu", False, 0)
    start = render(200, lambda c: print_start(c, ResumePlan(runs), facts, execution, "d"))
    assert (f"{measured} to measure (the progress bar's total); {ruled_out} ruled out by their family, "
            "written as skipped rows") in " ".join(start.split())
    sampled = plan_runs(specs, PlanRequest("tiny", ("float32",), (), 2, 0, "interpreter", {"triton": "x"}))
    start = render(200, lambda c: print_start(c, ResumePlan(sampled), facts, execution, "d"))
    # --max-configs samples valid configs only: "0 ruled out by their family" was noise there
    assert "configs  6 to measure (the progress bar's total)\n" in start and "ruled out" not in start, start


# -- text from outside the code is printed as it is, not read as rich markup -----------------
# "[x]" is a style tag to rich (it vanished) and "[/b]" a closing tag it stops on (MarkupError):
# paths, family names and device names hold either.
ODD = "[x][/b]"


def _odd_results(outcome) -> list:
    """The harvest's results, as if their families were named with brackets."""
    from dataclasses import replace

    return [replace(r, run=replace(r.run, family=f"fam{ODD}{i}")) for i, r in enumerate(outcome.totals.results)]


def test_a_bracketed_run_label_survives_the_live_progress_bar_and_the_log_line(harvest):
    outcome, _ = harvest
    results = _odd_results(outcome)
    for terminal in (True, False):
        console = Console(file=io.StringIO(), width=200, force_terminal=terminal)
        progress = HarvestProgress(console, [r.run for r in results])
        with progress:
            for result in results:
                progress.run_done(result)
        assert results[-1].run.label in console.file.getvalue(), (terminal, console.file.getvalue())


def test_bracketed_paths_families_and_device_names_are_printed_verbatim(harvest):
    from dataclasses import replace

    from corpus.harvest.device import DeviceFacts
    from corpus.harvest.report import print_plan
    from corpus.harvest.runner import Execution

    outcome, _ = harvest
    results = _odd_results(outcome)
    out = f"/data/runs{ODD}/out"
    totals = replace(outcome.totals, results=results)
    summary = render(240, lambda c: print_summary(c, totals, 75.0, out))
    assert out in summary and f"fam{ODD}0" in summary, summary
    facts = DeviceFacts(device_kind="cuda", arch="sm_90", device_name=f"GPU {ODD}", compute_capability="9.0")
    execution = Execution(out, (), ("cuda:0",), "sm_90", 1, 5.0, 5.0, 0, 1, 1, "cuda_event", False, 0)
    plan = render(240, lambda c: print_plan(c, [r.run for r in results], set(), facts, execution))
    assert f"planned runs on GPU {ODD} (sm_90), IR target sm_90" in plan and f"fam{ODD}1" in plan, plan


def test_a_harvest_into_a_bracketed_out_names_it_as_it_is(tmp_path):
    """A real harvest into ``runs[x][/b]/d``, then its rerun ("nothing to do ... committed in")."""
    out = tmp_path / f"runs{ODD}" / "d"
    config = HarvestConfig(str(out), families=("add_broadcast",), max_configs=1, device="cpu", workers=1, flush_every_s=0.0)
    first = render(400, lambda c: run_harvest(config, read_settings(), c))
    assert str(out) in first, first
    again = render(400, lambda c: run_harvest(config, read_settings(), c))
    assert f"already committed in {out};" in again, again
