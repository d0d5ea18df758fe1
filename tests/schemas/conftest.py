from __future__ import annotations

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


@pytest.fixture
def dataset(tmp_path) -> str:
    root = str(tmp_path / "ds")
    writer = DatasetWriter(root)
    for index in range(3):
        write_run(writer, index, arch="sm_90" if index < 2 else "sm_80")
    return root
