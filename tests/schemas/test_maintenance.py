"""Commands that rewrite or delete files take turns (one maintenance lock), name no host, and
fail in one line on storage that refuses them."""

from __future__ import annotations

import io
import os
import shutil
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from schemas import DatasetWriter, cli, read_table, scrub
from schemas.__main__ import main
from schemas.check import check_dataset
from schemas.compact import compact
from schemas.locking import MAINTENANCE, LockHeldError, dataset_lock, maintenance_lock
from schemas.machine import host_name
from schemas.storage import resolve
from schemas.tables import TABLES

from ..faultfs import FaultPlan, faulty_storage, faulty_url, remount_read_only, tmpfs
from .conftest import sample_rows

HOST = "build-host-7"


def _dataset_naming_a_host(root: Path, runs: int = 3) -> str:
    """Runs whose ``hostname`` is a host name (so ``scrub`` rewrites the runs files), written
    one file per run (so ``compact`` merges them)."""
    writer = DatasetWriter(str(root))
    for index in range(runs):
        rows = sample_rows(index)
        rows["runs"][0]["hostname"] = HOST
        for table in ("kernels", "ir_graphs", "ir_nodes", "ir_edges", "measurements"):
            writer.write(table, rows[table])
        writer.commit_run(rows["runs"])
    return str(root)


def _keys(url: str) -> dict[str, Counter]:
    """Every table's keys as a multiset (read_table refuses repeated runs/measurements keys)."""
    return {
        name: Counter(map(str, read_table(url, name, committed_only=False).select(list(spec.key)).to_pylist()))
        for name, spec in TABLES.items()
    }


def _in_thread(work: Callable[[], object], errors: list[BaseException]) -> threading.Thread:
    def run() -> None:
        try:
            work()
        except BaseException as exc:  # surfaced by the test
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_scrub_and_compact_started_together_take_turns(tmp_path: Path, monkeypatch) -> None:
    """The found defect: compact ran while scrub was replacing files; the merged file and
    scrub's rewrite both stayed live (a whole table doubled). Scrub is paused after it listed
    the files, just before it replaces the first one; compact starts then."""
    root = _dataset_naming_a_host(tmp_path / "ds")
    before = _keys(root)
    paused, resume, compact_waits = threading.Event(), threading.Event(), threading.Event()
    holders: list[str] = []
    replace = scrub.replace_files

    def pausing_replace(*args, **kwargs):
        if not paused.is_set():
            paused.set()
            assert resume.wait(120)
        return replace(*args, **kwargs)

    monkeypatch.setattr(scrub, "replace_files", pausing_replace)
    errors: list[BaseException] = []
    scrubbing = _in_thread(lambda: scrub.scrub_dataset(root), errors)
    assert paused.wait(120)

    def waits(holder: str) -> None:
        holders.append(holder)
        compact_waits.set()

    compacting = _in_thread(lambda: compact(root, on_wait=waits), errors)
    while compacting.is_alive() and not compact_waits.is_set():  # waits for the lock, or races
        compacting.join(0.01)
    resume.set()
    scrubbing.join(120)
    compacting.join(120)

    assert errors == []
    assert compact_waits.is_set(), "compact did not wait for scrub"
    assert holders[0].startswith("scrub (pid ") and HOST not in holders[0]
    assert _keys(root) == before  # nothing doubled or lost
    assert set(read_table(root, "runs").column("hostname").to_pylist()) != {HOST}  # scrubbed
    assert len(list(Path(root, "runs", "arch=sm_90").glob("part-*.parquet"))) == 1  # compacted
    report = check_dataset(root)
    assert report.ok and report.warnings == [], (report.problems, report.warnings)


def test_check_fix_waits_for_the_maintenance_lock(dataset: str) -> None:
    loc = resolve(dataset)
    waiting, done = threading.Event(), threading.Event()
    errors: list[BaseException] = []
    with maintenance_lock(loc, "compact"):
        with pytest.raises(LockHeldError), dataset_lock(loc, MAINTENANCE, wait=False):
            pass  # the same lock, taken without waiting, is refused

        def fix() -> None:
            check_dataset(dataset, fix=True, on_wait=lambda holder: waiting.set())
            done.set()

        thread = _in_thread(fix, errors)
        assert waiting.wait(120)  # it found the lock held and waits
        assert not done.is_set()
    thread.join(120)
    assert done.is_set() and errors == []


def test_lock_files_and_refusals_name_no_host(dataset: str) -> None:
    loc = resolve(dataset)
    with maintenance_lock(loc, "compact") as path:
        text = Path(path).read_text()
        assert text.startswith("compact (pid ") and "anon-" in text
        assert host_name() not in text
        with pytest.raises(LockHeldError) as refused, dataset_lock(loc, MAINTENANCE, wait=False):
            pass
        assert host_name() not in str(refused.value) and "anon-" in str(refused.value)
    assert Path(path).read_text() == ""  # released: the line says nothing any more


# -- storage that refuses: one line, exit 2, nothing changed --------------------------------


@pytest.mark.parametrize(
    "command",
    [["compact"], ["check", "--fix"], ["card"], ["scrub"]],
    ids=["compact", "check-fix", "card", "scrub"],
)
def test_maintenance_on_read_only_storage_is_one_line_exit_2(
    tmp_path: Path, command: list[str]
) -> None:
    root = _dataset_naming_a_host(tmp_path / "ds", runs=2)
    stale = Path(root, "runs", "arch=sm_90", ".tmp-0-part-killed.parquet")
    stale.write_bytes(b"half")
    before = sorted(p.relative_to(root) for p in Path(root).rglob("*"))
    out = io.StringIO()
    runner = {
        "compact": lambda c: cli.run_compact(faulty_url(root), 2, console=c, temporary_age_s=0),
        "check": lambda c: cli.run_check(faulty_url(root), console=c, fix=True, temporary_age_s=0),
        "card": lambda c: cli.run_card(faulty_url(root), console=c),
        "scrub": lambda c: cli.run_scrub(faulty_url(root), console=c),
    }[command[0]]
    with faulty_storage(FaultPlan(read_only=True)) as plan:
        code = runner(Console(file=out, width=300))
    printed = out.getvalue()
    assert plan.failed  # the storage did refuse something
    assert code == 2, printed
    errors = [line for line in printed.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Read-only file system" in errors[0], printed
    assert "Traceback" not in printed
    assert sorted(p.relative_to(root) for p in Path(root).rglob("*")) == before


def test_local_read_only_dataset_and_doc_out_are_one_line_exit_2(tmp_path: Path, capsys) -> None:
    """A real read-only mount: the maintenance lock cannot be made there, and doc cannot write."""
    with tmpfs(tmp_path / "ro") as mount:
        root = _dataset_naming_a_host(mount / "ds", runs=2)
        remount_read_only(mount)
        before = sorted(p.relative_to(root) for p in Path(root).rglob("*"))
        for args in (
            ["compact", root],
            ["check", root, "--fix"],
            ["scrub", root],
            ["card", root],
            ["doc", "--out", str(mount / "docs" / "SCHEMA.md")],
        ):
            assert main(args) == 2, args
            printed = capsys.readouterr().out
            assert printed.startswith("error: ") and len(printed.strip().splitlines()) == 1, printed
            assert "Read-only file system" in printed, printed
        assert main(["check", root]) == 0  # reading needs no lock
        assert sorted(p.relative_to(root) for p in Path(root).rglob("*")) == before


@pytest.mark.parametrize(
    "args",
    [
        ["compact", "DS", "--min-files", "-1"],
        ["compact", "DS", "--min-files", "0"],
        ["compact", "DS", "--tmp-age", "-5"],
        ["check", "DS", "--tmp-age", "nan"],
        ["check", ""],
        ["card", " "],
        ["doc", "--out", ""],
    ],
)
def test_bad_arguments_are_refused_at_parse_time(dataset: str, capsys, args: list[str]) -> None:
    args = [dataset if a == "DS" else a for a in args]
    with pytest.raises(SystemExit) as stop:
        main(args)
    assert stop.value.code == 2
    assert "expected" in capsys.readouterr().err


def test_scrub_empties_lock_lines_of_older_versions_that_name_a_host(dataset: str) -> None:
    """Older lock files said ``pid N on HOST``, survived a SIGKILL and travelled with a copied
    dataset."""
    old = Path(dataset, ".locks", "harvest-0123.lock")
    old.parent.mkdir()
    old.write_text(f"pid 4242 on {HOST}")
    assert any("lock file(s) name a host" in w for w in check_dataset(dataset).warnings)
    results = scrub.scrub_dataset(dataset)
    assert old.read_text() == "" and any(r.table == ".locks" and r.files_rewritten == 1 for r in results)
    assert not any("lock file" in w for w in check_dataset(dataset).warnings)


@pytest.mark.parametrize("command", [["compact"], ["scrub"], ["check", "--fix"]])
def test_a_linked_or_special_lock_file_is_refused_and_its_target_untouched(
    dataset: str, tmp_path: Path, capsys, command: list[str]
) -> None:
    """The gap: lock files travel with a copied dataset, and the lock was opened with
    open(path, 'a+') and truncated: a downloaded dataset whose .locks/maintenance.lock links to
    ~/.bashrc had the next compact empty that file and write its holder line into it; a FIFO
    there hung the command. Now each is refused in one line, the link's target untouched."""
    victim = tmp_path / "precious.txt"
    victim.write_text("the user's own data\n")
    locks = Path(dataset, ".locks")
    locks.mkdir(exist_ok=True)
    lock = locks / f"{MAINTENANCE}.lock"
    lock.unlink(missing_ok=True)
    lock.symlink_to(victim)
    assert main([*command, dataset]) == 2
    assert "a symbolic link, not a lock file" in _said(capsys)
    assert victim.read_text() == "the user's own data\n"
    lock.unlink()
    os.mkfifo(lock)
    assert main([*command, dataset]) == 2
    assert "not a regular file" in _said(capsys)
    lock.unlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(locks)
    locks.symlink_to(elsewhere)  # the whole directory: lock files would be made there
    assert main([*command, dataset]) == 2
    assert ".locks: a symbolic link" in _said(capsys)
    assert not list(elsewhere.iterdir())


def _said(capsys) -> str:
    """What the command printed, one line (its error line is on stdout or stderr)."""
    captured = capsys.readouterr()
    return " ".join((captured.out + captured.err).split())
