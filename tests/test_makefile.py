"""The Makefile's recipes as a newcomer's shell runs them: ``make setup``'s pip commands (with a
pip that records its arguments instead of installing) and ``make notebooks`` (a real Jupyter
kernel, on a one-cell notebook instead of the project's two)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def recording_venv(root: Path) -> Path:
    """A stand-in venv whose ``pip`` appends each call's arguments (one line, unit-separated)
    to ``root/pip.log``: the Makefile's commands reach it through the shell exactly as they
    would reach pip."""
    bin_dir = root / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("python", "pip"):
        tool = bin_dir / name
        tool.write_text(f"#!/bin/sh\nprintf '%s\\037' \"$@\" >> {root / 'pip.log'}\necho >> {root / 'pip.log'}\n")
        tool.chmod(0o755)
    return root / "venv"


def test_setup_passes_version_floors_to_pip_and_writes_no_stray_files(tmp_path: Path):
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    venv = recording_venv(tmp_path)
    done = subprocess.run(
        ["make", "-s", "setup", f"VENV={venv}"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    calls = [line.split("\x1f")[:-1] for line in (tmp_path / "pip.log").read_text().splitlines()]
    installs = [call for call in calls if call[:1] == ["install"]]
    # the specifiers reach pip whole (an unquoted '>=' was a shell redirection: pip got bare
    # names, and files named '=2.0' and '=6.0' appeared in the clone)
    assert ["install", "-q", "sqlalchemy>=2.0", "pyyaml>=6.0"] in installs
    stray = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("="))
    assert not stray, f"make setup wrote stray files {stray}"
    # flag-gems last and --no-deps: pip then checks no pins, and prints no ERROR about the ones
    # make setup skips on purpose (it did when its dependencies were installed after it)
    assert installs[-1][:3] == ["install", "-q", "--no-deps"] and installs[-1][3].startswith("flag-gems==")


def test_make_notebooks_runs_a_notebook_in_its_directory(tmp_path: Path):
    pytest.importorskip("nbconvert")
    nbformat = pytest.importorskip("nbformat")
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    stamp = tmp_path / "installed"
    stamp.touch()  # newer than pyproject.toml: set-up is done (this interpreter's environment)
    (tmp_path / "notebooks").mkdir()
    notebook = nbformat.v4.new_notebook()
    notebook.cells.append(nbformat.v4.new_code_cell("import os\nprint(os.environ['KERNEL_CORPUS_DATASET'])"))
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, tmp_path / "notebooks" / "one.ipynb")
    (tmp_path / "my-dataset" / "runs").mkdir(parents=True)
    done = subprocess.run(
        [
            "make", "-s", "notebooks", f"BIN={Path(sys.executable).parent}", f"STAMP={stamp}",
            "NOTEBOOK_DATASET=my-dataset",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    # the kernel runs in notebooks/ and nbconvert in the clone's root: relative IPC socket names
    # never met there, and every run ended "Kernel didn't respond in 60 seconds"
    assert done.returncode == 0, done.stderr[-3000:]
    html = (tmp_path / "build" / "notebooks" / "one.html").read_text()
    assert str(tmp_path / "my-dataset") in html
    assert not list((tmp_path / "notebooks").glob("kernel-ipc-*")), "IPC sockets left in notebooks/"


def test_setup_takes_torch_from_the_index_given(tmp_path: Path):
    # Plain PyPI's torch for Linux x86_64 is the CUDA build: a newcomer without a local CPU
    # wheel had no way to ask for PyTorch's CPU index short of editing the Makefile
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    venv = recording_venv(tmp_path)
    index = "https://download.pytorch.org/whl/cpu"
    done = subprocess.run(
        ["make", "-s", "setup", f"VENV={venv}", f"TORCH_INDEX_URL={index}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    calls = [line.split("\x1f")[:-1] for line in (tmp_path / "pip.log").read_text().splitlines()]
    [torch] = [call for call in calls if any(arg.startswith("torch==") for arg in call)]
    assert torch[torch.index("--index-url") + 1] == index
    # only torch: the project's other dependencies are on PyPI, not on PyTorch's index
    assert sum("--index-url" in call for call in calls) == 1


def test_demo_ends_with_next_commands_the_readme_runs(tmp_path: Path):
    # a newcomer's make demo ends on a wall of training output: its last lines say what to run
    # next, and each command named there must be one the README's First ten minutes runs on
    # these outputs (tests/test_readme.py executes that block)
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    venv = recording_venv(tmp_path)
    stamp = tmp_path / "installed"
    stamp.touch()  # newer than pyproject.toml: set-up is done
    done = subprocess.run(
        ["make", "-s", "demo", f"BIN={venv / 'bin'}", f"STAMP={stamp}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    ran = (tmp_path / "pip.log").read_text().splitlines()
    assert len(ran) == 3 and ran[-1].startswith("-m\x1ftrain\x1f")  # the hint comes after training
    hint = done.stdout.strip().splitlines()
    start = next(i for i, line in enumerate(hint) if line.startswith("next:"))
    assert "source .venv/bin/activate" in hint[start]
    commands = [line.strip() for line in hint[start + 1 :] if line.strip().startswith("python -m ")]
    assert len(commands) >= 2, hint
    readme = (REPO / "README.md").read_text()
    first = readme.split("## First ten minutes", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    for command in commands:
        assert command in first, f"make demo suggests {command!r}, which README's First ten minutes does not run"
