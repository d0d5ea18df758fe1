from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from schemas import DatasetWriter
from schemas.identity import config_id


def sample_rows(run_index: int, n_configs: int = 3, arch: str = "sm_90", harvest_id: str = "h0") -> dict[str, list[dict]]:
    """A small but complete run: kernel, IR graph, measurements and its runs row."""
    run_id = f"run{run_index:013d}"
    ir = f"ir{run_index:014d}"
    measurements = [
        {
            "run_id": run_id,
            "config_id": config_id({"BLOCK": 2**c}, 4, 2),
            "harvest_id": harvest_id,
            "arch": arch,
            "status": "ok" if c else "compile_error",
            "median_ms": 1.0 + c,
            "ttir_id": ir if c else None,
            "ttgir_id": None,
        }
        for c in range(n_configs)
    ]
    return {
        "kernels": [{"kernel_id": "k1", "family": "add", "entry_name": "add_kernel", "source": "def add(): ..."}],
        "ir_graphs": [{"ir_id": ir, "level": "ttir", "num_nodes": 2}],
        "ir_nodes": [{"ir_id": ir, "level": "ttir", "node_id": i, "node_kind": "op"} for i in range(2)],
        "ir_edges": [{"ir_id": ir, "level": "ttir", "src": 0, "dst": 1, "kind": "data", "position": 0}],
        "measurements": measurements,
        "runs": [
            {
                "run_id": run_id,
                "harvest_id": harvest_id,
                "kernel_id": "k1",
                "family": "add",
                "device_kind": "cuda",
                "arch": arch,
                "device_name": "test device",
                "n_configs": n_configs,
            }
        ],
    }


def write_run(writer: DatasetWriter, run_index: int, **kwargs) -> None:
    write_rows(writer, sample_rows(run_index, **kwargs))


def write_rows(writer: DatasetWriter, rows: dict[str, list[dict]]) -> None:
    """Every table of ``rows`` (as :func:`sample_rows` makes them), the ``runs`` row last."""
    for table in ("kernels", "ir_graphs", "ir_nodes", "ir_edges", "measurements"):
        writer.write(table, rows[table])
    writer.commit_run(rows["runs"])


def budget_then_rerun() -> tuple[dict[str, list[dict]], dict[str, list[dict]]]:
    """The rows of a --budget harvest of run 7 (config 0 measured, the other two ``skipped``)
    and of a later harvest that measures the two it skipped, finished an hour after (for
    :func:`write_rows`, in that order)."""
    budgeted = sample_rows(7)
    for row in budgeted["measurements"][1:]:  # the budget measured config 0 (a compile error) only
        row.update(status="skipped", median_ms=None, error="not benchmarked: --budget 1")
    finished = datetime(2026, 1, 1, tzinfo=timezone.utc)
    budgeted["runs"][0]["finished_at"] = finished
    rerun = sample_rows(7, n_configs=3, harvest_id="h1")  # the later harvest measures the skipped two
    rerun["measurements"] = rerun["measurements"][1:]
    rerun["runs"][0] |= {"n_configs": 2, "finished_at": finished + timedelta(hours=1)}
    return budgeted, rerun


@pytest.fixture
def dataset(tmp_path) -> str:
    root = str(tmp_path / "ds")
    writer = DatasetWriter(root)
    for index in range(3):
        write_run(writer, index, arch="sm_90" if index < 2 else "sm_80")
    return root
