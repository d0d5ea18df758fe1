"""Drives the recorder through the test scenarios in a process of its own.

Triton's interpreter must be selected before Triton itself is imported (its standard library,
``tl.sum`` and friends, is ``@triton.jit`` code decorated at import time), so in-process
recording on the interpreter cannot run inside the pytest process, which imported Triton long
before. ``python -m tests.corpus.record.drive OUT_DIR [SCENARIO ...]`` (from the repository
root) runs the scenarios with TRITON_INTERPRET=1 and writes ``OUT_DIR/report.json``; the tests
assert on the datasets and the report.

Nothing here imports Triton at module level: the recorder's compile worker is a ``spawn``
process, which re-imports this main module first.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

WORKLOAD = Path(__file__).resolve().parent / "workload.py"


def fresh_workload() -> ModuleType:
    """A new import of the workload: its autotuners start with empty caches."""
    name = f"_record_workload_{uuid.uuid4().hex[:8]}"
    spec = importlib.util.spec_from_file_location(name, WORKLOAD)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def full(out: Path) -> dict[str, Any]:
    """Two kernels with IR; row_scale called twice (the second call is a cache hit)."""
    import corpus.record

    workload = fresh_workload()
    with corpus.record(out=str(out), rep=2) as recorder:
        workload.main(calls=2)
    summary = recorder.summary
    return {
        "runs": summary.runs,
        "in_memory_hits": summary.cache_hits_in_memory,
        "failures": summary.failures,
    }


def hooks(out: Path) -> dict[str, Any]:
    """A user's compilation listener is chained while recording and restored afterwards."""
    from triton import knobs
    from triton.runtime import Autotuner

    import corpus.record
    from schemas.check import check_dataset

    original_run = Autotuner.run

    def user_listener(**_: object) -> None:
        return None

    knobs.compilation.listener = user_listener
    missing = object()  # Triton 3.6 has no autotuning listener
    previous_autotune = getattr(knobs.autotuning, "listener", missing)
    workload = fresh_workload()
    with corpus.record(out=str(out), rep=1, compile_ir=False):
        during = {
            "run_wrapped": Autotuner.run is not original_run,
            "compile_chained": knobs.compilation.listener is not user_listener,
        }
        workload.main(calls=1)
    return {
        **during,
        "run_restored": Autotuner.run is original_run,
        "compile_restored": knobs.compilation.listener is user_listener,
        "autotune_restored": getattr(knobs.autotuning, "listener", missing) is previous_autotune,
        "check_problems": check_dataset(str(out)).problems,  # no IR graph written: still a dataset
    }


def interrupted(out: Path) -> dict[str, Any]:
    """Fault injection: Ctrl-C arrives while the second run is being committed."""
    from triton.runtime import Autotuner

    from corpus.record import Recorder, RecordOptions
    from schemas import DatasetWriter

    class InterruptSecondCommit(DatasetWriter):
        commits = 0

        def commit_run(self, rows: Any) -> list[str]:
            self.commits += 1
            if self.commits == 2:
                raise KeyboardInterrupt
            return super().commit_run(rows)

    original_run = Autotuner.run
    workload = fresh_workload()
    recorder = Recorder(RecordOptions(out=str(out), rep=1), writer=InterruptSecondCommit(str(out)))
    try:
        with recorder:
            workload.main(calls=1)
    except KeyboardInterrupt:
        return {"interrupted": True, "run_restored": Autotuner.run is original_run}
    return {"interrupted": False}


def twice(out: Path) -> dict[str, Any]:
    """Two recordings of the same workload through the autotuner wrapper (the path Triton
    versions without ``knobs.autotuning.listener`` take)."""
    import corpus.record

    for _ in range(2):
        workload = fresh_workload()
        with corpus.record(out=str(out), rep=1, compile_ir=False, use_listener=False):
            workload.main(calls=1)
    return {}


SCENARIOS: dict[str, Callable[[Path], dict[str, Any]]] = {
    "full": full,
    "hooks": hooks,
    "interrupted": interrupted,
    "twice": twice,
}


if __name__ == "__main__":
    os.environ["TRITON_INTERPRET"] = "1"  # before anything imports Triton
    root = Path(sys.argv[1])
    chosen = sys.argv[2:] or list(SCENARIOS)
    report = {name: SCENARIOS[name](root / name) for name in chosen}
    (root / "report.json").write_text(json.dumps(report, indent=2))
