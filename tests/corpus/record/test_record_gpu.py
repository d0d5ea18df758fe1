"""GPU-only: the recorder on a GPU, where Triton's own bench times the configs (its median,
p20 and p80; no samples) and Triton's autotuning listener reports the tunings (3.9). The CPU
workload's kernels run here on CUDA tensors, in the pytest process (the compiler is selected in
it; only the interpreter needs a process of its own). Skipped without CUDA."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from schemas import read_table
from schemas.check import check_dataset
from tests.corpus.record.drive import fresh_workload

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]


def test_records_the_workload_on_the_gpu_with_tritons_quantiles(tmp_path: Path) -> None:
    import corpus.record

    out = str(tmp_path / "gpu")
    workload = fresh_workload()
    with corpus.record(out=out) as recorder:
        x, w = torch.randn(4, 30, device="cuda"), torch.randn(30, device="cuda")
        workload.row_scale(x, w)
        workload.gelu(torch.randn(100, device="cuda"))
    assert recorder.summary.runs == 2 and not recorder.summary.failures, recorder.summary
    checked = check_dataset(out)
    assert checked.ok, checked.problems
    major, minor = torch.cuda.get_device_capability()
    for run in read_table(out, "runs").to_pylist():
        assert (run["timer"], run["arch"], run["ir_target"]) == (
            "triton_do_bench", f"sm_{major}{minor}", f"sm_{major}{minor}",
        )  # fmt: skip
    ok = [m for m in read_table(out, "measurements").to_pylist() if m["status"] == "ok"]
    assert len(ok) >= 4  # row_scale's two configs, gelu's two left after its own pruning
    for m in ok:
        assert 0 < m["p20_ms"] <= m["median_ms"] <= m["p80_ms"] < 100, m  # ms, not s or us
        assert m["samples_ms"] is None and m["ttir_id"] and m["n_regs"]
