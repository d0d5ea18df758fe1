"""Calls that must not block on a FIFO left where a small file is expected (``.locks`` records
travel with a copied dataset)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest


def raised_beside_fifo(call: Callable[[], object], fifo: Path, timeout_s: float = 10.0) -> BaseException | None:
    """What ``call`` raised (None: it returned), run in a thread; a call still blocked after
    ``timeout_s`` (on opening ``fifo``) is unblocked and the test fails."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as exc:  # handed to the test's thread
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=timeout_s)
    if thread.is_alive():  # open a writer end once, so the reader's open returns
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail(f"the call hung on the FIFO {fifo}")
    return outcome[0]
