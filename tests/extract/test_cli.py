"""``python -m extract FILE`` and ``python -m extract compile ...``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

from extract.__main__ import main
from tests.extract.conftest import HANDWRITTEN

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_module_entry_prints_node_link_json(fixture_dir: Path) -> None:
    path = fixture_dir / "if_else.sm_80.ttgir"
    completed = subprocess.run(
        [sys.executable, "-m", "extract", str(path)], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    data = json.loads(completed.stdout)
    graph = nx.node_link_graph(data, edges="edges")
    assert isinstance(graph, nx.MultiDiGraph)
    assert graph.graph["entry_name"] == "if_else_kernel" and graph.graph["level"] == "ttgir"
    assert {kind for _, _, kind in graph.edges(data="kind")} == {"data", "region"}


def test_summary_format(fixture_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(fixture_dir / "nested_loops.sm_90.ttir"), "--format", "summary"]) == 0
    out = capsys.readouterr().out
    assert "entry_name           nested_loops_kernel" in out
    assert "num_loops            2" in out
    assert "scf.for" in out


def test_invalid_file_exits_nonzero_naming_file_and_line(capsys: pytest.CaptureFixture[str]) -> None:
    path = HANDWRITTEN / "invalid_type.ttir"
    assert main([str(path)]) == 1
    assert f"{path}:3:" in capsys.readouterr().err


def test_compile_writes_ir_graphs_and_stats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = REPO_ROOT / "tests" / "extract" / "kernels" / "reduction.py"
    code = main(
        [
            "compile",
            f"{kernel}:softmax_kernel",
            "--signature", "*fp32,*fp32,i32:16,i32",
            "--constexpr", "BLOCK=1024",
            "--target", "sm_80",
            "--num-warps", "8",
            "--num-stages", "2",
            "--out", str(tmp_path),
        ]
    )
    assert code == 0
    names = {p.name for p in tmp_path.iterdir()}
    stages = {f"softmax_kernel.{s}" for s in ("ttir", "ttgir", "llir", "ptx", "cubin")}
    assert stages <= names
    assert {"softmax_kernel.ttir.graph.json", "softmax_kernel.ttgir.graph.json", "softmax_kernel.stats.json"} <= names
    ttgir = (tmp_path / "softmax_kernel.ttgir").read_text()
    assert '"ttg.num-warps" = 8' in ttgir and 'ttg.target = "cuda:80"' in ttgir
    assert ttgir.count("tt.divisibility = 16") == 3  # two pointers and the ':16' row stride, not n_cols
    graph = nx.node_link_graph(json.loads((tmp_path / "softmax_kernel.ttgir.graph.json").read_text()), edges="edges")
    assert graph.graph["num_stages"] == 2 and graph.graph["num_reductions"] == 2
    stats = json.loads((tmp_path / "softmax_kernel.stats.json").read_text())
    assert stats["target"] == "cuda:80" and stats["num_warps"] == 8
    assert stats["static_stats"]["n_regs"] is None or stats["static_stats"]["n_regs"] > 0
    assert "wrote" in capsys.readouterr().out


def test_compile_reports_missing_parameters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = REPO_ROOT / "tests" / "extract" / "kernels" / "reduction.py"
    code = main(["compile", f"{kernel}:softmax_kernel", "--signature", "*fp32,*fp32", "--out", str(tmp_path)])
    assert code == 1
    assert "row_stride" in capsys.readouterr().err
