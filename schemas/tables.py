"""The six dataset tables, declared once.

Every field carries a ``doc`` (meaning, and unit where one applies) in its Arrow field
metadata; ``python -m schemas doc`` renders these into ``docs/SCHEMA.md``. Everything else in
the project imports the schemas and field names from here.

Keys are content-derived; their derivations live in :mod:`schemas.identity`.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from schemas.enums import DEVICE_INTERPRETER

SCHEMA_VERSION = 2
"""Version of the table layout written by this code. Bump it and register a migration in
:mod:`schemas.migrations` whenever a field is added, removed, renamed or retyped."""

CHANGES: dict[int, str] = {
    2: "Training-ready columns and trustworthy labels: launch grid and program count, problem "
    "sizes apart from mode flags, knob roles, the IR target, CPU-time timing with interleaved "
    "passes, identical binaries measured once (same_binary_as), divisibility/contiguity of IR "
    "values, provenance of rows from other sources; ir_graphs.num_stages removed (an IR is "
    "shared by configs that differ in num_stages).",
}
"""What each version changed, rendered into docs/SCHEMA.md."""


def _f(name: str, type_: pa.DataType, doc: str, *, nullable: bool = True) -> pa.Field:
    return pa.field(name, type_, nullable=nullable, metadata={"doc": doc})


_VERSION = _f(
    "schema_version",
    pa.int32(),
    "Schema version of the file holding the row (what a plain Parquet reader sees). "
    "kernel-corpus's reader lifts rows of older files to the current version and reports that "
    "version; a lifted row's new fields are filled as 'Changes from version N' lists.",
    nullable=False,
)
_HARVEST = _f(
    "harvest_id",
    pa.string(),
    "Id of the harvest invocation that wrote the row (random per invocation), so repeats of "
    "the same run stay distinguishable; for a run imported from a tool's log, a hash of what "
    "the log says of that tuning, so importing the log again finds it committed.",
    nullable=False,
)
_ARCH = _f(
    "arch",
    pa.string(),
    f"Partition key: compute architecture of the device, e.g. 'sm_90', or '{DEVICE_INTERPRETER}' "
    "for Triton's CPU interpreter.",
    nullable=False,
)
_RUN_ID = _f("run_id", pa.string(), "Key of the autotune run (see runs.run_id).", nullable=False)
_IR_ID = _f(
    "ir_id",
    pa.string(),
    "Hash of the IR level name and the IR text with source locations stripped.",
    nullable=False,
)

NAMED_INT = pa.struct([pa.field("name", pa.string()), pa.field("value", pa.int64())])

KERNELS = pa.schema(
    [
        _VERSION,
        _f(
            "kernel_id",
            pa.string(),
            "Hash of the kernel module source text and entry name; for harvested rows also of the "
            "suite spec (its classes' names and the source of their modules other than the "
            "kernel's: inputs, reference, outputs, bind), so editing a spec changes kernel_id and "
            "run_id.",
            nullable=False,
        ),
        _f("family", pa.string(), "Suite family name, e.g. 'softmax'.", nullable=False),
        _f("category", pa.string(), "Suite category, e.g. 'normalization'."),
        _f("suite", pa.string(), "Python module the family was registered from."),
        _f("entry_name", pa.string(), "Name of the tuned @triton.jit entry function.", nullable=False),
        _f(
            "source",
            pa.large_string(),
            "Full source text of the module defining the kernel (the spec's other modules enter "
            "kernel_id but are not stored here).",
        ),
        _f("source_path", pa.string(), "Module path relative to its package root."),
    ]
)

RUNS = pa.schema(
    [
        _VERSION,
        _RUN_ID.with_metadata(
            {
                "doc": "Hash of kernel_id, input signature, device model and toolchain "
                "fingerprint; equal for re-harvests of the same thing."
            }
        ),
        _HARVEST,
        _f("kernel_id", pa.string(), "Key into kernels.", nullable=False),
        _f("family", pa.string(), "Suite family name (denormalized from kernels for filtering).", nullable=False),
        _f("scale", pa.string(), "Shape scale the run came from: tiny, small, default or large."),
        _f("shape_name", pa.string(), "Human-readable problem name, e.g. 'M4096_N4096'."),
        _f("problem_json", pa.string(), "Problem description as canonical JSON, sizes and mode flags together, e.g. {\"M\":4096,\"TRANS_B\":1}."),
        _f("problem_dims", pa.list_(NAMED_INT), "Problem sizes (elements, rows, ...) as name/value pairs, without mode flags; null when unknown (version-1 rows)."),
        _f("problem_flags", pa.list_(NAMED_INT), "Mode switches of the problem (e.g. TRANS_B=1, RESIDUAL=0) as name/value pairs; null when unknown."),
        _f("dtype", pa.string(), "Main element dtype of the problem, e.g. 'float16'."),
        _f("signature_json", pa.string(), "Canonical JSON of the input signature hashed into run_id."),
        _f("arg_names", pa.list_(pa.string()), "Kernel argument names in call order."),
        _f("arg_types", pa.list_(pa.string()), "Triton signature type per argument, e.g. '*fp16', 'i32', 'constexpr'."),
        _f("arg_shapes", pa.list_(pa.list_(pa.int64())), "Tensor shape per argument (empty for scalars)."),
        _f("stride_patterns", pa.list_(pa.string()), "Per-argument stride pattern, one char per dim: '0', '1' or 'n'."),
        _f("flops", pa.int64(), "Floating-point operations of one kernel launch (spec's count)."),
        _f("bytes_moved", pa.int64(), "Minimum DRAM bytes one launch must read plus write, bytes."),
        _f("arithmetic_intensity", pa.float64(), "flops / bytes_moved, FLOP per byte (null when bytes_moved is 0)."),
        _f("device_kind", pa.string(), "'cuda' or 'interpreter'.", nullable=False),
        _ARCH,
        _f("device_name", pa.string(), "Device model name, e.g. 'NVIDIA H100 80GB HBM3'."),
        _f("compute_capability", pa.string(), "Compute capability 'major.minor'; null on the interpreter."),
        _f("sm_count", pa.int32(), "Streaming multiprocessors."),
        _f("l2_bytes", pa.int64(), "L2 cache size, bytes."),
        _f("smem_per_block_bytes", pa.int64(), "Max shared memory per block (opt-in), bytes."),
        _f("total_memory_bytes", pa.int64(), "Device memory, bytes."),
        _f("sm_clock_mhz", pa.int32(), "SM clock at harvest time, MHz."),
        _f("mem_clock_mhz", pa.int32(), "Memory clock at harvest time, MHz."),
        _f("sm_clock_max_mhz", pa.int32(), "Maximum SM clock of the device, MHz."),
        _f("mem_clock_max_mhz", pa.int32(), "Maximum memory clock of the device, MHz."),
        _f("driver_version", pa.string(), "CUDA driver version."),
        _f("cuda_version", pa.string(), "CUDA runtime version torch was built with."),
        _f("triton_version", pa.string(), "triton.__version__."),
        _f("torch_version", pa.string(), "torch.__version__."),
        _f("toolchain_json", pa.string(), "Canonical JSON of the toolchain fingerprint hashed into run_id."),
        _f("ir_target", pa.string(), "Compile target of the stored IR graphs and static SASS stats, e.g. 'sm_90' (the device's own arch on a GPU; an explicit target on the interpreter)."),
        _f("hostname", pa.string(), "Machine that ran the harvest: its host name when harvested with --record-host, else an anonymous id stable per machine ('anon-' + 16 hex digits, a keyed hash of the host name; see schemas.machine). Version-1 rows hold host names until `python -m schemas scrub`."),
        _f("setup_error", pa.string(), "Why the run could not be set up (inputs, reference) on the benchmark device; null when it was. Such a run has no timed measurements: configs that compiled keep their compile outcome and IR, and their measurements rows have status skipped with error 'run setup failed: <reason>'."),
        _f("source", pa.string(), "Where the rows came from: harvest, record (a live workload's Triton autotuning), helion or tritonparse (imported logs); 'harvest' in lifted version-1 rows."),
        _f("source_ref", pa.string(), "The source's own id of this run (e.g. Helion's run_id), kept as provenance."),
        _f("autotune_cache_hit", pa.bool_(), "Runs of a live or traced autotuning (sources record and tritonparse): True when Triton's autotune cache served the tuning, so nothing was benchmarked; the run then has no measurements rows and best_config_id is the cached choice. Null for other sources."),
        _f("device_ir_id", pa.string(), "ir_id of the run's config-independent device IR graph when the source has one (Helion's device IR, level helion_fx); null otherwise."),
        _f("timer", pa.string(), "How latencies were taken: cuda_event, cuda_graph, thread_cpu or process_cpu (interpreter CPU time of the benchmark worker), wall (version 1), triton_do_bench (recorded from Triton's autotuner) or external (imported logs)."),
        _f("timing_passes", pa.int32(), "Interleaved passes over the run's configs (each pass times every config in a seeded random order)."),
        _f("reps_per_pass", pa.int32(), "Timed reps per config in each pass."),
        _f("host_load_1m", pa.float64(), "1-minute load average of the host when the run started (os.getloadavg)."),
        _f("l2_flush", pa.bool_(), "True when L2 was flushed before every timed rep."),
        _f("l2_flush_bytes", pa.int64(), "Size of the flush buffer, bytes (0 when not flushed)."),
        _f("warmup", pa.int32(), "Untimed launches before timing each config."),
        _f("rep", pa.int32(), "Timed repetitions requested per config."),
        _f("seed", pa.int64(), "Seed of the input builder and config order."),
        _f("n_configs", pa.int32(), "Configs attempted in this run by this harvest (its rows in measurements). This and the other per-run aggregates (n_ok, best_config_id, best_median_ms, default_median_ms) summarize one harvest as stored; read with harvests='latest' or 'pooled', a run with several harvests gets them recomputed over the configs that view gives."),
        _f("n_ok", pa.int32(), "Configs with status ok (of n_configs)."),
        _f("default_config_id", pa.string(), "config_id of the spec's untuned default config."),
        _f("best_config_id", pa.string(), "config_id with the lowest median latency of the n_configs configs (null when none ok)."),
        _f("best_median_ms", pa.float64(), "Median latency of the best config, ms."),
        _f("default_median_ms", pa.float64(), "Median latency of the default config, ms."),
        _f("started_at", pa.timestamp("ms", tz="UTC"), "Wall-clock start of the run."),
        _f("finished_at", pa.timestamp("ms", tz="UTC"), "Wall-clock end; the row landing commits the run."),
    ]
)

CONFIG_PARAM = pa.struct([pa.field("name", pa.string()), pa.field("value", pa.int64())])
CONFIG_ROLE = pa.struct([pa.field("name", pa.string()), pa.field("role", pa.string()), pa.field("value", pa.int64())])
SASS_CLASS_COUNT = pa.struct([pa.field("cls", pa.string()), pa.field("count", pa.int32())])

MEASUREMENTS = pa.schema(
    [
        _VERSION,
        _RUN_ID,
        _f("config_id", pa.string(), "Hash of the canonical config JSON (schemas.identity.config_id).", nullable=False),
        _HARVEST,
        _ARCH,
        _f("config_json", pa.string(), "Canonical JSON of the config (kwargs, num_warps, num_stages, num_ctas, maxnreg)."),
        _f("launch", pa.string(), "The config as a triton.Config(...) expression."),
        _f("config_params", pa.list_(CONFIG_PARAM), "Integer meta-parameters (BLOCK_M, ...) as name/value pairs."),
        _f("config_roles", pa.list_(CONFIG_ROLE), "Each meta-parameter with its role across families (tile_m, tile_n, tile_k, reduction_block, split, programs, group, rows_per_program, other) and value, so BLOCK_N of one family and BLOCK_V of another line up."),
        _f("num_warps", pa.int32(), "Warps per program."),
        _f("num_stages", pa.int32(), "Software-pipelining stages."),
        _f("num_ctas", pa.int32(), "CTAs per cluster."),
        _f("maxnreg", pa.int32(), "Register cap per thread; null when uncapped."),
        _f("is_default", pa.bool_(), "True for the spec's untuned default config."),
        _f("grid", pa.list_(pa.int64()), "Launch grid (programs along each axis) as the kernel was launched."),
        _f("num_programs", pa.int64(), "Product of the grid: programs launched."),
        _f("threads_per_program", pa.int32(), "num_warps x warp size (32)."),
        _f("status", pa.string(), "Outcome: ok, compile_error, out_of_resources, compile_timeout, runtime_error, timeout, mismatch, skipped.", nullable=False),
        _f("error", pa.string(), "Short error text for failed configs (null when ok)."),
        _f("max_abs_error", pa.float64(), "Largest absolute difference to the reference over all checked outputs."),
        _f("median_ms", pa.float64(), "Median latency of the timed reps, ms."),
        _f("mean_ms", pa.float64(), "Mean latency, ms."),
        _f("min_ms", pa.float64(), "Minimum latency, ms."),
        _f("max_ms", pa.float64(), "Maximum latency, ms."),
        _f("p20_ms", pa.float64(), "20th percentile latency, ms."),
        _f("p80_ms", pa.float64(), "80th percentile latency, ms."),
        _f("std_ms", pa.float64(), "Standard deviation of latency, ms."),
        _f("n_reps", pa.int32(), "Timed repetitions actually taken."),
        _f("samples_ms", pa.list_(pa.float32()), "Raw per-rep latencies in timing order (pass by pass), ms."),
        _f("same_binary_as", pa.string(), "config_id of the config of the same run whose identical binary and launch were checked and timed instead of this one; its outcome and timing are copied here (exact ties). On the interpreter, which ignores num_warps, num_stages, num_ctas and maxnreg, identical means the same meta-parameters, grid and arguments. Null when this config was timed itself."),
        _f("compile_time_s", pa.float64(), "Wall time of triton.compile for this config, seconds."),
        _f("ttir_id", pa.string(), "ir_id of the TTIR graph (null when compile failed)."),
        _f("ttgir_id", pa.string(), "ir_id of the TTGIR graph (null when compile failed)."),
        _f("binary_hash", pa.string(), "Hash of the compiled device binary (cubin bytes) and the metadata its launcher reads (warps, CTAs, shared memory, scratch sizes), as the compile worker built it. Not Triton's cache key, which also covers build options such as num_stages that may leave the binary unchanged."),
        _f("launch_verified", pa.bool_(), "True when the binary the benchmark worker's launch ran has binary_hash, False when it ran something else (timing then untrustworthy); null on the interpreter."),
        _f("n_regs", pa.int32(), "Registers per thread from the cubin."),
        _f("spill_bytes", pa.int32(), "Bytes moved by local-memory (spill) stores and loads (STL/LDL) in the SASS, per thread."),
        _f("shared_mem_bytes", pa.int32(), "Shared memory per block: the cubin's static allocation plus the dynamic bytes Triton requests at launch, bytes."),
        _f("sass_instructions", pa.int32(), "SASS instruction count of the cubin."),
        _f("sass_mix", pa.list_(SASS_CLASS_COUNT), "SASS instruction counts by class (memory, tensor, float, int, control, ...)."),
        _f("stats_note", pa.string(), "Why static stats are null, when they are."),
        _f("source_ref", pa.string(), "The source's own id of this config (e.g. Helion's config_id), kept as provenance."),
    ]
)

IR_GRAPHS = pa.schema(
    [
        _VERSION,
        _IR_ID,
        _f("level", pa.string(), "Partition key: IR level, 'ttir', 'ttgir' or 'helion_fx' (Helion's device IR).", nullable=False),
        _f("entry_name", pa.string(), "Name of the public tt.func."),
        _f("target", pa.string(), "Compile target, e.g. 'cuda:90'."),
        _f("num_warps", pa.int32(), "Module attribute ttg.num-warps (null at ttir)."),
        _f("num_ctas", pa.int32(), "Module attribute ttg.num-ctas (null at ttir)."),
        _f("num_nodes", pa.int32(), "Nodes (operations plus block arguments)."),
        _f("num_data_edges", pa.int32(), "Producer -> consumer edges, one per operand use."),
        _f("num_region_edges", pa.int32(), "Region edges (op -> block arg, terminator -> owner)."),
        _f("num_loops", pa.int32(), "scf.for and scf.while ops."),
        _f("num_reductions", pa.int32(), "tt.reduce and tt.scan ops."),
        _f("num_dots", pa.int32(), "tt.dot and MMA ops."),
        _f("num_loads", pa.int32(), "Global/descriptor load ops."),
        _f("num_stores", pa.int32(), "Global/descriptor store and atomic ops."),
        _f("max_depth", pa.int32(), "Deepest region nesting of any node."),
        _f("triton_version", pa.string(), "Triton that produced the IR."),
        _f("ir_text", pa.large_string(), "The IR text as compiled, with source locations whose file paths are relative to the package root (the form of kernels.source_path), never absolute paths of the writing machine."),
    ]
)

IR_NODES = pa.schema(
    [
        _VERSION,
        _IR_ID,
        _f("level", pa.string(), "Partition key: IR level.", nullable=False),
        _f("node_id", pa.int32(), "Deterministic node number within the graph (pre-order walk).", nullable=False),
        _f("node_kind", pa.string(), "'op' or 'block_arg'.", nullable=False),
        _f("op_name", pa.string(), "Operation name, e.g. 'tt.load'; for block arguments the owner's op name."),
        _f("dialect", pa.string(), "Dialect prefix of op_name, e.g. 'tt'."),
        _f("parent_id", pa.int32(), "node_id of the region-holding op containing this node; null at top."),
        _f("region_index", pa.int32(), "Index of the parent's region that holds this node."),
        _f("arg_index", pa.int32(), "Position among the block's arguments (block_arg nodes)."),
        _f("depth", pa.int32(), "Region nesting depth (function body = 1)."),
        _f("num_operands", pa.int32(), "Operands of the op."),
        _f("num_results", pa.int32(), "Results of the op."),
        _f("dtype", pa.string(), "Element type of the (first) result or block argument, e.g. 'f16', 'i32', 'ptr<f16>'."),
        _f("shape", pa.list_(pa.int64()), "Tensor shape of the (first) result; empty for scalars."),
        _f("numel", pa.int64(), "Elements of the (first) result (1 for scalars)."),
        _f("bitwidth", pa.int32(), "Bit width of the element type (64 for pointers)."),
        _f("is_pointer", pa.bool_(), "Element type is a pointer (or tensor of pointers)."),
        _f("layout", pa.string(), "TTGIR encoding kind: blocked, slice, mma, dot_op, shared, ... (null at ttir)."),
        _f("size_per_thread", pa.list_(pa.int32()), "Blocked layout sizePerThread."),
        _f("threads_per_warp", pa.list_(pa.int32()), "Blocked layout threadsPerWarp."),
        _f("warps_per_cta", pa.list_(pa.int32()), "Blocked/mma layout warpsPerCTA."),
        _f("order", pa.list_(pa.int32()), "Blocked/shared layout order."),
        _f("mma_version", pa.int32(), "MMA layout major version (2 Ampere, 3 Hopper, 5 Blackwell)."),
        _f("instr_shape", pa.list_(pa.int32()), "MMA instruction shape."),
        _f("swizzle_vec", pa.int32(), "Shared layout swizzle vector width."),
        _f("swizzle_per_phase", pa.int32(), "Shared layout perPhase."),
        _f("swizzle_max_phase", pa.int32(), "Shared layout maxPhase."),
        _f("axis", pa.int32(), "Reduce/scan/program-id axis."),
        _f("predicate", pa.string(), "Comparison predicate of cmpi/cmpf, e.g. 'slt'."),
        _f("constant", pa.float64(), "Value of a scalar or splat constant."),
        _f("range_start", pa.int64(), "tt.make_range start."),
        _f("range_end", pa.int64(), "tt.make_range end."),
        _f("divisibility", pa.int64(), "tt.divisibility of a function argument: a power of two known to divide its value (of a pointer: its address in bytes). Triton's launcher marks arguments that are multiples of 16, so mostly 16; null when unmarked."),
        _f("contiguity", pa.int64(), "tt.contiguity of a function argument, or the contiguity of an async global-to-shared copy (ttg.async_copy_global_to_local: elements per vectorized access)."),
        _f("loop_num_stages", pa.int32(), "tt.num_stages of an scf.for: the software-pipelining depth asked for this loop (tl.range(..., num_stages=...) or the config's num_stages)."),
        _f("num_pending", pa.int32(), "Asynchronous operations an async wait leaves in flight: ttg.async_wait num (copy groups), ttng.warp_group_dot_wait pendings (wgmma groups)."),
        _f("cache_modifier", pa.string(), "Load/store cache modifier, e.g. '.ca'."),
        _f("eviction_policy", pa.string(), "Load/store eviction policy, e.g. 'evict_last'."),
        _f("input_precision", pa.string(), "tt.dot input precision, e.g. 'tf32'."),
        _f("attrs_json", pa.string(), "Remaining attributes of the op as canonical JSON of their text."),
        _f("loc_line", pa.int32(), "Source line of the op's location."),
        _f("loc_col", pa.int32(), "Source column of the op's location."),
        _f("var_name", pa.string(), "Source variable name attached to the location, when any."),
    ]
)


@dataclass(frozen=True)
class IntegerAttribute:
    """An integer IR attribute copied into a typed ``ir_nodes`` column."""

    name: str
    """Attribute name as printed (and as key of ``attrs_json``), e.g. 'tt.divisibility'."""
    ops: tuple[str, ...] = ()
    """Op names the attribute is read from (a generic name like 'num'); empty: any node."""


IR_NODE_INTEGER_ATTRIBUTES: dict[str, tuple[IntegerAttribute, ...]] = {
    "divisibility": (IntegerAttribute("tt.divisibility"),),
    "contiguity": (IntegerAttribute("tt.contiguity"), IntegerAttribute("contiguity")),
    "loop_num_stages": (IntegerAttribute("tt.num_stages", ("scf.for",)),),
    "num_pending": (
        IntegerAttribute("num", ("ttg.async_wait",)),
        IntegerAttribute("pendings", ("ttng.warp_group_dot_wait",)),
    ),
}
"""Typed ``ir_nodes`` columns read from integer IR attributes: column -> the attributes whose
leading integer it holds (first present wins). Extraction (:mod:`extract.graph`) and the
version-1 migration both use it; ``attrs_json`` keeps the attributes too."""

IR_EDGES = pa.schema(
    [
        _VERSION,
        _IR_ID,
        _f("level", pa.string(), "Partition key: IR level.", nullable=False),
        _f("src", pa.int32(), "Source node_id.", nullable=False),
        _f("dst", pa.int32(), "Destination node_id.", nullable=False),
        _f("kind", pa.string(), "'data' (producer -> consumer) or 'region'.", nullable=False),
        _f(
            "position",
            pa.int32(),
            "data: operand index at the consumer. region op->arg: argument index in its block; "
            "region terminator->owner: the region index.",
        ),
        _f("region_index", pa.int32(), "Region of the owning op the edge belongs to (region edges)."),
        _f("result_index", pa.int32(), "data: which result of a multi-result producer is used (e.g. which iter_arg of an scf.for); null for block-argument producers and region edges."),
    ]
)


@dataclass(frozen=True)
class TableSpec:
    """How one table is keyed and laid out on disk."""

    name: str
    schema: pa.Schema
    key: tuple[str, ...]
    partition_by: tuple[str, ...]
    fixed: tuple[str, ...] = ()
    """Columns every copy of a row holds with the same values: what a content-keyed table's
    key hashes, and recorded outcomes no maintenance command rewrites (``scrub`` rewrites
    paths, host names and free text; ``compact`` and ``check --fix`` copy rows as they are).
    Copies of a key that differ there are refused (readers, ``check``, ``compact``), and a
    file replaces another only if it holds each of its rows with these values
    (:mod:`schemas.replacement`). IR tables: the columns that derive from what ``ir_id``
    hashes, the IR text without source locations (:data:`IR_UNHASHED`), list columns such as
    a node's ``shape`` included (compared through :func:`schemas.keys.value_strings`).
    """

    @property
    def identity(self) -> tuple[str, ...]:
        """The key, then :attr:`fixed`: what two copies of one row share."""
        return (*self.key, *self.fixed)


IR_UNHASHED = frozenset({"ir_text", "triton_version", "target", "entry_name", "loc_line", "loc_col", "var_name"})
"""IR columns that copies of one ``ir_id`` may hold differently: ``ir_id`` hashes the IR text
without source locations (:func:`schemas.identity.ir_id`), so the text as compiled and the
location columns differ between compiles from other paths or lines; one IR prints alike under
several Triton versions; a TTIR's ``target`` and a Helion graph's ``entry_name`` are given by
the compile, not read from the hashed text."""


def _ir_fixed(schema: pa.Schema, key: tuple[str, ...]) -> tuple[str, ...]:
    """The columns copies of an IR row share: every column but the key, the version and
    :data:`IR_UNHASHED`; list columns too (a node's ``shape`` derives from the hashed text like
    its ``dtype``: a copy that differs there is not the graph its id names)."""
    return tuple(f.name for f in schema if f.name not in (*key, "schema_version", *IR_UNHASHED))


def _ir_spec(name: str, schema: pa.Schema, key: tuple[str, ...]) -> TableSpec:
    return TableSpec(name, schema, key, ("level",), fixed=_ir_fixed(schema, key))


TABLES: dict[str, TableSpec] = {
    spec.name: spec
    for spec in (
        TableSpec("kernels", KERNELS, ("kernel_id",), (), fixed=("entry_name", "source")),
        TableSpec(
            "runs",
            RUNS,
            ("run_id", "harvest_id"),
            ("arch",),
            fixed=("kernel_id", "n_configs", "finished_at"),
        ),
        TableSpec(
            "measurements",
            MEASUREMENTS,
            ("run_id", "harvest_id", "config_id"),
            ("arch",),
            fixed=("config_json", "status", "median_ms", "n_reps"),
        ),
        _ir_spec("ir_graphs", IR_GRAPHS, ("ir_id",)),
        _ir_spec("ir_nodes", IR_NODES, ("ir_id", "node_id")),
        _ir_spec("ir_edges", IR_EDGES, ("ir_id", "src", "dst", "kind", "position")),
    )
}
"""All tables by name. ``key`` is unique within a dataset (after deduplication of content-keyed
tables, which may be written more than once by concurrent writers)."""


def table_spec(name: str) -> TableSpec:
    """The :class:`TableSpec` of ``name``; ``KeyError`` with the known names otherwise."""
    try:
        return TABLES[name]
    except KeyError:
        raise KeyError(f"unknown table {name!r}; known tables: {', '.join(TABLES)}") from None
