"""Import Helion's autotune log: ``LOG.csv``, its ``LOG.meta.jsonl`` sidecar and, where
Helion wrote one, ``LOG.sources.csv``.

Formats read (:data:`CSV_LAYOUTS`, chosen by the header), as Helion's own ``AutotuneLogSink``
writes them with ``HELION_AUTOTUNE_LOG=BASE`` and ``HELION_AUTOTUNE_LOG_DETAILS=1``:

- ``config_id`` layout (Helion 1.2 to 1.5): ``run_id, timestamp_s, config_id, generation,
  status, perf_ms, compile_time_s, config``. The file is appended to, so one CSV may hold many
  tunings, the same Helion run_id more than once (the same kernel, shapes and hardware tuned
  again); each tuning's rows are contiguous, with ``timestamp_s`` counted from its start, and
  its ``.meta.jsonl`` record is appended when it ends, so the k-th tuning of a run_id belongs to
  the k-th record of that run_id;
- ``sample_id`` layout (the draft of pytorch/helion#2737): ``run_id, kernel_id, sample_id,
  timestamp_s, config_index, generation, status, perf_ms, compile_time_s, decorator, config``.

A config has a ``started`` row and then a terminal row (``ok``, ``error``, ``deduplicated``,
...; a config rejected before it ran has only the terminal row); the last terminal row counts
(a config re-timed in a later generation keeps its latest timing), and a ``started`` row with
nothing after it becomes ``runtime_error`` (the tuning died on it). ``generation`` is checked
to be an integer and not stored (the tables have no search-order column).

The sidecar holds one record per tuning: ``run_id``, ``kernel_name``, ``kernel_source``,
``input_shapes``, ``dtypes``, ``hardware`` (the device name Helion's ``get_device_name``
returns; empty when no accelerator was present, so its Triton code ran on Triton's
interpreter), ``settings`` (all 60-odd of Helion's settings), ``configs`` by config_id (the
exact config dicts, preferred to the CSV's ``Config(...)`` text) and ``ir_graph`` (see
:mod:`corpus.ingest.helion_graph`). The draft's ``hardware_info`` dict (device kind, name,
compute capability, versions, device properties) is read where present.

Our ``run_id`` hashes what Helion's own run_id hashes (:data:`CODEGEN_SETTINGS`, the settings
that change the generated code; never the log path, function reprs with memory addresses or
the random seed), so logging the same thing twice gives the same run_id. Helion's run_id is
kept as ``runs.source_ref`` and its config_id as ``measurements.source_ref``.

``LOG.sources.csv`` (``run_id, timestamp_s, config_id, generation, status, source_hash``;
Helion writes it for backends that deduplicate generated code) maps configs to the hash of
their generated source: a ``deduplicated`` config, never timed itself, gets
``same_binary_as`` = the config of the same source that was timed, and its timing.
"""

from __future__ import annotations

import ast
import csv
import json
import math
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from corpus.harvest.device import DeviceFacts
from corpus.ingest.helion_graph import HelionGraphError, helion_graph
from corpus.ingest.problems import IngestError, Problems
from corpus.ingest.rows import ImportedConfig, ImportedRun
from corpus.suite.spec import Config
from schemas.enums import DEVICE_INTERPRETER, Source, Status

CSV_LAYOUTS: dict[str, tuple[str, ...]] = {
    "config_id": ("run_id", "timestamp_s", "config_id", "generation", "status", "perf_ms", "compile_time_s", "config"),
    "sample_id": ("run_id", "kernel_id", "sample_id", "timestamp_s", "config_index", "generation", "status",
                  "perf_ms", "compile_time_s", "decorator", "config"),
}  # fmt: skip
SOURCES_LAYOUT = ("run_id", "timestamp_s", "config_id", "generation", "status", "source_hash")
"""Header of Helion's ``.sources.csv`` (``_AUTOTUNE_SOURCE_CSV_FIELDS`` in Helion 1.5)."""
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
DEDUPLICATED = "deduplicated"
CODEGEN_SETTINGS: tuple[str, ...] = (
    "allow_warp_specialize", "backend", "debug_dtype_asserts", "dot_precision", "fast_math",
    "index_dtype", "pallas_collective_id", "pallas_interpret", "pallas_topk_recall_target",
    "persistent_reserved_sms", "static_shapes", "triton_do_not_specialize",
)  # fmt: skip
"""The settings Helion hashes into its run_id (``_CODEGEN_SETTINGS`` of
``helion/autotuner/metrics.py``, Helion 1.5.1): the ones that change the generated code.
Missing keys hash as null, as in Helion."""
DEFAULT_NUM_WARPS = 4
DEFAULT_NUM_STAGES = 1
"""Helion's defaults for a config that does not set them (``helion.autotuner.config_spec``)."""
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
    timestamp_s: float | None = None
    """Seconds since the tuning started (Helion's ``timestamp_s``)."""


def config_from_dict(values: Mapping[str, Any]) -> Config:
    """A Helion config dict (``Config.config``) as a :class:`Config`: list values flattened to
    ``name.i`` meta-parameters, num_warps / num_stages / maxnreg as the compile options
    (Helion's defaults where absent)."""
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
        num_warps=int(values.get("num_warps", DEFAULT_NUM_WARPS)),
        num_stages=int(values.get("num_stages", DEFAULT_NUM_STAGES)),
        maxnreg=values.get("maxnreg"),
    )


def parse_config(text: str) -> Config:
    """``Config(block_sizes=[64, 32], num_warps=4, ...)`` (or ``helion.Config(...)``), the
    CSV's text of a config, as a :class:`Config` (see :func:`config_from_dict`)."""
    try:
        expression = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        expression = None
    if not isinstance(expression, ast.Call) or expression.args:
        raise ValueError(f"not a Helion Config(...) text: {text!r}")
    return config_from_dict(
        {kw.arg: ast.literal_eval(kw.value) for kw in expression.keywords if kw.arg is not None}
    )


def _float(text: str) -> float | None:
    return float(text) if text.strip() else None


def _csv_rows(path: Path, layouts: Mapping[str, tuple[str, ...]]) -> Iterator[tuple[str, int, dict[str, str] | str]]:
    """(layout, line, row) of a CSV whose header is one of ``layouts``; a row with the wrong
    number of fields comes as the reason text instead of a dict."""
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        header = tuple(next(reader, ()))
        layout = next((name for name, columns in layouts.items() if header == columns), None)
        if layout is None:
            known = "; ".join(",".join(columns) for columns in layouts.values())
            # A first line as wide as a known header is most likely a row: the log lost its
            # start (trimmed with tail, or a rotated copy); the user should find the full log.
            cut = (
                "; it looks like a row of the log, not its header: was the log cut at its start? "
                "Give the complete log Helion wrote (it begins with the header)"
                if len(header) in {len(columns) for columns in layouts.values()}
                else ""
            )
            # nothing in the file can be read: an error whatever --strict says
            raise IngestError(
                f"{path}:1: unknown Helion CSV header {','.join(header)!r}; known layouts: {known}{cut}"
            )
        for values in reader:
            if len(values) != len(header):
                yield layout, reader.line_num, f"{len(values)} fields, the header has {len(header)}"
            else:
                yield layout, reader.line_num, dict(zip(header, values))


def read_rows(path: Path, problems: Problems) -> Iterator[HelionRow]:
    """The CSV's rows, validated; refused ones go to ``problems``."""
    for layout, line, row in _csv_rows(path, CSV_LAYOUTS):
        if isinstance(row, str):
            problems.report(path, line, row)
            continue
        if row["status"] != STARTED and row["status"] not in STATUSES:
            problems.report(path, line, f"unknown Helion status {row['status']!r}")
            continue
        try:
            int(row["generation"])
            yield HelionRow(
                line=line,
                run_id=row["run_id"],
                config_ref=row["config_id"] if layout == "config_id" else row["sample_id"],
                status=row["status"],
                perf_ms=_float(row["perf_ms"]),
                compile_time_s=_float(row["compile_time_s"]),
                config_text=row["config"],
                timestamp_s=_float(row["timestamp_s"]),
            )
        except ValueError as exc:
            problems.report(path, line, f"bad number ({exc})")


def read_sources(path: Path, problems: Problems) -> dict[tuple[str, str], str]:
    """``.sources.csv``: (Helion run_id, config_id) -> hash of the config's generated source."""
    hashes: dict[tuple[str, str], str] = {}
    for _, line, row in _csv_rows(path, {"sources": SOURCES_LAYOUT}):
        if isinstance(row, str):
            problems.report(path, line, row)
        elif row["source_hash"]:
            hashes[(row["run_id"], row["config_id"])] = row["source_hash"]
    return hashes


def read_meta(path: Path, problems: Problems) -> dict[str, list[dict[str, Any]]]:
    """Sidecar records by Helion run_id, in file order (a run_id tuned twice has two)."""
    records: dict[str, list[dict[str, Any]]] = defaultdict(list)
    with path.open(encoding="utf-8") as handle:
        for line, text in enumerate(handle, 1):
            if not text.strip():
                continue
            try:
                record = json.loads(text)
                records[str(record["run_id"])].append(record)
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                problems.report(
                    path, line, f"not a Helion metadata record ({type(exc).__name__}: {exc})"
                )
    return records


def _device(record: Mapping[str, Any]) -> tuple[DeviceFacts, str, dict[str, str]]:
    """(facts, the device part of run_id, versions) from ``hardware`` (Helion 1.2+: the device
    name, empty without an accelerator) or the draft's ``hardware_info``."""
    info = record.get("hardware_info")
    if isinstance(info, Mapping):
        return _draft_device(info)
    name = str(record.get("hardware") or "").strip()
    if not name:  # Helion found no accelerator: its Triton code ran on Triton's interpreter
        facts = DeviceFacts(
            device_kind=DEVICE_INTERPRETER, arch=DEVICE_INTERPRETER, device_name="Triton interpreter"
        )
        return facts, DEVICE_INTERPRETER, {}
    # ROCm names end in the gfx arch ('AMD Instinct MI300X gfx942'); CUDA names carry no
    # compute capability, and Helion's record holds none: arch stays 'unknown'.
    last = name.rsplit(" ", 1)[-1]
    kind, arch = ("hip", last.split(":")[0]) if last.startswith("gfx") else ("cuda", "unknown")
    return DeviceFacts(device_kind=kind, arch=arch, device_name=name), name, {}


def _draft_device(hardware: Mapping[str, Any]) -> tuple[DeviceFacts, str, dict[str, str]]:
    props = hardware.get("device_props") or {}
    capability = hardware.get("compute_capability")
    kind = str(hardware.get("device_kind") or "unknown")
    arch = f"sm_{str(capability).replace('.', '')}" if kind == "cuda" and capability else kind
    versions = {k: str(v) for k, v in (hardware.get("versions") or {}).items() if v is not None}
    facts = DeviceFacts(
        device_kind=kind,
        arch=arch,
        device_name=hardware.get("device_name"),  # type: ignore[arg-type]
        compute_capability=capability,
        sm_count=props.get("multi_processor_count"),
        l2_bytes=props.get("L2_cache_size"),
        smem_per_block_bytes=props.get("shared_memory_per_block_optin"),
        total_memory_bytes=props.get("total_memory"),
        cuda_version=versions.get("cuda"),
    )
    return facts, facts.model, versions


def _literal(text: Any) -> Any:
    try:
        return ast.literal_eval(str(text))
    except (ValueError, SyntaxError):
        return None


def _dims(shapes: Any) -> dict[str, int]:
    """``[(1024, 512)]`` -> ``{"arg0.0": 1024, "arg0.1": 512}`` (Helion logs no names)."""
    dims = {}
    for index, shape in enumerate(shapes if isinstance(shapes, (list, tuple)) else []):
        for axis, size in enumerate(shape if isinstance(shape, (list, tuple)) else []):
            if isinstance(size, int):
                dims[f"arg{index}.{axis}"] = size
    return dims


def _tunings(rows: Iterable[HelionRow]) -> list[tuple[str, list[HelionRow]]]:
    """The CSV's rows cut into tunings: contiguous rows of one Helion run_id, and a new tuning
    where ``timestamp_s`` (seconds since its tuning started) goes back."""
    tunings: list[tuple[str, list[HelionRow]]] = []
    clock: float | None = None
    for row in rows:
        restarted = clock is not None and row.timestamp_s is not None and row.timestamp_s < clock
        if not tunings or tunings[-1][0] != row.run_id or restarted:
            tunings.append((row.run_id, []))
        tunings[-1][1].append(row)
        clock = row.timestamp_s if row.timestamp_s is not None else clock
    return tunings


def _terminal(rows: list[HelionRow]) -> dict[str, HelionRow]:
    """The last row of each config (its terminal one, else its 'started' row)."""
    last: dict[str, HelionRow] = {}
    for row in rows:
        if row.status != STARTED or row.config_ref not in last:
            last[row.config_ref] = row
    return last


def _config(
    row: HelionRow, stored: Mapping[str, Any], path: Path, problems: Problems
) -> ImportedConfig | None:
    if row.status == STARTED:
        status, error = (
            Status.RUNTIME_ERROR.value,
            "Helion logged the config as started and nothing after",
        )
    else:  # read_rows let only known statuses through
        status = STATUSES[row.status]
        error = None if status == Status.OK.value else f"Helion status {row.status}"
    if row.status == "ok" and (row.perf_ms is None or not math.isfinite(row.perf_ms)):
        problems.report(path, row.line, f"status {row.status} without perf_ms")
        return None
    try:
        exact = stored.get(row.config_ref)
        config = config_from_dict(exact) if isinstance(exact, Mapping) else parse_config(row.config_text)
    except (ValueError, SyntaxError, TypeError) as exc:
        problems.report(path, row.line, f"unreadable config ({exc})")
        return None
    text = row.config_text.strip()
    timed = status == Status.OK.value and row.perf_ms is not None
    return ImportedConfig(
        config=config,
        status=status,
        error=error,
        timing_ms={"median_ms": row.perf_ms} if timed else {},  # type: ignore[dict-item]
        compile_time_s=row.compile_time_s,
        launch=text if text.startswith("helion.") else f"helion.{text}",
        source_ref=row.config_ref,
    )


def _same_sources(
    configs: list[tuple[HelionRow, ImportedConfig]], hashes: Mapping[str, str], path: Path, problems: Problems
) -> list[ImportedConfig]:
    """Deduplicated configs point at the timed config of the same generated source and take
    its timing; one without such a twin (or without ``.sources.csv``) and without a timing of
    its own is refused."""
    timed: dict[str, ImportedConfig] = {}
    for row, item in configs:
        digest = hashes.get(row.config_ref)
        if digest is not None and row.status == "ok" and digest not in timed:
            timed[digest] = item
    result = []
    for row, item in configs:
        if row.status == DEDUPLICATED:
            twin = timed.get(hashes.get(row.config_ref, ""))
            if twin is not None:
                item = replace(item, same_binary_as=twin.config.id, timing_ms=twin.timing_ms)
            elif not item.timing_ms:
                problems.report(
                    path, row.line, "deduplicated config without perf_ms or a timed twin in .sources.csv"
                )
                continue
        result.append(item)
    return result


def helion_runs(csv_path: Path, meta_path: Path | None, problems: Problems) -> list[ImportedRun]:
    """One :class:`ImportedRun` per tuning in the CSV that has a metadata record."""
    meta_path = meta_path or csv_path.with_suffix(".meta.jsonl")
    if not meta_path.is_file():
        raise FileNotFoundError(f"no Helion metadata sidecar {meta_path} (give --meta)")
    meta = read_meta(meta_path, problems)
    sources_path = csv_path.with_suffix(".sources.csv")
    hashes = read_sources(sources_path, problems) if sources_path.is_file() else {}
    seen: dict[str, int] = defaultdict(int)
    runs = []
    for helion_id, rows in _tunings(read_rows(csv_path, problems)):
        records = meta.get(helion_id, [])
        index = seen[helion_id]
        seen[helion_id] += 1
        if index >= len(records):
            problems.report(
                csv_path, rows[0].line, f"run_id {helion_id} has no record in {meta_path.name}"
            )
            continue
        runs.append(
            _run(helion_id, rows, records[index], csv_path, meta_path, problems,
                 {c: h for (r, c), h in hashes.items() if r == helion_id})
        )  # fmt: skip
    return runs


def _run(
    helion_id: str,
    rows: list[HelionRow],
    record: Mapping[str, Any],
    csv_path: Path,
    meta_path: Path,
    problems: Problems,
    hashes: Mapping[str, str],
) -> ImportedRun:
    stored = record.get("configs") if isinstance(record.get("configs"), Mapping) else {}
    parsed = [
        (row, c)
        for row in _terminal(rows).values()
        if (c := _config(row, stored, csv_path, problems)) is not None  # type: ignore[arg-type]
    ]
    configs = _same_sources(parsed, hashes, csv_path, problems)
    facts, model, versions = _device(record)
    graphs, device_ir = {}, None
    if record.get("ir_graph"):
        try:
            graph = helion_graph(
                record["ir_graph"],
                entry_name=str(record["kernel_name"]),
                target=None if facts.arch == "unknown" else facts.arch,
                triton_version=versions.get("triton", ""),
            )
            graphs, device_ir = {graph.ir_id: graph.to_arrow()}, graph.ir_id
        except HelionGraphError as exc:
            problems.report(meta_path, None, f"ir_graph of run {helion_id}: {exc}")
    shapes = _literal(record.get("input_shapes"))
    return ImportedRun(
        kernel_source=str(record["kernel_source"]),
        entry_name=str(record["kernel_name"]),
        signature=signature(record),
        dims=_dims(shapes),
        dtype=_first_dtype(record.get("dtypes")),
        facts=facts,
        device_model=model,
        toolchain={k: versions.get(k) for k in ("helion", "triton", "torch") if versions.get(k)},
        versions=versions,
        source=Source.HELION.value,
        source_ref=helion_id,
        configs=tuple(configs),
        ir_target=facts.arch if facts.arch.startswith("sm_") else None,
        device_ir_id=device_ir,
        graphs=graphs,
    )


_TORCH_TO_TRITON = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64",
                    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "bool": "i1"}  # fmt: skip


def codegen_settings(settings: Any) -> dict[str, Any] | None:
    """The settings Helion's run_id hashes (:data:`CODEGEN_SETTINGS`), as logged."""
    if not isinstance(settings, Mapping) or not settings:
        return None
    return {name: settings.get(name) for name in CODEGEN_SETTINGS}


def signature(record: Mapping[str, Any]) -> dict[str, Any]:
    """What our run_id hashes besides the kernel and device, as Helion's own run_id does: the
    tensor arguments (Helion logs shapes and dtypes in order, without names) and the
    codegen-affecting settings -- never log paths, reprs with memory addresses or seeds."""
    shapes, dtypes = _literal(record.get("input_shapes")), _literal(record.get("dtypes"))
    shapes = shapes if isinstance(shapes, (list, tuple)) else []
    dtypes = dtypes if isinstance(dtypes, (list, tuple)) else []
    args = []
    for index, shape in enumerate(shapes):
        dtype = str(dtypes[index]).removeprefix("torch.") if index < len(dtypes) else "?"
        args.append(
            {
                "name": f"arg{index}",
                "type": "*" + _TORCH_TO_TRITON.get(dtype, dtype),
                "shape": list(shape) if isinstance(shape, (list, tuple)) else shape,
            }
        )
    result: dict[str, Any] = {
        "kernel": record.get("kernel_name"),
        "args": args,
        "codegen_settings": codegen_settings(record.get("settings")),
    }
    if record.get("cute_structural_policy") is not None:
        result["cute_structural_policy"] = record["cute_structural_policy"]
    return result


def _first_dtype(dtypes: Any) -> str | None:
    values = _literal(dtypes)
    first = values[0] if isinstance(values, (list, tuple)) and values else None
    return str(first).removeprefix("torch.") if isinstance(first, str) else None
