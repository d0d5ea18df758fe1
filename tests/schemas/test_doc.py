from __future__ import annotations

from pathlib import Path

from schemas.doc import render_schema_doc
from schemas.tables import TABLES

REPO = Path(__file__).resolve().parents[2]


def test_committed_schema_doc_is_current():
    committed = (REPO / "docs" / "SCHEMA.md").read_text()
    assert committed == render_schema_doc(), "docs/SCHEMA.md is stale: run `python -m schemas doc`"


def test_every_field_is_documented():
    for name, spec in TABLES.items():
        for field in spec.schema:
            assert (field.metadata or {}).get(b"doc"), f"{name}.{field.name} has no doc"
            assert f"`{field.name}`" in render_schema_doc()
