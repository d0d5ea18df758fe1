"""Rank a held-out family's configs from ``python -m extract compile`` output with a checkpoint,
through ``python -m train.predict``, and compare with the latencies the dataset measured.

    python docs/examples/rank_held_out_family.py CHECKPOINT DATASET OUT [--family swiglu]

The checkpoint must not have seen the family (``checkpoint.json``: ``seen.families``; train
it with ``python -m train ... --final --exclude-families swiglu``). For one run of the family
(the first float32 one by run_id) every measured config is compiled on the CPU with its own
constexprs, num_warps and num_stages into ``OUT/cNN``; the candidates file carries the run's
knobs and problem facts (no outcome, no stored IR or static stats: those come from the
compile output); then the predict CLI ranks them and the script prints Kendall tau and the
top-1 slowdown against the measured medians. Only ``swiglu`` has its signature spelled out.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import polars as pl
from scipy.stats import kendalltau

from train.tables import load_samples

KERNELS = {"swiglu": ("corpus.suite.kernels.swiglu:swiglu_kernel", "*fp32,*fp32,i32,i32,i32,i32")}
OUTCOME = (
    *("status", "median_ms", "p20_ms", "p80_ms", "std_ms", "n_reps", "valid", "run_best_ms"),
    *("log_latency", "norm_runtime", "same_binary_as", "compile_time_s", "ir_id", "ttir_id"),
    *("ttgir_id", "n_regs", "spill_bytes", "shared_mem_bytes", "sass_instructions", "sass_mix"),
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("dataset")
    parser.add_argument("out", type=Path)
    parser.add_argument("--family", choices=tuple(KERNELS), default="swiglu")
    args = parser.parse_args()
    seen = json.loads((args.checkpoint / "checkpoint.json").read_text())["seen"]["families"]
    if args.family in seen:
        parser.error(f"the checkpoint was trained on {args.family}")
    samples = load_samples(args.dataset).filter(
        (pl.col("family") == args.family) & (pl.col("dtype") == "float32")
    )
    run = samples["run_id"].unique().sort()[0]
    rows = samples.filter(pl.col("run_id") == run)
    kernel, signature = KERNELS[args.family]
    directories = []
    for index, row in enumerate(rows.iter_rows(named=True)):
        directory = args.out / f"c{index:02d}"
        command = [sys.executable, "-m", "extract", "compile", kernel, "--signature", signature,
                   "--num-warps", str(row["num_warps"]), "--num-stages", str(row["num_stages"]),
                   "--out", str(directory)]  # fmt: skip
        for param in row["config_params"]:
            command += ["--constexpr", f"{param['name']}={param['value']}"]
        subprocess.run(command, check=True, capture_output=True)
        directories.append(directory.name)
    drop = [c for c in rows.columns if c in OUTCOME or c.startswith("ir_")]
    candidates = rows.drop(drop).with_columns(pl.Series("ir_dir", directories))
    candidates.write_parquet(args.out / "candidates.parquet")
    command = [sys.executable, "-m", "train.predict", "--checkpoint", str(args.checkpoint),
               "--candidates", str(args.out / "candidates.parquet"), "--ir", str(args.out),
               "--arch", "interpreter", "--out", str(args.out / "ranking.parquet"), "--top", "3"]  # fmt: skip
    print("$", " ".join(command))
    subprocess.run(command, check=True)
    ranking = pl.read_parquet(args.out / "ranking.parquet").drop("median_ms", strict=False)
    judged = ranking.join(rows.select("config_id", "median_ms"), on="config_id")
    tau = kendalltau(judged["median_ms"], judged["score"]).statistic
    best = judged["median_ms"].min()
    first = judged.filter(pl.col("rank") == 1)["median_ms"][0]
    print(
        f"run {run} ({args.family} float32 {rows['shape_name'][0]}), {rows.height} configs: "
        f"Kendall tau {tau:.3f}, top-1 slowdown {(first - best) / best:.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
