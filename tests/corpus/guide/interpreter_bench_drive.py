"""Drives ``corpus.guide.prune_configs`` and ``corpus.guide.attach`` on Triton's interpreter with
no ``do_bench`` given, in a process of its own (the interpreter is selected before Triton is
imported; see tests/corpus/guide/drive.py).

``python -m tests.corpus.guide.interpreter_bench_drive OUT_DIR MODEL_DIR`` (from the repository
root, with TRITON_INTERPRET=1) writes ``OUT_DIR/report.json``. Nothing here imports Triton at
module level: the provider's compile worker is a ``spawn`` process, which re-imports this main
module first.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.corpus.guide.drive import configs, launch


def scenarios(out: Path, model: str) -> dict[str, Any]:
    import triton

    import corpus.record
    from corpus.guide import attach, prune_configs
    from schemas import read_table
    from tests.corpus.guide.kernels import scale_kernel

    report: dict[str, Any] = {}
    # prune_configs, no do_bench: Triton benchmarks the model's top 2 of 6
    guided = triton.autotune(configs(), key=["n_elements"], prune_configs_by=prune_configs(model, top_k=2))(
        scale_kernel
    )
    report["guided"] = {
        "correct": launch(guided, 1000),
        "benchmarked": len(guided.configs_timings),
        "bench": type(vars(guided).get("do_bench")).__name__,
    }
    # attach to a kernel decorated without a bench; top_k above the configs: Triton benchmarks all
    plain = triton.autotune(configs(), key=["n_elements"])(scale_kernel)
    attach(plain, model, top_k=8)
    report["attached"] = {"correct": launch(plain, 1000), "benchmarked": len(plain.configs_timings)}
    # a user's own bench is kept
    calls: list[int] = []

    def mine(kernel_call: Any, quantiles: Any = None, **_: Any) -> Any:
        calls.append(1)
        kernel_call()
        return [1.0 + len(calls)] * len(quantiles) if quantiles else 1.0 + len(calls)

    users = triton.autotune(
        configs(), key=["n_elements"], prune_configs_by=prune_configs(model, top_k=8), do_bench=mine
    )(scale_kernel)
    report["users"] = {
        "correct": launch(users, 1000),
        "calls": len(calls),
        "bench_kept": vars(users).get("do_bench", mine) is mine,
    }
    # recorded after the provider gave the kernel its bench: corpus.record's bench (every sample
    # kept, rep=5) times the new key, not the provider's
    with corpus.record(out=str(out / "recorded"), rep=5, warmup=0, compile_ir=False):
        launch(guided, 2000)
    rows = read_table(str(out / "recorded"), "measurements", columns=["status", "n_reps"]).to_pylist()
    report["recorded"] = sorted({(r["status"], r["n_reps"]) for r in rows})
    return report


def main() -> None:
    out, model = Path(sys.argv[1]), sys.argv[2]
    report = scenarios(out, model)
    (out / "report.json").write_text(json.dumps(report))


if __name__ == "__main__":
    main()
