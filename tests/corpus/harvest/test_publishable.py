"""A fresh harvest can be published as it is: no path of this machine and no host name in any
string of any table or file name, and a dataset card at its root."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from corpus.harvest.__main__ import parse
from corpus.harvest.app import resolve_execution
from corpus.harvest.device import interpreter_facts
from corpus.harvest.identity import toolchain_fingerprint
from corpus.harvest.settings import read_settings
from schemas import read_table
from schemas.card import CARD_JSON, CARD_MARKDOWN
from schemas.check import check_dataset
from schemas.enums import DEVICE_INTERPRETER
from schemas.machine import is_anonymous
from schemas.scrub import scrub_dataset
from schemas.storage import list_parquet, resolve
from schemas.tables import TABLES
from tests.corpus.harvest.conftest import REPO


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _machine_paths(out: Path) -> set[str]:
    """Absolute paths this machine would leak: the checkout, the Python install, the home and
    temporary directories, and the dataset itself."""
    candidates = {
        str(REPO),
        sys.prefix,
        os.path.expanduser("~"),
        tempfile.gettempdir(),
        str(out.resolve()),
    }
    return {path for path in candidates if len(path) > 1}


def test_no_string_of_a_fresh_harvest_names_this_machine(reference_dataset: Path) -> None:
    paths = _machine_paths(reference_dataset)
    host = socket.gethostname()
    for name in TABLES:
        table = read_table(str(reference_dataset), name)
        text_columns = [f.name for f in table.schema if not pa.types.is_floating(f.type)]
        for column in text_columns:
            for text in _strings(table.column(column).to_pylist()):
                leaked = [p for p in paths if p in text]
                assert not leaked, f"{name}.{column} holds {leaked[0]!r}: {text[:200]!r}"
    hosts = read_table(str(reference_dataset), "runs").column("hostname").to_pylist()
    assert hosts and all(is_anonymous(h) for h in hosts)
    loc = resolve(str(reference_dataset))
    for name in TABLES:
        for path in list_parquet(loc, name):
            assert not re.match(rf"part-(?:[a-z]+-)*{re.escape(host)}-", Path(path).name), path
    report = check_dataset(str(reference_dataset))
    assert report.problems == [] and report.warnings == []


def test_the_harvest_leaves_a_card(reference_dataset: Path) -> None:
    card = json.loads((reference_dataset / CARD_JSON).read_text())
    runs = read_table(str(reference_dataset), "runs")
    assert card["rows"]["runs"] == runs.num_rows
    assert (
        card["rows"]["measurements"] == read_table(str(reference_dataset), "measurements").num_rows
    )
    assert set(card["families"]) == set(runs.column("family").to_pylist())
    assert len(card["commands"]) == 1 and card["commands"][0].startswith("python -m corpus.harvest")
    assert str(reference_dataset) not in card["commands"][0]
    assert (reference_dataset / CARD_MARKDOWN).read_text().startswith("---\n")


def test_scrub_finds_nothing_to_do_in_a_fresh_harvest(
    reference_dataset: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(reference_dataset, copy)
    results = scrub_dataset(str(copy))
    assert results and all(r.files_rewritten == 0 and r.files_renamed == 0 for r in results)


def test_record_host_is_asked_for_explicitly() -> None:
    facts = interpreter_facts()
    settings = read_settings({})
    plain = resolve_execution(parse([]), settings, (DEVICE_INTERPRETER,), facts)
    assert plain.host is not None and is_anonymous(plain.host)
    recorded = resolve_execution(parse(["--record-host"]), settings, (DEVICE_INTERPRETER,), facts)
    assert recorded.host == socket.gethostname()
    assert "--record-host" in parse(["--record-host"]).command


def test_path_valued_toolchain_variables_are_recorded_without_the_path(tmp_path: Path) -> None:
    """A codegen variable naming a tool (TRITON_PTXAS_PATH=/opt/cuda/bin/ptxas) enters run_id;
    it is recorded by content, so the same tool anywhere gives the same run_id."""
    here, there = tmp_path / "a" / "ptxas", tmp_path / "b" / "ptxas"
    for path, content in ((here, b"tool v1"), (there, b"tool v1")):
        path.parent.mkdir()
        path.write_bytes(content)
    first = toolchain_fingerprint({"TRITON_PTXAS_PATH": str(here)}, ir_target=None)["env"]
    second = toolchain_fingerprint({"TRITON_PTXAS_PATH": str(there)}, ir_target=None)["env"]
    assert first == second and str(tmp_path) not in json.dumps(first)
    assert first["TRITON_PTXAS_PATH"].startswith("ptxas@")
    there.write_bytes(b"tool v2")
    changed = toolchain_fingerprint({"TRITON_PTXAS_PATH": str(there)}, ir_target=None)["env"]
    assert changed != first
    kept = toolchain_fingerprint({"TRITON_DEFAULT_FP_FUSION": "0"}, ir_target=None)["env"]
    assert kept == {"TRITON_DEFAULT_FP_FUSION": "0"}
