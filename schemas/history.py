"""Frozen field lists of earlier schema versions, so files written by older code can be
validated against what that code declared (see :mod:`schemas.validate`).

Never edit an entry: it describes files that exist. When SCHEMA_VERSION is bumped, copy the
then-current schemas here under the old version number. Field docs are not repeated; the
current ones live in :mod:`schemas.tables`.
"""

from __future__ import annotations

import pyarrow as pa

from schemas.tables import SCHEMA_VERSION, TABLES

_Field = tuple  # (name, type) or (name, type, nullable)

_V1: dict[str, tuple[_Field, ...]] = {
    "kernels": (
        ("schema_version", pa.int32(), False),
        ("kernel_id", pa.string(), False),
        ("family", pa.string(), False),
        ("category", pa.string()),
        ("suite", pa.string()),
        ("entry_name", pa.string(), False),
        ("source", pa.large_string()),
        ("source_path", pa.string()),
    ),
    "runs": (
        ("schema_version", pa.int32(), False),
        ("run_id", pa.string(), False),
        ("harvest_id", pa.string(), False),
        ("kernel_id", pa.string(), False),
        ("family", pa.string(), False),
        ("scale", pa.string()),
        ("shape_name", pa.string()),
        ("problem_json", pa.string()),
        ("dtype", pa.string()),
        ("signature_json", pa.string()),
        ("arg_names", pa.list_(pa.string())),
        ("arg_types", pa.list_(pa.string())),
        ("arg_shapes", pa.list_(pa.list_(pa.int64()))),
        ("stride_patterns", pa.list_(pa.string())),
        ("flops", pa.int64()),
        ("bytes_moved", pa.int64()),
        ("device_kind", pa.string(), False),
        ("arch", pa.string(), False),
        ("device_name", pa.string()),
        ("compute_capability", pa.string()),
        ("sm_count", pa.int32()),
        ("l2_bytes", pa.int64()),
        ("smem_per_block_bytes", pa.int64()),
        ("total_memory_bytes", pa.int64()),
        ("sm_clock_mhz", pa.int32()),
        ("mem_clock_mhz", pa.int32()),
        ("driver_version", pa.string()),
        ("cuda_version", pa.string()),
        ("triton_version", pa.string()),
        ("torch_version", pa.string()),
        ("toolchain_json", pa.string()),
        ("hostname", pa.string()),
        ("timer", pa.string()),
        ("l2_flush", pa.bool_()),
        ("l2_flush_bytes", pa.int64()),
        ("warmup", pa.int32()),
        ("rep", pa.int32()),
        ("seed", pa.int64()),
        ("n_configs", pa.int32()),
        ("n_ok", pa.int32()),
        ("default_config_id", pa.string()),
        ("best_config_id", pa.string()),
        ("best_median_ms", pa.float64()),
        ("default_median_ms", pa.float64()),
        ("started_at", pa.timestamp("ms", tz="UTC")),
        ("finished_at", pa.timestamp("ms", tz="UTC")),
    ),
    "measurements": (
        ("schema_version", pa.int32(), False),
        ("run_id", pa.string(), False),
        ("config_id", pa.string(), False),
        ("harvest_id", pa.string(), False),
        ("arch", pa.string(), False),
        ("config_json", pa.string()),
        ("launch", pa.string()),
        (
            "config_params",
            pa.list_(pa.struct([pa.field("name", pa.string()), pa.field("value", pa.int64())])),
        ),
        ("num_warps", pa.int32()),
        ("num_stages", pa.int32()),
        ("num_ctas", pa.int32()),
        ("maxnreg", pa.int32()),
        ("is_default", pa.bool_()),
        ("status", pa.string(), False),
        ("error", pa.string()),
        ("max_abs_error", pa.float64()),
        ("median_ms", pa.float64()),
        ("mean_ms", pa.float64()),
        ("min_ms", pa.float64()),
        ("max_ms", pa.float64()),
        ("p20_ms", pa.float64()),
        ("p80_ms", pa.float64()),
        ("std_ms", pa.float64()),
        ("n_reps", pa.int32()),
        ("samples_ms", pa.list_(pa.float32())),
        ("compile_time_s", pa.float64()),
        ("ttir_id", pa.string()),
        ("ttgir_id", pa.string()),
        ("n_regs", pa.int32()),
        ("spill_bytes", pa.int32()),
        ("shared_mem_bytes", pa.int32()),
        ("sass_instructions", pa.int32()),
        (
            "sass_mix",
            pa.list_(pa.struct([pa.field("cls", pa.string()), pa.field("count", pa.int32())])),
        ),
        ("stats_note", pa.string()),
    ),
    "ir_graphs": (
        ("schema_version", pa.int32(), False),
        ("ir_id", pa.string(), False),
        ("level", pa.string(), False),
        ("entry_name", pa.string()),
        ("target", pa.string()),
        ("num_warps", pa.int32()),
        ("num_stages", pa.int32()),
        ("num_ctas", pa.int32()),
        ("num_nodes", pa.int32()),
        ("num_data_edges", pa.int32()),
        ("num_region_edges", pa.int32()),
        ("num_loops", pa.int32()),
        ("num_reductions", pa.int32()),
        ("num_dots", pa.int32()),
        ("num_loads", pa.int32()),
        ("num_stores", pa.int32()),
        ("max_depth", pa.int32()),
        ("triton_version", pa.string()),
        ("ir_text", pa.large_string()),
    ),
    "ir_nodes": (
        ("schema_version", pa.int32(), False),
        ("ir_id", pa.string(), False),
        ("level", pa.string(), False),
        ("node_id", pa.int32(), False),
        ("node_kind", pa.string(), False),
        ("op_name", pa.string()),
        ("dialect", pa.string()),
        ("parent_id", pa.int32()),
        ("region_index", pa.int32()),
        ("arg_index", pa.int32()),
        ("depth", pa.int32()),
        ("num_operands", pa.int32()),
        ("num_results", pa.int32()),
        ("dtype", pa.string()),
        ("shape", pa.list_(pa.int64())),
        ("numel", pa.int64()),
        ("bitwidth", pa.int32()),
        ("is_pointer", pa.bool_()),
        ("layout", pa.string()),
        ("size_per_thread", pa.list_(pa.int32())),
        ("threads_per_warp", pa.list_(pa.int32())),
        ("warps_per_cta", pa.list_(pa.int32())),
        ("order", pa.list_(pa.int32())),
        ("mma_version", pa.int32()),
        ("instr_shape", pa.list_(pa.int32())),
        ("swizzle_vec", pa.int32()),
        ("swizzle_per_phase", pa.int32()),
        ("swizzle_max_phase", pa.int32()),
        ("axis", pa.int32()),
        ("predicate", pa.string()),
        ("constant", pa.float64()),
        ("range_start", pa.int64()),
        ("range_end", pa.int64()),
        ("cache_modifier", pa.string()),
        ("eviction_policy", pa.string()),
        ("input_precision", pa.string()),
        ("attrs_json", pa.string()),
        ("loc_line", pa.int32()),
        ("loc_col", pa.int32()),
        ("var_name", pa.string()),
    ),
    "ir_edges": (
        ("schema_version", pa.int32(), False),
        ("ir_id", pa.string(), False),
        ("level", pa.string(), False),
        ("src", pa.int32(), False),
        ("dst", pa.int32(), False),
        ("kind", pa.string(), False),
        ("position", pa.int32()),
        ("region_index", pa.int32()),
        ("result_index", pa.int32()),
    ),
}
"""Version 1 (commit f102c38): every table as (name, type[, nullable=True])."""

FROZEN: dict[int, dict[str, tuple[_Field, ...]]] = {1: _V1}
"""Older versions by number; tests may register a synthetic one."""


def _schema(fields: tuple[_Field, ...]) -> pa.Schema:
    return pa.schema(
        [pa.field(name, type_, nullable=rest[0] if rest else True) for name, type_, *rest in fields]
    )


def declared_schema(table: str, version: int) -> pa.Schema | None:
    """The schema code of ``version`` declared for ``table``; None when unknown (too old or
    newer than this code)."""
    if version == SCHEMA_VERSION:
        return TABLES[table].schema
    fields = FROZEN.get(version, {}).get(table)
    return _schema(fields) if fields is not None else None
