"""The dataset card: counts computed from the rows, kept facts survive refreshes."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from schemas import DatasetError, DatasetWriter, read_table
from schemas.__main__ import main
from schemas.card import CARD_JSON, CARD_MARKDOWN, read_card, write_card
from schemas.tables import SCHEMA_VERSION, TABLES
from tests.schemas.conftest import sample_rows, write_run

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "v1_dataset"


def _uncommitted_run(root: str) -> None:
    """Measurements of a run whose runs row never landed: the card must not count them."""
    rows = sample_rows(99, n_configs=4)
    DatasetWriter(root).write("measurements", rows["measurements"])


def test_card_counts_match_the_rows(dataset: str) -> None:
    _uncommitted_run(dataset)
    card = write_card(dataset)
    runs = read_table(dataset, "runs")
    assert card.rows["runs"] == runs.num_rows == 3
    assert card.rows["measurements"] == read_table(dataset, "measurements").num_rows == 9
    assert card.rows["ir_graphs"] == 3 and card.rows["kernels"] == 1  # content-keyed: once per key
    assert card.families == dict(Counter(runs.column("family").to_pylist()))
    assert card.devices == {"test device (sm_90)": 2, "test device (sm_80)": 1}
    statuses = Counter(read_table(dataset, "measurements").column("status").to_pylist())
    assert card.statuses == dict(statuses) == {"ok": 6, "compile_error": 3}
    assert card.harvests == 1 and card.schema_version == SCHEMA_VERSION


def test_card_files_at_the_root(dataset: str) -> None:
    write_card(dataset, license="CC-BY-4.0", title="Test corpus")
    markdown = (Path(dataset) / CARD_MARKDOWN).read_text()
    assert markdown.startswith("---\nlicense: CC-BY-4.0\n")
    assert "# Test corpus" in markdown
    assert "| `measurements` | 9 |" in markdown and "| `runs` | 3 |" in markdown
    assert "`compile_error` (3)" in markdown
    for needle in (
        "read_table",
        "scan_parquet",
        "duckdb",
        "python -m train",
        "docs/SCHEMA.md",
        f"Schema version {SCHEMA_VERSION}",
    ):
        assert needle in markdown, needle
    twin = json.loads((Path(dataset) / CARD_JSON).read_text())
    assert twin["rows"]["measurements"] == 9 and twin["license"] == "CC-BY-4.0"
    assert not [p for p in Path(dataset).iterdir() if p.name.startswith(".tmp-")]


def test_refresh_keeps_licence_and_commands_and_recounts(dataset: str) -> None:
    write_card(
        dataset,
        license="MIT",
        command="python -m corpus.harvest --out /home/alice/data/ds --scale tiny",
    )
    write_run(DatasetWriter(dataset), 7)
    card = write_card(
        dataset, command="python -m corpus.harvest --out /home/alice/data/ds --scale small"
    )
    assert card.license == "MIT"
    assert card.commands == [
        "python -m corpus.harvest --out ds --scale tiny",
        "python -m corpus.harvest --out ds --scale small",
    ]
    assert card.rows["runs"] == 4
    assert read_card(dataset) == card


def test_card_of_a_version_1_dataset(tmp_path: Path) -> None:
    root = tmp_path / "v1"
    shutil.copytree(FIXTURE, root)
    card = write_card(str(root))
    for name in TABLES:
        assert card.rows[name] == read_table(str(root), name).num_rows, name
    assert card.families == {"add_broadcast": 2, "matmul": 2}
    assert card.statuses == {"ok": 12}


def test_card_refuses_what_is_not_a_dataset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(DatasetError, match="no runs table"):
        write_card(str(tmp_path))
    assert main(["card", str(tmp_path)]) == 2
    assert "no runs table" in capsys.readouterr().out
    assert not (tmp_path / CARD_MARKDOWN).exists()


def test_card_cli(dataset: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["card", dataset, "--license", "Apache-2.0"]) == 0
    assert read_card(dataset).license == "Apache-2.0"
    assert main(["card", dataset]) == 0  # a refresh keeps the licence
    assert read_card(dataset).license == "Apache-2.0"
