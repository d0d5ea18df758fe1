"""Integrity of the harvest's write path and its refusal of bad input.

Harvests here run in-process through :func:`corpus.harvest.app.run_harvest` with the real
compile and benchmark worker processes (only the parent writes), so a storage that fails
the N-th write (``tests.faultfs``) hits the real flush. One family, one run, two configs.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest
from rich.console import Console

from corpus.destination import OutRefused, out_as_found_unless_work, probe_out
from corpus.harvest.__main__ import main as harvest_main
from corpus.harvest.app import HarvestConfig, HarvestError, refresh_card, run_harvest
from corpus.harvest.checks import HarvestInputError, harvest_lock
from corpus.harvest.claims import RunClaims
from corpus.harvest.scratch import scratch_directory
from corpus.harvest.settings import read_settings
from schemas import DatasetError, DatasetWriter, read_table
from schemas.card import CARD_JSON
from schemas.check import check_dataset
from schemas.locking import FileLock
from schemas.machine import host_name
from schemas.tables import TABLES

from ...faultfs import FaultPlan, faulty_storage, faulty_url, remount_read_only, tmpfs
from ...schemas.conftest import write_run
from .conftest import ONE_RUN_FAMILY as FAMILY
from .conftest import assert_rerun_finished, die_in_final_compaction


def _config(out: str, **overrides) -> HarvestConfig:
    base = {
        "out": out,
        "families": (FAMILY,),
        "max_configs": 2,
        "dtypes": ("float32",),
        "workers": 1,
        "flush_every_s": 0.0,
        "device": "cpu",
    }
    return HarvestConfig(**{**base, **overrides})


def _harvest(out: str, **overrides):
    return run_harvest(_config(out, **overrides), read_settings(), Console(file=io.StringIO()))


def _keys(path: Path) -> list[tuple[str, str, str]]:
    table = read_table(str(path), "measurements", columns=["run_id", "harvest_id", "config_id"])
    return list(zip(*(table.column(c).to_pylist() for c in table.column_names)))


@pytest.fixture(scope="module")
def reference(tmp_path_factory, one_run_shard) -> tuple[set[tuple[str, str]], list[str]]:
    """Measured (run_id, config_id) of an uninterrupted harvest, and the paths it wrote in order."""
    out = tmp_path_factory.mktemp("integrity") / "reference"
    paths: list[str] = []
    plan = FaultPlan()
    record = plan.on_write
    plan.on_write = lambda path: (paths.append(path), record(path))[1]  # type: ignore[method-assign]
    with faulty_storage(plan):
        _harvest(faulty_url(out), shard=one_run_shard)
    keys = _keys(out)
    assert keys and len(keys) == len(set(keys))
    return {(run, config) for run, _, config in keys}, [p.removeprefix(str(out)) for p in paths]


def _fault_then_resume(out: Path, shard: tuple[int, int], plan: FaultPlan) -> None:
    with faulty_storage(plan):
        try:
            _harvest(faulty_url(out), shard=shard)
        except (
            DatasetError,
            OutRefused,
        ) as exc:  # a one-line error (--out probe or a write)
            assert "\n" not in str(exc)
    _harvest(str(out), shard=shard)  # resume on healthy storage


def _assert_like_reference(out: Path, reference_keys: set[tuple[str, str]]) -> None:
    keys = _keys(out)  # read_table itself refuses repeated keys
    assert len(keys) == len(set(keys))
    assert {(run, config) for run, _, config in keys} == reference_keys
    report = check_dataset(str(out))
    assert report.ok, report.problems


def test_failed_runs_write_then_retry_commits_each_measurement_once(
    tmp_path, one_run_shard, reference
):
    """The found defect: measurements land, the ``runs`` write fails, the retried flush must
    not write the measurements again."""
    keys, paths = reference
    runs_write = next(i for i, p in enumerate(paths, 1) if p.startswith("/runs/arch="))
    out = tmp_path / "ds"
    plan = FaultPlan(fail={runs_write})
    with (
        faulty_storage(plan),
        pytest.raises(DatasetError, match="could not write table 'runs'.*intact"),
    ):
        _harvest(faulty_url(out), shard=one_run_shard)
    assert plan.failed  # the fault did happen; the final flush then retried and committed
    _assert_like_reference(out, keys)
    committed = read_table(str(out), "runs", columns=["run_id"]).num_rows
    assert committed == 1


@pytest.mark.slow
def test_every_failing_write_then_resume_equals_uninterrupted(tmp_path, one_run_shard, reference):
    """For every N, the N-th write fails once (then storage recovers); and for the first write
    into each table, storage stays full from there on. After a resume the dataset equals the
    uninterrupted one, with no repeated key (about 4 minutes on 2 busy cores)."""
    keys, paths = reference
    first_of_table: dict[str, int] = {}
    for n, path in enumerate(paths, 1):
        first_of_table.setdefault(path.strip("/").split("/")[0], n)
    plans = [FaultPlan(fail={n}) for n in range(1, len(paths) + 1)]
    plans += [FaultPlan(fail_from=n) for n in sorted(first_of_table.values())]
    for index, plan in enumerate(plans):
        out = tmp_path / f"case{index}"
        _fault_then_resume(out, one_run_shard, plan)
        _assert_like_reference(out, keys)
        shutil.rmtree(out)


@pytest.mark.parametrize("table", ["ir_nodes", "ir_edges"])
def test_a_disk_full_while_writing_a_graph_then_resume_leaves_every_graph_whole(
    tmp_path, one_run_shard, reference, table
):
    """The found defect: a flush wrote a new graph's ``ir_graphs`` row, then the disk filled
    (or the harvest was killed) before its nodes or edges landed. The resumed harvest took the
    graph for stored (its ``ir_graphs`` row was there) and never wrote them, so the graph stayed
    short of its nodes for good: check failed and training refused it. Now a graph's row is
    written after its nodes and edges, and a graph without its row is written again whole."""
    keys, paths = reference
    first = next(i for i, p in enumerate(paths, 1) if p.startswith(f"/{table}/level="))
    out = tmp_path / "ds"
    _fault_then_resume(out, one_run_shard, FaultPlan(fail_from=first))
    _assert_like_reference(out, keys)


# -- bad input is refused before any work --------------------------------------------------


@pytest.fixture
def user_suites(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "suites"
    root.mkdir()
    (root / "suite_without_families.py").write_text("VALUE = 1\n")
    (root / "suite_that_raises.py").write_text("raise RuntimeError('broken at import')\n")
    monkeypatch.syspath_prepend(str(root))
    return root


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--dtypes", "float99"), "--dtypes float99: not a dtype of the selected families"),
        (("--dtypes", "fp32,float16"), "--dtypes fp32: not a dtype of the selected families (bfloat16, "
         "float16, float32); did you mean the full name? (fp32 is float32)"),
        (
            ("--dtypes", "bfloat16", "--device", "cpu"),
            "plans no runs (bfloat16 is skipped on the interpreter",
        ),
        (
            ("--target", "sm_1000"),
            "--target sm_1000: the installed Triton cannot compile for sm_1000",
        ),
        (("--target", "gpu9000"), "--target gpu9000: unrecognised GPU target"),
        (
            ("--suite", "suite_without_families"),
            "--suite suite_without_families: the module registers no kernel families",
        ),
        (
            ("--suite", "suite_that_raises"),
            "--suite suite_that_raises: importing it raised RuntimeError: broken at import",
        ),
    ],
)
def test_bad_values_are_one_line_errors_and_nothing_is_written(
    tmp_path, capsys, user_suites, args, expected
):
    out = tmp_path / "out"
    families = () if "--suite" in args else ("--families", FAMILY)
    code = harvest_main([*families, "--max-configs", "1", "--out", str(out), *args])
    printed = " ".join(capsys.readouterr().out.split())
    assert code == 2
    assert expected in printed and "Traceback" not in printed
    assert not out.exists()


def test_empty_selection_is_allowed_with_the_flag(tmp_path, capsys):
    out = tmp_path / "out"
    args = ["--families", FAMILY, "--dtypes", "bfloat16", "--device", "cpu", "--out", str(out)]
    assert harvest_main(args) == 2
    assert harvest_main([*args, "--allow-empty"]) == 0


def test_out_that_is_a_file_is_refused_before_work(tmp_path, capsys):
    out = tmp_path / "a-file"
    out.write_text("not a directory")
    code = harvest_main(
        ["--families", FAMILY, "--max-configs", "1", "--dtypes", "float32", "--out", str(out)]
    )
    printed = " ".join(capsys.readouterr().out.split())
    assert (
        code == 2
        and f"--out {out}: cannot write the dataset there" in printed
        and "Not a directory" in printed
    )


def test_dry_run_refuses_the_out_the_harvest_would_refuse(tmp_path, capsys):
    """--dry-run used to print a clean plan for an --out that is a file or someone's project
    directory, which the harvest itself then refused; now it refuses them the same way, and
    still creates nothing."""
    afile = tmp_path / "a-file"
    afile.write_text("not a directory")
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("# mine\n")
    base = ["--dry-run", "--families", FAMILY, "--max-configs", "1", "--dtypes", "float32", "--device", "cpu"]
    for out, says in ((afile, "cannot write the dataset there (Not a directory)"),
                      (project, "a non-empty directory that holds no dataset (README.md)")):  # fmt: skip
        assert harvest_main([*base, "--out", str(out)]) == 2
        printed = " ".join(capsys.readouterr().out.split())
        assert f"error: --out {out}: {says}" in printed, printed
    assert sorted(p.name for p in project.iterdir()) == ["README.md"]
    assert harvest_main([*base, "--out", str(project), "--force-out"]) == 0
    new = tmp_path / "new"
    assert harvest_main([*base, "--out", str(new)]) == 0
    assert not new.exists() and sorted(p.name for p in project.iterdir()) == ["README.md"]


def test_an_out_with_brackets_is_named_as_typed(tmp_path, capsys):
    """The defect: the error line went to rich as markup, so --out 'runs[/x]' ended in a
    MarkupError traceback instead of the one-line refusal."""
    out = tmp_path / "runs[/x]"  # a file x] in a directory runs[
    out.parent.mkdir()
    out.write_text("not a directory")
    code = harvest_main(["--families", FAMILY, "--max-configs", "1", "--dtypes", "float32", "--out", str(out)])
    printed = " ".join(capsys.readouterr().out.split())
    assert code == 2 and f"error: --out {out}: cannot write the dataset there" in printed


def test_read_only_out_is_refused_before_work(tmp_path, capsys):
    with tmpfs(tmp_path / "ro", size="1m") as mount:
        remount_read_only(mount)
        code = harvest_main(
            [
                "--families",
                FAMILY,
                "--max-configs",
                "1",
                "--dtypes",
                "float32",
                "--out",
                str(mount / "ds"),
            ]
        )
    printed = " ".join(capsys.readouterr().out.split())
    assert (
        code == 2
        and "cannot write the dataset there" in printed
        and "Read-only file system" in printed
    )


def test_full_disk_is_a_one_line_error_and_committed_data_is_intact(tmp_path, one_run_shard):
    """A real full disk: a tmpfs too small for the second harvest's files."""
    with tmpfs(tmp_path / "small", size="400k") as mount:
        out = mount / "ds"
        _harvest(str(out), shard=one_run_shard)
        before = _keys(out)
        (mount / "filler").write_bytes(b"\0" * (int(shutil.disk_usage(mount).free) - 8192))
        with pytest.raises(DatasetError) as error:
            _harvest(str(out), shard=one_run_shard, resume=False)
        message = str(error.value)
        assert "\n" not in message and "could not write table" in message
        assert "No space left on device" in message and "intact" in message
        assert _keys(out) == before
        assert check_dataset(str(out)).ok


def test_second_identical_harvest_stops_unless_allowed(tmp_path, capsys, one_run_shard):
    out = tmp_path / "ds"
    planned = _harvest(str(out), shard=one_run_shard, dry_run=True).planned
    shard = f"{one_run_shard[0]}/{one_run_shard[1]}"
    args = [
        "--families",
        FAMILY,
        "--max-configs",
        "2",
        "--dtypes",
        "float32",
        "--device",
        "cpu",
        "--shard",
        shard,
        "--out",
        str(out),
    ]
    with harvest_lock(str(out), planned, allow_repeat=False):  # the first harvest, still running
        assert harvest_main(args) == 2
        # refused after the probe of --out made its table directories: they are gone again
        assert not [table for table in TABLES if (out / table).exists()]
        printed = " ".join(capsys.readouterr().out.split())
        assert (
            f"another harvest of the same runs is writing into {out}: harvest (pid {os.getpid()} on anon-"
            in printed
            and "--allow-repeat" in printed
        )
        with harvest_lock(str(out), planned, allow_repeat=True):
            pass  # a deliberate repeat is not stopped
    assert not list(out.rglob("*.parquet"))


def test_harvest_leaves_nothing_in_tmpdir(tmp_path, monkeypatch, one_run_shard):
    """Triton's cache goes to a stable user cache directory, and workers' scratch files
    (MLIR parse files of compile workers, which are killed at the end) to a directory the
    harvest removes."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))  # what the worker processes inherit
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # what this process uses
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    _harvest(str(tmp_path / "ds"), shard=one_run_shard, dry_run=True)
    assert not list(scratch.iterdir()) and not (tmp_path / "cache").exists()
    _harvest(str(tmp_path / "ds"), shard=one_run_shard)
    assert not list(scratch.iterdir())
    assert list((tmp_path / "cache" / "kernel-corpus" / "triton").iterdir())


def test_scratch_of_a_killed_harvest_is_removed_by_the_next(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.Popen(["sleep", "0"])
    dead.wait()  # a pid that no longer runs, as after a SIGKILL of the whole harvest
    orphan = tmp_path / f"kernel-corpus-scratch-{dead.pid}-abc"
    (orphan / "extract-mlir-x").mkdir(parents=True)
    alive = tmp_path / f"kernel-corpus-scratch-{os.getpid()}-def"  # a harvest still running
    alive.mkdir()
    with scratch_directory() as mine:
        assert Path(mine).is_dir() and not orphan.exists() and alive.exists()
    assert not Path(mine).exists()


# -- arguments refused as they are parsed -----------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--families", ""), "expected a comma-separated list, got ''"),
        (("--dtypes", " , "), "expected a comma-separated list"),
        (("--out", ""), "expected a non-empty value"),
        (("--device", "gpu9"), "expected auto, cpu, cuda or cuda:N[,M...]"),
        (("--device", "cuda:x"), "expected auto, cpu, cuda or cuda:N[,M...]"),
        (("--compile-timeout", "-1"), "--compile-timeout: expected a finite number > 0"),
        (("--bench-timeout", "0"), "--bench-timeout: expected a finite number > 0"),
        (("--bench-timeout", "nan"), "--bench-timeout: expected a finite number > 0"),
        (("--warmup", "-1"), "--warmup: expected an integer >= 0"),
        (("--max-configs", "0"), "--max-configs: expected an integer >= 1"),
        (("--flush-every", "-2"), "--flush-every: expected a finite number >= 0"),
        (("--recycle-rss-gb", "inf"), "--recycle-rss-gb: expected a finite number >= 0"),
        (("--seed", "-3"), "--seed: expected an integer >= 0"),
    ],
)
def test_bad_numbers_and_lists_are_refused_as_they_are_parsed(tmp_path, capsys, args, expected):
    """The found defects: --compile-timeout -1 committed every config as compile_timeout and
    --bench-timeout 0 as skipped, which a rerun then skipped as measured; --families '' planned
    every family; --device gpu9 said that CUDA is not available."""
    with pytest.raises(SystemExit) as stop:
        harvest_main(["--out", str(tmp_path / "out"), *args])
    assert stop.value.code == 2
    assert expected in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "out").exists()


def test_repeated_list_options_add_up():
    """--families a --families b planned b alone (argparse's last value won, silently); list
    options now add up when repeated, as python -m corpus.suite's --suite always did."""
    from corpus.harvest.__main__ import parse

    config = parse(["--families", "softmax", "--families", "add_broadcast,argmax", "--dtypes", "float32",
                    "--dtypes", "float16", "--suite", "corpus.suite.kernels", "--suite", "mypkg.kernels"])  # fmt: skip
    assert config.families == ("softmax", "add_broadcast", "argmax")
    assert config.dtypes == ("float32", "float16")
    assert config.suite == ("corpus.suite.kernels", "mypkg.kernels")
    plain = parse([])
    assert (plain.families, plain.dtypes, plain.suite) == ((), (), ("corpus.suite.kernels",))


def test_the_library_holds_timeouts_to_the_same_rules(tmp_path):
    for field, value in (("compile_timeout_s", -1.0), ("bench_timeout_s", 0.0)):
        with pytest.raises(HarvestError, match="must be a finite number above 0"):
            _harvest(str(tmp_path / "out"), **{field: value})
    assert not (tmp_path / "out").exists()


# -- --out: a dataset, or new, or empty ----------------------------------------------------------


def test_out_that_is_a_project_directory_is_refused(tmp_path, capsys):
    """The found defect: --out . (or --out '' or a project directory) wrote the dataset there
    and replaced the project's README.md with the dataset card."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("# My project\n")
    (project / "main.py").write_text("print('hi')\n")
    args = ["--families", FAMILY, "--max-configs", "1", "--dtypes", "float32", "--device", "cpu"]
    assert harvest_main([*args, "--out", str(project)]) == 2
    printed = " ".join(capsys.readouterr().out.split())
    assert "a non-empty directory that holds no dataset (README.md, main.py)" in printed
    assert "--force-out" in printed
    assert sorted(p.name for p in project.iterdir()) == ["README.md", "main.py"]
    with pytest.raises(OutRefused, match="README.md was not written by kernel-corpus"):
        probe_out(str(_dataset_with_readme(tmp_path / "ds")))
    probe_out(str(project), force=True)  # told to: accepted
    probe_out(str(tmp_path / "ds"), force=True)
    probe_out(str(tmp_path / "new"))  # new, or empty, or a dataset: accepted
    assert (project / "README.md").read_text() == "# My project\n"


def test_a_refusal_after_the_probe_of_out_leaves_it_as_found(tmp_path):
    """The probe of --out makes every table directory; a command refused after it (a Ray
    harvest's lanes refuse after it, so a cluster starts only for a writable --out) removes
    what it made, and only that: a new --out and its new parents go, an empty directory stays
    empty, a dataset keeps what it held; what another command wrote meanwhile stays, and once
    the work began, every table directory does."""

    def refused(out: Path, meanwhile=lambda: None, work: bool = False) -> None:
        with pytest.raises(HarvestError), out_as_found_unless_work(str(out)) as work_begins:
            probe_out(str(out))
            assert sorted(p.name for p in out.iterdir()) == sorted(TABLES)
            meanwhile()
            if work:
                work_begins()
            raise HarvestError("refused")

    refused(tmp_path / "new" / "out")
    assert not (tmp_path / "new").exists()
    (tmp_path / "empty").mkdir()
    refused(tmp_path / "empty")
    assert list((tmp_path / "empty").iterdir()) == []
    dataset = tmp_path / "ds"  # a dataset with one table directory: the probe makes the others
    (dataset / "runs").mkdir(parents=True)
    (dataset / "runs" / "part-0.parquet").write_bytes(b"rows")
    before = sorted(dataset.rglob("*"))
    refused(dataset)
    assert sorted(dataset.rglob("*")) == before
    refused(tmp_path / "shared", lambda: (tmp_path / "shared" / "runs" / "part-0.parquet").write_bytes(b"rows"))
    assert sorted(p.name for p in (tmp_path / "shared").rglob("*")) == ["part-0.parquet", "runs"]
    refused(tmp_path / "failed", work=True)
    assert sorted(p.name for p in (tmp_path / "failed").iterdir()) == sorted(TABLES)


def _dataset_with_readme(root: Path) -> Path:
    """A dataset whose root holds a README.md its owner wrote."""
    (root / "runs").mkdir(parents=True)
    (root / "README.md").write_text("notes of mine\n")
    return root


def test_a_malformed_card_json_makes_the_harvest_warn_and_go_on(tmp_path):
    """The found defect: {"commands": 5} in card.json was a TypeError traceback (rc 1) at the
    very end of a harvest that had committed; the card must cost no data."""
    root = tmp_path / "ds"
    writer = DatasetWriter(str(root))
    write_run(writer, 0)
    twin = root / CARD_JSON
    twin.write_text(json.dumps({"card_format": 1, "commands": 5}))
    out = io.StringIO()
    refresh_card(_config(str(root), command="python -m corpus.harvest"), Console(file=out, width=300))
    printed = " ".join(out.getvalue().split())
    assert "warning: dataset card not written" in printed
    assert "field 'commands' must be a list of strings, got 5" in printed
    assert json.loads(twin.read_text()) == {"card_format": 1, "commands": 5}  # not replaced


# -- locks name no host; overlapping plans; an interrupted last step ---------------------------


def test_the_harvest_lock_names_no_host(tmp_path, one_run_shard):
    out = tmp_path / "ds"
    planned = _harvest(str(out), shard=one_run_shard, dry_run=True).planned
    with harvest_lock(str(out), planned, allow_repeat=False):
        lock_file = next((out / ".locks").glob("harvest-*.lock"))
        assert host_name() not in lock_file.read_text() and "anon-" in lock_file.read_text()
        with pytest.raises(HarvestInputError) as refused, harvest_lock(str(out), planned, allow_repeat=False):
            pass
    message = str(refused.value)
    assert "harvest (pid " in message and "anon-" in message and host_name() not in message


def test_overlapping_harvests_never_measure_a_run_twice(tmp_path, monkeypatch, one_run_shard):
    """The found defect: a harvest started while another one measured the same runs measured
    them again at the same time (104 rows instead of 80). Here harvest A holds the run's claim
    (taken by the test, as A's lane would) when B reaches the run; B waits, A measures and
    commits, then B finds the run measured and measures nothing."""
    out = tmp_path / "ds"
    run = _harvest(str(out), shard=one_run_shard, dry_run=True).planned[0]
    waiting = threading.Event()
    acquire = FileLock.acquire

    def signalling_acquire(lock, *, wait, on_wait=None):
        if wait and "/.locks/runs/" in lock.path:  # a run's claim, waited for
            waiting.set()
        return acquire(lock, wait=wait, on_wait=on_wait)

    monkeypatch.setattr(FileLock, "acquire", signalling_acquire)
    claims_a = RunClaims(str(out), known=())
    assert claims_a.claim(run, {}, own_harvest="a", before_waiting=lambda: None) is run
    errors: list[BaseException] = []
    outcomes = []

    def harvest_b() -> None:
        try:
            outcomes.append(_harvest(str(out), shard=one_run_shard))
        except BaseException as exc:
            errors.append(exc)

    b = threading.Thread(target=harvest_b, daemon=True)
    b.start()
    while b.is_alive() and not waiting.is_set():  # B reaches the run: it waits, or measures it
        b.join(0.05)
    assert waiting.is_set(), "harvest B did not wait for the run's claim"
    # A, which planned the run before anything was committed, measures and commits it while it
    # holds the claim (no resume: its plan stands; no plan lock, no claims of its own)
    _harvest(str(out), shard=one_run_shard, allow_repeat=True, resume=False)
    claims_a.release([run.run_id])
    b.join(600)
    assert not b.is_alive() and errors == []
    measured = read_table(str(out), "measurements", columns=["run_id", "harvest_id", "config_id"])
    assert measured.num_rows == len(run.configs)  # once, by A
    assert len(set(measured.column("harvest_id").to_pylist())) == 1
    assert check_dataset(str(out)).ok
    totals = outcomes[0].totals  # B's summary says the run was done, but not by B
    assert totals is not None and (totals.runs_done, totals.runs_elsewhere) == (0, 1)


def test_a_rerun_completes_an_interrupted_compaction_and_the_card(tmp_path, monkeypatch):
    """The found defect: killed during its final compaction, the rerun printed "0 runs to do"
    and left the files uncompacted and no card."""
    out = tmp_path / "ds"
    die_in_final_compaction(out, monkeypatch, lambda: _harvest(str(out)))  # both runs of the plan
    assert_rerun_finished(out, _config(str(out)))
