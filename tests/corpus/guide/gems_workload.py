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


def tune_with_own_tuner(libtuner: type) -> bool:
    """A kernel under a user's subclass of ``LibTuner`` whose ``run`` calls LibTuner's (as
    flag-gems invites: "overriding the policy or run method in a subclass"), launched once."""
    import torch
    import triton
    import triton.language as tl
    from flag_gems.utils.libentry import libtuner as decorate

    class CountingTuner(libtuner.get("default")):  # type: ignore[misc]  # flag-gems' default policy
        calls = 0

        def run(self, *args: Any, **kwargs: Any) -> Any:
            CountingTuner.calls += 1
            return super().run(*args, **kwargs)

    triton.knobs.runtime.interpret = False  # LibTuner wraps only a compiled JITFunction

    @decorate(configs=[triton.Config({"BLOCK": b}) for b in (64, 128)], key=["n"], policy=CountingTuner)
    @triton.jit
    def double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2.0, mask=mask)

    triton.knobs.runtime.interpret = True
    x = torch.randn(300)
    try:
        double.run(x, torch.empty_like(x), 300, grid=lambda meta: (triton.cdiv(300, meta["BLOCK"]),), warmup=False)
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
        report["subclassed"] = tune_with_own_tuner(libtuner)
    for name, recorder in [("inside", inside), ("before", before)]:
        report[name] = {"runs": recorder.summary.runs, "lost": recorder.summary.lost(),
                        "unseen": getattr(recorder.summary, "unseen_tunings", [])}  # fmt: skip
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
