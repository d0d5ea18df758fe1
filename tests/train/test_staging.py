"""``python -m train`` builds ``--out`` beside it and swaps it in whole (train.staging): an
interrupted, failed or killed run never leaves an ``--out`` that mixes two runs' files."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch

from tests.train.synthetic import write_dataset
from train.cli import main
from train.layout import SPLITS_FILE, seed_checkpoints
from train.staging import PARTIAL, REPLACED, real_out, recover_stale, sibling, signals_deferred


@pytest.fixture()
def data(tmp_path: Path) -> str:
    return write_dataset(str(tmp_path / "data"), n_families=4).root


def _argv(data: str, out: Path, tmp_path: Path, *extra: str) -> list[str]:
    return ["--data", data, "--out", str(out), "--epochs", "2", "--threads", "1",
            "--cache-dir", str(tmp_path / "cache"), *extra]  # fmt: skip


def _files(out: Path) -> dict[str, bytes]:
    """Every file under ``out`` by relative path, with its bytes."""
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def _leftovers(out: Path) -> list[str]:
    """Hidden directories a run into ``out`` builds in or moves the old output to."""
    return sorted(p.name for p in out.parent.glob(f".{out.name}.*"))


def _main_after_ctrl_c(argv: list[str]) -> int:
    """``main(argv)``'s exit code; a Ctrl-C escaping it (a traceback) fails the test, not the
    whole pytest session."""
    try:
        return main(argv)
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C escaped python -m train's main as a traceback")


def _dead_pid() -> int:
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def _saved_models(root: Path) -> dict[Path, int]:
    """Every checkpoint.json under ``root`` (hidden directories included) with its mtime."""
    return {p: p.stat().st_mtime_ns for p in root.rglob("checkpoint.json")}


@pytest.fixture()
def fail_once_a_model_is_saved(tmp_path: Path) -> Iterator[Callable[[BaseException], None]]:
    """Arm a fault: the first forward pass after the run saved a new evaluation model
    (wherever it saves them) raises the given exception, a Ctrl-C or a crash in mid-run."""
    handles = []

    def arm(error: BaseException) -> None:
        earlier = _saved_models(tmp_path)

        def hook(module: torch.nn.Module, args: object, output: object) -> None:
            if _saved_models(tmp_path).items() - earlier.items():
                raise error

        handles.append(torch.nn.modules.module.register_module_forward_hook(hook))

    yield arm
    for handle in handles:
        handle.remove()


@pytest.mark.parametrize("error", [KeyboardInterrupt(), RuntimeError("disk on fire")])
def test_an_interrupted_or_failed_rerun_leaves_the_earlier_output_whole(
    data, tmp_path, capsys, fail_once_a_model_is_saved, error
):
    out = tmp_path / "out"
    assert main(_argv(data, out, tmp_path, "--models", "mlp,default", "--seeds", "2")) == 0
    earlier = _files(out)
    capsys.readouterr()
    fail_once_a_model_is_saved(error)
    rerun = _argv(data, out, tmp_path, "--models", "mlp", "--seeds", "2", "--split", "random")
    if isinstance(error, KeyboardInterrupt):
        assert _main_after_ctrl_c(rerun) == 130
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1] == f"interrupted: --out {out} as it was before this run (nothing of this run)"
        assert not any("Traceback" in line for line in err)
    else:
        with pytest.raises(RuntimeError, match="disk on fire"):
            main(rerun)
    assert _files(out) == earlier  # metrics, report, splits and models all the first run's
    assert _leftovers(out) == []


def test_an_interrupted_first_run_writes_no_out(data, tmp_path, capsys, fail_once_a_model_is_saved):
    out = tmp_path / "out"
    fail_once_a_model_is_saved(KeyboardInterrupt())
    assert _main_after_ctrl_c(_argv(data, out, tmp_path, "--models", "mlp", "--seeds", "2")) == 130
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"interrupted: nothing; no --out {out} was written"
    )
    assert not out.exists() and _leftovers(out) == []


def test_a_rerun_replaces_the_output_whole_through_a_symlinked_out(data, tmp_path):
    target = tmp_path / "results"
    out = tmp_path / "out"
    out.symlink_to(target, target_is_directory=True)
    assert main(_argv(data, out, tmp_path, "--models", "mlp,default", "--seeds", "2")) == 0
    assert main(_argv(data, out, tmp_path, "--models", "default", "--seeds", "1")) == 0
    assert out.is_symlink() and (target / "metrics.json").is_file()
    assert not seed_checkpoints(out) and not (out / "checkpoint").exists()
    assert _leftovers(target) == [] and _leftovers(out) == []


def test_what_a_killed_run_left_is_cleaned_up_by_the_next(data, tmp_path):
    out = tmp_path / "out"
    assert main(_argv(data, out, tmp_path, "--models", "default", "--seeds", "1")) == 0
    earlier = _files(out)
    dead = _dead_pid()
    # killed between the two renames: the old output moved aside, the new one not in place
    out.rename(sibling(out, REPLACED, dead))
    (sibling(out, PARTIAL, dead) / "checkpoints").mkdir(parents=True)
    recover_stale(out)
    assert _files(out) == earlier and _leftovers(out) == []
    # killed after the swap, before the old output was removed; another killed in mid-run
    (sibling(out, REPLACED, dead) / "checkpoint").mkdir(parents=True)
    (sibling(out, PARTIAL, _dead_pid()) / "checkpoints").mkdir(parents=True)
    assert main(_argv(data, out, tmp_path, "--models", "default", "--seeds", "2")) == 0
    assert _leftovers(out) == []


def test_a_live_runs_partial_output_is_left_alone(tmp_path):
    out = tmp_path / "out"
    live = sibling(out, PARTIAL, 1)  # init never dies
    live.mkdir()
    recover_stale(out)
    assert live.is_dir()


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda out: (out / "notes.md").write_text("mine\n"), "holds notes.md, which"),
        (lambda out: (out / "checkpoint").mkdir(), "holds the working directory"),
    ],
    ids=["foreign-file", "working-directory"],
)
def test_an_out_the_swap_would_destroy_is_refused_before_work(
    data, tmp_path, capsys, monkeypatch, setup, message
):
    out = tmp_path / "out"
    out.mkdir()
    setup(out)
    if "working" in message:
        monkeypatch.chdir(out)
    before = _files(out)
    assert main(_argv(data, out, tmp_path, "--models", "default", "--seeds", "1")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--out {out}" in err[0] and message in err[0]
    assert _files(out) == before


def test_ctrl_c_while_swapping_waits_until_the_swap_is_done():
    reached_the_end = False
    with pytest.raises(KeyboardInterrupt), signals_deferred():
        signal.raise_signal(signal.SIGINT)
        reached_the_end = True
    assert reached_the_end
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def _signal_once_staging(out: Path, number: int) -> threading.Thread:
    """A thread sending ``number`` to this process once the run builds its hidden output."""
    partial = sibling(real_out(out), PARTIAL)

    def send() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (partial / SPLITS_FILE).is_file():
            time.sleep(0.01)
        os.kill(os.getpid(), number)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(("number", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_or_sighup_stops_the_run_as_ctrl_c_does(data, tmp_path, capsys, hangup_as_in_a_terminal, number, code):
    """A scheduler's SIGTERM or a closed terminal's SIGHUP used to kill the run without a word,
    leaving its hidden staging directory: now one line naming the signal, 128 + its number,
    no --out, nothing left beside it, and the handlers as they were."""
    out = tmp_path / "out"
    before = signal.getsignal(number)
    sender = _signal_once_staging(out, number)
    argv = _argv(data, out, tmp_path, "--models", "mlp", "--seeds", "3", "--epochs", "30", "--patience", "30")
    assert _main_after_ctrl_c(argv) == code
    sender.join()
    name = signal.Signals(number).name
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"stopped by {name}: nothing; no --out {out} was written"
    assert not any("Traceback" in line for line in err)
    assert not out.exists() and _leftovers(out) == []
    assert signal.getsignal(number) is before

