"""Rows of extracted IR carry package-relative source locations, never this machine's paths."""

from __future__ import annotations

from pathlib import Path

import torch
import triton

from extract.compile import compile_call
from extract.graph import IrGraph
from extract.locations import package_relative, publishable_ir_text, publishable_message
from schemas.paths import location_paths
from tests.extract.kernels.pointwise import add_kernel

REPO = Path(__file__).resolve().parents[2]


def _compiled():
    tensor = torch.empty(1024, dtype=torch.float32, device="meta")
    args = {"x_ptr": tensor, "y_ptr": tensor, "out_ptr": tensor, "n_elements": 1024, "BLOCK": 128}
    return compile_call(add_kernel, args, target="sm_90")


def test_rows_hold_package_relative_locations_and_the_same_ir_id() -> None:
    result = _compiled()
    for level in ("ttir", "ttgir"):
        graph = IrGraph.from_compiled(result, level)
        assert str(REPO) in graph.ir_text  # Triton prints where the kernel lives here
        stored = graph.to_arrow()["ir_graphs"].column("ir_text")[0].as_py()
        assert str(REPO) not in stored
        assert location_paths(stored) == set()
        assert '"tests/extract/kernels/pointwise.py":' in stored
        again = IrGraph.from_text(stored, level=level)
        assert again.ir_id == graph.ir_id
        nodes = graph.to_arrow()["ir_nodes"].select(["loc_line", "loc_col", "var_name"])
        assert (
            again.to_arrow()["ir_nodes"].select(["loc_line", "loc_col", "var_name"]).equals(nodes)
        )


def test_package_relative_forms() -> None:
    assert (
        package_relative(str(REPO / "corpus" / "suite" / "kernels" / "softmax.py"))
        == "corpus/suite/kernels/softmax.py"
    )
    standard = Path(triton.__file__).parent / "language" / "standard.py"
    assert package_relative(str(standard)) == "triton/language/standard.py"
    assert package_relative("/nowhere/at/all/k.py") == "k.py"  # not on this machine: file name
    assert package_relative("pkg/k.py") == "pkg/k.py"


def test_publishable_texts_leave_other_text_alone() -> None:
    text = 'module {\n  tt.func @k() {\n    tt.return loc(#loc1)\n  }\n}\n#loc1 = loc("k.py":1:1)\n'
    assert publishable_ir_text(text) == text
    assert publishable_message(None) is None
    message = f"RuntimeError: in {REPO}/corpus/suite/kernels/softmax.py at line 3"
    assert (
        publishable_message(message) == "RuntimeError: in corpus/suite/kernels/softmax.py at line 3"
    )
