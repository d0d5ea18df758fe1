"""A termination signal stops a harvest the way Ctrl-C does (schemas.signals), in this
process: the handler, and a harvest stopped by a real SIGTERM."""

from __future__ import annotations

import io
import os
import re
import signal
import threading
import time
from pathlib import Path

import pytest
from rich.console import Console

from corpus.harvest.__main__ import kept
from corpus.harvest.__main__ import main as harvest_main
from schemas import read_table
from schemas.check import check_dataset
from schemas.signals import Terminated, stop_on_termination
from tests.corpus.harvest.conftest import harvest_in_process


def test_sigterm_raises_terminated_once_and_the_old_handler_comes_back():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated) as stopped, stop_on_termination():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1.0)  # the handler runs between bytecodes, well before this ends
    assert stopped.value.name == "SIGTERM" and stopped.value.exit_code == 128 + signal.SIGTERM
    assert isinstance(stopped.value, KeyboardInterrupt)  # takes Ctrl-C's path through the harvest
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_second_signal_while_stopping_is_ignored():
    with pytest.raises(Terminated), stop_on_termination():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1.0)
        except Terminated:
            os.kill(os.getpid(), signal.SIGHUP)  # committing now: must not be cut short
            time.sleep(0.2)
            raise


def test_sigterm_turned_into_a_plain_keyboard_interrupt_by_a_library_stays_sigterm():
    # ray.get / ray.wait catch the Terminated their wait was interrupted by and raise a new,
    # plain KeyboardInterrupt: a Ray harvest stopped by SIGTERM said "interrupted" and exited
    # 130, as after Ctrl-C
    with pytest.raises(KeyboardInterrupt) as stopped, stop_on_termination():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1.0)
        except KeyboardInterrupt:
            raise KeyboardInterrupt from None  # what Ray's check_signals does
    assert isinstance(stopped.value, Terminated)
    assert stopped.value.name == "SIGTERM" and stopped.value.exit_code == 128 + signal.SIGTERM


def test_ctrl_c_alone_stays_an_interrupt():
    with pytest.raises(KeyboardInterrupt) as stopped, stop_on_termination():
        raise KeyboardInterrupt
    assert not isinstance(stopped.value, Terminated)


def test_a_signal_ignored_before_stays_ignored():
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as nohup leaves it
    try:
        with stop_on_termination():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(0.2)
    finally:
        signal.signal(signal.SIGHUP, previous)


def test_a_harvest_stopped_by_sigterm_commits_its_finished_runs(tmp_path: Path):
    """SIGTERM, sent once the progress shows a finished run, with nothing written yet
    (``--flush-every`` far away): the finished runs are committed, and a rerun completes the
    rest without measuring anything twice."""
    out = tmp_path / "out"
    args = ["--families", "add_broadcast,softmax,row_reduce,cumsum", "--max-configs", "2", "--dtypes", "float32",
            "--workers", "1", "--flush-every", "1000", "--no-compact"]
    from corpus.harvest.__main__ import parse
    from corpus.harvest.app import run_harvest
    from corpus.harvest.settings import read_settings

    printed = io.StringIO()
    console = Console(file=printed, force_terminal=True, width=200)
    finished_at_kill: list[int] = []

    def terminate_after_a_finished_run() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            done = [int(n) for n in re.findall(r"runs\s.*?\s(\d+)/\d+", printed.getvalue())]
            if done and max(done) >= 1:
                finished_at_kill.append(max(done))
                os.kill(os.getpid(), signal.SIGTERM)
                return
            time.sleep(0.02)

    watcher = threading.Thread(target=terminate_after_a_finished_run, daemon=True)
    config = parse(["--out", str(out), *args])
    with pytest.raises(Terminated) as stopped, stop_on_termination():
        watcher.start()
        run_harvest(config, read_settings(), console)
        time.sleep(5.0)  # the harvest ended before the signal: let it land, failing below
    watcher.join()
    committed = read_table(str(out), "runs", columns=["run_id"]).num_rows
    planned = len(run_harvest(parse(["--out", str(out), *args, "--dry-run"]), read_settings(),
                              Console(file=io.StringIO())).planned)
    assert finished_at_kill and finished_at_kill[0] <= committed < planned, (finished_at_kill, committed, planned)
    # the line python -m corpus.harvest says on the way out counts them
    assert kept(stopped.value).startswith(f"the {committed} run(s) it finished are committed;")
    assert check_dataset(str(out)).ok

    harvest_in_process(out, *args)
    table = read_table(str(out), "measurements", columns=["run_id", "config_id"])
    keys = list(zip(table.column("run_id").to_pylist(), table.column("config_id").to_pylist()))
    assert len(keys) == len(set(keys)) == 2 * planned


def _harvest_terminated_after(monkeypatch: pytest.MonkeyPatch, step: str, out: Path) -> int:
    """Run a one-family harvest whose ``corpus.harvest.app.<step>`` sends this process SIGTERM
    once it has done its work; the harvest's exit status."""
    import corpus.harvest.app as app

    original = getattr(app, step)

    def then_terminate(*args: object, **kwargs: object) -> None:
        original(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5.0)  # the handler raises here, well before this ends

    monkeypatch.setattr(app, step, then_terminate)
    return harvest_main(["--out", str(out), "--families", "softmax", "--max-configs", "1", "--dtypes", "float32"])


def test_a_harvest_stopped_before_any_run_finished_says_none_was_committed(tmp_path, monkeypatch, capsys):
    """SIGTERM as the harvest starts (its start lines printed, nothing measured): the last line
    said "finished runs are committed" although no run had finished; it now says so."""
    assert _harvest_terminated_after(monkeypatch, "print_start", tmp_path / "out") == 128 + signal.SIGTERM
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == "stopped by SIGTERM: no run had finished, so none was committed; rerun the same command to harvest"


def test_a_harvest_stopped_in_its_last_step_counts_the_runs_it_committed(tmp_path, monkeypatch, capsys):
    """SIGTERM while the harvest refreshes the card, after every run was committed and merged:
    the last line said no run had finished (the count covered the measuring only)."""
    out = tmp_path / "out"
    assert _harvest_terminated_after(monkeypatch, "refresh_card", out) == 128 + signal.SIGTERM
    committed = read_table(str(out), "runs", columns=["run_id"]).num_rows
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert committed > 0
    assert last == f"stopped by SIGTERM: the {committed} run(s) it finished are committed; rerun the same command to resume"
