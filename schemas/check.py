"""Dataset validation: the checks behind ``python -m schemas check DIR``."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from schemas.errors import DatasetError
from schemas.reader import COMMIT_KEY, CONTENT_KEYED, only_committed, read_table, table_files
from schemas.storage import list_parquet, read_file, resolve
from schemas.tables import TABLES


@dataclass
class CheckReport:
    """Problems (make the check fail), warnings (benign states) and summary figures."""

    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    files: dict[str, int] = field(default_factory=dict)
    facts: dict[str, object] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems


def check_dataset(url: str) -> CheckReport:
    """Validate every file, version, key and join of the dataset at ``url``."""
    report = CheckReport()
    loc = resolve(url)
    readable: set[str] = set()
    for name in TABLES:
        try:
            files = list_parquet(loc, name)
        except DatasetError as exc:
            report.problems.append(str(exc))
            continue
        report.files[name] = len(files)
        for path in files:
            try:
                read_file(loc, path)
            except DatasetError as exc:
                report.problems.append(str(exc))
                break
        else:
            readable.add(name)
    tables: dict[str, pa.Table] = {}
    for name in readable:
        try:
            found = table_files(loc, name)
            if found.superseded:
                report.warnings.append(
                    f"{name}: {len(found.superseded)} file(s) superseded by compaction still present "
                    "(ignored by readers; `compact` removes them)"
                )
            tables[name] = read_table(url, name, committed_only=False) if name not in CONTENT_KEYED else _raw(url, name)
        except DatasetError as exc:
            report.problems.append(str(exc))
    for name, table in tables.items():
        report.rows[name] = table.num_rows
    _check_keys(tables, report)
    _check_joins(tables, report)
    _summarize(tables, report)
    return report


def _raw(url: str, name: str) -> pa.Table:
    """Content-keyed table without deduplication, so copies can be counted."""
    from schemas.reader import _read_files

    loc = resolve(url)
    return _read_files(loc, name, table_files(loc, name), None, None)


def _duplicates(table: pa.Table, key: list[str]) -> int:
    if table.num_rows == 0:
        return 0
    distinct = table.select(key).group_by(key).aggregate([]).num_rows
    return table.num_rows - distinct


def _check_keys(tables: dict[str, pa.Table], report: CheckReport) -> None:
    for name, table in tables.items():
        key = list(TABLES[name].key)
        copies = _duplicates(table, key)
        if not copies:
            continue
        message = f"{name}: {copies} row(s) repeat a key ({', '.join(key)})"
        if name in CONTENT_KEYED:
            report.warnings.append(message + " — identical content written twice; readers dedupe, `compact` removes")
        else:
            report.problems.append(message)


def _missing(child: pa.Array, parent: pa.Array) -> int:
    present = child.drop_null() if hasattr(child, "drop_null") else child
    return int(pc.sum(pc.invert(pc.is_in(present, value_set=pc.unique(parent)))).as_py() or 0)


def _check_joins(tables: dict[str, pa.Table], report: CheckReport) -> None:
    runs, measurements = tables.get("runs"), tables.get("measurements")
    if runs is not None and measurements is not None:
        committed = only_committed(measurements, runs)
        uncommitted = measurements.num_rows - committed.num_rows
        if uncommitted:
            report.warnings.append(
                f"measurements: {uncommitted} row(s) of uncommitted runs (an interrupted harvest; "
                "readers ignore them and resume redoes those runs)"
            )
        counts = committed.group_by(list(COMMIT_KEY)).aggregate([("config_id", "count")])
        joined = runs.select([*COMMIT_KEY, "n_configs"]).join(counts, keys=list(COMMIT_KEY), join_type="left outer")
        expected = joined.column("n_configs").fill_null(0)
        actual = joined.column("config_id_count").fill_null(0)
        short = int(pc.sum(pc.not_equal(expected, actual)).as_py() or 0)
        if short:
            report.problems.append(f"runs: {short} committed run(s) whose n_configs differs from their measurement rows")
        measurements = committed
    if measurements is not None and "ir_graphs" in tables:
        graphs = tables["ir_graphs"].column("ir_id")
        for column in ("ttir_id", "ttgir_id"):
            missing = _missing(measurements.column(column), graphs)
            if missing:
                report.problems.append(f"measurements: {missing} {column} value(s) not in ir_graphs")
    if runs is not None and "kernels" in tables:
        missing = _missing(runs.column("kernel_id"), tables["kernels"].column("kernel_id"))
        if missing:
            report.problems.append(f"runs: {missing} kernel_id value(s) not in kernels")
    if "ir_graphs" in tables:
        graphs = tables["ir_graphs"].column("ir_id")
        for child in ("ir_nodes", "ir_edges"):
            if child in tables:
                missing = _missing(tables[child].column("ir_id"), graphs)
                if missing:
                    report.problems.append(f"{child}: {missing} row(s) whose ir_id is not in ir_graphs")


def _summarize(tables: dict[str, pa.Table], report: CheckReport) -> None:
    if "kernels" in tables:
        report.facts["kernels"] = len(pc.unique(tables["kernels"].column("kernel_id")))
    if "runs" in tables:
        runs = tables["runs"]
        report.facts["runs"] = runs.num_rows
        report.facts["harvests"] = len(pc.unique(runs.column("harvest_id")))
        report.facts["devices"] = dict(Counter(f"{n} ({a})" for n, a in zip(runs.column("device_name").to_pylist(), runs.column("arch").to_pylist())))
    if "measurements" in tables:
        report.facts["statuses"] = dict(Counter(tables["measurements"].column("status").to_pylist()))
    if "ir_graphs" in tables:
        report.facts["ir_graphs"] = dict(Counter(tables["ir_graphs"].column("level").to_pylist()))
