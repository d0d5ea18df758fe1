"""Import Helion's autotune log: ``LOG.csv`` and its ``LOG.meta.jsonl`` sidecar.

Formats read (:data:`CSV_LAYOUTS`, chosen by the header):

- ``config_id`` layout: ``run_id, timestamp_s, config_id, generation, status, perf_ms,
  compile_time_s, config``;
- ``sample_id`` layout (earlier Helion): ``run_id, kernel_id, sample_id, timestamp_s,
  config_index, generation, status, perf_ms, compile_time_s, decorator, config``.

A config has a ``started`` row and then a terminal row (``ok``, ``error``, ``timeout``, ...);
the terminal row counts. The sidecar holds one JSON record per Helion run: ``run_id``,
``kernel_name``, ``kernel_source``, ``input_shapes``, ``dtypes``, ``hardware_info``
(device kind/name/compute capability, versions, device properties), ``settings``, optionally
``configs`` by config_id, and ``ir_graph`` (see :mod:`corpus.ingest.helion_graph`). Helion's
``run_id`` and config ids are kept as ``source_ref``; ours are derived as everywhere else.
"""

from __future__ import annotations

import ast
import csv
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corpus.harvest.device import DeviceFacts
from corpus.ingest.helion_graph import HelionGraphError, helion_graph
from corpus.ingest.problems import IngestError, Problems
from corpus.ingest.rows import ImportedConfig, ImportedRun
from corpus.suite.spec import Config
from schemas.enums import Source, Status

CSV_LAYOUTS: dict[str, tuple[str, ...]] = {
    "config_id": ("run_id", "timestamp_s", "config_id", "generation", "status", "perf_ms", "compile_time_s", "config"),
    "sample_id": ("run_id", "kernel_id", "sample_id", "timestamp_s", "config_index", "generation", "status",
                  "perf_ms", "compile_time_s", "decorator", "config"),
}  # fmt: skip
STATUSES: dict[str, str] = {
    "ok": Status.OK.value,
    "deduplicated": Status.OK.value,
    "error": Status.COMPILE_ERROR.value,
    "compile_error": Status.COMPILE_ERROR.value,
    "peer_compilation_fail": Status.COMPILE_ERROR.value,
    "timeout": Status.TIMEOUT.value,
    "accuracy_fail": Status.MISMATCH.value,
    "runtime_error": Status.RUNTIME_ERROR.value,
}
"""Helion's terminal statuses and ours ('started' is not terminal)."""
STARTED = "started"
_OPTIONS = ("num_warps", "num_stages", "maxnreg")


@dataclass(frozen=True)
class HelionRow:
    line: int
    run_id: str
    config_ref: str
    status: str
    perf_ms: float | None
    compile_time_s: float | None
    config_text: str


def parse_config(text: str) -> Config:
    """``Config(block_sizes=[64, 32], num_warps=4, ...)`` (or ``helion.Config(...)``) as a
    :class:`Config`: list values flattened to ``name.i`` meta-parameters, num_warps /
    num_stages / maxnreg as the compile options."""
    expression = ast.parse(text.strip(), mode="eval").body
    if not isinstance(expression, ast.Call) or expression.args:
        raise ValueError(f"not a Helion Config(...) text: {text!r}")
    values = {
        kw.arg: ast.literal_eval(kw.value) for kw in expression.keywords if kw.arg is not None
    }
    missing = [name for name in ("num_warps", "num_stages") if name not in values]
    if missing:
        raise ValueError(f"config lacks {', '.join(missing)}: {text!r}")
    kwargs: dict[str, Any] = {}
    for name, value in sorted(values.items()):
        if name in _OPTIONS:
            continue
        if isinstance(value, (list, tuple)):
            kwargs.update({f"{name}.{i}": item for i, item in enumerate(value)})
        else:
            kwargs[name] = value
    return Config(
        kwargs=kwargs,
        num_warps=int(values["num_warps"]),
        num_stages=int(values["num_stages"]),
        maxnreg=values.get("maxnreg"),
    )


def _float(text: str) -> float | None:
    return float(text) if text.strip() else None


def read_rows(path: Path, problems: Problems) -> Iterator[HelionRow]:
    """The CSV's rows, validated; refused ones go to ``problems``."""
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        header = tuple(next(reader, ()))
        layout = next((name for name, columns in CSV_LAYOUTS.items() if header == columns), None)
        if layout is None:
            known = "; ".join(",".join(columns) for columns in CSV_LAYOUTS.values())
            # nothing in the file can be read: an error whatever --strict says
            raise IngestError(
                f"{path}:1: unknown Helion CSV header {','.join(header)!r}; known layouts: {known}"
            )
        for values in reader:
            line = reader.line_num
            if len(values) != len(header):
                problems.report(path, line, f"{len(values)} fields, the header has {len(header)}")
                continue
            row = dict(zip(header, values))
            if row["status"] != STARTED and row["status"] not in STATUSES:
                problems.report(path, line, f"unknown Helion status {row['status']!r}")
                continue
            try:
                yield HelionRow(
                    line=line,
                    run_id=row["run_id"],
                    config_ref=row["config_id"] if layout == "config_id" else row["sample_id"],
                    status=row["status"],
                    perf_ms=_float(row["perf_ms"]),
                    compile_time_s=_float(row["compile_time_s"]),
                    config_text=row["config"],
                )
            except ValueError as exc:
                problems.report(path, line, f"bad number ({exc})")


def read_meta(path: Path, problems: Problems) -> dict[str, dict[str, Any]]:
    """Sidecar records by Helion run_id."""
    records: dict[str, dict[str, Any]] = {}
    with path.open(encoding="utf-8") as handle:
        for line, text in enumerate(handle, 1):
            if not text.strip():
                continue
            try:
                record = json.loads(text)
                records[str(record["run_id"])] = record
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                problems.report(
                    path, line, f"not a Helion metadata record ({type(exc).__name__}: {exc})"
                )
    return records


def _device(hardware: Mapping[str, Any]) -> tuple[DeviceFacts, str]:
    props = hardware.get("device_props") or {}
    capability = hardware.get("compute_capability")
    kind = str(hardware.get("device_kind") or "unknown")
    arch = f"sm_{str(capability).replace('.', '')}" if kind == "cuda" and capability else kind
    facts = DeviceFacts(
        device_kind=kind,
        arch=arch,
        device_name=hardware.get("device_name"),  # type: ignore[arg-type]
        compute_capability=capability,
        sm_count=props.get("multi_processor_count"),
        l2_bytes=props.get("L2_cache_size"),
        smem_per_block_bytes=props.get("shared_memory_per_block_optin"),
        total_memory_bytes=props.get("total_memory"),
        cuda_version=(hardware.get("versions") or {}).get("cuda"),
    )
    return facts, facts.model


def _dims(input_shapes: str) -> dict[str, int]:
    """``"[(1024, 512)]"`` -> ``{"arg0.0": 1024, "arg0.1": 512}`` (Helion logs no names)."""
    try:
        shapes = ast.literal_eval(input_shapes)
    except (ValueError, SyntaxError):
        return {}
    dims = {}
    for index, shape in enumerate(shapes if isinstance(shapes, (list, tuple)) else []):
        for axis, size in enumerate(shape if isinstance(shape, (list, tuple)) else []):
            if isinstance(size, int):
                dims[f"arg{index}.{axis}"] = size
    return dims


def _terminal(rows: list[HelionRow]) -> dict[str, HelionRow]:
    """The last row of each config (its terminal one, else its 'started' row)."""
    last: dict[str, HelionRow] = {}
    for row in rows:
        if row.status != STARTED or row.config_ref not in last:
            last[row.config_ref] = row
    return last


def _config(row: HelionRow, path: Path, problems: Problems) -> ImportedConfig | None:
    if row.status == STARTED:
        status, error = (
            Status.RUNTIME_ERROR.value,
            "Helion logged the config as started and nothing after",
        )
    else:  # read_rows let only known statuses through
        status = STATUSES[row.status]
        error = None if row.status == "ok" else f"Helion status {row.status}"
    if status == Status.OK.value and (row.perf_ms is None or not math.isfinite(row.perf_ms)):
        problems.report(path, row.line, f"status {row.status} without perf_ms")
        return None
    try:
        config = parse_config(row.config_text)
    except (ValueError, SyntaxError) as exc:
        problems.report(path, row.line, f"unreadable config ({exc})")
        return None
    return ImportedConfig(
        config=config,
        status=status,
        error=error,
        timing_ms={"median_ms": row.perf_ms} if status == Status.OK.value else {},
        compile_time_s=row.compile_time_s,
        launch=f"helion.{row.config_text.strip()}"
        if not row.config_text.startswith("helion.")
        else row.config_text,
        source_ref=row.config_ref,
    )


def helion_runs(csv_path: Path, meta_path: Path | None, problems: Problems) -> list[ImportedRun]:
    """One :class:`ImportedRun` per Helion run id that has a metadata record."""
    meta_path = meta_path or csv_path.with_suffix(".meta.jsonl")
    if not meta_path.is_file():
        raise FileNotFoundError(f"no Helion metadata sidecar {meta_path} (give --meta)")
    meta = read_meta(meta_path, problems)
    by_run: dict[str, list[HelionRow]] = {}
    for row in read_rows(csv_path, problems):
        by_run.setdefault(row.run_id, []).append(row)
    runs = []
    for helion_id, rows in by_run.items():
        record = meta.get(helion_id)
        if record is None:
            problems.report(
                csv_path, rows[0].line, f"run_id {helion_id} has no record in {meta_path.name}"
            )
            continue
        configs = [
            c
            for row in _terminal(rows).values()
            if (c := _config(row, csv_path, problems)) is not None
        ]
        facts, model = _device(record.get("hardware_info") or {})
        versions = dict((record.get("hardware_info") or {}).get("versions") or {})
        graphs, device_ir = {}, None
        if record.get("ir_graph"):
            try:
                graph = helion_graph(
                    record["ir_graph"],
                    entry_name=record["kernel_name"],
                    target=facts.arch,
                    triton_version=versions.get("triton", ""),
                )
                graphs, device_ir = {graph.ir_id: graph.to_arrow()}, graph.ir_id
            except HelionGraphError as exc:
                problems.report(meta_path, None, f"ir_graph of run {helion_id}: {exc}")
        runs.append(
            ImportedRun(
                kernel_source=str(record["kernel_source"]),
                entry_name=str(record["kernel_name"]),
                signature=_signature(record),
                dims=_dims(str(record.get("input_shapes", ""))),
                dtype=_first_dtype(record.get("dtypes")),
                facts=facts,
                device_model=model,
                toolchain={
                    "helion": versions.get("helion"),
                    "triton": versions.get("triton"),
                    "torch": versions.get("torch"),
                },
                versions=versions,
                source=Source.HELION.value,
                source_ref=helion_id,
                configs=tuple(configs),
                ir_target=facts.arch if facts.arch.startswith("sm_") else None,
                device_ir_id=device_ir,
                graphs=graphs,
            )
        )
    return runs


_TORCH_TO_TRITON = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64",
                    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "bool": "i1"}  # fmt: skip


def _signature(record: Mapping[str, Any]) -> dict[str, Any]:
    """What run_id hashes: the kernel, its tensor arguments (Helion logs shapes and dtypes in
    order, without names) and the codegen settings."""
    try:
        shapes = ast.literal_eval(str(record.get("input_shapes")))
        dtypes = ast.literal_eval(str(record.get("dtypes")))
    except (ValueError, SyntaxError):
        shapes, dtypes = [], []
    args = []
    for index, shape in enumerate(shapes if isinstance(shapes, (list, tuple)) else []):
        dtype = str(dtypes[index]).removeprefix("torch.") if index < len(dtypes) else "?"
        args.append(
            {
                "name": f"arg{index}",
                "type": "*" + _TORCH_TO_TRITON.get(dtype, dtype),
                "shape": list(shape),
            }
        )
    return {"kernel": record.get("kernel_name"), "args": args, "settings": record.get("settings")}


def _first_dtype(dtypes: Any) -> str | None:
    try:
        values = ast.literal_eval(str(dtypes))
    except (ValueError, SyntaxError):
        return None
    first = values[0] if isinstance(values, (list, tuple)) and values else None
    return str(first).removeprefix("torch.") if first is not None else None
