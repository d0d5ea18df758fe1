"""The notebooks run top to bottom on a tiny real harvest, and are committed without outputs.

Each notebook runs in a real Jupyter kernel (nbclient), as ``make notebooks`` and CI run them;
any cell that raises fails the test. The dataset is the one ``make notebooks`` reads by
default, ``make demo``'s (harvested once per session on Triton's interpreter: 5 families with
matmul for the config landscape, <= 4 configs per run; ``demo_dataset`` in tests/conftest.py).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

import nbformat
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from traitlets.config import Config

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
EXPLORE = NOTEBOOKS / "01_explore_dataset.ipynb"
COST_MODEL = NOTEBOOKS / "02_cost_model.ipynb"
@pytest.fixture(scope="session")
def dataset(request: pytest.FixtureRequest) -> str:
    """The session's demo dataset. ``KERNEL_CORPUS_NOTEBOOK_TEST_DATASET`` may name an existing
    harvest to skip it while iterating locally."""
    prebuilt = os.environ.get("KERNEL_CORPUS_NOTEBOOK_TEST_DATASET")
    if prebuilt:
        return prebuilt
    return str(request.getfixturevalue("demo_dataset"))


def execute(path: Path) -> nbformat.NotebookNode:
    """Run the notebook in a fresh python3 kernel from its own directory; raises on any error.

    The kernel talks over IPC sockets, as ``make notebooks`` runs it: over TCP (nbclient's
    default) ipykernel warns that the traffic is unencrypted. The sockets are named by an
    absolute path in a directory of their own, since the kernel runs in notebooks/ and the
    client here."""
    notebook = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="kc-kernel-") as ipc:
        config = Config()
        config.KernelManager.transport = "ipc"
        config.KernelManager.ip = str(Path(ipc) / "kernel")
        client = NotebookClient(
            notebook,
            timeout=300,
            kernel_name="python3",
            resources={"metadata": {"path": str(path.parent)}},
            config=config,
        )
        client.execute()
    return notebook


def stream_text(notebook: nbformat.NotebookNode) -> str:
    """Everything the notebook's cells printed, stdout and stderr (warnings included)."""
    return "".join(
        output.get("text", "") for cell in notebook.cells for output in cell.get("outputs", [])
    )


def images(notebook: nbformat.NotebookNode) -> int:
    """Figures the executed notebook displays."""
    return sum(
        "image/png" in output.get("data", {})
        for cell in notebook.cells
        for output in cell.get("outputs", [])
    )


def errors(notebook: nbformat.NotebookNode) -> list[str]:
    return [
        f"{output.get('ename')}: {output.get('evalue')}"
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]


@pytest.mark.parametrize("path", [EXPLORE, COST_MODEL], ids=lambda p: p.stem)
def test_committed_without_outputs(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    dirty = [
        i
        for i, cell in enumerate(notebook.cells)
        if cell.cell_type == "code"
        and (cell.outputs or cell.execution_count is not None or "execution" in cell.metadata)
    ]
    assert not dirty, (
        f"{path.name}: cells {dirty} carry outputs, execution counts or timings; "
        "run `make strip-notebooks` before committing"
    )
    tagged = [c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, f"{path.name}: expected one cell tagged 'parameters'"
    assert "KERNEL_CORPUS_DATASET" in tagged[0].source


def test_explore_notebook_runs(dataset: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNEL_CORPUS_DATASET", dataset)
    notebook = execute(EXPLORE)
    assert not errors(notebook)
    # latency per family, config landscape, speedup, throughput, IR graph
    assert images(notebook) == 5
    text = stream_text(notebook)
    assert f"dataset: {dataset}" in text, "the notebook did not read KERNEL_CORPUS_DATASET"
    found = re.search(r"^(\d+) GPU run\(s\), (\d+) interpreter run\(s\)", text, re.MULTILINE)
    assert found and int(found[1]) == 0 and int(found[2]) > 0, "interpreter runs not told apart"


GPU_FACTS = {
    "device_kind": "cuda",
    "device_name": "NVIDIA H100 80GB HBM3",
    "sm_count": 132,
    "sm_clock_max_mhz": 1980,
    "compute_capability": "9.0",
}
"""Device columns that make an interpreter run look like an H100 run to the notebook."""


def as_gpu_dataset(dataset: str, copy: Path) -> Path:
    """A copy of ``dataset`` whose runs claim to come from an H100 (files rewritten in place,
    schema and footer kept), so the GPU branch of the notebook runs without a GPU."""
    shutil.copytree(dataset, copy)
    for path in (copy / "runs").rglob("*.parquet"):
        table = pq.read_table(path)
        for name, value in GPU_FACTS.items():
            field = table.schema.field(name)
            column = pa.array([value] * table.num_rows, type=field.type)
            table = table.set_column(table.schema.get_field_index(name), field, column)
        pq.write_table(table, path)
    return copy


def test_explore_notebook_gpu_branch(
    dataset: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KERNEL_CORPUS_DATASET", str(as_gpu_dataset(dataset, tmp_path / "gpu")))
    notebook = execute(EXPLORE)
    text = stream_text(notebook)
    found = re.search(r"^(\d+) GPU run\(s\), (\d+) interpreter run\(s\)", text, re.MULTILINE)
    assert found, "the throughput cell did not report its runs"
    assert int(found[1]) > 0 and int(found[2]) == 0, found[0]
    assert images(notebook) == 5


def test_cost_model_notebook_trains_and_ranks(
    dataset: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    monkeypatch.setenv("KERNEL_CORPUS_DATASET", dataset)
    monkeypatch.setenv("KERNEL_CORPUS_RESULTS", str(results))
    monkeypatch.setenv("KERNEL_CORPUS_EPOCHS", "2")
    monkeypatch.setenv("KERNEL_CORPUS_SEEDS", "1")
    monkeypatch.setenv("KERNEL_CORPUS_TRAIN_CACHE", str(tmp_path / "cache"))
    notebook = execute(COST_MODEL)
    assert not errors(notebook)
    # torch_geometric imports tqdm.auto, which warns in a kernel without ipywidgets; the
    # notebook draws no progress bar, so the warning is noise it keeps out
    assert "IProgress not found" not in stream_text(notebook)
    assert "Kernel is running over TCP" not in capfd.readouterr().err  # the kernel's own log
    assert (results / "checkpoint" / "checkpoint.json").is_file(), "no model was trained"
    # predicted vs measured, Kendall tau histograms, top-k slowdown, unseen kernel's ranking
    assert images(notebook) == 4
    ranking = next(
        o["data"]["text/plain"]
        for o in notebook.cells[-1].outputs
        if o.get("output_type") == "execute_result"
    )
    for block in (128, 512, 2048):
        assert f"BLOCK={block}, num_warps=8" in ranking, (
            "the unseen kernel's ranking lacks a config"
        )


def test_missing_dataset_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KERNEL_CORPUS_DATASET", str(tmp_path / "nowhere"))
    with pytest.raises(CellExecutionError, match="KERNEL_CORPUS_DATASET=.*nowhere.*make demo"):
        execute(EXPLORE)
