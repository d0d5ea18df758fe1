from __future__ import annotations

import pytest

from corpus.workers import WorkerCrashed, WorkerError, WorkerProcess, WorkerTimeout


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
