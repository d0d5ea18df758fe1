"""A workload launching flag-gems' ``sum_dim_kernel`` (4 configs) through its own autotuner,
``LibTuner`` (a subclass of Triton's ``Autotuner`` whose ``run`` tunes by itself: its key
strategy, policy and SQLite cache), inside ``with corpus.record(out=...)`` twice: flag-gems
imported during the first recording (as a workload under ``python -m corpus.record`` imports
it), then already imported before the second. In the first, the kernel is guided by MODEL
(``corpus.guide.attach``, top 2). Our own code; flag-gems 5.0.2 comes from PyPI.

flag-gems cannot be imported once Triton was imported with its interpreter on (its
``@libentry()`` wraps only a compiled ``JITFunction``, and its kernels call Triton's own jitted
helpers, interpreted then), so ``python -m corpus.record`` cannot run it on a CPU: this script
imports it with the interpreter off and turns the interpreter on for the recorder. The tuner
then fails at its first benchmark (Triton's benchmarker needs a GPU driver), which is expected.
``python gems_workload.py OUT MODEL`` without TRITON_INTERPRET, with ``GEMS_VENDOR`` and
``FLAGGEMS_DB_URL`` set (flag-gems asks the GPU for both otherwise); prints a JSON report.
"""

from __future__ import annotations

import importlib
import json
import sys
import warnings
from typing import Any


def tune(module: Any) -> bool:
    """Launch ``sum_dim_kernel`` once on a 16 x 300 matrix; False when it could not benchmark."""
    import torch
    import triton

    tuner = module.sum_dim_kernel.fn  # under @libentry()
    m, n = 16, 300
    x, out = torch.randn(m, n), torch.empty(m)
    try:
        tuner.run(x, out, m, n, grid=lambda meta: (triton.cdiv(m, meta["BLOCK_M"]),), warmup=False)
    except RuntimeError:  # no GPU driver to benchmark with
        return False
    return True


def main(out: str, model: str) -> None:
    import triton
    from triton.runtime.autotuner import Autotuner

    import corpus.record
    from corpus.guide import attach

    triton.knobs.runtime.interpret = True
    report: dict[str, Any] = {}
    with corpus.record(out=f"{out}/imported-inside", compile_ir=False) as inside:
        triton.knobs.runtime.interpret = False  # flag-gems' kernels must be compiled ones
        sums = importlib.import_module("flag_gems.ops.sum")
        triton.knobs.runtime.interpret = True
        ranker = attach(sums.sum_dim_kernel, model, top_k=2)  # the LibTuner under @libentry()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            report["benchmarked"] = tune(sums)
    chosen = ranker.latest.chosen if ranker.latest is not None else ()
    report["guided"] = {"compiles": ranker.compiles, "chosen": len(chosen),
                        "fallbacks": [str(w.message) for w in caught if "cannot rank" in str(w.message)]}  # fmt: skip
    libtuner = importlib.import_module("flag_gems.utils.libentry").LibTuner
    report["restored"] = libtuner.run.__qualname__ == "LibTuner.run" and "__init_subclass__" not in Autotuner.__dict__
    with corpus.record(out=f"{out}/imported-before", compile_ir=False) as before:
        tune(sums)
    for name, recorder in [("inside", inside), ("before", before)]:
        report[name] = {"runs": recorder.summary.runs, "lost": recorder.summary.lost(),
                        "unseen": getattr(recorder.summary, "unseen_tunings", [])}  # fmt: skip
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
