from __future__ import annotations

import functools
import io
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from rich.console import Console

from schemas import DatasetError, DatasetWriter
from schemas.check import check_dataset
from schemas.storage import resolve, write_atomic
from schemas.tables import TABLES
from schemas.writer import conform, new_writer_id, with_file_metadata

from .conftest import budget_then_rerun, sample_rows, write_rows


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "schemas", *args], capture_output=True, text=True, check=False)


def test_valid_dataset_passes_with_summary(dataset):
    report = check_dataset(dataset)
    assert report.ok, report.problems
    assert report.rows["measurements"] == 9
    assert report.facts["runs"] == 3 and "run rows" not in report.facts
    assert report.facts["statuses"] == {"ok": 6, "compile_error": 3}
    assert "superseded" not in report.facts  # one harvest: nothing to supersede
    result = run_cli("check", dataset)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "OK" in result.stdout and "measurements" in result.stdout


def test_runs_counts_runs_not_the_rows_of_several_harvests(dataset):
    """A later harvest that extends a run (measuring what a --budget harvest skipped) commits a
    second runs row for it: the summary counts the run once and says how many rows there are."""
    later = sample_rows(0, harvest_id="h1")
    writer = DatasetWriter(dataset)
    writer.write("measurements", later["measurements"])
    writer.commit_run(later["runs"])
    report = check_dataset(dataset)
    assert report.ok, report.problems
    assert report.facts["runs"] == 3 and report.facts["harvests"] == 2
    assert str(report.facts["run rows"]).startswith("4 (")
    assert sum(report.facts["devices"].values()) == 3  # devices count runs too
    # measured again (as --no-resume does): each config counted once, the earlier rows in one line
    assert report.facts["statuses"] == {"ok": 6, "compile_error": 3}
    assert str(report.facts["superseded"]).startswith("3 row(s) of earlier harvests (ok 2, compile_error 1) ")


def test_statuses_count_configs_as_the_latest_view_reads_them(dataset):
    """The gap: a --budget harvest writes the configs it leaves out as skipped rows, and a later
    harvest measures them; the summary counted every stored row, so "skipped: 2" stayed after
    the rerun and a reader took those configs for unmeasured. Statuses now count the view
    readers train on (harvests='latest'), and one line says how many earlier rows it leaves out."""
    from schemas import read_table

    budgeted, rerun = budget_then_rerun()
    write_rows(DatasetWriter(dataset), budgeted)
    assert check_dataset(dataset).facts["statuses"] == {"ok": 6, "compile_error": 4, "skipped": 2}
    write_rows(DatasetWriter(dataset), rerun)

    report = check_dataset(dataset)
    assert report.ok, report.problems
    latest = read_table(dataset, "measurements", columns=["status"], harvests="latest")
    assert report.facts["statuses"] == {"ok": 8, "compile_error": 4}
    assert report.facts["statuses"] == Counter(latest.column("status").to_pylist())  # the reader's view
    assert str(report.facts["superseded"]).startswith("2 row(s) of earlier harvests (skipped 2) ")
    printed = run_cli("check", dataset).stdout
    (statuses,) = (line for line in printed.splitlines() if line.startswith("statuses: "))
    assert "'ok': 8" in statuses and "'compile_error': 4" in statuses and "skipped" not in statuses
    flat = " ".join(printed.split())
    assert "superseded: 2 row(s) of earlier harvests (skipped 2) whose configs a later harvest measured" in flat


def test_corrupt_file_is_reported_by_name(dataset):
    victim = sorted(Path(dataset, "ir_nodes").rglob("*.parquet"))[0]
    victim.write_bytes(b"PAR1 this is not parquet")
    report = check_dataset(dataset)
    assert not report.ok
    assert any(victim.name in problem for problem in report.problems)
    result = run_cli("check", dataset)
    assert result.returncode == 1
    assert victim.name in result.stdout.replace("\n", "")


def test_a_problem_naming_a_path_with_brackets_is_printed_as_it_is(dataset, tmp_path):
    """rich read "[ds]" in a printed path as a style and dropped it (and a "[/...]" as a closing
    tag, stopping with a MarkupError): the problem then named a file that does not exist."""
    moved = tmp_path / "runs[ds]" / "copy"
    shutil.copytree(dataset, moved)
    victim = sorted((moved / "ir_nodes").rglob("*.parquet"))[0]
    victim.write_bytes(b"PAR1 this is not parquet")
    from schemas.cli import run_check

    console = Console(file=io.StringIO(), width=400)
    assert run_check(str(moved), console) == 1
    assert str(victim) in console.file.getvalue()


def test_a_valid_dataset_at_a_bracketed_path_is_named_as_it_is(dataset, tmp_path):
    """The table's title ("dataset <path>") was markup: "[x]" vanished, "[/b]" stopped check."""
    from schemas.cli import run_check

    moved = tmp_path / "runs[x][/b]" / "copy"
    shutil.copytree(dataset, moved)
    console = Console(file=io.StringIO(), width=400)
    assert run_check(str(moved), console) == 0
    printed = console.file.getvalue()
    # the title folds to the table's width: compare without the breaks
    assert f"dataset{moved}" in "".join(printed.split()) and printed.rstrip().endswith("OK"), printed


def test_dangling_references_are_problems(dataset):
    writer = DatasetWriter(dataset)
    rows = sample_rows(7)
    rows["measurements"][1]["ttir_id"] = "not-a-graph"
    writer.write("measurements", rows["measurements"])
    writer.commit_run([{**rows["runs"][0], "kernel_id": "unknown-kernel"}])
    problems = "\n".join(check_dataset(dataset).problems)
    assert "ttir_id value(s) not in ir_graphs" in problems
    assert "kernel_id value(s) not in kernels" in problems


def test_a_graph_whose_row_is_not_written_yet_is_a_warning(dataset):
    """Writers add a graph's nodes and edges before its ``ir_graphs`` row (which says it is
    stored whole), so a writer at work or stopped in between leaves nodes and edges of a graph
    without a row: its work in progress, which a rerun completes, not damage. A check beside a
    harvest at that moment failed, naming those rows as dangling."""
    rows = sample_rows(7)
    writer = DatasetWriter(dataset)
    writer.write("ir_nodes", rows["ir_nodes"])
    writer.write("ir_edges", rows["ir_edges"])
    report = check_dataset(dataset)
    assert report.ok, report.problems
    assert any("1 graph(s) without their ir_graphs row" in w for w in report.warnings), report.warnings
    writer.write("ir_graphs", rows["ir_graphs"])  # the writer goes on
    report = check_dataset(dataset)
    assert report.ok and not [w for w in report.warnings if "ir_graphs row" in w], report.warnings


def test_duplicate_run_key_is_a_problem_and_short_run_too(dataset):
    writer = DatasetWriter(dataset)
    writer.commit_run(sample_rows(0)["runs"])
    writer.commit_run([{**sample_rows(5)["runs"][0]}])  # committed, but its measurements never written
    problems = "\n".join(check_dataset(dataset).problems)
    assert "runs: 1 row(s) repeat a key" in problems
    assert "n_configs differs" in problems


def test_uncommitted_rows_are_a_warning_not_a_problem(dataset):
    DatasetWriter(dataset).write("measurements", sample_rows(8)["measurements"])
    report = check_dataset(dataset)
    assert report.ok
    assert any("uncommitted runs (an interrupted harvest" in w for w in report.warnings)
    assert report.facts["statuses"] == {"ok": 6, "compile_error": 3}  # readers do not see them either


HOLD_A_LOCK = """
import sys, time
from schemas.locking import dataset_lock, holder_line
from schemas.storage import resolve
with dataset_lock(resolve(sys.argv[1]), "harvest-live", wait=False, holder=holder_line("harvest")):
    print("held", flush=True)
    time.sleep(60)
"""


def test_uncommitted_rows_beside_a_live_lock_holder_are_named_as_work_in_progress(dataset):
    DatasetWriter(dataset).write("measurements", sample_rows(8)["measurements"])
    holder = subprocess.Popen([sys.executable, "-c", HOLD_A_LOCK, dataset], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        warnings = "\n".join(check_dataset(dataset).warnings)
        assert f"of runs not committed yet: harvest (pid {holder.pid} on anon-" in warnings
        assert "interrupted" not in warnings
    finally:
        holder.kill()
        holder.wait()
    # The holder is gone (its lock line stays, as a killed harvest leaves it): interrupted again.
    assert "an interrupted harvest" in "\n".join(check_dataset(dataset).warnings)


def test_missing_table_directory_is_reported(dataset, tmp_path):
    shutil.rmtree(Path(dataset, "kernels"))
    result = run_cli("check", dataset)
    assert result.returncode == 1
    assert "table directory 'kernels' not found" in result.stdout.replace("\n", " ")
    assert "Traceback" not in result.stderr
    # no dataset at all (an empty directory, a file): one line and 2, as compact says it
    (tmp_path / "afile").write_text("x")
    (tmp_path / "empty").mkdir()
    for path in (tmp_path / "empty", tmp_path / "afile"):
        result = run_cli("check", str(path))
        assert result.returncode == 2 and "no dataset here" in result.stderr + result.stdout
        assert "problem(s)" not in result.stdout and "Traceback" not in result.stderr
    # a table's directory, the path a plain Parquet reader takes: the line says to pass the root
    for command in ("check", "compact"):
        result = run_cli(command, str(Path(dataset, "measurements")))
        said = " ".join((result.stderr + result.stdout).split())
        assert result.returncode == 2 and "is the 'measurements' table's directory" in said, said
        assert f"pass the dataset root, '{dataset}'" in said


def test_a_measurement_of_another_arch_than_its_run_is_a_problem(dataset):
    writer = DatasetWriter(dataset)
    rows = sample_rows(7)
    rows["measurements"][2]["arch"] = "sm_80"  # its run is sm_90: lands under arch=sm_80/
    writer.write("measurements", rows["measurements"])
    writer.commit_run(rows["runs"])
    problems = "\n".join(check_dataset(dataset).problems)
    assert "1 row(s) whose arch differs from their run's" in problems
    assert f"run_id={rows['runs'][0]['run_id']} is sm_90" in problems


def test_a_null_timing_sample_is_a_problem(dataset):
    writer = DatasetWriter(dataset)
    rows = sample_rows(7)
    rows["measurements"][1] |= {"samples_ms": [1.0, None, 2.0], "n_reps": 3}
    writer.write("measurements", rows["measurements"])
    writer.commit_run(rows["runs"])
    assert "1 null value(s) inside samples_ms" in "\n".join(check_dataset(dataset).problems)


def test_runs_stamped_by_a_clock_ahead_or_set_back_are_warnings(dataset):
    """The gap: harvests='latest' ranks a run's repeats by finished_at, so a run stamped a day
    ahead by a machine whose clock ran fast shadowed every later re-measurement, and check said
    nothing; a run ending before it started misorders the same way."""
    from datetime import datetime, timedelta, timezone

    now = datetime.now(timezone.utc)
    writer = DatasetWriter(dataset)
    for index, (started, finished) in enumerate(
        [(now - timedelta(hours=1), now), (now, now + timedelta(days=1)), (now, now - timedelta(minutes=5))]
    ):
        rows = sample_rows(20 + index)
        writer.write("measurements", rows["measurements"])
        writer.commit_run([run | {"started_at": started, "finished_at": finished} for run in rows["runs"]])
    report = check_dataset(dataset)
    assert not any("finished" in problem for problem in report.problems)  # warnings: the rows are sound
    warnings = "\n".join(report.warnings)
    assert "runs: 1 run(s) finished in the future, up to 23:59:" in warnings  # minus the check's own seconds
    assert f"run_id={sample_rows(21)['runs'][0]['run_id']}" in warnings
    assert "runs: 1 run(s) finished before they started" in warnings
    assert f"run_id={sample_rows(22)['runs'][0]['run_id']}" in warnings


def _write_foreign_measurements(dataset: str, rows: list[dict]) -> None:
    """``rows`` as a measurements file a foreign writer made: the writer's layout and footer,
    without its value check (:class:`DatasetWriter` now refuses such rows)."""
    spec = TABLES["measurements"]
    table = with_file_metadata(conform(spec, rows), spec)
    directory = f"{dataset}/measurements/arch={rows[0]['arch']}"
    write_atomic(resolve(dataset), directory, f"part-{new_writer_id()}-000001.parquet", table)


def test_impossible_measurement_values_are_problems_and_refused_by_the_writer(dataset):
    """The gap: a status outside the vocabulary, a NaN median of an 'ok' row, a negative one
    and NaN/inf samples fit the column types, so check said OK; train then took the NaN as a
    valid latency (its log NaN) and the unknown status as a failure (tests/train/test_tables.py)."""
    rows = sample_rows(7, n_configs=4)
    measurements = rows["measurements"]
    measurements[0]["status"] = "bogus"
    measurements[1]["median_ms"] = float("nan")
    measurements[2]["median_ms"] = -1.0
    measurements[3] |= {"samples_ms": [1.0, float("inf"), float("nan")], "n_reps": 3}
    with pytest.raises(DatasetError, match="not written: measurements: 1 row.s. whose status is none of"):
        DatasetWriter(dataset).write("measurements", measurements)
    assert not list(Path(dataset, "measurements").rglob("*000001.parquet"))  # nothing written
    _write_foreign_measurements(dataset, measurements)
    DatasetWriter(dataset).commit_run(rows["runs"])
    report = check_dataset(dataset)
    assert not report.ok
    problems = "\n".join(report.problems)
    assert "1 row(s) whose status is none of ok, compile_error" in problems and "('bogus')" in problems
    assert "1 median_ms value(s) are NaN or infinite" in problems
    assert "2 value(s) inside samples_ms are NaN or infinite" in problems
    assert "1 'ok' row(s) without a usable median_ms (missing or negative)" in problems
    assert f"run_id={measurements[2]['run_id']}" in problems


def test_a_graph_whose_nodes_were_lost_is_a_problem(dataset):
    """An ``ir_nodes`` file deleted: the graph's ``ir_graphs`` row still counts its nodes."""
    victim = sorted(Path(dataset, "ir_nodes").rglob("*.parquet"))[0]
    victim.unlink()
    problems = "\n".join(check_dataset(dataset).problems)
    assert "1 graph(s) whose ir_nodes rows are not their num_nodes" in problems
    assert "has 0 of 2 nodes" in problems


def _with_device_graph(root: str) -> None:
    """A run whose device IR (Helion's helion_fx graph, named by ``runs.device_ir_id`` alone:
    no measurement names it) is stored with its nodes, as an import of Helion's log writes it."""
    writer = DatasetWriter(root)
    fx = {"ir_id": "fx00000000000009", "level": "helion_fx"}
    writer.write("ir_graphs", [{**fx, "num_nodes": 3, "num_data_edges": 1}])
    writer.write("ir_nodes", [{**fx, "node_id": i, "node_kind": "op"} for i in range(3)])
    writer.write("ir_edges", [{**fx, "src": 0, "dst": 1, "kind": "data", "position": 0}])
    rows = sample_rows(9)
    rows["runs"][0]["device_ir_id"] = fx["ir_id"]
    write_rows(writer, rows)


@pytest.mark.parametrize(
    ("lost", "problem"),
    [
        (("ir_nodes",), "ir_id=fx00000000000009 has 0 of 3 nodes"),
        (("ir_edges",), "ir_id=fx00000000000009 has 0 of 1 data edges"),
        (("ir_graphs", "ir_nodes", "ir_edges"), "runs: 1 device_ir_id value(s) not in ir_graphs"),
    ],
)
def test_a_run_whose_device_graph_was_lost_is_a_problem(dataset, lost, problem):
    """The gap: only graphs that measurements name were checked, so a Helion import whose
    helion_fx files (or whole partitions) were lost passed check."""
    _with_device_graph(dataset)
    assert check_dataset(dataset).ok
    for table in lost:
        shutil.rmtree(Path(dataset, table, "level=helion_fx"))
    problems = "\n".join(check_dataset(dataset).problems)
    assert problem in problems


@pytest.mark.parametrize(("lost", "problem"), [("ir_nodes", "has 0 of 3 nodes"), ("ir_edges", "has 0 of 1 data edges")])
def test_a_graph_no_row_names_that_lost_its_nodes_is_a_problem(dataset, lost, problem):
    """The gap: only graphs that measurements or runs name were checked for their nodes and
    edges, so an ir_graphs row copied in without its nodes (a foreign ir_graphs file), or
    whose ir_nodes file was lost, passed check, and readers of the IR tables returned a graph
    row that says it is stored whole without its nodes. A writer adds a graph's row only after
    its nodes and edges, so no writer leaves such a row."""
    writer = DatasetWriter(dataset)
    fx = {"ir_id": "fx00000000000008", "level": "helion_fx"}
    writer.write("ir_nodes", [{**fx, "node_id": i, "node_kind": "op"} for i in range(3)])
    writer.write("ir_edges", [{**fx, "src": 0, "dst": 1, "kind": "data", "position": 0}])
    writer.write("ir_graphs", [{**fx, "num_nodes": 3, "num_data_edges": 1}])
    assert check_dataset(dataset).ok  # a graph no row names, stored whole: an interrupted writer's
    shutil.rmtree(Path(dataset, lost, "level=helion_fx"))
    problems = "\n".join(check_dataset(dataset).problems)
    assert f"ir_id=fx00000000000008 {problem}" in problems and "no measurement or run names" in problems, problems


def test_a_node_filed_under_another_level_is_lost_to_its_graph(dataset):
    """train reads one level's nodes: a node row whose level is not its graph's is missing there."""
    rows = sample_rows(9)
    rows["ir_nodes"][1]["level"] = "ttgir"  # its graph is a ttir graph
    write_rows(DatasetWriter(dataset), rows)
    problems = "\n".join(check_dataset(dataset).problems)
    assert "ir_id=ir00000000000009 has 1 of 2 nodes" in problems


def test_a_measurement_naming_a_graph_of_another_level_is_a_problem(dataset):
    """The gap: ttir_id/ttgir_id were looked up among every level's graphs, so a ttgir_id naming
    a graph stored as ttir passed check, and python -m train (which reads one level) then
    stopped on a graph that is not there."""
    rows = sample_rows(9)
    rows["measurements"][1]["ttgir_id"] = rows["measurements"][1]["ttir_id"]  # a ttir graph
    write_rows(DatasetWriter(dataset), rows)
    problems = "\n".join(check_dataset(dataset).problems)
    assert "measurements: 1 ttgir_id value(s) name a graph stored under another level than ttgir" in problems


def _with_ttgir(rows: dict[str, list[dict]], num_warps: int, num_ctas: int = 1) -> dict[str, list[dict]]:
    """``rows`` (:func:`sample_rows`) whose compiled configs name one TTGIR graph compiled with
    ``num_warps`` and ``num_ctas`` (module attributes ttg.num-warps / ttg.num-ctas)."""
    ttgir = rows["ir_graphs"][0]["ir_id"].replace("ir", "tg", 1)
    rows["ir_graphs"].append({"ir_id": ttgir, "level": "ttgir", "num_warps": num_warps, "num_ctas": num_ctas})
    for row in rows["measurements"]:
        row.update(num_warps=4, num_ctas=1, ttgir_id=ttgir if row["ttir_id"] else None)
    return rows


def test_a_measurement_naming_the_ttgir_of_another_config_is_a_problem(dataset):
    """The gap: a measurement's ttgir_id may name a TTGIR graph of the right level compiled for
    another config, and nothing noticed. A TTGIR graph records the num_warps and num_ctas it was
    compiled with (ttg.num-warps, ttg.num-ctas, part of the text its ir_id hashes): they are the
    config's, or the graph is not this config's."""
    writer = DatasetWriter(dataset)
    write_rows(writer, _with_ttgir(sample_rows(7), num_warps=4))  # the config's own graph
    assert check_dataset(dataset).ok, check_dataset(dataset).problems
    write_rows(writer, _with_ttgir(sample_rows(8), num_warps=8))  # another config's graph
    write_rows(writer, _with_ttgir(sample_rows(9), num_warps=4, num_ctas=2))
    problems = [p for p in check_dataset(dataset).problems if "compiled with" in p]
    assert len(problems) == 1, check_dataset(dataset).problems
    assert problems[0].startswith("measurements: 4 row(s) name a ttgir graph compiled with other num_warps or num_ctas")
    assert "run_id=run0000000000008" in problems[0] and "num_warps=4" in problems[0] and "num_warps=8" in problems[0]


def test_copies_of_a_graph_do_not_count_twice(dataset):
    DatasetWriter(dataset).write("ir_nodes", sample_rows(0)["ir_nodes"])  # a second writer's copy
    report = check_dataset(dataset)
    assert report.ok, report.problems


def test_copies_of_ir_rows_that_differ_only_in_source_locations_are_a_warning(dataset):
    """ir_id hashes the IR text without source locations: copies compiled from another path or
    line are the same graph, differing in loc_line/loc_col/var_name only (a warning)."""
    writer = DatasetWriter(dataset)
    writer.write("ir_nodes", sample_rows(0)["ir_nodes"])
    assert any("identical content written twice" in w for w in check_dataset(dataset).warnings)
    other = [{**row, "loc_line": 7, "var_name": "x"} for row in sample_rows(1)["ir_nodes"]]
    writer.write("ir_nodes", other)
    report = check_dataset(dataset)
    assert report.ok, report.problems
    warnings = [w for w in report.warnings if w.startswith("ir_nodes")]
    assert len(warnings) == 1 and "differ from the first in other columns" in warnings[0], warnings
    assert "identical" not in warnings[0]


def _part_files(root: str, table: str) -> set[Path]:
    return set(Path(root, table).rglob("*.parquet"))


@pytest.mark.parametrize(
    ("table", "change"),
    [
        ("ir_nodes", {"op_name": "tt.store"}),
        ("ir_nodes", {"shape": [2, 2048]}),  # a list column: one copy says another tensor shape
        ("ir_edges", {"result_index": 3}),
        ("ir_graphs", {"num_nodes": 2, "num_dots": 5}),
    ],
)
def test_copies_of_ir_rows_that_differ_in_what_the_ir_id_hashes_are_a_problem(dataset, table, change):
    """The gap: a foreign ir_nodes file carrying an ir_id already stored, with other node
    features, was only a warning, and readers kept the first copy by path, so the foreign file
    could decide what train sees. ir_id hashes the IR text (without locations), from which these
    columns derive: copies that differ there are not both what the id says."""
    before = _part_files(dataset, table)
    DatasetWriter(dataset).write(table, [{**row, **change} for row in sample_rows(1)[table]])
    (foreign,) = _part_files(dataset, table) - before
    (original,) = (p for p in before if "ir00000000000001" in str(pq.read_table(p).column("ir_id")))
    problems = [p for p in check_dataset(dataset).problems if p.startswith(f"{table}: ")]
    assert len(problems) == 1, problems
    assert "copy(ies) of a key hold other values of" in problems[0] and "ir_id=ir00000000000001" in problems[0]
    assert foreign.name in problems[0] and original.name in problems[0]


def test_committed_rows_fewer_than_the_card_counted_are_a_problem(dataset):
    """Every runs file deleted: the measurements look merely uncommitted (a warning); the card
    written when the dataset was whole tells the loss apart."""
    from schemas.card import write_card

    write_card(dataset)
    assert check_dataset(dataset).ok
    for victim in Path(dataset, "runs").rglob("*.parquet"):
        victim.unlink()
    problems = check_dataset(dataset).problems
    assert any("runs: 0 committed row(s), the card counted 3" in p for p in problems), problems
    assert any("measurements: 0 committed row(s), the card counted 9" in p for p in problems)


def test_runs_lost_and_made_up_by_rows_added_later_are_still_a_problem(dataset):
    """The gap: the card counted totals only, and a harvest refreshed it whatever it found.
    One runs file lost (its measurements then look merely uncommitted), then another harvest
    added more runs than were lost: its refresh wrote the smaller count into the card, and
    even without the refresh the total made up for the loss; check said OK. The card now
    counts runs per harvest, check compares each, and a harvest's refresh keeps a loss."""
    from schemas.card import CardLossError, write_card

    from .conftest import write_run

    write_card(dataset)
    lost = next(p for p in Path(dataset, "runs").rglob("*.parquet") if "run0000000000000" in str(pq.read_table(p)))
    lost.unlink()
    writer = DatasetWriter(dataset)
    for index in (10, 11, 12):  # a later harvest: more runs than were lost
        write_run(writer, index, harvest_id="h1")
    with pytest.raises(CardLossError, match="harvest_id=h0: 2 of 3"):
        write_card(dataset, command="python -m corpus.harvest ...", accept_loss=False)  # a harvest's refresh
    problems = "\n".join(check_dataset(dataset).problems)
    assert "1 harvest(s) hold fewer committed runs than the card counted, e.g. harvest_id=h0: 2 of 3" in problems
    write_card(dataset)  # asked for: the loss is accepted
    assert check_dataset(dataset).ok


def test_url_of_unknown_or_missing_storage_is_one_line():
    """A typo in a URL's scheme, or a scheme whose fsspec backend is not installed, used to end
    every maintenance command in fsspec's traceback; now one line naming the URL, exit 2."""
    from schemas.cli import run_card, run_check, run_compact, run_scrub

    for url in ("s3x://bucket/corpus", "s3://bucket/corpus"):
        for command in (run_check, functools.partial(run_compact, min_files=2), run_scrub, run_card):
            console = Console(file=io.StringIO(), width=200)
            assert command(url, console=console) == 2, (command, url)
            text = console.file.getvalue()
            assert text.startswith(f"error: {url}: ") and text.count("\n") == 1, text


V1_DATASET = Path(__file__).parent / "fixtures" / "v1_dataset"


def _graph_copy(root: Path, name: str, ir_text: str) -> str:
    """A current-version copy of the v1 dataset's first TTIR graph row with another ``ir_text``
    (the same IR with other source locations: another extractor), in
    ``ir_graphs/level=ttir/NAME``; returns its ir_id."""
    from schemas import read_table

    row = read_table(str(root), "ir_graphs", filters=[("level", "=", "ttir")]).to_pylist()[0]
    directory = root / "ir_graphs" / "level=ttir"
    before = set(directory.iterdir())
    DatasetWriter(str(root)).write("ir_graphs", [{**row, "ir_text": ir_text}])
    (written,) = set(directory.iterdir()) - before
    written.rename(directory / name)
    return row["ir_id"]


def test_differing_ir_copies_read_as_check_says_current_version_first(tmp_path):
    """The gap: check's warning and docs/dataset.md said readers keep the copy "in the file whose
    name sorts first"; they keep a current-version file's copy before an older file's, whatever
    the names, and among files of one version the first by path. compact keeps the same copy."""
    from schemas import read_table, scan_table
    from schemas.compact import compact_dataset

    root = tmp_path / "ds"
    shutil.copytree(V1_DATASET, root)
    ttir = root / "ir_graphs" / "level=ttir"
    (old,) = ttir.iterdir()
    old.rename(ttir / "part-0-older.parquet")  # the version-1 file's name sorts first
    stored = read_table(str(root), "ir_graphs")
    old_texts = dict(zip(stored.column("ir_id").to_pylist(), stored.column("ir_text").to_pylist()))
    ir_id = _graph_copy(root, "part-2-current.parquet", "current, sorting last")
    _graph_copy(root, "part-1-current.parquet", "current, sorting first among current")

    warnings = [w for w in check_dataset(str(root)).warnings if w.startswith("ir_graphs: ")]
    assert len(warnings) == 1 and "differ from the first in other columns" in warnings[0]
    assert "file whose name sorts first" not in warnings[0]
    assert "a file at the current schema version, the first such file by path" in warnings[0]

    def texts() -> dict[str, str]:
        eager = read_table(str(root), "ir_graphs")
        lazy = scan_table(str(root), "ir_graphs").collect().to_arrow()
        assert sorted(eager.to_pylist(), key=str) == sorted(lazy.to_pylist(), key=str)
        assert eager.num_rows == len(old_texts)
        return dict(zip(eager.column("ir_id").to_pylist(), eager.column("ir_text").to_pylist()))

    read = texts()
    assert read[ir_id] == "current, sorting first among current"  # not the older file's copy
    chosen = read_table(str(root), "ir_graphs", filters=[("ir_text", "=", "current, sorting last")])
    assert chosen.column("ir_id").to_pylist() == [ir_id]  # a filter applies before the choice
    assert {k: v for k, v in read.items() if k != ir_id} == {k: v for k, v in old_texts.items() if k != ir_id}
    (ttir / "part-1-current.parquet").unlink()
    assert texts()[ir_id] == "current, sorting last"
    (ttir / "part-2-current.parquet").unlink()
    assert texts()[ir_id] == old_texts[ir_id]  # only the older file holds it now

    _graph_copy(root, "part-3-current.parquet", "current again")
    compact_dataset(str(root))
    assert texts()[ir_id] == "current again"  # compact kept the copy the readers read
    assert len(list(ttir.iterdir())) == 1

    compact_dataset(str(root), min_files=1)  # every file at the current version: polars' own scan
    _graph_copy(root, "part-5-current.parquet", "current, sorting after part-4")
    _graph_copy(root, "part-4-current.parquet", "current, sorting first")  # before part-compact-*
    assert texts()[ir_id] == "current, sorting first"
