"""Import a tritonparse trace (NDJSON, one event per line).

Format read (:data:`FORMAT`): tritonparse >= 0.5 structured logs, as written by
``tritonparse.structured_logging``:

- ``compilation`` events (``payload.metadata``: Triton's kernel metadata with ``hash``,
  ``name``, ``target``, ``num_warps``/``num_stages``/``num_ctas``/``maxnreg``,
  ``src_constants`` by argument index, ``src_cache_key``, ``times`` in us;
  ``payload.file_content``: the IR texts by file name; ``payload.python_source``: the kernel's
  source) -> TTIR/TTGIR graphs, the kernel's source, each config's compile time and IR ids;
- ``autotune`` events (``kernel_name``, ``cache_key``, ``autotune_key``, ``best_config``,
  ``configs_timings`` as ``{str(triton.Config): [median, p20, p80] ms}``, ``cache_hit``) -> one
  run each, a measurement per config (a cache hit: a run without measurements);
- ``launch`` events (``name``, ``grid``, ``extracted_args``) -> the arguments of the run's
  signature, when a launch of the tuned kernel is in the trace.

Other event types are skipped and counted (``--strict``: an error). The device is known only
by the compile target; ``runs.device_name`` is null.
"""

from __future__ import annotations

import ast
import gzip
import io
import json
import math
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO

from corpus.harvest.device import DeviceFacts
from corpus.harvest.identity import triton_type
from corpus.ingest.problems import IngestError, Problems
from corpus.ingest.rows import ImportedConfig, ImportedRun
from corpus.suite.spec import Config
from extract.locations import package_relative
from schemas.enums import Level, Source, Status

FORMAT = "tritonparse NDJSON trace (tritonparse >= 0.5: compilation, autotune, launch events)"
KNOWN_EVENTS = ("compilation", "autotune", "launch")
DERIVED_EVENTS = (
    "launch_diff", "ir_analysis", "roofline", "autotune_analysis", "autotune_summary",
    "compilation_diff", "trace_diff",
)  # fmt: skip
"""Analyses tritonparse's own parser adds to its output (tritonparse 0.6), derived from the
events above: left out without complaint, and counted."""

_TORCH_TO_TRITON = {
    "torch.float16": "fp16", "torch.bfloat16": "bf16", "torch.float32": "fp32", "torch.float64": "fp64",
    "torch.int8": "i8", "torch.uint8": "u8", "torch.int16": "i16", "torch.int32": "i32", "torch.int64": "i64",
    "torch.bool": "i1", "torch.float8_e4m3fn": "fp8e4nv", "torch.float8_e5m2": "fp8e5",
}  # fmt: skip
_CONFIG_FIELD = re.compile(r"(?:^|, )(\w+): ")


@dataclass
class Compilation:
    """One ``compilation`` event, reduced to what the rows need."""

    line: int
    name: str
    hash: str
    cache_key: str | None
    target: str
    metadata: dict[str, Any]
    constants: dict[str, Any]
    source: str
    source_path: str | None
    ir_texts: dict[str, str]
    compile_time_s: float | None
    arg_names: list[str] = field(default_factory=list)
    """The kernel's parameters in order (``src_attrs`` and ``src_constants`` key them by index)."""
    graphs: dict[str, tuple[str, dict[str, Any]]] | None = None


@dataclass
class Trace:
    compilations: list[Compilation] = field(default_factory=list)
    autotunes: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    launches: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    """(line, event) of each ``launch`` event."""
    derived: Counter[str] = field(default_factory=Counter)
    """:data:`DERIVED_EVENTS` left out, by type."""


def parse_config_text(text: str) -> Config:
    """``str(triton.Config)`` ('BLOCK: 64, num_warps: 2, num_ctas: 1, num_stages: 3,
    maxnreg: None, ...') as a :class:`Config`."""
    marks = list(_CONFIG_FIELD.finditer(text))
    if not marks:
        raise ValueError(f"not a triton.Config text: {text!r}")
    values: dict[str, Any] = {}
    for index, mark in enumerate(marks):
        end = marks[index + 1].start() if index + 1 < len(marks) else len(text)
        raw = text[mark.end() : end].strip()
        try:
            values[mark.group(1)] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            values[mark.group(1)] = raw
    options = ("num_warps", "num_ctas", "num_stages", "maxnreg", "ir_override", "pre_hook")
    kwargs = {k: v for k, v in values.items() if k not in options}
    return Config(
        kwargs=kwargs,
        num_warps=int(values.get("num_warps", 4)),
        num_stages=int(values.get("num_stages", 3)),
        num_ctas=int(values.get("num_ctas", 1) or 1),
        maxnreg=values.get("maxnreg"),
    )


def _arg_names(source: str, entry: str) -> list[str]:
    """Parameter names of ``def entry(...)`` in ``source`` (constants are keyed by index)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == entry:
            return [a.arg for a in node.args.args]
    return []


def _target(raw: Any) -> str:
    if isinstance(raw, Mapping):
        return f"{raw.get('backend')}:{raw.get('arch')}"
    return str(raw)


def _compilation(line: int, event: Mapping[str, Any]) -> Compilation:
    payload = event["payload"]
    metadata = payload["metadata"]
    name = str(metadata["name"])
    python = payload.get("python_source") or {}
    source = str(python.get("code") or "")
    names = _arg_names(source, name)
    constants: dict[str, Any] = {}
    for key, value in (metadata.get("src_constants") or {}).items():
        index = ast.literal_eval(key)[0] if key.startswith("(") else int(key)
        constants[names[index] if index < len(names) else f"arg{index}"] = value
    times = metadata.get("times") or {}
    total_us = (
        times.get("ir_initialization", 0)
        + sum(t for _, t in times.get("lowering_stages", []))
        + times.get("store_results", 0)
    )
    texts = {
        level: content
        for file_name, content in (payload.get("file_content") or {}).items()
        for level in (Level.TTIR.value, Level.TTGIR.value)
        if file_name.endswith(f".{level}")
    }
    return Compilation(
        line=line,
        name=name,
        hash=str(metadata["hash"]),
        cache_key=metadata.get("src_cache_key"),
        target=_target(metadata.get("target")),
        metadata=dict(metadata),
        constants=constants,
        source=source,
        source_path=python.get("file_path"),
        ir_texts=texts,
        compile_time_s=None if metadata.get("cache_hit") or not times else total_us / 1e6,
        arg_names=names,
    )


def read_trace(path: Path, problems: Problems) -> Trace:
    """Every usable event of the trace; the rest go to ``problems``. A trace cut off inside a
    record (the writer was stopped, as a crash stops it) keeps the records before the cut."""
    trace = Trace()
    with open_trace(path) as handle:
        line, cut_reported = 0, False
        for line, text in _lines(handle):
            cut_reported = _read_event(trace, path, line, text, problems)
        if getattr(handle.raw, "cut", False) and not cut_reported:  # cut between two records
            problems.report(path, line + 1, CUT_OFF)
    return trace


CUT_OFF = "cut off: the trace ends inside this record (its writer was stopped?)"


def _read_event(trace: Trace, path: Path, line: int, text: str, problems: Problems) -> bool:
    """Add the event on ``line`` to ``trace`` or report it; True when it was cut off."""
    try:
        event = json.loads(text)
    except json.JSONDecodeError as exc:
        cut = not text.endswith("\n")  # the last line without its newline: the file ends in it
        problems.report(path, line, CUT_OFF if cut else f"not JSON ({exc.msg})")
        return cut
    kind = event.get("event_type") if isinstance(event, dict) else None
    if kind == "autotune_analysis" and isinstance(event.get("autotune_result"), Mapping):
        problems.report(path, line, _analysed_tuning(event))
        return False
    if kind in DERIVED_EVENTS:
        trace.derived[kind] += 1
        return False
    if kind not in KNOWN_EVENTS:
        problems.report(path, line, f"unknown event type {kind!r}")
        return False
    try:
        if kind == "compilation":
            trace.compilations.append(_compilation(line, event))
        elif kind == "autotune":
            parse_config_text(str(event["best_config"]))  # validate before use
            trace.autotunes.append((line, event))
        else:
            trace.launches.append((line, event))
    except (KeyError, TypeError, ValueError, IndexError, SyntaxError) as exc:
        problems.report(path, line, f"malformed {kind} event ({type(exc).__name__}: {exc})")
    return False


def _analysed_tuning(event: Mapping[str, Any]) -> str:
    """Why a tuning tritonparse's parser kept only in an ``autotune_analysis`` is not imported:
    ``unified_parse`` drops the raw ``autotune`` event of a tuning Triton's autotuner logged,
    and its ``autotune_result`` (timings, best config) has no autotune key, so neither the
    run's problem nor its identity as the raw trace gives them can be known."""
    return (
        f"tuning of {event.get('name')!r} kept only in tritonparse's autotune_analysis (its "
        "parser's output has no autotune key): not imported; import the raw trace tritonparse "
        "wrote, before unified_parse"
    )


def _lines(handle: BinaryIO) -> Iterator[tuple[int, str]]:
    for number, text in enumerate(io.TextIOWrapper(handle, encoding="utf-8"), 1):
        if text.strip():
            yield number, text


class _CutTolerant(io.RawIOBase):
    """A gzip stream read up to where it was cut off: the bytes before the cut, then the end
    (``cut`` set) -- gzip raises ``EOFError`` there, losing the whole records before it."""

    def __init__(self, inner: BinaryIO) -> None:
        self.inner = inner
        self.cut = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.cut:
            return 0
        try:  # read1: what one step decompressed, so the EOFError loses none of it
            data = self.inner.read1(len(buffer))  # type: ignore[attr-defined]
        except EOFError:
            self.cut = True
            return 0
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self.inner.close()
        super().close()


GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
"""First bytes of a gzip member and of a zstd frame: tritonparse's ``TRITON_TRACE_COMPRESSION=gzip``
(or ``zstd``) writes each record as a member (frame) of its own into ``*.bin.ndjson``."""


def open_trace(path: Path) -> BinaryIO:
    """The trace's bytes: the file, or its content when it is gzipped -- tritonparse's parsed
    output (``.ndjson.gz``), or its raw trace written with ``TRITON_TRACE_COMPRESSION=gzip``
    (``.bin.ndjson``: gzip members, one per record). Raises :class:`IngestError` for a zstd
    trace (``.zst``, or ``.bin.ndjson`` written with ``TRITON_TRACE_COMPRESSION=zstd``:
    decompress it first) or a ``.gz`` file that is not gzip."""
    with path.open("rb") as probe:
        magic = probe.read(4)
    if path.suffix == ".zst" or magic == ZSTD_MAGIC:
        raise IngestError(
            f"{path}: a zstd-compressed trace; decompress it first (zstd -dc {path.name} > trace.ndjson)"
        )
    if path.suffix != ".gz" and not magic.startswith(GZIP_MAGIC):
        return path.open("rb")
    handle = gzip.open(path, "rb")  # noqa: SIM115  (the caller closes it)
    try:
        handle.peek(1)
    except (OSError, EOFError) as exc:
        handle.close()
        raise IngestError(f"{path}: named .gz but not a gzip file ({exc})") from None
    return io.BufferedReader(_CutTolerant(handle))  # type: ignore[arg-type,return-value]


def graphs_of(compilation: Compilation) -> dict[str, tuple[str, dict[str, Any]]]:
    """ir_id -> (level, tables) of the compilation's TTIR and TTGIR graphs (built once)."""
    from extract.graph import IrGraph

    if compilation.graphs is None:
        compilation.graphs = {}
        for level, text in compilation.ir_texts.items():
            graph = IrGraph.from_text(
                text, level=level, target=compilation.target, source=f"<{compilation.name}.{level}>"
            )
            compilation.graphs[graph.ir_id] = (level, graph.to_arrow())
    return compilation.graphs


def _matches(compilation: Compilation, config: Config) -> bool:
    meta = compilation.metadata
    if (meta.get("num_warps"), meta.get("num_stages"), meta.get("num_ctas", 1)) != (
        config.num_warps,
        config.num_stages,
        config.num_ctas,
    ):
        return False
    return all(compilation.constants.get(k) == v for k, v in config.kwargs.items())


def _specialization_misses(compilation: Compilation, launch: Mapping[str, Any] | None) -> int:
    """How many of the launch's integer and pointer arguments the compilation was specialized
    for differently: Triton compiles one binary per specialization (an integer equal to 1 made a
    constant; an integer, or a tensor's address, divisible by 16 marked ``tt.divisibility``),
    so a config compiled for ``n = 128`` and again for ``n = 99`` has two compilation events,
    and a tuning's IR is the one its call was specialized for. 0 without a launch to compare."""
    attrs = compilation.metadata.get("src_attrs")
    if not isinstance(attrs, Mapping):
        return 0
    misses = 0
    for index, name in enumerate(compilation.arg_names):
        info = ((launch or {}).get("extracted_args") or {}).get(name)
        value = _specialized_value(info)
        if value is None:
            continue
        if name in compilation.constants:
            misses += compilation.constants[name] != value
            continue
        marked = ["tt.divisibility", 16] in (attrs.get(f"({index},)") or [])
        misses += marked != (value % 16 == 0)
    return misses


def _specialized_value(info: Any) -> int | None:
    """The integer Triton specializes on for one launch argument (a tensor's address), if any."""
    if not isinstance(info, Mapping):
        return None
    if info.get("type") == "int" and isinstance(info.get("value"), int):
        return int(info["value"])
    if info.get("type") == "tensor" and isinstance(info.get("data_ptr"), str):
        try:
            return int(info["data_ptr"], 16)
        except ValueError:
            return None
    return None


def _launch_signature(
    launch: Mapping[str, Any] | None, constexprs: Mapping[str, Any], tuned: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    """The launch's arguments as a run signature; those the compilation specialized as
    constexprs (``src_constants``) are typed ``constexpr``, not by their Python value. The
    ``tuned`` meta-parameters (the configs' kwargs) are left out: tritonparse's launch hook logs
    every parameter the launch bound, the winning config's among them, which are not the
    problem (a run's identity must not change with the config that won)."""
    args = []
    for name, info in ((launch or {}).get("extracted_args") or {}).items():
        if name in tuned:
            continue
        if info.get("type") == "tensor":
            strides = "".join(
                "0" if s == 0 else "1" if s == 1 else "n" for s in info.get("stride", [])
            )
            dtype = str(info.get("dtype"))
            args.append(
                {
                    "name": name,
                    "type": "*" + _TORCH_TO_TRITON.get(dtype, dtype),
                    "shape": info.get("shape"),
                    "strides": strides,
                }
            )
        else:
            value = info.get("value")
            kind = (
                "constexpr"
                if name in constexprs
                else triton_type(value)
                if isinstance(value, (bool, int, float))
                else str(info.get("type"))
            )
            args.append({"name": name, "type": kind, "value": value})
    return args


def _constexpr_names(compilation: Compilation) -> set[str]:
    """The kernel's ``tl.constexpr`` parameters, from its source (``src_constants`` also holds
    runtime integers Triton specialized because they equal 1)."""
    try:
        tree = ast.parse(compilation.source)
    except SyntaxError:
        return set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == compilation.name:
            return {
                a.arg
                for a in node.args.args
                if a.annotation is not None and ast.unparse(a.annotation).split(".")[-1] == "constexpr"
            }
    return set()


def _key_names(source: str, entry: str) -> list[str] | None:
    """The ``key=[...]`` of the decorator (``@triton.autotune`` or a wrapper taking the same
    keyword) of ``def entry`` in ``source``, when it is a literal list of names."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if not (isinstance(node, ast.FunctionDef) and node.name == entry):
            continue
        for decorator in node.decorator_list:
            for keyword in getattr(decorator, "keywords", ()):
                if keyword.arg != "key":
                    continue
                try:
                    names = ast.literal_eval(keyword.value)
                except ValueError:
                    return None
                if isinstance(names, (list, tuple)) and all(isinstance(n, str) for n in names):
                    return list(names)
                return None
    return None


def _problem(
    key_text: str, launch: Mapping[str, Any] | None, key_names: list[str] | None, tuned: set[str]
) -> tuple[dict[str, int], dict[str, int]]:
    """(problem dims, the flags among them): the integer and boolean values of the autotune key
    (a tuple of values, without names: the autotuner's key arguments in its ``key`` order,
    then the tensors' dtypes), booleans as 0/1. The names are the kernel's ``key=[...]`` where
    its source has them (the names the launch did not pass are not in the key, as Triton
    builds it); else a launch argument that alone holds the value (never a config's
    meta-parameter); a value several arguments hold is left out, not guessed."""
    try:
        key = ast.literal_eval(key_text)
    except (ValueError, SyntaxError):
        return {}, {}
    values = list(key) if isinstance(key, tuple) else [key]
    args = {
        name: info.get("value")
        for name, info in ((launch or {}).get("extracted_args") or {}).items()
        if isinstance(info, Mapping)
    }
    named: list[tuple[str, Any]] = []
    if key_names is not None:
        present = [n for n in key_names if n in args] if args else key_names
        named = list(zip(present, values))
    else:
        taken: set[str] = set()
        for value in values:
            if type(value) not in (int, bool):
                continue
            holders = [
                n for n, v in args.items()
                if type(v) is type(value) and v == value and n not in tuned and n not in taken
            ]  # fmt: skip
            if len(holders) == 1:
                named.append((holders[0], value))
                taken.add(holders[0])
    dims = {name: int(value) for name, value in named if type(value) in (int, bool)}
    flags = {name: int(value) for name, value in named if type(value) is bool}
    return dims, flags


def _dtype(launch: Mapping[str, Any] | None) -> str | None:
    for info in ((launch or {}).get("extracted_args") or {}).values():
        if isinstance(info, Mapping) and info.get("type") == "tensor" and info.get("dtype"):
            return str(info["dtype"]).removeprefix("torch.")
    return None


def _versions(compilation: Compilation, launch: Mapping[str, Any] | None) -> dict[str, str]:
    """Triton's version from the compilation metadata; torch's and the device name where the
    trace holds them (tritonparse 0.6 records neither)."""
    found = {"triton": compilation.metadata.get("triton_version")}
    for source in (compilation.metadata, (launch or {}).get("compilation_metadata") or {}, launch or {}):
        for key, name in (("torch_version", "torch"), ("device_name", "device_name")):
            if isinstance(source, Mapping) and source.get(key) and not found.get(name):
                found[name] = source[key]
    return {k: str(v) for k, v in found.items() if v}


def _device(target: str) -> tuple[DeviceFacts, str]:
    backend, _, arch = target.partition(":")
    if backend == "cuda" and arch.isdigit():
        capability = f"{int(arch) // 10}.{int(arch) % 10}"
        return DeviceFacts(
            device_kind="cuda", arch=f"sm_{arch}", device_name=None, compute_capability=capability
        ), f"sm {capability}"  # type: ignore[arg-type]
    return DeviceFacts(
        device_kind=backend or "unknown", arch=arch or "unknown", device_name=None
    ), target  # type: ignore[arg-type]


def _timing(values: Any) -> tuple[str, dict[str, float], str | None]:
    numbers = [float(v) for v in (values if isinstance(values, list) else [values])]
    if not numbers or not all(math.isfinite(v) for v in numbers):
        return (
            Status.COMPILE_ERROR.value,
            {},
            "the autotuner's bench returned inf (OutOfResources, CompileTimeAssertionFailure or PTXASError)",
        )
    return Status.OK.value, dict(zip(("median_ms", "p20_ms", "p80_ms"), numbers)), None


def autotune_runs(
    trace: Trace, path: Path, problems: Problems
) -> tuple[list[ImportedRun], set[str]]:
    """One :class:`ImportedRun` per autotune event, and the hashes of the compilations the
    runs use (the others are imported as IR graphs and kernels only)."""
    runs: list[ImportedRun] = []
    used: set[str] = set()
    for line, event in trace.autotunes:
        compilations = [
            c
            for c in trace.compilations
            if c.cache_key == event.get("cache_key") and c.name == event.get("kernel_name")
        ]
        if not compilations:
            problems.report(
                path,
                line,
                f"autotune event of {event.get('kernel_name')!r} has no compilation event of its kernel in the trace",
            )
            continue
        first = compilations[0]
        # The call a tuning tuned is the kernel's next launch: the autotuner launches the best
        # config right after logging the tuning (a later launch may be another size's call).
        launch = next((e for at, e in trace.launches if at > line and e.get("name") == first.name), None)
        # importers before 2026-11-24 took the kernel's first launch anywhere in the trace
        first_launch = next((e for _, e in trace.launches if e.get("name") == first.name), None)
        facts, model = _device(first.target)
        versions = _versions(first, launch)
        if versions.get("device_name"):
            facts = replace(facts, device_name=versions["device_name"])
        cache_hit = bool(event.get("cache_hit"))
        configs = []
        for text, values in (event.get("configs_timings") or {}).items():
            config = parse_config_text(text)
            status, timing, error = _timing(values)
            matching = [c for c in compilations if _matches(c, config)]
            # the first of those specialized as the tuned call was (min keeps trace order)
            compiled = min(matching, key=lambda c: _specialization_misses(c, launch), default=None)
            graphs = graphs_of(compiled) if compiled is not None else {}
            ids = {level: ir for ir, (level, _) in graphs.items()}
            if compiled is not None:
                used.add(compiled.hash)
            configs.append(
                ImportedConfig(
                    config=config, status=status, error=error, timing_ms=timing,
                    compile_time_s=compiled.compile_time_s if compiled else None,
                    ttir_id=ids.get(Level.TTIR.value), ttgir_id=ids.get(Level.TTGIR.value),
                    source_ref=compiled.hash if compiled else None,
                )
            )  # fmt: skip
        all_graphs = {
            ir: tables
            for c in compilations
            if c.hash in used
            for ir, (_, tables) in graphs_of(c).items()
        }
        key_text = str(event.get("autotune_key"))
        best = parse_config_text(str(event["best_config"]))
        tuned = frozenset({*best.kwargs, *(name for c in configs for name in c.config.kwargs)})
        dims, flags = _problem(key_text, launch, _key_names(first.source, first.name), set(tuned))
        constexprs = _constexpr_names(first)
        runs.append(
            ImportedRun(
                kernel_source=first.source,
                entry_name=first.name,
                signature={
                    "kernel": first.name,
                    "autotune_key": key_text,
                    "args": _launch_signature(launch, constexprs, tuned),
                },
                earlier_signatures=(
                    # the trace holds the launch after the tuning: imported before it, no arguments
                    {"kernel": first.name, "autotune_key": key_text, "args": []},
                    {
                        "kernel": first.name,
                        "autotune_key": key_text,
                        "args": _launch_signature(first_launch, constexprs),
                    },
                    # importers before 2026-11-25 kept the tuned meta-parameters a launch hook logs
                    {"kernel": first.name, "autotune_key": key_text, "args": _launch_signature(launch, constexprs)},
                ),
                dims=dims,
                flags=flags,
                dtype=_dtype(launch),
                facts=facts,
                device_model=model,
                toolchain={
                    "triton": first.metadata.get("triton_version"),
                    "source": Source.TRITONPARSE.value,
                },
                versions=versions,
                source=Source.TRITONPARSE.value,
                source_ref=f"{event.get('cache_key')}:{key_text}",
                configs=() if cache_hit else tuple(configs),
                ir_target=facts.arch if facts.arch.startswith("sm_") else None,
                cache_hit=cache_hit,
                best=best,
                source_path=package_relative(first.source_path) if first.source_path else None,
                graphs=all_graphs,
            )
        )
    return runs, used


def kernel_row(compilation: Compilation) -> dict[str, Any]:
    """The ``kernels`` row of a compilation's kernel (the trace's copy of its source)."""
    from schemas.identity import kernel_id

    return {
        "kernel_id": kernel_id(compilation.source, compilation.name),
        "family": compilation.name,
        "category": None,
        "suite": None,
        "entry_name": compilation.name,
        "source": compilation.source,
        "source_path": package_relative(compilation.source_path)
        if compilation.source_path
        else None,
    }
