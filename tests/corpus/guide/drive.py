"""Drives the Triton plug-in (corpus.guide.prune_configs) on the interpreter in a process of its
own: Triton's interpreter must be selected before Triton is imported, which the pytest process
did long before (see tests/corpus/record/drive.py).

``python -m tests.corpus.guide.drive OUT_DIR MODEL_DIR FOREIGN_MODEL_DIR`` (the last: a model
that never saw the interpreter; from the repository root, with
TRITON_INTERPRET=1) runs the scenarios and writes ``OUT_DIR/report.json``; the tests assert on
it. Nothing here imports Triton at module level: the compile worker is a ``spawn`` process,
which re-imports this main module first.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

BLOCKS = (16, 32, 64, 128, 256, 512)


def configs() -> list[Any]:
    import triton

    return [triton.Config({"BLOCK": b}, num_warps=w) for b in BLOCKS for w in (1, 4)][:6]


def launch(tuned: Any, n: int) -> bool:
    """Launch the autotuned kernel on ``n`` elements; True when the output is right."""
    import torch
    import triton

    x = torch.randn(n)
    out = torch.empty_like(x)
    tuned[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    return bool(torch.allclose(out, 2 * x + 1))


def guided(model: str) -> dict[str, Any]:
    """top_k=2 of 6 configs: what Triton benchmarked, the best, the provider's compiles."""
    import triton

    from corpus.guide import prune_configs
    from corpus.guide.bench import cpu_bench
    from tests.corpus.guide.kernels import scale_kernel

    prune = prune_configs(model, top_k=2)
    ranker = prune["early_config_prune"]
    tuned = triton.autotune(configs(), key=["n_elements"], prune_configs_by=prune, do_bench=cpu_bench)(
        scale_kernel
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        correct = launch(tuned, 1000)
        benchmarked = [c.all_kwargs() for c in tuned.configs_timings]
        best = tuned.best_config.all_kwargs()
        first_compiles = ranker.compiles
        tuned.cache.clear()  # the same key again: the provider's cache answers
        launch(tuned, 1000)
        again_compiles = ranker.compiles
        launch(tuned, 3000)  # a new key: ranked again
    return {
        "correct": correct,
        "benchmarked": benchmarked,
        "best": best,
        "all": [c.all_kwargs() for c in configs()],
        "compiles": [first_compiles, again_compiles, ranker.compiles],
        "warnings": [str(w.message) for w in caught if "corpus.guide" in str(w.message)],
        "missing_inputs": [
            {"message": str(w.message), "file": Path(w.filename).name}
            for w in caught
            if type(w.message).__name__ == "MissingInputsWarning"
        ],
    }


def untuned(model: str, target: str | None = None) -> dict[str, Any]:
    """A model that cannot rank (``target``: one nothing compiles for, or one the model never
    read IR of; None: the device's, which a model that never saw this arch refuses): every
    config benchmarked, one warning over two keys, and the compiles spent ranking."""
    import triton

    from corpus.guide import prune_configs
    from corpus.guide.bench import cpu_bench
    from tests.corpus.guide.kernels import scale_kernel

    prune = prune_configs(model, top_k=2, target=target)
    tuned = triton.autotune(configs(), key=["n_elements"], prune_configs_by=prune, do_bench=cpu_bench)(
        scale_kernel
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        correct = launch(tuned, 1000) and launch(tuned, 3000)
    return {
        "correct": correct,
        "benchmarked": len(tuned.configs_timings),
        "compiles": prune["early_config_prune"].compiles,
        "warnings": [str(w.message) for w in caught if "corpus.guide" in str(w.message)],
    }


def recorded(model: str, out: Path) -> dict[str, Any]:
    """The plug-in inside ``corpus.record``: pruned configs are recorded as skipped, naming the
    model; one that did not compile for ranking (BLOCK=100: not a power of two) says so; a
    second key whose own ``early_config_prune`` leaves top_k configs is not the model's doing."""
    import triton

    import corpus.record
    from corpus.guide import prune_configs
    from tests.corpus.guide.kernels import scale_kernel

    def keep_block_64_for_large(configs: list[Any], named_args: dict[str, Any], **kwargs: Any) -> list[Any]:
        large = named_args["n_elements"] >= 3000
        return [c for c in configs if c.kwargs["BLOCK"] == 64] if large else configs

    candidates = [*configs(), triton.Config({"BLOCK": 100}, num_warps=1)]
    prune = prune_configs(model, top_k=2, early_config_prune=keep_block_64_for_large)
    tuned = triton.autotune(candidates, key=["n_elements"], prune_configs_by=prune)(scale_kernel)
    with corpus.record(out=str(out), rep=2):
        correct = launch(tuned, 1000) and launch(tuned, 3000)
    return {"correct": correct, "out": str(out)}


def heuristic(model: str, out: Path) -> dict[str, Any]:
    """A kernel under ``@triton.heuristics`` (EVEN is not a config's): the model ranks it (the
    heuristic is evaluated per config before compiling) and the recorder stores its IR."""
    import triton

    import corpus.record
    from corpus.guide import prune_configs
    from tests.corpus.guide.kernels import even_scale_kernel

    tuned = triton.autotune(configs(), key=["n_elements"], prune_configs_by=prune_configs(model, top_k=2))(
        even_scale_kernel
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with corpus.record(out=str(out), rep=1):
            correct = launch(tuned, 1024)
    return {
        "correct": correct,
        "benchmarked": len(tuned.configs_timings),
        "warnings": [str(w.message) for w in caught if "cannot rank" in str(w.message)],
        "out": str(out),
    }


def hooked(model: str) -> dict[str, Any]:
    """Configs whose ``pre_hook`` sets a TensorDescriptor's block shape (liger-kernel's way) and
    an autotuner that restores ``out``: each config is compiled with the arguments it launches
    with, so every config is ranked, not only the one the descriptor was made for."""
    import torch
    import triton
    from triton.tools.tensor_descriptor import TensorDescriptor

    from corpus.guide import prune_configs
    from corpus.guide.bench import cpu_bench
    from tests.corpus.guide.kernels import desc_copy_kernel

    def set_block(nargs: dict[str, Any]) -> None:
        nargs["desc"].block_shape = [nargs["BLOCK"]]
        nargs["out"].zero_()  # touches data: ranking must replay it on copies only

    hooked_configs = [triton.Config({"BLOCK": b}, num_warps=1, pre_hook=set_block) for b in (16, 32, 64, 128)]
    prune = prune_configs(model, top_k=2)
    ranker = prune["early_config_prune"]
    tuned = triton.autotune(
        hooked_configs, key=["n"], prune_configs_by=prune, do_bench=cpu_bench, restore_value=["out"]
    )(desc_copy_kernel)
    x = torch.arange(256, dtype=torch.float32)
    out = torch.full((256,), -1.0)
    desc = TensorDescriptor.from_tensor(x, block_shape=[16])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tuned[lambda meta: (triton.cdiv(256, meta["BLOCK"]),)](desc, out, 256)
    return {
        "correct": bool(torch.equal(out, x)),
        "benchmarked": len(getattr(tuned, "configs_timings", {})),  # none when one config is left
        "compiles": ranker.compiles,
        "uncompiled": sorted(r for r in ranker.reasons.values() if "did not compile" in r),
        "warnings": [str(w.message) for w in caught if "cannot rank" in str(w.message)],
    }


def freed(model: str) -> dict[str, Any]:
    """The provider's rankings live as long as their autotuner: one freed leaves none behind,
    whose address (``id()``, the old cache key) a new autotuner may get."""
    import gc

    import triton

    from corpus.guide import prune_configs
    from corpus.guide.bench import cpu_bench
    from tests.corpus.guide.kernels import scale_kernel

    prune = prune_configs(model, top_k=2)
    ranker = prune["early_config_prune"]
    tuned = triton.autotune(configs(), key=["n_elements"], prune_configs_by=prune, do_bench=cpu_bench)(
        scale_kernel
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        launch(tuned, 1000)
    held = len(ranker.cache)
    del tuned
    gc.collect()
    return {"held": held, "after_free": len(ranker.cache)}


def duplicated(model: str) -> dict[str, Any]:
    """Every config listed twice (12 configs, 6 distinct), top_k=2: Triton benchmarks two
    distinct configs, the two the model ranks best, not one config twice."""
    import triton

    from corpus.guide import prune_configs
    from corpus.guide.bench import cpu_bench
    from tests.corpus.guide.kernels import scale_kernel

    prune = prune_configs(model, top_k=2)
    tuned = triton.autotune(configs() + configs(), key=["n_elements"], prune_configs_by=prune, do_bench=cpu_bench)(
        scale_kernel
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        correct = launch(tuned, 1000)
    return {
        "correct": correct,
        "benchmarked": len(getattr(tuned, "configs_timings", {})),  # none when one config is left
        "compiles": prune["early_config_prune"].compiles,
    }


def same_names(sm20_model: str) -> dict[str, Any]:
    """Two kernels of one name (``scale_kernel``) in two modules, one provider that cannot rank
    either: each kernel's fallback is said once (keyed by the name, the second was silent)."""
    import triton

    from corpus.guide import prune_configs
    from corpus.guide.bench import cpu_bench
    from tests.corpus.guide import kernels, other_kernels

    prune = prune_configs(sm20_model, top_k=2, target="sm_20")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for module in (kernels, other_kernels, kernels):
            tuned = triton.autotune(configs(), key=["n_elements"], prune_configs_by=prune, do_bench=cpu_bench)(
                module.scale_kernel
            )
            launch(tuned, 1000)
    return {"warnings": [str(w.message) for w in caught if "cannot rank" in str(w.message)]}


def overridden(model: str, out: Path) -> dict[str, Any]:
    """The six configs and one with ``ir_override`` (it launches the IR in its file, not what the
    source compiles to; the interpreter ignores it), top_k=2, two keys: the override is not
    ranked, Triton benchmarks it besides the top 2, and one warning says so."""
    import triton

    from corpus.guide import prune_configs
    from corpus.guide.bench import cpu_bench
    from tests.corpus.guide.kernels import scale_kernel

    out.mkdir(parents=True, exist_ok=True)
    override = triton.Config({"BLOCK": 128}, num_warps=4, ir_override=str(out / "scale.ttgir"))
    prune = prune_configs(model, top_k=2)
    ranker = prune["early_config_prune"]
    tuned = triton.autotune([*configs(), override], key=["n_elements"], prune_configs_by=prune, do_bench=cpu_bench)(
        scale_kernel
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        correct = launch(tuned, 1000)
        benchmarked = [c.ir_override for c in tuned.configs_timings]
        ranked = ranker.latest
        launch(tuned, 3000)
    return {
        "correct": correct,
        "benchmarked": benchmarked,
        # what the model ranked: each config's ir_override (None: its source's IR runs)
        "ranked": None if ranked is None else [getattr(c, "ir_override", f"not a config: {c}") for c in ranked.compiled],
        "compiles": ranker.compiles,
        "warnings": [str(w.message) for w in caught if "ir_override" in str(w.message)],
    }


def hook_twins(model: str) -> dict[str, Any]:
    """The six configs and a twin of the first that differs only in its ``pre_hook`` (two configs
    to Triton, one config id), top_k=6: each twin is compiled with its own hook and ranked as
    itself, and each of the seven is either benchmarked or has its own reason not to be."""
    import triton

    from corpus.guide import prune_configs
    from corpus.guide.bench import cpu_bench
    from tests.corpus.guide.kernels import scale_kernel

    def touch(nargs: dict[str, Any]) -> None:
        nargs["out_ptr"].zero_()

    listed = configs()
    twin = triton.Config(dict(listed[0].kwargs), num_warps=listed[0].num_warps, pre_hook=touch)
    prune = prune_configs(model, top_k=6)
    ranker = prune["early_config_prune"]
    tuned = triton.autotune([*listed, twin], key=["n_elements"], prune_configs_by=prune, do_bench=cpu_bench)(
        scale_kernel
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        correct = launch(tuned, 1000)
    timed = list(tuned.configs_timings)
    return {
        "correct": correct,
        "benchmarked": len(timed),
        "compiles": ranker.compiles,
        "accounted": [(config in timed) != (ranker.skip_reason_for(config) is not None) for config in [*listed, twin]],
    }


def unseen_ir(model: str) -> dict[str, Any]:
    """A kernel with an op the model never saw (tt.atomic_rmw), top_k=2, two keys: ranked all the
    same, and said once for the kernel, at its definition."""
    import torch
    import triton

    from corpus.guide import prune_configs
    from corpus.guide.bench import cpu_bench
    from tests.corpus.guide.kernels import atomic_scale_kernel

    prune = prune_configs(model, top_k=2)
    tuned = triton.autotune(
        configs(), key=["n_elements"], prune_configs_by=prune, do_bench=cpu_bench, reset_to_zero=["out_ptr"]
    )(atomic_scale_kernel)
    correct = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in (1000, 3000):
            x, out = torch.randn(n), torch.zeros(n)
            tuned[lambda meta, n=n: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
            correct.append(bool(torch.allclose(out, 2 * x + 1)))
    return {
        "correct": all(correct),
        "benchmarked": len(tuned.configs_timings),
        "unseen": [
            {"message": str(w.message), "file": Path(w.filename).name, "category": w.category.__name__}
            for w in caught
            if "never saw in training" in str(w.message)
        ],
    }


def main(out: Path, model: str, foreign_model: str, sm20_model: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    report = {
        "guided": guided(model),
        "fallback": untuned(sm20_model, target="sm_20"),
        "unseen_arch": untuned(foreign_model),
        "unseen_target": untuned(model, target="sm_80"),
        "recorded": recorded(model, out / "recorded"),
        "heuristic": heuristic(model, out / "heuristic"),
        "hooked": hooked(model),
        "freed": freed(model),
        "duplicated": duplicated(model),
        "same_names": same_names(sm20_model),
        "overridden": overridden(model, out / "overridden"),
        "hook_twins": hook_twins(model),
        "unseen_ir": unseen_ir(model),
    }
    (out / "report.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4])
