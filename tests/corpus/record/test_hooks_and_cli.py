"""Per-config hooks replayed before each config's IR compile, TensorDescriptor arguments, failed
tunings, configs without IR counted, the CLI's --help and --out probe (issues 18 and 19)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from corpus.record.__main__ import main
from corpus.record.workload import WorkloadError, parse_command
from schemas import read_table
from schemas.check import check_dataset

from .conftest import REPO

HERE = Path(__file__).resolve().parent


def _record(out: Path, workload: Path, *options: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    command = [sys.executable, "-W", "ignore", "-m", "corpus.record", "--out", str(out), "--rep", "1",
               "--warmup", "0", *options, "--", sys.executable, str(workload)]  # fmt: skip
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)


def test_hooks_are_replayed_per_config_and_failed_tunings_reported(tmp_path: Path) -> None:
    if importlib.util.find_spec("triton.tools.tensor_descriptor") is None:
        pytest.skip("this Triton has no host TensorDescriptor")
    out = tmp_path / "d"
    done = _record(out, HERE / "hooked_workload.py")
    assert done.returncode == 0, done.stderr[-3000:]
    # desc_copy's pre_hook sets the descriptor's block shape per config: every config's IR
    # compiles with its own (before: only the config whose shape the last launch left)
    runs = {r["family"]: r for r in read_table(str(out), "runs").to_pylist()}
    assert set(runs) == {"desc_copy", "odd_warps"}
    rows = read_table(str(out), "measurements").to_pylist()
    measurements = [m for m in rows if m["run_id"] == runs["desc_copy"]["run_id"]]
    assert len(measurements) == 3
    assert all(m["status"] == "ok" and m["ttgir_id"] and not m["stats_note"] for m in measurements)
    assert len({m["ttgir_id"] for m in measurements}) == 3
    # odd_warps' 3-warp config ran (the interpreter ignores warps) but has no IR: counted, named
    odd = sorted((m["num_warps"], bool(m["ttgir_id"])) for m in rows if m["run_id"] == runs["odd_warps"]["run_id"])
    assert odd == [(1, True), (3, False)]
    assert "1 measured config(s) without IR graphs" in done.stderr and "odd_warps" in done.stderr
    run = runs["desc_copy"]
    assert run["arg_types"] == ["tensordesc<fp32>", "*fp32", "i32"] and run["arg_shapes"][0] == [64]
    assert "tensor(" not in run["signature_json"]  # no data in the key
    # broken_hook's tuning raised: reported as failed, not as already tuned
    assert "tuning failed (the autotuned call raised): broken_hook: RuntimeError" in done.stderr
    assert "already tuned" not in done.stderr.split("recorded", 1)[1]
    assert check_dataset(str(out)).ok


def test_a_script_that_turns_the_interpreter_on_itself_records_ir(tmp_path: Path) -> None:
    """``with corpus.record(...)`` in a script that sets TRITON_INTERPRET in code: the compile
    worker neither runs the script again nor inherits the interpreter, so every config Triton
    can compile has IR; the one it cannot is reported when the block ends."""
    out = tmp_path / "d"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run(
        [sys.executable, str(HERE / "in_code_workload.py"), str(out)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("workload ran") == 1
    rows = read_table(str(out), "measurements").to_pylist()
    assert sorted((m["num_warps"], m["ttgir_id"] is not None) for m in rows) == [(3, False), (4, True), (4, True)]
    assert "1 measured config(s) without IR graphs" in done.stderr and "add_one" in done.stderr
    assert check_dataset(str(out)).ok


NAMESPACE_KERNEL = """
import torch
import triton
import triton.language as tl

from .settings import CONFIGS  # a relative import in a package without __init__.py


@triton.autotune(configs=CONFIGS, key=["n"])
@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) + 1, mask=offsets < n)


if __name__ == "__main__":
    add_one[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](torch.zeros(100), 100)
"""


def test_a_kernel_of_a_namespace_package_run_as_a_module_has_ir(tmp_path: Path) -> None:
    """``corpus.record -- python -m nsp.kern``: the worker loads the kernel's module by its name
    (a file of a package without ``__init__.py`` cannot resolve its relative imports alone)."""
    package = tmp_path / "src" / "nsp"
    package.mkdir(parents=True)
    (package / "settings.py").write_text(
        "import triton\nCONFIGS = [triton.Config({'BLOCK': 16}), triton.Config({'BLOCK': 64})]\n"
    )
    (package / "kern.py").write_text(NAMESPACE_KERNEL)
    out = tmp_path / "d"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(tmp_path / "src")])
    command = [sys.executable, "-W", "ignore", "-m", "corpus.record", "--out", str(out), "--rep", "1",
               "--warmup", "0", "--", sys.executable, "-m", "nsp.kern"]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = read_table(str(out), "measurements").to_pylist()
    assert len(rows) == 2 and all(m["ttgir_id"] for m in rows), [m["stats_note"] for m in rows]
    assert "without IR" not in done.stderr


@pytest.mark.slow
def test_liger_fused_mlp_records_ir_for_all_32_configs(tmp_path: Path) -> None:
    pytest.importorskip("liger_kernel", reason="the thirdparty extra (liger-kernel) is not installed")
    out = tmp_path / "d"
    done = _record(out, HERE / "liger_mlp.py")
    assert done.returncode == 0, done.stderr[-3000:]
    measurements = read_table(str(out), "measurements").to_pylist()
    assert len(measurements) == 32
    missing = [m["stats_note"] for m in measurements if not m["ttgir_id"]]
    assert missing == [] and "without IR" not in done.stderr
    run = read_table(str(out), "runs").to_pylist()[0]
    assert run["family"] == "_swiglu_kernel_forward_inference"
    assert run["arg_types"][:4] == ["tensordesc<fp16>"] * 4
    assert check_dataset(str(out)).ok


def test_liger_static_asserts_are_compile_errors_and_untuned_kernels_are_named(tmp_path: Path) -> None:
    """Two gaps met on liger-kernel (tests/corpus/record/liger_untuned.py). Its int8 x int2
    matmul asserts ``K % (4 * BLOCK_SIZE_K) == 0`` with ``tl.static_assert``: on a GPU a config
    failing it is a compile error Triton's autotuner scores ``inf``, on the interpreter it raised
    out of the tuning ("tuning failed", nothing recorded). Its softmax is plain ``@triton.jit``:
    the summary said "recorded 0 run(s)" and nothing about why."""
    pytest.importorskip("liger_kernel", reason="the thirdparty extra (liger-kernel) is not installed")
    out = tmp_path / "d"
    done = _record(out, HERE / "liger_untuned.py")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "tuning failed" not in done.stderr
    (run,) = read_table(str(out), "runs").to_pylist()
    assert run["family"] == "matmul_kernel" and run["problem_json"] == '{"K":128,"M":8,"N":16}'
    rows = read_table(str(out), "measurements").to_pylist()
    outcome = {(m["status"], json.loads(m["config_json"])["kwargs"]["BLOCK_SIZE_K"]) for m in rows}
    assert outcome == {("ok", 32), ("compile_error", 64), ("compile_error", 128)}
    assert len(rows) == 15 and sum(m["status"] == "ok" for m in rows) == 6
    failed = [m for m in rows if m["status"] == "compile_error"]
    assert all(m["error"].startswith("StaticAssertFailure: tl.static_assert failed: K / 4") for m in failed)
    assert all(m["median_ms"] is None and not m["samples_ms"] for m in failed)
    assert all(m["ttgir_id"] for m in rows if m["status"] == "ok")
    # never measured, failed by design: counted as failures, not as measured configs lacking IR
    assert "without IR graphs" not in done.stderr
    assert "9 config(s) not measured (the error column says why): compile_error x9" in done.stderr
    assert (
        "2 kernel(s) launched untuned, nothing to record (plain @triton.jit, or an autotuner of one "
        "config): _softmax_single_block_forward_kernel x1, _softmax_single_block_backward_kernel x1"
    ) in done.stderr
    assert check_dataset(str(out)).ok


def test_help_without_the_workload_separator(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0 and "--out" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exited:
        main(["--out", "d"])
    assert exited.value.code == 2 and "give the workload after '--'" in capsys.readouterr().err
    # the workload given without '--' was "unrecognized arguments: python w.py --calls 3"
    with pytest.raises(SystemExit) as exited:
        main(["--out", "d", "python", "w.py", "--calls", "3"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "give the workload after '--', e.g. -- python w.py --calls 3" in err


def test_out_is_probed_before_the_workload_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    marker = tmp_path / "ran"
    script = tmp_path / "workload.py"
    script.write_text(f"open({str(marker)!r}, 'w').close()\n")
    assert main(["--out", str(blocker / "d"), "--", sys.executable, str(script)]) == 2
    assert not marker.exists()  # the workload never started
    err = capsys.readouterr().err
    assert "error: --out" in err and "cannot write the dataset there" in err


def test_out_that_is_no_dataset_is_refused_before_the_workload_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The gap: the recorder probed only that --out could take files, so a project directory
    (or --out "") got the dataset's tables beside its own files; it must refuse what the
    harvest refuses, before the workload starts, with the harvest's override flag."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("# My project\n")
    marker = tmp_path / "ran"
    script = tmp_path / "workload.py"
    script.write_text(f"open({str(marker)!r}, 'w').close()\n")
    workload = ["--", sys.executable, str(script)]
    assert main(["--out", str(project), *workload]) == 2
    assert not marker.exists()  # the workload never started
    err = " ".join(capsys.readouterr().err.split())
    assert "error: --out" in err and "a non-empty directory that holds no dataset (README.md)" in err
    assert "--force-out" in err
    assert [p.name for p in project.iterdir()] == ["README.md"]
    with pytest.raises(SystemExit) as stop:
        main(["--out", "", *workload])
    assert stop.value.code == 2 and "--out: expected a non-empty value" in capsys.readouterr().err
    assert not marker.exists()
    done = _record(project, script, "--force-out", "--no-ir")  # its own process: Triton unimported
    assert done.returncode == 0, done.stderr[-3000:]
    assert marker.exists()  # told to: accepted, and the workload ran
    assert (project / "README.md").read_text() == "# My project\n"


def test_a_device_refused_after_the_out_probe_leaves_out_as_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gap: the --out probe makes the dataset's table directories, and a refusal after it
    (--device cuda without CUDA, or with TRITON_INTERPRET set) left them, and the new --out,
    behind; the harvest and the import take them away again."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # refused on any machine: no CUDA, or the interpreter on
    marker = tmp_path / "ran"
    script = tmp_path / "workload.py"
    script.write_text(f"open({str(marker)!r}, 'w').close()\n")
    out = tmp_path / "new" / "d"
    assert main(["--out", str(out), "--device", "cuda", "--", sys.executable, str(script)]) == 2
    assert "error: --device cuda" in capsys.readouterr().err
    assert not marker.exists() and not (tmp_path / "new").exists()


def test_a_workload_module_that_does_not_exist_is_refused_before_out_is_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``-- python -m typo``: refused in one line like a missing script, not the workload's
    ImportError traceback after --out was created."""
    out = tmp_path / "d"
    assert main(["--out", str(out), "--", sys.executable, "-m", "no_such_workload_pkg.run"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: no such workload module: no_such_workload_pkg (for python -m no_such_workload_pkg.run)"
    assert not out.exists()
    # A typo below an existing package is found without importing the package (its kernels
    # must not load before the recorder picks the interpreter).
    assert main(["--out", str(out), "--", sys.executable, "-m", "tests.corpus.record.no_such_workload"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: no such workload module: tests.corpus.record.no_such_workload (")
    assert parse_command([sys.executable, "-m", "tests.corpus.record.workload"]).module == "tests.corpus.record.workload"
    with pytest.raises(WorkloadError, match="no such workload module: tests.corpus.record.workload.deeper"):
        parse_command([sys.executable, "-m", "tests.corpus.record.workload.deeper"])  # a module has no children
    assert not out.exists()


def test_a_workload_module_is_looked_up_without_importing_its_package(tmp_path: Path) -> None:
    """Finding ``pkg.typo`` must not import ``pkg``: its kernels would load before the recorder
    switches the interpreter on."""
    package = tmp_path / "kpkg"
    package.mkdir()
    marker = tmp_path / "imported"
    (package / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    done = subprocess.run(
        [sys.executable, "-m", "corpus.record", "--out", str(tmp_path / "d"), "--", sys.executable, "-m", "kpkg.typo"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[3]), os.environ.get("PYTHONPATH", "")])},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "no such workload module: kpkg.typo" in done.stderr
    assert not marker.exists() and not (tmp_path / "d").exists()
