from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from corpus.harvest.workers import (
    START_METHOD,
    WorkerCrashed,
    WorkerError,
    WorkerProcess,
    WorkerTimeout,
)

REPO = Path(__file__).resolve().parents[3]


def echo_factory(init):
    import os
    import time

    def handle(request):
        if request == "env":
            return os.environ.get("PROBE")
        if request == "hang":
            time.sleep(3600)
        if request == "die":
            os._exit(3)
        if request == "raise":
            raise RuntimeError("boom")
        if request == "nap":
            time.sleep(1.0)
        return (init, request)

    return handle


def test_worker_serves_applies_environment_and_survives_errors():
    worker = WorkerProcess("t", f"{__name__}:echo_factory", "init", {"PROBE": "yes"})
    try:
        assert worker.call("x", timeout_s=60) == ("init", "x")
        assert worker.call("env", timeout_s=10) == "yes"
        with pytest.raises(WorkerError, match="boom"):
            worker.call("raise", timeout_s=10)
        assert worker.call("y", timeout_s=10) == ("init", "y")
    finally:
        worker.close()


def test_hung_request_kills_and_respawns_the_worker():
    worker = WorkerProcess("t", f"{__name__}:echo_factory", 1, {})
    try:
        worker.start()
        with pytest.raises(WorkerTimeout):
            worker.call("hang", timeout_s=1)
        assert not worker.alive
        assert worker.call("again", timeout_s=60) == (1, "again")
        with pytest.raises(WorkerCrashed, match="exit code 3"):
            worker.call("die", timeout_s=10)
        assert worker.call("after", timeout_s=60) == (1, "after")
    finally:
        worker.close()


def test_a_worker_ignores_ctrl_c_and_termination_signals_mid_request():
    """Ctrl-C and a scheduler's SIGTERM reach the whole process group; the worker finishes its
    request (the harvest stops workers itself) instead of answering with an interrupt."""
    worker = WorkerProcess("t", f"{__name__}:echo_factory", 4, {})
    try:
        worker.start()
        pid = worker.pid
        assert pid is not None
        timers = [threading.Timer(0.3, os.kill, (pid, number)) for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)]
        for timer in timers:
            timer.start()
        assert worker.call("nap", timeout_s=30) == (4, "nap")
        for timer in timers:
            timer.join()
        assert worker.pid == pid and worker.restarts == 0
    finally:
        worker.close()


def test_a_worker_killed_by_another_thread_mid_request_reports_a_crash():
    """A stopping harvest kills workers from its main thread while lane threads wait on them;
    both then kill the same worker: the waiting call ends in WorkerCrashed, never an OSError
    from a pipe closed twice."""
    worker = WorkerProcess("t", f"{__name__}:echo_factory", 5, {})
    outcome: list[BaseException | object] = []

    def wait_on_the_worker() -> None:
        try:
            outcome.append(worker.call("hang", timeout_s=60))
        except BaseException as exc:
            outcome.append(exc)

    try:
        worker.start()
        waiter = threading.Thread(target=wait_on_the_worker)
        waiter.start()
        time.sleep(0.5)
        worker.kill()
        waiter.join(timeout=30)
        assert not waiter.is_alive()
        assert len(outcome) == 1 and isinstance(outcome[0], WorkerCrashed), outcome
        assert worker.pid is None and worker.restarts == 1
        assert worker.call("again", timeout_s=60) == (5, "again")
    finally:
        worker.close()


def nice_factory(init):
    import os
    import time

    def handle(request):
        if request == "busy":
            time.sleep(3600)
        return (os.getpid(), os.nice(0), os.getppid())

    return handle


def test_a_worker_killed_while_idle_is_respawned_by_the_next_call():
    worker = WorkerProcess("t", f"{__name__}:echo_factory", 2, {})
    try:
        worker.start()
        first = worker.pid
        assert first is not None
        os.kill(first, signal.SIGKILL)  # what the OOM killer does to an idle worker
        deadline = time.monotonic() + 10
        while worker.alive and time.monotonic() < deadline:
            time.sleep(0.05)
        assert worker.call("next", timeout_s=60) == (2, "next")
        assert worker.pid not in (None, first) and worker.restarts == 1
    finally:
        worker.close()


def test_niceness_is_added_in_the_child_only():
    worker = WorkerProcess("t", f"{__name__}:nice_factory", None, {}, niceness=5)
    try:
        pid, niceness, _ = worker.call("x", timeout_s=60)
        assert niceness == os.nice(0) + 5 and pid != os.getpid()
    finally:
        worker.close()


def preload_factory(init):
    import os
    import sys
    import tempfile

    preloaded = "torch" in sys.modules and "triton" not in sys.modules  # this module imports neither

    def handle(request):
        import triton.language as tl

        from corpus.harvest import selftest_kernel

        kinds = type(selftest_kernel.copy_kernel).__name__, type(tl.sum).__name__  # tl.sum: Triton's own @jit
        return preloaded, os.getppid(), kinds, tempfile.gettempdir()

    return handle


@pytest.mark.skipif(START_METHOD != "forkserver", reason="the fork server is Linux-only")
def test_workers_fork_from_one_preloaded_server_and_import_triton_under_their_own_environment(tmp_path):
    """torch is paid once in the server; Triton, imported by each worker after its environment
    applied, is compiler or interpreter as that worker asks (Triton's own jit helpers too), and
    the worker's TMPDIR is its own."""
    compiled = WorkerProcess("c", f"{__name__}:preload_factory", None, {"TRITON_INTERPRET": "0", "TMPDIR": str(tmp_path)})
    interpreted = WorkerProcess("i", f"{__name__}:preload_factory", None, {"TRITON_INTERPRET": "1"})
    try:
        preloaded, server, kinds, scratch = compiled.call("x", timeout_s=120)
        assert preloaded and server != os.getpid()
        assert kinds == ("JITFunction", "JITFunction") and scratch == str(tmp_path)
        preloaded, same_server, kinds, _ = interpreted.call("x", timeout_s=120)
        assert preloaded and same_server == server
        assert kinds == ("InterpretedFunction", "InterpretedFunction")
    finally:
        compiled.close()
        interpreted.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
def test_workers_die_with_their_parent(tmp_path):
    """A parent SIGKILLed while its worker is busy leaves no worker behind (no close() ran,
    and the busy worker would not notice its pipe closing)."""
    script = tmp_path / "parent.py"
    script.write_text(
        "import sys, time\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        "from corpus.harvest.workers import WorkerProcess\n"
        "if __name__ == '__main__':\n"
        "    worker = WorkerProcess('orphan-test', 'tests.corpus.harvest.test_workers:nice_factory', None, {})\n"
        "    print(worker.call('x', timeout_s=60)[0], flush=True)\n"
        "    worker.call('busy', timeout_s=3600)\n"
    )
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        child = int(parent.stdout.readline())
        assert process_exists(child)
        time.sleep(0.5)  # the worker is inside the busy request now
    finally:
        parent.kill()
        parent.wait()
    assert wait_gone(child, timeout_s=10), f"worker {child} outlived its SIGKILLed parent"


def test_a_worker_whose_harvest_is_gone_exits_quietly():
    """The harvest was SIGKILLed while a compile worker worked: the worker's answer met a
    closed pipe, and it died of two BrokenPipeError tracebacks printed into the job's log
    (exit code 1). Now it has nobody to answer and exits cleanly."""
    worker = WorkerProcess("t", f"{__name__}:echo_factory", 1, {})
    worker.start()
    process, connection = worker._take()
    assert process is not None and connection is not None
    connection.send("nap")  # the worker answers in a second
    connection.close()  # as the pipe of a killed harvest
    process.join(timeout=30)
    assert process.exitcode == 0


def process_exists(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting to be reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while process_exists(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
