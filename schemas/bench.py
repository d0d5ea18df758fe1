"""``python -m schemas.bench``: write and read a synthetic measurements table.

Prints rows/s for writing (DatasetWriter), reading (gated pyarrow read_table and polars
scan_table) and on-disk bytes per row, without and with raw per-rep samples; then the gated
readers against plain ``pyarrow.dataset`` and ``pl.scan_parquet`` on the same files, as
ratios measured in one run (median of ``--rounds``, the two sides alternating): the first
gated read (which checks the table's keys) and later ones (the verdict is remembered per
set of files, :mod:`schemas.verdicts`); each of all rows (``committed_only=False``) and of
committed runs, the readers' default (which also reads ``runs`` and, the first time, checks
that every committed run has all its rows). Also the time to compact the rows written in few
files and in eight times as many (what compacting costs per file).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from schemas import verdicts
from schemas.argtypes import non_negative_int, positive_int
from schemas.extras import missing_extra_message, missing_modules
from schemas.helptext import plain
from schemas.identity import canonical_json, config_id, launch_string
from schemas.reader import COMPLETE_VERDICT, STATISTICS_VERDICTS, read_table, scan_table
from schemas.storage import resolve
from schemas.writer import DatasetWriter


@dataclass(frozen=True)
class BenchConfig:
    rows: int
    rows_per_file: int
    samples_per_row: int
    seed: int
    rounds: int = 3


def synthetic_measurements(rows: int, samples_per_row: int, seed: int) -> pa.Table:
    """Measurement rows shaped like a real harvest: ~60 configs per run, realistic spreads."""
    import numpy as np  # the synthetic values only: the reader itself needs no numpy (the 'bench' extra)

    rng = np.random.default_rng(seed)
    configs = []
    for block_m in (16, 32, 64, 128, 256):
        for block_n in (32, 64, 128, 256):
            for warps in (2, 4, 8):
                kwargs = {"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_K": 64, "GROUP_M": 8}
                configs.append((kwargs, warps, 3))
    run_count = rows // len(configs) + 1
    run_ids = [f"{i:016x}" for i in rng.integers(0, 2**62, run_count)]
    index = np.arange(rows)
    config_index = index % len(configs)
    median = rng.lognormal(mean=-2.0, sigma=1.0, size=rows)
    spread = median * rng.uniform(0.001, 0.05, size=rows)
    table = {
        "run_id": [run_ids[i // len(configs)] for i in index],
        "config_id": [config_id(configs[c][0], configs[c][1], configs[c][2]) for c in config_index],
        "harvest_id": ["0123456789abcdef"] * rows,
        "arch": ["sm_90"] * rows,
        "config_json": [canonical_json({"kwargs": configs[c][0], "num_warps": configs[c][1]}) for c in config_index],
        "launch": [launch_string(configs[c][0], configs[c][1], configs[c][2]) for c in config_index],
        "config_params": [[{"name": k, "value": v} for k, v in configs[c][0].items()] for c in config_index],
        "num_warps": [configs[c][1] for c in config_index],
        "num_stages": [3] * rows,
        "num_ctas": [1] * rows,
        "is_default": (config_index == 0).tolist(),
        "status": np.where(rng.uniform(size=rows) < 0.9, "ok", "out_of_resources").tolist(),
        "median_ms": median,
        "mean_ms": median + spread * 0.1,
        "min_ms": median - spread,
        "max_ms": median + 2 * spread,
        "p20_ms": median - spread * 0.5,
        "p80_ms": median + spread * 0.5,
        "std_ms": spread * 0.3,
        "n_reps": [100] * rows,
        "compile_time_s": rng.uniform(0.2, 2.0, size=rows),
        "ttir_id": [f"{(c * 7919) % 2**60:016x}" for c in config_index],
        "ttgir_id": [f"{(c * 104729) % 2**60:016x}" for c in config_index],
        "n_regs": rng.integers(32, 255, size=rows).astype(np.int32),
        "shared_mem_bytes": rng.integers(0, 200_000, size=rows).astype(np.int32),
        "sass_instructions": rng.integers(200, 5000, size=rows).astype(np.int32),
    }
    if samples_per_row:
        noise = rng.normal(1.0, 0.02, size=(rows, samples_per_row)).astype(np.float32)
        samples = (noise * median[:, None].astype(np.float32)).ravel()
        offsets = np.arange(0, rows * samples_per_row + 1, samples_per_row, dtype=np.int32)
        table["samples_ms"] = pa.ListArray.from_arrays(offsets, pa.array(samples, pa.float32()))
    return pa.table(table)


def synthetic_runs(measurements: pa.Table) -> pa.Table:
    """One ``runs`` row per run of ``measurements``, committing it with its row count."""
    counts = measurements.group_by("run_id").aggregate([("run_id", "count")])
    runs = counts.num_rows
    return pa.table(
        {
            "run_id": counts["run_id"],
            "harvest_id": ["0123456789abcdef"] * runs,
            "kernel_id": ["bench-kernel"] * runs,
            "family": ["bench"] * runs,
            "device_kind": ["cuda"] * runs,
            "arch": ["sm_90"] * runs,
            "device_name": ["synthetic"] * runs,
            "n_configs": pc.cast(counts["run_id_count"], pa.int32()),
        }
    )


def _directory_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*.parquet"))


def bench_once(config: BenchConfig, samples_per_row: int) -> dict[str, float]:
    table = synthetic_measurements(config.rows, samples_per_row, config.seed)
    root = Path(tempfile.mkdtemp(prefix="schemas-bench-"))
    try:
        writer = DatasetWriter(str(root))
        start = time.perf_counter()
        for offset in range(0, table.num_rows, config.rows_per_file):
            writer.write("measurements", table.slice(offset, config.rows_per_file))
        write_s = time.perf_counter() - start
        start = time.perf_counter()
        arrow_rows = read_table(str(root), "measurements", committed_only=False).num_rows
        read_arrow_s = time.perf_counter() - start
        start = time.perf_counter()
        polars_rows = scan_table(str(root), "measurements", committed_only=False).collect().height
        read_polars_s = time.perf_counter() - start
        assert arrow_rows == polars_rows == config.rows, (arrow_rows, polars_rows)
        return {
            "write_rows_per_s": config.rows / write_s,
            "read_arrow_rows_per_s": config.rows / read_arrow_s,
            "read_polars_rows_per_s": config.rows / read_polars_s,
            "bytes_per_row": _directory_bytes(root) / config.rows,
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


COMPACT_FILE_FACTOR = 8
"""The second compaction merges this many times more files of the same rows."""


def compact_seconds(config: BenchConfig) -> dict[int, float]:
    """Files -> seconds to compact ``config.rows`` synthetic measurement rows (no samples)
    written in that many files of one partition: ``rows / rows_per_file`` files, then
    :data:`COMPACT_FILE_FACTOR` times as many smaller ones. The merge reads and writes the same
    rows either way, so the ratio shows what compacting costs per file (checking each
    replaced file against the merge, :func:`schemas.replacement.replace_files`)."""
    from schemas.compact import compact_dataset

    table = synthetic_measurements(config.rows, 0, config.seed)
    few = max(2, -(-config.rows // config.rows_per_file))
    seconds = {}
    for files in (few, few * COMPACT_FILE_FACTOR):
        root = Path(tempfile.mkdtemp(prefix="schemas-bench-"))
        try:
            writer = DatasetWriter(str(root))
            step = -(-table.num_rows // files)
            for offset in range(0, table.num_rows, step):
                writer.write("measurements", table.slice(offset, step))
            start = time.perf_counter()
            merged = compact_dataset(str(root))
            seconds[files] = time.perf_counter() - start
            assert sum(result.rows for result in merged) == config.rows, merged
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return seconds


def _timed(read) -> float:
    start = time.perf_counter()
    read()
    return time.perf_counter() - start


@dataclass(frozen=True)
class Ratio:
    """Seconds of a gated reader and of its plain counterpart on the same files."""

    gated_s: float
    plain_s: float

    @property
    def ratio(self) -> float:
        return self.gated_s / self.plain_s


def reader_ratios(config: BenchConfig) -> dict[str, Ratio]:
    """Gated vs plain readers on one freshly written table (no samples): the first read of
    each gated reader (keys checked) and the median of ``config.rounds`` later reads, the two
    sides alternating so that load drifts hit both alike. The first ``read_table`` is timed
    before polars is imported when it was not yet (its key check then runs in pyarrow, as
    for a pyarrow-only user); ``scan_table`` users have polars, whose hash screens keys."""
    import pyarrow.dataset as ds

    table = synthetic_measurements(config.rows, 0, config.seed)
    root = Path(tempfile.mkdtemp(prefix="schemas-bench-"))
    try:
        writer = DatasetWriter(str(root))
        for offset in range(0, table.num_rows, config.rows_per_file):
            writer.write("measurements", table.slice(offset, config.rows_per_file))
        writer.commit_run(synthetic_runs(table))
        url = str(root)
        loc = resolve(url)
        glob = str(root / "measurements" / "*" / "part-*.parquet")

        def plain_polars():
            import polars as pl

            return pl.scan_parquet(glob, hive_partitioning=False).collect()

        readers = {
            "read_table": (
                lambda: read_table(url, "measurements", committed_only=False),
                lambda: ds.dataset(root / "measurements", format="parquet").to_table(),
            ),
            "scan_table().collect()": (
                lambda: scan_table(url, "measurements", committed_only=False).collect(),
                plain_polars,
            ),
            "read_table, committed runs": (
                lambda: read_table(url, "measurements"),
                lambda: ds.dataset(root / "measurements", format="parquet").to_table(),
            ),
            "scan_table().collect(), committed runs": (
                lambda: scan_table(url, "measurements").collect(),
                plain_polars,
            ),
        }
        results: dict[str, Ratio] = {}
        for name, (gated, plain) in readers.items():
            plain()  # page cache warm for both sides
            first_checked = ("measurements", "runs", COMPLETE_VERDICT)
            statistics_checked = [t + s for t in ("measurements", "runs") for s in STATISTICS_VERDICTS]
            for slot in (*first_checked, *statistics_checked):
                verdicts.forget(loc, slot)  # its first read checks them
            check = "polars hash" if "polars" in sys.modules else "pyarrow group-by"
            results[f"{name}, first read ({check})"] = Ratio(_timed(gated), _timed(plain))
            rounds = [(_timed(gated), _timed(plain)) for _ in range(config.rounds)]
            results[name] = Ratio(
                statistics.median(g for g, _ in rounds), statistics.median(p for _, p in rounds)
            )
        return results
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m schemas.bench", description=plain(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=positive_int, default=1_000_000, help="synthetic measurement rows (default: 1,000,000)")
    parser.add_argument("--rows-per-file", type=positive_int, default=250_000, help="rows per Parquet file (default: 250,000)")
    parser.add_argument("--samples", type=non_negative_int, default=50, help="raw samples per row for the second pass (default: 50)")
    parser.add_argument("--seed", type=non_negative_int, default=0, help="seed of the synthetic values (default: 0)")
    parser.add_argument("--rounds", type=positive_int, default=3, help="timed reads per reader for the ratios, the median taken (default: 3)")
    parser.add_argument("--ratios-only", action="store_true", help="only the gated vs plain reader ratios (default: every figure)")
    args = parser.parse_args(argv)
    missing = missing_modules(("numpy",))
    if missing:  # the reader-alone install: one line naming the extra, as the other commands say it
        print(f"error: {missing_extra_message('schemas.bench', 'bench', missing)}", file=sys.stderr)
        raise SystemExit(1)
    config = BenchConfig(args.rows, args.rows_per_file, args.samples, args.seed, args.rounds)
    print(f"measurements table, {config.rows:,} synthetic rows, zstd, {config.rows_per_file:,} rows per file")
    if not args.ratios_only:
        print(f"{'variant':<22}{'write rows/s':>15}{'read pyarrow rows/s':>22}{'read polars rows/s':>21}{'bytes/row':>12}")
        for label, samples in (("no samples", 0), (f"{config.samples_per_row} samples/row", config.samples_per_row)):
            result = bench_once(config, samples)
            print(
                f"{label:<22}{result['write_rows_per_s']:>15,.0f}{result['read_arrow_rows_per_s']:>22,.0f}"
                f"{result['read_polars_rows_per_s']:>21,.0f}{result['bytes_per_row']:>12.1f}"
            )
        seconds = compact_seconds(config)
        (few, few_s), (many, many_s) = seconds.items()
        print(
            f"compact {config.rows:,} rows (one partition): {few} files {few_s:.2f} s, {many} files "
            f"{many_s:.2f} s, ratio {many_s / few_s:.2f}x for {many // few}x the files"
        )
        print()
    print(f"gated readers vs plain ones on the same files (no samples; median of {config.rounds}; goal <= 1.3x):")
    print(f"{'reader':<66}{'gated s':>10}{'plain s':>10}{'ratio':>8}  plain")
    plain_names = {"read_table": "pyarrow.dataset(...).to_table()", "scan_table().collect()": "pl.scan_parquet(...).collect()"}
    for name, ratio in reader_ratios(config).items():
        reference = plain_names[name.split(",")[0]]  # plain readers read every row: no gate
        print(f"{name:<66}{ratio.gated_s:>10.3f}{ratio.plain_s:>10.3f}{ratio.ratio:>7.2f}x  {reference}")


if __name__ == "__main__":
    main()
