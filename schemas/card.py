"""The dataset card: ``DIR/README.md`` for people (the file dataset hubs show) and
``DIR/card.json``, its twin for machines.

Everything on the card is computed from the committed rows (through the gated reader), except
what the rows cannot know, which is kept in the JSON twin across refreshes: the commands that
produced the dataset (each harvest appends its own when it finishes), the licence and the title.
Commands are stored with absolute paths made relative, like every other text of the dataset.
"""

from __future__ import annotations

import json
import posixpath
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from schemas.errors import DatasetError
from schemas.paths import relative_path, relativize_free_text
from schemas.reader import read_table
from schemas.storage import Location, resolve
from schemas.tables import SCHEMA_VERSION, TABLES

CARD_MARKDOWN = "README.md"
CARD_JSON = "card.json"
CARD_FORMAT = 1
"""Version of the JSON twin's layout."""

DEFAULT_TITLE = "kernel-corpus dataset"
DEFAULT_LICENSE = "other"
"""Unknown until the publisher says (``card --license``): the built-in suite's kernels are part
of kernel-corpus and under its licence; kernels of other suites keep their authors' terms."""
SCHEMA_REFERENCE = (
    "docs/SCHEMA.md of the kernel-corpus repository (`python -m schemas doc` writes it)"
)
BUILTIN_SUITE = "corpus.suite.kernels"

_RUN_COLUMNS = [
    "run_id",
    "harvest_id",
    "family",
    "scale",
    "dtype",
    "device_name",
    "arch",
    "timer",
    "triton_version",
    "torch_version",
    "ir_target",
    "source",
    "started_at",
    "finished_at",
]

_RUN_FACTS = {
    "timers": "timer",
    "scales": "scale",
    "dtypes": "dtype",
    "ir_targets": "ir_target",
    "sources": "source",
    "triton_versions": "triton_version",
    "torch_versions": "torch_version",
}
"""Card attribute -> runs column whose values it counts."""


@dataclass
class Card:
    """What the card says. ``rows``: committed rows per table (content-keyed tables counted
    once per key); the ``Counter``-like dicts map a value to its number of runs (or
    measurements, for ``statuses``)."""

    title: str = DEFAULT_TITLE
    license: str = DEFAULT_LICENSE
    schema_version: int = SCHEMA_VERSION
    schema_reference: str = SCHEMA_REFERENCE
    rows: dict[str, int] = field(default_factory=dict)
    families: dict[str, int] = field(default_factory=dict)
    devices: dict[str, int] = field(default_factory=dict)
    statuses: dict[str, int] = field(default_factory=dict)
    timers: dict[str, int] = field(default_factory=dict)
    scales: dict[str, int] = field(default_factory=dict)
    dtypes: dict[str, int] = field(default_factory=dict)
    ir_targets: dict[str, int] = field(default_factory=dict)
    sources: dict[str, int] = field(default_factory=dict)
    triton_versions: dict[str, int] = field(default_factory=dict)
    torch_versions: dict[str, int] = field(default_factory=dict)
    suites: dict[str, int] = field(default_factory=dict)
    """Suite module -> kernels from it."""
    harvests: int = 0
    first_started_at: str | None = None
    last_finished_at: str | None = None
    commands: list[str] = field(default_factory=list)
    updated_at: str | None = None
    card_format: int = CARD_FORMAT

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"


def build_card(url: str, *, previous: Card | None = None) -> Card:
    """The card of the dataset at ``url``, keeping title, licence and commands of
    ``previous``. Raises :class:`DatasetError` when the dataset has no ``runs`` table."""
    card = Card()
    if previous is not None:
        card.title, card.license, card.commands = (
            previous.title,
            previous.license,
            list(previous.commands),
        )
    loc = resolve(url)
    if not _has_table(loc, "runs"):
        raise DatasetError(f"{url}: no runs table; is this a kernel-corpus dataset root?")
    for name, spec in TABLES.items():
        if _has_table(loc, name):
            card.rows[name] = read_table(url, name, columns=list(spec.key)).num_rows
    runs = read_table(url, "runs", columns=_RUN_COLUMNS)
    card.families = _counts(runs, "family")
    card.devices = _counts_of(
        f"{n} ({a})" for n, a in zip(runs["device_name"].to_pylist(), runs["arch"].to_pylist())
    )
    for attribute, column in _RUN_FACTS.items():
        setattr(card, attribute, _counts(runs, column))
    card.harvests = len(pc.unique(runs["harvest_id"])) if runs.num_rows else 0
    card.first_started_at = _iso(pc.min(runs["started_at"]).as_py()) if runs.num_rows else None
    card.last_finished_at = _iso(pc.max(runs["finished_at"]).as_py()) if runs.num_rows else None
    if _has_table(loc, "measurements"):
        card.statuses = _counts(read_table(url, "measurements", columns=["status"]), "status")
    if _has_table(loc, "kernels"):
        card.suites = _counts(read_table(url, "kernels", columns=["suite"]), "suite")
    card.updated_at = _iso(datetime.now(timezone.utc))
    return card


def write_card(
    url: str, *, command: str | None = None, title: str | None = None, license: str | None = None
) -> Card:
    """Write (or refresh) ``README.md`` and ``card.json`` at the root of the dataset at
    ``url``; returns the card. ``command``: the command line that just added to the dataset,
    appended to the card's list (absolute paths made relative). ``title``/``license``
    replace the card's (kept from the previous card otherwise). Each file appears by atomic
    rename."""
    loc = resolve(url)
    previous = read_card(url)
    card = build_card(url, previous=previous)
    if title:
        card.title = title
    if license:
        card.license = license
    if command:
        cleaned = relativize_free_text(command, relative_path)
        if not card.commands or card.commands[-1] != cleaned:
            card.commands.append(cleaned)
    _write_text(loc, CARD_JSON, card.to_json())
    _write_text(loc, CARD_MARKDOWN, render_markdown(card))
    return card


def read_card(url: str) -> Card | None:
    """The JSON twin at ``url``'s root, or None when there is none (or it is unreadable)."""
    loc = resolve(url)
    path = posixpath.join(loc.root, CARD_JSON)
    try:
        with loc.fs.open_input_stream(path) as handle:
            data = json.loads(handle.read().decode())
    except (OSError, ValueError):
        return None
    known = set(Card.__dataclass_fields__)
    return Card(**{k: v for k, v in data.items() if k in known})


def render_markdown(card: Card) -> str:
    """The card as Markdown with a YAML header (the form dataset hubs read)."""
    lines = [
        "---",
        f"license: {card.license}",
        f"pretty_name: {json.dumps(card.title)}",
        "tags: [triton, gpu-kernels, autotuning, cost-model, compiler-ir]",
        "---",
        "",
        f"# {card.title}",
        "",
        "Per-configuration autotuning outcomes of Triton GPU kernels, with the compiled device IR "
        "(TTIR, TTGIR) of every variant as a graph, written by "
        "kernel-corpus for training learned cost models. Every "
        "configuration of every run is a row in `measurements` (failures included, with their "
        "status); `runs` holds the problem, the device and the toolchain; `ir_graphs`, "
        "`ir_nodes` and `ir_edges` hold the IR graphs; `kernels` the kernel sources.",
        "",
        "## Contents",
        "",
        "| table | rows |",
        "| --- | ---: |",
        *(f"| `{name}` | {count:,} |" for name, count in card.rows.items()),
        "",
        f"Families ({len(card.families)}): " + _inline(card.families),
        "",
        "Devices: " + _inline(card.devices),
        "",
        "Measurement status: " + _inline(card.statuses),
        "",
        "## How it was produced",
        "",
        f"- harvests: {card.harvests}, from {card.first_started_at or '?'} to {card.last_finished_at or '?'}",
        "- Triton: " + _inline(card.triton_versions) + "; torch: " + _inline(card.torch_versions),
        "- timers: " + _inline(card.timers) + " (latencies on the `interpreter` device time "
        "Triton's CPU interpreter: they rank configs on that path only and say nothing about GPUs)",
        "- scales: " + _inline(card.scales) + "; dtypes: " + _inline(card.dtypes),
        "- IR compiled for: " + _inline(card.ir_targets),
        "- sources of rows: " + _inline(card.sources),
        "",
        "Commands:",
        "",
        "```bash",
        *(card.commands or ["# not recorded (written before the card existed, or by other tools)"]),
        "```",
        "",
        "## Schema",
        "",
        f"Schema version {card.schema_version}. Field reference: {card.schema_reference}. Every "
        "file carries its version in its footer (`kernel_corpus.schema_version`); the "
        "kernel-corpus reader lifts older versions and refuses newer ones.",
        "",
        "## Loading",
        "",
        "From the dataset's directory, with kernel-corpus (`schemas` needs only pyarrow): "
        "committed runs only, repeats kept apart by `harvest_id`, older versions lifted:",
        "",
        "```python",
        "from schemas import read_table, scan_table",
        'ok = read_table(".", "measurements", filters=[("status", "=", "ok")])  # pyarrow.Table',
        'runs = scan_table(".", "runs")                                        # polars.LazyFrame',
        "```",
        "",
        "Plain pyarrow, polars or duckdb read the files directly (the partition columns are inside "
        "the files; these see measurements of uncommitted runs too, so join on `runs`, and they "
        "need the files of one table to share one schema version):",
        "",
        "```python",
        "import pyarrow.dataset as ds",
        'measurements = ds.dataset("measurements", format="parquet").to_table()',
        "import polars as pl",
        'runs = pl.scan_parquet("runs/**/*.parquet")',
        "import duckdb",
        "duckdb.sql(\"select family, count(*) from 'runs/**/*.parquet' group by family\")",
        "```",
        "",
        "Training a cost model on it with kernel-corpus's `train` package: `python -m train --data . "
        "--out results` (GNN and baselines, metrics and report), or "
        '`train.tables.load_samples(".")` for one row per measurement joined with its run and '
        "IR summary.",
        "",
        "## Kernels and licence",
        "",
        "Kernel sources are stored in `kernels` (`source`, `source_path` relative to the package "
        "root). Suites: " + _inline(card.suites) + ".",
        "",
        f"Licence: `{card.license}`. "
        + (
            f"Kernels of `{BUILTIN_SUITE}` were written for kernel-corpus and are under its licence. "
            if any(
                suite == BUILTIN_SUITE or suite.startswith(BUILTIN_SUITE + ".")
                for suite in card.suites
            )
            else ""
        )
        + "Kernels of other suites keep their authors' terms.",
        "",
        "## Privacy",
        "",
        "Rows carry no absolute paths of the harvesting machines (IR locations are relative to the "
        "package root) and `runs.hostname` holds an anonymous id per machine unless the harvest "
        "was run with `--record-host`. `python -m schemas check` warns about anything left; "
        "`python -m schemas scrub` rewrites datasets written before.",
        "",
        f"_Card generated by `python -m schemas card` at {card.updated_at}._",
        "",
    ]
    return "\n".join(lines)


def _has_table(loc: Location, name: str) -> bool:
    return loc.fs.get_file_info(loc.table_dir(name)).type == pafs.FileType.Directory


def _counts(table: pa.Table, column: str) -> dict[str, int]:
    if column not in table.column_names:
        return {}
    return _counts_of(table[column].to_pylist())


def _counts_of(values: Iterable[Any]) -> dict[str, int]:
    counts = Counter("unknown" if v is None else str(v) for v in values)
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def _inline(counts: dict[str, int]) -> str:
    return ", ".join(f"`{k}` ({v:,})" for k, v in counts.items()) or "none"


def _iso(value: datetime | None) -> str | None:
    return (
        value.astimezone(timezone.utc).isoformat(timespec="seconds") if value is not None else None
    )


def _write_text(loc: Location, name: str, text: str) -> None:
    """``name`` at the dataset root, appearing whole by rename from a hidden temporary."""
    final = posixpath.join(loc.root, name)
    temporary = posixpath.join(loc.root, f".tmp-{uuid.uuid4().hex}-{name}")
    with loc.fs.open_output_stream(temporary) as handle:
        handle.write(text.encode())
    loc.fs.move(temporary, final)
