"""An analytic rule, no learning: what a performance engineer would guess from the launch.

- Triton's interpreter runs a kernel's programs one after another in Python, and each
  program's block operations are vectorized with numpy: the per-program overhead dominates,
  so **more programs is slower** (score = log2 num_programs). When num_programs is unknown
  (version-1 rows) it is estimated from the tiles: bigger tiles mean fewer programs, while
  ``programs`` / ``split`` knobs mean more.
- On a GPU: a **roofline** estimate. A launch needs max(flops / peak FLOP/s, bytes / peak
  bandwidth) at full machine use; it gets only the fraction of the SMs its programs occupy, and
  its last wave runs partly empty. Peaks come from the device facts (SM count, clock, compute
  capability; tensor-core rate when the IR has dots on 16-bit inputs) and a small table of
  memory bandwidths by device name; unknown ones fall back to H100-like values (only ratios
  within a run matter for ranking).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from schemas.enums import DEVICE_INTERPRETER
from train.baselines.base import Baseline

BANDWIDTH_BYTES_PER_S: dict[str, float] = {
    "B200": 8.0e12,
    "H200": 4.8e12,
    "H100": 3.35e12,
    "H800": 3.35e12,
    "GH200": 4.0e12,
    "A100": 2.0e12,
    "A800": 2.0e12,
    "L40S": 0.86e12,
    "L40": 0.86e12,
    "L4": 0.3e12,
    "A10": 0.6e12,
    "V100": 0.9e12,
    "T4": 0.32e12,
    "4090": 1.0e12,
    "3090": 0.94e12,
}
"""Peak DRAM bandwidth by a fragment of the device name (vendor data sheets, rounded)."""

FLOPS_PER_CLOCK_PER_SM = {
    "fp32": 256.0,
    "tensor_16bit": {7: 1024.0, 8: 2048.0, 9: 4096.0, 10: 8192.0, 12: 2048.0},
}
"""Dense FLOPs per SM per clock: FP32 FMA lanes x 2, and 16-bit tensor cores by CC major."""

_DEFAULT = {"sm_count": 132, "clock_mhz": 1755.0, "cc_major": 9, "bandwidth": 3.35e12}
_MAX_WARPS_PER_SM = 64
_WARPS_TO_SATURATE_DRAM = 8
"""Warps per SM needed in flight before DRAM bandwidth is reached (latency hiding)."""


def bandwidth_of(device_name: str | None) -> float | None:
    """Peak DRAM bandwidth (bytes/s) of a device by name, or None when not in the table."""
    if not device_name:
        return None
    for fragment, value in BANDWIDTH_BYTES_PER_S.items():
        if fragment in device_name:
            return value
    return None


def estimated_programs_log2(frame: pl.DataFrame) -> np.ndarray:
    """log2 of the programs a config launches: ``num_programs`` when recorded, otherwise
    -sum(log2 tile-like knobs) + sum(log2 of ``programs``/``split`` knobs) (up to a per-run
    constant, which ranking within a run ignores)."""
    as_other = pl.col("config_params").list.eval(
        pl.struct(
            pl.element().struct.field("name"),
            pl.lit("other").alias("role"),
            pl.element().struct.field("value"),
        )
    )
    params = pl.coalesce(pl.col("config_roles"), as_other)
    signed = params.list.eval(
        pl.when(pl.element().struct.field("role").is_in(["programs", "split"]))
        .then(1.0)
        .otherwise(-1.0)
        * pl.element().struct.field("value").cast(pl.Float64).clip(lower_bound=1).log(2)
    ).list.sum()
    recorded = pl.when(pl.col("num_programs") > 0).then(
        pl.col("num_programs").cast(pl.Float64).log(2)
    )
    return (
        frame.select(pl.coalesce(recorded, signed, pl.lit(0.0)))
        .to_series()
        .to_numpy()
        .astype(np.float64)
    )


def roofline_ms(frame: pl.DataFrame) -> np.ndarray:
    """Roofline estimate of each GPU row's latency in ms (see the module docstring); NaN where
    flops, bytes or num_programs are unknown."""
    rows = frame.select(
        "flops",
        "bytes_moved",
        "num_programs",
        "num_warps",
        "sm_count",
        "sm_clock_max_mhz",
        "compute_capability",
        "device_name",
        "dtype",
        "ir_num_dots",
        "shared_mem_bytes",
        "smem_per_block_bytes",
        "spill_bytes",
    ).to_dicts()
    return np.array([_roofline_row(r) for r in rows], dtype=np.float64)


def _roofline_row(row: dict) -> float:
    flops, bytes_moved, programs = row["flops"], row["bytes_moved"], row["num_programs"]
    if flops is None or bytes_moved is None or not programs:
        return math.nan
    sms = row["sm_count"] or _DEFAULT["sm_count"]
    clock_hz = 1e6 * (row["sm_clock_max_mhz"] or _DEFAULT["clock_mhz"])
    try:
        cc_major = int(float(row["compute_capability"]))
    except (TypeError, ValueError):
        cc_major = _DEFAULT["cc_major"]
    uses_tensor_cores = (row["ir_num_dots"] or 0) > 0 and row["dtype"] in (
        "float16",
        "bfloat16",
        "float8_e4m3fn",
        "float8_e5m2",
    )
    per_clock = (
        FLOPS_PER_CLOCK_PER_SM["tensor_16bit"].get(cc_major, 2048.0)
        if uses_tensor_cores
        else FLOPS_PER_CLOCK_PER_SM["fp32"]
    )
    peak_flops = per_clock * sms * clock_hz
    bandwidth = bandwidth_of(row["device_name"]) or _DEFAULT["bandwidth"]
    warps = max(1, row["num_warps"] or 4)
    resident = max(1, _MAX_WARPS_PER_SM // warps)
    if row["shared_mem_bytes"] and row["smem_per_block_bytes"]:
        resident = max(
            1, min(resident, row["smem_per_block_bytes"] // max(1, row["shared_mem_bytes"]))
        )
    slots = sms * resident
    waves = math.ceil(programs / slots)
    busy_sms = min(programs, sms) / sms
    # Warps in flight on each busy SM hide DRAM latency; too few and bandwidth is not reached.
    warps_per_busy_sm = min(programs * warps / min(programs, sms), resident * warps)
    memory_use = min(1.0, warps_per_busy_sm / _WARPS_TO_SATURATE_DRAM) * busy_sms
    seconds = max(flops / (peak_flops * busy_sms), bytes_moved / (bandwidth * memory_use))
    tail = waves * slots / programs if programs > slots else 1.0
    spill_seconds = (row["spill_bytes"] or 0) * programs * warps * 32 / bandwidth
    return 1e3 * (seconds * tail + spill_seconds)


def analytic_prior(frame: pl.DataFrame) -> np.ndarray:
    """The analytic rule's estimate of each row's ln latency, up to a per-run constant
    (float64 [n_rows]): ln(programs) on interpreter rows (and on GPU rows whose roofline is
    unknown), ln(roofline ms) on GPU rows. Only differences within a run carry meaning; this
    is the prior that neural models with ``prior`` add their residual to."""
    programs = estimated_programs_log2(frame) * math.log(2.0)
    on_gpu = (frame["arch"] != DEVICE_INTERPRETER).fill_null(False).to_numpy()
    if not on_gpu.any():
        return programs
    estimate = np.log(roofline_ms(frame))
    return np.where(on_gpu & np.isfinite(estimate), estimate, programs)


class AnalyticBaseline(Baseline):
    """Interpreter rows: more programs is slower. GPU rows: the roofline estimate (programs
    rule where it is unknown). No fitting."""

    name = "analytic"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed  # unused: the rule is deterministic; kept for a uniform constructor

    def predict(self, frame: pl.DataFrame, X: np.ndarray) -> np.ndarray:
        return analytic_prior(frame)

    def predict_ms(self, frame: pl.DataFrame, X: np.ndarray) -> np.ndarray | None:
        """The roofline estimate on GPU rows (NaN on interpreter rows); None without GPU rows."""
        on_gpu = (frame["arch"] != DEVICE_INTERPRETER).fill_null(False).to_numpy()
        return np.where(on_gpu, roofline_ms(frame), np.nan) if on_gpu.any() else None
