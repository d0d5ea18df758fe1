"""The reader is a light install: ``schemas`` reads and checks a dataset without importing the
compiler stack, and ``extract``, ``corpus`` and ``train`` name their extra in one line when its
dependencies are missing. (``.ci/light-reader.sh`` checks the same in a fresh virtualenv that
really lacks torch and Triton.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from schemas.extras import MissingExtraError, require_extra

REPO = Path(__file__).resolve().parents[2]
V1_DATASET = REPO / "tests" / "schemas" / "fixtures" / "v1_dataset"
HEAVY = ("torch", "triton", "torch_geometric", "networkx", "corpus", "extract", "train")

READ = """
import sys
from schemas import read_table, scan_table
from schemas.check import check_dataset
assert read_table(sys.argv[1], "measurements", columns=["run_id", "median_ms"]).num_rows > 0
assert scan_table(sys.argv[1], "runs").collect().height > 0
assert check_dataset(sys.argv[1]).ok
print(" ".join(sorted({name.split(".")[0] for name in sys.modules})))
"""


def test_reading_and_checking_a_dataset_imports_no_heavy_package():
    done = subprocess.run(
        [sys.executable, "-c", READ, str(V1_DATASET)], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert done.returncode == 0, done.stderr
    imported = set(done.stdout.split())
    assert "pyarrow" in imported
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))


def test_a_library_import_without_the_extra_raises_naming_it(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["script.py"])
    with pytest.raises(MissingExtraError, match=r"pip install 'kernel-corpus\[harvest\]'") as caught:
        require_extra("corpus", "harvest", ("os", "no_such_module_kc"))
    assert caught.value.name == "no_such_module_kc"
    assert "os" not in str(caught.value)
    require_extra("corpus", "harvest", ("os", "json"))  # all present: nothing happens


@pytest.mark.parametrize(
    ("command", "blocked", "extra"),
    [
        (["corpus.harvest", "--help"], "triton", "harvest"),
        (["corpus.suite", "list"], "threadpoolctl", "harvest"),
        (["extract", "x.ttgir"], "networkx", "extract"),
        (["train", "--help"], "torch_geometric", "train"),
        (["schemas.bench", "--rows", "10"], "numpy", "bench"),  # a traceback in the reader install
    ],
)
def test_a_command_without_its_extra_stops_with_one_line(tmp_path, command, blocked, extra):
    # sitecustomize runs before the command: the module is then unimportable, as if not installed
    (tmp_path / "sitecustomize.py").write_text(f"import sys\nsys.modules[{blocked!r}] = None\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    done = subprocess.run(
        [sys.executable, "-m", *command], capture_output=True, text=True, cwd=REPO, env=env, timeout=120
    )
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"pip install 'kernel-corpus[{extra}]'" in lines[0] and blocked in lines[0]


def _blocking(tmp_path: Path, module: str) -> Path:
    """A directory whose sitecustomize makes ``module`` unimportable, as if not installed."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(f"import sys\nsys.modules[{module!r}] = None\n")
    return site


@pytest.mark.parametrize("command", [["schemas", "check", "demo-dataset"], ["corpus.harvest", "--help"]])
def test_a_python_without_the_readers_dependencies_stops_with_one_line(tmp_path, command):
    # the first `import pyarrow` used to end in a traceback, and under corpus.* before the
    # extra's own line could be printed (corpus imports schemas.extras, hence schemas)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(_blocking(tmp_path, "pyarrow")), str(REPO)])}
    done = subprocess.run(
        [sys.executable, "-m", *command], capture_output=True, text=True, cwd=REPO, env=env, timeout=120
    )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: kernel-corpus is not installed in this Python (pyarrow not installed)")
    assert "pip install -e . in a clone" in lines[0]


def test_a_clone_whose_venv_is_not_the_running_python_says_to_activate_it(tmp_path):
    clone = tmp_path / "clone"
    shutil.copytree(REPO / "schemas", clone / "schemas", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(_blocking(tmp_path, "pyarrow")), str(clone)])}
    run = lambda: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "schemas", "check", "x"], capture_output=True, text=True, cwd=clone, env=env, timeout=120
    )
    assert "venv" not in run().stderr  # no .venv in the clone: nothing to activate
    (clone / ".venv" / "bin").mkdir(parents=True)
    (clone / ".venv" / "bin" / "python").write_text("")  # what make setup leaves, as far as the hint looks
    line = run().stderr.strip()
    assert f"this Python ({sys.executable}) is not the clone's venv: source {clone / '.venv'}/bin/activate" in line
