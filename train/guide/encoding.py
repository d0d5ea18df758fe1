"""The configs of one run as numbers an in-loop tuner can compare: :func:`config_matrix` for
LFBO's classifier to split on, :func:`knob_matrix` for expected improvement's distances.

Within one run every config shares the kernel, problem and device, so what tells configs apart
is their knobs (each meta-parameter by name, warps, stages), their launch (programs) and what
the compiler made of them (IR summary counts, registers, spills, shared memory). Sizes are
log2 (a tile of 64 vs 128 is one step); a value the row lacks is -1, which a tree separates
from every real value.
"""

from __future__ import annotations

import numpy as np
import polars as pl

SIZE_COLUMNS = ("num_warps", "num_programs", "shared_mem_bytes", "spill_bytes")
"""Launch and static sizes taken as log2(1 + value)."""
COUNT_COLUMNS = (
    "num_stages",
    "n_regs",
    "ir_num_nodes",
    "ir_num_loops",
    "ir_num_reductions",
    "ir_num_dots",
    "ir_num_loads",
    "ir_num_stores",
)
"""Counts taken as they are."""
MISSING = -1.0


KNOB_COLUMNS = ("num_warps", "num_stages", "num_programs")
"""Launch knobs every config row carries, besides its meta-parameters."""


def knob_matrix(run: pl.DataFrame) -> np.ndarray:
    """float64 [n_configs, n_knobs] for the rows of one run (row order kept): what a config
    *is*, as the tuner chose it: each meta-parameter of ``config_params`` (log2), warps and
    programs (log2(1 + v)) and stages; a value the row lacks is :data:`MISSING`. The same in
    the replay (samples) and in the harvest (candidates), which compiled-code columns are not."""
    return _matrix(run, KNOB_COLUMNS)


def _param_columns(run: pl.DataFrame) -> list[np.ndarray]:
    if "config_params" not in run.columns:
        return []
    params = [{p["name"]: p["value"] for p in (row or [])} for row in run["config_params"].to_list()]
    columns = []
    for name in sorted({key for row in params for key in row}):
        values = np.array([row.get(name, np.nan) for row in params], dtype=np.float64)
        columns.append(np.log2(np.clip(values, 1, None)))
    return columns


def config_matrix(run: pl.DataFrame) -> np.ndarray:
    """float64 [n_configs, n_features] for the rows of one run (row order kept): one column per
    meta-parameter name in ``config_params`` (log2 of its value), then :data:`SIZE_COLUMNS`
    (log2(1 + v)) and :data:`COUNT_COLUMNS`; columns the frame lacks are left out."""
    return _matrix(run, (*SIZE_COLUMNS, *COUNT_COLUMNS))


def _matrix(run: pl.DataFrame, names: tuple[str, ...]) -> np.ndarray:
    """The meta-parameter columns, then each of ``names`` the frame has (sizes, those of
    :data:`SIZE_COLUMNS`, as log2(1 + v); counts as they are); non-finite values MISSING."""
    columns = _param_columns(run)
    for name in names:
        if name in run.columns:
            values = run[name].cast(pl.Float64).to_numpy().astype(np.float64)
            columns.append(np.log2(1 + np.clip(values, 0, None)) if name in SIZE_COLUMNS else values)
    if not columns:
        return np.zeros((run.height, 1))
    matrix = np.column_stack(columns)
    return np.where(np.isfinite(matrix), matrix, MISSING)
