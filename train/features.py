"""Tabular (non-graph) features of a sample: config knobs, launch, problem, static stats,
graph summary counts and device facts, as one float32 vector per sample.

Knobs line up across families through their roles (``measurements.config_roles``: BLOCK_N of
one family and BLOCK_V of another are both ``tile_n``); a dataset written before roles existed
puts every meta-parameter under ``other``. Sizes are log2-scaled (a tile of 64 vs 128 is one
step, as it is for the hardware), then standardized with statistics of the training split.
A value that is unknown (an older dataset, a failed compile, the interpreter's lack of device
facts) or not applicable (a family without a K tile) becomes 0 after standardization plus a
``missing:<group>`` indicator, so models can tell "absent" from "average".

Run-relative copies (``rel:<name>``, on by default): every feature that varies with the config
(knobs, roles, launch, static stats, SASS mix, graph counts) again, minus its mean over the
configs of the same run in the frame being transformed. A ranking within a run only needs
what sets a config apart from its siblings; absolute values mix that with what sets the run
apart from other runs (problem size, family), which is what held-out families change. Models
see both. Rank the candidates of a run together: a run of one config has all ``rel:`` zero.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from schemas.enums import DEVICE_INTERPRETER, ROLES
from schemas.tables import MEASUREMENTS, RUNS
from train.tables import IR_COUNT_COLUMNS

FEATURES_VERSION = 3
"""Bumped whenever the meaning or order of the features changes (part of cache keys and
checkpoints)."""

MAX_DIMS = 4
"""Problem dimensions kept by position (``problem_dims`` order); extra ones only count in the
total size."""

_DTYPE_BITS = {
    "float64": 64,
    "float32": 32,
    "tfloat32": 32,
    "float16": 16,
    "bfloat16": 16,
    "int64": 64,
    "int32": 32,
    "int16": 16,
    "int8": 8,
    "uint8": 8,
    "float8_e4m3fn": 8,
    "float8_e5m2": 8,
    "bool": 8,
}

STATIC_COUNTS = ("n_regs", "spill_bytes", "shared_mem_bytes", "sass_instructions")
GRAPH_COUNTS = IR_COUNT_COLUMNS
DEVICE_SIZES = (
    "sm_count",
    "l2_bytes",
    "smem_per_block_bytes",
    "total_memory_bytes",
    "sm_clock_max_mhz",
    "mem_clock_max_mhz",
)


def _log2(expr: pl.Expr) -> pl.Expr:
    """log2 of a positive size; null (missing) for null or non-positive values."""
    value = expr.cast(pl.Float64)
    return pl.when(value > 0).then(value.log(2))


def _log2p(expr: pl.Expr) -> pl.Expr:
    """log2(1 + count) of a count that may be 0."""
    return (expr.cast(pl.Float64).clip(lower_bound=0) + 1).log(2)


def _role_table(frame: pl.DataFrame) -> pl.DataFrame:
    """Per row (``__row``): sum of log2(value) per role, wide, columns ``role:<role>``."""
    as_other = pl.col("config_params").list.eval(
        pl.struct(
            pl.element().struct.field("name"),
            pl.lit("other").alias("role"),
            pl.element().struct.field("value"),
        )
    )
    long = (
        frame.select(pl.col("__row"), pl.coalesce(pl.col("config_roles"), as_other).alias("p"))
        .explode("p")
        .drop_nulls("p")
        .unnest("p")
    )
    if long.is_empty():
        return frame.select("__row")
    long = long.with_columns(
        pl.when(pl.col("role").is_in(list(ROLES)))
        .then(pl.col("role"))
        .otherwise(pl.lit("other"))
        .alias("role"),
        pl.col("value").cast(pl.Float64).clip(lower_bound=1).log(2).alias("value"),
    )
    wide = (
        long.group_by("__row", "role")
        .agg(pl.col("value").sum())
        .pivot(on="role", index="__row", values="value")
    )
    return wide.rename({c: f"role:{c}" for c in wide.columns if c != "__row"})


def _sass_table(frame: pl.DataFrame) -> pl.DataFrame:
    """Per row: fraction of SASS instructions in each class, columns ``sass:<cls>``."""
    long = (
        frame.select("__row", pl.col("sass_mix").alias("m"))
        .explode("m")
        .drop_nulls("m")
        .unnest("m")
    )
    if long.is_empty():
        return frame.select("__row")
    long = long.with_columns((pl.col("count") / pl.col("count").sum().over("__row")).alias("share"))
    wide = (
        long.group_by("__row", "cls")
        .agg(pl.col("share").sum())
        .pivot(on="cls", index="__row", values="share")
    )
    return wide.rename({c: f"sass:{c}" for c in wide.columns if c != "__row"})


def _problem_dims(problem_dims: Any, problem_json: str | None) -> list[int]:
    """Problem sizes in declared order; from ``problem_json`` (sizes and flags together) when
    the row predates ``problem_dims``."""
    if problem_dims is not None:
        return [int(d["value"]) for d in problem_dims if d["value"] is not None]
    if not problem_json:
        return []
    try:
        parsed = json.loads(problem_json)
    except json.JSONDecodeError:
        return []
    return [
        int(v) for v in parsed.values() if isinstance(v, int | float) and not isinstance(v, bool)
    ]


def _dims_table(frame: pl.DataFrame) -> pl.DataFrame:
    """Per row: log2 of the first :data:`MAX_DIMS` problem dims, their total and their count."""
    runs = frame.select("run_id", "problem_dims", "problem_json").unique(subset="run_id")
    rows = []
    for run in runs.iter_rows(named=True):
        dims = _problem_dims(run["problem_dims"], run["problem_json"])
        logs = [math.log2(d) if d > 0 else None for d in dims]
        row: dict[str, Any] = {"run_id": run["run_id"], "dims:count": float(len(dims))}
        positive = [v for v in logs if v is not None]
        row["dims:total"] = float(sum(positive)) if positive else None
        for i in range(MAX_DIMS):
            row[f"dims:{i}"] = logs[i] if i < len(logs) else None
        rows.append(row)
    schema = {
        "run_id": pl.String,
        "dims:count": pl.Float64,
        "dims:total": pl.Float64,
        **{f"dims:{i}": pl.Float64 for i in range(MAX_DIMS)},
    }
    table = pl.DataFrame(rows, schema=schema)
    return frame.select("__row", "run_id").join(table, on="run_id", how="left").drop("run_id")


def _scalar_features() -> dict[str, pl.Expr]:
    """Features that are one expression of a row's columns."""
    threads = pl.coalesce(pl.col("threads_per_program"), pl.col("num_warps") * 32)
    programs = _log2(pl.col("num_programs"))
    exprs: dict[str, pl.Expr] = {
        "knob:num_warps": _log2(pl.col("num_warps")),
        "knob:num_stages": _log2(pl.col("num_stages").cast(pl.Float64) + 1),
        "knob:num_ctas": _log2(pl.col("num_ctas")),
        "knob:maxnreg": _log2(pl.col("maxnreg")),
        "knob:n_params": pl.col("config_params").list.len().cast(pl.Float64),
        "launch:num_programs": programs,
        "launch:threads_per_program": _log2(threads),
        "launch:total_threads": programs + _log2(threads),
        "launch:bytes_per_program": _log2(pl.col("bytes_moved")) - programs,
        "launch:flops_per_program": _log2(pl.col("flops")) - programs,
        "problem:flops": _log2p(pl.col("flops")),
        "problem:bytes": _log2p(pl.col("bytes_moved")),
        "problem:intensity": _log2(pl.col("arithmetic_intensity")),
        "problem:dtype_bits": pl.col("dtype").replace_strict(
            _DTYPE_BITS, default=None, return_dtype=pl.Float64
        ),
        "device:interpreter": (pl.col("arch") == DEVICE_INTERPRETER).cast(pl.Float64),
        "device:compute_capability": pl.col("compute_capability").cast(pl.Float64, strict=False),
    }
    for i in range(3):
        exprs[f"launch:grid{i}"] = _log2(pl.col("grid").list.get(i, null_on_oob=True))
    for name in STATIC_COUNTS:
        exprs[f"static:{name}"] = _log2p(pl.col(name))
    for name in GRAPH_COUNTS:
        exprs[f"graph:{name.removeprefix('ir_')}"] = _log2p(pl.col(name))
    for name in DEVICE_SIZES:
        exprs[f"device:{name}"] = _log2(pl.col(name))
    return exprs


_PROGRAM_DERIVED = (
    "launch:num_programs",
    "launch:total_threads",
    "launch:bytes_per_program",
    "launch:flops_per_program",
)


NEVER_MISSING = frozenset({"knob:tile_log2", "device:interpreter"})

CONFIG_PREFIXES = ("knob", "role", "launch", "static", "sass", "graph")
"""Feature prefixes whose values vary between the configs of one run (they get ``rel:``
copies); problem, dims and device features are constant within a run."""


def run_relative(values: np.ndarray, run_ids: np.ndarray) -> np.ndarray:
    """``values`` [n, F] minus the mean of its run's rows (``run_ids`` [n]), float64 [n, F]."""
    _, inverse = np.unique(run_ids, return_inverse=True)
    inverse = inverse.reshape(-1)
    counts = np.bincount(inverse).astype(np.float64)
    sums = np.zeros((len(counts), values.shape[1]))
    np.add.at(sums, inverse, values)
    return values - (sums / counts[:, None])[inverse]


"""Features computed from columns that are always present: no missing indicator."""


def _group(name: str) -> str:
    """Missing-indicator group of a raw feature: features unknown together share one (static
    stats fail together, graph counts exist together, device facts are absent together on the
    interpreter, num_programs-derived features follow num_programs); others have their own."""
    prefix = name.partition(":")[0]
    if prefix in ("static", "sass"):
        return "static"
    if prefix == "graph":
        return "graph"
    if name in _PROGRAM_DERIVED:
        return "num_programs"
    if prefix == "device" and name.removeprefix("device:") in DEVICE_SIZES:
        return "device"
    return name


INPUT_COLUMNS: tuple[str, ...] = (
    *("config_params", "config_roles", "num_warps", "num_stages", "num_ctas", "maxnreg"),
    *("grid", "num_programs", "threads_per_program", "sass_mix", *STATIC_COUNTS),
    *("run_id", "problem_dims", "problem_json", "flops", "bytes_moved", "arithmetic_intensity"),
    *("dtype", "arch", "compute_capability", *DEVICE_SIZES, *GRAPH_COUNTS),
)
"""Columns of the samples table the features read. All but ``run_id`` may be absent (a frame
built for prediction of unmeasured configs): they are then unknown, like nulls."""


def _input_dtypes() -> dict[str, pl.DataType]:
    empty = pl.from_arrow(
        pa.unify_schemas([RUNS, MEASUREMENTS], promote_options="permissive").empty_table()
    )
    assert isinstance(empty, pl.DataFrame)
    dtypes = dict(empty.schema)
    dtypes.update(dict.fromkeys(GRAPH_COUNTS, pl.Int32()))
    return {name: dtypes[name] for name in INPUT_COLUMNS}


def _complete(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with every absent input column added as typed nulls."""
    if "run_id" not in frame.columns:
        raise ValueError(
            "cannot featurize a frame without a run_id column (problem features are per run)"
        )
    absent = [c for c in INPUT_COLUMNS if c not in frame.columns]
    if not absent:
        return frame
    dtypes = _input_dtypes()
    return frame.with_columns(pl.lit(None, dtype=dtypes[c]).alias(c) for c in absent)


def raw_features(frame: pl.DataFrame) -> pl.DataFrame:
    """Every unscaled feature of ``frame`` (a samples table) as Float64 columns, NaN where
    unknown; columns vary with the data (roles and SASS classes present). Absent input columns
    (:data:`INPUT_COLUMNS`) count as unknown."""
    indexed = _complete(frame).with_row_index("__row")
    base = indexed.select(pl.col("__row"), *[e.alias(n) for n, e in _scalar_features().items()])
    for extra in (_role_table(indexed), _sass_table(indexed), _dims_table(indexed)):
        base = base.join(extra, on="__row", how="left")
    base = base.sort("__row").drop("__row")
    return _with_programs_estimate(base.with_columns(pl.all().cast(pl.Float64).fill_nan(None)))


MORE_PROGRAMS_ROLES = ("programs", "split")
"""Roles whose larger values launch more programs; every other knob is a tile (fewer)."""


def _with_programs_estimate(raw: pl.DataFrame) -> pl.DataFrame:
    """Add ``knob:tile_log2`` (log2 of the product of tile-like knobs) and
    ``launch:programs_estimate`` = log2(problem size) - tile_log2 + log2(programs/split knobs):
    how many programs the config launches when ``num_programs`` is not recorded (trees cannot
    add columns up themselves)."""
    roles = [c for c in raw.columns if c.startswith("role:")]
    tiles = [c for c in roles if c.removeprefix("role:") not in MORE_PROGRAMS_ROLES]
    more = [c for c in roles if c.removeprefix("role:") in MORE_PROGRAMS_ROLES]
    tile_sum = (
        pl.sum_horizontal([pl.col(c).fill_null(0.0) for c in tiles]) if tiles else pl.lit(0.0)
    )
    more_sum = pl.sum_horizontal([pl.col(c).fill_null(0.0) for c in more]) if more else pl.lit(0.0)
    return raw.with_columns(
        tile_sum.alias("knob:tile_log2"),
        (pl.col("dims:total") - tile_sum + more_sum).alias("launch:programs_estimate"),
    )


@dataclass
class TabularFeatures:
    """Fitted featurizer: :meth:`fit` on the training split, :meth:`transform` anything.

    ``names``: output feature names, in column order of :meth:`transform`'s array.
    """

    raw_names: list[str] = field(default_factory=list)
    mean: list[float] = field(default_factory=list)
    std: list[float] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    version: int = FEATURES_VERSION
    relative: bool = True
    """Append run-relative copies of the config features (see the module docstring)."""

    @property
    def relative_names(self) -> list[str]:
        """Raw features that get a ``rel:`` copy (config-dependent ones), in column order."""
        if not self.relative:
            return []
        return [n for n in self.raw_names if n.partition(":")[0] in CONFIG_PREFIXES]

    @property
    def names(self) -> list[str]:
        return [
            *self.raw_names,
            *(f"rel:{n}" for n in self.relative_names),
            *(f"missing:{g}" for g in self.groups),
        ]

    def fit(self, frame: pl.DataFrame) -> TabularFeatures:
        """Learn the feature set (roles, SASS classes present) and per-feature mean/std from
        ``frame`` (the training split only). Returns ``self``."""
        if frame.is_empty():
            raise ValueError("cannot fit TabularFeatures on an empty frame")
        raw = raw_features(frame)
        fixed = [f"role:{r}" for r in ROLES]
        self.raw_names = sorted(set(raw.columns) | set(fixed), key=_order_key)
        values = _matrix(raw, self.raw_names)
        with warnings.catch_warnings():
            # A feature unknown for the whole split gives an all-NaN column: mean 0, std 1.
            warnings.simplefilter("ignore", category=RuntimeWarning)
            mean = np.nanmean(values, axis=0)
            std = np.nanstd(values, axis=0)
        self.mean = [float(m) if np.isfinite(m) else 0.0 for m in mean]
        self.std = [float(s) if np.isfinite(s) and s > 1e-12 else 1.0 for s in std]
        self.groups = sorted({_group(n) for n in self.raw_names if n not in NEVER_MISSING})
        return self

    def transform(self, frame: pl.DataFrame) -> np.ndarray:
        """float32 array [n_samples, len(names)]: standardized features (0 where unknown), their
        run-relative copies (``relative``; runs as grouped by ``frame``'s run_id), then one 0/1
        indicator per missing-group (1 when the group's values are unknown)."""
        if not self.raw_names:
            raise RuntimeError("TabularFeatures.transform called before fit")
        values = _matrix(raw_features(frame), self.raw_names)
        missing = np.isnan(values)
        scaled = (values - np.asarray(self.mean)) / np.asarray(self.std)
        scaled = np.clip(np.where(missing, 0.0, scaled), -20.0, 20.0)
        group_index = {g: i for i, g in enumerate(self.groups)}
        indicators = np.ones((len(values), len(self.groups)))
        for column, name in enumerate(self.raw_names):
            if name in NEVER_MISSING:
                continue
            # A group is unknown where all of its features are (they are unknown together).
            target = group_index[_group(name)]
            indicators[:, target] = np.minimum(indicators[:, target], missing[:, column])
        parts = [scaled]
        if self.relative:
            chosen = [self.raw_names.index(n) for n in self.relative_names]
            parts.append(run_relative(scaled[:, chosen], frame["run_id"].to_numpy()))
        return np.hstack([*parts, indicators]).astype(np.float32)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable state (for checkpoints)."""
        return {
            "version": self.version,
            "raw_names": self.raw_names,
            "mean": self.mean,
            "std": self.std,
            "groups": self.groups,
            "relative": self.relative,
        }

    @classmethod
    def from_dict(cls, state: Mapping[str, Any]) -> TabularFeatures:
        """Inverse of :meth:`to_dict`; refuses state of another :data:`FEATURES_VERSION`."""
        if state.get("version") != FEATURES_VERSION:
            raise ValueError(
                f"TabularFeatures state has version {state.get('version')!r}; this code reads version {FEATURES_VERSION}"
            )
        return cls(
            list(state["raw_names"]),
            list(state["mean"]),
            list(state["std"]),
            list(state["groups"]),
            relative=bool(state.get("relative", True)),
        )


def _order_key(name: str) -> tuple[int, str]:
    prefixes = ("knob", "role", "launch", "problem", "dims", "static", "sass", "graph", "device")
    prefix = name.partition(":")[0]
    return (prefixes.index(prefix) if prefix in prefixes else len(prefixes), name)


def _matrix(raw: pl.DataFrame, names: list[str]) -> np.ndarray:
    """float64 [n, len(names)] with NaN for unknown values and for columns ``raw`` lacks. A
    role or SASS class the training data never had stays NaN (unknown) here."""
    columns = [
        raw[n].to_numpy().astype(np.float64) if n in raw.columns else np.full(raw.height, np.nan)
        for n in names
    ]
    return np.column_stack(columns) if columns else np.zeros((raw.height, 0))
