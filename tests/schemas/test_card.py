"""The dataset card: counts computed from the rows, kept facts survive refreshes."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest

from schemas import DatasetError, DatasetWriter, read_table
from schemas.__main__ import main
from schemas.card import (
    CARD_JSON,
    CARD_MARKDOWN,
    CARD_MARKER,
    CardError,
    publishable_command,
    read_card,
    write_card,
)
from schemas.tables import SCHEMA_VERSION, TABLES
from tests.schemas.conftest import budget_then_rerun, sample_rows, write_rows, write_run

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
    [reference] = [line for line in markdown.splitlines() if "Field reference" in line]
    assert "\\" not in reference, reference  # read as it renders: no escaped markup shown raw
    twin = json.loads((Path(dataset) / CARD_JSON).read_text())
    assert twin["rows"]["measurements"] == 9 and twin["license"] == "CC-BY-4.0"
    assert not [p for p in Path(dataset).iterdir() if p.name.startswith(".tmp-")]


def _rows(value: object) -> int:
    """Rows of what a loading snippet left in a variable (pyarrow, polars eager or lazy)."""
    if isinstance(value, pl.LazyFrame):
        value = value.collect()
    return value.num_rows if isinstance(value, pa.Table) else value.height  # type: ignore[attr-defined]


def test_card_loading_snippets_read_what_the_reader_reads(
    dataset: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a plain reader meets beside committed rows: a run whose runs row never landed and a
    # killed writer's hidden temporary (a copy of a committed file, as a retried write leaves).
    _uncommitted_run(dataset)
    part = next(Path(dataset, "runs").glob("*/part-*.parquet"))
    shutil.copy(part, part.with_name(f".tmp-0123abcd-{part.name}"))
    markdown = write_card(dataset) and (Path(dataset) / CARD_MARKDOWN).read_text()
    loading = markdown.split("## Loading", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", loading, re.S)
    assert len(blocks) == 3 and "import duckdb" in blocks[2]  # duckdb is not a dependency
    monkeypatch.chdir(dataset)  # the card's snippets run from the dataset's directory
    for block in blocks[:2]:
        names: dict[str, object] = {}
        exec(block, names)
        for name in ("runs", "measurements", "ok"):
            if name in names:
                ok = [("status", "=", "ok")] if name == "ok" else None
                expected = read_table(".", "measurements" if name == "ok" else name, filters=ok).num_rows
                assert _rows(names[name]) == expected, (name, block)


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


def test_commands_on_the_card_name_no_machine_or_user(dataset: str) -> None:
    """The gap: only absolute paths were made relative, so a Ray harvest's head node
    (--ray ray://gpu-head-17.corp.example.com:10001), an IP address or an sftp user@host stayed
    in the commands of the card one publishes with the dataset, and a file:// URL kept its
    home directory. Older cards' commands are cleaned at the next refresh too."""
    ray = "python -m corpus.harvest --ray ray://gpu-head-17.corp.example.com:10001 --out /nfs/alice/ds"
    card = write_card(dataset, command=ray)
    assert card.commands == ["python -m corpus.harvest --ray ray://<host>:10001 --out ds"]
    stored = json.loads(Path(dataset, CARD_JSON).read_text())
    stored["commands"] = ["python -m corpus.harvest --ray=ray://10.1.2.3:10001 --out sftp://alice@storage01.lab/x"]
    Path(dataset, CARD_JSON).write_text(json.dumps(stored))  # a card an older version wrote
    card = write_card(dataset, command="python -m corpus.harvest --out file:///home/alice/ds --out s3://team-bucket/ds")
    assert card.commands == [
        "python -m corpus.harvest --ray=ray://<host>:10001 --out sftp://<host>/x",
        "python -m corpus.harvest --out ds --out s3://team-bucket/ds",
    ]
    published = Path(dataset, CARD_MARKDOWN).read_text() + Path(dataset, CARD_JSON).read_text()
    for leak in ("gpu-head-17", "10.1.2.3", "alice", "storage01"):
        assert leak not in published


def test_a_bare_ray_address_on_the_card_names_no_machine() -> None:
    """--ray takes HOST:PORT without a scheme too (ray.init's address); the gap: only URLs with
    a scheme were masked, so the head node's name or IP address stayed on the card."""
    for given, shown in [
        ("python -m corpus.harvest --ray 10.1.2.3:6379 --out ds", "python -m corpus.harvest --ray <host>:6379 --out ds"),
        ("python -m corpus.harvest --ray=gpu-head-17.corp:6379", "python -m corpus.harvest --ray=<host>:6379"),
        ("python -m corpus.harvest --ray --scale tiny", "python -m corpus.harvest --ray --scale tiny"),
        ("python -m corpus.harvest --ray auto --out ds", "python -m corpus.harvest --ray auto --out ds"),
        ("python -m corpus.harvest --ray local", "python -m corpus.harvest --ray local"),
    ]:
        assert publishable_command(given) == shown


def test_card_of_a_version_1_dataset(tmp_path: Path) -> None:
    root = tmp_path / "v1"
    shutil.copytree(FIXTURE, root)
    card = write_card(str(root))
    for name in TABLES:
        assert card.rows[name] == read_table(str(root), name).num_rows, name
    assert card.families == {"add_broadcast": 2, "matmul": 2}
    assert card.statuses == {"ok": 12}


def test_card_statuses_count_each_config_once_as_train_reads_them(dataset: str) -> None:
    """A --budget harvest writes the configs it leaves out as skipped rows; a later harvest
    measures them. The card counted every stored row, so its "Measurement status" kept saying
    skipped for configs measured since; it counts the view train reads (harvests='latest')."""
    budgeted, rerun = budget_then_rerun()
    write_rows(DatasetWriter(dataset), budgeted)
    assert write_card(dataset).statuses["skipped"] == 2
    write_rows(DatasetWriter(dataset), rerun)

    card = write_card(dataset)
    latest = read_table(dataset, "measurements", columns=["status"], harvests="latest")
    assert "skipped" not in card.statuses
    assert card.statuses == dict(Counter(latest.column("status").to_pylist()))
    assert sum(card.statuses.values()) < read_table(dataset, "measurements", harvests="all").num_rows


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
    for option in ("--license", "--title"):  # an empty value used to keep the old one, silently
        with pytest.raises(SystemExit) as stop:
            main(["card", dataset, option, " "])
        assert stop.value.code == 2
        assert f"argument {option}: expected a non-empty value" in capsys.readouterr().err
    assert read_card(dataset).license == "Apache-2.0"


# -- dataset strings are data, never markup -------------------------------------------------

HOSTILE = {
    "family": "x`\n# Heading <img src=x onerror=alert(1)>\n\n---\nlayout: evil",
    "device": "```\n<script>alert(1)</script>",
    "license": "MIT\ndata_files: https://evil.example/x.parquet",
    "title": "<script>alert('t')</script> *bold* [link](https://evil.example)",
    "command": "python -m corpus.harvest\n```\n# pwned\n<iframe src=x>",
}


def _hostile_dataset(root: Path) -> str:
    writer = DatasetWriter(str(root))
    rows = sample_rows(0)
    rows["runs"][0]["family"] = HOSTILE["family"]
    rows["runs"][0]["device_name"] = HOSTILE["device"]
    for table in ("kernels", "ir_graphs", "ir_nodes", "ir_edges", "measurements"):
        writer.write(table, rows[table])
    writer.commit_run(rows["runs"])
    return str(root)


def test_dataset_strings_cannot_inject_markdown_html_or_yaml(tmp_path: Path) -> None:
    import yaml
    from markdown_it import MarkdownIt

    root = _hostile_dataset(tmp_path / "ds")
    card = write_card(root, command=HOSTILE["command"], title=HOSTILE["title"], license=HOSTILE["license"])
    assert card.families == {HOSTILE["family"]: 1}  # the JSON twin keeps the true values
    markdown = (Path(root) / CARD_MARKDOWN).read_text()
    _, front, body = markdown.split("---\n", 2)
    header = yaml.safe_load(front)
    assert set(header) == {"license", "pretty_name", "tags"}  # no injected keys
    assert header["license"] == HOSTILE["license"] and header["pretty_name"] == HOSTILE["title"]

    tokens = MarkdownIt("commonmark").enable("table").parse(body)
    headings = [  # the text each heading shows
        "".join(c.content for c in tokens[i + 1].children if c.type == "text")
        for i, t in enumerate(tokens)
        if t.type == "heading_open"
    ]
    assert headings[0] == HOSTILE["title"]  # shown literally, as the one title
    assert not [h for h in headings if "Heading" in h or "pwned" in h]
    blocks = [t.content.strip() for t in tokens if t.type in ("html_block", "hr")]
    assert blocks == [CARD_MARKER]  # the card's own marker only
    inline_html = [c for t in tokens if t.children for c in t.children if c.type == "html_inline"]
    assert inline_html == []
    links = [c for t in tokens if t.children for c in t.children if c.type in ("link_open", "image")]
    assert links == []
    fences = [t for t in tokens if t.type == "fence" and t.info == "bash"]
    assert len(fences) == 1 and "pwned" in fences[0].content  # the command stays inside
    assert fences[0].content.count("\n") == 1  # one command, one line
    html = MarkdownIt("commonmark").enable("table").render(body)
    for tag in ("<script", "<img", "<iframe", "<h1>Heading"):
        assert tag not in html


def test_malformed_card_json_is_a_clear_error(dataset: str, capsys) -> None:
    write_card(dataset)
    twin = Path(dataset) / CARD_JSON
    data = json.loads(twin.read_text())
    for field, value, expected in (
        ("commands", 5, "field 'commands' must be a list of strings, got 5"),
        ("title", ["x"], "field 'title' must be a string"),
        ("families", {"a": "many"}, "field 'families' must be an object of integer counts"),
    ):
        twin.write_text(json.dumps({**data, field: value}))
        with pytest.raises(CardError, match=re.escape(expected)):
            read_card(dataset)
        assert main(["card", dataset]) == 2
        printed = capsys.readouterr().out
        assert expected in " ".join(printed.split()) and "Traceback" not in printed
    twin.write_text("{not json")
    assert main(["card", dataset]) == 2 and "not JSON" in capsys.readouterr().out
    assert twin.read_text() == "{not json"  # not replaced
    assert main(["card", dataset, "--force"]) == 0
    assert read_card(dataset).rows["runs"] == 3


def test_a_readme_or_card_json_it_did_not_write_is_never_replaced(dataset: str, capsys) -> None:
    readme = Path(dataset) / CARD_MARKDOWN
    readme.write_text("# My project\n\nHand-written.\n")
    with pytest.raises(CardError, match="README.md was not written by kernel-corpus"):
        write_card(dataset)
    assert main(["card", dataset]) == 2 and "not written by kernel-corpus" in capsys.readouterr().out
    assert readme.read_text() == "# My project\n\nHand-written.\n"
    readme.unlink()
    twin = Path(dataset) / CARD_JSON
    twin.write_text('{"name": "some other tool"}')
    with pytest.raises(CardError, match="card.json is not a kernel-corpus dataset card"):
        write_card(dataset)
    assert not readme.exists()
    assert main(["card", dataset, "--force"]) == 0
    assert CARD_MARKER in readme.read_text()
    write_card(dataset)  # its own card is refreshed without being told
