"""``python -m extract FILE`` and ``python -m extract compile ...``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import networkx as nx
import pytest

from extract.cli import main
from extract.commands import summary_table
from extract.graph import IrGraph
from tests.extract.conftest import HANDWRITTEN

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_module_entry_prints_node_link_json(fixture_dir: Path) -> None:
    path = fixture_dir / "if_else.sm_80.ttgir"
    completed = subprocess.run(
        [sys.executable, "-m", "extract", str(path)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    data = json.loads(completed.stdout)
    graph = nx.node_link_graph(data, edges="edges")
    assert isinstance(graph, nx.MultiDiGraph)
    assert graph.graph["entry_name"] == "if_else_kernel" and graph.graph["level"] == "ttgir"
    assert {kind for _, _, kind in graph.edges(data="kind")} == {"data", "region"}


def test_the_usage_line_shows_the_compile_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m extract --help`` (and a bad call's usage) showed only ``... file``: the
    compile form was in the description alone."""
    with pytest.raises(SystemExit):
        main(["--help"])
    usage = capsys.readouterr().out.split("\n\n")[0].splitlines()
    assert usage[0] == "usage: python -m extract [-h] [--format {json,summary}] [--target TARGET] file"
    assert usage[1].split() == ["python", "-m", "extract", "compile", "[-h]", "--signature", "SIGNATURE",
                                "--out", "OUT", "[...]", "kernel"]  # fmt: skip
    with pytest.raises(SystemExit):
        main([])
    assert "python -m extract compile [-h]" in capsys.readouterr().err


def test_summary_format(fixture_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(fixture_dir / "nested_loops.sm_90.ttir"), "--format", "summary"]) == 0
    out = capsys.readouterr().out
    assert "entry_name           nested_loops_kernel" in out
    assert "num_loops            2" in out
    assert "scf.for" in out


def test_summary_names_a_lone_leftover_op_and_counts_several(fixture_dir: Path) -> None:
    """'(other ops) 1' hid one op behind a line of its own: one left over is named; two or more
    are counted, with how many kinds they are."""
    graph = IrGraph.from_file(fixture_dir / "nested_loops.sm_90.ttir")
    ops = Counter(node.op_name for node in graph.nodes if node.node_kind == "op")
    assert len(ops) >= 4
    every = summary_table(graph, top_ops=len(ops) - 1)
    assert "other ops" not in every and all(f"\n{name} " in every for name in ops)
    rare = ops.most_common()[-2:]
    folded = summary_table(graph, top_ops=len(ops) - 2).splitlines()[-1].split()
    assert folded == ["(2", "other", "ops)", str(sum(count for _, count in rare))]


def test_invalid_file_exits_nonzero_naming_file_and_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = HANDWRITTEN / "invalid_type.ttir"
    assert main([str(path)]) == 1
    assert f"{path}:3:" in capsys.readouterr().err


def test_compile_writes_ir_graphs_and_stats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel = REPO_ROOT / "tests" / "extract" / "kernels" / "reduction.py"
    code = main(
        [
            "compile",
            f"{kernel}:softmax_kernel",
            "--signature",
            "*fp32,*fp32,i32:16,i32",
            "--constexpr",
            "BLOCK=1024",
            "--target",
            "sm_80",
            "--num-warps",
            "8",
            "--num-stages",
            "2",
            "--out",
            str(tmp_path),
        ]
    )
    assert code == 0
    names = {p.name for p in tmp_path.iterdir()}
    stages = {f"softmax_kernel.{s}" for s in ("ttir", "ttgir", "llir", "ptx", "cubin")}
    assert stages <= names
    assert {
        "softmax_kernel.ttir.graph.json",
        "softmax_kernel.ttgir.graph.json",
        "softmax_kernel.stats.json",
    } <= names
    ttgir = (tmp_path / "softmax_kernel.ttgir").read_text()
    assert '"ttg.num-warps" = 8' in ttgir and 'ttg.target = "cuda:80"' in ttgir
    assert (
        ttgir.count("tt.divisibility = 16") == 3
    )  # two pointers and the ':16' row stride, not n_cols
    graph = nx.node_link_graph(
        json.loads((tmp_path / "softmax_kernel.ttgir.graph.json").read_text()), edges="edges"
    )
    assert graph.graph["num_reductions"] == 2
    # num_stages belongs to the compile (stats.json), not to the IR shared by several configs
    assert "num_stages" not in graph.graph
    assert sorted(d for _, d in graph.nodes(data="divisibility") if d is not None) == [16, 16, 16]
    stats = json.loads((tmp_path / "softmax_kernel.stats.json").read_text())
    assert stats["target"] == "cuda:80" and stats["num_warps"] == 8 and stats["num_stages"] == 2
    assert stats["static_stats"]["n_regs"] is None or stats["static_stats"]["n_regs"] > 0
    assert "wrote" in capsys.readouterr().out


def test_compile_reports_missing_parameters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel = REPO_ROOT / "tests" / "extract" / "kernels" / "reduction.py"
    code = main(
        [
            "compile",
            f"{kernel}:softmax_kernel",
            "--signature",
            "*fp32,*fp32",
            "--out",
            str(tmp_path),
        ]
    )
    assert code == 2
    assert "row_stride" in capsys.readouterr().err


# ---------------------------------------------------------------- third-party kernels (byok)

BYOK = REPO_ROOT / "tests" / "extract" / "kernels" / "byok" / "ops.py"
BYOK_MODULE = "tests.extract.kernels.byok.ops"

# Triton signature word -> element type in the TTIR (unsigned and signed integers share
# MLIR's signless types; fp8e4b15 is stored as i8 by Triton)
TTIR_TYPES = {
    "i1": "i1", "u1": "i1", "i8": "i8", "u8": "i8", "i16": "i16", "u16": "i16",
    "i32": "i32", "u32": "i32", "i64": "i64", "u64": "i64",
    "fp16": "f16", "bf16": "bf16", "fp32": "f32", "fp64": "f64",
    "fp8e4nv": "f8E4M3FN", "fp8e5": "f8E5M2", "fp8e4b15": "i8",
    "fp8e4b8": "f8E4M3FNUZ", "fp8e5b16": "f8E5M2FNUZ",
}  # fmt: skip
AMD_ONLY = {"fp8e4b8", "fp8e5b16"}


def _func_arg_types(ttir: str) -> dict[str, str]:
    header = next(line for line in ttir.splitlines() if "tt.func public" in line)
    return dict(re.findall(r"%(\w+): ((?:!tt\.ptr<[^>]+>)|\w+)", header))


@pytest.mark.parametrize("word", sorted(TTIR_TYPES))
def test_every_signature_type_is_typed_in_the_ttir(word: str, tmp_path: Path) -> None:
    target = "hip:gfx942" if word in AMD_ONLY else "sm_90"
    code = main(
        [
            "compile",
            f"{BYOK}:typed_kernel",
            "--signature",
            f"*{word},{word},*i32",
            "--target",
            target,
            "--out",
            str(tmp_path),
        ]
    )
    assert code == 0
    types = _func_arg_types((tmp_path / "typed_kernel.ttir").read_text())
    assert types["p"] == f"!tt.ptr<{TTIR_TYPES[word]}>"
    assert types["s"] == TTIR_TYPES[word]


def test_integer_hints_specialize_wide_integers(tmp_path: Path) -> None:
    assert (
        main(
            [
                "compile",
                f"{BYOK}:typed_kernel",
                "--signature",
                "p:*fp16,s:i64:16,out:*i32",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    ttir = (tmp_path / "typed_kernel.ttir").read_text()
    assert re.search(r"%s: i64 \{tt\.divisibility = 16", ttir)


@pytest.mark.parametrize(
    "signature,message",
    [
        ("*u32,x64,*i8", "unknown type 'x64'"),
        ("*u33,i32,*i8", "unknown type '*u33'"),
        ("*fp16,fp32:16,*i8", "bad hint"),
        ("*fp16,i32,*i8,i32", "3 runtime parameters (p, s, out)"),
        ("q:*fp16,i32,*i8", "no runtime parameter 'q'"),
        ("*fp16,s:i32,s:i64", "gives s twice"),
    ],
)
def test_bad_signatures_are_refused_before_compiling(
    signature: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["compile", f"{BYOK}:typed_kernel", "--signature", signature, "--out", str(tmp_path)])
        == 2
    )
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    if "unknown type" in message:
        assert "valid types: i1, i8, i16, i32, i64" in err and "fp8e4nv" in err and "bf16" in err
    assert not any(tmp_path.iterdir())


def test_autotuned_kernel_compiles_every_config(tmp_path: Path) -> None:
    args = [
        "compile",
        f"{BYOK}:scale_kernel",
        "--signature",
        "*fp32,*fp32,fp32,i32:16",
        "--all-configs",
    ]
    assert main([*args, "--target", "sm_80", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config_00", "config_01"]
    for directory, (block, warps) in zip(sorted(tmp_path.iterdir()), [(64, 2), (128, 4)]):
        ttgir = (directory / "scale_kernel.ttgir").read_text()
        assert f'"ttg.num-warps" = {warps}' in ttgir
        assert f"tt.make_range {{end = {block} : i32" in ttgir
        stats = json.loads((directory / "scale_kernel.stats.json").read_text())
        assert stats["num_warps"] == warps


def test_autotuned_kernel_takes_constexprs_from_the_command_line(tmp_path: Path) -> None:
    args = ["compile", f"{BYOK_MODULE}:scale_kernel", "--signature", "*fp32,*fp32,fp32,i32"]
    assert (
        main([*args, "--constexpr", "BLOCK_SIZE=32", "--num-warps", "1", "--out", str(tmp_path)])
        == 0
    )
    ttgir = (tmp_path / "scale_kernel.ttgir").read_text()
    assert "tt.make_range {end = 32 : i32" in ttgir and '"ttg.num-warps" = 1' in ttgir


@pytest.mark.parametrize("location", [str(BYOK), BYOK_MODULE])
def test_heuristics_defaults_and_dtype_constexprs(location: str, tmp_path: Path) -> None:
    """File and module forms both import the package (its relative import resolves); the
    heuristic computes BLOCK_N from the n_cols given, HAS_BIAS takes its default, OUT_DTYPE a
    tl dtype."""
    args = ["compile", f"{location}:row_cast_kernel", "--signature", "*fp32,*bf16,n_cols:i32=100"]
    assert main([*args, "--constexpr", "OUT_DTYPE=tl.bfloat16", "--out", str(tmp_path)]) == 0
    ttir = (tmp_path / "row_cast_kernel.ttir").read_text()
    assert "tt.make_range {end = 128 : i32" in ttir  # block_for(100)
    assert "arith.truncf" in ttir and "tensor<128xbf16>" in ttir
    assert "arith.addf" not in ttir  # HAS_BIAS defaulted to False


def test_explicit_constexpr_overrides_heuristic_and_default(tmp_path: Path) -> None:
    args = ["compile", f"{BYOK}:row_cast_kernel", "--signature", "*fp32,*fp16,i32"]
    assert (
        main(
            [
                *args,
                "--constexpr",
                "BLOCK_N=64",
                "--constexpr",
                "HAS_BIAS=1",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    ttir = (tmp_path / "row_cast_kernel.ttir").read_text()
    assert (
        "tt.make_range {end = 64 : i32" in ttir
        and "arith.addf" in ttir
        and "tensor<64xf16>" in ttir
    )


@pytest.mark.parametrize(
    "kernel,extra,message",
    [
        (
            f"{BYOK}:scale_kernel",
            ["--constexpr", "BLOCKSIZE=3"],
            "has no constexpr parameter 'BLOCKSIZE'; its constexpr parameters are BLOCK_SIZE",
        ),
        (
            f"{BYOK}:scale_kernel",
            ["--constexpr", "n_elements=3"],
            "n_elements is a runtime parameter",
        ),
        (f"{BYOK}:scale_kernel", [], "no --constexpr value for: BLOCK_SIZE (or --all-configs"),
        (
            f"{BYOK}:row_cast_kernel",
            ["--constexpr", "OUT_DTYPE=tl.float17"],
            "'tl.float17' is not a Triton dtype",
        ),
        ("no_such_package.kernels:k", [], "cannot import module 'no_such_package.kernels'"),
        (f"{BYOK}:typed_kernel", ["--all-configs"], "has no @triton.autotune configs"),
    ],
)
def test_bad_kernels_and_constexprs_are_named(
    kernel: str, extra: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    signature = "*fp32,*fp32,i32" if "row_cast" in kernel else "*fp32,*fp32,fp32,i32"
    code = main(["compile", kernel, "--signature", signature, *extra, "--out", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == 2  # bad input, refused before compiling: nothing on stdout, one error line
    assert message in captured.err and captured.err.count("\n") == 1 and captured.out == ""


def test_compile_error_prints_the_lines_that_matter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [
        "compile",
        f"{BYOK}:broken_kernel",
        "--signature",
        "*fp32,i32",
        "--constexpr",
        "BLOCK=16",
        "--out",
        str(tmp_path),
    ]
    assert main(args) == 1
    err = capsys.readouterr().err
    line = next(
        i for i, text in enumerate(BYOK.read_text().splitlines(), 1) if "no_such_method" in text
    )
    assert f"{BYOK}:{line}: tl.store(x_ptr + offsets, x.no_such_method()" in err
    assert "no attribute 'no_such_method'" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 5
    assert main([*args, "--traceback"]) == 1
    assert "Traceback (most recent call last)" in capsys.readouterr().err


BYOK_KERNELS = (
    "its kernels: broken_kernel, desc_kernel, row_cast_kernel, scale_kernel, typed_kernel, "
    "wrapped_row_kernel"
)


@pytest.mark.parametrize(
    "kernel,message",
    [
        (f"{BYOK}:missing_kernel", f"{BYOK} defines no 'missing_kernel'; {BYOK_KERNELS}"),
        (
            f"{BYOK}:block_for",
            "block_for is a function, not a @triton.jit function",
        ),
        (f"{BYOK_MODULE}:missing_kernel", f"defines no 'missing_kernel'; {BYOK_KERNELS}"),
        (
            "tests.extract.kernels.byok.utils:block",
            "defines no 'block'; it defines no Triton kernel",
        ),
    ],
)
def test_a_kernel_name_the_file_lacks_is_bad_input_listing_its_kernels(
    kernel: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A KERNEL that names nothing compilable is refused like other bad command-line input
    (exit 2, not 1), and the error lists the kernels the module does define (imported helpers
    such as block_for and the KernelEntry class are not among them)."""
    code = main(["compile", kernel, "--signature", "*fp32", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and err.count("\n") == 1
    if "block_for" in kernel:
        assert err.rstrip().endswith(BYOK_KERNELS)


PARTLY_TUNED = """
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})], key=["n"])
@triton.jit
def grouped(x_ptr, n, BLOCK: tl.constexpr, GROUP: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK * GROUP + tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)
"""


def test_all_configs_missing_a_constexpr_the_caller_passes_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """flag-gems' mm_kernel_general: its configs set BLOCK_M/N/K, its caller passes GROUP_M=8.
    Before, --all-configs failed with a hint to use --all-configs; now the error says the
    autotune configs do not set it and to give it with --constexpr (which then compiles)."""
    source = tmp_path / "partly_tuned.py"
    source.write_text(PARTLY_TUNED)
    args = ["compile", f"{source}:grouped", "--signature", "*fp32,i32", "--all-configs"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "no --constexpr value for: GROUP" in err and "or --all-configs" not in err
    assert "its @triton.autotune configs do not set it" in err
    assert main([*args, "--constexpr", "GROUP=2", "--out", str(tmp_path / "b")]) == 0
    assert len(list((tmp_path / "b").glob("config_*/grouped.ttgir"))) == 2
