"""The Triton plug-in (corpus.guide.prune_configs) on Triton's interpreter, in a process of its
own (tests/corpus/guide/drive.py): Triton benchmarks exactly top_k configs of a real autotuned
kernel and keeps a valid one; a key seen before costs no compile; a model that cannot rank
(nothing compiles for the target, it never saw the device's arch or read the target's IR)
falls back to every config with one warning; inside corpus.record the pruned configs are
skipped rows naming the model; a user's script that turns the interpreter on in code is ranked,
and never run again by the compile worker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from corpus.guide import prune_configs
from schemas import read_table
from schemas.check import check_dataset

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def report(
    guide_model: Path, foreign_model: Path, sm20_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict:
    out = tmp_path_factory.mktemp("guide-drive")
    env = {**{k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}, "TRITON_INTERPRET": "1",
           "PYTHONPATH": str(REPO)}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-m", "tests.corpus.guide.drive", str(out), str(guide_model),
         str(foreign_model), str(sm20_model)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads((out / "report.json").read_text())


def test_triton_benchmarks_exactly_top_k_and_keeps_a_valid_config(report: dict) -> None:
    guided = report["guided"]
    assert len(guided["benchmarked"]) == 2  # top_k of the six configs
    assert all(config in guided["all"] for config in guided["benchmarked"])
    assert guided["best"] in guided["benchmarked"]
    assert guided["correct"]
    # A kernel outside the suite has no flops/bytes counts: said once for the kernel (two keys
    # ranked), pointing at the kernel's definition rather than at corpus.guide's code.
    (missing,) = guided["missing_inputs"]
    assert "scale_kernel" in missing["message"] and "flops" in missing["message"]
    assert "sass" not in missing["message"]  # one nvdisasm call listed every candidate
    assert missing["file"] == "kernels.py"
    assert guided["warnings"] == [missing["message"]]


def test_a_key_tuned_again_is_served_from_the_cache(report: dict) -> None:
    first, again, new_key = report["guided"]["compiles"]
    assert first == 6 and again == 6  # the same key: no compile
    assert new_key == 12  # another n_elements: ranked afresh


def test_a_model_that_cannot_rank_falls_back_to_every_config_with_one_warning(report: dict) -> None:
    fallback = report["fallback"]
    assert fallback["benchmarked"] == 6 and fallback["correct"]
    assert len(fallback["warnings"]) == 1  # two keys, one warning
    assert "cannot rank" in fallback["warnings"][0] and "no config compiles for sm_20" in fallback["warnings"][0]


def test_a_model_that_never_saw_the_device_falls_back_before_compiling(report: dict) -> None:
    unseen = report["unseen_arch"]
    assert unseen["benchmarked"] == 6 and unseen["correct"]
    assert unseen["compiles"] == 0  # refused before compiling a config to rank
    assert len(unseen["warnings"]) == 1  # two keys, one warning
    assert "trained on sm_90 only, not on interpreter" in unseen["warnings"][0]


def test_a_model_that_never_read_the_targets_ir_falls_back_before_compiling(report: dict) -> None:
    unseen = report["unseen_target"]
    assert unseen["benchmarked"] == 6 and unseen["correct"] and unseen["compiles"] == 0
    assert len(unseen["warnings"]) == 1
    assert "read IR compiled for sm_90 only, not for sm_80" in unseen["warnings"][0]


def test_recorded_workloads_say_why_each_config_was_not_benchmarked(report: dict, guide_model: Path) -> None:
    """n=1000: the model's top 2 of 7 benchmarked, 4 ranked below them, one that did not compile
    for ranking says so (it used to be "ranked below"). n=3000: the user's own prune leaves 2,
    which the model does not rank, so none of the 5 others says the model pruned it (a reason
    of the earlier key used to stick)."""
    columns = ["run_id", "status", "error", "ttgir_id", "n_regs"]
    rows = pl.from_arrow(read_table(report["recorded"]["out"], "measurements", columns=columns))
    assert report["recorded"]["correct"]
    by_run = {len(group.filter(pl.col("error").str.contains("top 2 of model"))): group for _, group in rows.group_by("run_id")}
    ranked, pruned_by_user = by_run[4], by_run[0]
    for group in (ranked, pruned_by_user):
        assert group["status"].to_list().count("ok") == 2 and group.height == 7
    (uncompiled,) = ranked.filter(pl.col("error").str.contains("did not compile"))["error"].to_list()
    assert "when corpus.guide.prune_configs ranked the configs" in uncompiled
    # The four the model ranked below its top 2 keep the IR and static stats it ranked them
    # by (they used to have none, and a ranking of the recording compared them graph-less).
    below = ranked.filter(pl.col("error").str.contains("top 2 of model"))
    assert below["ttgir_id"].null_count() == 0 and below["n_regs"].null_count() == 0
    assert check_dataset(report["recorded"]["out"]).ok
    skipped = pruned_by_user.filter(pl.col("status") == "skipped")["error"].to_list()
    assert len(skipped) == 5 and all(reason.startswith("pruned by the autotuner") for reason in skipped)


def test_a_kernel_under_triton_heuristics_is_ranked_and_recorded_with_its_ir(report: dict) -> None:
    """Compiling a config of it needs the heuristic's EVEN: it used to fail for every config
    ("no value for parameter(s) EVEN"), so the model fell back to all 6 and no IR was stored."""
    heuristic = report["heuristic"]
    assert heuristic["correct"] and heuristic["warnings"] == []
    assert heuristic["benchmarked"] == 2
    rows = pl.from_arrow(read_table(heuristic["out"], "measurements", columns=["status", "ttgir_id"]))
    ok = rows.filter(pl.col("status") == "ok")
    assert ok.height == 2 and ok["ttgir_id"].null_count() == 0


def test_configs_are_ranked_with_the_arguments_their_pre_hook_sets(report: dict) -> None:
    """The gap: candidates were compiled with the call's arguments as they came, the hooks never
    run; a TensorDescriptor made for BLOCK=16 compiled only that config (liger-kernel's fused
    MLP: none of its 32), so the model "ranked" one config and Triton benchmarked one of top_k."""
    hooked = report["hooked"]
    assert hooked["correct"] and hooked["warnings"] == []
    assert hooked["uncompiled"] == [] and hooked["compiles"] == 4
    assert hooked["benchmarked"] == 2


def test_rankings_go_with_their_autotuner(report: dict) -> None:
    """The gap: rankings were keyed by ``id(autotuner)``; a freed autotuner's address goes to a
    later one (a notebook cell run again, kernels made in a loop), which was served the freed
    kernel's ranking without a compile (seen: an accum kernel given a scale kernel's top 2)."""
    assert report["freed"] == {"held": 1, "after_free": 0}


def test_a_config_listed_twice_is_ranked_once(report: dict) -> None:
    """The gap: both copies of the best config (one id, equal scores) filled the top_k, so
    Triton, whose timings are a dict of configs, benchmarked one config where top_k=2 was asked."""
    duplicated = report["duplicated"]
    assert duplicated["correct"] and duplicated["benchmarked"] == 2
    assert duplicated["compiles"] == 6  # the six distinct configs


def test_configs_differing_only_in_their_pre_hook_are_ranked_each_as_itself(report: dict) -> None:
    """The gap: configs sharing a config id were ranked as one, compiled with the first one's
    hook (a hook may set what the kernel specializes on) and represented by it: the twin was
    never benchmarked and had no reason not to be."""
    twins = report["hook_twins"]
    assert twins["correct"] and twins["compiles"] == 7  # each with its own hook
    assert twins["benchmarked"] == 6 and all(twins["accounted"])


def test_a_config_with_ir_override_is_benchmarked_unranked_with_one_warning(report: dict) -> None:
    """It launches the IR in its file; the gap: the model ranked it by the IR its source
    compiles to (a program that never runs), so it was pruned or chosen for that, silently."""
    overridden = report["overridden"]
    assert overridden["correct"]
    assert len(overridden["benchmarked"]) == 3 and overridden["benchmarked"].count(None) == 2  # top 2 + it
    assert overridden["ranked"] is not None and all(path is None for path in overridden["ranked"])
    assert overridden["compiles"] == 12  # the six, for each of two keys; never the override
    (warning,) = overridden["warnings"]  # two keys, one warning
    assert "ir_override: scale.ttgir" in warning and "besides the model's top 2" in warning


def test_kernels_of_one_name_in_two_modules_each_get_their_warning(report: dict) -> None:
    """The gap: the one-time fallback warning was keyed by the kernel's ``__name__``, so the
    second ``scale_kernel`` (another module) fell back silently."""
    first, second = report["same_names"]["warnings"]  # the first kernel tuned again: no third
    assert "tests.corpus.guide.kernels.scale_kernel" in first
    assert "tests.corpus.guide.other_kernels.scale_kernel" in second


def test_bad_arguments_are_refused_at_decoration(guide_model: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="checkpoint.json"):
        prune_configs(tmp_path)
    with pytest.raises(ValueError, match="top_k"):
        prune_configs(guide_model, top_k=0)


SCRIPT = """
import os
os.environ["TRITON_INTERPRET"] = "1"  # set in code, as interpreter users do
import torch
import triton
import triton.language as tl
from corpus.guide import prune_configs
from corpus.guide.bench import cpu_bench

@triton.autotune(
    configs=[triton.Config({{"BLOCK": b}}, num_warps=w) for b in (16, 32, 64) for w in (1, 4)],
    key=["n"], prune_configs_by=prune_configs({model!r}, top_k=2), do_bench=cpu_bench,
)
@triton.jit
def double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2.0, mask=mask)

def workload():
    print("workload ran")
    x = torch.randn(1000)
    out = torch.empty_like(x)
    double[lambda meta: (triton.cdiv(1000, meta["BLOCK"]),)](x, out, 1000)
    assert torch.equal(out, x * 2.0)
    print("benchmarked", len(double.configs_timings))
"""


@pytest.mark.parametrize("guarded", [True, False], ids=["guarded", "unguarded"])
def test_a_users_script_that_sets_the_interpreter_itself(guide_model: Path, tmp_path: Path, guarded: bool) -> None:
    """A script run as ``python script.py``, its kernel defined in it: the compile worker never
    runs the script's workload, and compiles with Triton's compiler although the script turns
    the interpreter on; without a ``__main__`` guard it cannot import the kernel's file safely,
    so the model does not rank (one warning naming the guard) and Triton benchmarks all six."""
    script = tmp_path / "script.py"
    call = 'if __name__ == "__main__":\n    workload()\n' if guarded else "workload()\n"
    script.write_text(SCRIPT.format(model=str(guide_model)) + call)
    env = {**{k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.count("workload ran") == 1
    if guarded:
        assert "benchmarked 2" in done.stdout and "cannot rank" not in done.stderr
    else:
        assert "benchmarked 6" in done.stdout
        assert done.stderr.count("cannot rank") == 1 and "no `if __name__ == \"__main__\":` guard" in done.stderr


def test_a_kernel_with_ir_the_model_never_saw_is_ranked_and_said_once(report: dict) -> None:
    """Its UnseenIrValuesWarning came as a line of corpus.guide's own code, once per tuning key
    (the counts in its text differ between keys); now once per kernel, at its definition."""
    unseen = report["unseen_ir"]
    assert unseen["correct"] and unseen["benchmarked"] == 2  # ranked: Triton benchmarked top_k
    (said,) = unseen["unseen"]
    assert said["category"] == "UnseenIrValuesWarning" and said["file"] == "kernels.py"
    first, *details = said["message"].splitlines()  # what and what to do, then the values
    assert first.endswith(
        "atomic_scale_kernel on IR values it never saw in training (train it on runs that hold them to rank them fully)"
    )
    assert details and details[0].startswith("  op_name: ") and "tt.atomic_rmw" in details[0]
