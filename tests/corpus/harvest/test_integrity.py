"""Integrity of the harvest's write path and its refusal of bad input.

Harvests here run in-process through :func:`corpus.harvest.app.run_harvest` with the real
compile and benchmark worker processes (only the parent writes), so a storage that fails
the N-th write (``tests.faultfs``) hits the real flush. One family, one run, two configs.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from rich.console import Console

from corpus.harvest.__main__ import main as harvest_main
from corpus.harvest.app import HarvestConfig, run_harvest
from corpus.harvest.checks import HarvestInputError, harvest_lock
from corpus.harvest.scratch import scratch_directory
from corpus.harvest.settings import read_settings
from schemas import DatasetError, read_table
from schemas.check import check_dataset

from ...faultfs import FaultPlan, faulty_storage, faulty_url

FAMILY = "add_broadcast"


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


@pytest.fixture(scope="module")
def one_run_shard() -> tuple[int, int]:
    """A shard of the tiny plan holding exactly one run (keeps every harvest here short)."""
    for index in range(4):
        planned = _harvest(
            "unused-by-dry-run", shard=(index, 4), dry_run=True, allow_empty=True
        ).planned
        if len(planned) == 1:
            return (index, 4)
    pytest.skip("no shard of the tiny plan holds exactly one run")


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
            HarvestInputError,
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


def _mount_tmpfs(path: Path, options: str) -> None:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root to mount a tmpfs")
    path.mkdir()
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
        capture_output=True,
        check=False,
    )
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.decode().strip()}")


def test_read_only_out_is_refused_before_work(tmp_path, capsys):
    mount = tmp_path / "ro"
    _mount_tmpfs(mount, "ro,size=1m")
    try:
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
    finally:
        subprocess.run(["umount", str(mount)], check=False)
    printed = " ".join(capsys.readouterr().out.split())
    assert (
        code == 2
        and "cannot write the dataset there" in printed
        and "Read-only file system" in printed
    )


def test_full_disk_is_a_one_line_error_and_committed_data_is_intact(tmp_path, one_run_shard):
    """A real full disk: a tmpfs too small for the second harvest's files."""
    mount = tmp_path / "small"
    _mount_tmpfs(mount, "size=400k")
    try:
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
    finally:
        subprocess.run(["umount", str(mount)], check=False)


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
        printed = " ".join(capsys.readouterr().out.split())
        assert (
            "another harvest of the same runs is writing into" in printed
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
